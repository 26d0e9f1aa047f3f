"""Assign every question in questions.jsonl to the tune or the test split, reproducibly.

    python tests/data/retrieval/split.py           # rewrite questions.jsonl with its split fields
    python tests/data/retrieval/split.py --check   # exit 1 if the file is not what this script writes

Every row over a repository the fusion settings were ever chosen on (TUNED_ON) is tune: the
settings were first chosen on all 76 of those questions (issue 4), so none of them can measure
settings again. (Issue 9 had split them in half and called one half "test"; it was not held out.)

Rows over any other repository are test: they were written after the settings were chosen, and
no setting has been chosen on them. The TypeScript rows (issue 9) measure whether settings chosen
on Python carry over to another code base and language; the typer and markdown_it rows (issue
27) are Python packages no setting has seen.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

QUESTIONS = Path(__file__).with_name("questions.jsonl")
TUNED_ON = {"click", "rich", "httpx"}


def assign(rows: list[dict]) -> list[dict]:
    """The rows with their `split` set; the order of rows and of their other fields is kept."""
    return [{**{k: v for k, v in row.items() if k != "split"}, "split": "tune" if row["repo"] in TUNED_ON else "test"}
            for row in rows]


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
