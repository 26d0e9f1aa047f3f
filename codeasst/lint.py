"""Runs flake8, the only module that does. Code goes in on stdin, diagnostics come back.

Text is always sent on stdin with `--stdin-display-name`, so that candidates that
exist only in memory are linted exactly like the file on disk: flake8 runs with
its working directory at the project root (the directory of the nearest
setup.cfg, tox.ini or .flake8 holding a [flake8] section), where it finds the
project's own configuration, and the display name is the path relative to that
root, so `per-file-ignores` and `exclude` patterns match as they would for
`flake8 path/to/file.py`.
"""

from __future__ import annotations

import configparser
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from codeasst.errors import CodeasstError

_LIMITS: dict[tuple, int | None] = {}
_E501_LIMIT = re.compile(r"\(\d+ > (\d+) characters\)")
CONFIG_FILES = ("setup.cfg", "tox.ini", ".flake8")
# A tab cannot occur in a path flake8 prints nor in a code, so the split below is unambiguous.
_FORMAT = "%(path)s\t%(row)d\t%(col)d\t%(code)s\t%(text)s"


def default_command() -> tuple[str, ...]:
    """flake8 from the interpreter running codeasst, so the one pyproject pins is used.
    `-P` keeps the working directory (the project root) off sys.path: a root that is itself
    a package folder (flask/ holds json/ and logging.py) would shadow the standard library."""
    return (sys.executable, "-P", "-m", "flake8")


class LinterError(CodeasstError):
    """flake8 is missing, crashed, timed out or printed something we cannot read."""

    exit_code = 4  # like a model failing: an outside tool codeasst depends on broke


class UntrustedLinterConfig(CodeasstError):
    """The project's flake8 config would run code from the repository, and the user has not trusted it."""

    exit_code = 2


@dataclass(frozen=True, order=True)
class Diagnostic:
    line: int
    col: int
    code: str
    message: str  # without the code, e.g. "line too long (88 > 79 characters)"

    def feedback(self, first_line: int = 1) -> str:
        """One line in the CodeLinterEval style, numbered from `first_line` as line 1."""
        return f"{self.code}: {self.message} in {self.line - first_line + 1} line"

    def to_json(self) -> dict:
        return asdict(self)


def find_config(path: Path) -> Path | None:
    """The nearest flake8 config file above `path`, searched as flake8 searches."""
    start = path if path.is_dir() else path.parent
    for folder in (start.resolve(), *start.resolve().parents):
        for name in CONFIG_FILES:
            candidate = folder / name
            if candidate.is_file() and _sections(candidate) & {"flake8", LOCAL_PLUGINS}:
                return candidate
    return None


LOCAL_PLUGINS = "flake8:local-plugins"


def _sections(path: Path) -> set[str]:
    parser = configparser.RawConfigParser()
    try:
        parser.read(path, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError, OSError):
        return set()  # flake8 would choke on it too; then its own error message is the better one
    return set(parser.sections())


def _refuse_untrusted_plugins(config: Path) -> None:
    """flake8 imports [flake8:local-plugins] from the repository: running it would run the repo's code."""
    if LOCAL_PLUGINS not in _sections(config):
        return
    from codeasst import trust

    if not trust.is_trusted(config, config.read_bytes()):
        raise UntrustedLinterConfig(
            f"{config} loads flake8 plugins from the repository ([{LOCAL_PLUGINS}]), which would run its code",
            hint=f"review it, then run `codeasst trust {config}`; or set fix.linter in your own config")


def reported_limit(diagnostics: Sequence[Diagnostic]) -> int | None:
    """The max-line-length flake8 states in its E501 messages, if it reported one."""
    for diag in diagnostics:
        if diag.code == "E501" and (match := _E501_LIMIT.search(diag.message)):
            return int(match.group(1))
    return None


@dataclass(frozen=True)
class Linter:
    """flake8 bound to one file's name and project, so a candidate text lints like that file."""

    cwd: Path
    display_name: str
    command: tuple[str, ...] = ()
    timeout_s: float = 60.0
    isolated: bool = False  # ignore every config file: the default rules, as benchmarks score

    @classmethod
    def for_path(cls, path: Path, fallback_root: Path, command: Sequence[str] = (),
                 timeout_s: float = 60.0) -> Linter:
        config = find_config(path)
        if config is not None and not command:
            _refuse_untrusted_plugins(config)
        root = config.parent if config else fallback_root
        absolute = path.resolve()
        try:
            name = str(absolute.relative_to(root.resolve()))
        except ValueError:
            name = str(absolute)
        return cls(root, name, tuple(command), timeout_s)

    def argv(self, *extra: str) -> list[str]:
        argv = [*(self.command or default_command()), f"--format={_FORMAT}", "--no-show-source"]
        if self.isolated:
            argv.append("--isolated")
        return [*argv, *extra]

    def check(self, text: str, encoding: str = "utf-8", *, honour_noqa: bool = True) -> list[Diagnostic]:
        """Diagnostics for `text` as if it were the file, sorted by position; with `honour_noqa`
        False, also those its `# noqa` comments silence."""
        data = text.encode(encoding, errors="surrogateescape")
        extra = () if honour_noqa else ("--disable-noqa",)
        return sorted(self._run(self.argv(*extra, f"--stdin-display-name={self.display_name}", "-"), data))

    def line_limit(self) -> int | None:
        """The project's max-line-length, as flake8 reports it on a probe line (None: E501 is off)."""
        if (key := (self.cwd, self.display_name, self.command, self.isolated)) not in _LIMITS:
            probe = "x = " + repr("a " * 500) + "\n"
            _LIMITS[key] = reported_limit(self.check(probe))
        return _LIMITS[key]

    def _run(self, argv: list[str], stdin: bytes) -> list[Diagnostic]:
        shown = " ".join(self.command or ("flake8",))
        try:
            proc = subprocess.run(argv, input=stdin, cwd=self.cwd, capture_output=True,
                                  timeout=self.timeout_s, check=False)
        except FileNotFoundError:
            raise LinterError(f"linter not found: {argv[0]}", hint="set fix.linter or install flake8") from None
        except subprocess.TimeoutExpired:
            raise LinterError(f"{shown} took longer than {self.timeout_s:.0f} s") from None
        stdout = proc.stdout.decode("utf-8", errors="replace")
        stderr = proc.stderr.decode("utf-8", errors="replace").strip()
        if proc.returncode not in (0, 1):
            last = stderr.splitlines()[-1] if stderr else f"exit status {proc.returncode}"
            raise LinterError(f"{shown} failed: {last}")
        found = []
        for line in stdout.splitlines():
            parts = line.split("\t", 4)
            if len(parts) != 5 or not parts[1].isdigit() or not parts[2].isdigit():
                raise LinterError(f"{shown} printed a line codeasst cannot read: {line[:120]!r}",
                                  hint="does the project's flake8 config set `format` or `quiet`?")
            _, row, col, code, message = parts
            found.append(Diagnostic(int(row), int(col), code, message))
        if proc.returncode == 1 and not found:
            last = stderr.splitlines()[-1] if stderr else "no diagnostics printed"
            raise LinterError(f"{shown} failed: {last}")
        return found
