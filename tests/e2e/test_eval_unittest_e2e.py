"""`codeasst eval unittest` through the CLI with the real bundled model, on the tiny repository
tests/data/unittest/tinystats (six functions, five of them run by its tests)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli import schemas
from tests.e2e.conftest import run_json

REPO = Path(__file__).resolve().parents[1] / "data" / "unittest" / "tinystats"


@pytest.mark.slow
def test_eval_unittest_masks_statements_and_scores_both_systems(tmp_path):
    out = tmp_path / "rows.jsonl"
    report = run_json("eval", "unittest", str(REPO), "--tests", "check_stats.py", "--limit", "3", "--out", str(out),
                      cwd=tmp_path)
    assert schemas.errors("eval-unittest", report) == []
    assert (report["tests_found"], report["tests_passed"]) == (5, 5)
    assert (report["functions"], report["functions_reached"], report["masked"]) == (6, 5, 3)  # spread: no test
    assert report["dropped_unnoticed"] + report["dropped_truth_fails"] + report["scored"] == 3
    assert report["scored"] >= 1  # an eval that scores nothing says nothing
    truth, deleted, raw, raw_own, complete = report["systems"]
    assert truth["system"].startswith("ground truth") and (truth["rows"], truth["passed"]) == (3, 3)
    assert deleted["system"].startswith("deleted") and deleted["rows"] == 3
    assert deleted["passed"] == report["dropped_unnoticed"]
    assert raw["system"].startswith("raw") and complete["system"] == "complete"
    assert raw_own["system"].startswith("raw") and "its own suffix" in raw_own["system"]
    assert raw["rows"] == raw_own["rows"] == complete["rows"] == report["scored"]
    assert complete["shown"] + round(complete["silence"] * complete["rows"]) == complete["rows"]
    assert complete["latency_p50_ms"] > 0 and raw["latency_p50_ms"] > 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    source = (REPO / "stats.py").read_text().split("\n")
    assert len(rows) == 3 and all(r["file"] == "stats.py" and r["truth_passes"] for r in rows)
    for row in rows:
        assert source[row["line"] - 1].strip() == row["statement"]  # the line masked, as it was
        assert row["tests"] and all(t.startswith("check_stats.py::test_") for t in row["tests"])
        assert row["status"] == "scored" or not (row["text"] or row["raw"])  # a dropped row asks no model
    # The model was asked and wrote something, through the raw baseline and through `complete`.
    scored = [r for r in rows if r["status"] == "scored"]
    assert any(r["raw"].strip() for r in scored) and any(r["text"].strip() for r in scored), scored
