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
  it finds the prefix cached.
- POST /v1/search, POST /v1/ask (NDJSON stream), POST /v1/index (NDJSON progress), GET /v1/status:
  as the CLI commands; while the server runs it owns the repository's index and the CLI comes here.
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
from collections import Counter, OrderedDict
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
from codeasst.errors import CodeasstError, IndexLocked, UsageError
from codeasst.serve.clients import ClientState, ClientTable, Typed
from codeasst.serve.events import EventStore
from codeasst.serve.guard import PathRefused, RequestGuard, guard_path
from codeasst.serve.limits import BodyLimit
from codeasst.serve.queue import Left, ModelQueue
from codeasst.serve.streams import Failed, LineStream, failure
from codeasst.services import Services
from codeasst.tasks.complete import Position, split_at

MAX_TEXT_CHARS = 2_000_000


class CompleteRequest(BaseModel):
    path: str = Field(min_length=1, max_length=4096, description="The file, relative to the repository root.")
    line: int = Field(ge=1, description="Cursor line, 1-based.")
    col: int = Field(ge=1, description="Cursor column, 1-based, in characters.")
    text: str | None = Field(None, max_length=MAX_TEXT_CHARS, description="The buffer; the file on disk if unset.")
    client: str = Field("default", max_length=200, description="Who asks: a newer request cancels its older one.")


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
    models: dict[str, LLM] = field(default_factory=dict)  # the A/B variants' models, built on first use
    askers: dict[str, Services] = field(default_factory=dict)  # ask --model NAME: services on that model
    variant_of: OrderedDict[str, str] = field(default_factory=OrderedDict)  # suggestion id -> its variant
    started: float = field(default_factory=time.time)

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

    def context(self, client: ClientState, rel: str, text: str, prefix: str, renew: bool) -> dict:
        """Other files' context for `client`'s prompt in `rel`, its cursor after `prefix` ("" when not
        known): kept while the client stays in that file, so that the prompt's start, and its KV cache,
        stay the same while the user types; built again when it opens a file (`renew`) or asks in
        another one."""
        from codeasst.tasks.complete import options_from, other_files

        client.recent.visit(rel, text, prefix.count("\n") + 1)
        if renew or client.pinned is None or client.pinned[0] != rel:
            context = other_files(self.services.repo.root, text, rel, options_from(self.services), prefix=prefix,
                                  recent=client.recent.context(rel),
                                  max_file_bytes=self.services.settings.index.max_file_bytes)
            client.pinned = (rel, context)
        return client.pinned[1]

    def variant(self, number: int) -> tuple[str, LLM]:
        """The model that answers request `number`: complete.model, or the A/B variants in turn."""
        names = self.services.settings.complete.variants
        if not names:
            return self.services.complete_llm.name, self.services.complete_llm
        name = names[number % len(names)]
        if name not in self.models:
            from codeasst.models import build_llm, resolve

            spec = resolve(self.services.settings, name)
            if spec == self.services.complete_spec:
                self.models[name] = self.services.complete_llm
            elif spec == self.services.model_spec:
                self.models[name] = self.services.llm
            else:
                self.models[name] = build_llm(spec, self.services.settings)
        return name, self.models[name]

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

    def remember_variant(self, suggestion_id: str, name: str) -> None:
        self.variant_of[suggestion_id] = name
        while len(self.variant_of) > 10_000:  # ids of suggestions long gone
            self.variant_of.popitem(last=False)


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


