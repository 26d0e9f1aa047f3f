"""The localization set for `codeasst eval retrieval --localize FILE`: real bug reports
(SWE-bench Lite issues), each with the file(s) its fix edited, over installed packages.

- Each package is copied once into the cache (`eval-repos/localize-NAME`) without its
  `tests/` folders: no fix in the set edits a test, and indexing a package's tests too would
  double the embedding time (about 20 chunks/s on 2 CPU cores). The copy is indexed once
  and reused by later runs.
- Rows whose package is not installed, or whose expected file no longer exists in the
  installed version, are dropped and counted.
- The file marks no splits, so they are assigned here, reproducibly: within each package
  the rows are ordered by the sha256 of `SEED` and the instance id and taken alternately
  into tune and test.
"""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
import subprocess
from collections import Counter
from pathlib import Path

from codeasst import paths
from codeasst.errors import UsageError

SEED = "codeasst-issue-14"


def package_dir(name: str) -> Path | None:
    try:
        found = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if not found or not found.submodule_search_locations:
        return None
    return Path(next(iter(found.submodule_search_locations)))


def repo_copy(name: str) -> Path:
    """The package's source without tests, as a git repository in the cache (made once)."""
    source = package_dir(name)
    if source is None:
        raise UsageError(f"package {name!r} is not installed")
    dest = paths.cache_dir() / "eval-repos" / f"localize-{name}"
    if not (dest / ".git").exists():
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(source, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "tests"))
        # A repository of its own, so the indexer's file selection starts at this tree.
        subprocess.run(["git", "init", "-q", str(dest)], check=True)
    return dest


def assign_splits(rows: list[dict]) -> list[dict]:
    """Each row with "split": tune or test, alternately within its package in sha256 order."""
    out = []
    by_repo: dict[str, list[dict]] = {}
    for row in rows:
        by_repo.setdefault(row["repo"], []).append(row)
    for repo_rows in by_repo.values():
        ordered = sorted(repo_rows, key=lambda r: hashlib.sha256(f"{SEED}\n{r.get('source', r['question'])}"
                                                                 .encode()).hexdigest())
        out += [{**row, "split": "tune" if i % 2 == 0 else "test"} for i, row in enumerate(ordered)]
    return out


def usable_rows(rows: list[dict], repos: list[str] | None = None) -> tuple[list[dict], dict[str, int]]:
    """The rows that can be scored here, and how many were dropped for which reason."""
    dropped: Counter[str] = Counter()
    kept = []
    for row in rows:
        if repos and row["repo"] not in repos:
            dropped["package not chosen (--repos)"] += 1
            continue
        source = package_dir(row["repo"])
        if source is None:
            dropped[f"{row['repo']} not installed"] += 1
        elif not all((source / p).is_file() for p in row["expected"]):
            dropped[f"{row['repo']}: expected file not in the installed version"] += 1
        else:
            kept.append(row)
    return kept, dict(dropped)
