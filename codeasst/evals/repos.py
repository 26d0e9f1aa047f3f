"""The repository an eval row names (its `repo`), made ready to index: copied or unpacked once
into the cache, as a git repository of its own so the indexer's file selection starts at its tree.

`repo` is one of:
- a directory, relative to the data file;
- `npm:NAME@VERSION[/SUBDIR]`: that published npm package, fetched once with `npm pack`;
- `pypi:NAME==VERSION`: that release's source distribution;
- `github:OWNER/NAME@COMMIT`: that commit's tree, from a local bare mirror (mirrors_dir);
- `self@COMMIT`: codeasst's own repository at that commit, less the answers to questions about it;
- the name of an installed Python package.
"""

from __future__ import annotations

import importlib.util
import io
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from codeasst import paths
from codeasst.errors import CodeasstError, UsageError

# An exact version only: a range would let the code under the questions change between runs.
NPM_SPEC = re.compile(r"npm:(?P<name>(?:@[\w.-]+/)?[\w.-]+)@(?P<version>\d+\.\d+\.\d+[\w.+-]*)"
                      r"(?:/(?P<sub>[\w.-]+(?:/[\w.-]+)*))?")
NPM_TIMEOUT_S = 300
GITHUB_SPEC = re.compile(r"github:(?P<owner>[\w.-]+)/(?P<name>[\w.-]+)@(?P<commit>[0-9a-f]{40})")
SELF_SPEC = re.compile(r"self@(?P<commit>[0-9a-f]{7,40})")
# What holds the answers to questions over codeasst itself: never in the copy it is asked over.
ANSWER_KEYS = ("tests/data/retrieval", "tests/data/ask", "docs/benchmarks.md")
MIRRORS_ENV = "CODEASST_MIRRORS"


def mirrors_dir() -> Path:
    """Where bare git mirrors of GitHub repositories are looked up, as OWNER+NAME/repo (or
    OWNER+NAME.git) under it: the directory CODEASST_MIRRORS names where it is set, else `mirrors`
    in codeasst's data directory (codeasst.paths.data_dir, under CODEASST_HOME where that is set).
    Nothing is cloned from the network: mirrors are put there by hand."""
    value = os.environ.get(MIRRORS_ENV)
    return Path(value) if value is not None else paths.data_dir() / "mirrors"


def _mirror_candidates(github: str) -> list[Path]:
    slug = github.replace("/", "+")
    return [mirrors_dir() / slug / "repo", mirrors_dir() / f"{slug}.git"]


def mirror(github: str) -> Path | None:
    """The bare mirror of GitHub repository OWNER/NAME under mirrors_dir, if there is one."""
    return next((c for c in _mirror_candidates(github) if c.is_dir()), None)


def git_init(path: Path) -> None:
    # A repository of its own, so the indexer's file selection starts at this tree and no parent's rules apply.
    subprocess.run(["git", "init", "-q", str(path)], check=True)


def package_dir(name: str) -> Path | None:
    """The directory of installed Python package `name`, if it is one."""
    try:
        found = importlib.util.find_spec(name)
    except (ImportError, ValueError):  # "a.b" with no package "a", or a name that is no module name
        return None
    if not found or not found.submodule_search_locations:
        return None
    return Path(next(iter(found.submodule_search_locations)))


def npm_source(spec: str) -> Path:
    """`npm:NAME@VERSION[/SUBDIR]`: SUBDIR (else the whole package) of that published package, as a
    git repository in the cache, fetched with `npm pack` on first use. Published packages often ship
    compiled output (`build/`, `dist/`) beside their sources, which would double every hit: SUBDIR
    picks the sources."""
    match = NPM_SPEC.fullmatch(spec)
    if not match or any(part in (".", "..") for part in (match["sub"] or "").split("/")):
        raise UsageError(f"repo {spec!r}: expected npm:NAME@VERSION[/SUBDIR] with an exact version, "
                         "e.g. npm:@tanstack/query-core@5.108.0/src")
    name, version, sub = match["name"], match["version"], match["sub"]
    slug = f"{name.replace('/', '+')}@{version}" + (f"-{sub.replace('/', '+')}" if sub else "")
    dest = paths.cache_dir() / "eval-repos" / "npm" / slug
    if dest.is_dir():  # only ever created complete, by the rename below
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=".fetch-") as tmp:
        work = Path(tmp)
        try:
            subprocess.run(["npm", "pack", f"{name}@{version}", "--ignore-scripts", "--pack-destination", str(work)],
                           cwd=work, capture_output=True, text=True, check=True, timeout=NPM_TIMEOUT_S)
        except FileNotFoundError:
            raise CodeasstError(f"cannot fetch {spec}: npm is not installed") from None
        except subprocess.TimeoutExpired:
            raise CodeasstError(f"cannot fetch {spec}: npm pack gave no answer in {NPM_TIMEOUT_S} s") from None
        except subprocess.CalledProcessError as exc:
            raise CodeasstError(f"cannot fetch {spec}: {_npm_error(exc.stderr)}") from None
        tarballs = list(work.glob("*.tgz"))
        if len(tarballs) != 1:
            raise CodeasstError(f"cannot fetch {spec}: npm pack left {len(tarballs)} tarballs, expected one")
        try:
            with tarfile.open(tarballs[0]) as archive:
                archive.extractall(work / "x", filter="data")  # "data": no links or paths out of the folder
        except tarfile.TarError as exc:
            raise CodeasstError(f"cannot fetch {spec}: the tarball cannot be unpacked ({exc})") from None
        # npm puts everything under package/, but some old tarballs use another single top folder.
        tops = [p for p in (work / "x").iterdir() if p.is_dir()]
        if len(tops) != 1:
            raise CodeasstError(f"cannot fetch {spec}: the tarball does not hold one top folder")
        source = tops[0] / (sub or "")
        if not source.is_dir():
            raise UsageError(f"repo {spec!r}: the package has no {sub}/ folder")
        git_init(source)
        source.rename(dest)
    return dest


