"""`eval fix`: the systems scored on the same rows, with a scripted model for `raw`."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeasst.backends.fake import ScriptedLLM
from codeasst.errors import UsageError
from codeasst.evals.fix import evaluate
from codeasst.services import build_services

DATA = Path(__file__).parents[1] / "data" / "fix" / "rows.jsonl"


def test_each_system_is_scored_on_clean_kept_ast_and_time(tmp_path):
    # `raw` answers: the code unchanged, a clean fix that breaks the test, and no code at all.
    llm = ScriptedLLM([
        "```python\ndef add(a,b) :\n    return a+b\n```",
        "```python\ndef count_big(items, k):\n    return len(items)\n```",
        "Sorry, I cannot fix this.",
    ])
    out = tmp_path / "rows.out.jsonl"
    report = evaluate(build_services(tmp_path, llm=llm), DATA, out=out)
    scores = {s.system: s for s in report.systems}
    assert report.rows == 3 and list(scores) == ["none", "autopep8", "raw", "pipeline"]
    # The floor: every row kept and its AST unchanged by construction, none of them clean.
    assert (scores["none"].clean, scores["none"].kept, scores["none"].ast_unchanged) == (0.0, 1.0, 1.0)
    assert scores["none"].llm_calls == 0 and scores["none"].not_clean == ["t/1", "t/2", "t/3"]
    assert scores["pipeline"].clean == 1.0 and scores["pipeline"].kept == 1.0
    assert scores["pipeline"].ast_unchanged == 1.0 and scores["pipeline"].style_rows == 1
    # autopep8 strips the whitespace inside the string in t/3, which the test depends on.
    assert scores["autopep8"].not_kept == ["t/3"] and scores["autopep8"].not_clean == ["t/2", "t/3"]
    assert scores["raw"].not_clean == ["t/1", "t/3"] and scores["raw"].not_kept == ["t/2"]
    assert len(out.read_text().splitlines()) == 12
    assert scores["raw"].llm_calls == 3 and scores["pipeline"].llm_calls == 0
    assert any("| pipeline | 100.0% | 100.0% |" in line for line in report.lines())
    assert any("| none | 0.0% | 100.0% | 100.0% of 1 |" in line for line in report.lines())


def test_limit_and_system_choice(tmp_path):
    report = evaluate(build_services(tmp_path, llm=ScriptedLLM()), DATA, systems=["autopep8"], limit=1)
    assert report.rows == 1 and [s.system for s in report.systems] == ["autopep8"]
    with pytest.raises(UsageError, match="unknown system"):
        evaluate(build_services(tmp_path), DATA, systems=["gpt"])


def test_a_malformed_data_file_is_a_usage_error(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task_id": "x", "code": "x = 1"}\n')
    with pytest.raises(UsageError, match="bad.jsonl:1: missing feedback"):
        evaluate(build_services(tmp_path), bad, systems=["autopep8"])
