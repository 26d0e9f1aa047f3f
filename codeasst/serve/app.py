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
import itertools
import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

import anyio.to_thread
from fastapi import FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from codeasst.backends.base import LLM
from codeasst.errors import CodeasstError, IndexLocked
from codeasst.serve.clients import ClientTable
from codeasst.serve.completion import Completions
from codeasst.serve.events import EventStore
from codeasst.serve.guard import PathRefused, RequestGuard, guard_path
from codeasst.serve.limits import BodyLimit
from codeasst.serve.queue import ModelQueue
from codeasst.serve.streams import Failed, LineStream, failure
from codeasst.services import Services

MAX_TEXT_CHARS = 2_000_000


class CompleteRequest(BaseModel):
    path: str = Field(min_length=1, max_length=4096, description="The file, relative to the repository root.")
    line: int = Field(ge=1, description="Cursor line, 1-based.")
    col: int = Field(ge=1, description="Cursor column, 1-based, in characters.")
    text: str | None = Field(None, max_length=MAX_TEXT_CHARS, description="The buffer; the file on disk if unset.")
    client: str = Field("default", max_length=200, description="Who asks: a newer request cancels its older one.")
    trigger: Literal["auto", "invoked"] = Field("auto", description="invoked: the user asked (a key press); "
                                                "complete.invoked_model answers it where set.")


class OpenRequest(BaseModel):
    path: str = Field(min_length=1, max_length=4096)
    text: str | None = Field(None, max_length=MAX_TEXT_CHARS)
    line: int | None = Field(None, ge=1, description="The cursor, if known: its prompt is warmed as a whole.")
    col: int | None = Field(None, ge=1)
    client: str = Field("default", max_length=200, description="As in /v1/complete: whose session this is.")


class SearchRequest(BaseModel):
    query: str = Field(min_length=1, max_length=200_000)
    k: int | None = Field(None, ge=1, le=200)
    no_llm: bool = False
    context: str | None = Field(None, max_length=MAX_TEXT_CHARS, description="Piped text, as `... | codeasst search`.")
    model: str | None = Field(None, max_length=4096, description="As `codeasst search --model`.")
    client: str = Field("cli", max_length=200)


class AskRequest(BaseModel):
    question: str = Field(min_length=1, max_length=200_000)
    system: Literal["checked", "grounded", "baseline"] = Field("checked", description="As `codeasst ask --system`.")
    context: str | None = Field(None, max_length=MAX_TEXT_CHARS, description="Piped text, as `... | codeasst ask`.")
    history: list[tuple[str, str]] = Field([], max_length=50, description="Earlier (question, answer) turns (chat).")
    model: str | None = Field(None, max_length=4096, description="As `codeasst ask --model`: loaded once, then kept.")
    client: str = Field("cli", max_length=200)


class IndexRequest(BaseModel):
    rebuild: bool = False


class EventRequest(BaseModel):
    kind: Literal["shown", "accepted", "discarded"]
    id: str = Field(min_length=1, max_length=200, description="The suggestion's id, from /v1/complete.")
    shown_length: int = Field(0, ge=0, le=1_000_000)
    accepted_length: int = Field(0, ge=0, le=1_000_000)


class FixRequest(BaseModel):
    path: str = Field(min_length=1, max_length=4096)
    text: str | None = Field(None, max_length=MAX_TEXT_CHARS, description="The buffer; the file on disk if unset.")
    line: int | None = Field(None, ge=1, description="Only the changes at this line (an editor's \"fix this\").")
    client: str = Field("cli", max_length=200)


class SymbolsRequest(BaseModel):
    query: str = Field(max_length=2000)
    limit: int = Field(50, ge=1, le=500)


