"""'Where do I add X?' (answer/registrations.py): the question's X, the lines that register the existing
Xs found by ripgrep, the file that holds most of them leading, one to copy, and none found said so."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeasst.answer import registration_question as rq
from codeasst.answer import registrations as reg
from codeasst.answer.registration_siblings import NEAREST_HITS

ROUTES = '''from fastapi import APIRouter

router = APIRouter()
cache = {}


@router.get("/items")
def list_items():
    return cache.get("items", [])


@router.post("/items")
def add_item(item: dict):
    cache["items"] = [*cache.get("items", []), item]
    return item
'''
MAIN = '''from fastapi import FastAPI

from app import routes

app = FastAPI()
app.include_router(routes.router, prefix="/api")
'''
CLI = '''import click

from tool import build, clean


@click.group()
def cli():
    """The tool."""


cli.add_command(build.build)
cli.add_command(clean.clean)
'''
PYPROJECT = '''[project]
name = "tool"

[project.scripts]
tool = "tool.cli:cli"
tool-admin = "tool.admin:main"
'''
SCREEN = '''class Screen:
    def show(self, view):
        self.body.mount(view)
        return self.data.get("title")
'''


def _repo(tmp_path: Path, files: dict[str, str]) -> tuple[Path, list[str]]:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path, sorted(files)


@pytest.mark.parametrize(("question", "thing"), [
    ("where do I add an endpoint?", "endpoint"),
    ("How do I register a new API endpoint?", "API endpoint"),
    ("Where should I add a new command to the CLI?", "command"),
    ("where is the middleware configured?", "middleware"),
    ("How does the index work?", None),
    ("Where is a parser looked up by name, and what happens if two parsers are registered?", None),  # its own clause
    ("Where is the retry policy implemented?", None),  # where it is, not where another goes
    ("Where is VAT added to an amount?", None),  # where the code adds it, not where to add a VAT
    ("Where are the plugins added?", "plugins"),
    ("Where should a new exporter be defined?", "exporter"),
    ("Where are the cli and cli-admin executables declared?", "cli-admin executables"),
    ("What does add_item return?", None),
    # as users phrase it: what they want, then where
    ("I need an endpoint that archives an item. Where are the items API's endpoints defined?", "items API's endpoints"),
    ("If I wanted to add a new tox subcommand like `tox list`, how would I wire it in?", "tox subcommand"),
    ("Can you show me where web routes are declared? I need to add one.", "web routes"),
    ("I'd like to give flake8 a new command-line option. Which file should it be defined in?", "command-line option"),
    ("Where does the project set up its middleware? I'd like to add one.", "middleware"),
    ("What's the right place to declare a new environment variable setting?", "environment variable setting"),
    ("How would I make `zoxide init` support another shell?", "shell"),
    ("I'm adding an /orders group. Where does the new router get hooked up?", "router"),
    ("I need to change the parser. Where is it defined?", None),  # no new one wanted
    ("I want to understand the cache. Where is it invalidated?", None),
    ("Where is the Foo class defined?", None),
])
def test_the_question_names_what_to_add(question, thing):
    assert rq.asked(question) == thing


def test_routes_lead_with_where_they_are_registered_and_one_to_copy(tmp_path):
    root, files = _repo(tmp_path, {"app/routes.py": ROUTES, "app/main.py": MAIN, "app/screen.py": SCREEN,
                                   "tests/test_routes.py": 'def test_items(client):\n    client.get("/items")\n'})
    found = reg.find(root, files, "where do I add an endpoint?")
    assert [s.path for s in found.sites] == ["app/routes.py", "app/main.py"]
    assert [n for n, _ in found.sites[0].lines] == [7, 12]
    assert found.pattern == ("app/routes.py", [(7, '@router.get("/items")'), (8, "def list_items():"),
                                               (9, '    return cache.get("items", [])')])
    assert found.also == ["tests/test_routes.py"]
    shown = found.render()
    assert shown.startswith("Where the existing endpoints are registered:\n- app/routes.py:7-12: 2 registrations")
    assert "mount(view)" not in shown and "data.get" not in shown  # a screen's mount and a dict's get register nothing


def test_commands_registered_by_calls_and_entry_points(tmp_path):
    root, files = _repo(tmp_path, {"tool/cli.py": CLI, "pyproject.toml": PYPROJECT})
    found = reg.find(root, files, "Where do I add a command?")
    assert found.sites[0].path == "tool/cli.py"
    assert [n for n, _ in found.sites[0].lines] == [6, 11, 12]
    scripts = reg.find(root, files, "Where are the tool's executables declared?")  # entry points, read as text
    assert [s.path for s in scripts.sites] == ["pyproject.toml"] and "`entry point`" in scripts.render()
    assert [n for n, _ in scripts.sites[0].lines] == [5, 6]


def test_a_file_of_200_registrations_shows_a_few_and_says_how_many(tmp_path):
    body = "".join(f'@app.get("/r{i}")\ndef r{i}():\n    return {i}\n\n' + "\n" * 11 for i in range(200))
    root, files = _repo(tmp_path, {"api.py": "app = make()\n\n" + body})
    assert len(body.splitlines()) > 2900
    found = reg.find(root, files, "where do I add an endpoint?")
    shown = found.render()
    assert "api.py:3-" in shown and ": 200 registrations (`@app.get`)" in shown
    assert shown.count('@app.get("/r') == reg.SHOWN + 1  # the first few, and the one to copy
    assert f"… and {200 - reg.SHOWN} more lines" in shown


def test_no_registration_for_the_thing_is_said_plainly(tmp_path):
    root, files = _repo(tmp_path, {"tool/cli.py": CLI, "app/screen.py": SCREEN})
    found = reg.find(root, files, "Where do I add a database migration?")
    assert not found.sites and not found.places()
    assert found.render().startswith("No place in this repository registers database migrations")


TOKENS = '''function compile(format) {
  return format.replace(/:([-\\w]+)/g, function (_, token) {
    switch (token) {
      case 'method': return req.method
      case 'status': return res.statusCode
      case 'url': return req.url
    }
  })
}
'''


def test_no_registration_found_shows_where_the_best_code_names_them(tmp_path):
    root, files = _repo(tmp_path, {"index.js": TOKENS, "app/screen.py": SCREEN})
    question = "Where do I add a new token, like :request-id?"
    assert not reg.find(root, files, question).sites  # no form of registration: a switch on its name
    found = reg.find(root, files, question, hits=[("app/screen.py", 1, 4), ("index.js", 1, 9)])
    assert found.nearest and found.places() == [("index.js", 2, 3)]  # the lines of retrieval's code naming them
    assert found.render().startswith("No place in this repository registers tokens: no decorator, registration "
                                     "call, route table or entry point names one. Where the code retrieval ranks "
                                     "first for the question names them:\n- index.js:2-3\n")
    assert found.to_json()["found"] == 1  # a place is shown: not an answer of none
    far = [("app/screen.py", 1, 4)] * NEAREST_HITS + [("index.js", 1, 9)]
    assert not reg.find(root, files, question, hits=far).sites  # beyond the best hits: none, said plainly


def test_a_loop_that_registers_a_list_counts_each(tmp_path):
    text = ("app = Typer()\nfor command in (index, search,\n                ask, fix):\n    app.command()(command)\n"
            "app.add_typer(evals, name='eval')\n")
    root, files = _repo(tmp_path, {"cli.py": text, "other.py": '@group.command("x")\ndef x():\n    pass\n'})
    found = reg.find(root, files, "where do I add a command?")
    assert found.sites[0].path == "cli.py" and found.sites[0].count == 5
    assert found.pattern[1][0] == (2, "for command in (index, search,")


def test_the_code_registrations_lead_and_tests_registering_their_own_routes_are_left_out(tmp_path):
    test_app = "".join(f'@app.get("/t{i}")\ndef t{i}():\n    pass\n\n' for i in range(6))
    root, files = _repo(tmp_path, {"app/routes.py": ROUTES, "tests/test_app.py": test_app})
    found = reg.find(root, files, "where do I add an endpoint?")
    assert [s.path for s in found.sites] == ["app/routes.py"]  # six routes of a test's own app are no place to add one
    alone = reg.find(*_repo(tmp_path / "only", {"tests/test_app.py": test_app}), "where do I add an endpoint?")
    assert not alone.sites and alone.render().startswith("No place")  # a repository with no endpoint of its own
    asked = reg.find(*_repo(tmp_path / "asked", {"tests/test_app.py": test_app}),
                     "Where do I add an endpoint to the test app?")
    assert [s.path for s in asked.sites] == ["tests/test_app.py"]  # asked of tests, they are shown
