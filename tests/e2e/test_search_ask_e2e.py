"""`codeasst search`, `ask` and `eval retrieval` end to end with the real LLM, embedder,
Chroma and ripgrep."""

from __future__ import annotations

import ast
import subprocess

import pytest

from tests.e2e.conftest import CLI, run_json
from tests.e2e.test_index_e2e import REPO, _click_subset

pytestmark = pytest.mark.slow


def test_search_finds_code_by_meaning_by_identifier_and_in_another_language(make_repo):
    root = make_repo(REPO)
    hits = run_json("search", "compute the invoice total with tax", "-k", "3", "-C", str(root))
    assert hits[0]["path"] == "billing/invoice.py"
    assert {"path", "start_line", "end_line", "symbol", "score", "sources"} <= set(hits[0])
    hits = run_json("search", "where is `RegisterRoutes` defined?", "-k", "3", cwd=root / "docs")
    assert hits[0]["path"] == "server/router.go" and "rg" in hits[0]["sources"]
    hits = run_json("search", "где проверяется пароль пользователя при входе?", "-k", "3", cwd=root)
    assert hits[0]["path"] == "auth/login.ts"
    assert any("dense-en" in h["sources"] for h in hits)


def _definition_lines(path, name: str) -> tuple[int, int]:
    node = next(n for n in ast.walk(ast.parse(path.read_text())) if getattr(n, "name", None) == name)
    return node.lineno, node.end_lineno


def test_ask_cites_the_one_function_that_answers(tmp_path):
    # Real code (five files of click), and a question whose answer is one known function.
    root = _click_subset(tmp_path / "click")
    answer = run_json("ask", "Which function wraps help text paragraphs to a given width?", "-C", str(root))
    start, end = _definition_lines(root / "formatting.py", "wrap_text")
    of_it = [c for c in answer["citations"] if c["verified"] and c["path"] == "formatting.py"
             and c["start_line"] <= end and start <= c["end_line"]]
    assert of_it, answer
    assert all(isinstance(c["verified"], bool) and c["reason"] for c in answer["citations"])
    assert {"retrieval_s", "first_token_s", "answer_s"} <= set(answer["timings"])


def test_ask_reads_piped_stdin_even_when_it_is_not_utf8(make_repo):
    root = make_repo(REPO)
    trace = (b"Traceback (most recent call last):\n  File \"billing/invoice.py\", line 11, in total\n"
             b"TypeError: bad qty\n") + b"# a latin-1 line: caf\xe9\n"
    proc = subprocess.run([*CLI, "ask", "where is this raised?", "-C", str(root)], input=trace,
                          capture_output=True, check=False)
    stderr = proc.stderr.decode()
    assert proc.returncode == 0, stderr
    assert "stdin is not UTF-8" in stderr and "Traceback" not in stderr
    sources = proc.stdout.decode().split("Sources")[1]
    assert "billing/invoice.py:" in sources.splitlines()[1]
