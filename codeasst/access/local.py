"""The assistant in this process: each method calls the task function `codeasst serve`'s route calls."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

from codeasst.access.base import Assistant, Events
from codeasst.index.indexer import Progress
from codeasst.serve.client import Cancel
from codeasst.services import Services


class Local(Assistant):
    where = "here"

    def __init__(self, services: Services) -> None:
        self.services = services
        self._events = None

    def status(self) -> dict:
        from codeasst.tasks.search import index_status

        return index_status(self.services)

    def search(self, query: str, k: int | None = None, *, no_llm: bool = False, context: str | None = None,
               model: str | None = None, progress: Progress | None = None) -> dict:
        from codeasst.tasks.search import search_reply

        return search_reply(self.services, query, k, use_llm=not no_llm, context=context, progress=progress)

    def ask(self, question: str, *, context: str | None = None, system: str = "checked",
            history: Sequence[tuple[str, str]] = (), model: str | None = None, progress: Progress | None = None,
            client: str = "cli") -> Events:
        from codeasst.tasks.ask import ask

        answer, stream = ask(self.services, question, context, progress=progress, system=system,
                             history=[tuple(turn) for turn in history])
        return _as_events(answer, stream)

    def complete(self, path: str, line: int, col: int, text: str, *, client: str = "cli",
                 file: Path | None = None, cancel: Cancel | None = None, trigger: str = "auto") -> dict:
        from codeasst.tasks.complete import complete_at

        llm = None
        if trigger == "invoked" and self.services.settings.complete.invoked_model:
            from codeasst.models import build_llm, resolve

            llm = build_llm(resolve(self.services.settings, self.services.settings.complete.invoked_model),
                            self.services.settings)
        return complete_at(self.services, text, line, col, path, check_ignored=file, llm=llm,
                           cancelled=cancel.is_set if cancel is not None else None).to_json()

    def open(self, path: str, text: str, line: int | None = None, col: int | None = None, *,
             client: str = "cli") -> dict:
        from codeasst.tasks.complete import file_context, options_from, prepare, warm

        prepared = prepare(self.services, text, line, col or 1, path) if line is not None else None
        context = file_context(self.services, prepared, text, path=path)
        tokens = warm(self.services.complete_llm, prepared, text, path, options_from(self.services), context)
        return {"path": path, "tokens": tokens}

    def fix(self, path: str, text: str | None = None, *, line: int | None = None) -> dict:
        from codeasst.tasks.fix import fix_buffer, options_from, read_source

        target = self._absolute(path)
        if text is None:
            text = read_source(target, options_from(self.services).max_file_bytes, for_write=False).text
        result = fix_buffer(self.services, target, text, line=line)
        return {**result.to_json(), "text": result.fixed}

    def index(self, rebuild: bool = False, progress: Progress | None = None) -> dict:
        return self.services.indexer(progress).run(rebuild=rebuild, verify=True).to_json()

    def symbols(self, query: str, limit: int = 50) -> list[dict]:
        from codeasst.tasks.refs import symbols

        return symbols(self.services, query, limit=limit)

    def event(self, kind: str, suggestion_id: str, shown_length: int = 0, accepted_length: int = 0) -> None:
        from codeasst.serve.events import EventStore

        with _events_lock:
            if self._events is None:
                self._events = EventStore.open_default()
            self._events.record(kind, suggestion_id, self.services.complete_llm.name, shown_length, accepted_length)


_events_lock = threading.Lock()


def _as_events(answer, stream) -> Events:
    """tasks.ask's answer and text stream as the server streams them."""
    try:
        if answer.retrieval is not None and answer.retrieval.index is not None:
            yield {"type": "index", "summary": answer.retrieval.index.to_json()}
        for note in answer.retrieval.notes if answer.retrieval is not None else ():
            yield {"type": "note", "text": note}
        for piece in stream:
            yield {"type": "text", "text": piece}
    finally:
        stream.close()  # the model stops where it is
    yield {"type": "answer", **answer.to_json()}
