"""How one line registers a handler, for answer/registrations.py: the ripgrep pattern that finds the
candidate lines, and the reading of each (its verb, or nothing).

The forms, in every language the index reads:
- a decorator: `@app.get("/items")`, `@cli.command()`, `@hookimpl`;
- a call on a registrar, through `.`, `::` or `->`: `app.add_url_rule(...)`, `cli.add_command(...)`,
  `Route::get('/', ...)`, `Artisan::command('inspire', ...)`, `$router->get('/x', ...)`, where a route's
  path may be on the line after the call's `(`;
- a registration verb called bare, through an alias (`add_option = manager.add_option`, then
  `add_option("--quiet", ...)`);
- Ruby's route and filter DSL: `resources :articles`, `get :feed`, `before_action :authenticate_user`;
- a table entry made by name: `Route("/x", handler)`, `path("x/", view)`, `Tool("search", ...)`;
- an entry keyed into a table by assignment: `Licenses["mit"] = License{...}`;
- a literal table named for what it holds: `COMMANDS = {`, `urlpatterns = [`, Go's
  `var Settings = map[string]CommandFunc{`, an `enum Cmd {` (clap's subcommands, a TS enum), or a file
  named for them that returns one (`bootstrap/providers.php`: `return [`);
- an entry point in `pyproject.toml`, `setup.py`, `setup.cfg` or `package.json`, read as text.
"""

from __future__ import annotations

import re
from pathlib import Path

VERBS = r"(?:add_url_rule|add_api_route|add_route|add_api_websocket_route|include_router|register_blueprint|" \
        r"add_command|add_typer|add_parser|add_subparsers|register\w*|Register\w*|add_tool|add_middleware|add_argument|" \
        r"add_option|add_plugin|add_\w+_env|HandleFunc|Handle|AddCommand|RegisterMethod|mount|command|subcommand|option|" \
        r"argument|hook|addHook|add_hook)"
HTTP = r"(?:get|post|put|patch|delete|all|use|route|options|head|GET|POST|PUT|PATCH|DELETE|Any|Group|Get|Post|" \
       r"Put|Patch|Delete|Route|Mount|Method|MethodFunc|Use|With)"
# Ruby's class-level DSL (Rails' routes and controller filters): a verb, a space, then a symbol or a path.
RUBY = r"(?:resources|resource|namespace|scope|get|post|put|patch|delete|match|root|devise_for|before_action|" \
       r"after_action|around_action|prepend_before_action)"
_SEP = r"(?:\.|::|->)"  # a method call, a static (PHP) or path (Rust) call, PHP's object call
# A literal table named for what it holds: COMMANDS = {...}, urlpatterns = [...], const routes = [...],
# Go's `var X = map[K]V{` / `X := []T{`, and an enum's variants.
# (a space before `=`: JSX's `style={` is an attribute)
_NAMED_TABLE = re.compile(r"^\s*(?:export\s+)?(?:const\s+|let\s+|var\s+)?(?P<verb>[A-Za-z_]\w*)(?::[^=]+)?\s:?=\s*"
                          r"(?:map\[[^\]]+\][\w.*\[\]]+\s*|\[\][\w.*]+\s*)?[\[{(]\s*$")
# The same with its first item on the opening line and the rest hanging under it:
# `shells = {'bash': Bash,` / `DEFAULT_SETTINGS = {'rules': DEFAULT_RULES,`.
_HANGING_TABLE = re.compile(r"^\s*(?:export\s+)?(?:const\s+|let\s+|var\s+)?(?P<verb>[A-Za-z_]\w*)(?::[^=]+)?\s:?=\s*"
                            r"[\[{]\s*[\"'\w].*,\s*$")
# A table as a struct's field, typed: Go's `Commands: []*cli.Command{` (an object's `plugins: [` may be anything).
_FIELD_TABLE = re.compile(r"^\s*(?P<verb>[A-Za-z_]\w*)\s*:\s*(?:\[\][\w.*]+|map\[[^\]]+\][\w.*\[\]]+)\s*\{\s*$")
_ENUM = re.compile(r"^\s*(?:pub(?:\([\w:]+\))?\s+|export\s+)?(?:const\s+)?enum\s+(?P<verb>[A-Za-z_]\w*)\b[^{;]*\{\s*$")
# A class named for what its attributes are (`class Settings(BaseSettings):`), read where settings are asked.
_CLASS = re.compile(r"^\s*(?:class\s+(?P<verb>[A-Za-z_]\w*)\s*[(:]|(?:pub(?:\([\w:]+\))?\s+)?struct\s+(?P<rust>[A-Za-z_]\w*)"
                    r"\s*(?:<[^>]*>\s*)?\{|type\s+(?P<go>[A-Za-z_]\w*)\s+struct\s*\{)")
