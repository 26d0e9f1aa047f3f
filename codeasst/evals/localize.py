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
import os
import shutil
import subprocess
from collections import Counter
from pathlib import Path

from codeasst import paths
from codeasst.errors import CodeasstError, UsageError
from codeasst.evals.repos import MIRRORS_ENV, git_init, mirror, package_dir

SEED = "codeasst-issue-14"


def repo_copy(name: str) -> Path:
    """The package's source without tests, as a git repository in the cache (made once)."""
    source = package_dir(name)
    if source is None:
        raise UsageError(f"package {name!r} is not installed")
    dest = paths.cache_dir() / "eval-repos" / f"localize-{name}"
    if not (dest / ".git").exists():
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(source, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "tests"))
        git_init(dest)
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


def _git(mirror: Path, *args: str, tree: Path | None = None, index: Path | None = None) -> subprocess.CompletedProcess:
    command = ["git", "-c", "core.bare=false", "--git-dir", str(mirror)]
    if tree is not None:
        command += ["--work-tree", str(tree)]
    env = {**os.environ, "GIT_INDEX_FILE": str(index)} if index else None
    return subprocess.run([*command, *args], capture_output=True, text=True, env=env, check=False)


def checkout_rows(rows: list[dict], repos: list[str] | None = None) -> tuple[list[dict], dict[str, int]]:
    """The rows that can run on their repository checked out at `base_commit` (tests, docs and
    all), ordered by repository and commit date so that each switch changes little; and how many
    were dropped for which reason. A row's `expected` becomes the repository-relative files of its
    `expected_spans`."""
    dropped: Counter[str] = Counter()
    kept = []
    for row in rows:
        github, commit = row.get("github"), row.get("base_commit")
        if repos and row["repo"] not in repos:
            dropped["package not chosen (--repos)"] += 1
            continue
        if not github or not commit:
            dropped["no github repository and base_commit"] += 1
            continue
        git_dir = mirror(github)
        if git_dir is None:
            dropped[f"{github}: no mirror here ({MIRRORS_ENV})"] += 1
            continue
        expected = sorted(row.get("expected_spans") or {}) or [f"{row['repo']}/{p}" for p in row["expected"]]
        if any(_git(git_dir, "cat-file", "-e", f"{commit}:{path}").returncode for path in expected):
            dropped[f"{github}: expected file not at base_commit"] += 1
            continue
        when = _git(git_dir, "show", "-s", "--format=%ct", commit).stdout.strip()
        kept.append({**row, "repo": f"checkout:{github}", "expected": expected, "_when": int(when or 0)})
    kept.sort(key=lambda r: (r["repo"], r["_when"]))
    return [{k: v for k, v in r.items() if k != "_when"} for r in kept], dict(dropped)


class Checkouts:
    """One working tree per repository in the cache, switched from commit to commit in place: only
    the files that differ are rewritten, so the index update after a switch re-chunks those alone
    (and re-embeds only the texts it never embedded)."""

    def __init__(self) -> None:
        self.base = paths.cache_dir() / "eval-repos" / "checkout"
        self.missing = 0  # files of the last switch whose content the mirror lacks (left out)

    def tree(self, spec: str) -> Path:
        github = spec.removeprefix("checkout:")
        tree = self.base / github.replace("/", "+") / "tree"
        tree.mkdir(parents=True, exist_ok=True)
        if not (tree / ".git").exists():
            git_init(tree)
        return tree

    def switch(self, row: dict) -> bool:
        """Check out the row's base_commit; False when it is already there."""
        github, commit = row["github"], row["base_commit"]
        tree = self.tree(row["repo"])
        state = tree.parent / "at"
        current = state.read_text().strip() if state.is_file() else None
        if current == commit:
            return False
        git_dir = mirror(github)
        if git_dir is None:
            raise CodeasstError(f"cannot check out {github}: no mirror here ({MIRRORS_ENV})")
        state.unlink(missing_ok=True)  # a switch cut short leaves no claim of where the tree is
        if current is None:  # from nothing: whatever an interrupted run left is not a checkout
            for child in tree.iterdir():
                if child.name != ".git":
                    shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
        self.missing = _materialize(git_dir, tree, current, commit)
        state.write_text(commit)
        return True


def _materialize(mirror: Path, tree: Path, old: str | None, new: str) -> int:
    """Write the files that differ between commits `old` (None: an empty tree) and `new` into
    `tree`, delete those gone. A mirror may lack the content of its largest files (data files, which
    the indexer skips by size anyway): those are left out, and their count returned."""
    if old:
        listing = _git(mirror, "diff", "--raw", "-z", "--no-renames", "--no-abbrev", old, new).stdout.split("\0")
        wanted, gone = [], []
        for meta, path in zip(listing[0::2], listing[1::2], strict=False):
            if not meta.startswith(":"):
                continue
            _, mode, _, sha, status = meta[1:].split(" ")
            (gone if status == "D" else wanted).append((mode, sha, path))
            if status != "D" and mode != "100644" and mode != "100755":
                gone.append((mode, sha, path))  # a link or submodule now: no file of ours
    else:
        entries = _git(mirror, "ls-tree", "-r", "-z", new).stdout.split("\0")
        wanted, gone = [], []
        for entry in filter(None, entries):
            meta, path = entry.split("\t", 1)
            mode, _, sha = meta.split(" ")
            wanted.append((mode, sha, path))
    for _, _, path in gone:
        target = tree / path
        if target.is_file() or target.is_symlink():
            target.unlink()
    files = [(sha, path) for mode, sha, path in wanted if mode in ("100644", "100755")]
    missing = 0
    batch = subprocess.run(["git", "--git-dir", str(mirror), "cat-file", "--batch"],
                           input="".join(f"{sha}\n" for sha, _ in files).encode(), capture_output=True, check=False)
    out, at = batch.stdout, 0
    for _, path in files:
        end = out.index(b"\n", at)
        header = out[at:end].split()
        at = end + 1
        if len(header) < 3 or header[1] != b"blob":
            missing += 1
            continue
        size = int(header[2])
        target = tree / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(out[at : at + size])
        at += size + 1
    return missing
