"""Hybrid retrieval: query analysis, dense (question, English query, HyDE) and
exact search, fused, capped per file, optionally reranked.

The LLM's query analysis runs in a thread while the main thread opens the
store and embeds the raw question: llama.cpp releases the GIL, so the slow
parts overlap.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from codeasst.backends.base import LLM, Embedder
from codeasst.config import RetrievalSettings
from codeasst.index.chunker import language_for
from codeasst.index.store import ChunkStore, Hit
from codeasst.index.summary import IndexSummary
from codeasst.retrieve import evidence, intent, lexical, reports
from codeasst.retrieve.fuse import Fused, cap_per_file, present, reciprocal_rank_fusion
from codeasst.retrieve.query import QueryAnalysis, analyze, identifiers_in, is_english
from codeasst.retrieve.scope import Scope
from codeasst.retrieve.weights import fusion_weights

PROSE = {"markdown", "json", "yaml", "text", "sql"}


@dataclass
class Retrieval:
    question: str
    analysis: QueryAnalysis | None
    # Each retriever's own ranking, for every retriever that ran (HyDE: empty when the model wrote
    # nothing). One the pipeline skipped, or that had nothing to search for (rg with no keyword, the
    # clues of a report that quotes nothing), has no entry.
    rankings: dict[str, list[Hit]]
    fused: list[Fused]  # every candidate, fused, before the per-file cap
    hits: list[Fused]  # the final top k
    timings: dict[str, float] = field(default_factory=dict)
    index: IndexSummary | None = None
    reranked: list[Fused] | None = None
    notes: list[str] = field(default_factory=list)  # things the user should know, e.g. a stale index
    intent: str = "implementation"  # what the query wants (codeasst.retrieve.intent)
    dense: dict[str, int] | None = None  # {"embedded": N, "total": M}: how much of the index dense search saw
    # The index searched (tasks.search.find): its files that hold chunks, and its folder (the code
    # graph is beside it), so an answer reads neither the manifest nor the index's place again.
    files: list[str] = field(default_factory=list)
    index_dir: Path | None = None


@dataclass
class Sources:
    """What retrieval reads. The caller brings the index up to date first (codeasst.tasks.search)."""

    root: Path
    files: list[str]  # the indexed files
    store: ChunkStore
    embedder: Callable[[], Embedder]  # the query embedder, built on first call
    llm: Callable[[], LLM] | None  # returns the loaded model; None means no query analysis
    settings: RetrievalSettings
    index_dir: Path | None = None  # where retrievers may keep what they derive from the index (BM25 counts)
    coverage: float = 1.0  # the share of the chunks that get vectors which have one (fuse)
    dense_factor: float = 1.0  # on the dense rankings' weights: retrieval.static_weight for static vectors
    reranker: Callable[[], Embedder] | None = None  # MiniLM over static vectors (retrieval.minilm_rerank)
    roles: dict[str, str] | None = None  # path -> role (codeasst.index.roles); None: every file is code
    scope: Scope | None = None  # where the user asked to look (scope.py); None: everywhere


class _Clock:
    def __init__(self) -> None:
        self.timings: dict[str, float] = {}

    def lap(self, name: str, started: float) -> None:
        self.timings[name] = round(self.timings.get(name, 0.0) + time.perf_counter() - started, 3)


def main_language(files: list[str]) -> str:
    counts = Counter(lang for lang in map(language_for, files) if lang and lang not in PROSE)
    return counts.most_common(1)[0][0] if counts else "Python"


MENTION = re.compile(r'File "([^"]+)", line (\d+)|([\w./\\-]+\.[A-Za-z0-9]+):(\d+)')


def mentioned_locations(text: str, files: list[str]) -> list[tuple[str, int]]:
    """Indexed files and lines named in pasted text: Python tracebacks, path:line in logs."""
    found = []
    for match in MENTION.finditer(text):
        raw, line = (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
        raw = raw.replace("\\", "/")
        path = next((f for f in files if raw == f or raw.endswith("/" + f)), None)
        if path and (path, int(line)) not in found:
            found.append((path, int(line)))
    return found


DENSE = ("dense", "dense-en", "hyde", "stdin-dense")


# A question that describes code instead of naming it: this many words or more, and at most one
# code name. A chunk holds a part of what it describes; the whole file holds more of its words.
DESCRIBING_WORDS = 12


def describes(question: str) -> bool:
    """Whether a short question describes code without naming it ("what mechanism keeps ..."), in
    English: BM25 reads its words as written, and the file's words are English."""
    return len(question.split()) >= DESCRIBING_WORDS and len(identifiers_in(question)) <= 1 and is_english(question)


