"""`codeasst serve`: the warm process behind inline completion and fast one-shot commands.

A FastAPI app (OpenAPI at /openapi.json, docs at /docs) on uvicorn, bound to 127.0.0.1 unless
told otherwise. What a request must show first (Host, Origin, the bearer token) is in guard.py.
The models load once, at start; between requests on the same file the llama.cpp KV cache keeps
the prompt's common prefix, so a request while typing only evaluates what is new.

- POST /v1/complete: a suggestion at (path, line, col), from the text sent or the file on disk.
  A newer request from the same client ends an older one still waiting or generating; a
  suggestion stays valid while the user types its first characters (the type-ahead cache answers
  without the model).
- POST /v1/open: a client opened a file: its prompt is evaluated now, so the first suggestion in
  it finds the prefix cached. A warm-up gives way to the client's next request; it never ends a
  completion (an editor may send the open after it).
- POST /v1/search, POST /v1/ask (NDJSON stream), POST /v1/index (NDJSON progress), GET /v1/status:
  as the CLI commands; while the server runs it owns the repository's index and the CLI comes here.
- POST /v1/fix: the verified fix of a file or an editor's buffer (nothing written); POST /v1/symbols:
  definitions by name or by words (an editor's symbol search).
- POST /v1/events: shown / accepted (with the accepted length) / discarded, stored in SQLite for
  `codeasst stats`.
- GET /v1/health: the repository, models, process, queue and clients.

The model serves one request at a time, fairly between clients (queue.py); a request waits at
most serve.queue_timeout_s and at most serve.max_queue wait at once (429 past either). Malformed
requests are 4xx with a one-line `detail`: a bad position 422, a path outside the repository or
ignored 403, an unknown file 404, text that is not UTF-8 400, a body over the limit 413.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import anyio.to_thread
from fastapi import FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse

from codeasst.access import Cancel
from codeasst.access.events import ProgressEvents
from codeasst.access.local import Local
from codeasst.access.queue import Turns
from codeasst.errors import CodeasstError
from codeasst.serve.guard import PathRefused, RequestGuard, guard_path
from codeasst.serve.limits import BodyLimit
from codeasst.serve.requests import (
    AskRequest,
    CompleteRequest,
    EventRequest,
    FixRequest,
    IndexRequest,
    NameRequest,
    OpenRequest,
    SearchRequest,
    SymbolsRequest,
)
from codeasst.serve.streams import Failed, LineStream, failure
from codeasst.services import Services
from codeasst.wire.events import EventStore


@dataclass
class ServerState:
    """What the server holds: the in-process assistant every route calls (its models' queues, its
    completion clients, what it has served), and how its streams ended."""

    assistant: Local
    streams: Counter = field(default_factory=Counter)  # how streams ended: done, client gone, slow reader...
    started: float = field(default_factory=time.time)

    @property
    def services(self) -> Services:
        return self.assistant.services

    @property
    def clients(self):
        return self.assistant.completions.clients

    @property
    def events(self) -> EventStore:
        return self.assistant.events

    @property
    def served(self) -> Counter:
        return self.assistant.served

    @property
    def stopping(self) -> bool:
        return self.assistant.turns.stopping

    def queue_for(self, llm):
        return self.assistant.turns.queue_for(llm)

    def stop(self) -> None:
        """Wake every waiter and end every generation at its next token (SIGTERM, SIGINT)."""
        self.assistant.turns.stop()

    def close(self) -> None:
        self.assistant.close()

    def stream(self, work: Callable[[Callable[[dict], None], threading.Event], None]) -> LineStream:
        return LineStream(work, max_bytes=self.services.settings.serve.stream_buffer_bytes,
                          stopping=lambda: self.stopping, on_end=lambda why: self.streams.update([why]))

    def buffer(self, path: str, text: str | None) -> tuple[str, str]:
        """The file a request names, relative to the root (guard_path decides whether it may be read),
        and its text: the buffer sent, or the file on disk."""
        try:
            target, rel = guard_path(self.services.repo.root, path)
        except PathRefused as exc:
            raise Failed(exc.status, str(exc)) from None
        return rel, text if text is not None else _read(target, rel)

    def health(self) -> dict:
        services, cfg = self.services, self.services.settings.serve
        return {"repo": str(services.repo.root), "model": services.llm.name,
                "complete_model": services.complete_llm.name, "pid": os.getpid(),
                "served": dict(self.served), "queues": self.assistant.turns.depth(), "streams": dict(self.streams),
                "clients": {"kept": len(self.clients), "forgotten": self.clients.forgotten,
                            "chars": self.clients.held_chars(), "max": cfg.max_clients},
                "uptime_s": round(time.time() - self.started, 1), "rss_mb": _rss_mb()}


def _read(target: Path, rel: str) -> str:
    if not target.is_file():
        raise Failed(404, f"{rel}: no such file")
    try:
        return target.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Failed(400, f"{rel}: not UTF-8 text (byte {exc.start})") from None


async def _in_thread(request: Request, work: Callable[[Cancel], object]) -> object:
    """`work(gone)` in a worker thread; `gone` is set when the client disconnects, so work that
    waits for the model, or generates, can stop for nobody."""
    gone = Cancel()

    async def watch() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass
        gone.set()

    watcher = asyncio.ensure_future(watch())
    try:
        return await anyio.to_thread.run_sync(work, gone)
    except Exception as exc:  # noqa: BLE001 - every failure becomes the client's answer
        raise failure(exc) from None
    finally:
        watcher.cancel()


def create_app(services: Services, token: str | None = None, events: EventStore | None = None, *,
               port: int | None = None, bound: str = "127.0.0.1") -> FastAPI:
    """The app, guarded (guard.py) for a server listening on `bound`:`port` (any port when None)."""
    cfg = services.settings.serve
    assistant = Local(services, turns=Turns(cfg.max_queue, cfg.queue_timeout_s),
                      events=events or EventStore.open_default(), lock_wait_s=cfg.queue_timeout_s)
    # Both models' queues are known from the start, for /v1/health.
    assistant.turns.queue_for(services.complete_llm, "complete" if services.complete_llm is not services.llm
                              else "ask")
    assistant.turns.queue_for(services.ask_llm or services.llm, "ask")
    state = ServerState(assistant)
    app = FastAPI(title="codeasst", version="1", description=__doc__.split("\n\n")[0])
    app.state.codeasst = state
    if cfg.allowed_origins:
        app.add_middleware(CORSMiddleware, allow_origins=list(cfg.allowed_origins), allow_methods=["GET", "POST"],
                           allow_headers=["Authorization", "Content-Type"])
    app.add_middleware(BodyLimit)
    app.add_middleware(RequestGuard, token=token, port=port, bound=bound, allowed_hosts=cfg.allowed_hosts,
                       allowed_origins=cfg.allowed_origins)

    @app.exception_handler(Failed)
    async def _failed(_: Request, exc: Failed) -> JSONResponse:
        headers = {"Retry-After": "2"} if exc.status == 429 else None
        return JSONResponse(exc.to_json(), status_code=exc.status, headers=headers)

    @app.exception_handler(CodeasstError)
    async def _codeasst_error(_: Request, exc: CodeasstError) -> JSONResponse:
        failed = failure(exc)
        return JSONResponse(failed.to_json(), status_code=failed.status)

    _routes(app, state)
    return app


def _routes(app: FastAPI, state: ServerState) -> None:
    """Every route calls the assistant's operation of the same name, as the CLI working alone does."""
    local = state.assistant

    @app.get("/v1/health")
    def health() -> dict:
        return state.health()

    @app.post("/v1/complete")
    async def complete(body: CompleteRequest, request: Request) -> dict:
        def work(gone: Cancel) -> dict:
            rel, text = state.buffer(body.path, body.text)
            return local.complete(rel, body.line, body.col, text, client=body.client, cancel=gone,
                                  trigger=body.trigger)

        return await _in_thread(request, work)

    @app.post("/v1/open")
    async def opened(body: OpenRequest, request: Request) -> dict:
        def work(gone: Cancel) -> dict:
            rel, text = state.buffer(body.path, body.text)
            return local.open(rel, text, body.line, body.col, client=body.client, cancel=gone)

        return await _in_thread(request, work)

    @app.post("/v1/search")
    async def search(body: SearchRequest, request: Request) -> dict:
        return await _in_thread(request, lambda gone: local.search(
            body.query, body.k, no_llm=body.no_llm, context=body.context, model=body.model, client=body.client,
            cancel=gone, roles=body.roles, path=body.path))

    @app.post("/v1/ask")
    def ask(body: AskRequest) -> LineStream:
        def work(emit: Callable[[dict], None], gone: threading.Event) -> None:
            for event in local.ask(body.question, context=body.context, system=body.system, history=body.history,
                                   model=body.model, client=body.client, cancel=Cancel(gone)):
                if event["type"] != "text" or event["text"]:  # an empty piece is a turn, not a line to send
                    emit(event)

        return state.stream(work)

    _index_routes(app, state)


