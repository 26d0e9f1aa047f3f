"""Assign every question in questions.jsonl to the tune or the test split, reproducibly.

    python tests/data/retrieval/split.py           # rewrite questions.jsonl with its split fields
    python tests/data/retrieval/split.py --check   # exit 1 if the file is not what this script writes

Rows over the repositories the fusion settings were first chosen on (TUNED_ON) are split stratified
by (repo, lang): within a stratum, rows are ordered by sha256 of SEED and the question, then taken
alternately into tune and test. A stratum with an odd number of rows gives its extra row to tune and
to test in turn (strata in sorted order), so the halves differ by at most one row.

Rows over any other repository go to test: they were written after the settings were chosen, to
measure whether settings chosen on Python carry over to another code base and language.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections import defaultdict
from pathlib import Path

QUESTIONS = Path(__file__).with_name("questions.jsonl")
SEED = "codeasst-issue-9"
TUNED_ON = {"click", "rich", "httpx"}


def assign(rows: list[dict]) -> list[dict]:
    """The rows with their `split` set; the order of rows and of their other fields is kept."""
    out = [{**{k: v for k, v in row.items() if k != "split"}, "split": "test"} for row in rows]
    strata: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for row in out:
        if row["repo"] in TUNED_ON:
            strata[(row["repo"], row.get("lang", "en"))].append(row)
    extra_to_tune = True
    for key in sorted(strata):
        members = sorted(strata[key], key=lambda r: hashlib.sha256(f"{SEED}\n{r['question']}".encode()).hexdigest())
        first, second = ("tune", "test") if extra_to_tune else ("test", "tune")
        for i, row in enumerate(members):
            row["split"] = first if i % 2 == 0 else second
        if len(members) % 2:
            extra_to_tune = not extra_to_tune
    return out


def render(rows: list[dict]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def main(argv: list[str]) -> int:
    text = QUESTIONS.read_text(encoding="utf-8")
    wanted = render(assign([json.loads(line) for line in text.splitlines() if line.strip()]))
    if "--check" in argv:
        if wanted != text:
            print(f"{QUESTIONS}: splits differ from what split.py assigns; run it without --check", file=sys.stderr)
            return 1
        return 0
    QUESTIONS.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
