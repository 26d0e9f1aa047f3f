"""One-shot latency of `codeasst search` over a real checkout, short questions and long reports,
against search as it was before issue 28 (file roles off, the LLM's HyDE and keywords on), in
the same run. One CLI process per query, as a user runs it; the index is brought up to date first.

    python bench/search_checkout.py --spec pypi:werkzeug==3.1.3 [--reports FILE --reports-repo sympy/sympy]
                                    [--queries 10]

`--spec` is a row's `repo` in tests/data/retrieval/checkouts.jsonl (the tree is made as the eval
makes it); the short questions are that repository's rows. `--reports` takes bug reports from the
localization set whose `github` is `--reports-repo`, asked over the tree given by `--tree`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from search import model_speed, pct  # bench/search.py, beside this script

CLI = [sys.executable, "-m", "codeasst.cli"]
QUESTIONS = Path(__file__).resolve().parent.parent / "tests" / "data" / "retrieval" / "checkouts.jsonl"
BEFORE = {"CODEASST_RETRIEVAL__ROLES": "false", "CODEASST_RETRIEVAL__HYDE": "true",
          "CODEASST_RETRIEVAL__LLM_KEYWORDS": "true"}


def wall(query: str, repo: Path, env: dict[str, str] | None = None) -> float:
    started = time.perf_counter()
    subprocess.run([*CLI, "search", query], cwd=repo, check=True, capture_output=True, stdin=subprocess.DEVNULL,
                   env={**os.environ, **(env or {})})
    return time.perf_counter() - started


def line(label: str, values: list[float]) -> str:
    return (f"{label}: p50 {statistics.median(values):.2f} s, p90 {pct(values, 0.9):.2f} s, "
            f"max {max(values):.2f} s over {len(values)} queries")


def main() -> None:
    from codeasst.evals.repos import repo_dir

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", help="a checkouts.jsonl repo spec: its tree and its questions")
    parser.add_argument("--tree", type=Path, help="the tree for --reports (a checkout made by eval --checkouts)")
    parser.add_argument("--reports", type=Path, help="the localization set (JSONL)")
    parser.add_argument("--reports-repo", help="its rows whose github is this")
    parser.add_argument("--queries", type=int, default=10)
    args = parser.parse_args()

    out = []
    if args.spec:
        repo = repo_dir(args.spec, QUESTIONS.parent)
        rows = [json.loads(r) for r in QUESTIONS.read_text().splitlines() if r.strip()]
        questions = [r["question"] for r in rows if r["repo"] == args.spec][: args.queries]
        subprocess.run([*CLI, "index", "."], cwd=repo, check=True, capture_output=True)
        wall("warm up the page cache", repo)
        out += [f"# {args.spec}: {len(questions)} short questions",
                line("search (roles, no LLM for English)", [wall(q, repo) for q in questions]),
                line("search before issue 28 (no roles, HyDE and LLM keywords)",
                     [wall(q, repo, BEFORE) for q in questions])]
        out.append(f"model now: {model_speed(repo, 'bundled')}")
    if args.reports:
        rows = [json.loads(r) for r in args.reports.read_text().splitlines() if r.strip()]
        reports = [r["question"] for r in rows if r.get("github") == args.reports_repo][: args.queries]
        subprocess.run([*CLI, "index", "."], cwd=args.tree, check=True, capture_output=True)
        wall("warm up the page cache", args.tree)
        out += [f"# {args.reports_repo} reports over {args.tree}: {len(reports)} reports",
                line("search, a report (roles)", [wall(q, args.tree) for q in reports]),
                line("search before issue 28, a report", [wall(q, args.tree, BEFORE) for q in reports])]
    print("\n".join(out))


if __name__ == "__main__":
    main()
