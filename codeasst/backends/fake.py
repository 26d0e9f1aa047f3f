"""Deterministic fakes for unit tests of logic. Never proof that a feature works."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterator, Sequence

from codeasst.backends.base import LLM, Embedder, GenerationParams, Token, Vector


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


class ScriptedLLM(LLM):
    """Replies with queued texts, word by word, and records every prompt it was sent."""

    def __init__(self, replies: list[str] | None = None) -> None:
        self.name = "scripted"
        self.replies = list(replies or [])
        self.history: list[str] = []

    def enqueue(self, *replies: str) -> None:
        self.replies.extend(replies)

    def stream(self, prompt: str, params: GenerationParams) -> Iterator[Token]:
        self.history.append(prompt)
        if not self.replies:
            raise AssertionError("ScriptedLLM has no reply queued for: " + prompt[-80:])
        pieces = re.findall(r"\s*\S+|\s+", self.replies.pop(0))
        for piece in pieces[: params.max_tokens]:
            yield Token(piece, logprob=-0.1 if params.logprobs is not None else None)
