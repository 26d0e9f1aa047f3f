"""'Where do I add X?' over the forms of registration beyond decorators and dotted calls
(answer/registration_lines.py): PHP facades, a route on the line after its call, a router mounted by
name, a registrar's bound alias, Ruby's DSL, Go maps, enums, a file that returns its table, a settings
class; and how the question picks among them (the ones it names, a sub-thing, the project's own name)."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeasst.answer import registration_lines as lines
from codeasst.answer import registration_question as rq
from codeasst.answer import registrations as reg


def _find(tmp_path: Path, files: dict[str, str], question: str) -> reg.Registrations:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return reg.find(tmp_path, sorted(files), question)


def _first(found: reg.Registrations) -> tuple[str, int, int]:
    return found.places()[0]


HELPERS = "def helper(items):\n    return items.get('x')\n"


@pytest.mark.parametrize(("text", "kind", "verb"), [
    ("Route::get('/', function () {", "endpoint", "get"),  # PHP's facade
    ("$router->post('/users', [UserController::class, 'store']);", "endpoint", "post"),
    ("Artisan::command('inspire', function () {", "command", "command"),
    ("  .use(tagsController)", "group", "use"),  # a router mounted by name
    ("app.use(cors())", "group", None),  # middleware, not a router
    ("    add_option(", "option", "add_option"),  # the registrar's bound alias
    ("var Settings = map[string]CommandFunc{", None, "Settings"),  # Go's map literal
    ("pub enum Cmd {", "command", "Cmd"),  # clap's subcommands
    ("return [", None, "providers"),  # bootstrap/providers.php
    ("    style={", None, None),  # JSX's attribute is no table
])
def test_a_line_registers_by_its_form(text, kind, verb):
    path = "bootstrap/providers.php" if text == "return [" else "app/main.x"
    assert lines.classify(path, text, kind) == verb


def test_ruby_routes_and_filters(tmp_path):
    routes = ("Rails.application.routes.draw do\n  scope :api do\n    resources :articles do\n"
              "      get :feed, on: :collection\n    end\n    resources :tags, only: [:index]\n  end\nend\n")
    controller = ("class ApplicationController < ActionController::Base\n  before_action :underscore_params!\n"
                  "  before_action :authenticate_user\n\n  def authenticate_user\n  end\nend\n")
    files = {"config/routes.rb": routes, "app/controllers/application_controller.rb": controller,
             "app/helpers.py": HELPERS}
    assert _first(_find(tmp_path, files, "Where do I add a new API endpoint?"))[:2] == ("config/routes.rb", 2)
    found = _find(tmp_path, files, "Where do I add a filter that runs before every controller action?")
    assert _first(found) == ("app/controllers/application_controller.rb", 2, 3)


def test_a_route_whose_path_is_on_the_next_line(tmp_path):
    controller = ("const router = Router();\n\nrouter.get(\n  '/profiles/:username',\n  auth.optional,\n"
                  "  handler,\n);\n\nrouter.post(\n  '/profiles/:username/follow',\n  handler,\n);\n")
    other = "router.get('/tags', handler);\n"
    found = _find(tmp_path, {"src/profile/profile.controller.ts": controller, "src/tag/tag.controller.ts": other},
                  "Where do I add a new profiles endpoint?")
    assert _first(found)[0] == "src/profile/profile.controller.ts" and found.sites[0].count == 2


def test_a_new_controllers_routes_are_mounted_where_the_routers_are(tmp_path):
    routes = ("const api = Router()\n  .use(tagsController)\n  .use(articlesController)\n"
              "  .use(authController);\n\nexport default Router().use('/api', api);\n")
    articles = "".join(f"router.get('/articles/{i}', handler);\n" for i in range(6))
    found = _find(tmp_path, {"src/routes/routes.ts": routes, "src/routes/article.controller.ts": articles},
                  "Where do I register a new controller's routes, for example a notifications controller?")
    assert rq.kind_of(found.thing, "Where do I register a new controller's routes?") == "group"
    assert _first(found)[0] == "src/routes/routes.ts"


def test_options_registered_through_an_alias(tmp_path):
    options = ("def register_default_options(manager):\n    add_option = manager.add_option\n\n"
               + "".join(f"    add_option(\n        '--opt{i}',\n        help='x',\n    )\n\n" for i in range(4)))
    found = _find(tmp_path, {"src/tool/main/options.py": options, "src/tool/__init__.py": "",
                             "src/tool/plugins/x.py": "def x(parser):\n    parser.add_argument('--x')\n"},
                  "Where should a new tool command-line option be defined?")
    assert _first(found)[0] == "src/tool/main/options.py" and found.sites[0].count == 4


def test_tables_the_question_names_lead(tmp_path):
    keys = "".join(f"\t\"Key{i}\": ExecuteKey({i}),\n" for i in range(6))  # more than main.go registers
    go = ("package main\n\nvar CommandFuncs = map[string]CommandFunc{\n\t\"Type\": ExecuteType,\n"
          "\t\"Screenshot\": ExecuteScreenshot,\n\t\"Copy\": ExecuteCopy,\n" + keys + "}\n\n"
          "var Settings = map[string]CommandFunc{\n\t\"FontSize\": ExecuteSetFontSize,\n"
          "\t\"TypingSpeed\": ExecuteSetTypingSpeed,\n}\n")
    main = ("package main\n\nfunc init() {\n\trootCmd.AddCommand(\n\t\trecordCmd,\n\t\tnewCmd,\n\t\tserveCmd,\n\t)\n}\n")
    files = {"command.go": go, "main.go": main}
    # a subcommand is a command: AddCommand names it, and says more than a table of nine named for commands
    assert _first(_find(tmp_path, files, "Where do I add a new vhs subcommand?"))[0] == "main.go"
    assert _first(_find(tmp_path, files, "Where do I add a new tape command, like Screenshot or Copy?")) \
        == ("command.go", 3, 13)  # the table that lists the ones it names
    found = _find(tmp_path, files, "How do I register a new Set setting for tapes, like TypingSpeed?")
    assert _first(found)[:2] == ("command.go", 15)


def test_enums_of_subcommands_and_of_what_a_command_takes(tmp_path):
    rust = ("#[derive(Debug, Parser)]\npub enum Cmd {\n    Add(Add),\n    Query(Query),\n    Remove(Remove),\n}\n\n"
            "#[derive(ValueEnum, Clone, Debug)]\npub enum InitShell {\n    Bash,\n    Fish,\n    Zsh,\n}\n")
    files = {"src/cmd/cmd.rs": rust, "src/util.rs": "fn f() {}\n"}
    assert _first(_find(tmp_path, files, "Where do I add a new zoxide subcommand?")) == ("src/cmd/cmd.rs", 2, 6)
    found = _find(tmp_path, files, "Where do I add support for a new shell to `zoxide init`?")
    assert found.thing == "shell" and _first(found)[:2] == ("src/cmd/cmd.rs", 9)


def test_a_file_named_for_its_table_and_a_settings_class(tmp_path):
    files = {"bootstrap/providers.php": "<?php\n\nreturn [\n    App\\Providers\\AppServiceProvider::class,\n];\n",
             "config/app.php": "<?php\n\nreturn [\n    'name' => env('APP_NAME', 'Laravel'),\n];\n"}
    assert _first(_find(tmp_path, files, "Where do I register a new service provider?"))[0] == "bootstrap/providers.php"
    config = ('from pydantic_settings import BaseSettings\n\n\nclass Settings(BaseSettings):\n    """The app."""\n\n'
              '    DOMAIN: str = "localhost"\n    SECRET_KEY: str = "x"\n\n    def url(self) -> str:\n'
              '        return self.DOMAIN\n\n\nsettings = Settings()\n')
    found = _find(tmp_path / "api", {"backend/app/core/config.py": config, "backend/pyproject.toml":
                                     '[project.scripts]\napp = "app.main:run"\n'},
                  "Where is a new backend setting (an environment variable) configured?")
    assert rq.kind_of(found.thing, "Where is a new backend setting configured?") == "setting"
    assert _first(found) == ("backend/app/core/config.py", 4, 8) and found.sites[0].count == 2


def test_a_value_in_parentheses_is_no_table_and_the_projects_name_no_place(tmp_path):
    formatter = ('class Default:\n    error_format = (\n        "%(path)s:%(row)d"\n        " %(code)s"\n'
                 '        " %(col)s"\n        " %(text)s"\n    )\n')  # four lines of one string, no table
    setup = ("[options.entry_points]\nflake8.report =\n    default = flake8.formatting.default:Default\n"
             "    pylint = flake8.formatting.default:Pylint\n")
    found = _find(tmp_path, {"src/flake8/formatting/default.py": formatter, "src/flake8/__init__.py": "",
                             "setup.cfg": setup}, "Where do I register a new built-in report formatter for flake8?")
    assert _first(found)[0] == "setup.cfg"  # not src/flake8/ for the word flake8, nor error_format's parentheses


def test_a_thing_of_no_kind_in_a_table_of_the_file_the_question_names(tmp_path):
    sidebar = ("const baseItems: Item[] = [\n  { icon: Home, title: 'Dashboard', path: '/' },\n"
               "  { icon: Briefcase, title: 'Items', path: '/items' },\n]\n")
    footer = "const socialLinks = [\n" + "".join(f"  {{ icon: I{i}, href: 'x{i}' }},\n" for i in range(8)) + "]\n"
    found = _find(tmp_path, {"frontend/src/Sidebar/AppSidebar.tsx": sidebar, "frontend/src/Common/Footer.tsx": footer,
                             "tests/test_jobs.py": "LINKS = {\n    'a': 1,\n    'b': 2,\n}\n"},
                  "Where do I add a link to a new page in the frontend's sidebar?")
    assert _first(found)[0] == "frontend/src/Sidebar/AppSidebar.tsx"  # in the folders it names most of


def test_a_thing_named_in_the_singular_is_listed_in_the_plural(tmp_path):
    settings = "INSTALLED_APPS = [\n    'django.contrib.admin',\n    'conduit.apps.articles',\n]\n"
    found = _find(tmp_path, {"conduit/settings.py": settings, "conduit/wsgi.py": HELPERS},
                  "Where do I register a new Django app, say conduit.apps.notifications?")
    assert _first(found) == ("conduit/settings.py", 1, 4)


def test_a_custom_method_is_registered_by_the_verb_that_names_it(tmp_path):
    example = 'func init() {\n\tchi.RegisterMethod("LINK")\n\tchi.RegisterMethod("WOOHOO")\n}\n'
    profiler = "".join(f'\tr.HandleFunc("/pprof/{i}", h)\n' for i in range(8))
    found = _find(tmp_path, {"_examples/custom-method/main.go": example, "middleware/profiler.go": profiler},
                  "How do I register a custom HTTP method such as PURGE with chi?")
    assert _first(found)[0] == "_examples/custom-method/main.go"  # "method" is a stop word elsewhere, not here


def test_a_tests_table_is_its_data_not_a_place(tmp_path):
    found = _find(tmp_path, {"tests/unit/test_flow.py": "JOBS = {\n    'a': 1,\n    'b': 2,\n}\n",
                             "app/main.py": HELPERS}, "Where do I add a new cron job?")
    assert not found.sites and found.render().startswith("No place in this repository registers cron jobs")


def test_a_file_whose_only_candidate_is_no_table_is_no_site(tmp_path):
    found = _find(tmp_path, {"app/format.py": 'error_format = (\n    "%(path)s"\n    " %(text)s"\n)\n'},
                  "Where do I add a new formatter?")
    assert not found.sites and found.render().startswith("No place in this repository registers formatters")


def test_a_call_that_returns_a_value_is_no_table_entry(tmp_path):
    assert lines.classify("cmd/init.go", '\tcmd := exec.Command("go", "mod", "init")') is None
    assert lines.classify("app.py", '    Route("/users", users),') == "Route"  # an item of a table
    assert lines.classify("app.py", 'app = Starlette(routes=[Route("/", home)])') == "Route"
    assert lines.classify("licenses.go", '\tLicenses["mit"] = License{') == "Licenses"  # keyed into a table
    assert lines.classify("boot.js", "axios.defaults.headers.common['X-Requested-With'] = 'x';") is None
    root = {"cmd/root.go": 'func init() {\n\trootCmd.AddCommand(initCmd)\n\trootCmd.AddCommand(addCmd)\n}\n',
            "cmd/init.go": 'func run() {\n\tc := exec.Command("go", "mod")\n\td := exec.Command("git", "init")\n'
                           '\te := exec.Command("go", "get")\n}\n'}
    assert _first(_find(tmp_path, root, "Where do I add a new subcommand?"))[0] == "cmd/root.go"


def test_entry_points_by_their_group(tmp_path):
    pyproject = ('[build-system]\nbuild-backend = "hatchling.build"\n\n[project.scripts]\nmk = "mk.__main__:cli"\n\n'
                 '[project.entry-points."mk.plugins"]\nsearch = "mk.contrib.search:SearchPlugin"\n\n'
                 '[project.entry-points."mk.themes"]\nmk = "mk.themes.mk"\nreadthedocs = "mk.themes.readthedocs"\n')
    rows = pyproject.splitlines()
    assert lines.entry_group(rows, rows.index('mk = "mk.themes.mk"') + 1) == "mk.themes"
    assert lines.entry_group(rows, 2) is None  # the build backend is no entry point
    code = "".join(f"    register('p{i}', P{i})\n" for i in range(6))
    files = {"pyproject.toml": pyproject, "mk/loader.py": "def load():\n" + code}
    theme = _find(tmp_path, files, "Where do I register a new theme?")
    assert _first(theme)[0] == "pyproject.toml" and theme.sites[0].count == 2  # the themes' group, a module each
    assert "hatchling" not in theme.render()
    plugin = _find(tmp_path, files, "How do I register a new plugin?")
    assert _first(plugin)[0] == "pyproject.toml"  # the group named for plugins over six register() calls
    one_line = 'setup(entry_points={"console_scripts": ["mk = mk.cli:main"]})\n'
    assert lines.entry_group([one_line], 1) == "console_scripts"
    assert lines.entry_group(["[project]", 'scripts.tox = "tox.run:run"'], 2) == "scripts"  # a dotted key


def test_a_config_files_option_is_a_setting():
    assert rq.kind_of("config option", "Where do I add a new config option?") == "setting"
    assert rq.kind_of("option", "How do I add a new option to mkdocs.yml?") == "setting"
    assert rq.kind_of("option", "Where do I add a new command-line option?") == "option"


def test_a_table_whose_items_hang_under_its_first_and_a_go_structs_field(tmp_path):
    shells = "shells = {'bash': Bash,\n          'fish': Fish,\n          'zsh': Zsh}\n\n\ndef get():\n    pass\n"
    found = _find(tmp_path, {"app/shells/__init__.py": shells, "app/other.py": HELPERS},
                  "How do I add support for a new shell, like nushell?")
    assert _first(found) == ("app/shells/__init__.py", 1, 3) and found.sites[0].count == 3
    build = ('app := &cli.Command{\n\tName: "builder",\n\tCommands: []*cli.Command{\n\t\t{Name: "vet"},\n'
             '\t\t{Name: "test"},\n\t},\n}\n')
    assert lines.classify("build.go", "\tCommands: []*cli.Command{") == "Commands"
    assert lines.classify("vite.config.js", "  plugins: [") is None  # an object's property may be anything
    assert lines.classify("tox.toml", "commands = [") is None  # a configuration file's key is its data
    assert _first(_find(tmp_path / "go", {"scripts/build.go": build}, "Where do I add a new command?"))[0] \
        == "scripts/build.go"


def test_where_is_the_list_of_things(tmp_path):
    assert rq.asked("I want completions for elvish too. Where is the list of supported shells?") == "shells"
    assert rq.asked("Where is the list of users sorted?") is None
    completion = ('var (\n\tshellCompletions = map[string]render{\n\t\t"bash": bash,\n\t\t"zsh": zsh,\n\t}\n)\n')
    found = _find(tmp_path, {"completion.go": completion, "cmd.go": "func init() {\n" + "\troot.AddCommand(x)\n" * 4 + "}\n"},
                  "I want the `gen` command to do elvish. Where is the list of supported shells?")
    assert _first(found)[0] == "completion.go"  # the shells' table, not the commands the sentence names


def test_a_folder_the_question_writes_as_a_path_leads(tmp_path):
    app = "fastify.register(AutoLoad, {\n  dir: 'plugins',\n})\nfastify.get('/', home)\n"
    files = {"templates/app/app.js": app, "templates/app-ts/src/app.ts": app,
             "templates/app-ts/src/more.ts": app + "fastify.get('/x', x)\n"}
    found = _find(tmp_path, files, "In the JavaScript app template (templates/app), how do I register a new route?")
    assert _first(found)[0] == "templates/app/app.js"


def test_settings_are_declared_by_a_table_or_a_class_named_for_them(tmp_path):
    errors = "".join(f"class Config{i}Error(Exception):\n    code = {i}\n    kind = 'x'\n\n" for i in range(5))
    settings = ("class SettingsModel(BaseModel):\n    defaults: dict = {}\n    trust: set = set()\n")
    uses = "@default_settings({'x': 1})\ndef match(command):\n    pass\n"
    found = _find(tmp_path, {"app/errors.py": errors, "app/settings.py": settings, "app/rules.py": uses},
                  "Where do I add a new user setting to the app's settings.yml?")
    assert _first(found)[0] == "app/settings.py"  # not the errors named for config, nor a decorator using settings
    ext = "".join(f"@load_extension_option\ndef c{i}():\n    pass\n" for i in range(6))
    hooks = "@hookspec\ndef register_commands(cli):\n    pass\n"
    found = _find(tmp_path / "h", {"app/cli.py": ext, "app/hookspecs.py": hooks}, "How do I add a new plugin hook?")
    assert _first(found)[0] == "app/hookspecs.py"  # `load_extension_option` is an option, not an extension


def test_a_registrars_method_bound_to_a_short_name_and_chained_options(tmp_path):
    cli = ("def _cli_parse(args):\n    parser = ArgumentParser()\n    opt = parser.add_argument\n"
           "    opt('--version', action='store_true')\n    opt('-b', '--bind')\n    opt('-s', '--server')\n"
           "    return parser.parse_args(args)\n")
    found = _find(tmp_path, {"tool.py": cli, "other.py": "x = settings.get('a')\n"},
                  "How do I add another option to the `tool` command-line tool?")
    assert _first(found) == ("tool.py", 4, 6) and found.sites[0].count == 3  # `opt(...)` is add_argument
    pizza = "program\n  .option('-p, --peppers')\n  .option('-c, --cheese <type>')\n"
    other = "program\n  .command('serve')\n  .option('--port')\n"
    found = _find(tmp_path / "js", {"examples/pizza": pizza, "examples/serve.js": other},
                  "How would I make the pizza example accept another topping, like --olives?")
    assert rq.kind_of(found.thing, "How would I make the pizza example accept another topping, like --olives?") \
        == "option"  # a flag is an option, whatever the program calls it
    assert _first(found)[0] == "examples/pizza"  # the example named later in the question, a file of that name


def test_hooks_attached_after_a_sentence(tmp_path):
    question = "In the hook example I want to log after every action. Where are the lifecycle hooks attached?"
    assert rq.asked(question) == "lifecycle hooks"  # "hooks" is the noun, "attached" the verb
    hooks = "program\n  .hook('preAction', log)\n  .hook('postAction', log)\n"
    found = _find(tmp_path, {"examples/hook.js": hooks, "lib/command.js": "x.register(a)\n"}, question)
    assert _first(found)[0] == "examples/hook.js"
    assert rq.asked("I want a new built-in preprocessor. Where are the built-in ones wired up?") == "preprocessor"


def test_where_the_existing_ones_are_named_together_whatever_the_form(tmp_path):
    servers = "".join(f"class {n}Server(ServerAdapter):\n    def run(self, handler):\n        pass\n\n\n"
                      for n in ("Waitress", "Paste", "Tornado", "Gunicorn"))
    table = ("server_names = dict(\n    waitress=WaitressServer,\n    paste=PasteServer,\n    tornado=TornadoServer,\n"
             "    gunicorn=GunicornServer,\n)\n")
    code = servers + "\n" * 50 + table + "\n\ndef run(server='waitress'):\n    return server_names[server]\n"
    found = _find(tmp_path, {"app.py": code, "other.py": HELPERS}, "I'd like `app -s hypercorn` to work. "
                                                                     "Where do I add a new server backend?")
    start = code.splitlines().index("server_names = dict(") + 1
    assert _first(found)[:2] == ("app.py", start + 1)  # the call `dict(...)` is no table form; its names are
    assert found.sites[0].count == 4
    # a folder named for them: its types, listed by their module
    mods = {f"src/preprocessors/{n.lower()}.rs": f"pub struct {n};\nimpl Run for {n} {{}}\n" for n in ("Index", "Link", "Cmd")}
    mods["src/preprocessors/mod.rs"] = "pub use self::index::Index;\npub use self::link::Link;\npub use self::cmd::Cmd;\n"
    found = _find(tmp_path / "rs", mods, "I want a new built-in preprocessor. Where are the built-in ones wired up?")
    assert _first(found) == ("src/preprocessors/mod.rs", 1, 3)


@pytest.mark.parametrize(("question", "thing"), [
    ("I want `tool upload` to take a `--timeout` option. Where are its options defined?", "options"),
    ("Where are the per-repository .pypirc keys read? I need one more, like `timeout`.", "per-repository .pypirc keys"),
    ("Where are tag aliases like `iscolor` defined? I need one more.", "tag aliases"),
    ("Where are the --output formats listed? I'd like TOML output.", "--output formats"),
    ("Where's the list of distribution file types twine knows how to upload?", "distribution file types"),
    ("Where is the config read?", None),  # no want: where it is, not where one goes
])
def test_a_want_makes_a_where_question_of_where_they_are_read_or_listed(question, thing):
    assert rq.asked(question) == thing


def test_data_files_structs_literals_and_what_registers_no_route(tmp_path):
    languages = '{\n  "languages": {\n    "Ada": {"line_comment": ["--"]},\n    "Bash": {},\n    "C": {}\n  }\n}\n'
    found = _find(tmp_path, {"languages.json": languages, ".vscode/languages.json": languages,
                             "src/lang.rs": "fn parse() {}\n"}, "How do I add support for a new language?")
    assert _first(found)[0] == "languages.json" and found.sites[0].count == 3  # not the editor's folder
    config = "#[derive(Deserialize)]\npub struct Config {\n    pub columns: Option<usize>,\n    pub hidden: Option<bool>,\n}\n"
    found = _find(tmp_path / "rs", {"src/config.rs": config, "src/cli.rs": "fn main() {}\n"},
                  "Where are the settings for app.toml declared? I want to add one.")
    assert _first(found) == ("src/config.rs", 2, 5) and found.sites[0].count == 2
    assert lines.classify("env.py", "Installer = typing.Literal['pip', 'uv']") == "Installer"
    assert lines.classify("recovery.go", '\tct := w.Header().Get("Content-Type")', "endpoint") is None
    assert lines.classify("routes.go", '\tr.Get("/articles", list)', "endpoint") == "Get"
    assert lines.classify("main.go", '\tvalidate.RegisterValidation("is-awesome", ValidateMyVal)') == "RegisterValidation"
    readme = "```go\nr.HandleFunc(\"/a\", a)\nr.HandleFunc(\"/b\", b)\n```\n"
    found = _find(tmp_path / "none", {"README.md": readme, "mw.go": "func Use(h Handler) {}\n"},
                  "Where are the routes defined? I want to add a /health endpoint.")
    assert not found.sites  # a README's samples register nothing of the repository's


def test_a_site_in_a_file_about_the_questions_words_leads_a_tie(tmp_path):
    files = {"tool/aaa.py": "parser.add_argument('--a')\nparser.add_argument('--b')\n",
             "tool/settings.py": "parser.add_argument('--timeout')\nparser.add_argument('--retries')\n"}
    question = "I want `tool upload` to take a `--cert` option. Where are its options defined?"
    assert _first(_find(tmp_path, files, question))[0] == "tool/aaa.py"  # a tie, by path
    found = reg.find(tmp_path, sorted(files), question, by_words=["tool/settings.py", "tool/aaa.py"])
    assert _first(found)[0] == "tool/settings.py"