def fuse(rankings: dict[str, list[Hit]], cfg: RetrievalSettings, long: bool = False,
         coverage: float = 1.0, dense_factor: float = 1.0) -> list[Fused]:
    """The rankings fused by their weights for a short question, or a long report (`long`:
    codeasst.retrieve.weights). `coverage`: the share of the chunks that get vectors which have
    one yet; dense rankings weigh in proportion. While embedding is under way the nearest of the
    few embedded chunks are weak evidence (with 64 of 1,201 embedded, dense hits at cosine 0.11
    pushed the one file BM25 found out of the top 5), and words and exact matches cover every chunk.
    `dense_factor` weighs the dense rankings further (static vectors: retrieval.static_weight)."""
    weights = fusion_weights(cfg, long)
    if "dense-en" in rankings:
        weights["dense"] = cfg.original_language_weight
    if coverage * dense_factor != 1.0:
        weights.update({name: weights.get(name, 1.0) * coverage * dense_factor for name in DENSE})
    return reciprocal_rank_fusion(rankings, weights, cfg)


@dataclass(frozen=True)
class _Plan:
    """What retrieve() does with one query, decided before any retriever runs."""

    question: str  # cleaned (evidence.clean, by the caller)
    long: bool  # a pasted report or log, read for its clues and words (reports.py)
    english: bool
    hyde: bool
    llm_keywords: bool
    k: int
    min_ratio: float


def _plan(cfg: RetrievalSettings, question: str, k: int | None, full_analysis: bool) -> _Plan:
    long = evidence.is_long(question)
    # HyDE and keywords of a whole report cost seconds and add little: a long query gets neither.
    # An explicit k is a request for exactly that many hits; otherwise weak ones are dropped.
    return _Plan(question, long, is_english(question), cfg.hyde and full_analysis and not long,
                 cfg.llm_keywords and full_analysis and not long, k or cfg.k, 0.0 if k else cfg.min_score_ratio)


def retrieve(sources: Sources, question: str, k: int | None = None, *, context: str | None = None,
             full_analysis: bool = True, timings: dict[str, float] | None = None) -> Retrieval:
    """`question` is cleaned (evidence.clean) and `sources.llm` set only where the model has work
    (tasks.search.find decides both, once). `context` is text the user piped in (a diff, a log, a
    traceback): the places it names and its own meaning become two more retrievers. Without
    `full_analysis` the LLM only translates a question not in English: no HyDE, no keywords beyond
    those it comes with. `timings` are the caller's, reported with retrieval's own."""
    plan = _plan(sources.settings, question, k, full_analysis)
    context = evidence.clean(context) if context else context
    clock = _Clock()
    clock.timings.update(timings or {})
    rankings, analysis, embedder = _first_rankings(sources, plan, clock)
    rankings.update(_analysis_rankings(sources, embedder, plan, analysis, clock))
    if context:
        rankings.update(_context_rankings(sources, embedder, context, clock))
    keywords = analysis.keywords if analysis else identifiers_in(plan.question)
    if keywords and not plan.long:  # a long query's identifiers are searched as clues (reports.py)
        rankings["rg"] = _exact(sources, keywords, clock)
    wants = intent.intent_of(analysis.english if analysis and analysis.english.strip() else plan.question, plan.long)
    return _ranked(sources, plan, rankings, analysis, wants, clock)