# A type that lists its values on one line: `Installer = typing.Literal['pip', 'uv']`, TS's `type X = 'a' | 'b'`.
_LITERAL = re.compile(r"^\s*(?:export\s+)?(?:type\s+)?(?P<verb>[A-Za-z_]\w*)(?::[^=]+)?\s*=\s*(?:(?:typing\.)?Literal\[|"
                      r"[\"'][^\"']*[\"']\s*\|)")
# An entry keyed into a table by assignment: `Licenses["mit"] = License{...}`, `HANDLERS['x'] = run`; a
# table of its own name, not an object's field (`axios.defaults.headers.common['X'] = ...`).
_KEYED = re.compile(r"^\s*(?P<verb>[A-Za-z_]\w*)\[\s*[\"'][^\"'\]]+[\"']\s*\]\s*=[^=]")
# A file named for what it holds and returning it: PHP's `return [`, `module.exports = [`, `export default {`.
_RETURNED_TABLE = re.compile(r"^(?:return|module\.exports\s*=|export\s+default)\s*[\[{]\s*$")
# One ripgrep pattern for every kind of registration line (Rust regex syntax); classify reads them. ASCII
# classes (`(?-u)`): Unicode's `\w` and `\b` made ripgrep a hundred times slower, past its time limit under load.
PATTERN = "(?-u)" + "|".join([
    r"^\s*@\s*[A-Za-z_][\w.]*",  # a decorator
    rf"{_SEP}{VERBS}\s*\(",  # a registration call
    rf"{_SEP}{HTTP}\s*\(",  # a route's method, or middleware's use: classify asks for a route where it must
    rf"^\s*{VERBS}\s*\(",  # a registration verb called bare: an alias of the registrar's method
    rf"^\s*{RUBY}\s+[:\"'/]",  # Ruby's DSL
    r"\b(?:register|registry|registrar)\w*\.\w+\s*\(",  # a call on a registry: register.add_run_env(...)
    r"\b(?:Route|Mount|WebSocketRoute|path|re_path|url|APIRoute)\(\s*r?[\"'/]",  # a route table's entry
    r"\b[A-Z][A-Za-z]*\(\s*r?[\"']",  # a table's entry made by name: Tool("search", ...), Command("x", ...)
    _NAMED_TABLE.pattern.replace("(?P<verb>", "(?:"),  # a literal table
    _HANGING_TABLE.pattern.replace("(?P<verb>", "(?:"),  # one whose items hang under its first
    _FIELD_TABLE.pattern.replace("(?P<verb>", "(?:"),  # a struct's field or an object's property
    _ENUM.pattern.replace("(?P<verb>", "(?:"),  # an enum
    _RETURNED_TABLE.pattern,  # a file that returns its table
    _KEYED.pattern.replace("(?P<verb>", "(?:"),  # an entry keyed into a table
    rf"^\s*[A-Za-z_]\w*\s*=\s*[\w.]+{_SEP}{VERBS}\s*$",  # a registrar's method bound to a name: `opt = p.add_argument`
    _CLASS.pattern.replace("(?P<verb>", "(?:").replace("(?P<rust>", "(?:").replace("(?P<go>", "(?:"),  # a settings class
    _LITERAL.pattern.replace("(?P<verb>", "(?:"),  # a type listing its values
    r"^\s*[\"']?[\w.-]+[\"']?\s*=\s*[\"'][\w.]+:[\w.]+[\"']",  # an entry point in pyproject.toml
    r"^\s*[\"']?[\w.-]+[\"']?\s*=\s*[\"'][A-Za-z_]\w*(?:\.\w+)+[\"']\s*$",  # a module as an entry point (a theme)
    r"[\"'][\w.-]+\s*=\s*[\w.]+:[\w.]+[\"']",  # an entry point in setup.py / setup.cfg
    r"^\s*[\w.-]+\s*=\s*[\w.]+:[\w.]+\s*$",  # an entry point in setup.cfg's [options.entry_points]
])
_DECORATOR = re.compile(r"^\s*@\s*(?:[A-Za-z_][\w.]*\.)?(?P<verb>[A-Za-z_]\w*)\s*(?P<call>\()?")
_CALL = re.compile(rf"{_SEP}(?P<verb>{VERBS}|{HTTP})\s*\(")
_BARE = re.compile(rf"^\s*(?P<verb>{VERBS})\s*\(")
_RUBY = re.compile(rf"^\s*(?P<verb>{RUBY})\s+[:\"'/]")
_REGISTRY = re.compile(r"\b(?:register|registry|registrar)\w*\.(?P<verb>\w+)\s*\(")
# An entry made by name starts its line or follows another item (`[Route("/", home),`): not a value a
# call returns (`cmd := exec.Command("go", ...)`, `return Path("x")`).
_TABLE = re.compile(r"(?:^\s*|[\[({,]\s*)(?:[A-Za-z_]\w*\.)?"
                    r"(?P<verb>Route|Mount|WebSocketRoute|path|re_path|url|APIRoute|[A-Z][A-Za-z]*)\(\s*r?[\"'/]")
