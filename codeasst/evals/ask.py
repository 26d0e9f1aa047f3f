"""`codeasst eval ask QUESTIONS.jsonl`: how far an answer can be trusted, per answer system.

Rows are those of `codeasst eval retrieval` (repo, question, expected files, lang, split), and
repositories are set up the same way (codeasst.evals.retrieval). Every system answers every
row in the same run, so the figures compare under the same machine load. Per answer:

- cited: at least one verified citation (model-written or attached by codeasst); "cited by
  the model" counts the model's own only;
- on target: a verified citation, or a path the answer names, falls in an expected file;
- grounded identifiers: of the code names the answer uses (backticked names, `a.b` paths,
  `name()` calls), the share found in the repository's files; the rest are listed;
- first token (from the start of retrieval, as the user waits) and total seconds, and the
  prompt's tokens (prompt processing is most of the wait for the first token).

A row whose repository cannot be set up here (an npm package with no registry) is skipped,
and the report says how many were and why.
"""

from __future__ import annotations

import json
import re
import statistics
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from codeasst.errors import CodeasstError, UsageError
from codeasst.evals.retrieval import SPLIT_CHOICES, load_rows, repo_dir
from codeasst.services import Services, build_services
from codeasst.tasks.ask import CITATION, SYSTEMS, ask

# A path named in prose: a/b.py or b.py (with no line number, so not a citation).
NAMED_PATH = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w-]+\.[A-Za-z0-9]{1,5})(?![\w/])")


@dataclass
class Scored:
    row: dict
    system: str
    answer: str
    cited: bool
    cited_by_model: bool
    on_target: bool
    identifiers: int
    ungrounded: list[str]
    first_token_s: float | None
    total_s: float
    prompt_tokens: int | None
    cited_files: list[str] = field(default_factory=list)


def named_paths(text: str, root: Path) -> set[str]:
    """Files of the repository the answer names, as written or by a unique suffix."""
    named = {m.group(1).removeprefix("./") for m in CITATION.finditer(text)}
    named |= {m.group(1).removeprefix("./") for m in NAMED_PATH.finditer(text)}
    return {name for name in named if (root / name).is_file()}


def score(row: dict, system: str, answer, root: Path) -> Scored:
    verified = [c for c in answer.citations if c.verified]
    expected = set(row["expected"])
    files = {c.path for c in verified} | named_paths(answer.text, root)
    return Scored(
        row=row, system=system, answer=answer.text,
        cited=bool(verified), cited_by_model=any(not c.attached for c in verified),
        on_target=bool(files & expected), identifiers=len(answer.identifiers),
        ungrounded=list(answer.ungrounded), first_token_s=answer.timings.get("first_token_s"),
        total_s=answer.timings.get("total_s", 0.0), prompt_tokens=answer.prompt_tokens,
        cited_files=sorted({c.path for c in verified}),
    )


def summarise(scored: list[Scored]) -> dict:
    def share(flags: list[bool]) -> float:
        return round(sum(flags) / len(flags), 4) if flags else 0.0

    names = sum(s.identifiers for s in scored)
    missing = [name for s in scored for name in s.ungrounded]
    firsts = [s.first_token_s for s in scored if s.first_token_s is not None]
    tokens = [s.prompt_tokens for s in scored if s.prompt_tokens is not None]
    return {
        "answers": len(scored),
        "cited": share([s.cited for s in scored]),
        "cited_by_model": share([s.cited_by_model for s in scored]),
        "on_target": share([s.on_target for s in scored]),
        "identifiers": names,
        "grounded_identifiers": round(1 - len(missing) / names, 4) if names else 1.0,
        "ungrounded": [f"{name} ({n})" if n > 1 else name for name, n in Counter(missing).most_common(15)],
        "first_token_s_p50": round(statistics.median(firsts), 2) if firsts else None,
        "first_token_s_mean": round(statistics.fmean(firsts), 2) if firsts else None,
        "total_s_mean": round(statistics.fmean(s.total_s for s in scored), 2) if scored else None,
        "prompt_tokens_mean": round(statistics.fmean(tokens)) if tokens else None,
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
        rows += chosen
    if per_repo is not None:
        taken: Counter = Counter()
        rows = [row for row in rows if (taken.update([(row["_base"], row["repo"])])
                                        or taken[(row["_base"], row["repo"])] <= per_repo)]
    if not rows:
        raise UsageError("no question rows" + (f' with "split": "{split}"' if split != "all" else ""))
    services_for: dict[str, Services | str] = {}
    scored: list[Scored] = []
    skipped: list[str] = []
    sink = out.open("w", encoding="utf-8") if out else None
    try:
        for number, row in enumerate(rows, start=1):
            key = f"{row['_base']}::{row['repo']}"
            if key not in services_for:
                try:
                    services = build_services(repo_dir(row["repo"], Path(row["_base"])), model=model)
                    services.indexer().run()
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
                item = score(clean, system, answer, services.repo.root)
                scored.append(item)
                if sink:
                    sink.write(json.dumps({**asdict(item), "citations": [asdict(c) for c in answer.citations]},
                                          ensure_ascii=False) + "\n")
                    sink.flush()
                if on_answer:
                    on_answer(number, len(rows), item)
    finally:
        if sink:
            sink.close()
    report: dict = {"split": split, "systems": _blocks(scored, systems),
                    "skipped": dict(Counter(skipped))}
    marked = {s.row.get("split", "test") for s in scored}
    if split == "all" and len(marked) > 1:
        report["splits"] = {name: _blocks([s for s in scored if s.row.get("split", "test") == name], systems)
                            for name in ("test", "tune") if name in marked}
    repos = sorted({s.row["repo"] for s in scored})
    if len(repos) > 1:
        report["by_repo"] = {repo: _blocks([s for s in scored if s.row["repo"] == repo], systems) for repo in repos}
    return report


COLUMNS = ("answers", "cited", "cited_by_model", "on_target", "grounded_identifiers", "first_token_s_p50",
           "first_token_s_mean", "total_s_mean", "prompt_tokens_mean")


def _table(title: str, blocks: dict) -> list[str]:
    lines = [title, "| system | " + " | ".join(COLUMNS) + " |", "|---" * (len(COLUMNS) + 1) + "|"]
    for system, block in blocks.items():
        cells = [f"{block[c]:.3f}" if isinstance(block[c], float) and c in ("cited", "cited_by_model", "on_target",
                                                                             "grounded_identifiers")
                 else str(block[c]) for c in COLUMNS]
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
    return lines
