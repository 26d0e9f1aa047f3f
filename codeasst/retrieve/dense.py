"""Dense retrieval: embed the query, ask the vector store for its neighbours."""

from __future__ import annotations

from codeasst.backends.base import Embedder
from codeasst.index.store import ChunkStore, Hit


def dense_search(store: ChunkStore, embedder: Embedder, query: str, k: int) -> list[Hit]:
    return store.query(embedder.embed_query(query), k)