def _npm_error(stderr: str) -> str:
    """The line of npm's error output that says what went wrong (not its error code or log path)."""
    lines = [line.removeprefix("npm error").strip() for line in stderr.splitlines() if line.startswith("npm error")]
    useful = [line for line in lines if line and not line.startswith(("code ", "A complete log"))]
    return useful[0] if useful else (stderr.strip().splitlines() or ["npm pack failed"])[-1]


def _archive(git_dir: Path, commit: str, dest: Path, leave_out: tuple[str, ...] = ()) -> Path:
    """The tree of `commit` (no history, nothing of the working copy) as a fresh repository at dest."""
    if dest.is_dir():  # only ever created complete, by the rename below
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=".fetch-") as tmp:
        tree = Path(tmp) / "tree"
        tree.mkdir()
        archive = subprocess.run(["git", "--git-dir", str(git_dir), "archive", "--format=tar", commit],
                                 capture_output=True, check=False)
        if archive.returncode != 0:
            raise CodeasstError(f"cannot check out {commit} from {git_dir}: "
                                f"{archive.stderr.decode(errors='replace').strip()[:200]}")
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tarred:
            tarred.extractall(tree, filter="data")
        for part in leave_out:
            target = tree / part
            shutil.rmtree(target) if target.is_dir() else target.unlink(missing_ok=True)
        git_init(tree)
        tree.rename(dest)
    return dest


def github_source(spec: str) -> Path:
    """`github:OWNER/NAME@COMMIT`: the whole tree at that commit (tests, docs and all, as a user
    clones it), from a local mirror (mirrors_dir)."""
    match = GITHUB_SPEC.fullmatch(spec)
    if not match:
        raise UsageError(f"repo {spec!r}: expected github:OWNER/NAME@COMMIT with a full 40-digit commit")
    github = f"{match['owner']}/{match['name']}"
    git_dir = mirror(github)
    if git_dir is None:
        raise CodeasstError(f"cannot fetch {spec}: no mirror at {_mirror_candidates(github)[0]} "
                            f"(set {MIRRORS_ENV})")
    slug = github.replace("/", "+")
    dest = paths.cache_dir() / "eval-repos" / "github" / f"{slug}@{match['commit'][:12]}"
    return _archive(git_dir, match["commit"], dest)


def self_source(spec: str) -> Path:
    """`self@COMMIT`: codeasst's own repository at that commit, without the files that hold the
    answers to questions about it (ANSWER_KEYS)."""
    match = SELF_SPEC.fullmatch(spec)
    if not match:
        raise UsageError(f"repo {spec!r}: expected self@COMMIT")
    own = Path(__file__).resolve().parents[2]
    if not (own / ".git").exists():
        raise CodeasstError(f"cannot check out {spec}: codeasst is not running from its git repository")
    dest = paths.cache_dir() / "eval-repos" / "self" / match["commit"][:12]
    return _archive(own / ".git", match["commit"], dest, ANSWER_KEYS)


def pypi_source(spec: str) -> Path:
    """`pypi:NAME==VERSION`: that release's source distribution (its tests, docs and examples with
    it), unpacked without running anything of it, as a fresh repository."""
    from codeasst.evals.packages import fetch

    requirement = spec.removeprefix("pypi:")
    dest = paths.cache_dir() / "eval-repos" / "pypi" / requirement.replace("==", "-")
    if not dest.is_dir():
        unpacked = fetch(requirement)
        with tempfile.TemporaryDirectory(dir=paths.cache_dir(), prefix=".copy-") as tmp:
            tree = Path(tmp) / "tree"
            shutil.copytree(unpacked, tree)
            git_init(tree)
            dest.parent.mkdir(parents=True, exist_ok=True)
            tree.rename(dest)
    return dest


def repo_dir(spec: str, base: Path) -> Path:
    """The repository a row names: a directory, a pinned npm package, a PyPI sdist, a GitHub
    commit, codeasst itself at a commit, or an installed Python package (copied into the cache)."""
    if spec.startswith("npm:"):
        return npm_source(spec)
    if spec.startswith("pypi:"):
        return pypi_source(spec)
    if spec.startswith("github:"):
        return github_source(spec)
    if spec.startswith("self@"):
        return self_source(spec)
    candidate = (base / spec).resolve()
    if candidate.is_dir():
        return candidate
    source = package_dir(spec)
    if source is None:
        raise UsageError(f"repo {spec!r} is neither a directory, an npm:NAME@VERSION nor an installed package")
    dest = paths.cache_dir() / "eval-repos" / spec
    if not (dest / ".git").exists():
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(source, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        git_init(dest)
    return dest
