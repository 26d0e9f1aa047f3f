"""What an index run reports: its progress as it goes (Progress) and what it did (IndexSummary)."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Protocol


class Progress(Protocol):
    def start(self, files: int) -> None: ...
    def advance(self, files: int = 0, chunks: int = 0) -> None: ...
    def start_embedding(self, chunks: int) -> None: ...
    def embedded(self, chunks: int) -> None: ...


@dataclass
class IndexSummary:
    root: str
    files: int = 0  # files holding chunks, after the run
    chunks: int = 0  # chunks in the index, after the run
    added: int = 0
    changed: int = 0
    deleted: int = 0
    unchanged: int = 0
    chunks_written: int = 0
    embedded: int = 0  # chunks given their vector by this run (the first phase's, where there is one)
    final_embedded: int = 0  # chunks given the configured embedder's vector after the first phase's
    final_waiting: int = 0  # after the run: chunks still waiting for the configured embedder's vector (background)
    background: dict | None = None  # the background embedder started for them: {"pid", "log"} or {"error"}
    vectors_reused: int = 0  # of those, chunks whose text was embedded before: the vector was kept, not recomputed
    dense: dict[str, int] = field(default_factory=dict)  # after the run: {"embedded": N, "total": M}
    lexical_only: int = 0  # chunks the embedding rule keeps lexical (codeasst.index.plan)
    skipped: list[dict[str, str]] = field(default_factory=list)
    rebuilt: str | None = None  # why the whole index was rebuilt, if it was
    embedder_changed: str | None = None  # the embedder in use changed: whose vectors were kept
    fallbacks: dict[str, int] = field(default_factory=dict)  # language -> files chunked by line windows
    elapsed_s: float = 0.0
    lexical_s: float = 0.0  # until every file's chunks and words were written: search answers from here
    embed_s: float = 0.0
    first_embed_s: float = 0.0  # of which the first phase's (the static model's vectors for every chunk waiting)
    repaired: str | None = None  # how the vector store was brought back in line with the manifest
    graph: dict[str, int] = field(default_factory=dict)  # files the code graph read and dropped
    graph_note: str | None = None  # why the code graph was started afresh, if it was

    def skipped_by_reason(self) -> dict[str, int]:
        return dict(Counter(item["reason"].split(" (")[0] for item in self.skipped))

    def to_json(self) -> dict:
        data = asdict(self)
        data["skipped_by_reason"] = self.skipped_by_reason()
        return data
