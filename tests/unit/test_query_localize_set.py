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


def _commit(repo, files: dict[str, str | None], when: int) -> str:
    import os
    import subprocess

    for path, text in files.items():
        target = repo / path
        if text is None:
            target.unlink()
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
    env = {**os.environ, "GIT_AUTHOR_DATE": f"{when} +0000", "GIT_COMMITTER_DATE": f"{when} +0000",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "c"], cwd=repo, check=True, env=env)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True,
                          check=True).stdout.strip()


def test_reports_run_on_their_checkout_switched_in_place(tmp_path, monkeypatch):
    import subprocess

    from codeasst.evals.localize import Checkouts, checkout_rows

    upstream = tmp_path / "work"
    upstream.mkdir()
    subprocess.run(["git", "init", "-q", str(upstream)], check=True)
    old = _commit(upstream, {"shop/cart.py": "def total():\n    return 1\n", "tests/test_cart.py": "def test(): pass\n",
                             "shop/legacy.py": "OLD = 1\n"}, 1_600_000_000)
    new = _commit(upstream, {"shop/cart.py": "def total():\n    return 2\n", "shop/legacy.py": None,
                             "shop/tax.py": "RATE = 0.2\n"}, 1_700_000_000)
    subprocess.run(["git", "clone", "-q", "--bare", str(upstream), str(tmp_path / "mirrors" / "acme+shop.git")],
                   check=True)
    monkeypatch.setenv("CODEASST_MIRRORS", str(tmp_path / "mirrors"))
    spans = {"shop/cart.py": ["total"]}
    rows = [{"repo": "shop", "question": "later", "expected": ["cart.py"], "github": "acme/shop", "base_commit": new,
             "expected_spans": spans},
            {"repo": "shop", "question": "earlier", "expected": ["cart.py"], "github": "acme/shop",
             "base_commit": old, "expected_spans": spans},
            {"repo": "shop", "question": "gone", "expected": ["tax.py"], "github": "acme/shop", "base_commit": old,
             "expected_spans": {"shop/tax.py": ["RATE"]}},
            {"repo": "other", "question": "q", "expected": ["a.py"], "github": "acme/other", "base_commit": old}]
    kept, dropped = checkout_rows(rows)
    assert [r["question"] for r in kept] == ["earlier", "later"]  # by commit date: each switch changes little
    assert kept[0]["repo"] == "checkout:acme/shop" and kept[0]["expected"] == ["shop/cart.py"]
    assert dropped == {"acme/shop: expected file not at base_commit": 1, "acme/other: no mirror here (CODEASST_MIRRORS)": 1}

    trees = Checkouts()
    tree = trees.tree(kept[0]["repo"])
    assert trees.switch(kept[0]) is True
    assert (tree / "shop/legacy.py").is_file() and "return 1" in (tree / "shop/cart.py").read_text()
    assert (tree / "tests/test_cart.py").is_file()  # the whole tree, tests and all
    untouched = (tree / "tests/test_cart.py").stat().st_mtime_ns
    assert trees.switch(kept[0]) is False
    assert trees.switch(kept[1]) is True
    assert not (tree / "shop/legacy.py").exists() and "return 2" in (tree / "shop/cart.py").read_text()
    assert (tree / "tests/test_cart.py").stat().st_mtime_ns == untouched  # unchanged files are not rewritten
