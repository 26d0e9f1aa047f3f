"""Collect the sentences real `ask` answers write that state a relation between two code names
("A calls B", "A is called by B", returns, raises, inherits from), for the relation check's
labelled set (tests/data/ask/relations.jsonl).

Every model sentence counts, shown or left out, so the set is not drawn from what the check
already passed. Each candidate keeps the repository, the question, the sentence, the files its
excerpts came from and what the check said; labels are added by reading the code.

    python bench/collect_relations.py tests/data/ask/facts.jsonl ... --out /tmp/relation-candidates.jsonl
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from codeasst.answer.ask import ask
from codeasst.answer.relations import stated
from codeasst.evals.repos import repo_dir
from codeasst.evals.rows import load_rows
from codeasst.services import build_services

SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*(\[])|\n+")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--split", default="all")
    args = parser.parse_args()
    rows = [r for f in args.files for r in load_rows(f) if args.split in ("all", r.get("split"))]
    with args.out.open("a", encoding="utf-8") as out:
        for number, row in enumerate(rows, start=1):
            root = repo_dir(row["repo"], Path.cwd())
            services = build_services(root, {})
            answer, stream = ask(services, row["question"], system="checked")
            for _ in stream:
                pass
            body = answer.body.split("\n\n", 1)[-1] if answer.body.startswith("In the code:") else answer.body
            shown = [(s, None) for s in SENTENCE.split(body) if s.strip()]
            found = 0
            for sentence, why in shown + list(answer.left_out):
                for rel in stated(sentence):
                    found += 1
                    out.write(json.dumps({
                        "repo": row["repo"], "question": row["question"], "sentence": sentence.strip(),
                        "relation": [rel.kind, rel.subject, rel.object],
                        "excerpts": sorted({e.path for e in answer.excerpts}),
                        "left_out": why}, ensure_ascii=False) + "\n")
                    out.flush()
            print(f"{number}/{len(rows)} {row['repo']}: {found} relation sentences", file=sys.stderr)


if __name__ == "__main__":
    main()