def _position(text: str, line: int, col: int) -> Position:
    try:
        return split_at(text, line, col)
    except UsageError as exc:
        raise Failed(422, str(exc)) from None


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
    from codeasst.complete.fim import Suggestion
    from codeasst.tasks.complete import complete_at, options_from, silence_reason

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
        number = next(state.numbers)
        started = time.perf_counter()
        at = _position(text, body.line, body.col)
        known = state.clients.peek(body.client)
        if known is not None and (ahead := _type_ahead(known, rel, at.prefix, at.suffix)) is not None:
            known.latest = number  # what it still waits for is stale now
            return {"text": ahead.text, "reason": "", "id": ahead.id, "cached": "type-ahead",
                    "latency_ms": round((time.perf_counter() - started) * 1000, 1)}
        if why := silence_reason(at, rel, options_from(services)):  # no need to wait for the model's turn
            if known is not None:
                known.latest = number
            state.served["complete"] += 1
            return {**Suggestion("", reason=why).to_json(), "id": ""}
        with state.clients.hold(body.client) as client:
            client.latest = number

            def superseded() -> bool:
                return client.latest != number or gone.is_set() or state.stopping

            variant, llm = state.variant(number)
            try:
                with state.queue_for(llm).turn(body.client, cancelled=superseded):
                    llm.switch(body.client, cfg.kv_slots)
                    context = state.context(client, rel, text, at.prefix, renew=False)
                    result = complete_at(services, text, body.line, body.col, rel, options_from(services),
                                         cancelled=superseded, llm=llm, context=context)
            except Left:
                return {"text": "", "reason": "cancelled by a newer request", "id": ""}
            suggestion_id = f"{os.getpid()}-{number}"
            state.remember_variant(suggestion_id, variant)
            if result.text:
                client.typed = Typed(rel, at.prefix, at.suffix, result.text, suggestion_id)
            client.trim(cfg.max_client_chars)
        state.served["complete"] += 1
        return {**result.to_json(), "id": suggestion_id, "model": variant}

    @app.post("/v1/open")
    async def opened(body: OpenRequest, request: Request) -> dict:
        return await _in_thread(request, lambda gone: open_in(body, gone))

    def open_in(body: OpenRequest, gone: threading.Event) -> dict:
        from codeasst.complete.fim import MIDDLE, SUFFIX, fim_prompt, request

        rel, text = _buffer(state, body.path, body.text)
        at = _position(text, body.line, body.col or 1) if body.line is not None else None
        number = next(state.numbers)
        started = time.perf_counter()
        llm = services.complete_llm
        options = options_from(services)
        with state.clients.hold(body.client) as client:
            client.latest = number

            def superseded() -> bool:
                return client.latest != number or gone.is_set() or state.stopping

            try:
                with state.queue_for(llm).turn(body.client, cancelled=superseded):
                    llm.load()
                    llm.switch(body.client, cfg.kv_slots)
                    context = state.context(client, rel, text, at.prefix if at else "", renew=True)
                    if at is not None:
                        # The prompt at the cursor as complete() asks it, all but the marker after which
                        # the model writes.
                        asked = request(llm, at.prefix, at.suffix, options)
                        prompt = fim_prompt(asked.prefix, at.suffix, asked.options, path=rel,
                                            **context).removesuffix(MIDDLE)
                    else:
                        # The file's beginning as a prompt prefix: the first request in it finds it cached
                        # (in the PSM layout; in SPM the suffix comes first, so only a cursor helps).
                        prompt = fim_prompt(text, "", options, path=rel, **context).split(SUFFIX)[0]
                    warmed = llm.warm(prompt, cancelled=superseded)  # a newer request stops it between batches
            except Left:
                return {"path": rel, "tokens": 0, "seconds": 0.0, "reason": "cancelled by a newer request"}
            client.trim(cfg.max_client_chars)
        state.served["open"] += 1
        return {"path": rel, "tokens": warmed, "seconds": round(time.perf_counter() - started, 3)}

    @app.post("/v1/search")
    async def search(body: SearchRequest, request: Request) -> dict:
        return await _in_thread(request, lambda gone: search_in(body, gone))

    def search_in(body: SearchRequest, gone: threading.Event) -> dict:
        from codeasst.tasks.search import find, hits_json

        def run() -> dict:
            result = find(state.asker(body.model), body.query, body.k, use_llm=not body.no_llm, context=body.context)
            return {"query": body.query, "hits": hits_json(result.hits), "timings": result.timings,
                    "notes": result.notes, "index": result.index.to_json() if result.index else None,
                    "dense": result.dense}

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

    @app.get("/v1/status")
    async def status(request: Request) -> dict:
        from codeasst.tasks.search import index_status

        return await _in_thread(request, lambda _gone: index_status(services))

    @app.post("/v1/events")
    def event(body: EventRequest) -> dict:
        variant = state.variant_of.get(body.id) or services.complete_llm.name  # the model that wrote it
        state.events.record(body.kind, body.id, variant, body.shown_length, body.accepted_length)
        return {"ok": True}

    return app


def _type_ahead(client: ClientState, rel: str, prefix: str, suffix: str) -> Typed | None:
    """The rest of the client's last suggestion, if the user has since typed its first characters."""
    last = client.typed
    if last is None or last.rel != rel or not prefix.startswith(last.prefix) or suffix != last.suffix:
        return None
    typed = prefix[len(last.prefix):]
    if not typed or not last.text.startswith(typed) or len(typed) >= len(last.text):
        return None
    return Typed(rel, prefix, suffix, last.text[len(typed):], last.id)


def _rss_mb() -> float:
    """This process's resident memory, from /proc (Linux), else 0."""
    try:
        with open("/proc/self/statm", encoding="ascii") as fh:
            return round(int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20, 1)
    except (OSError, ValueError, IndexError):
        return 0.0
