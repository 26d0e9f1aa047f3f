"""The exit codes the README documents ("Exit codes"), command by command, through the CLI:
bad input 2, unanswerable 1, an unusable index 3, a failing model, linter or store 4, a busy
index 75, an interrupt 130; each with its reason on stderr and no traceback.

tests/e2e/test_bad_input.py and test_fix_cli.py hold the cases that need the real models or a
real process racing this one (a corrupted index rebuilt, `fix --write` on a file changed meanwhile)."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from codeasst import cli
from codeasst.cli import common
from codeasst.index.indexer import IndexLock
from codeasst.paths import index_dir
from tests.cli.conftest import ROOT, TINY

MESSY = "import os\ndef f(a,b) :\n    return a+b\n"
# Commands whose cases live elsewhere for now; the test below names them so none is forgotten.
# (chat's screen needs a terminal; its cases here are the piped fallback and the flags.)
PENDING: dict[str, str] = {}


@dataclass
class Places:
    repo: Path  # a tiny git repository, indexed for the cases that say so
    empty: Path  # a git repository with nothing to index
    missing: Path  # a path that does not exist
    tmp: Path  # a scratch folder


@dataclass
class Case:
    command: str  # its path: "index", "eval fix", ...
    why: str
    code: int
    args: Callable[[Places], list]
    says: str  # a fragment of what stderr says
    input: str | bytes | None = None
    env: dict[str, str] = field(default_factory=dict)
    setup: Callable[[Places], None] | None = None
    locked: bool = False  # run while another process holds the index's lock
    indexed: bool = False  # index the repository first

    @property
    def id(self) -> str:
        return f"{self.command}: {self.why} -> {self.code}"


def _corrupt(p: Places) -> None:  # of an indexed repository
    (index_dir(p.repo) / "chroma" / "chroma.sqlite3").write_bytes(b"garbage" * 1000)


def _corrupt_manifest(p: Places) -> None:  # refs reads no vectors, but the manifest it must
    for name in ("manifest.sqlite", "manifest.sqlite-wal", "manifest.sqlite-shm"):
        (index_dir(p.repo) / name).unlink(missing_ok=True)
    (index_dir(p.repo) / "manifest.sqlite").write_bytes(b"garbage" * 1000)


def _bad_config(p: Places) -> None:
    (p.repo / ".codeasst.toml").write_text("[index]\nchunk_chars = 'big'\n")


def _broken_model_entry(p: Places) -> None:
    from codeasst.paths import user_config_file

    user_config_file().parent.mkdir(parents=True, exist_ok=True)
    user_config_file().write_text("[models.broken]\ncontext_length = 100\n")


def _broken_flake8(p: Places) -> None:
    (p.repo / "m.py").write_text(MESSY)
    (p.repo / "tox.ini").write_text("[flake8]\nmax-line-length = eighty\n")


def _rows(name: str, rows: list[dict]) -> Callable[[Places], Path]:
    def write(p: Places) -> Path:
        path = p.tmp / name
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        return path

    return write


NO_STORE = {"CODEASST_STORE__CHROMA_URL": "http://127.0.0.1:9"}  # nothing listens on port 9
_questions = _rows("q.jsonl", [{"repo": "repo", "question": "total?", "expected": ["util.py"], "split": "test"}])

CASES = [
    Case("index", "a path that does not exist", 2, lambda p: [p.missing], "path does not exist"),
    Case("index", "a bad flag value", 2, lambda p: [p.repo, "--chunk-chars", "big"], "Invalid value"),
    Case("index", "a bad setting", 2, lambda p: [p.repo], "index.chunk_chars", setup=_bad_config),
    Case("index", "a corrupted index", 3, lambda p: [p.repo], "codeasst index --rebuild", setup=_corrupt,
         indexed=True),
    Case("index", "an unreachable Chroma server", 4, lambda p: [p.repo], "cannot reach the Chroma server",
         env=NO_STORE),
    Case("index", "another process updating the index", 75, lambda p: [p.repo], "being updated by pid",
         locked=True, indexed=True),
    Case("index", "nothing to index", 0, lambda p: [p.empty], "no indexable files"),

    Case("status", "-C a path that does not exist", 2, lambda p: ["-C", p.missing], "path does not exist"),
    Case("status", "a bad setting", 2, lambda p: ["-C", p.repo], "index.chunk_chars", setup=_bad_config),
    Case("status", "a corrupted index", 3, lambda p: ["-C", p.repo], "codeasst index --rebuild", setup=_corrupt,
         indexed=True),
    Case("status", "an unreachable Chroma server", 4, lambda p: ["-C", p.repo], "cannot reach the Chroma server",
         env=NO_STORE, indexed=True),
    Case("status", "nothing indexed is an answer", 0, lambda p: ["-C", p.empty], ""),

    Case("refs", "an empty name", 2, lambda p: ["  ", "-C", p.repo], "give a NAME"),
    Case("refs", "--limit out of range", 2, lambda p: ["x", "--limit", "0", "-C", p.repo], "Invalid value for '--limit'"),
    Case("refs", "a name nothing defines", 1, lambda p: ["no_such_name_here", "-C", p.repo], "no definition named"),
    Case("refs", "a corrupted manifest", 3, lambda p: ["x", "-C", p.repo], "codeasst index --rebuild",
         setup=_corrupt_manifest, indexed=True),
    Case("lsp", "--repo that does not exist", 2, lambda p: ["--repo", p.missing], "path does not exist"),
    Case("mcp", "--repo that does not exist", 2, lambda p: ["--repo", p.missing], "path does not exist"),
    Case("search", "an empty query", 2, lambda p: ["  ", "-C", p.repo], "the question is empty"),
    Case("search", "no query and nothing piped", 2, lambda p: ["-C", p.repo], "give a QUERY"),
    Case("search", "-k out of range", 2, lambda p: ["x", "-k", "0", "-C", p.repo], "Invalid value for '-k'"),
    Case("search", "an unknown --model", 2, lambda p: ["x", "--model", "nosuch", "-C", p.repo],
         "unknown model 'nosuch'"),
    Case("search", "a --model file that does not exist", 2, lambda p: ["x", "--model", p.missing / "m.gguf",
                                                                         "-C", p.repo], "model file not found"),
    Case("search", "nothing indexable", 1, lambda p: ["x", "--no-llm", "-C", p.empty], "nothing is indexed"),
    Case("search", "a corrupted index", 3, lambda p: ["x", "--no-llm", "-C", p.repo], "codeasst index --rebuild",
         setup=_corrupt, indexed=True),
    Case("search", "an unreachable Chroma server", 4, lambda p: ["x", "--no-llm", "-C", p.repo],
         "cannot reach the Chroma server", env=NO_STORE),
    Case("search", "the index busy: searched as it was", 0, lambda p: ["total", "--no-llm", "-C", p.repo],
         "searching it as it is", locked=True, indexed=True),

    Case("ask", "an empty question", 2, lambda p: ["  ", "-C", p.repo], "the question is empty"),
    Case("ask", "no question and nothing piped", 2, lambda p: ["-C", p.repo], "give a QUESTION"),
    Case("ask", "an unknown --system", 2, lambda p: ["why?", "--system", "bogus", "-C", p.repo],
         "no answer system 'bogus'"),
    Case("ask", "an unknown --model", 2, lambda p: ["why?", "--model", "nosuch", "-C", p.repo],
         "unknown model 'nosuch'"),
    Case("ask", "nothing indexable", 1, lambda p: ["why?", "-C", p.empty], "nothing is indexed"),
    Case("ask", "a corrupted index", 3, lambda p: ["why?", "-C", p.repo], "codeasst index --rebuild",
         setup=_corrupt, indexed=True),
    Case("ask", "an unreachable Chroma server", 4, lambda p: ["why?", "-C", p.repo],
         "cannot reach the Chroma server", env=NO_STORE),

    Case("chat", "an empty piped question", 2, lambda p: ["-C", p.repo], "the question on stdin is empty",
         input="  \n"),
    Case("chat", "a piped question and an unknown --model", 2, lambda p: ["-C", p.repo, "--model", "nosuch"],
         "unknown model 'nosuch'", input="why?\n"),
    Case("chat", "a piped question, nothing indexable", 1, lambda p: ["-C", p.empty], "nothing is indexed",
         input="why?\n"),
    Case("chat", "--resume that is not a number", 2, lambda p: ["--resume", "last"], "Invalid value"),

    Case("complete", "a file that does not exist", 2, lambda p: [p.missing, "--line", "1", "--col", "1"],
         "no such file"),
    Case("complete", "a line outside the text", 2, lambda p: [p.repo / "util.py", "--line", "9", "--col", "1"],
         "line 9 is outside the text"),
    Case("complete", "stdin that is not UTF-8", 2, lambda p: ["-", "--line", "1", "--col", "1"], "not UTF-8",
         input=b"caf\xe9 = 1\n"),
    Case("complete", "an unknown --model", 2, lambda p: [p.repo / "util.py", "--line", "1", "--col", "1",
                                                          "--model", "nosuch"], "unknown model 'nosuch'"),
    Case("complete", "a missing --line", 2, lambda p: [p.repo / "util.py", "--col", "1"], "Missing option"),

    Case("serve", "a port out of range", 2, lambda p: ["--port", "70000", "-C", p.repo], "Invalid value"),
    Case("serve", "-C a path that does not exist", 2, lambda p: ["-C", p.missing], "path does not exist"),
    Case("serve", "an unknown --model", 2, lambda p: ["--model", "nosuch", "-C", p.repo], "unknown model"),

    Case("stats", "an unknown option", 2, lambda p: ["--days"], "No such option"),
    Case("stats", "an event store that is not a database", 1, lambda p: [], "cannot read the suggestion events",
         setup=lambda p: _garbage_events()),

    Case("fix", "a file that does not exist", 2, lambda p: [p.missing, "--no-llm"], "no such file"),
    Case("fix", "a file that is not Python", 2, lambda p: [p.repo / "README.md", "--no-llm"], "not a Python file"),
    Case("fix", "a syntax error", 2, lambda p: ["-", "--no-llm"], "syntax error", input="def f(:\n"),
    Case("fix", "--check with diagnostics left", 1, lambda p: [p.tmp / "left.py", "--no-llm", "--check"], "left F821",
         setup=lambda p: (p.tmp / "left.py").write_text("def g(a,b):\n    return a + undefined_name\n")),
    Case("fix", "flake8 failing on its config", 4, lambda p: [p.repo / "m.py", "--no-llm"], "flake8",
         setup=_broken_flake8),

    Case("models", "an unknown --model", 2, lambda p: ["--model", "nosuch"], "unknown model 'nosuch'"),
    Case("models", "a [models] entry with no path or url", 2, lambda p: [], "needs a `path`",
         setup=_broken_model_entry),
    Case("models", "-C a path that does not exist", 2, lambda p: ["-C", p.missing], "path does not exist"),
    Case("models", "--prepare with --json", 2, lambda p: ["--prepare", "--json"], "--prepare takes neither"),

    Case("config", "a bad setting", 2, lambda p: ["-C", p.repo], "index.chunk_chars", setup=_bad_config),
    Case("config", "a bad environment variable", 2, lambda p: ["-C", p.repo], "retrieval.k",
         env={"CODEASST_RETRIEVAL__K": "many"}),

    Case("trust", "a file that does not exist", 2, lambda p: [p.missing], "no such file"),
    Case("trust", "no .codeasst.toml to trust", 2, lambda p: ["-C", p.repo], "no such file"),

    Case("paths", "an unknown option", 2, lambda p: ["--all"], "No such option"),

    Case("eval retrieval", "a file that does not exist", 2, lambda p: [p.missing], "no such file"),
    Case("eval retrieval", "a row that is no question row", 2, lambda p: [_rows("r.jsonl", [{"repo": "x"}])(p)],
         "not a question row"),
    Case("eval retrieval", "an unknown --split", 2, lambda p: [_questions(p), "--split", "dev"],
         "--split must be one of"),
    Case("eval ask", "a file that does not exist", 2, lambda p: [p.missing], "no such file"),
    Case("eval relations", "a file that does not exist", 2, lambda p: [p.missing], "no such file"),
    Case("eval relations", "a row that is no relation", 2, lambda p: [_questions(p)], "not a relation row"),
    Case("eval ask", "an unknown system", 2, lambda p: [_questions(p), "--systems", "oracle"], "--systems"),
    Case("eval fix", "a file that does not exist", 2, lambda p: [p.missing], "cannot read"),
    Case("eval fix", "a row with fields missing", 2, lambda p: [_rows("f.jsonl", [{"code": "x"}])(p)], "missing"),
    Case("eval fim", "a file that does not exist", 2, lambda p: [p.missing], "cannot read"),
    Case("eval fim", "an unknown --split", 2, lambda p: [p.missing, "--split", "dev"], "unknown split"),
    Case("eval unittest", "a path that does not exist", 2, lambda p: [p.missing], "neither a directory nor"),
    Case("eval unittest", "a directory without tests", 2, lambda p: [p.repo], "no tests collected"),
    Case("eval unittest", "--tests naming nothing", 2, lambda p: [p.repo, "--tests", "nosuch_test.py"],
         "pytest refused its arguments"),
    Case("eval unittest", "--limit 0", 2, lambda p: [p.repo, "--limit", "0"], "Invalid value for '--limit'"),
    Case("eval fix-modules", "a set that is not TOML", 2, lambda p: [_rows("s.toml", [{"a": 1}])(p)], "not TOML"),
    Case("eval fix-modules", "a set that does not exist", 2, lambda p: [p.missing], "cannot read"),
    Case("eval", "no subcommand", 2, lambda p: [], ""),
]


def _garbage_events() -> None:
    from codeasst.paths import data_dir

    data_dir().mkdir(parents=True, exist_ok=True)
    (data_dir() / "completion-events.sqlite").write_bytes(b"not a database" * 100)


@pytest.fixture
def places(make_repo, tmp_path) -> Places:
    repo = make_repo(TINY)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    return Places(repo=repo, empty=make_repo({}, name="empty"), missing=tmp_path / "no-such-thing", tmp=scratch)


def _would_serve(*args, **kwargs):
    raise AssertionError("serve got past its checks and would now serve until stopped")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_exit_code(case: Case, invoke, places, monkeypatch):
    import uvicorn

    monkeypatch.setattr(uvicorn.Server, "run", _would_serve)  # a case that fails must not hang
    if case.indexed:
        assert invoke("index", places.repo).exit_code == 0
    for name, value in case.env.items():
        monkeypatch.setenv(name, value)
    if case.setup:
        case.setup(places)
    args = case.args(places)
    with IndexLock(index_dir(places.repo)) if case.locked else nullcontext():
        run = invoke(*case.command.split(), *args, input=case.input)
    assert run.exception is None, f"uncaught {run.exception!r}"
    assert run.exit_code == case.code, f"stdout:\n{run.stdout}\nstderr:\n{run.stderr}"
    assert case.says in run.stderr
    assert "Traceback" not in run.stderr
    if run.stderr.startswith("codeasst: error:"):
        assert run.stderr.count("codeasst: error:") == 1, run.stderr


def _commands() -> set[str]:
    import typer.main

    found = set()

    def walk(command, path: list[str]) -> None:
        subs = getattr(command, "commands", None)
        if subs is None:
            found.add(" ".join(path))
        for name, sub in (subs or {}).items():
            walk(sub, [*path, name])

    walk(typer.main.get_command(cli.app), [])
    return found


def test_every_command_has_a_bad_input_case_and_every_documented_code_a_case():
    bad_input = {c.command for c in CASES if c.code == 2}
    assert _commands() - set(PENDING) <= bad_input, "a command without an exit-code case"
    readme = (ROOT / "README.md").read_text()
    table = readme.split("### Exit codes")[1].split("\n## ")[0]
    documented = {int(code) for code in re.findall(r"^\| (\d+) \|", table, flags=re.MULTILINE)}
    assert documented == {0, 1, 2, 3, 4, 75, 130}
    assert documented - {130} <= {c.code for c in CASES}  # 130: the two tests below


# Where each command is interrupted: its first step that is codeasst's own.
_FIRST_STEP = {
    "chat": "codeasst.cli.asking.read_stdin",
    "config": "codeasst.config.load_settings",
    "trust": "codeasst.paths.find_repo_root",
    "lsp": "codeasst.paths.find_repo_root",
    "paths": "codeasst.paths.config_dir",
    "stats": "codeasst.wire.events.EventStore.open_default",
    "eval retrieval": "codeasst.evals.retrieval.evaluate",
    "eval ask": "codeasst.evals.ask.evaluate",
    "eval relations": "codeasst.evals.relations.evaluate",
}
_ARGS = {"search": ["x"], "ask": ["x"], "refs": ["x"], "complete": ["-", "--line", "1", "--col", "1"], "fix": ["-"],
         "eval retrieval": ["q.jsonl"], "eval ask": ["q.jsonl"], "eval relations": ["r.jsonl"], "eval fix": ["d.jsonl"], "eval fim": ["d.jsonl"],
         "eval unittest": ["repo"], "eval fix-modules": ["set.toml"]}


@pytest.mark.parametrize("command", sorted(_commands() - set(PENDING)))
def test_an_interrupt_exits_130(command, monkeypatch, capsys):
    """Ctrl-C at the command's first step, through `main()`, as the shell delivers it."""
    import importlib

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    target = _FIRST_STEP.get(command, "codeasst.services.build_services")
    module_name, _, attr = target.rpartition(".")
    try:
        owner = importlib.import_module(module_name)
    except ModuleNotFoundError:  # a class attribute: module.Class.attr
        module_name, _, cls = module_name.rpartition(".")
        owner = getattr(importlib.import_module(module_name), cls)
    monkeypatch.setattr(owner, attr, interrupted)
    monkeypatch.setattr(common, "skip_teardown", False)  # never os._exit the test process
    monkeypatch.setattr(sys, "argv", ["codeasst", *command.split(), *_ARGS.get(command, [])])
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))  # piped and empty
    with pytest.raises(SystemExit) as info:
        cli.main()
    assert info.value.code == 130
    assert "Traceback" not in capsys.readouterr().err


def test_serve_stops_on_ctrl_c_with_130(tiny_repo):
    """A real process: uvicorn catches SIGINT, shuts down, then re-raises it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "tests.sigint_default", "tests.cli.fake_main", "serve",
                               "--port", str(port), "-C", str(tiny_repo)], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    try:
        assert b"serving" in server.stderr.readline()
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=60)
    finally:
        server.kill()
    assert server.returncode == 130, err.decode()
    assert b"Traceback" not in err
