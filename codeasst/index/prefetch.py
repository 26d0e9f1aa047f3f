"""The background embedder's model work, done before it takes the index lock.

The next group's vectors are computed without the lock and kept by text (the manifest's `vectors`, the
same table that spares a killed run's group its model work), so the group that follows under the lock
finds them kept and only stores and marks them: the lock is held for a write, never for seconds of
model work a foreground run would wait on (and a worker niced below the user's commands would stretch).
A chunk that changed meanwhile is embedded under the lock as before; a kept vector nobody uses ages out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from codeasst.index.fingerprint import embedding_text, vector_key
from codeasst.index.indexer import KEPT_VECTORS
from codeasst.index.manifest import Manifest

if TYPE_CHECKING:
    from codeasst.index.indexer import Indexer, Progress


def prefetch(indexer: Indexer, group: int, progress: Progress | None = None) -> int:
    """Embed and keep the vectors of the group the next `embed_pending(groups=1)` will take, where that is
    the index embedder's (the first phase's is fast enough to make under the lock); how many were embedded."""
    if not indexer.has_index():
        return 0
    manifest = Manifest(indexer.manifest_path)
    try:
        in_use = manifest.get_meta("embedder")
        on_first = indexer.first is not None and in_use == indexer.first.name
        if on_first and manifest.chunks.counts()["pending"]:
            return 0
        if on_first:
            batch = manifest.chunks.unshelved(indexer.embedder.name, group)
        elif in_use == indexer.embedder.name:
            batch = manifest.chunks.pending(group)
        else:
            return 0
        texts = {vector_key(indexer.embedder.name, text): text for text in map(embedding_text, batch)}
        known = manifest.vectors(list(texts))
        todo = [(key, text) for key, text in texts.items() if key not in known]
        if not todo:
            return 0
        indexer.embedder.load()
        tell = progress.embedded if progress is not None else None
        vectors = indexer.embedder.embed([text for _, text in todo], progress=tell)
        kept = max(KEPT_VECTORS, 2 * manifest.chunks.counts()["chunks"])  # as many as the indexer keeps
        manifest.keep_vectors({key: vector for (key, _), vector in zip(todo, vectors, strict=True)}, kept)
        return len(todo)
    finally:
        manifest.close()
