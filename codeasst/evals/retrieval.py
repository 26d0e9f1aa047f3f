"""`codeasst eval retrieval QUESTIONS.jsonl`: precision, recall, F1 and recall@k of
each retrieval stage (each retriever alone, fused, reranked), at the file level.

Precision, recall and F1 are over the files a user is shown. Every stage is
presented alike (`fuse.present`): its ranking in reciprocal-rank form, at most
per_file hits per file, at most k hits, and only hits scoring at least
min_score_ratio of its best. Stages thus differ only in how they rank.
recall@k is over each stage's whole ranking of files.

A row: {"repo": "click" | "path/to/repo", "question": "...", "expected": ["core.py"], "lang": "en"}.
`repo` is a directory (relative to the JSONL file) or the name of an installed
package, whose source tree is copied into a fresh git repository in the cache.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from codeasst import paths
from codeasst.config import RetrievalSettings
from codeasst.errors import UsageError
from codeasst.index.store import Hit
from codeasst.retrieve.fuse import Fused, as_fused, present
from codeasst.retrieve.pipeline import Retrieval, fuse, retrieve
from codeasst.services import Services, build_services

RECALL_AT = (1, 3, 5, 10)
SINGLE = ("dense", "dense-en", "hyde", "rg")


@dataclass
class StageScores:
    precision: list[float] = field(default_factory=list)
    recall: list[float] = field(default_factory=list)
    f1: list[float] = field(default_factory=list)
    recall_at: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))

    def add(self, shown_files: list[str], ranked: list[str], expected: set[str]) -> None:
        """`shown_files`: the files of the hits a user gets; `ranked`: every file, best first."""
        found = len(expected & set(shown_files))
        p = found / len(shown_files) if shown_files else 0.0
        r = found / len(expected)
        self.precision.append(p)
        self.recall.append(r)
        self.f1.append(2 * p * r / (p + r) if p + r else 0.0)
        for k in RECALL_AT:
            self.recall_at[k].append(len(expected & set(ranked[:k])) / len(expected))

    def summary(self) -> dict[str, float]:
        def mean(xs: list[float]) -> float:
            return round(sum(xs) / len(xs), 4) if xs else 0.0

        out = {"precision": mean(self.precision), "recall": mean(self.recall), "f1": mean(self.f1)}
        out.update({f"recall@{k}": mean(self.recall_at[k]) for k in RECALL_AT})
        return out


def ranked_files(hits: list[Hit]) -> list[str]:
    return list(dict.fromkeys(hit.path for hit in hits))


def stages_of(result: Retrieval, cfg: RetrievalSettings) -> dict[str, list[Fused]]:
    """Each stage's ranking in fused form: every retriever alone, fused, fused without
    HyDE (what skipping it would cost), and reranked."""
    stages = {name: as_fused(result.rankings.get(name, []), name) for name in SINGLE}
    if "dense-en" not in result.rankings:  # an English question: its English query is the question
        stages["dense-en"] = stages["dense"]
    stages["fused"] = result.fused
    if "hyde" in result.rankings:
        stages["fused without hyde"] = fuse({k: v for k, v in result.rankings.items() if k != "hyde"}, cfg)
    if result.reranked is not None:
        stages["reranked"] = result.reranked
    return stages


def load_rows(path: Path) -> list[dict]:
    if not path.is_file():
        raise UsageError(f"no such file: {path}")
    rows = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            _ = row["repo"], row["question"], row["expected"]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise UsageError(f"{path}:{number}: not a question row ({exc})") from None
        rows.append(row)
    return rows


def repo_dir(spec: str, base: Path) -> Path:
    """The repository a row names: a directory, or an installed package copied into the cache."""
    candidate = (base / spec).resolve()
    if candidate.is_dir():
        return candidate
    found = importlib.util.find_spec(spec)
    if not found or not found.submodule_search_locations:
        raise UsageError(f"repo {spec!r} is neither a directory nor an installed package")
    source = Path(next(iter(found.submodule_search_locations)))
    dest = paths.cache_dir() / "eval-repos" / spec
    if not (dest / ".git").exists():
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(source, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        subprocess.run(["git", "init", "-q", str(dest)], check=True)
    return dest


def evaluate(path: Path, *, limit: int | None = None, flags: dict | None = None,
             on_row: Callable[[int, int, dict], None] | None = None) -> dict:
    rows = load_rows(path)[:limit]
    stages: dict[str, StageScores] = defaultdict(StageScores)
    by_lang: dict[str, dict[str, StageScores]] = defaultdict(lambda: defaultdict(StageScores))
    services_for: dict[str, Services] = {}
    latencies: list[float] = []
    for number, row in enumerate(rows, start=1):
        if row["repo"] not in services_for:
            services_for[row["repo"]] = build_services(repo_dir(row["repo"], path.parent), flags)
            services_for[row["repo"]].indexer().run()
        services = services_for[row["repo"]]
        started = time.perf_counter()
        result = retrieve(services, row["question"], update_index=False)
        latencies.append(time.perf_counter() - started)
        expected = set(row["expected"])
        cfg = services.settings.retrieval
        for stage, ranking in stages_of(result, cfg).items():
            files = ranked_files([f.hit for f in present(ranking, cfg.k, cfg.per_file, cfg.min_score_ratio)])
            every = ranked_files([f.hit for f in ranking])
            stages[stage].add(files, every, expected)
            by_lang["en" if row.get("lang", "en") == "en" else "zh/ru"][stage].add(files, every, expected)
        if on_row:
            on_row(number, len(rows), {"question": row["question"],
                                       "top": ranked_files([f.hit for f in result.hits])[:3],
                                       "expected": row["expected"]})
    report = {
        "rows": len(rows),
        "shown": "files shown: top k hits, per-file cap, score cutoff, alike for every stage",
        "stages": {name: scores.summary() for name, scores in stages.items()},
        "by_language": {lang: {name: s.summary() for name, s in st.items()} for lang, st in by_lang.items()},
        "mean_retrieval_s": round(sum(latencies) / len(latencies), 3) if latencies else 0.0,
    }
    fused = report["stages"].get("fused", {})
    report["fused_beats_every_single_retriever"] = all(
        fused.get("f1", 0) > report["stages"][name]["f1"] and fused.get("recall@5", 0) > report["stages"][name]["recall@5"]
        for name in SINGLE if name in report["stages"]
    )
    return report


def report_lines(report: dict) -> list[str]:
    columns = ["precision", "recall", "f1", *(f"recall@{k}" for k in RECALL_AT)]
    heading = (f"{report['rows']} questions; precision/recall/F1 over the {report['shown']}; "
               f"mean retrieval {report['mean_retrieval_s']:.2f} s")
    lines = [heading,
             "| stage | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for name, scores in report["stages"].items():
        lines.append(f"| {name} | " + " | ".join(f"{scores[c]:.3f}" for c in columns) + " |")
    for lang, stages in report["by_language"].items():
        f1 = ", ".join(f"{name} {s['f1']:.3f}" for name, s in stages.items())
        lines.append(f"F1 for {lang} questions: {f1}")
    lines.append(f"fused beats every single retriever on F1 and recall@5: "
                 f"{'yes' if report['fused_beats_every_single_retriever'] else 'NO'}")
    return lines
