"""The packages `eval fix-modules` fixes: read from a TOML set, fetched from PyPI once into the cache.

Each release is fetched as its sdist (`pip download --no-deps --no-binary :all:`), because the
sdist carries the package's flake8 config and tests, and unpacked into
cache_dir()/eval-packages/NAME-VERSION; a later run reads it from there, offline.
"""

from __future__ import annotations

import configparser
import re
import subprocess
import sys
import tarfile
import tempfile
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from codeasst import paths
from codeasst.errors import CodeasstError, UsageError

PIP_TIMEOUT_S = 300
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


def _pip_error(stderr: str) -> str:
    """pip's own reason, without its warnings about other indexes."""
    errors = [line.removeprefix("ERROR:").strip() for line in stderr.splitlines() if line.startswith("ERROR:")]
    return errors[-1] if errors else (stderr.strip().splitlines() or ["pip download failed"])[-1]


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
    """The unpacked sdist of NAME==VERSION in the cache, downloaded with pip on first use."""
    match = REQUIREMENT.fullmatch(requirement)
    if not match:
        raise UsageError(f"{requirement!r} is not NAME==VERSION")
    dest = paths.cache_dir() / "eval-packages" / f"{match['name'].lower().replace('_', '-')}-{match['version']}"
    if dest.is_dir():  # only ever created complete, by the rename below
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=".fetch-") as tmp:
        download = Path(tmp) / "download"
        argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "--disable-pip-version-check",
                "--retries", "1", "--timeout", "30", "--dest", str(download), requirement]
        try:
            subprocess.run(argv, capture_output=True, text=True, check=True, timeout=PIP_TIMEOUT_S,
                           stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise CodeasstError(f"cannot fetch {requirement}: pip download gave no answer in {PIP_TIMEOUT_S} s") \
                from None
        except subprocess.CalledProcessError as exc:
            raise CodeasstError(f"cannot fetch {requirement}: {_pip_error(exc.stderr)}",
                                hint="it needs PyPI once; later runs read the cache") from None
        archives = list(download.iterdir())
        if len(archives) != 1:
            raise CodeasstError(f"cannot fetch {requirement}: pip download left {len(archives)} files, expected one")
        _unpack(archives[0], Path(tmp) / "unpacked").rename(dest)
    return dest


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
