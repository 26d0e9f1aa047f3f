"""The packages `eval fix-modules` fixes: read from a TOML set, fetched from PyPI once into the cache.

Each release is fetched as its sdist, because the sdist carries the package's flake8 config and
tests: found through the package index's JSON API, checked against the index's sha256, and
unpacked (no links, nothing outside the folder) into cache_dir()/eval-packages/NAME-VERSION
without running anything of it; a later run reads it from there, offline.
"""

from __future__ import annotations

import configparser
import hashlib
import json
import os
import re
import tarfile
import tempfile
import tomllib
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from codeasst import paths
from codeasst.errors import CodeasstError, UsageError

FETCH_TIMEOUT_S = 60
INDEX_URL = "https://pypi.org/simple"  # PIP_INDEX_URL overrides it, as for pip
_SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"
FLAKE8_LINE_LENGTH = 79
# An exact release only: a range would let the code under the figures change between runs.
REQUIREMENT = re.compile(r"(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>\d[\w.+!-]*)")
_KEYS = {"name", "version", "path", "files", "deps", "tests", "src", "why"}


@dataclass(frozen=True)
class PackageSpec:
    name: str
    files: tuple[str, ...]  # relative to the package's top folder
    version: str | None = None  # a release on PyPI; None for a package on disk
    path: Path | None = None  # the package on disk
    deps: tuple[str, ...] = ()  # NAME==VERSION each, fetched the same way
    tests: tuple[str, ...] = ()  # pytest arguments, relative to the top folder
    src: str | None = None  # where the importable code lives in the top folder; default `src` if there, else the top
    why: str = ""

    @property
    def requirement(self) -> str:
        return f"{self.name}=={self.version}"

    @property
    def label(self) -> str:
        return f"{self.name} {self.version}" if self.version else f"{self.name} ({self.path})"

    @property
    def slug(self) -> str:
        return f"{self.name}-{self.version or 'local'}"


def _strings(value: object, where: str, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise UsageError(f"{where}: {key} must be a list of strings")
    return tuple(value)


def _relative(file: str, where: str) -> str:
    pure = PurePosixPath(file)
    if pure.is_absolute() or ".." in pure.parts:
        raise UsageError(f"{where}: {file!r} must be a path inside the package")
    return pure.as_posix()


def _entry(entry: dict, base: Path, where: str) -> PackageSpec:
    unknown = sorted(set(entry) - _KEYS)
    if unknown:
        raise UsageError(f"{where}: unknown key {unknown[0]!r}; expected {', '.join(sorted(_KEYS))}")
    name = entry.get("name")
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise UsageError(f"{where}: name must be a package name")
    if ("version" in entry) == ("path" in entry):
        raise UsageError(f"{where} ({name}): give either version (from PyPI) or path (on disk)")
    version = entry.get("version")
    if version is not None and not REQUIREMENT.fullmatch(f"{name}=={version}"):
        raise UsageError(f"{where} ({name}): version must be one exact release, e.g. 2.19.1")
    folder = (base / entry["path"]).resolve() if "path" in entry else None
    if folder is not None and not folder.is_dir():
        raise UsageError(f"{where} ({name}): no directory {folder}")
    files = tuple(_relative(f, where) for f in _strings(entry.get("files"), where, "files"))
    deps = _strings(entry.get("deps", []), where, "deps") if entry.get("deps") else ()
    bad = [d for d in deps if not REQUIREMENT.fullmatch(d)]
    if bad:
        raise UsageError(f"{where} ({name}): dependency {bad[0]!r} is not NAME==VERSION")
    tests = _strings(entry.get("tests", []), where, "tests") if entry.get("tests") else ()
    src = entry.get("src")
    return PackageSpec(name, files, version, folder, deps, tests, _relative(src, where) if src else None,
                       str(entry.get("why", "")))


SPLITS = {
    "tune": "tune: fix was developed on these files, so every figure is in-sample",
    "test": "test: held out, nothing was chosen on these files",
}


def split_of(path: Path) -> str:
    """What a set's top-level `split` says of it, for the report's header: tune (the fix was
    developed on it) or test (held out); a set or directory that marks none says so."""
    if path.is_dir():
        return "unmarked: a directory of files"
    try:
        split = tomllib.loads(path.read_text(encoding="utf-8")).get("split")
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        split = None  # load_set says what is wrong with the file
    if split is not None and split not in SPLITS:
        raise UsageError(f"{path}: split must be one of {', '.join(SPLITS)}, not {split!r}")
    return SPLITS.get(split, "unmarked: the set does not say whether anything was chosen on it")


def load_set(path: Path) -> list[PackageSpec]:
    """The packages of a TOML set, or one package made of every .py file of a directory."""
    if path.is_dir():
        files = sorted(p.relative_to(path).as_posix() for p in path.rglob("*.py")
                       if not any(part.startswith(".") or part == "__pycache__" for part in p.relative_to(path).parts))
        if not files:
            raise UsageError(f"{path}: no .py files")
        return [PackageSpec(path.resolve().name, tuple(files), path=path.resolve())]
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: not TOML: {exc}") from None
    entries = data.get("package")
    if not isinstance(entries, list) or not entries or not all(isinstance(e, dict) for e in entries):
        raise UsageError(f"{path}: expected [[package]] tables")
    specs = [_entry(entry, path.parent, f"{path}: package {n}") for n, entry in enumerate(entries, 1)]
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise UsageError(f"{path}: package {next(n for n in names if names.count(n) > 1)!r} is listed twice")
    return specs


def _unpack(archive: Path, into: Path) -> Path:
    """The single top folder of an sdist, unpacked under `into`."""
    try:
        if archive.suffix == ".zip":
            with zipfile.ZipFile(archive) as zipped:
                zipped.extractall(into)  # zipfile drops absolute and ".." parts of member names
        else:
            with tarfile.open(archive) as tarred:
                tarred.extractall(into, filter="data")  # "data": no links or paths out of the folder
    except (tarfile.TarError, zipfile.BadZipFile, OSError) as exc:
        raise CodeasstError(f"cannot unpack {archive.name}: {exc}") from None
    tops = [p for p in into.iterdir() if p.is_dir()]
    if len(tops) != 1:
        raise CodeasstError(f"cannot unpack {archive.name}: it does not hold one top folder")
    return tops[0]


def fetch(requirement: str) -> Path:
    """The unpacked sdist of NAME==VERSION in the cache, downloaded from the package index on first use.

    Found through the index's JSON API (PEP 691) and checked against its sha256, never through
    `pip download`: for an sdist pip prepares the package's metadata, which runs its setup.py."""
    match = REQUIREMENT.fullmatch(requirement)
    if not match:
        raise UsageError(f"{requirement!r} is not NAME==VERSION")
    name, version = match["name"], match["version"]
    dest = paths.cache_dir() / "eval-packages" / f"{name.lower().replace('_', '-')}-{version}"
    if dest.is_dir():  # only ever created complete, by the rename below
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    found = _sdist(name, version)
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=".fetch-") as tmp:
        archive = Path(tmp) / found["filename"]
        data = _get(found["url"], requirement)
        if hashlib.sha256(data).hexdigest() != found["hashes"].get("sha256"):
            raise CodeasstError(f"cannot fetch {requirement}: {found['filename']} does not match the index's sha256")
        archive.write_bytes(data)
        _unpack(archive, Path(tmp) / "unpacked").rename(dest)
    return dest


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()  # PEP 503


