"""Retrievers for long queries: a pasted bug report, traceback or log.

A long query holds clues a question does not (file names, frames, identifiers, quoted
lines: see codeasst.retrieve.evidence) and many words the code shares, which BM25 ranks
well. Dense search reads only MiniLM's first 256 word pieces, so the query is embedded in
meaningful pieces (title, paragraphs, code blocks) whose rankings are fused. Their weights in
the fusion with the other retrievers are retrieval.long_weights (codeasst.retrieve.weights).
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

from codeasst.backends.base import Embedder
from codeasst.config import RetrievalSettings
from codeasst.index.store import ChunkStore, Hit
from codeasst.retrieve import evidence, lexical
from codeasst.retrieve.bm25 import FileBM25, tokens
from codeasst.retrieve.fuse import reciprocal_rank_fusion

# An identifier defined in more files than this is generic (`__init__`, `get`): no clue.
MAX_DEFINING_FILES = 3


def dense_pieces(embedder: Embedder, store: ChunkStore, text: str, cfg: RetrievalSettings) -> list[Hit]:
    """Dense search by each meaningful piece of a long query, the rankings fused by RRF (the title,
    the first piece, weighs retrieval.title_weight)."""
    pieces = evidence.parts(text)
    vectors = embedder.embed(pieces)
    rankings = {f"piece{i}": store.query(vector, cfg.depth) for i, vector in enumerate(vectors)}
    return [f.hit for f in reciprocal_rank_fusion(rankings, {"piece0": cfg.title_weight}, cfg)][:cfg.depth]


def lexical_rankings(root: Path, files: list[str], store: ChunkStore, text: str, depth: int,
                     cache_dir: Path | None, timings: dict[str, float]) -> dict[str, list[Hit]]:
    """The clue-based rankings (named files and lines, definitions of the identifiers,
    quoted lines) and BM25 over files, each as chunks."""
    started = time.perf_counter()
    clues = evidence.read(text, files)
    defined = lexical.definitions(root, files, clues.identifiers)
    defining: dict[str, set[str]] = {}
    for hit in defined:
        defining.setdefault(hit.keyword, set()).add(hit.path)
    defined = [h for h in defined if len(defining[h.keyword]) <= MAX_DEFINING_FILES]
    quoted = lexical.grep(root, files, clues.quotes, per_file=5)
    timings["clues_s"] = round(time.perf_counter() - started, 3)

    started = time.perf_counter()
    bm25 = FileBM25.for_files(root, files, cache_dir)
    by_bm25 = [path for path, _ in bm25.rank(text, depth)]
    timings["bm25_s"] = round(time.perf_counter() - started, 3)

    wanted = sorted({p for p, _ in clues.named} | {h.path for h in defined} | {h.path for h in quoted} | set(by_bm25))
    chunks = store.chunks_of(wanted) if wanted else []
    by_path: dict[str, list[Hit]] = {}
    for chunk in chunks:
        by_path.setdefault(chunk.path, []).append(chunk)
    terms = Counter(tokens(text))

    def best_chunk(path: str) -> Hit | None:
        options = by_path.get(path, [])
        return max(options, key=lambda c: (bm25.score_text(terms, c.text), -c.start_line), default=None)

    rankings: dict[str, list[Hit]] = {}
    named = []
    for path, line in clues.named:
        at_line = [c for c in by_path.get(path, []) if line and c.start_line <= line <= c.end_line]
        chunk = min(at_line, key=lambda c: c.end_line - c.start_line) if at_line else best_chunk(path)
        if chunk is not None and chunk not in named:
            named.append(chunk)
    if named:
        rankings["named"] = named[:depth]
    if defined:
        rankings["definitions"] = lexical.rank_chunks(defined, chunks, len(files))[:depth]
    if quoted:
        rankings["quotes"] = lexical.rank_chunks(quoted, chunks, len(files))[:depth]
    ranked_chunks = [best_chunk(path) for path in by_bm25]
    rankings["bm25"] = [c for c in ranked_chunks if c is not None]
    return rankings
