"""Two runs of the same evals, row by row, timings left out: did a change move any figure?

    python bench/compare_rows.py BEFORE_DIR AFTER_DIR

Each folder holds what `--out` / `--rows-out` wrote (fim_rows.jsonl, retrieval_rows.jsonl,
ask_rows.jsonl) and each eval's `--json` report (fim.json, retrieval.json, ask.json); a missing pair is
said and passed over. Fields that time something (`*_s`, `*_ms`, `seconds`, `latency*`, `timings`)
and the report's notes on what was chosen or skipped are not compared."""

from __future__ import annotations

import json
import sys
from pathlib import Path

EVALS = {"fim": "fim_rows.jsonl", "retrieval": "retrieval_rows.jsonl", "ask": "ask_rows.jsonl"}


def untimed(value):
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items()
                if not (k.endswith(("_s", "_ms")) or "_s_" in k or "latency" in k
                        or k in ("seconds", "timings", "chosen_on", "skipped"))}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


def rows(path: Path) -> list:
    return [untimed(json.loads(line)) for line in path.read_text().splitlines() if line.strip()]


def main(before: Path, after: Path) -> None:
    for name, file in EVALS.items():
        if not (before / file).exists() or not (after / file).exists():
            print(f"{name}: no rows in both folders")
            continue
        old, new = rows(before / file), rows(after / file)
        differ = [i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b]
        print(f"{name}: {len(old)} rows before, {len(new)} after, {len(old) - len(differ)} identical")
        for i in differ[:5]:
            keys = sorted(k for k in set(old[i]) | set(new[i]) if old[i].get(k) != new[i].get(k))
            print(f"  row {i} differs in {', '.join(keys)}")
        if (before / f"{name}.json").exists() and (after / f"{name}.json").exists():
            same = untimed(json.loads((before / f"{name}.json").read_text())) == \
                untimed(json.loads((after / f"{name}.json").read_text()))
            print(f"  report: {'identical' if same else 'differs'}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python bench/compare_rows.py BEFORE_DIR AFTER_DIR")
    main(Path(sys.argv[1]), Path(sys.argv[2]))
