"""Long answers (`/v1/ask`, `/v1/index`) streamed as NDJSON, without letting the client hold the model.

The work runs in a thread of its own and hands each line to the connection through a bounded
buffer. The client going away at any moment (before the first byte, mid-stream, a reset), a
client that reads slower than the model writes (its buffer over `max_bytes`), or the server
stopping all end the work at its next line: it raises `Gone` from `emit`, its `finally` blocks
release what it holds, and the model goes on to the next request. The response status waits for
the first line, so work that fails before it (a full queue, a bad question) answers with its own
status code rather than a 200 that says otherwise.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable

from starlette.responses import Response

from codeasst.access.queue import Busy, Left, Stopping
from codeasst.errors import CodeasstError


class Gone(Exception):
    """The client left, was cut off, or the server is stopping: stop producing."""


# A CodeasstError's exit code (errors.py) -> the HTTP status that says the same: bad input,
# an index that cannot be used or is busy, nothing to answer from, a failing model or store.
STATUS_OF_EXIT = {2: 422, 3: 409, 75: 409, 1: 400, 4: 500}


class Failed(Exception):
    """Work that fails with an HTTP status (before its first line, or as an error line after)."""

    def __init__(self, status: int, detail: str, exit_code: int | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.exit_code = exit_code

    def to_json(self) -> dict:
        return {"detail": self.detail, **({"exit_code": self.exit_code} if self.exit_code is not None else {})}


def failure(exc: BaseException) -> Failed:
    """The HTTP face of an exception raised by work done for a request."""
    if isinstance(exc, Failed):
        return exc
    if isinstance(exc, Busy):
        return Failed(429, f"the model is busy: {exc}; try again")
    if isinstance(exc, Stopping):
        return Failed(503, "the server is stopping")
    if isinstance(exc, Left):
        return Failed(409, "cancelled by a newer request of the same client")
    if isinstance(exc, CodeasstError):
        # The status says what kind of failure it is; exit_code lets a CLI that asked exit as it would alone.
        status = getattr(exc, "status", None) or STATUS_OF_EXIT.get(exc.exit_code, 500)
        return Failed(status, exc.one_line(), exc.exit_code)
    return Failed(500, f"{type(exc).__name__}: {exc}")


class LineStream(Response):
    """An NDJSON response fed by `work(emit, gone)` in a thread. `stopping()` says the server is
    going down; `on_end(reason)` is told why the stream ended ("done", "client gone", "slow reader",
    "stopping", or an error's status) for the server's counters."""

    media_type = "application/x-ndjson"

    def __init__(self, work: Callable[[Callable[[dict], None], threading.Event], None], *, max_bytes: int,
                 stopping: Callable[[], bool] = lambda: False, on_end: Callable[[str], None] = lambda _: None) -> None:
        super().__init__(media_type=self.media_type)
        self.work = work
        self.max_bytes = max_bytes
        self.stopping = stopping
        self.on_end = on_end
        self.gone = threading.Event()
        self.ended = "client gone"

    async def __call__(self, scope, receive, send) -> None:
        pump = _Pump(self, asyncio.get_running_loop())
        threading.Thread(target=pump.run, name="codeasst-stream", daemon=True).start()
        watcher = asyncio.ensure_future(self._watch(receive))
        writer = asyncio.ensure_future(pump.write(send))
        cutter = asyncio.ensure_future(pump.cut.wait())
        try:
            # A slow reader is cut off: its writer, stuck sending, is cancelled and the connection dropped.
            await asyncio.wait({writer, cutter}, return_when=asyncio.FIRST_COMPLETED)
            if cutter.done() and not writer.done():
                writer.cancel()
            elif writer.done() and not writer.cancelled() and writer.exception() is not None:
                self.ended = "client gone"  # the connection broke under a send
        finally:
            self.gone.set()
            for task in (watcher, writer, cutter):
                task.cancel()
            self.on_end(self.ended)

    async def _watch(self, receive) -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                self.gone.set()
                return


class _Pump:
    """One stream's lines, from the work's thread to the connection: `emit` and `run` in the thread,
    `write` on the event loop, `pending` bytes handed over and not yet written."""

    def __init__(self, stream: LineStream, loop: asyncio.AbstractEventLoop) -> None:
        self.stream = stream
        self.loop = loop
        self.lines: asyncio.Queue = asyncio.Queue()
        self.pending = 0
        self.lock = threading.Lock()
        self.cut = asyncio.Event()

    def _put(self, item) -> None:
        self.loop.call_soon_threadsafe(self.lines.put_nowait, item)

    def emit(self, item: dict) -> None:
        stream = self.stream
        if stream.gone.is_set() or stream.stopping():
            raise Gone
        data = (json.dumps(item) + "\n").encode()
        with self.lock:
            self.pending += len(data)
            over = self.pending > stream.max_bytes
        if over:
            stream.ended = "slow reader"
            stream.gone.set()
            self.loop.call_soon_threadsafe(self.cut.set)
            raise Gone
        self._put(data)

    def run(self) -> None:
        try:
            self.stream.work(self.emit, self.stream.gone)
            self._put(None)
        except Gone:
            # Stopping, the client is told so (if it is still there); gone, nobody is listening.
            self._put(failure(Stopping()) if self.stream.stopping() else None)
        except Left:  # it left the queue because its client is gone: nobody to tell
            self._put(None)
        except BaseException as exc:  # noqa: BLE001 - every failure becomes the client's answer
            self._put(failure(exc))

    async def write(self, send) -> None:
        stream = self.stream
        started = False
        while True:
            item = await self.lines.get()
            if isinstance(item, Failed):
                stream.ended = str(item.status)
                if not started:
                    await _refuse(send, item)
                    return
                item = (json.dumps({"type": "error", "status": item.status, **item.to_json()}) + "\n").encode()
                await send({"type": "http.response.body", "body": item, "more_body": True})
                item = None
            if not started:
                await send({"type": "http.response.start", "status": 200,
                            "headers": [(b"content-type", stream.media_type.encode())]})
                started = True
            if item is None:
                if stream.ended == "client gone" and not stream.gone.is_set():
                    stream.ended = "done"
                elif stream.stopping():
                    stream.ended = "stopping"
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                return
            with self.lock:
                self.pending -= len(item)
            await send({"type": "http.response.body", "body": item, "more_body": True})


async def _refuse(send, failed: Failed) -> None:
    """Work that failed before its first line answers with its own status, not a 200."""
    headers = [(b"content-type", b"application/json")]
    if failed.status == 429:
        headers.append((b"retry-after", b"2"))
    await send({"type": "http.response.start", "status": failed.status, "headers": headers})
    await send({"type": "http.response.body", "body": json.dumps(failed.to_json()).encode()})
