"""How `codeasst eval retrieval` scores a row's retrieval, stage by stage, and sums up rows.

Precision, recall and F1 are over the files a user is shown. Every stage is presented alike
(`fuse.present`): its ranking in reciprocal-rank form, at most per_file hits per file, at most k
hits, and only hits scoring at least min_score_ratio of its best. Stages thus differ only in how
they rank. recall@k is over each stage's whole ranking of files.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from codeasst.config import RetrievalSettings
from codeasst.index.store import Hit
from codeasst.retrieve import intent
from codeasst.retrieve.fuse import Fused, as_fused, present
from codeasst.retrieve.pipeline import Retrieval, fuse

RECALL_AT = (1, 3, 5, 10)
SINGLE = ("dense", "dense-en", "hyde", "rg", "bm25-chunks", "bm25-files")
# Retrievers of long queries (codeasst.retrieve.reports), scored alone where a row used them.
LONG_SINGLE = ("named", "definitions", "quotes", "bm25")
BASELINE = "bm25-files baseline"
# Search as it was before issue 28 (no file roles, no BM25 over chunks), from the same run's rankings.
ROLES_OFF = "fused, before issue 28"
NO_CHUNK_BM25 = "fused without bm25-chunks"  # this search with roles, less BM25 over chunks
NO_FILE_BM25 = "fused without bm25-files"  # this search with roles, less BM25 over whole files
DEFINITIONS_AT = (1, 5, 10)


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

    definitions_at: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))

    def add_definitions(self, chunks: list[tuple[str, str]], wanted: dict[str, list[str]]) -> None:
        """Whether a definition the answer needs is among the first k chunks (function-level)."""
        for k in DEFINITIONS_AT:
            self.definitions_at[k].append(float(any(defines(c, wanted) for c in chunks[:k])))

    def summary(self) -> dict[str, float]:
        def mean(xs: list[float]) -> float:
            return round(sum(xs) / len(xs), 4) if xs else 0.0

        out = {"precision": mean(self.precision), "recall": mean(self.recall), "f1": mean(self.f1)}
        out.update({f"recall@{k}": mean(self.recall_at[k]) for k in RECALL_AT})
        out["rows"] = len(self.f1)  # a stage that runs on some rows only is scored on those
        if self.definitions_at:
            out.update({f"definition@{k}": mean(self.definitions_at[k]) for k in DEFINITIONS_AT})
            out["definition_rows"] = len(self.definitions_at[DEFINITIONS_AT[0]])
        return out


@dataclass
class Scored:
    """One question's outcome, kept per row so that any subset (a split, a repo) can be summarised."""

    row: dict
    shown: dict[str, list[str]]  # stage -> the files a user is shown
    ranked: dict[str, list[str]]  # stage -> every file it ranked, best first
    seconds: float
    # stage -> its first chunks as (path, canonical name), for the definitions the answer needs
    chunks: dict[str, list[tuple[str, str]]] = field(default_factory=dict)


def ranked_files(hits: list[Hit]) -> list[str]:
    return list(dict.fromkeys(hit.path for hit in hits))


def stages_of(result: Retrieval, cfg: RetrievalSettings,
              lexical: dict[str, set[str]] | None = None) -> dict[str, list[Fused]]:
    """Each stage's ranking in fused form: every retriever that ran alone, fused, fused without
    HyDE (what skipping it would cost), and reranked. A retriever the pipeline skipped on this
    query (HyDE and rg on a long one) is no stage of it: "not run" is not a ranking that found
    nothing, and scoring it as one would drag that retriever's figures down."""
    stages = {name: as_fused(result.rankings[name], name, cfg)
              for name in (*SINGLE, *LONG_SINGLE) if name in result.rankings}
    if "dense-en" not in result.rankings:  # an English question: its English query is the question
        stages["dense-en"] = stages["dense"]
    stages["fused"] = result.fused
    long = "bm25" in result.rankings  # only long queries run BM25
    # The other rankings fused: search as it was before roles and BM25 over chunks (issue 28).
    rest = fuse({k: v for k, v in result.rankings.items() if k != "bm25-chunks"}, cfg, long)
    if cfg.roles:
        stages[ROLES_OFF] = rest
    if "bm25-chunks" in result.rankings:
        stages[NO_CHUNK_BM25] = intent.weigh(rest, result.intent, cfg.off_intent) if cfg.roles else rest
    if "bm25-files" in result.rankings:  # search before the file stage (issue 35)
        before = fuse({k: v for k, v in result.rankings.items() if k != "bm25-files"}, cfg, long)
        stages[NO_FILE_BM25] = intent.weigh(before, result.intent, cfg.off_intent) if cfg.roles else before
    if "hyde" in result.rankings:
        stages["fused without hyde"] = fuse({k: v for k, v in result.rankings.items() if k != "hyde"}, cfg, long)
    if result.reranked is not None:
        stages["reranked"] = result.reranked
    if lexical is not None:  # eval retrieval --embedding-rules
        from codeasst.evals import embedding_rules

        stages.update(embedding_rules.stages(result, cfg, lexical))
    return stages


