"""`codeasst eval relations SET.jsonl`: how well the relation check of `ask` tells the relations
the code has from those it does not.

Each row is a sentence stating one relation between two code names ("`A` calls `B`"), labelled
true or false by reading the code (tests/data/ask/relations.jsonl), with the repository it is
about and the files it cites. The sentence goes through the very check `ask` holds each model
sentence to (codeasst.answer.relations.RelationCheck.why_wrong), over the repository's index and
code graph, brought up to date first (words and graph only: no vectors are needed).

Reported: the share of false sentences left out (target at least 0.9) and of true ones left out
(at most 0.1), per relation kind and per origin, and each miss with the check's reason.
"""

from __future__ import annotations

from collections import defaultdict
from contextlib import closing
from pathlib import Path

from codeasst.answer.relations import RelationCheck, stated
from codeasst.evals.repos import repo_dir
from codeasst.evals.rows import jsonl_rows
from codeasst.index.graphdb import read_graph
from codeasst.services import build_services


def load(path: Path) -> list[dict]:
    return [row for _, row in jsonl_rows(path, ("repo", "sentence", "true"), "relation")]


def evaluate(path: Path) -> dict:
    rows = load(path)
    by_repo: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_repo[row["repo"]].append(row)
    results = []
    for repo, repo_rows in by_repo.items():
        services = build_services(repo_dir(repo, path.parent), {})
        indexer = services.indexer()
        indexer.run(embed_limit=0)
        with closing(read_graph(indexer.index_dir)) as code_graph:
            check = RelationCheck(code_graph, services.repo.root)
            for row in repo_rows:
                why = check.why_wrong(row["sentence"], row.get("cited", []))
                results.append({**row, "left_out": why is not None, "why_left_out": why,
                                "read": bool(stated(row["sentence"]))})
    return summarise(results)


def _rates(items: list[dict]) -> dict:
    false = [r for r in items if not r["true"]]
    true = [r for r in items if r["true"]]
    return {"rows": len(items), "false": len(false), "true": len(true),
            "false_left_out": round(sum(r["left_out"] for r in false) / len(false), 3) if false else None,
            "true_left_out": round(sum(r["left_out"] for r in true) / len(true), 3) if true else None}


def summarise(results: list[dict]) -> dict:
    kinds: dict[str, list[dict]] = defaultdict(list)
    origins: dict[str, list[dict]] = defaultdict(list)
    for r in results:
        kinds[r.get("kind", "?")].append(r)
        origins[r.get("origin", "?")].append(r)
    return {"all": _rates(results),
            "unread": sum(not r["read"] for r in results),  # sentences the check finds no relation in
            "by_kind": {k: _rates(v) for k, v in sorted(kinds.items())},
            "by_origin": {k: _rates(v) for k, v in sorted(origins.items())},
            "misses": [{"sentence": r["sentence"], "true": r["true"], "left_out": r["left_out"],
                        "why": r["why_left_out"]} for r in results if r["left_out"] == r["true"]]}


def report_lines(report: dict) -> list[str]:
    a = report["all"]
    lines = [(f"{a['rows']} sentences ({a['false']} false, {a['true']} true); the check found no relation in "
              f"{report['unread']}"),
             (f"false left out: {a['false_left_out']} (target >= 0.9); true left out: {a['true_left_out']} "
              "(target <= 0.1)"),
             "", "| group | rows | false left out | true left out |", "| --- | --- | --- | --- |"]
    for title, groups in (("kind", report["by_kind"]), ("origin", report["by_origin"])):
        for name, g in groups.items():
            lines.append(f"| {title} {name} | {g['rows']} | {g['false_left_out']} | {g['true_left_out']} |")
    if report["misses"]:
        lines += ["", "Misses:"]
        lines += [f"- {'true' if m['true'] else 'false'}, {'left out' if m['left_out'] else 'kept'}: "
                  f"{m['sentence']}" + (f" ({m['why']})" if m["why"] else "") for m in report["misses"]]
    return lines
