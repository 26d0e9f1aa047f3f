"""What retrieval reads: the index's chunks (by id, by file, by their words) and the vectors of
those embedded so far. Lexical reads never wait for vectors: an index whose embedding is still
under way answers from what is there, and says how much (`dense`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from codeasst.backends.base import Vector
from codeasst.index.chunkdb import Hit, dense_share
from codeasst.index.manifest import Manifest
from codeasst.index.vectors import VectorStore

__all__ = ["ChunkStore", "Hit"]


def own_dense(manifest: Manifest, usable: Sequence[str]) -> dict[str, int]:
    """{"embedded": N, "total": M}: the index's own counts where the embedder in use is one of `usable`
    (the configured embedder, and its first phase), else the chunks the configured one (`usable[0]`)
    embedded when it last was in use (until a run makes it the one in use again)."""
    counts = manifest.chunks.counts()
    share = dense_share(counts)
    if manifest.get_meta("embedder") in (None, *usable):
        return share
    return {"embedded": manifest.chunks.shelved(usable[0]), "total": share["total"]}


class ChunkStore:
    """One index's chunks (the manifest's database at `manifest_path`) and vectors (opened on
    the first dense query that can find anything: a lexical-only index never imports chromadb)."""

    def __init__(self, manifest_path: Path, vectors: Callable[[str], VectorStore], usable: Sequence[str]) -> None:
        self._manifest = Manifest(manifest_path)
        self.table = self._manifest.chunks
        self._vectors = vectors  # an embedder's name -> its collection
        self.usable = tuple(usable)  # the configured embedder, then its first phase if any

    def in_use(self) -> str | None:
        """The embedder whose vectors the index uses now (None before any run chose one)."""
        return self._manifest.get_meta("embedder")

    def other_embedder(self) -> str | None:
        """The embedder whose vectors the index uses where it is neither the configured one nor its first
        phase (the setting changed and no run has switched yet): dense search reads nothing until one does."""
        in_use = self.in_use()
        return in_use if in_use not in (None, *self.usable) else None

    def close(self) -> None:
        self._manifest.close()

    def dense(self) -> dict[str, int]:
        """How many of the chunks that get vectors have one: {"embedded": N, "total": M}."""
        return own_dense(self._manifest, self.usable)

    def count(self) -> int:
        return self.table.counts()["chunks"]

    def query(self, vector: Vector, k: int) -> list[Hit]:
        """The `k` chunks nearest to `vector` among those embedded; a vector whose chunk the index
        no longer holds (its file changed while it was embedded) never answers."""
        in_use = self.in_use() or self.usable[0]
        if in_use not in self.usable or not self.table.counts()["embedded"]:
            return []  # the index's vectors are another embedder's, or none is embedded yet
        nearest = self._vectors(in_use).query(vector, k)
        found = self.table.by_id([id_ for id_, _ in nearest], embedded_only=True)
        return [_scored(found[id_], score) for id_, score in nearest if id_ in found]

    def chunks_by_id(self, ids: Sequence[str]) -> list[Hit]:
        """The chunks with these ids, in their order, with score 0; ids the index lacks are left out."""
        found = self.table.by_id(ids)
        return [found[id_] for id_ in ids if id_ in found]

    def chunks_of(self, paths: Sequence[str]) -> list[Hit]:
        """Every chunk of the given files, with score 0."""
        return self.table.of_paths(paths)

    def spans_of(self, paths: Sequence[str]) -> list[Hit]:
        """Every chunk of the given files with its place but not its text (cheap for many files)."""
        return self.table.spans_of(paths)

    def bm25(self, query: str, limit: int) -> list[Hit]:
        """The chunks BM25 ranks first for the query's words, best first, scored."""
        ranked = self.table.rank(query, limit)
        found = self.table.by_id([id_ for id_, _ in ranked])
        return [_scored(found[id_], score) for id_, score in ranked if id_ in found]


    def bm25_files(self, query: str, limit: int) -> list[Hit]:
        """The files BM25 over whole files ranks first (from the chunks' postings), each as its
        chunk that scores highest, best file first, scored by the file."""
        ranked = self.table.rank_files(query, limit)
        best = self.table.best_in(query, [path for path, _ in ranked])
        found = self.table.by_id(list(best.values()))
        return [_scored(found[best[path]], score) for path, score in ranked if best.get(path) in found]


def _scored(hit: Hit, score: float) -> Hit:
    return replace(hit, score=score)
