"""`codeasst eval fix` through the CLI, on the first rows of the shared development set."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import run_json

pytestmark = pytest.mark.slow

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "lintfix_dev.jsonl"


@pytest.mark.skipif(not DATA.is_file(), reason="the shared development data is not beside the checkout")
def test_eval_fix_scores_the_pipeline_beside_autopep8(tmp_path):
    report = run_json("eval", "fix", str(DATA), "--limit", "3", "--systems", "autopep8,pipeline", cwd=tmp_path)
    scores = {s["system"]: s for s in report["systems"]}
    assert set(scores) == {"autopep8", "pipeline"} and report["rows"] == 3
    assert scores["pipeline"]["clean"] == 1.0 and scores["pipeline"]["kept"] == 1.0
