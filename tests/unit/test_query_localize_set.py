"""The bug-report set's rows: splits assigned reproducibly, unusable rows dropped and counted."""

from __future__ import annotations

from codeasst.evals.localize import assign_splits, usable_rows


def test_splits_alternate_within_each_package_and_are_reproducible():
    rows = [{"repo": r, "question": f"q{i}", "expected": ["core.py"], "source": f"{r}-{i}"}
            for r, n in (("click", 5), ("rich", 4)) for i in range(n)]
    first, again = assign_splits(rows), assign_splits(list(reversed(rows)))
    split_of = {r["source"]: r["split"] for r in first}
    assert split_of == {r["source"]: r["split"] for r in again}
    for repo, tune in (("click", 3), ("rich", 2)):
        assert sum(split_of[r["source"]] == "tune" for r in rows if r["repo"] == repo) == tune


def test_rows_that_cannot_be_scored_here_are_dropped_and_counted():
    rows = [{"repo": "click", "question": "q", "expected": ["core.py"]},
            {"repo": "click", "question": "q", "expected": ["gone_since.py"]},
            {"repo": "no_such_package_xyz", "question": "q", "expected": ["a.py"]},
            {"repo": "rich", "question": "q", "expected": ["console.py"]}]
    kept, dropped = usable_rows(rows, ["click", "no_such_package_xyz"])
    assert kept == rows[:1]
    assert dropped == {"click: expected file not in the installed version": 1, "no_such_package_xyz not installed": 1,
                       "package not chosen (--repos)": 1}