@dataclass
class ServerState:
    services: Services
    events: EventStore
    clients: ClientTable
    queue_size: tuple[int, float] = (32, 60.0)  # serve.max_queue, serve.queue_timeout_s
    queues: dict[int, tuple[str, ModelQueue]] = field(default_factory=dict)  # id of a model -> its queue
    stopping: bool = False
    numbers: itertools.count = field(default_factory=lambda: itertools.count(1))
    served: Counter = field(default_factory=Counter)  # route -> requests answered, for /v1/health
    streams: Counter = field(default_factory=Counter)  # how streams ended: done, client gone, slow reader...
    askers: dict[str, Services] = field(default_factory=dict)  # ask --model NAME: services on that model
    started: float = field(default_factory=time.time)
    completions: Completions = field(init=False)

    def __post_init__(self) -> None:
        self.completions = Completions(self.services, self.clients, self.queue_for, lambda: self.stopping,
                                       lambda: next(self.numbers), self.served)

    def queue_for(self, llm: LLM) -> ModelQueue:
        """The queue of one model context: one request at a time in each (the server's completions
        have a context of their own, so they never wait behind an answer being written)."""
        if id(llm) not in self.queues:
            queue = ModelQueue(*self.queue_size)
            if self.stopping:
                queue.stop()
            role = "complete" if llm is self.services.complete_llm and llm is not self.services.llm else "ask"
            self.queues[id(llm)] = (f"{llm.name} ({role})", queue)
        return self.queues[id(llm)][1]

    def depth(self) -> list[dict]:
        return [{"model": name, **queue.depth()} for name, queue in self.queues.values()]

    def stop(self) -> None:
        """Wake every waiter and end every generation at its next token (SIGTERM, SIGINT)."""
        self.stopping = True
        for _, queue in list(self.queues.values()):
            queue.stop()

    def asker(self, model: str | None) -> Services:
        """The services that answer `ask --model MODEL`: the server's own, or a copy on that model
        sharing its embedder and index, built once."""
        if model is None:
            return self.services
        if model not in self.askers:
            copy = replace(self.services, model_choice=model, _llm=None, _embedder=self.services.embedder)
            _ = copy.model_spec  # an unknown name fails here, as a 422
            self.askers[model] = copy
        return self.askers[model]


def _read(target: Path, rel: str) -> str:
    if not target.is_file():
        raise Failed(404, f"{rel}: no such file")
    try:
        return target.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Failed(400, f"{rel}: not UTF-8 text (byte {exc.start})") from None


def _buffer(state: ServerState, path: str, text: str | None) -> tuple[str, str]:
    """The file a request names, relative to the root (guard_path decides whether it may be read),
    and its text: the buffer sent, or the file on disk."""
    try:
        target, rel = guard_path(state.services.repo.root, path)
    except PathRefused as exc:
        raise Failed(exc.status, str(exc)) from None
    return rel, (text if text is not None else _read(target, rel)).replace("\r\n", "\n")


