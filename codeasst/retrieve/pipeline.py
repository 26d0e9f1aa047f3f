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
from codeasst.index.indexer import IndexSummary
from codeasst.index.store import ChunkStore, Hit
from codeasst.retrieve import evidence, intent, lexical, reports
from codeasst.retrieve.fuse import Fused, cap_per_file, present, reciprocal_rank_fusion
from codeasst.retrieve.query import QueryAnalysis, analyze, identifiers_in, is_english

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
    roles: dict[str, str] | None = None  # path -> role (codeasst.index.roles); None: every file is code


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
         coverage: float = 1.0) -> list[Fused]:
    """Short questions and long reports weigh the retrievers differently: a report's words and
    clues beat its meaning, squeezed into 256 word pieces. `coverage`: the share of the chunks
    that get vectors which have one yet; dense rankings weigh in proportion. While embedding is
    under way the nearest of the few embedded chunks are weak evidence (with 64 of 1,201 embedded,
    dense hits at cosine 0.11 pushed the one file BM25 found out of the top 5), and words and exact
    matches cover every chunk."""
    # A file a question names is a strong candidate, as a file a traceback names is.
    weights = {**cfg.weights, **reports.LONG_WEIGHTS} if long else {"named": 2.0, **cfg.weights}
    if "dense-en" in rankings:
        weights["dense"] = cfg.original_language_weight
    if coverage < 1.0:
        weights.update({name: weights.get(name, 1.0) * coverage for name in DENSE})
    return reciprocal_rank_fusion(rankings, weights)


def retrieve(sources: Sources, question: str, k: int | None = None, *, context: str | None = None,
             full_analysis: bool = True, timings: dict[str, float] | None = None) -> Retrieval:
    """`context` is text the user piped in (a diff, a log, a traceback): the places it names
    and its own meaning become two more retrievers. Without `full_analysis` the LLM only
    translates a question not in English: no HyDE, no keywords beyond those it comes with.
    `timings` are the caller's, reported with retrieval's own."""
    cfg = sources.settings
    question = evidence.clean(question)
    context = evidence.clean(context) if context else context
    # A long query is read for its clues and words; the LLM reads only its condensed form, and
    # only to translate it: HyDE and keywords of a whole report cost seconds and add little.
    long = evidence.is_long(question)
    english_question = is_english(question)
    if long and english_question:
        sources = replace(sources, llm=None)
    analysed = evidence.condensed(question) if long else question
    hyde = cfg.hyde and full_analysis and not long
    # An explicit k is a request for exactly that many hits; otherwise weak ones are dropped.
    min_ratio = 0.0 if k else cfg.min_score_ratio
    k = k or cfg.k
    clock = _Clock()
    clock.timings.update(timings or {})
    files, store = sources.files, sources.store
    language = main_language(files)

    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = None
        if sources.llm is not None:
            get_llm = sources.llm

            def run_analysis() -> QueryAnalysis:
                started = time.perf_counter()
                try:
                    return analyze(get_llm(), analysed, language, hyde=hyde, hyde_tokens=cfg.hyde_tokens,
                                   hyde_lines=cfg.hyde_lines, keyword_tokens=cfg.keyword_tokens,
                                   llm_keywords=cfg.llm_keywords and full_analysis and not long)
                finally:
                    clock.lap("query_analysis_s", started)

            pending = pool.submit(run_analysis)
        started = time.perf_counter()
        embedder = sources.embedder()
        embedder.load()
        clock.lap("open_s", started)
        started = time.perf_counter()
        if long:
            rankings = {"dense": reports.dense_pieces(embedder, store, question, cfg.depth)}
        else:
            rankings = {"dense": store.query(embedder.embed_query(question), cfg.depth)}
        clock.lap("dense_s", started)
        if long:
            rankings.update(reports.lexical_rankings(sources.root, files, store, question, cfg.depth,
                                                     sources.index_dir, clock.timings))
        else:
            named = _named(question, files, store, cfg.depth)
            if named:
                rankings["named"] = named
            started = time.perf_counter()
            rankings["bm25-chunks"] = store.bm25(question, cfg.depth)
            if describes(question):
                rankings["bm25-files"] = store.bm25_files(question, cfg.depth)
            clock.lap("bm25_s", started)
        analysis = pending.result() if pending else None

    queries = {}
    if analysis and analysis.english.strip() and not english_question:
        queries["dense-en"] = analysis.english
    if analysis and analysis.hyde.strip() and hyde:
        queries["hyde"] = analysis.hyde
    elif analysis and hyde:
        rankings["hyde"] = []  # asked for, and the model wrote nothing: HyDE ran and found nothing
    if queries:
        started = time.perf_counter()
        vectors = embedder.embed(list(queries.values()))
        for name, vector in zip(queries, vectors, strict=True):
            rankings[name] = store.query(vector, cfg.depth)
        clock.lap("dense_s", started)

    if context:
        started = time.perf_counter()
        tail = context[-1500:]  # the end of a log or trace is usually what matters
        rankings["stdin-dense"] = store.query(embedder.embed_query(tail), cfg.depth)
        places = mentioned_locations(context, files)
        if places:
            chunks = store.chunks_of(sorted({p for p, _ in places}))
            named = [c for p, line in reversed(places) for c in chunks
                     if c.path == p and c.start_line <= line <= c.end_line]
            rankings["stdin-places"] = sorted(named, key=lambda c: c.end_line - c.start_line)
        clock.lap("stdin_s", started)

    keywords = analysis.keywords if analysis else identifiers_in(question)
    roles = sources.roles if cfg.roles else None
    wants = intent.intent_of(analysis.english if analysis and analysis.english.strip() else question, long)
    if keywords and not long:  # a long query's identifiers are searched as clues (reports.py)
        started = time.perf_counter()
        line_hits = lexical.grep(sources.root, files, keywords)
        spans = store.spans_of(sorted({h.path for h in line_hits}))
        ranked = lexical.rank_chunks(line_hits, spans, len(files))[: cfg.depth]
        found = {h.id: h for h in store.chunks_by_id([h.id for h in ranked])}  # only the texts that rank
        rankings["rg"] = [replace(found[h.id], score=h.score) for h in ranked if h.id in found]
        clock.lap("rg_s", started)

    started = time.perf_counter()
    if roles is not None:
        rankings = {name: [replace(h, role=roles.get(h.path, "implementation")) for h in hits]
                    for name, hits in rankings.items()}
    fused = fuse(rankings, cfg, long, sources.coverage)
    if roles is not None:
        fused = intent.weigh(fused, wants)
    hits = present(fused, k, cfg.per_file, min_ratio)
    clock.lap("fuse_s", started)
    result = Retrieval(question, analysis, rankings, fused, hits, clock.timings, intent=wants)
    if cfg.rerank and sources.llm is not None:
        from codeasst.retrieve.rerank import rerank

        started = time.perf_counter()
        result.reranked = rerank(sources.llm(), question, cap_per_file(fused, cfg.per_file), cfg.rerank_candidates)
        result.hits = present(result.reranked, k, cfg.per_file, min_ratio)
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
