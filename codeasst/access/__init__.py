"""One way in to the assistant, for every front end: the CLI, the chat and `codeasst lsp`.

`connect(services)` chooses once per process by one rule: a `codeasst serve` that runs for this
repository answers (served.py, over its HTTP API, its models warm and the index its own); else this
process works alone (local.py, over `tasks/` and `answer/`; `codeasst serve`'s routes run the
same `Local`). Both return the same types, mostly the JSON the server sends and `--json` prints:
search and status as dicts, an answer and an index run's progress as events (events.py), a completion as `Suggestion.to_json()` with its id.
A server that stops answering mid-way leaves a front end that may work alone (the CLI, the chat) to
do so, with a note; the LSP server, a thin client, never loads models itself.

No front end imports `wire/client.py`, a `tasks/` or an `answer/` module except through here (the
layer contract in .importlinter, checked by `make test`, and tests/unit/test_access.py).
"""

from __future__ import annotations

from codeasst.access.base import Assistant
from codeasst.access.events import Events
from codeasst.services import Services
from codeasst.wire.client import Cancel, ServerError, Unreachable

__all__ = ["Assistant", "Cancel", "Events", "ServerError", "Unreachable", "alone", "connect", "join"]


def connect(services: Services, *, unless: str | None = None, alone: bool = False,
            on_note=None, lock_wait_s: float = 0.0) -> Assistant:
    """The assistant for `services`' repository: served when its `codeasst serve` answers, else local.
    `unless` names an option only this process can honour (IndexLocked while a server owns the index);
    `alone` works here whatever runs (a model the server does not have, a file outside its repository).
    `lock_wait_s`: how long this process's index runs wait for another writer (a second agent's)."""
    from codeasst.access.local import Local
    from codeasst.access.served import Served

    mine = Local(services, lock_wait_s=lock_wait_s)
    if alone:
        return mine
    served = Served.find(services, mine, on_note=on_note)
    if served is None:
        return mine
    if unless is not None and not services.settings.store.chroma_url:
        from codeasst.errors import IndexLocked

        raise IndexLocked(f"codeasst serve (pid {served.client.server.pid}) owns this repository's index; {unless} "
                          "cannot go through it", hint="stop the server to use it")
    return served


def alone(services: Services) -> Assistant:
    """The assistant working in this process, whatever else runs (evaluations, `codeasst serve` itself)."""
    from codeasst.access.local import Local

    return Local(services)


def join(services: Services) -> Assistant | None:
    """The running `codeasst serve` for `services`' repository, never this process (a thin client,
    the LSP server, loads no models); None while none answers."""
    from codeasst.access.served import Served

    return Served.find(services, None)
