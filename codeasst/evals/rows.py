"""The rows of an eval's data file (JSONL), read and checked, and the splits they may mark.

A question row: {"repo": "click", "question": "...", "expected": ["core.py"], "lang": "en", "split": "test"}.
`split` is `tune` (rows settings may be chosen on: their figures are in-sample), `test` (rows kept
out of every such choice) or `fresh`, `fresh2`, ... (held out as `test` is, each written later, after the
misses of the sets before it had been read: a set nobody has seen, for a figure those can no longer give).
"""

from __future__ import annotations

import json
from pathlib import Path

from codeasst.errors import UsageError

SPLITS = ("tune", "test", "fresh", "fresh2", "fresh3", "fresh4", "fresh5", "fresh6", "fresh7")
SPLIT_CHOICES = ("all", *SPLITS)


def jsonl_rows(path: Path, keys: tuple[str, ...], kind: str) -> list[tuple[int, dict]]:
    """(line number, row) of a JSONL data file whose rows each have `keys`; a missing file or a row
    that is not one is a usage error naming the line."""
    if not path.is_file():
        raise UsageError(f"no such file: {path}")
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            _ = [row[key] for key in keys]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise UsageError(f"{path}:{number}: not a {kind} row ({exc})") from None
        rows.append((number, row))
    return rows


def load_rows(path: Path) -> list[dict]:
    """The question rows of `path`, each with a split of SPLITS where it marks one."""
    rows = jsonl_rows(path, ("repo", "question", "expected"), "question")
    for number, row in rows:
        if row.get("split", "test") not in SPLITS:
            raise UsageError(f"{path}:{number}: split must be one of {', '.join(SPLITS)}, not {row['split']!r}")
    return [row for _, row in rows]