async def _in_thread(request: Request, work: Callable[[threading.Event], object]) -> object:
    """`work(gone)` in a worker thread; `gone` is set when the client disconnects, so work that
    waits for the model, or generates, can stop for nobody."""
    gone = threading.Event()

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
    state = ServerState(services, events or EventStore.open_default(), ClientTable(cfg.max_clients, cfg.max_client_chars),
                        (cfg.max_queue, cfg.queue_timeout_s))
    for llm in (services.complete_llm, services.llm):  # known from the start, for /v1/health
        state.queue_for(llm)
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

    @app.get("/v1/health")
    def health() -> dict:
        return {"repo": str(services.repo.root), "model": services.llm.name,
                "complete_model": services.complete_llm.name, "pid": os.getpid(),
                "served": dict(state.served), "queues": state.depth(), "streams": dict(state.streams),
                "clients": {"kept": len(state.clients), "forgotten": state.clients.forgotten,
                            "chars": state.clients.held_chars(), "max": cfg.max_clients},
                "uptime_s": round(time.time() - state.started, 1), "rss_mb": _rss_mb()}

    @app.post("/v1/complete")
    async def complete(body: CompleteRequest, request: Request) -> dict:
        return await _in_thread(request, lambda gone: complete_in(body, gone))

    def complete_in(body: CompleteRequest, gone: threading.Event) -> dict:
        rel, text = _buffer(state, body.path, body.text)
        return state.completions.complete(rel, text, body.line, body.col, body.client, gone, trigger=body.trigger)

    @app.post("/v1/open")
    async def opened(body: OpenRequest, request: Request) -> dict:
        return await _in_thread(request, lambda gone: open_in(body, gone))

    def open_in(body: OpenRequest, gone: threading.Event) -> dict:
        rel, text = _buffer(state, body.path, body.text)
        return state.completions.open(rel, text, body.line, body.col, body.client, gone)

    @app.post("/v1/search")
    async def search(body: SearchRequest, request: Request) -> dict:
        return await _in_thread(request, lambda gone: search_in(body, gone))

    def search_in(body: SearchRequest, gone: threading.Event) -> dict:
        from codeasst.tasks.search import search_reply

        def run() -> dict:
            return search_reply(state.asker(body.model), body.query, body.k, use_llm=not body.no_llm,
                                context=body.context)

        if body.no_llm:  # retrieval alone needs no turn of the model
            reply = run()
        else:
            with state.queue_for(state.asker(body.model).llm).turn(body.client, cancelled=gone.is_set):
                reply = run()
        state.served["search"] += 1
        return reply

    @app.post("/v1/ask")
    def ask(body: AskRequest) -> LineStream:
        from codeasst.tasks.ask import ask as run_ask

        def work(emit: Callable[[dict], None], gone: threading.Event) -> None:
            asker = state.asker(body.model)
            with state.queue_for(asker.llm).turn(body.client, cancelled=gone.is_set):
                answer, stream = run_ask(asker, body.question, body.context, system=body.system,
                                         history=[tuple(turn) for turn in body.history])
                try:
                    for note in answer.retrieval.notes:
                        emit({"type": "note", "text": note})
                    for piece in stream:
                        if piece or gone.is_set():  # an empty piece: a turn to notice a client gone
                            emit({"type": "text", "text": piece})
                finally:
                    stream.close()  # the model stops where it is; the turn passes on
            state.served["ask"] += 1
            emit({"type": "answer", **answer.to_json()})

        return LineStream(work, max_bytes=cfg.stream_buffer_bytes, stopping=lambda: state.stopping,
                          on_end=lambda why: state.streams.update([why]))

    @app.post("/v1/index")
    def index(body: IndexRequest) -> LineStream:
        """Bring the index up to date here, in the process that owns it; progress as it goes."""

        def work(emit: Callable[[dict], None], gone: threading.Event) -> None:
            class Progress:
                def start(self, files: int) -> None:
                    emit_quietly({"type": "start", "files": files})

                def advance(self, files: int = 0, chunks: int = 0) -> None:
                    emit_quietly({"type": "advance", "files": files, "chunks": chunks})

                def start_embedding(self, chunks: int) -> None:
                    emit_quietly({"type": "embedding", "chunks": chunks})

                def embedded(self, chunks: int) -> None:
                    emit_quietly({"type": "embedded", "chunks": chunks})

            def emit_quietly(item: dict) -> None:
                # The run goes on if its client leaves: a finished index is worth having, and
                # stopping half-way would only leave the next run more to do.
                if not gone.is_set():
                    emit(item)

            deadline = time.monotonic() + cfg.queue_timeout_s
            while True:
                try:
                    summary = services.indexer(Progress()).run(rebuild=body.rebuild, verify=True)
                    break
                except IndexLocked:  # a search here is updating it: wait for that, then do the rest
                    if time.monotonic() > deadline or state.stopping:
                        raise
                    time.sleep(0.2)
            state.served["index"] += 1
            if not gone.is_set():
                emit({"type": "summary", **summary.to_json()})

        return LineStream(work, max_bytes=cfg.stream_buffer_bytes, stopping=lambda: state.stopping,
                          on_end=lambda why: state.streams.update([why]))

    @app.post("/v1/fix")
    async def fix(body: FixRequest, request: Request) -> dict:
        """The verified fix of a file or buffer, as `codeasst fix` makes it; nothing is written."""
        from codeasst.tasks.fix import fix_buffer

        def work(gone: threading.Event) -> dict:
            rel, text = _buffer(state, body.path, body.text)
            with state.queue_for(services.llm).turn(body.client, cancelled=gone.is_set):
                result = fix_buffer(services, services.repo.root / rel, text, line=body.line)
            state.served["fix"] += 1
            return {**result.to_json(), "text": result.fixed}

        return await _in_thread(request, work)

    @app.post("/v1/symbols")
    async def symbols(body: SymbolsRequest, request: Request) -> list[dict]:
        """Definitions by name from the code graph, else by search (an editor's workspace/symbol)."""
        from codeasst.tasks.refs import symbols as find_symbols

        return await _in_thread(request, lambda _gone: find_symbols(services, body.query, limit=body.limit))

    @app.get("/v1/status")
    async def status(request: Request) -> dict:
        from codeasst.tasks.search import index_status

        return await _in_thread(request, lambda _gone: index_status(services))

    @app.post("/v1/events")
    def event(body: EventRequest) -> dict:
        variant = state.completions.variant_named(body.id)  # the model that wrote it
        state.events.record(body.kind, body.id, variant, body.shown_length, body.accepted_length)
        return {"ok": True}

    return app


def _rss_mb() -> float:
    """This process's resident memory, from /proc (Linux), else 0."""
    try:
        with open("/proc/self/statm", encoding="ascii") as fh:
            return round(int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20, 1)
    except (OSError, ValueError, IndexError):
        return 0.0
