"""The one event format for what streams: an answer and an index run's progress.

`codeasst serve` sends these dicts as NDJSON lines and a front end reads the same dicts whether
they came over HTTP or from this process, so the two paths cannot drift apart:
- an answer: {"type": "index", "summary": {...}} (after the index update, when one ran),
  {"type": "note", "text": ...}, {"type": "text", "text": ...} pieces, last {"type": "answer", ...};
- an index run: {"type": "start", "files"}, {"type": "advance", "files", "chunks"},
  {"type": "embedding", "chunks"}, {"type": "embedded", "chunks"}, last {"type": "summary", ...}.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from codeasst.errors import CodeasstError
from codeasst.index.summary import Progress

# An answer as it comes (see above). Closing it stops the model where it is.
Events = Iterator[dict]


def answer_events(answer, stream: Iterator[str], cancelled: Callable[[], bool] | None = None) -> Events:
    """answer.ask's answer and its text stream as events. `cancelled` is asked at every token (an empty
    piece is a token the checked answer holds back): once it says so, the model stops and no answer
    event follows."""
    try:
        if answer.retrieval is not None and answer.retrieval.index is not None:
            yield {"type": "index", "summary": answer.retrieval.index.to_json()}
        for note in answer.retrieval.notes if answer.retrieval is not None else ():
            yield {"type": "note", "text": note}
        for piece in stream:
            if cancelled is not None and cancelled():
                return
            yield {"type": "text", "text": piece}  # an empty piece too: a turn to notice Esc
    finally:
        stream.close()  # the model stops where it is
    yield {"type": "answer", **answer.to_json()}


class ProgressEvents:
    """An index run's Progress as events, handed to `emit`."""

    def __init__(self, emit: Callable[[dict], None]) -> None:
        self.emit = emit

    def start(self, files: int) -> None:
        self.emit({"type": "start", "files": files})

    def advance(self, files: int = 0, chunks: int = 0) -> None:
        self.emit({"type": "advance", "files": files, "chunks": chunks})

    def start_embedding(self, chunks: int) -> None:
        self.emit({"type": "embedding", "chunks": chunks})

    def embedded(self, chunks: int) -> None:
        self.emit({"type": "embedded", "chunks": chunks})


def replay_progress(lines: Iterable[dict], progress: Progress | None) -> dict:
    """An index run's events drawn on `progress`; its summary. The inverse of ProgressEvents."""
    for line in lines:
        kind = line["type"]
        if kind == "summary":
            return {k: v for k, v in line.items() if k != "type"}
        if progress is None:
            continue
        if kind == "start":
            progress.start(line["files"])
        elif kind == "advance":
            progress.advance(line["files"], line["chunks"])
        elif kind == "embedding":
            progress.start_embedding(line["chunks"])
        elif kind == "embedded":
            progress.embedded(line["chunks"])
    raise CodeasstError("codeasst serve stopped before the index run ended",
                        hint="run `codeasst index` again; the next run resumes where this one stopped")
