"""`codeasst eval retrieval QUESTIONS.jsonl`: precision, recall, F1 and recall@k of
each retrieval stage (each retriever alone, fused, reranked), at the file level.

Each row's question goes through search as a user runs it (codeasst.tasks.search.find), on the
repository the row names (codeasst.evals.repos), and each stage's ranking is scored alike
(codeasst.evals.scoring). Rows are read by codeasst.evals.rows: `split` is `tune` (rows settings
may be chosen on: their figures are in-sample) or `test` (rows kept out of every such choice).
Each split is reported apart, and all together.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from codeasst.errors import UsageError
from codeasst.evals.repos import repo_dir
from codeasst.evals.rows import SPLIT_CHOICES, jsonl_rows, load_rows
from codeasst.evals.scoring import (
    BASELINE,
    NO_CHUNK_BM25,
    NO_FILE_BM25,
    RECALL_AT,
    ROLES_OFF,
    Scored,
    score,
    stages_of,
    summarise,
)
from codeasst.services import Services, build_services
from codeasst.tasks.search import find

# The names other modules import from here; the row, repository and scoring helpers live in the
# modules imported above.
__all__ = [
    "SPLIT_CHOICES", "Scored", "evaluate", "jsonl_rows", "load_rows", "repo_dir", "report_lines", "score",
    "stages_of", "summarise",
]


def evaluate(path: Path | None, *, split: str = "all", limit: int | None = None, flags: dict | None = None,
             model: str | None = None, on_row: Callable[[int, int, dict], None] | None = None,
             localize: Path | None = None, repos: list[str] | None = None, checkouts: bool = False,
             rows_out: Path | None = None, embedding_rules: bool = False, lexical_only: bool = False) -> dict:
    """Score every row of `split` (the first `limit` of them). The report's top level holds the
    figures for those rows; with `split="all"` on a file that marks splits, `splits` holds each apart.
    `localize`: also the localization set (codeasst.evals.localize), under "localize"; `repos`
    limits it to those packages; `checkouts` runs each report on its repository checked out at
    its base_commit, tests and docs included, rather than on the installed package. `rows_out`: each
    scored row is appended there as it is scored (JSONL, `Scored`'s fields), so that a long run cut
    short still leaves what it measured (`scored_rows` reads it back for `summarise`). `embedding_rules`:
    every chunk embedded, and each candidate rule of which chunks get vectors scored as a stage of
    its own (codeasst.evals.embedding_rules), with the chunks it embeds under "embedding_rules".
    `lexical_only`: nothing embedded, as search answers in a big repository before `codeasst index`
    or `serve` has embedded anything (its dense rankings are then empty)."""
    if embedding_rules:
        from codeasst.evals.embedding_rules import EMBED_ALL

        flags = {**(flags or {}), **EMBED_ALL}
    if split not in SPLIT_CHOICES:
        raise UsageError(f"--split must be one of {', '.join(SPLIT_CHOICES)}, not {split!r}")
    if path is None and localize is None:
        raise UsageError("give a question file, --localize FILE, or both")
    report: dict = {}
    if path is not None:
        rows = [row for row in load_rows(path) if split == "all" or row.get("split") == split][:limit]
        if not rows:
            raise UsageError(f"{path}: no question rows" + (f' with "split": "{split}"' if split != "all" else ""))
        report = _report(rows, split, lambda spec: repo_dir(spec, path.parent), flags, model, on_row, rows_out=rows_out,
                         rules=embedding_rules, lexical_only=lexical_only)
    if localize is not None:
        from codeasst.evals.localize import Checkouts, assign_splits, checkout_rows, repo_copy, usable_rows

        every = [row for row in assign_splits(load_rows(localize)) if split == "all" or row["split"] == split]
        kept, dropped = checkout_rows(every, repos) if checkouts else usable_rows(every, repos)
        rows = kept[:limit]
        if not rows:
            raise UsageError(f"{localize}: no scorable rows ({dropped or 'none in this split'})")
        if checkouts:
            trees = Checkouts()
            block = _report(rows, split, trees.tree, flags, model, on_row, switch=trees.switch, rows_out=rows_out,
                            rules=embedding_rules, lexical_only=lexical_only)
        else:
            block = _report(rows, split, repo_copy, flags, model, on_row, rows_out=rows_out, rules=embedding_rules,
                            lexical_only=lexical_only)
        block["dropped"] = dropped
        block["trees"] = "checkouts at each report's base_commit" if checkouts else "installed packages, no tests"
        report = {**report, "localize": block} if report else {"localize": block}
    return report


def _report(rows: list[dict], split: str, repo_for: Callable[[str], Path], flags: dict | None, model: str | None,
            on_row: Callable[[int, int, dict], None] | None, switch: Callable[[dict], bool] | None = None,
            rows_out: Path | None = None, rules: bool = False, lexical_only: bool = False) -> dict:
    """`switch(row)` puts the row's repository at the row's commit, True when that changed the tree:
    the index is then brought up to date before the row is asked."""
    from codeasst.evals import embedding_rules
    from codeasst.retrieve.bm25 import FileBM25, plain_tokens

    services_for: dict[str, Services] = {}
    baseline_for: dict[str, FileBM25] = {}
    lexical_for: dict[str, dict[str, set[str]]] = {}
    embedded_for: dict[str, dict[str, dict[str, int]]] = {}
    scored: list[Scored] = []
    for number, row in enumerate(rows, start=1):
        moved = switch(row) if switch else False
        if row["repo"] not in services_for or moved:
            if row["repo"] not in services_for:
                services_for[row["repo"]] = build_services(repo_for(row["repo"]), flags, model=model)
            services = services_for[row["repo"]]
            indexer = services.indexer()
            indexer.run(embed_limit=0 if lexical_only else None)
            baseline_for[row["repo"]] = FileBM25.for_files(services.repo.root, indexer.indexed_files(),
                                                           tokenize=plain_tokens)
            if rules:
                entries = indexer._entries()
                lexical_for[row["repo"]] = embedding_rules.lexical_paths(entries)
                embedded_for[row["repo"]] = embedding_rules.embedded_counts(entries, lexical_for[row["repo"]])
        services = services_for[row["repo"]]
        started = time.perf_counter()
        result = find(services, row["question"], update_index=False)  # indexed above, once per repo
        seconds = time.perf_counter() - started
        item = score(row, result, services.settings.retrieval, seconds, lexical_for.get(row["repo"]))
        # The baseline ranks files, not chunks: it is shown as its top k files.
        item.ranked[BASELINE] = [p for p, _ in baseline_for[row["repo"]].rank(row["question"], 50)]
        item.shown[BASELINE] = item.ranked[BASELINE][: services.settings.retrieval.k]
        scored.append(item)
        if rows_out is not None:
            with rows_out.open("a", encoding="utf-8") as out:
                out.write(json.dumps(asdict(item)) + "\n")
        if on_row:
            on_row(number, len(rows), {"question": row["question"], "top": item.ranked["fused"][:3],
                                       "expected": row["expected"]})
    report = {"split": split, "shown": "files shown: top k hits, per-file cap, score cutoff, alike for every stage",
              **summarise(scored)}
    if rules:
        report["embedding_rules"] = embedded_for  # repository -> rule stage -> chunks, embedded
    if lexical_only:
        report["lexical_only"] = True
    marked = {row["split"] for row in rows if "split" in row}
    if split == "all" and marked:
        # Rows with no split mark count only towards "all".
        report["splits"] = {name: summarise([s for s in scored if s.row.get("split") == name])
                            for name in ("test", "tune") if name in marked}
    return report


def _title(name: str, block: dict) -> str:
    if name == "tune":
        return (f"tune split, {block['rows']} questions: IN-SAMPLE (the settings are chosen on these rows, "
                "so these figures flatter them)")
    if name == "test":
        return f"test split, {block['rows']} questions: held out, as long as no setting is chosen on them"
    if block["in_sample_rows"]:
        return (f"all {block['rows']} questions, of which {block['in_sample_rows']} in-sample (tune split): "
                "partly in-sample")
    return f"all {block['rows']} questions"


def _block_lines(title: str, block: dict) -> list[str]:
    columns = ["precision", "recall", "f1", *(f"recall@{k}" for k in RECALL_AT)]
    lines = [title, "| stage | rows | " + " | ".join(columns) + " |", "|---" * (len(columns) + 2) + "|"]
    for name, scores in block["stages"].items():
        lines.append(f"| {name} | {scores['rows']} | " + " | ".join(f"{scores[c]:.3f}" for c in columns) + " |")
    for lang, stages in block["by_language"].items():
        f1 = ", ".join(f"{name} {s['f1']:.3f}" for name, s in stages.items())
        lines.append(f"F1 for {lang} questions: {f1}")
    for key, label in (("by_repo", "repository"), ("by_answer_role", "role of the answer"), ("by_intent", "intent")):
        groups = block.get(key, {})
        if len(groups) > 1 or (groups and key != "by_repo"):
            compared = [s for s in ("fused", NO_FILE_BM25, NO_CHUNK_BM25, ROLES_OFF, BASELINE) if s in block["stages"]]
            lines.append(f"by {label}: recall@1 / recall@5 of " + ", ".join(compared))
            for group, entry in groups.items():
                figures = [f"{s} {entry['stages'][s]['recall@1']:.3f} / {entry['stages'][s]['recall@5']:.3f}"
                           for s in compared if s in entry["stages"]]
                lines.append(f"  {group} ({entry['rows']}): " + "; ".join(figures))
    with_defs = {name: sc for name, sc in block["stages"].items()
                 if sc.get("definition_rows") and name in ("fused", ROLES_OFF, "dense", "bm25")}
    if with_defs:
        rows = next(iter(with_defs.values()))["definition_rows"]
        lines.append(f"a definition the answer needs in the first 1 / 5 chunks ({rows} rows that name one): "
                     + "; ".join(f"{name} {sc['definition@1']:.3f} / {sc['definition@5']:.3f}"
                                 for name, sc in with_defs.items()))
    for name, versus in block["fused_against"].items():
        if versus["rows"] < block["rows"]:
            lines.append(f"{name} ran on {versus['rows']} of {block['rows']} questions; on those, fused F1 "
                         f"{versus['fused']['f1']:.3f} against {versus['alone']['f1']:.3f}, recall@5 "
                         f"{versus['fused']['recall@5']:.3f} against {versus['alone']['recall@5']:.3f}")
    lines.append(f"fused beats every single retriever on F1 and recall@5, each on the rows where it ran: "
                 f"{'yes' if block['fused_beats_every_single_retriever'] else 'NO'}")
    if "fused_above_baseline_at_every_k" in block:
        lines.append(f"fused recall above the {BASELINE} at every k: "
                     f"{'yes' if block['fused_above_baseline_at_every_k'] else 'NO'}")
    return lines


def report_lines(report: dict) -> list[str]:
    lines = []
    if "stages" in report:
        lines += _set_lines(report)
    if "localize" in report:
        block = report["localize"]
        dropped = ", ".join(f"{n} ({why})" for why, n in block["dropped"].items()) or "none"
        lines += ["", f"LOCALIZATION SET (bug reports; file the fix edited); rows dropped: {dropped}",
                  *_set_lines(block)]
    return lines


def _set_lines(report: dict) -> list[str]:
    lines = [f"precision/recall/F1 over the {report['shown']}; mean retrieval {report['mean_retrieval_s']:.2f} s"
             + ("; LEXICAL ONLY: nothing embedded, dense search found nothing" if report.get("lexical_only") else "")]
    for repo, rules in report.get("embedding_rules", {}).items():
        lines.append(f"chunks embedded in {repo}: " + "; ".join(f"{name.removeprefix('fused, ')} {n['embedded']:,} "
                                                                 f"of {n['chunks']:,}" for name, n in rules.items()))
    for name, block in report.get("splits", {}).items():
        lines += ["", *_block_lines(_title(name, block), block)]
    lines += ["", *_block_lines(_title(report["split"], report), report)]
    return lines
