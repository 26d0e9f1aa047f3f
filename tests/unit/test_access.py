"""The one way in (codeasst.access) and the LSP server's own decisions (codeasst.lsp.suggestions)."""

from __future__ import annotations

import ast
import socket
from pathlib import Path

import pytest

import codeasst
from codeasst.access import Unreachable, alone, connect
from codeasst.access.served import Served
from codeasst.backends.fake import HashingEmbedder, ScriptedLLM
from codeasst.lsp.suggestions import Outcomes, Refused, completion_edit, path_in
from codeasst.services import build_services
from codeasst.wire import discovery

PACKAGE = Path(codeasst.__file__).parent
FRONT_END_PACKAGES = ("cli", "chat", "lsp")
FRONT_ENDS = [path for folder in FRONT_END_PACKAGES for path in sorted((PACKAGE / folder).glob("*.py"))]


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


@pytest.mark.parametrize("path", FRONT_ENDS, ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_front_ends_reach_tasks_and_the_server_client_only_through_access(path):
    reached = {name for name in _imports(path)
               if name.startswith(("codeasst.tasks", "codeasst.answer", "codeasst.wire.client."))
               or name == "codeasst.wire.client"}
    assert not reached, f"{path.name} imports {sorted(reached)}: go through codeasst.access"


def test_every_front_end_package_is_checked():
    """A front end that moves (cli.py became a package) must not drop out of the check above."""
    checked = {path.relative_to(PACKAGE).as_posix() for path in FRONT_ENDS}
    assert {f"{folder}/__init__.py" for folder in FRONT_END_PACKAGES} <= checked
    assert not (PACKAGE / "cli.py").exists(), "codeasst/cli.py next to codeasst/cli/: which one runs?"


MODULE = "def add(a, b):\n    \"\"\"The sum of a and b.\"\"\"\n    return a + b\n"


def _services(root: Path):
    return build_services(root, embedder=HashingEmbedder(), llm=ScriptedLLM(["`add` returns the sum [1]."] * 5))


def _dead_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_server_that_does_not_answer_leaves_the_cli_to_work_alone_with_a_note(make_repo):
    root = make_repo({"mod.py": MODULE})
    discovery.announce(root, f"http://127.0.0.1:{_dead_port()}", "t")
    notes: list[str] = []
    assistant = connect(_services(root), on_note=notes.append)
    assert isinstance(assistant, Served)
    reply = assistant.search("sum of a and b", no_llm=True)
    assert [hit["path"] for hit in reply["hits"]] == ["mod.py"]
    assert notes and "working without it" in notes[0]
    assert assistant.where == "here"  # it does not knock again


def test_a_thin_client_gets_unreachable_instead_of_working_alone(make_repo):
    root = make_repo({"mod.py": MODULE})
    discovery.announce(root, f"http://127.0.0.1:{_dead_port()}", "t")
    assistant = Served.find(_services(root), None)
    with pytest.raises(Unreachable):
        assistant.search("sum", no_llm=True)


def test_an_answer_comes_as_the_events_the_server_streams(make_repo):
    root = make_repo({"mod.py": MODULE})
    events = list(alone(_services(root)).ask("what does add return?"))
    kinds = [e["type"] for e in events]
    assert kinds[0] == "index" and kinds[-1] == "answer" and "text" in kinds
    assert "sum" in events[-1]["answer"] and events[-1]["citations"]


def test_fix_at_a_line_changes_only_that_line(make_repo):
    source = "import os\n\n\ndef f(a,b):\n    return a+b\n"
    root = make_repo({"mod.py": source})
    here = alone(build_services(root, embedder=HashingEmbedder(), llm=ScriptedLLM()))
    whole = here.fix("mod.py")
    at_line = here.fix("mod.py", source, line=4)
    assert whole["changed"] and "import os" not in whole["text"]
    assert at_line["changed"] and at_line["text"].startswith("import os\n")
    assert "def f(a, b):" in at_line["text"]


def test_a_file_uri_inside_the_repository_and_nothing_else(tmp_path):
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (root / "link").symlink_to(tmp_path / "outside", target_is_directory=True)
    assert path_in(root, (root / "pkg" / "a.py").as_uri())[1] == "pkg/a.py"
    for uri in [(tmp_path / "outside" / "a.py").as_uri(), (root / "link" / "a.py").as_uri(),
                (root / ".." / "outside" / "a.py").as_uri(), "untitled:1", "https://example.com/a.py",
                "file://otherhost/a.py"]:
        with pytest.raises(Refused):
            path_in(root, uri)


@pytest.mark.parametrize("line, col, suggestion, expected", [
    ("    ret", 7, "urn a + b", (4, 7, "return a + b")),  # from the word before the cursor
    ("    x = ", 8, "a + b", (8, 8, "a + b")),  # no word: at the cursor
    ("    print()", 10, "a, b)", (10, 11, "a, b)")),  # restates the rest of the line: replaces it
    ("    f(", 6, "a)\n    g()", (6, 6, "a)\n    g()")),
])
def test_a_suggestion_as_a_completion_items_edit(line, col, suggestion, expected):
    edit = completion_edit(line, 0, col, suggestion)
    assert (edit.start, edit.end, edit.text) == expected


def test_outcomes_count_a_discard_once_and_an_accept_once():
    outcomes = Outcomes(discard_after_s=10)
    assert outcomes.show("a", "1", 5) == (True, [])
    assert outcomes.next_request("a", keep="1") == []  # the same suggestion, still typed ahead
    assert outcomes.show("a", "1", 4) == (False, [])  # its rest again: not shown a second time
    first, ended = outcomes.show("a", "2", 3)
    assert first and [s.id for s in ended] == ["1"]  # replaced: discarded
    assert outcomes.accept("2").length == 3 and outcomes.accept("2") is None
    assert outcomes.show("a", "2", 2) == (False, [])  # accepted already: its rest waits for no outcome
    assert outcomes.next_request("a") == []
    outcomes.show("b", "3", 4)
    assert outcomes.expired(now=outcomes.shown["b"].at + 11)[0].id == "3"
    assert outcomes.expired() == [] and outcomes.accept("3") is None
