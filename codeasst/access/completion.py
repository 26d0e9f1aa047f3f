"""Completions as the in-process assistant makes them, for `codeasst complete` and `codeasst serve` alike:
what a completion keeps between requests.

Per client (clients.py): the request it waits for (a newer one ends an older one), its recent
files, the other files' context pinned for its current file, and its last suggestion, whose rest
the type-ahead cache gives while the user types its first characters. Across clients: which model
answers a key press (`variant`, the one place that decides it: complete.model, complete.variants,
complete.invoked_model) and which one wrote each suggestion (for the events). A completion and a
warm-up start from the same task step, `tasks.complete.prepare`, and take the model's turn in its
queue (queue.py).
"""

from __future__ import annotations

import itertools
import os
import time
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from codeasst.access.clients import ClientState, ClientTable, Typed
from codeasst.access.queue import Left, Turns
from codeasst.backends.base import LLM
from codeasst.services import Services
from codeasst.tasks.complete import Prepared, complete_prepared, file_context, options_from, prepare, warm


@dataclass
class Completions:
    services: Services
    clients: ClientTable
    turns: Turns
    served: Counter  # operation -> requests answered (/v1/health)
    numbers: itertools.count = field(default_factory=lambda: itertools.count(1))
    models: dict[str, LLM] = field(default_factory=dict)  # the A/B variants' models, built on first use
    variant_of: OrderedDict[str, str] = field(default_factory=OrderedDict)  # suggestion id -> its variant

    @property
    def kv_slots(self) -> int:
        return self.services.settings.serve.kv_slots

    def stopping(self) -> bool:
        return self.turns.stopping

    def complete(self, rel: str, text: str, line: int, col: int, client_name: str, gone: Callable[[], bool], *,
                 trigger: str = "auto", check_ignored: Path | None = None) -> dict:
        """The suggestion for `client_name` at `line`, `col` of `text` (the file `rel`): Suggestion.to_json()
        with its id, the model that wrote it, or where the type-ahead cache gave it. `gone()` ends it early.
        `check_ignored`: the file on disk, whose ignore rules may silence it."""
        number = next(self.numbers)
        started = time.perf_counter()
        prepared = prepare(self.services, text, line, col, rel, check_ignored=check_ignored)
        at = prepared.at
        known = self.clients.peek(client_name)
        if known is not None and (ahead := type_ahead(known, rel, at.prefix, at.suffix)) is not None:
            known.latest = number  # what it still waits for is stale now
            return {"text": ahead.text, "reason": "", "id": ahead.id, "cached": "type-ahead",
                    "latency_ms": round((time.perf_counter() - started) * 1000, 1)}
        if prepared.silence:  # no need to wait for the model's turn
            if known is not None:
                known.latest = number
            self.served["complete"] += 1
            return {**complete_prepared(self.services, prepared, text).to_json(), "id": ""}
        with self.clients.hold(client_name) as client:
            client.latest = number

            def superseded() -> bool:
                return client.latest != number or gone() or self.stopping()

            variant, llm = self.variant(number, trigger)
            try:
                with self.turns.turn(llm, client_name, cancelled=superseded):
                    llm.switch(client_name, self.kv_slots)
                    context = self.context(client, rel, text, prepared, renew=False)
                    result = complete_prepared(self.services, prepared, text, cancelled=superseded, llm=llm,
                                               context=context)
            except Left:
                return {"text": "", "reason": "cancelled by a newer request", "id": ""}
            suggestion_id = f"{os.getpid()}-{number}"
            self.remember_variant(suggestion_id, variant)
            if result.text:
                client.typed = Typed(rel, at.prefix, at.suffix, result.text, suggestion_id)
            client.trim(self.services.settings.serve.max_client_chars)
        self.served["complete"] += 1
        return {**result.to_json(), "id": suggestion_id, "model": variant}

    def open(self, rel: str, text: str, line: int | None, col: int | None, client_name: str,
             gone: Callable[[], bool]) -> dict:
        """Warm the prompt of `client_name`'s next request in `rel` (at the cursor, if known)."""
        prepared = prepare(self.services, text, line, col or 1, rel) if line is not None else None
        number = next(self.numbers)
        started = time.perf_counter()
        llm = self.services.complete_llm
        with self.clients.hold(client_name) as client:
            # A warm-up gives way to any later request of its client, and ends an older warm-up; it never
            # ends a completion: an editor may send the open after its first completion request.
            asked, client.opening = client.latest, number

            def superseded() -> bool:
                return client.latest != asked or client.opening != number or gone() or self.stopping()

            try:
                with self.turns.turn(llm, client_name, cancelled=superseded):
                    llm.load()
                    llm.switch(client_name, self.kv_slots)
                    context = self.context(client, rel, text, prepared, renew=True)
                    # a newer request stops it between batches
                    warmed = warm(llm, prepared, text, rel, options_from(self.services), context, cancelled=superseded)
            except Left:
                return {"path": rel, "tokens": 0, "seconds": 0.0, "reason": "cancelled by a newer request"}
            client.trim(self.services.settings.serve.max_client_chars)
        self.served["open"] += 1
        return {"path": rel, "tokens": warmed, "seconds": round(time.perf_counter() - started, 3)}

    def context(self, client: ClientState, rel: str, text: str, prepared: Prepared | None, renew: bool) -> dict:
        """Other files' context for `client`'s prompt in `rel`: kept while the client stays in that file,
        so that the prompt's start, and its KV cache, stay the same while the user types; built again
        when it opens a file (`renew`) or asks in another one."""
        prefix = prepared.at.prefix if prepared is not None else ""
        client.recent.visit(rel, text, prefix.count("\n") + 1)
        if renew or client.pinned is None or client.pinned[0] != rel:
            client.pinned = (rel, file_context(self.services, prepared, text, path=rel,
                                               recent=client.recent.context(rel)))
        return client.pinned[1]

    def variant(self, number: int, trigger: str = "auto") -> tuple[str, LLM]:
        """The model that answers request `number`: complete.invoked_model for one the user asked for
        where it is set, else complete.model, or the A/B variants in turn."""
        services = self.services
        names = services.settings.complete.variants
        invoked = services.settings.complete.invoked_model
        if trigger == "invoked" and invoked:
            name = invoked
        elif not names:
            return services.complete_llm.name, services.complete_llm
        else:
            name = names[number % len(names)]
        if name not in self.models:
            from codeasst.models import build_llm, resolve

            spec = resolve(services.settings, name)
            if spec == services.complete_spec:
                self.models[name] = services.complete_llm
            elif spec == services.model_spec:
                self.models[name] = services.llm
            else:
                self.models[name] = build_llm(spec, services.settings)
        return name, self.models[name]

    def remember_variant(self, suggestion_id: str, name: str) -> None:
        self.variant_of[suggestion_id] = name
        while len(self.variant_of) > 10_000:  # ids of suggestions long gone
            self.variant_of.popitem(last=False)

    def variant_named(self, suggestion_id: str) -> str:
        """The model that wrote a suggestion, for its events."""
        return self.variant_of.get(suggestion_id) or self.services.complete_llm.name


def type_ahead(client: ClientState, rel: str, prefix: str, suffix: str) -> Typed | None:
    """The rest of the client's last suggestion, if the user has since typed its first characters."""
    last = client.typed
    if last is None or last.rel != rel or not prefix.startswith(last.prefix) or suffix != last.suffix:
        return None
    typed = prefix[len(last.prefix):]
    if not typed or not last.text.startswith(typed) or len(typed) >= len(last.text):
        return None
    return Typed(rel, prefix, suffix, last.text[len(typed):], last.id)
