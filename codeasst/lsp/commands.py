"""Accepts and discards: each item's command `codeasst.accept` [id, accepted length] reports an accept,
`codeasst.discard` [id] a dismissal, and a shown suggestion neither accepted by the next request for its
document nor within lsp.discard_after_s is a discard (the timer). `codeasst stats` counts them as the
server's events."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from codeasst.lsp.state import CodeasstServer, background, command_args
from codeasst.lsp.suggestions import Shown

ACCEPT = "codeasst.accept"


def register(server: CodeasstServer) -> None:
    server.command(ACCEPT)(accept)
    server.command("codeasst.discard")(discard)


def record(ls: CodeasstServer, suggestion_id: str, kind: str, shown: int, accepted: int = 0) -> None:
    """Report an event of a suggestion to the server, off the loop; nothing while no server answers."""
    s = ls.state.session
    assistant = s.assistant() if s is not None else None
    if assistant is not None and suggestion_id:
        background(lambda: assistant.event(kind, suggestion_id, shown, accepted))


def discarded(ls: CodeasstServer, ended: Iterable[Shown]) -> None:
    for shown in ended:
        record(ls, shown.id, "discarded", shown.length)


def sweep(ls: CodeasstServer) -> None:
    """Shown suggestions nobody accepted within lsp.discard_after_s: discarded."""
    if ls.state.session is not None:
        discarded(ls, ls.state.session.outcomes.expired())


def sweep_later(ls: CodeasstServer) -> None:
    """Sweep once the suggestion just shown has had its time (another request may sweep it sooner)."""
    asyncio.get_running_loop().call_later(ls.session().outcomes.discard_after_s + 0.05, sweep, ls)


def accept(ls: CodeasstServer, *args: Any) -> dict:
    suggestion_id, length = command_args(args, str, int)
    shown = ls.session().outcomes.accept(suggestion_id)
    if shown is None:
        return {"recorded": False}
    record(ls, suggestion_id, "accepted", shown.length, min(length if length is not None else shown.length,
                                                            shown.length))
    return {"recorded": True}


def discard(ls: CodeasstServer, *args: Any) -> dict:
    (suggestion_id,) = command_args(args, str)
    shown = ls.session().outcomes.accept(suggestion_id)  # no longer waiting: counted now
    if shown is None:
        return {"recorded": False}
    record(ls, suggestion_id, "discarded", shown.length)
    return {"recorded": True}
