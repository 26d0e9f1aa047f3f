"""The assistant in this process: the one table of operations. `codeasst serve`'s routes call these same
methods on the server's own `Local`, so a one-shot command and a served request run the same steps.

Work that needs a model takes that model's turn (queue.py) first: in a server many clients share it,
fairly; in a one-shot command the single request never waits.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path

from codeasst.access.base import Assistant
from codeasst.access.clients import ClientTable
from codeasst.access.completion import Completions
from codeasst.access.events import Events, answer_events
from codeasst.access.queue import Turns
from codeasst.errors import IndexLocked
from codeasst.index import worker
from codeasst.index.summary import Progress
from codeasst.services import Services
from codeasst.wire.client import Cancel

# How long an index run waits for the background embedder's group in flight, where stopping it failed.
WORKER_WAIT_S = 120.0


class Local(Assistant):
    where = "here"

    def __init__(self, services: Services, *, turns: Turns | None = None, events=None,
                 lock_wait_s: float = 0.0) -> None:
        """`turns`: the models' queues (a server passes its own, sized by serve.max_queue and
        serve.queue_timeout_s). `events`: the suggestion event store (wire.events; the default one on
        first use). `lock_wait_s`: how long an index run waits for another writer's lock before
        IndexLocked (a server waits for a search of its own that is updating the index)."""
        cfg = services.settings.serve
        self.services = services
        self.turns = turns or Turns(cfg.max_queue, cfg.queue_timeout_s)
        self.served: Counter = Counter()  # operation -> requests answered, for /v1/health
        self.completions = Completions(services, ClientTable(cfg.max_clients, cfg.max_client_chars), self.turns,
                                       self.served)
        self.lock_wait_s = lock_wait_s
        self._events = events
        self._events_lock = threading.Lock()
        self._askers: dict[str, Services] = {}

    def asker(self, model: str | None) -> Services:
        """The services that answer with `model`: these, or a copy on that model sharing their embedder
        and index, built once (an unknown name fails here)."""
        if model is None or model == self.services.model_choice:
            return self.services
        if model not in self._askers:
            copy = replace(self.services, model_choice=model, _llm=None, _embedder=self.services.embedder)
            _ = copy.model_spec
            self._askers[model] = copy
        return self._askers[model]

    def status(self) -> dict:
        from codeasst.tasks.search import index_status

        return index_status(self.services)

    def search(self, query: str, k: int | None = None, *, no_llm: bool = False, context: str | None = None,
               model: str | None = None, progress: Progress | None = None, client: str = "cli",
               cancel: Cancel | None = None, roles: Sequence[str] = (), path: str | None = None) -> dict:
        from codeasst.retrieve.scope import Scope
        from codeasst.tasks.search import search_reply

        services = self.asker(model)
        with worker.want(services.repo.index_dir):  # the background embedder pauses meanwhile
            reply = search_reply(services, query, k, use_llm=not no_llm, context=context, progress=progress,
                                 model_turn=lambda: self.turns.turn(services.llm, client, cancelled=_asked(cancel)),
                                 scope=Scope.of(list(roles), path))
        self.served["search"] += 1
        return reply

    def ask(self, question: str, *, context: str | None = None, system: str = "checked",
            history: Sequence[tuple[str, str]] = (), model: str | None = None, progress: Progress | None = None,
            client: str = "cli", cancel: Cancel | None = None) -> Events:
        from codeasst.answer.ask import ask

        services = self.asker(model)
        cancelled = _asked(cancel)
        turn = self.turns.turn(services.ask_llm, client, cancelled=cancelled) if services.ask_llm else nullcontext()
        with turn, worker.want(services.repo.index_dir):  # the background embedder pauses meanwhile
            answer, stream = ask(services, question, context, progress=progress, system=system,
                                 history=[tuple(turn) for turn in history])
            yield from answer_events(answer, stream, cancelled)
        self.served["ask"] += 1

    def complete(self, path: str, line: int, col: int, text: str, *, client: str = "cli",
                 file: Path | None = None, cancel: Cancel | None = None, trigger: str = "auto") -> dict:
        return self.completions.complete(path, text, line, col, client, _asked(cancel), trigger=trigger,
                                         check_ignored=file)

    def open(self, path: str, text: str, line: int | None = None, col: int | None = None, *,
             client: str = "cli", cancel: Cancel | None = None) -> dict:
        return self.completions.open(path, text, line, col, client, _asked(cancel))

    def fix(self, path: str, text: str | None = None, *, line: int | None = None, client: str = "cli",
            cancel: Cancel | None = None) -> dict:
        from codeasst.tasks.fix import fix_buffer, options_from, read_source

        target = self._absolute(path)
        if text is None:
            text = read_source(target, options_from(self.services).max_file_bytes, for_write=False).text
        else:  # an editor's buffer, as the file would be read
            text = text.replace("\r\n", "\n")
        with self.turns.turn(self.services.llm, client, cancelled=_asked(cancel)):
            result = fix_buffer(self.services, target, text, line=line)
        self.served["fix"] += 1
        return {**result.to_json(), "text": result.fixed}

    def index(self, rebuild: bool = False, progress: Progress | None = None, *, vectors: bool = True,
              wait: bool = True) -> dict:
        serving = self.services.serving
        if not serving:
            # The background embedder, if one runs, stops at its next batch: this run may change the settings
            # or wipe the store under it; the one started below embeds with this run's settings.
            worker.stop(self.services.repo.index_dir)
        deadline = time.monotonic() + self.lock_wait_s
        while True:
            try:
                summary = self.services.indexer(progress).run(rebuild=rebuild, verify=True,
                                                              embed_limit=None if vectors else 0, final=wait,
                                                              wait_s=WORKER_WAIT_S)
                break
            except IndexLocked:  # a search here may be updating it: wait for that, then do the rest
                if time.monotonic() > deadline or self.turns.stopping:
                    raise
                time.sleep(0.2)
        self.served["index"] += 1
        if not wait and vectors and not serving and summary.final_waiting:
            from codeasst.access.detached import spawn

            summary.background = spawn(self.services)
        return summary.to_json()

    def embed_pending(self, groups: int = 1) -> int:
        """Vectors for up to `groups` groups of chunks an index update left waiting; how many were embedded.
        Where there is no index yet, nothing: the lock is left to the run that makes it."""
        indexer = self.services.indexer()
        if not indexer.has_index():
            return 0
        summary = indexer.embed_pending(groups=groups)
        return summary.embedded + summary.final_embedded

    def refs(self, name: str, limit: int = 50, outline: bool = False) -> list[dict]:
        from codeasst.tasks.refs import references

        return [p.to_json() for p in references(self.services, name, limit=limit, outline=outline)]

    def definition(self, name: str, limit: int = 20) -> list[dict]:
        from codeasst.tasks.refs import definitions

        return definitions(self.services, name, limit=limit)

    def symbols(self, query: str, limit: int = 50) -> list[dict]:
        from codeasst.tasks.refs import symbols

        return symbols(self.services, query, limit=limit)

    @property
    def events(self):
        """The suggestion event store (wire.events.EventStore), opened on first use."""
        with self._events_lock:
            if self._events is None:
                from codeasst.wire.events import EventStore

                self._events = EventStore.open_default()
            return self._events

    def event(self, kind: str, suggestion_id: str, shown_length: int = 0, accepted_length: int = 0) -> None:
        variant = self.completions.variant_named(suggestion_id)  # the model that wrote it
        self.events.record(kind, suggestion_id, variant, shown_length, accepted_length)

    def close(self) -> None:
        self.turns.stop()
        if self._events is not None:
            self._events.close()


def _asked(cancel: Cancel | None) -> Callable[[], bool]:
    return cancel.is_set if cancel is not None else (lambda: False)
