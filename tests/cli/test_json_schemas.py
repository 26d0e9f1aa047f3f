"""Every command's `--json` output, run through the CLI, fits its documented schema
(tests/data/json_schemas, rendered into docs/json.md)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from codeasst.wire.events import EventStore
from tests.cli import schemas
from tests.cli.conftest import ROOT, run_process
from tests.cli.fakes import PatientLLM

# The schemas of each command that takes --json, by its command path.
SCHEMAS_OF = {
    "index": ["index", "index-explain"],
    "status": ["status"],
    "search": ["search"],
    "refs": ["refs"],
    "ask": ["ask"],
    "complete": ["complete"],
    "stats": ["stats"],
    "fix": ["fix"],
    "models": ["models", "models-check"],
    "config": ["config"],
    "trust": ["trust", "trust-revoke", "trust-list"],
    "paths": ["paths"],
    "serve": ["serve-info"],
    "eval retrieval": ["eval-retrieval"],
    "eval ask": ["eval-ask"],
    "eval relations": ["eval-relations"],
    "eval fix": ["eval-fix"],
    "eval fim": ["eval-fim"],
    "eval unittest": ["eval-unittest"],
    "eval fix-modules": ["eval-fix-modules"],
}
MESSY = "import os\ndef f(a,b) :\n    return a+b\n"


def _json_commands() -> set[str]:
    """Command paths of every command with a --json option, from the app itself."""
    import typer.main

    from codeasst.cli import app

    found = set()

    def walk(command, path: list[str]) -> None:
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, [*path, name])
        if any("--json" in getattr(p, "opts", []) for p in command.params):
            found.add(" ".join(path))

    walk(typer.main.get_command(app), [])
    return found


def test_every_command_with_json_has_a_schema_and_every_schema_a_command():
    assert _json_commands() == set(SCHEMAS_OF)
    assert sorted(n for ns in SCHEMAS_OF.values() for n in ns) == schemas.names()
    for command, names in SCHEMAS_OF.items():
        for name in names:
            assert schemas.load(name)["title"].startswith(f"codeasst {command} "), name


def test_docs_json_md_is_rendered_from_the_schemas():
    committed = (ROOT / "docs" / "json.md").read_text(encoding="utf-8")
    assert committed == schemas.render_markdown(), "docs/json.md is stale: run `make json-docs`"


def test_a_schema_refuses_a_missing_a_mistyped_and_an_unknown_field():
    hit = {"path": "a.py", "start_line": 1, "end_line": 2, "symbol": "a", "kind": "file", "role": "test", "score": 0.5,
           "sources": ["dense"]}
    assert schemas.errors("search", [hit]) == []
    assert schemas.errors("search", [{k: v for k, v in hit.items() if k != "score"}])
    assert schemas.errors("search", [{**hit, "start_line": "1"}])
    assert schemas.errors("search", [{**hit, "extra": 1}])


@dataclass
class World:
    invoke: Callable  # the CLI, in this process, with fake models
    repo: Path  # a tiny repository, indexed
    tmp: Path  # a scratch folder
    llm: PatientLLM  # the scripted model


# Each schema's outputs, produced through the CLI.
def _index(w: World) -> list:
    return [w.invoke("index", w.repo, "--json").json(), w.invoke("index", w.repo, "--rebuild", "--json").json()]


def _index_explain(w: World) -> list:
    (w.repo / ".gitignore").write_text("*.gen.py\n")
    (w.repo / "x.gen.py").write_text("x = 1\n")
    return [w.invoke("index", w.repo, "--explain", name, "-C", w.repo, "--json").json()
            for name in ("x.gen.py", "util.py")]


def _status(w: World) -> list:
    (w.repo / "util.py").write_text("def add(a, b):\n    return b + a\n")
    (w.repo / "new.py").write_text("x = 1\n")
    return [w.invoke("status", "-C", w.repo, "--json").json()]


def _search(w: World) -> list:
    return [w.invoke("search", "invoice total", "--no-llm", "-C", w.repo, "--json").json(),
            w.invoke("search", "invoice total", "-k", "1", "-C", w.repo, "--json").json()]


def _refs(w: World) -> list:
    return [w.invoke("refs", "add", "-C", w.repo, "--outline", "--json").json()]


def _ask(w: World) -> list:
    return [w.invoke("ask", "how is the invoice total computed?", "-C", w.repo, "--json").json(),
            w.invoke("ask", "where is add?", "--system", "baseline", "-C", w.repo, "--json",
                     input="a log\n").json()]


def _complete(w: World) -> list:
    w.llm.enqueue("return a - b\n")
    shown = w.invoke("complete", "-", "--path", "x.py", "--line", "2", "--col", "5", "-C", w.repo, "--json",
                     input="def sub(a, b):\n    \n")
    assert shown.json()["text"] == "return a - b", shown.stdout
    silent = w.invoke("complete", w.repo / "util.py", "--line", "1", "--col", "1", "-C", w.repo, "--json")
    return [shown.json(), silent.json()]


def _stats(w: World) -> list:
    empty = w.invoke("stats", "--json").json()
    events = EventStore.open_default()
    for kind, length in (("shown", 12), ("accepted", 12), ("shown", 5), ("discarded", 0)):
        events.record(kind, "s-1", "bundled", shown_length=length if kind == "shown" else 0,
                      accepted_length=length if kind == "accepted" else 0)
    return [empty, w.invoke("stats", "--json").json()]


def _fix(w: World) -> list:
    (w.repo / "m.py").write_text(MESSY)
    (w.repo / "left.py").write_text("def g(a,b):\n    return a + undefined_name\n")
    printed = w.invoke("fix", "--no-llm", "m.py", "left.py", "-C", w.repo, "--json").json()
    written = w.invoke("fix", "--no-llm", "--write", "m.py", "-C", w.repo, "--json").json()
    with_model = w.invoke("fix", "left.py", "-C", w.repo, "--json").json()
    return [printed, written, with_model]


def _models(w: World) -> list:
    return [w.invoke("models", "--json").json()]


def _models_check(w: World) -> list:
    return [w.invoke("models", "--check", "--json").json()]


def _config(w: World) -> list:
    plain = w.invoke("config", "-C", w.repo, "--json").json()
    (w.repo / ".codeasst.toml").write_text('[index]\nchunk_chars = 1200\n[store]\nchroma_url = "http://x:1"\n')
    return [plain, w.invoke("config", "-C", w.repo, "--json").json()]


def _trust(w: World) -> list:
    (w.repo / ".codeasst.toml").write_text('[store]\nchroma_url = "http://127.0.0.1:8000"\n')
    return [w.invoke("trust", "-C", w.repo, "--json").json()]


def _trust_revoke(w: World) -> list:
    (w.repo / ".codeasst.toml").write_text("[index]\nchunk_chars = 1200\n")
    w.invoke("trust", "-C", w.repo)
    return [w.invoke("trust", "--revoke", "-C", w.repo, "--json").json(),
            w.invoke("trust", "--revoke", "-C", w.repo, "--json").json()]


def _trust_list(w: World) -> list:
    empty = w.invoke("trust", "--list", "--json").json()
    (w.repo / ".codeasst.toml").write_text("[index]\nchunk_chars = 1200\n")
    (w.repo / "setup.cfg").write_text("[flake8]\n")
    w.invoke("trust", "-C", w.repo)
    w.invoke("trust", "setup.cfg", "-C", w.repo)
    (w.repo / "setup.cfg").write_text("[flake8]\nmax-line-length = 100\n")
    return [empty, w.invoke("trust", "--list", "--json").json()]


def _paths(w: World) -> list:
    return [w.invoke("paths", "--json").json()]


def _serve_info(w: World) -> list:
    from codeasst.wire import discovery

    discovery.announce(w.repo.resolve(), "http://127.0.0.1:8765", "a-token")  # as if serve ran in this process
    return [w.invoke("serve", "--info", "-C", w.repo, "--json").json()]


def _eval_retrieval(w: World) -> list:
    questions = w.repo.parent / "questions.jsonl"
    rows = [{"repo": w.repo.name, "question": "invoice total", "expected": ["billing/invoice.py"], "lang": "en",
             "split": "test"},
            {"repo": w.repo.name, "question": "сложение чисел", "expected": ["util.py"], "lang": "ru", "split": "tune"}]
    questions.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return [w.invoke("eval", "retrieval", questions, "--json").json()]


def _eval_ask(w: World) -> list:
    questions = w.repo.parent / "questions.jsonl"
    rows = [{"repo": w.repo.name, "question": "how is the invoice total computed?", "expected": ["billing/invoice.py"],
             "split": "test"},
            {"repo": "no-such-repo", "question": "what?", "expected": ["x.py"], "split": "tune"}]
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return [w.invoke("eval", "ask", questions, "--json").json()]


def _eval_relations(w: World) -> list:
    data = w.repo.parent / "relations.jsonl"
    rows = [{"repo": w.repo.name, "sentence": "`invoice_total` calls `add`.", "cited": ["billing/invoice.py"],
             "true": False, "kind": "calls", "origin": "swapped"},
            {"repo": w.repo.name, "sentence": "`invoice_total` calls `sum`.", "cited": ["billing/invoice.py"],
             "true": True, "kind": "calls", "origin": "model"}]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return [w.invoke("eval", "relations", data, "--json").json()]


def _eval_fix(w: World) -> list:
    data = w.tmp / "rows.jsonl"
    data.write_text(json.dumps({"task_id": "t/1", "code": "def add(a,b) :\n    return a+b",
                                "feedback": "E231: missing whitespace after ',' in 1 line\n",
                                "test_setup_code": "", "tests": ["assert add(1, 2) == 3"]}) + "\n")
    return [w.invoke("eval", "fix", data, "--systems", "none,raw", "--json").json()]


def _eval_fim(w: World) -> list:
    data = w.tmp / "fim.jsonl"
    data.write_text(json.dumps({"task_id": "t1", "prefix": "x = int(input())\n", "suffix": "",
                                "ground_truth": "print(x + 1)\n", "unit_tests": [{"input": "1\n", "output": "2"}]}) + "\n")
    return [w.invoke("eval", "fim", data, "--split", "all", "--json").json()]


def _eval_unittest(w: World) -> list:
    repo = w.tmp / "stats"
    repo.mkdir()
    (repo / "stats.py").write_text("def double(x):\n    return x * 2\n\n\ndef note(x):\n    \"\"\"No test looks.\"\"\"\n"
                                   "    print(x)\n")
    (repo / "test_stats.py").write_text("from stats import double, note\n\n\ndef test_double():\n"
                                        "    note(1)\n    assert double(2) == 4\n")
    w.llm.enqueue("return x + x\n", "return x * 2\n")  # raw, then complete, on the row kept
    return [w.invoke("eval", "unittest", repo, "--json").json()]


def _eval_fix_modules(w: World) -> list:
    folder = w.tmp / "mods"
    folder.mkdir()
    (folder / "m.py").write_text(MESSY)
    return [w.invoke("eval", "fix-modules", folder, "--systems", "none,pipeline", "--no-llm", "--no-tests",
                   "--json").json()]


CASES: dict[str, Callable] = {
    "index": _index, "index-explain": _index_explain, "status": _status, "search": _search, "refs": _refs, "ask": _ask,
    "complete": _complete, "stats": _stats, "fix": _fix, "models": _models, "models-check": _models_check,
    "config": _config, "trust": _trust, "trust-revoke": _trust_revoke, "trust-list": _trust_list, "paths": _paths,
    "serve-info": _serve_info,
    "eval-retrieval": _eval_retrieval, "eval-ask": _eval_ask, "eval-relations": _eval_relations, "eval-fix": _eval_fix, "eval-fim": _eval_fim,
    "eval-unittest": _eval_unittest, "eval-fix-modules": _eval_fix_modules,
}


def test_every_schema_has_a_case():
    assert sorted(CASES) == schemas.names()


@pytest.mark.parametrize("name", sorted(CASES))
def test_json_output_fits_its_schema(name, invoke, tiny_repo, tmp_path, fake_llm):
    assert invoke("index", tiny_repo).exit_code == 0
    outputs = CASES[name](World(invoke, tiny_repo, tmp_path, fake_llm))
    for output in outputs:
        assert schemas.errors(name, output) == [], json.dumps(output, indent=1)[:3000]


def test_search_and_ask_json_through_the_real_entry_point(tiny_repo):
    """`main()` in its own process, stdout a pipe: the whole of stdout is the JSON document."""
    for args, name in ((["search", "invoice total", "--no-llm"], "search"),
                       (["ask", "how is the invoice total computed?"], "ask")):
        proc = run_process(*args, "-C", tiny_repo, "--json")
        assert proc.returncode == 0, proc.stderr.decode()
        assert schemas.errors(name, json.loads(proc.stdout)) == []


@pytest.mark.slow
def test_index_search_ask_json_with_the_real_models(tiny_repo):
    """The real embedder, Chroma and model, through `python -m codeasst`."""
    for args, name in ((["index", tiny_repo], "index"), (["status", "-C", tiny_repo], "status"),
                       (["search", "invoice total", "-C", tiny_repo], "search"),
                       (["ask", "how is the invoice total computed?", "-C", tiny_repo], "ask"),
                       (["models", "--check"], "models-check")):
        proc = run_process(*args, "--json", fake=False, timeout=600)
        assert proc.returncode == 0, proc.stderr.decode()
        assert schemas.errors(name, json.loads(proc.stdout)) == [], (name, proc.stdout[:2000])