# Verbs that register a route only with a route as their first argument: `app.use("/x", ...)`, not
# `dict.get(key)` nor a screen's `mount(widget)`; middleware's `use` takes none.
_ROUTED = {"get", "post", "put", "patch", "delete", "head", "options", "all", "use", "route", "mount", "handle",
           "handlefunc", "group", "any", "GET", "POST", "PUT", "PATCH", "DELETE", "Any", "Group", "HandleFunc",
           "Handle", "Get", "Post", "Put", "Patch", "Delete", "Route", "Mount", "Method", "MethodFunc", "With", "Use"}
_ROUTE_ARG = re.compile(r"\(\s*r?[\"'`]/")
_STRING_ARG = re.compile(r"\(\s*r?[\"'`][a-z0-9_/:.*{}-]*[\"'`]")  # a route, not `Header.Get("Content-Type")`
# `.use(articlesController)`: a router handed over by name mounts its routes (`.use(cors())` is middleware).
_ROUTER_ARG = re.compile(r"\(\s*[A-Za-z_$][\w$.]*\s*\)")
_ALIAS = re.compile(rf"^\s*(?P<name>[A-Za-z_]\w*)\s*=\s*[\w.]+{_SEP}(?P<verb>{VERBS})\s*$")
_ENTRY = re.compile(r"[\w.]+:[\w.]+[\"']")
_MODULE_ENTRY = re.compile(r"^\s*[\"']?[\w.-]+[\"']?\s*=\s*[\"'][A-Za-z_]\w*(?:\.\w+)+[\"']\s*$")
# The group an entry point is listed under: a TOML or INI table (`[project.entry-points."mkdocs.themes"]`,
# `[project.scripts]`), setup.cfg's `group =` line, or setup.py's `"group": [` key.
_SECTION = re.compile(r"^\s*\[(?P<name>[^\]]+)\]\s*$")
_CFG_GROUP = re.compile(r"^(?P<name>[\w.-]+)\s*=\s*$")
_PY_GROUP = re.compile(r"[\"'](?P<name>[\w.-]+)[\"']\s*:\s*[\[(]")
ENTRY_SECTIONS = re.compile(r"entry.points|scripts|plugins", re.IGNORECASE)
ENTRY_FILES = ("pyproject.toml", "setup.py", "setup.cfg", "package.json")
# A configuration file's keys are its data (`commands = [` in tox.toml), not a table of registrations.
DATA_FILES = (".toml", ".yaml", ".yml", ".ini", ".cfg", ".json")
PROSE_FILES = (".md", ".rst", ".txt", ".adoc", ".markdown")


def classify(path: str, text: str, kind: str | None = None, following: str = "") -> str | None:
    """How a line registers: its verb (`get`, `add_command`, `entry point`, a table's name), or None (a
    comment, a docstring's example in backticks, a `get` with no route where an endpoint is asked for).
    `following`: the next line, where a call's arguments start there (`router.get(\\n  '/profiles',`)."""
    if text.lstrip().startswith(("#", "//", "*", "/*", "- ", ">")) or "`" in text:
        return None
    name = Path(path).name
    if name in ENTRY_FILES:
        entry = _ENTRY.search(text) or re.search(r"=\s*[\w.]+:[\w.]+\s*$", text) or _MODULE_ENTRY.match(text)
        return "entry point" if entry else None
    match = _DECORATOR.match(text)
    if match:
        return match.group("verb")
    match = _CALL.search(text)
    if match:
        verb = match.group("verb")
        args = text[match.end() - 1:] + (following.strip() if text.rstrip().endswith("(") else "")
        if verb not in _ROUTED or kind == "middleware" and verb.lower() == "use" or _routed(verb, args, kind):
            return verb
    match = _BARE.match(text) or (_RUBY.match(text) if name.endswith(".rb") else None) or \
        (_CLASS.match(text) if kind == "setting" else None)
    if match:
        return next(v for v in match.groupdict().values() if v)
    return None if name.endswith(DATA_FILES) else _table(name, text)


def is_prose(path: str) -> bool:
    """A document: its code samples register nothing of the repository's."""
    return path.endswith(PROSE_FILES)


