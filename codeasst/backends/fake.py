"""Deterministic fakes for unit tests of logic. Never proof that a feature works."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence

from codeasst.backends.base import Embedder, Vector


class HashingEmbedder(Embedder):
    """Bag of hashed words: texts that share words get similar vectors."""

    def __init__(self, dimension: int = 64) -> None:
        self.dimension = dimension
        self.name = f"fake-hashing-{dimension}"
        self.calls: list[int] = []  # batch sizes, for tests that count work

    def embed_batch(self, texts: Sequence[str]) -> list[Vector]:
        self.calls.append(len(texts))
        return [self._vector(text) for text in texts]

    def _vector(self, text: str) -> Vector:
        vec = [0.0] * self.dimension
        for word in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text.lower()):
            slot = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "big")
            vec[slot % self.dimension] += 1.0
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        return [v / norm for v in vec]
