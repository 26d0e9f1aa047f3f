"""`codeasst search`: bring the index up to date, then retrieve."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from codeasst.errors import CodeasstError
from codeasst.index.indexer import IndexSummary
from codeasst.index.store import Hit
from codeasst.retrieve.dense import dense_search
from codeasst.services import Services


@dataclass
class SearchResult:
    query: str
    hits: list[Hit]
    index: IndexSummary
    timings: dict[str, float] = field(default_factory=dict)


def search(services: Services, query: str, k: int = 10) -> SearchResult:
    if not query.strip():
        raise CodeasstError("the query is empty")
    timings: dict[str, float] = {}
    started = time.perf_counter()
    summary = services.indexer().run()
    timings["index_update_s"] = time.perf_counter() - started
    if summary.chunks == 0:
        raise CodeasstError(f"nothing is indexed under {services.repo.root}: no indexable files")
    started = time.perf_counter()
    hits = dense_search(services.open_store(), services.embedder, query, k)
    timings["dense_s"] = time.perf_counter() - started
    return SearchResult(query=query, hits=hits, index=summary,
                        timings={k: round(v, 3) for k, v in timings.items()})