def alias_of(text: str) -> tuple[str, str] | None:
    """(name, verb) where the line binds a registrar's method to a name (`opt = parser.add_argument`):
    the name's calls (`opt("--debug", ...)`) register as the verb does."""
    found = _ALIAS.match(text)
    return (found["name"], found["verb"]) if found and found["name"] != found["verb"] else None


def entry_group(rows: list[str], number: int) -> str | None:
    """The group the entry point on line `number` (1-based) is listed under (`mkdocs.themes`,
    `console_scripts`, `project.scripts`), or None where it is under no entry-point table (a module
    named in `[build-system]` is no entry point)."""
    row = rows[number - 1] if 0 < number <= len(rows) else ""
    found = _PY_GROUP.search(row)
    if found:  # `entry_points={"console_scripts": ["x = a:b"]}` on one line
        return found["name"]
    key = row.split("=", 1)[0].strip()
    if "." in key and ENTRY_SECTIONS.search(key):  # a dotted key under `[project]`: `scripts.tox = "tox.run:run"`
        return key.rsplit(".", 1)[0].replace('"', "").replace("'", "")
    for row in reversed(rows[:number - 1]):
        found = _PY_GROUP.search(row) or _CFG_GROUP.match(row)
        if found:
            return found["name"]
        found = _SECTION.match(row)
        if found:
            quoted = re.search(r"[\"']([^\"']+)[\"']", found["name"])  # `project.entry-points."mk.themes"`
            return (quoted[1] if quoted else found["name"]) if ENTRY_SECTIONS.search(found["name"]) else None
    return None


def _routed(verb: str, args: str, kind: str | None) -> bool:
    """Whether a route's method names its route: "/items" (any string after Go's and chi's GET and Get),
    or, asked for routes or a group of them, a router handed over by name (`.use(articlesController)`)."""
    if (_ROUTE_ARG if verb.islower() else _STRING_ARG).match(args):
        return True
    return kind in ("endpoint", "group") and verb.lower() == "use" and _ROUTER_ARG.match(args) is not None


def _table(name: str, text: str) -> str | None:
    """A table's verb: a registry's call, a literal table's or an enum's name, the name of a file that
    returns its table, or the name an entry is made by."""
    match = _REGISTRY.search(text)
    if match:
        return "register"
    match = _NAMED_TABLE.match(text) or _ENUM.match(text) or _HANGING_TABLE.match(text) or _FIELD_TABLE.match(text)
    if match:
        return match.group("verb")
    if _RETURNED_TABLE.match(text):
        return name.split(".")[0]
    match = _KEYED.match(text)
    if match:
        return match.group("verb")
    match = _LITERAL.match(text)
    if match:
        return match.group("verb")
    match = _TABLE.search(text)
    return match.group("verb") if match else None


def is_table(text: str) -> bool:
    """Whether the line opens a literal table (named, an enum, or a file's returned one) rather than a call."""
    return bool(_NAMED_TABLE.match(text) or _ENUM.match(text) or _RETURNED_TABLE.match(text) or _CLASS.match(text)
                or _HANGING_TABLE.match(text) or _FIELD_TABLE.match(text) or _LITERAL.match(text))


def is_hanging(text: str) -> bool:
    """Whether the line opens a table with its first item on it (`shells = {'bash': Bash,`)."""
    return _HANGING_TABLE.match(text) is not None


def is_keyed(text: str) -> bool:
    """Whether the line keys one entry into a table (`Licenses["mit"] = License{`): one registration,
    whatever its value spans."""
    return _KEYED.match(text) is not None


def weight(text: str, verb: str) -> float:
    """A registration's weight: a table entry made by a class's name (`Command("x", ...)`) may be any
    record of that name, so it counts half of a decorator or a registration call."""
    return 0.5 if verb[:1].isupper() and not text.lstrip().startswith("@") and "." + verb not in text else 1.0


def shown_verb(text: str, verb: str) -> str:
    """The registration as a reader knows it: `@app.get`, `.add_command`, `Route`, `entry point`."""
    match = re.match(r"^\s*(@\s*[A-Za-z_][\w.]*)", text)
    if match:
        return match.group(1).replace(" ", "")
    if verb == "entry point":
        return verb
    if re.match(rf"^\s*{re.escape(verb)}\b", text):  # bare: an alias, Ruby's DSL, a table's name
        return verb
    return f"{verb}(…)" if verb[:1].isupper() and "." + verb not in text or verb in ("path", "re_path", "url") \
        else f".{verb}"


def file_rows(root: Path, path: str) -> list[str]:
    """The lines of the file `path` under `root` as it is now; none where it cannot be read."""
    try:
        return (root / path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