def score(row: dict, result: Retrieval, cfg: RetrievalSettings, seconds: float,
          lexical: dict[str, set[str]] | None = None) -> Scored:
    """What each stage that ran on this row shows a user, and how it ranks every file."""
    shown, ranked, chunks = {}, {}, {}
    for stage, ranking in stages_of(result, cfg, lexical).items():
        shown[stage] = ranked_files([f.hit for f in present(ranking, cfg.k, cfg.per_file, cfg.min_score_ratio)])
        ranked[stage] = ranked_files([f.hit for f in ranking])
        chunks[stage] = [(f.hit.path, f.hit.name) for f in ranking[: max(DEFINITIONS_AT)]]
    return Scored(row, shown, ranked, seconds, chunks)


def wanted_definitions(row: dict) -> dict[str, list[str]]:
    """The definitions a row's answer needs, per file: `definitions` (question sets) or
    `expected_spans` (the localization set), both keyed by repository-relative path."""
    spans = row.get("definitions") or row.get("expected_spans") or {}
    return {path: names for path, names in spans.items() if names}


def defines(chunk: tuple[str, str], wanted: dict[str, list[str]]) -> bool:
    """Whether a chunk (path, canonical name) is one of the wanted definitions. Canonical names
    start with the module (`core.Option.resolve`); a wanted `Option.resolve` or `resolve` is its tail."""
    path, name = chunk
    return any(name == want or name.endswith("." + want) for want in wanted.get(path, ()))


def scored_rows(path: Path) -> list[Scored]:
    """The rows an `evaluate(rows_out=path)` run wrote, for `summarise`."""
    items = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [Scored(**{**item, "chunks": {k: [tuple(c) for c in v] for k, v in item["chunks"].items()}})
            for item in items]


def summarise(scored: list[Scored]) -> dict:
    """The figures for some rows: per stage, per language and per repository."""
    from codeasst.index.roles import role_of

    stages: dict[str, StageScores] = defaultdict(StageScores)
    by_lang: dict[str, dict[str, StageScores]] = defaultdict(lambda: defaultdict(StageScores))
    by_repo: dict[str, dict[str, StageScores]] = defaultdict(lambda: defaultdict(StageScores))
    by_role: dict[str, dict[str, StageScores]] = defaultdict(lambda: defaultdict(StageScores))
    by_intent: dict[str, dict[str, StageScores]] = defaultdict(lambda: defaultdict(StageScores))
    repo_rows: dict[str, int] = defaultdict(int)
    role_rows: dict[str, int] = defaultdict(int)
    intent_rows: dict[str, int] = defaultdict(int)
    for item in scored:
        expected = set(item.row["expected"])
        lang = "en" if item.row.get("lang", "en") == "en" else "zh/ru"
        # The role of the file that answers (by path alone: the role a reader sees in it).
        role = role_of(min(expected))
        wanted = wanted_definitions(item.row)
        repo_rows[item.row["repo"]] += 1
        role_rows[role] += 1
        buckets_of = [by_lang[lang], by_repo[item.row["repo"]], by_role[role]]
        if "intent" in item.row:
            intent_rows[item.row["intent"]] += 1
            buckets_of.append(by_intent[item.row["intent"]])
        for stage, shown in item.shown.items():
            for bucket in (stages, *buckets_of):
                bucket[stage].add(shown, item.ranked[stage], expected)
                if wanted and stage in item.chunks:
                    bucket[stage].add_definitions(item.chunks[stage], wanted)
    block = {
        "rows": len(scored),
        "in_sample_rows": sum(item.row.get("split") == "tune" for item in scored),
        "stages": {name: s.summary() for name, s in stages.items()},
        "by_language": {lang: {name: s.summary() for name, s in st.items()} for lang, st in by_lang.items()},
        "by_repo": _groups(by_repo, repo_rows),
        "by_answer_role": _groups(by_role, role_rows),
        "by_intent": _groups(by_intent, intent_rows),
        "mean_retrieval_s": round(sum(s.seconds for s in scored) / len(scored), 3) if scored else 0.0,
    }
    fused = block["stages"].get("fused", {})
    baseline = block["stages"].get(BASELINE)
    if baseline:
        block["fused_above_baseline_at_every_k"] = all(fused.get(f"recall@{k}", 0) > baseline[f"recall@{k}"]
                                                       for k in RECALL_AT)
    block["fused_against"] = _fused_against(scored)
    block["fused_beats_every_single_retriever"] = all(
        versus["fused"]["f1"] > versus["alone"]["f1"] and versus["fused"]["recall@5"] > versus["alone"]["recall@5"]
        for versus in block["fused_against"].values()
    )
    return block


def _groups(scores: dict[str, dict[str, StageScores]], rows: dict[str, int]) -> dict[str, dict]:
    return {name: {"rows": rows[name], "stages": {stage: s.summary() for stage, s in st.items()}}
            for name, st in scores.items()}


def _fused_against(scored: list[Scored]) -> dict[str, dict]:
    """Fused against each single retriever, on the rows where that retriever ran only: on the
    others fused had inputs the retriever never had a chance at."""
    out = {}
    for name in (*SINGLE, *LONG_SINGLE):
        both = [item for item in scored if name in item.shown and "fused" in item.shown]
        if not both:
            continue
        alone, fused = StageScores(), StageScores()
        for item in both:
            expected = set(item.row["expected"])
            alone.add(item.shown[name], item.ranked[name], expected)
            fused.add(item.shown["fused"], item.ranked["fused"], expected)
        out[name] = {"rows": len(both), "fused": fused.summary(), "alone": alone.summary()}
    return out
