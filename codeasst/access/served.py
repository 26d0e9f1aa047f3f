"""The assistant through the repository's running `codeasst serve` (wire/client.py).

A server that does not answer is looked for once more (it may have restarted on another port);
if none answers, a front end that may work alone (`fallback`) does so from then on, with a note,
and one that may not (the LSP server) gets `Unreachable`. An answer that breaks off after its first
words is not done again here: that would write it twice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from codeasst.access.base import Assistant
from codeasst.access.events import Events, replay_progress
from codeasst.errors import CodeasstError
from codeasst.index.summary import Progress
from codeasst.services import Services
from codeasst.wire.client import Cancel, ServerClient, Unreachable


class Served(Assistant):
    def __init__(self, services: Services, client: ServerClient, fallback: Assistant | None,
                 on_note: Callable[[str], None] | None = None) -> None:
        self.services = services
        self.client: ServerClient | None = client
        self.fallback = fallback
        self.on_note = on_note or services.note

    @classmethod
    def find(cls, services: Services, fallback: Assistant | None, *,
             on_note: Callable[[str], None] | None = None) -> Served | None:
        client = ServerClient.find(services.repo.root)
        return cls(services, client, fallback, on_note) if client is not None else None

    @property
    def where(self) -> str:
        return self.client.url if self.client is not None else "here"

    def _through(self, served: Callable[[ServerClient], object], alone: Callable[[Assistant], object]):
        """`served(client)`; where no server answers (after one more look), `alone(fallback)`."""
        for _ in range(2):
            if self.client is None:
                break
            try:
                return served(self.client)
            except Unreachable as exc:
                found = ServerClient.find(self.root)
                if found is None or found.url == self.client.url:
                    self.client = None
                    if self.fallback is None:
                        raise
                    self.on_note(f"{exc}; working without it")
                    break
                self.client = found
        if self.fallback is None:
            raise Unreachable(f"no codeasst serve answers for {self.root}")
        return alone(self.fallback)

    def status(self) -> dict:
        return self._through(lambda c: c.status(), lambda a: a.status())

    def search(self, query: str, k: int | None = None, *, no_llm: bool = False, context: str | None = None,
               model: str | None = None, progress: Progress | None = None, client: str = "cli",
               cancel: Cancel | None = None, roles: Sequence[str] = (), path: str | None = None) -> dict:
        return self._through(lambda c: c.search(query, k, no_llm, context, model, roles=list(roles), path=path),
                             lambda a: a.search(query, k, no_llm=no_llm, context=context, progress=progress,
                                                roles=roles, path=path))

    def ask(self, question: str, *, context: str | None = None, system: str = "checked",
            history: Sequence[tuple[str, str]] = (), model: str | None = None, progress: Progress | None = None,
            client: str = "cli", cancel: Cancel | None = None) -> Events:
        def served(c: ServerClient) -> Events:
            return _unbroken(c.ask(question, system=system, context=context, history=list(history), model=model,
                                   client=client))  # Unreachable here: nothing came yet

        return self._through(served, lambda a: a.ask(question, context=context, system=system, history=history,
                                                     progress=progress))

    def complete(self, path: str, line: int, col: int, text: str, *, client: str = "cli",
                 file: Path | None = None, cancel: Cancel | None = None, trigger: str = "auto") -> dict:
        def served(c: ServerClient) -> dict:
            try:
                return {**c.complete(str(self._absolute(path)), line, col, text, client, cancel, trigger),
                        "server": c.url}
            except Unreachable:
                if cancel is not None and cancel.is_set():
                    return {"text": "", "reason": "cancelled", "id": ""}
                raise

        return self._through(served, lambda a: a.complete(path, line, col, text, client=client, file=file,
                                                          cancel=cancel, trigger=trigger))

    def open(self, path: str, text: str, line: int | None = None, col: int | None = None, *,
             client: str = "cli", cancel: Cancel | None = None) -> dict:
        return self._through(lambda c: c.open(str(self._absolute(path)), text, line, col, client),
                             lambda a: a.open(path, text, line, col, client=client))

    def fix(self, path: str, text: str | None = None, *, line: int | None = None, client: str = "cli",
            cancel: Cancel | None = None) -> dict:
        return self._through(lambda c: c.fix(str(self._absolute(path)), text, line, client),
                             lambda a: a.fix(path, text, line=line))

    def index(self, rebuild: bool = False, progress: Progress | None = None, *, vectors: bool = True,
              wait: bool = True) -> dict:
        def served(c: ServerClient) -> dict:
            self.on_note(f"indexing through codeasst serve at {c.url}")
            return replay_progress(c.index(rebuild=rebuild, vectors=vectors, wait=wait), progress)

        return self._through(served, lambda a: a.index(rebuild, progress, vectors=vectors, wait=wait))

    def refs(self, name: str, limit: int = 50, outline: bool = False) -> list[dict]:
        return self._through(lambda c: c.refs(name, limit, outline), lambda a: a.refs(name, limit, outline))

    def definition(self, name: str, limit: int = 20) -> list[dict]:
        return self._through(lambda c: c.definition(name, limit), lambda a: a.definition(name, limit))

    def symbols(self, query: str, limit: int = 50) -> list[dict]:
        return self._through(lambda c: c.symbols(query, limit), lambda a: a.symbols(query, limit))

    def event(self, kind: str, suggestion_id: str, shown_length: int = 0, accepted_length: int = 0) -> None:
        self._through(lambda c: c.event(kind, suggestion_id, shown_length, accepted_length),
                      lambda a: a.event(kind, suggestion_id, shown_length, accepted_length))


def _unbroken(lines) -> Events:
    """The server's answer lines; one that breaks off after it began is an error to say, not to redo.
    Closing it closes the connection: the server stops the model."""
    try:
        yield from lines
    except Unreachable as exc:
        raise CodeasstError(str(exc), hint="run the question again") from None
    finally:
        lines.close()
