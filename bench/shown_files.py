"""The files an answer shows against BM25 over whole files at the same depth (issue 51): for each row of
`codeasst eval ask --out` (one system), whether the files of the answer's verified citations (what the
user is shown as its sources) hold an expected file, and whether BM25's first N files for the question
do, N being the number of files that answer shows; and the lead's lines (the answer's text, with
`ask.model = none` all of it) at p50 and p90.

    CODEASST_MIRRORS=/work/.mirror python bench/shown_files.py ROWS.jsonl [ROWS2.jsonl ...]

BM25 is plain BM25 over the index's files with plain word tokens, as `codeasst eval retrieval` runs it
as its baseline (codeasst.retrieve.bm25, `plain_tokens`), over the same checkout the answer read.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from codeasst.evals.repos import repo_dir
from codeasst.retrieve.bm25 import FileBM25, plain_tokens
from codeasst.services import build_services


def report(path: Path) -> dict:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    found = bm25_found = shown_files = 0
    lead_lines: list[int] = []
    per_repo: dict[str, FileBM25] = {}
    for row in rows:
        question, expected = row["row"]["question"], set(row["row"]["expected"])
        shown = row["cited_files"]
        spec = row["row"]["repo"]
        if spec not in per_repo:
            root = repo_dir(spec, Path(row["row"].get("_base", ".")))
            files = build_services(root, {}).indexer().indexed_files()
            per_repo[spec] = FileBM25.for_files(root, files, tokenize=plain_tokens)
        ranked = [p for p, _ in per_repo[spec].rank(question, max(len(shown), 1))][:len(shown)]
        found += bool(set(shown) & expected)
        bm25_found += bool(set(ranked) & expected)
        shown_files += len(shown)
        lead_lines.append(len(row["answer"].split("\n\nThe excerpts may not answer")[0].splitlines()))
    n = len(rows)
    return {"file": str(path), "rows": n, "shown_holds_expected": round(found / n, 3),
            "bm25_same_depth": round(bm25_found / n, 3), "files_shown_mean": round(shown_files / n, 2),
            "answer_lines_p50": statistics.median(lead_lines),
            "answer_lines_p90": sorted(lead_lines)[int(0.9 * (n - 1))]}


def main() -> int:
    for name in sys.argv[1:]:
        print(json.dumps(report(Path(name))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