def _sdist(name: str, version: str) -> dict:
    """The index's entry for the release's sdist: filename, url and hashes."""
    index = os.environ.get("PIP_INDEX_URL", INDEX_URL).rstrip("/")
    listing = _get(f"{index}/{_normal(name)}/", f"{name}=={version}", accept=_SIMPLE_JSON)
    try:
        files = json.loads(listing)["files"]
    except (ValueError, KeyError, TypeError):
        raise CodeasstError(f"cannot fetch {name}=={version}: {index} gave no JSON file list") from None
    for entry in files:
        filename = entry.get("filename", "")
        stem = filename.removesuffix(".tar.gz").removesuffix(".zip")
        if stem == filename or entry.get("yanked"):
            continue
        project, _, release = stem.rpartition("-")
        if _normal(project) == _normal(name) and release == version and entry.get("url") and entry.get("hashes"):
            return entry
    raise CodeasstError(f"cannot fetch {name}=={version}: the index has no sdist of that release")


def _get(url: str, requirement: str, accept: str | None = None) -> bytes:
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        with urllib.request.urlopen(request, timeout=FETCH_TIMEOUT_S) as response:
            return response.read()
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise CodeasstError(f"cannot fetch {requirement}: {reason}",
                            hint="it needs the package index once; later runs read the cache") from None


def import_root(top: Path, src: str | None = None) -> Path:
    """The folder to put on sys.path for a package's top folder: `src` if given or present, else the top."""
    if src:
        return top / src
    return top / "src" if (top / "src").is_dir() else top


def line_length(config: Path | None) -> int:
    """max-line-length from a flake8 config file, else flake8's default."""
    if config is None:
        return FLAKE8_LINE_LENGTH
    parser = configparser.RawConfigParser()
    try:
        parser.read(config, encoding="utf-8")
        value = parser.get("flake8", "max-line-length", fallback=None) or \
            parser.get("flake8", "max_line_length", fallback=None)
        return int(value) if value else FLAKE8_LINE_LENGTH
    except (configparser.Error, ValueError, UnicodeDecodeError):
        return FLAKE8_LINE_LENGTH  # flake8 itself will say what is wrong with it