def _first_rankings(sources: Sources, plan: _Plan, clock: _Clock) -> tuple[dict[str, list[Hit]],
                                                                            QueryAnalysis | None, Embedder]:
    """The LLM's query analysis in a thread, while this one opens the embedder and runs dense search
    and the word searches; the rankings, the analysis (None without an LLM) and the embedder."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = None
        if sources.llm is not None:
            # The LLM reads a long query's condensed form only.
            analysed = evidence.condensed(plan.question) if plan.long else plan.question
            pending = pool.submit(_analyse, sources.llm, sources.settings, plan, analysed,
                                  main_language(sources.files), clock)
        started = time.perf_counter()
        embedder = sources.embedder()
        embedder.load()
        clock.lap("open_s", started)
        rankings = _dense_and_words(sources, embedder, plan, clock)
        analysis = pending.result() if pending else None
    return rankings, analysis, embedder


def _analyse(get_llm: Callable[[], LLM], cfg: RetrievalSettings, plan: _Plan, analysed: str, language: str,
             clock: _Clock) -> QueryAnalysis:
    started = time.perf_counter()
    try:
        return analyze(get_llm(), analysed, language, hyde=plan.hyde, hyde_tokens=cfg.hyde_tokens,
                       hyde_lines=cfg.hyde_lines, keyword_tokens=cfg.keyword_tokens, llm_keywords=plan.llm_keywords)
    finally:
        clock.lap("query_analysis_s", started)


def _dense_and_words(sources: Sources, embedder: Embedder, plan: _Plan, clock: _Clock) -> dict[str, list[Hit]]:
    """Dense search by the question (a long query: by each of its pieces), then a long query's clues
    and BM25 over files (reports.py), or a short question's named files, BM25 over chunks and, where
    it describes code without naming it, BM25 over files."""
    cfg, store, question = sources.settings, sources.store, plan.question
    started = time.perf_counter()
    if plan.long:
        rankings = {"dense": reports.dense_pieces(embedder, store, question, cfg)}
    else:
        rankings = {"dense": store.query(embedder.embed_query(question), cfg.depth)}
    clock.lap("dense_s", started)
    if plan.long:
        rankings.update(reports.lexical_rankings(sources.root, sources.files, store, question, cfg.depth,
                                                 sources.index_dir, clock.timings))
        return rankings
    named = _named(question, sources.files, store, cfg.depth)
    if named:
        rankings["named"] = named
    started = time.perf_counter()
    rankings["bm25-chunks"] = store.bm25(question, cfg.depth)
    if describes(question):
        rankings["bm25-files"] = store.bm25_files(question, cfg.depth)
    clock.lap("bm25_s", started)
    return rankings


def _analysis_rankings(sources: Sources, embedder: Embedder, plan: _Plan, analysis: QueryAnalysis | None,
                       clock: _Clock) -> dict[str, list[Hit]]:
    """Dense search by the LLM's English for a question not in English, and by its HyDE snippet."""
    if analysis is None:
        return {}
    rankings: dict[str, list[Hit]] = {}
    queries = {}
    if analysis.english.strip() and not plan.english:
        queries["dense-en"] = analysis.english
    if analysis.hyde.strip() and plan.hyde:
        queries["hyde"] = analysis.hyde
    elif plan.hyde:
        rankings["hyde"] = []  # asked for, and the model wrote nothing: HyDE ran and found nothing
    if queries:
        started = time.perf_counter()
        vectors = embedder.embed(list(queries.values()))
        for name, vector in zip(queries, vectors, strict=True):
            rankings[name] = sources.store.query(vector, sources.settings.depth)
        clock.lap("dense_s", started)
    return rankings


