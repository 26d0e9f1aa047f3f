"""The project's own formatter, on the lines `fix` changed and nowhere else.

Where a project configures black (`[tool.black]` in pyproject.toml) or ruff's formatter
(`[tool.ruff.format]`, or `[format]` in ruff.toml / .ruff.toml), its layout is the one its
developers expect, so after the fixes the changed lines go through it: `black --line-ranges` or
`ruff format --range`, reading the project's config from its root. The rest of the file is not
touched. The result is verified like any fix (it parses, the AST is unchanged, flake8 reports
nothing new); where the formatter's layout trips the project's flake8 (black's `x[a : b]` is
E203 under flake8's defaults), codeasst's own layout stays.

The formatter runs only if it is installed outside the repository (a repository cannot ship the
program that runs), and never when `fix.formatter = "off"`. Neither executes project code: both
read their settings as data.
"""

from __future__ import annotations

import difflib
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

_TIMEOUT_S = 30.0
_MAX_RANGES = 200


@dataclass(frozen=True)
class Formatter:
    name: str  # "black" or "ruff"
    executable: Path
    root: Path  # where its config lives: it runs from here

    def argv(self, ranges: list[tuple[int, int]], display_name: str) -> list[str]:
        if self.name == "black":
            spans = [f"--line-ranges={start}-{end}" for start, end in ranges]
            return [str(self.executable), "-q", *spans, f"--stdin-filename={display_name}", "-"]
        (start, end), = ranges
        return [str(self.executable), "format", f"--range={start}-{end}", f"--stdin-filename={display_name}", "-"]


def _configured(root: Path) -> str | None:
    """"black" or "ruff" where the project at `root` configures that formatter."""
    for name, table in (("ruff.toml", ("format",)), (".ruff.toml", ("format",)),
                        ("pyproject.toml", ("tool", "black")), ("pyproject.toml", ("tool", "ruff", "format"))):
        try:
            data = tomllib.loads((root / name).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue
        for key in table:
            data = data.get(key) if isinstance(data, dict) else None
        if isinstance(data, dict):
            return "black" if table[-1] == "black" else "ruff"
    return None


def find_formatter(path: Path, repo: Path) -> Formatter | None:
    """The formatter the project of `path` configures, installed outside `repo`, or None."""
    here = path.resolve().parent
    repo = repo.resolve()
    for root in (here, *here.parents):
        if (name := _configured(root)) is not None:
            break
        if root == repo or (root / ".git").exists():
            return None
    else:
        return None
    # codeasst's own environment first (ruff is a development dependency), then PATH.
    local = Path(sys.executable).parent / name
    found = local if local.is_file() else (Path(w) if (w := shutil.which(name)) else None)
    if found is None or found.resolve().is_relative_to(repo):
        return None
    return Formatter(name, found, root)


def changed_ranges(before: str, after: str) -> list[tuple[int, int]]:
    """1-based inclusive line ranges of `after` that differ from `before`."""
    matcher = difflib.SequenceMatcher(None, before.splitlines(), after.splitlines(), autojunk=False)
    ranges: list[tuple[int, int]] = []
    for tag, _, _, j1, j2 in matcher.get_opcodes():
        if tag == "equal" or j2 <= j1:
            continue
        if ranges and j1 + 1 <= ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], j2)
        else:
            ranges.append((j1 + 1, j2))
    return ranges


def format_changed(formatter: Formatter, before: str, after: str, display_name: str) -> str | None:
    """`after` with the lines changed since `before` laid out by the project's formatter; None when
    there is nothing to do or the formatter fails."""
    ranges = changed_ranges(before, after)
    if not ranges or len(ranges) > _MAX_RANGES:
        return None
    # ruff takes one range a run: bottom up, so the line numbers above stay true.
    batches = [ranges] if formatter.name == "black" else [[r] for r in reversed(ranges)]
    text = after
    for batch in batches:
        try:
            proc = subprocess.run(formatter.argv(batch, display_name), input=text.encode("utf-8"),
                                  cwd=formatter.root, capture_output=True, timeout=_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if proc.returncode != 0:
            return None
        text = proc.stdout.decode("utf-8")
    return text if text != after else None
