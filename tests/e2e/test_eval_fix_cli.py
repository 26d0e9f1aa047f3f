"""`codeasst eval fix` through the CLI, on five rows of the development set kept in the repository
(tests/data/fix/lintfix_dev_sample.jsonl: mbpp/1, 6, 520, 523 and 530 of lintfix_dev.jsonl, chosen
for their codes: tabs and trailing whitespace, E211/E275, E741, E501/E712 and F401)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import run_cli, run_json

DATA = Path(__file__).resolve().parents[1] / "data" / "fix" / "lintfix_dev_sample.jsonl"


@pytest.mark.slow  # the pipeline system loads the bundled model before it starts timing
def test_eval_fix_scores_the_pipeline_beside_its_baselines(tmp_path):
    out = tmp_path / "rows.out.jsonl"
    report = run_json("eval", "fix", str(DATA), "--systems", "none,autopep8,pipeline", "--out", str(out),
                      cwd=tmp_path)
    scores = {s["system"]: s for s in report["systems"]}
    assert list(scores) == ["none", "autopep8", "pipeline"] and report["rows"] == 5
    none, autopep8, pipeline = scores["none"], scores["autopep8"], scores["pipeline"]
    # The floor: code left as it is keeps its behaviour and its AST, and is never clean on these rows.
    assert none["clean"] == 0.0 and none["kept"] == 1.0 and none["ast_unchanged"] == 1.0
    assert none["clean"] < autopep8["clean"] < pipeline["clean"] == 1.0
    assert pipeline["kept"] == 1.0 and pipeline["ast_unchanged"] == 1.0
    assert sorted(autopep8["not_clean"]) == ["mbpp/520", "mbpp/523", "mbpp/530"]  # E741, E501 and F401 remain
    assert len(out.read_text().splitlines()) == 15  # one line per row and system


def test_eval_fix_text_report_shows_the_floor(tmp_path):
    proc = run_cli("eval", "fix", str(DATA), "--systems", "none,autopep8", "--limit", "2", cwd=tmp_path)
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("2 rows from ") and lines[1].startswith("splits: unmarked 2 (unmarked rows:")
    assert lines[2].startswith("kept checks: ")  # how the fixed code ran: sandboxed, or why not
    assert lines[3].startswith("| system | clean | kept |")
    assert lines[5].startswith("| none | 0.0% | 100.0% | 100.0% of 2 |")
    assert lines[6].startswith("| autopep8 | 100.0% | 100.0% | 100.0% of 2 |")
