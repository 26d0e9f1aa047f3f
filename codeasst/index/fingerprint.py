"""What identifies a chunk, the text its vector is computed from, and the settings an index was built with."""

from __future__ import annotations

import hashlib

from codeasst.config import IndexSettings
from codeasst.index import chunker

# Bump when the text fed to the embedder changes shape.
EMBED_TEXT_VERSION = 1
# Bump when what the index keeps, or where, changes shape. 2: chunks and their words in the
# manifest, lexical first (issue 36). 3: vectors kept per embedder, a collection each (issue 45).
LAYOUT_VERSION = "3"
# A change of these makes the kept vectors wrong; a change of the others leaves them right. The
# embedder is not among them, nor in the fingerprint: each embedder's vectors are kept apart (its own
# collection, its own embedded state, its own kept vectors), so changing it rebuilds nothing.
VECTOR_KEYS = ("embed_text", "layout")


def embedding_text(chunk) -> str:
    """What the embedder sees: where the code lives and what it is called, then the code."""
    return f"{chunk.path} {chunk.name}\n{chunk.text}"


def chunk_id(chunk: chunker.Chunk) -> str:
    key = "\0".join(map(str, (chunk.path, chunk.start_line, chunk.end_line, chunk.kind, chunk.name, chunk.text)))
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def vector_key(embedder: str, text: str) -> str:
    """The key a vector is kept under (the manifest's `vectors`): its embedder and the text embedded."""
    return hashlib.sha256(f"{embedder}\0{text}".encode()).hexdigest()[:32]


def fingerprint(settings: IndexSettings, store: str) -> dict[str, str]:
    """Everything whose change makes every stored vector stale, or leaves them elsewhere."""
    return {
        "store": store,
        "chunker": chunker.chunker_fingerprint(),
        "chunk_chars": str(settings.chunk_chars),
        "overlap_lines": str(settings.overlap_lines),
        "embed_text": str(EMBED_TEXT_VERSION),
        "layout": LAYOUT_VERSION,
    }
