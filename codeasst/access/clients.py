"""What the server keeps per editor client, bounded: an editor plugin may send a new client id per
buffer, or a script thousands, and none of it may grow the server without end.

A client's state (its newest request, its last suggestion for the type-ahead cache, its ring of
recent files, the other-files context pinned for its current file) lives in one `ClientState`;
the table keeps the `max_clients` most recently seen and forgets the rest, and a client whose
text exceeds `max_chars` keeps less (the type-ahead cache is the first to go).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from codeasst.complete.context import RecentFiles


@dataclass
class Typed:
    """The last suggestion for one file: valid while the user types its first characters."""

    rel: str
    prefix: str
    suffix: str
    text: str
    id: str

    @property
    def chars(self) -> int:
        return len(self.prefix) + len(self.suffix) + len(self.text)


@dataclass
class ClientState:
    name: str
    latest: int = 0  # number of its newest request; an older one still waiting or generating gives way
    opening: int = 0  # number of its newest warm-up (/v1/open), which ends an older warm-up, never a completion
    typed: Typed | None = None
    recent: RecentFiles = field(default_factory=RecentFiles)
    pinned: tuple[str, dict] | None = None  # (file, other files' context for it)
    busy: int = 0  # its requests in flight: a client is never forgotten while it has one

    def chars(self) -> int:
        pinned = sum(len(text) for _, text in (self.pinned[1].get("context", ()) if self.pinned else ()))
        return (self.typed.chars if self.typed else 0) + self.recent.chars() + pinned

    def trim(self, max_chars: int) -> None:
        """Drop what is cheapest to rebuild until the client holds at most `max_chars`."""
        if self.chars() > max_chars:
            self.typed = None
        while self.chars() > max_chars and self.recent.drop_oldest():
            pass
        if self.chars() > max_chars:
            self.pinned = None


class ClientTable:
    def __init__(self, max_clients: int = 64, max_chars: int = 400_000) -> None:
        self.max_clients = max_clients
        self.max_chars = max_chars
        self._clients: OrderedDict[str, ClientState] = OrderedDict()
        self._lock = threading.Lock()
        self.forgotten = 0

    def peek(self, name: str) -> ClientState | None:
        """The client's state if it is kept, without making one or marking it seen."""
        with self._lock:
            return self._clients.get(name)

    @contextmanager
    def hold(self, name: str) -> Iterator[ClientState]:
        """The client's state (new if unknown or forgotten), marked as the most recently seen and kept
        while the block runs: a newer request of the client must find the same state to end this one,
        however many other clients come meanwhile."""
        with self._lock:
            state = self._clients.get(name)
            if state is None:
                state = self._clients[name] = ClientState(name)
                idle = [key for key, other in self._clients.items() if not other.busy and other is not state]
                for key in idle[:max(0, len(self._clients) - self.max_clients)]:
                    del self._clients[key]  # the least recently seen first, as the dict keeps them
                    self.forgotten += 1
            else:
                self._clients.move_to_end(name)
            state.busy += 1
        try:
            yield state
        finally:
            with self._lock:
                state.busy -= 1

    def __len__(self) -> int:
        return len(self._clients)

    def held_chars(self) -> int:
        with self._lock:
            return sum(state.chars() for state in self._clients.values())
