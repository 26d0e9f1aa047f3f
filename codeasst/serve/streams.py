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
        loop = asyncio.get_running_loop()
        lines: asyncio.Queue = asyncio.Queue()
        pending = [0]  # bytes handed over and not yet written
        lock = threading.Lock()
        cut = asyncio.Event()

        def emit(item: dict) -> None:
            if self.gone.is_set() or self.stopping():
                raise Gone
            data = (json.dumps(item) + "\n").encode()
            with lock:
                pending[0] += len(data)
                over = pending[0] > self.max_bytes
            if over:
                self.ended = "slow reader"
                self.gone.set()
                loop.call_soon_threadsafe(cut.set)
                raise Gone
            loop.call_soon_threadsafe(lines.put_nowait, data)

        def run() -> None:
            try:
                self.work(emit, self.gone)
                loop.call_soon_threadsafe(lines.put_nowait, None)
            except Gone:
                # Stopping, the client is told so (if it is still there); gone, nobody is listening.
                loop.call_soon_threadsafe(lines.put_nowait, failure(Stopping()) if self.stopping() else None)
            except Left:  # it left the queue because its client is gone: nobody to tell
                loop.call_soon_threadsafe(lines.put_nowait, None)
            except BaseException as exc:  # noqa: BLE001 - every failure becomes the client's answer
                loop.call_soon_threadsafe(lines.put_nowait, failure(exc))

        async def watch() -> None:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    self.gone.set()
                    return

        async def write() -> None:
            started = False
            while True:
                item = await lines.get()
                if isinstance(item, Failed):
                    self.ended = str(item.status)
                    if not started:
                        body = json.dumps(item.to_json()).encode()
                        headers = [(b"content-type", b"application/json")]
                        if item.status == 429:
                            headers.append((b"retry-after", b"2"))
                        await send({"type": "http.response.start", "status": item.status, "headers": headers})
                        await send({"type": "http.response.body", "body": body})
                        return
                    item = (json.dumps({"type": "error", "status": item.status, **item.to_json()}) + "\n").encode()
                    await send({"type": "http.response.body", "body": item, "more_body": True})
                    item = None
                if not started:
                    await send({"type": "http.response.start", "status": 200,
                                "headers": [(b"content-type", self.media_type.encode())]})
                    started = True
                if item is None:
                    if self.ended == "client gone" and not self.gone.is_set():
                        self.ended = "done"
                    elif self.stopping():
                        self.ended = "stopping"
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                    return
                with lock:
                    pending[0] -= len(item)
                await send({"type": "http.response.body", "body": item, "more_body": True})

        threading.Thread(target=run, name="codeasst-stream", daemon=True).start()
        watcher = asyncio.ensure_future(watch())
        writer = asyncio.ensure_future(write())
        cutter = asyncio.ensure_future(cut.wait())
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
