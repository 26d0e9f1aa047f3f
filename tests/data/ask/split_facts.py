"""Assign tune/test splits to the key-facts rows, by a rule fixed before any answer was read:
within each repository, rows in the order of sha256("codeasst-issue-26" + question), taken
alternately into tune and test. Run: python tests/data/ask/split_facts.py IN.jsonl... > facts.jsonl"""

import hashlib
import json
import sys
from pathlib import Path

SEED = "codeasst-issue-26"

rows = [json.loads(line) for path in sys.argv[1:] for line in Path(path).read_text(encoding="utf-8").splitlines()
        if line.strip()]
by_repo: dict[str, list[dict]] = {}
for row in rows:
    by_repo.setdefault(row["repo"], []).append(row)
for repo_rows in by_repo.values():
    ordered = sorted(repo_rows, key=lambda r: hashlib.sha256(f"{SEED}\n{r['question']}".encode()).hexdigest())
    for i, row in enumerate(ordered):
        row["split"] = "tune" if i % 2 == 0 else "test"
for row in rows:
    print(json.dumps(row, ensure_ascii=False))