def _context_rankings(sources: Sources, embedder: Embedder, context: str, clock: _Clock) -> dict[str, list[Hit]]:
    """Piped text's meaning (dense search by its end) and the places it names (tracebacks, path:line)."""
    store, depth = sources.store, sources.settings.depth
    started = time.perf_counter()
    tail = context[-1500:]  # the end of a log or trace is usually what matters
    rankings = {"stdin-dense": store.query(embedder.embed_query(tail), depth)}
    places = mentioned_locations(context, sources.files)
    if places:
        chunks = store.chunks_of(sorted({p for p, _ in places}))
        named = [c for p, line in reversed(places) for c in chunks
                 if c.path == p and c.start_line <= line <= c.end_line]
        rankings["stdin-places"] = sorted(named, key=lambda c: c.end_line - c.start_line)
    clock.lap("stdin_s", started)
    return rankings


def _exact(sources: Sources, keywords: list[str], clock: _Clock) -> list[Hit]:
    """The chunks ripgrep finds the keywords in, best first."""
    store = sources.store
    started = time.perf_counter()
    line_hits = lexical.grep(sources.root, sources.files, keywords)
    spans = store.spans_of(sorted({h.path for h in line_hits}))
    ranked = lexical.rank_chunks(line_hits, spans, len(sources.files))[: sources.settings.depth]
    found = {h.id: h for h in store.chunks_by_id([h.id for h in ranked])}  # only the texts that rank
    hits = [replace(found[h.id], score=h.score) for h in ranked if h.id in found]
    clock.lap("rg_s", started)
    return hits


def _ranked(sources: Sources, plan: _Plan, rankings: dict[str, list[Hit]], analysis: QueryAnalysis | None,
            wants: str, clock: _Clock) -> Retrieval:
    """The rankings fused, weighed by their files' roles for the query's intent, cut for the user, and
    reranked where the settings ask for it."""
    cfg = sources.settings
    roles = sources.roles if cfg.roles else None
    started = time.perf_counter()
    if roles is not None:
        rankings = {name: [replace(h, role=roles.get(h.path, "implementation")) for h in hits]
                    for name, hits in rankings.items()}
    if sources.scope is not None:
        every = sources.roles or {}
        rankings = {name: [h for h in hits if sources.scope.admits(h.path, every.get(h.path, "implementation"))]
                    for name, hits in rankings.items()}
    fused = fuse(rankings, cfg, plan.long, sources.coverage, sources.dense_factor)
    if roles is not None:
        fused = intent.weigh(fused, wants, cfg.off_intent)
    clock.lap("fuse_s", started)
    if cfg.minilm_rerank and sources.reranker is not None:
        from codeasst.retrieve.rerank import by_embedder

        started = time.perf_counter()
        fused = by_embedder(sources.reranker(), plan.question, cap_per_file(fused, cfg.per_file), cfg.minilm_rerank,
                            cfg.rrf_k, cfg.minilm_rerank_weight)
        clock.lap("minilm_rerank_s", started)
    hits = present(fused, plan.k, cfg.per_file, plan.min_ratio)
    result = Retrieval(plan.question, analysis, rankings, fused, hits, clock.timings, intent=wants)
    if cfg.rerank and sources.llm is not None:
        from codeasst.retrieve.rerank import rerank

        started = time.perf_counter()
        result.reranked = rerank(sources.llm(), plan.question, cap_per_file(fused, cfg.per_file),
                                 cfg.rerank_candidates)
        result.hits = present(result.reranked, plan.k, cfg.per_file, plan.min_ratio)
        clock.lap("rerank_s", started)
    return result


def _named(question: str, files: list[str], store: ChunkStore, depth: int) -> list[Hit]:
    """The chunks of files (and lines) a short question names: `what does billing/invoice.py do`."""
    places = evidence.read(question, files).named
    if not places:
        return []
    chunks = store.chunks_of(sorted({p for p, _ in places}))
    named = []
    for path, line in places:
        mine = [c for c in chunks if c.path == path]
        at = [c for c in mine if line and c.start_line <= line <= c.end_line] or mine[:1]
        named += [c for c in at if c not in named]
    return named[:depth]
