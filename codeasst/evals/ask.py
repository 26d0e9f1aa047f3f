"""`codeasst eval ask QUESTIONS.jsonl`: how far an answer can be trusted, per answer system.

Rows are those of `codeasst eval retrieval` (repo, question, expected files, lang, split), and
repositories are set up the same way (codeasst.evals.retrieval): questions over codeasst itself
name `self@COMMIT`, a copy without the files that hold their answers. Every system answers every
row in the same run, so the figures compare under the same machine load. Per answer:

- abstained: the product's own mark of a non-answer (no verified citation, or the model says
  the excerpts fall short). A non-answer is never scored as an answer: it is on target for no
  file and correct for no key, and is reported apart, as abstention;
- correct, fact recall, wrong statements (rows with a key, codeasst.evals.facts): of what the
  answer claims (never the "look next at" note), the facts stated and the wrong statements made;
  correct is every fact and no wrong statement, in an answer that is not an abstention;
- lead in site ("where do I add X?" rows, tests/data/ask/where_add.jsonl): the lead's first item (a
  registration site, else the first definition listed) overlaps a labelled registration site; a row
  labelled with none counts where the answer says it found none;
- on target: a verified citation attached to a claim falls in an expected file, the model's own
  citations and those codeasst attached counted apart; a path named in prose does not count;
- grounded identifiers: of the code names the answer uses (backticked names, `a.b` paths,
  `name()` calls), the share found in the repository's files; the rest are listed;
- first token (from the start of retrieval, as the user waits) and total seconds, and the
  prompt's tokens (prompt processing is most of the wait for the first token).

A row whose repository cannot be set up here (an npm package with no registry) is skipped,
and the report says how many were and why.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from codeasst.answer.ask import SYSTEMS, ask
from codeasst.errors import CodeasstError, UsageError
from codeasst.evals.facts import check_row, has_key, score_facts
from codeasst.evals.repos import repo_dir
from codeasst.evals.rows import SPLIT_CHOICES, load_rows
from codeasst.services import Services, build_services

# Settings of `ask` chosen by looking at answers, and the rows they were chosen on: a figure on
# those rows is in-sample for them (the report says so).
CHOSEN_ON = {
    "prompts/ask_grounded.toml": "make demo's question (tests/data/ask/questions.jsonl, tune)",
    "the checked answer (prompts/ask_checked.toml, answer/checking.py)": (
        "the tune split of tests/data/ask/facts.jsonl and make demo's question"),
    "llm.model = auto": "part of the test split of tests/data/retrieval/questions.jsonl (issue 24)",
}


@dataclass
class Scored:
    row: dict
    system: str
    answer: str
    cited: bool
    cited_by_model: bool
    on_target: bool
    on_target_by_model: bool
    on_target_attached: bool
    abstained: bool
    identifiers: int
    ungrounded: list[str]
    first_token_s: float | None
    total_s: float
    prompt_tokens: int | None
    cited_files: list[str] = field(default_factory=list)
    keyed: bool = False  # the row has a key of facts
    answerable: bool = True
    facts: int = 0
    stated: list[int] = field(default_factory=list)
    wrong: list[int] = field(default_factory=list)
    sites: bool = False  # a "where do I add X?" row, its registration sites labelled
    lead_in_site: bool = False  # the lead's first item lies in one (a row with none: the answer says none)

    @property
    def correct(self) -> bool:
        return (self.keyed and self.answerable and not self.abstained and len(self.stated) == self.facts
                and not self.wrong)


def score(row: dict, system: str, answer) -> Scored:
    """One answer as the user saw it, scored on what it claims."""
    verified = [c for c in answer.citations if c.verified]
    expected = set(row["expected"])
    claimed = not answer.abstained
    by_model = {c.path for c in verified if not c.attached}
    attached = {c.path for c in verified if c.attached}
    facts = score_facts(row, answer.body)
    return Scored(
        row=row, system=system, answer=answer.text,
        cited=bool(verified), cited_by_model=bool(by_model),
        on_target=claimed and bool((by_model | attached) & expected),
        on_target_by_model=claimed and bool(by_model & expected),
        on_target_attached=claimed and bool(attached & expected) and not by_model & expected,
        abstained=answer.abstained, identifiers=len(answer.identifiers),
        ungrounded=list(answer.ungrounded), first_token_s=answer.timings.get("first_token_s"),
        total_s=answer.timings.get("total_s", 0.0), prompt_tokens=answer.prompt_tokens,
        cited_files=sorted({c.path for c in verified}),
        keyed=has_key(row), answerable=facts.answerable, facts=facts.facts, stated=facts.stated, wrong=facts.wrong,
        sites="sites" in row, lead_in_site="sites" in row and _lead_in_site(row["sites"], answer),
    )


def _lead_in_site(sites: list[dict], answer) -> bool:
    """Whether the first item of the answer's lead (a registration site, else the first definition listed)
    overlaps a labelled site; where none is labelled, whether the answer says it found none."""
    found = answer.registrations or {}
    if not sites:
        return found.get("found") == 0
    places = [(p["path"], p["start_line"], p["end_line"]) for p in found.get("places", [])]
    places += [(c.path, c.start_line, c.end_line) for c in answer.citations
               if c.attached and c.reason == "codeasst's definition listing"]
    if not places:
        return False
    path, start, end = places[0]
    return any(s["path"] == path and s["start_line"] <= end and start <= s["end_line"] for s in sites)


def summarise(scored: list[Scored]) -> dict:
    def share(flags: list[bool]) -> float:
        return round(sum(flags) / len(flags), 4) if flags else 0.0

    names = sum(s.identifiers for s in scored)
    missing = [name for s in scored for name in s.ungrounded]
    firsts = [s.first_token_s for s in scored if s.first_token_s is not None]
    tokens = [s.prompt_tokens for s in scored if s.prompt_tokens is not None]
    keyed = [s for s in scored if s.keyed and s.answerable]
    sited = [s for s in scored if s.sites]
    unanswerable = [s for s in scored if s.keyed and not s.answerable]
    return {
        "answers": len(scored),
        "keyed": len(keyed),
        "correct": share([s.correct for s in keyed]) if keyed else None,
        "fact_recall": round(statistics.fmean(len(s.stated) / s.facts for s in keyed), 4) if keyed else None,
        "wrong_per_answer": (round(statistics.fmean(len(s.wrong) for s in keyed + unanswerable), 4)
                             if keyed or unanswerable else None),
        "abstained": share([s.abstained for s in scored]),
        "abstained_where_answerable": share([s.abstained for s in keyed]) if keyed else None,
        "unanswerable": len(unanswerable),
        "abstained_where_unanswerable": share([s.abstained for s in unanswerable]) if unanswerable else None,
        "cited": share([s.cited for s in scored]),
        "cited_by_model": share([s.cited_by_model for s in scored]),
        "on_target": share([s.on_target for s in scored]),
        "on_target_by_model": share([s.on_target_by_model for s in scored]),
        "on_target_attached_only": share([s.on_target_attached for s in scored]),
        "identifiers": names,
        "grounded_identifiers": round(1 - len(missing) / names, 4) if names else 1.0,
        "ungrounded": [f"{name} ({n})" if n > 1 else name for name, n in Counter(missing).most_common(15)],
        "first_token_s_p50": round(statistics.median(firsts), 2) if firsts else None,
        "first_token_s_mean": round(statistics.fmean(firsts), 2) if firsts else None,
        "total_s_mean": round(statistics.fmean(s.total_s for s in scored), 2) if scored else None,
        "prompt_tokens_mean": round(statistics.fmean(tokens)) if tokens else None,
        "where_rows": len(sited),
        "lead_in_site": share([s.lead_in_site for s in sited]) if sited else None,
    }


def _blocks(scored: list[Scored], systems: list[str]) -> dict:
    return {system: summarise([s for s in scored if s.system == system]) for system in systems}


def evaluate(paths_: list[Path], *, split: str = "all", limit: int | None = None, per_repo: int | None = None,
             systems: list[str],
             model: str | None = None, out: Path | None = None,
             on_answer: Callable[[int, int, Scored], None] | None = None) -> dict:
    """Every system answers every row of `split` (the first `limit` of each file, the first
    `per_repo` of each repository); the report holds the figures per system for those rows,
    per split and per repository."""
    if split not in SPLIT_CHOICES:
        raise UsageError(f"--split must be one of {', '.join(SPLIT_CHOICES)}, not {split!r}")
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown or not systems:
        raise UsageError(f"--systems: unknown {', '.join(unknown) or '(none given)'}; choose from {', '.join(SYSTEMS)}")
    rows = []
    for path in paths_:
        chosen = [dict(row, _base=str(path.parent)) for row in load_rows(path)
                  if split == "all" or row.get("split", "test") == split][:limit]
        for number, row in enumerate(chosen, start=1):
            check_row(row, f"{path}: row {number}")
        rows += chosen
    if per_repo is not None:
        taken: Counter = Counter()
        rows = [row for row in rows if (taken.update([(row["_base"], row["repo"])])
                                        or taken[(row["_base"], row["repo"])] <= per_repo)]
    if not rows:
        raise UsageError("no question rows" + (f' with "split": "{split}"' if split != "all" else ""))
    services_for: dict[str, Services | str] = {}
    dense_for: dict[str, dict[str, int]] = {}
    scored: list[Scored] = []
    skipped: list[str] = []
    sink = out.open("w", encoding="utf-8") if out else None
    try:
        for number, row in enumerate(rows, start=1):
            key = f"{row['_base']}::{row['repo']}"
            if key not in services_for:
                try:
                    services = build_services(repo_dir(row["repo"], Path(row["_base"])), model=model)
                    # As `ask` brings the index up to date: a repository with more chunks waiting for
                    # vectors than index.search_embed_limit answers from words first (said in the report).
                    indexer = services.indexer()
                    indexer.run(embed_limit=services.settings.index.search_embed_limit)
                    dense_for[row["repo"]] = indexer.dense()
                    services_for[key] = services
                except CodeasstError as exc:
                    services_for[key] = exc.one_line()
            services = services_for[key]
            if isinstance(services, str):
                skipped.append(f"{row['repo']}: {services}")
                continue
            clean = {k: v for k, v in row.items() if k != "_base"}
            for system in systems:
                answer, stream = ask(services, row["question"], system=system, update_index=False)
                for _ in stream:
                    pass
                item = score(clean, system, answer)
                scored.append(item)
                if sink:
                    sink.write(json.dumps({**asdict(item), "citations": [asdict(c) for c in answer.citations],
                                           "left_out": [{"text": t, "why": w} for t, w in answer.left_out]},
                                          ensure_ascii=False) + "\n")
                    sink.flush()
                if on_answer:
                    on_answer(number, len(rows), item)
    finally:
        if sink:
            sink.close()
    report: dict = {"split": split, "systems": _blocks(scored, systems),
                    "skipped": dict(Counter(skipped)), "chosen_on": CHOSEN_ON,
                    "dense": {repo: share for repo, share in dense_for.items() if share["embedded"] < share["total"]}}
    marked = {s.row.get("split", "test") for s in scored}
    if split == "all" and len(marked) > 1:
        report["splits"] = {name: _blocks([s for s in scored if s.row.get("split", "test") == name], systems)
                            for name in ("test", "tune") if name in marked}
    repos = sorted({s.row["repo"] for s in scored})
    if len(repos) > 1:
        report["by_repo"] = {repo: _blocks([s for s in scored if s.row["repo"] == repo], systems) for repo in repos}
    return report


COLUMNS = ("answers", "correct", "fact_recall", "wrong_per_answer", "abstained_where_answerable",
           "abstained_where_unanswerable", "on_target", "on_target_by_model", "on_target_attached_only",
           "cited_by_model", "grounded_identifiers", "first_token_s_p50", "total_s_mean", "prompt_tokens_mean",
           "lead_in_site")
SHARES = frozenset({"correct", "fact_recall", "wrong_per_answer", "abstained_where_answerable",
                    "abstained_where_unanswerable", "cited", "cited_by_model", "on_target", "on_target_by_model",
                    "on_target_attached_only", "grounded_identifiers", "lead_in_site"})


def _table(title: str, blocks: dict) -> list[str]:
    lines = [title, "| system | " + " | ".join(COLUMNS) + " |", "|---" * (len(COLUMNS) + 1) + "|"]
    for system, block in blocks.items():
        cells = [f"{block[c]:.3f}" if isinstance(block[c], float) and c in SHARES
                 else "-" if block[c] is None else str(block[c]) for c in COLUMNS]
        lines.append(f"| {system} | " + " | ".join(cells) + " |")
    for system, block in blocks.items():
        if block["ungrounded"]:
            lines.append(f"{system}: names not found in the repository: {', '.join(block['ungrounded'])}")
    return lines


def report_lines(report: dict) -> list[str]:
    lines = []
    for name, blocks in report.get("splits", {}).items():
        label = "IN-SAMPLE (prompt and settings were tuned on these)" if name == "tune" else "held out"
        lines += [*_table(f"{name} split: {label}", blocks), ""]
    lines += _table(f"{report['split']} rows, all together", report["systems"])
    for repo, blocks in report.get("by_repo", {}).items():
        lines += ["", *_table(f"repository {repo}", blocks)]
    for reason, count in report["skipped"].items():
        lines.append(f"skipped {count} rows: {reason}")
    for repo, share in report.get("dense", {}).items():
        lines.append(f"{repo}: answered before its vectors were done (dense search covered {share['embedded']:,} "
                     f"of {share['total']:,} chunks), as `ask` answers in a repository that big")
    lines += ["", ("correct: every key fact and no wrong statement, over answerable keyed rows; a non-answer "
                   "(abstained) is never correct or on target"), "settings chosen by looking at answers, and on what:"]
    lines += [f"  {setting}: {where}" for setting, where in report["chosen_on"].items()]
    return lines
