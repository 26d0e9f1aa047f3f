"""The model's turn: one request at a time, fairly between clients, and never held by a waiter
that has gone.

llama.cpp holds one context, so one request generates at a time. A plain lock would let one
busy client starve the others and would keep a waiter whose client left; this queue gives the
model to the waiting client served longest ago (first come among equals), lets a waiter leave
as soon as its `cancelled` says so, refuses a request past `max_waiting` or `timeout_s`, and on
`stop()` wakes every waiter with Stopping.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass


class Busy(Exception):
    """The queue is full, or the wait was too long: try again later (HTTP 429)."""


class Stopping(Exception):
    """The server is stopping: the request is cancelled (HTTP 503 would be a lie; it is never retried)."""


class Left(Exception):
    """The waiter's client went away, or a newer request of its client replaced it."""


@dataclass
class _Waiter:
    seq: int
    client: str


class ModelQueue:
    def __init__(self, max_waiting: int = 32, timeout_s: float = 60.0, poll_s: float = 0.05) -> None:
        self.max_waiting = max_waiting
        self.timeout_s = timeout_s
        self.poll_s = poll_s
        self._cond = threading.Condition()
        self._waiting: list[_Waiter] = []
        self._holder: str | None = None
        self._served_at: dict[str, int] = {}  # client -> turn number when it last got the model
        self._turns = itertools.count(1)
        self._seq = itertools.count()
        self.stopping = False

    def depth(self) -> dict:
        with self._cond:
            return {"waiting": len(self._waiting), "running": self._holder is not None}

    def _next(self) -> _Waiter | None:
        if not self._waiting:
            return None
        return min(self._waiting, key=lambda w: (self._served_at.get(w.client, 0), w.seq))

    @contextmanager
    def turn(self, client: str, cancelled: Callable[[], bool] = lambda: False) -> Iterator[None]:
        """Hold the model for the block. Raises Busy, Stopping or Left instead of waiting on."""
        with self._cond:
            if self.stopping:
                raise Stopping
            if len(self._waiting) >= self.max_waiting:
                raise Busy(f"{len(self._waiting)} requests are waiting for the model")
            me = _Waiter(next(self._seq), client)
            self._waiting.append(me)
            deadline = time.monotonic() + self.timeout_s
            try:
                while self._holder is not None or self._next() is not me:
                    if self.stopping:
                        raise Stopping
                    if cancelled():
                        raise Left
                    if time.monotonic() > deadline:
                        raise Busy(f"waited {self.timeout_s:g} s for the model")
                    self._cond.wait(self.poll_s)
                if cancelled():  # gone in the moment it took to get here: the turn passes on at once
                    raise Left
                self._holder = client
                self._served_at[client] = next(self._turns)
                if len(self._served_at) > 4 * self.max_waiting + 1024:  # clients long gone
                    for name in sorted(self._served_at, key=self._served_at.get)[:len(self._served_at) // 2]:
                        self._served_at.pop(name)
            finally:
                self._waiting.remove(me)
                self._cond.notify_all()
        try:
            yield
        finally:
            with self._cond:
                self._holder = None
                self._cond.notify_all()

    def stop(self) -> None:
        with self._cond:
            self.stopping = True
            self._cond.notify_all()


class Turns:
    """A queue per model context, made on first use: one request at a time in each. Completions have
    a context of their own in a server, so they never wait behind an answer being written; a
    one-shot command's single request never waits at all."""

    def __init__(self, max_waiting: int = 32, timeout_s: float = 60.0) -> None:
        self.size = (max_waiting, timeout_s)
        self.queues: dict[int, tuple[str, ModelQueue]] = {}  # id of a model -> (its name and role, its queue)
        self.stopping = False
        self._lock = threading.Lock()

    def queue_for(self, llm, role: str = "ask") -> ModelQueue:
        with self._lock:
            if id(llm) not in self.queues:
                queue = ModelQueue(*self.size)
                if self.stopping:
                    queue.stop()
                self.queues[id(llm)] = (f"{llm.name} ({role})", queue)
            return self.queues[id(llm)][1]

    def turn(self, llm, client: str, cancelled: Callable[[], bool] = lambda: False):
        """Hold `llm` for the block (ModelQueue.turn)."""
        return self.queue_for(llm).turn(client, cancelled)

    def depth(self) -> list[dict]:
        return [{"model": name, **queue.depth()} for name, queue in list(self.queues.values())]

    def stop(self) -> None:
        """Wake every waiter and end every generation at its next token (SIGTERM, SIGINT)."""
        self.stopping = True
        for _, queue in list(self.queues.values()):
            queue.stop()
