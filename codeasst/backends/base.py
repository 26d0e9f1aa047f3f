"""Base classes for model backends. Each has exactly one abstract method."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence

Vector = list[float]


class Embedder(ABC):
    """Turns texts into vectors. Subclasses implement `embed_batch` only."""

    #: Identity of the model; a change of it means every stored vector is stale.
    name: str = "embedder"
    batch_size: int = 32

    @abstractmethod
    def embed_batch(self, texts: Sequence[str]) -> list[Vector]:
        """Embed one batch of texts, returning one vector per text."""

    def load(self) -> None:
        """Load the model now rather than on first use, so timings and progress exclude it."""

    def embed(self, texts: Sequence[str], progress: Callable[[int], None] | None = None) -> list[Vector]:
        """Embed any number of texts in batches of similar length.

        Sorting by length keeps padding, and so wasted work, small; results
        come back in the caller's order.
        """
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
        out: list[Vector | None] = [None] * len(texts)
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            vectors = self.embed_batch([texts[i] for i in batch])
            if len(vectors) != len(batch):
                raise ValueError(f"{self.name} returned {len(vectors)} vectors for {len(batch)} texts")
            for i, vector in zip(batch, vectors, strict=True):
                out[i] = vector
            if progress:
                progress(len(batch))
        return out  # type: ignore[return-value]

    def embed_query(self, text: str) -> Vector:
        return self.embed_batch([text])[0]