def _index_routes(app: FastAPI, state: ServerState) -> None:
    """The routes that read or write the index and its graph, and the editor's events."""
    local = state.assistant

    @app.post("/v1/index")
    def index(body: IndexRequest) -> LineStream:
        """Bring the index up to date here, in the process that owns it; progress as it goes."""

        def work(emit: Callable[[dict], None], gone: threading.Event) -> None:
            def emit_quietly(item: dict) -> None:
                # The run goes on if its client leaves: a finished index is worth having, and
                # stopping half-way would only leave the next run more to do.
                if not gone.is_set():
                    emit(item)

            summary = local.index(rebuild=body.rebuild, progress=ProgressEvents(emit_quietly), vectors=body.vectors,
                                  wait=body.wait)
            emit_quietly({"type": "summary", **summary})

        return state.stream(work)

    @app.post("/v1/fix")
    async def fix(body: FixRequest, request: Request) -> dict:
        """The verified fix of a file or buffer, as `codeasst fix` makes it; nothing is written."""

        def work(gone: Cancel) -> dict:
            rel, text = state.buffer(body.path, body.text)
            return local.fix(rel, text, line=body.line, client=body.client, cancel=gone)

        return await _in_thread(request, work)

    @app.post("/v1/symbols")
    async def symbols(body: SymbolsRequest, request: Request) -> list[dict]:
        """Definitions by name from the code graph, else by search (an editor's workspace/symbol)."""
        return await _in_thread(request, lambda _gone: local.symbols(body.query, limit=body.limit))

    @app.post("/v1/refs")
    async def refs(body: NameRequest, request: Request) -> list[dict]:
        """A definition's callers and callees from the code graph (`codeasst refs`)."""
        return await _in_thread(request, lambda _gone: local.refs(body.name, limit=body.limit, outline=body.outline))

    @app.post("/v1/definition")
    async def definition(body: NameRequest, request: Request) -> list[dict]:
        """Every definition a name names, with its source (`codeasst mcp`'s definition tool)."""
        return await _in_thread(request, lambda _gone: local.definition(body.name, limit=body.limit))

    @app.get("/v1/status")
    async def status(request: Request) -> dict:
        return await _in_thread(request, lambda _gone: local.status())

    @app.post("/v1/events")
    def event(body: EventRequest) -> dict:
        local.event(body.kind, body.id, body.shown_length, body.accepted_length)
        return {"ok": True}


def _rss_mb() -> float:
    """This process's resident memory, from /proc (Linux), else 0."""
    try:
        with open("/proc/self/statm", encoding="ascii") as fh:
            return round(int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20, 1)
    except (OSError, ValueError, IndexError):
        return 0.0
