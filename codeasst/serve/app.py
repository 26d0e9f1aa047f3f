"""`codeasst serve`: the warm process behind inline completion and fast one-shot commands.

A FastAPI app (OpenAPI at /openapi.json, docs at /docs) on uvicorn, bound to
127.0.0.1 unless told otherwise, with an optional bearer token. The models load
once, at start; between requests on the same file the llama.cpp KV cache keeps
the prompt's common prefix, so a request while typing only evaluates what is new.

- POST /v1/complete: a suggestion at (path, line, col), from the text sent or the
  file on disk. A newer request from the same client ends an older one still
  generating; a suggestion stays valid while the user types its first characters
  (the type-ahead cache answers without the model).
- POST /v1/open: a client opened a file: its prompt is evaluated now, so the first
  suggestion in it finds the prefix cached.
- POST /v1/search, POST /v1/ask (streamed, NDJSON): as the CLI commands.
- POST /v1/events: shown / accepted (with the accepted length) / discarded, stored
  in SQLite for `codeasst stats`.
- GET /v1/health: the repository, model and process.

Malformed requests are 4xx with a one-line `detail`: a bad position 422, a path
outside the repository 403, an ignored file 403, an unknown file 404, text that is
not UTF-8 400, a body over the limit 413.
"""

from __future__ import annotations

import hmac
import json
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, Field

from codeasst.backends.base import LLM
from codeasst.complete.context import RecentFiles
from codeasst.errors import CodeasstError, UsageError
from codeasst.serve.events import EventStore
from codeasst.services import Services

MAX_BODY_BYTES = 4 * 1024 * 1024
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
    k: int | None = Field(None, ge=1, le=100)
    no_llm: bool = False


class AskRequest(BaseModel):
    question: str = Field(min_length=1, max_length=200_000)
    system: Literal["grounded", "baseline"] = Field("grounded", description="As `codeasst ask --system`.")


class EventRequest(BaseModel):
    kind: Literal["shown", "accepted", "discarded"]
    id: str = Field(min_length=1, max_length=200, description="The suggestion's id, from /v1/complete.")
    shown_length: int = Field(0, ge=0, le=1_000_000)
    accepted_length: int = Field(0, ge=0, le=1_000_000)


@dataclass
class _Typed:
    """The last suggestion for one client and file: valid while the user types its first characters."""

    prefix: str
    suffix: str
    text: str
    id: str


@dataclass
class ServerState:
    services: Services
    events: EventStore
    lock: threading.Lock = field(default_factory=threading.Lock)  # one model context: one request at a time
    latest: dict[str, int] = field(default_factory=dict)  # client -> number of its newest request
    typed: dict[tuple[str, str], _Typed] = field(default_factory=dict)
    counter: int = 0
    served: dict[str, int] = field(default_factory=dict)  # route -> requests answered, for /v1/health
    models: dict[str, LLM] = field(default_factory=dict)  # the A/B variants' models, built on first use
    variant_of: OrderedDict[str, str] = field(default_factory=OrderedDict)  # suggestion id -> its variant
    recent: dict[str, RecentFiles] = field(default_factory=dict)  # client -> its ring buffer of files left
    pinned: dict[str, tuple[str, dict]] = field(default_factory=dict)  # client -> (file, other files' context)

    def context(self, client: str, rel: str, text: str, prefix: str, renew: bool) -> dict:
        """Other files' context for `client`'s prompt in `rel`, its cursor after `prefix` ("" when not
        known): kept while the client stays in that file, so that the prompt's start, and its KV cache,
        stay the same while the user types; built again when it opens a file (`renew`) or asks in
        another one."""
        from codeasst.tasks.complete import options_from, other_files

        ring = self.recent.setdefault(client, RecentFiles())
        ring.visit(rel, text, prefix.count("\n") + 1)
        pinned = self.pinned.get(client)
        if renew or pinned is None or pinned[0] != rel:
            context = other_files(self.services.repo.root, text, rel, options_from(self.services), prefix=prefix,
                                  recent=ring.context(rel), max_file_bytes=self.services.settings.index.max_file_bytes)
            pinned = self.pinned[client] = (rel, context)
        return pinned[1]

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

    def remember_variant(self, suggestion_id: str, name: str) -> None:
        self.variant_of[suggestion_id] = name
        while len(self.variant_of) > 10_000:  # ids of suggestions long gone
            self.variant_of.popitem(last=False)


class _BodyLimit:
    """Refuses request bodies over `MAX_BODY_BYTES` (413), declared or streamed."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
            return await _too_large(send)
        seen = 0

        async def limited():
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > MAX_BODY_BYTES:
                raise _TooLarge
            return message

        try:
            return await self.app(scope, limited, send)
        except _TooLarge:
            return await _too_large(send)


class _TooLarge(Exception):
    pass


async def _too_large(send) -> None:
    body = json.dumps({"detail": f"the request body is over {MAX_BODY_BYTES} bytes"}).encode()
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def _resolve(state: ServerState, path: str) -> tuple[Path, str]:
    """The file inside the repository, and its name relative to the root; 403 outside it."""
    root = state.services.repo.root
    target = Path(path) if Path(path).is_absolute() else root / path
    target = Path(os.path.abspath(target))
    try:
        rel = target.relative_to(root).as_posix()
    except ValueError:
        raise HTTPException(403, f"{path} is outside the repository {root}") from None
    if target.is_symlink() and not target.resolve().is_relative_to(root):
        raise HTTPException(403, f"{path} links outside the repository")
    return target, rel


def _read(target: Path, rel: str) -> str:
    if not target.is_file():
        raise HTTPException(404, f"{rel}: no such file")
    try:
        return target.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HTTPException(400, f"{rel}: not UTF-8 text (byte {exc.start})") from None


def create_app(services: Services, token: str | None = None, events: EventStore | None = None) -> FastAPI:
    from codeasst.tasks.complete import complete_at, ignored_reason, options_from, split_at

    state = ServerState(services, events or EventStore.open_default())
    app = FastAPI(title="codeasst", version="1", description=__doc__.split("\n\n")[0])
    app.add_middleware(_BodyLimit)

    def authorized(request: Request) -> None:
        if token is None:
            return
        given = request.headers.get("authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
            raise HTTPException(401, "a bearer token is required", headers={"WWW-Authenticate": "Bearer"})

    @app.exception_handler(CodeasstError)
    async def _codeasst_error(_: Request, exc: CodeasstError) -> JSONResponse:
        status = 422 if isinstance(exc, UsageError) else 500
        return JSONResponse({"detail": str(exc)}, status_code=status)

    @app.get("/v1/health", dependencies=[Depends(authorized)])
    def health() -> dict:
        return {"repo": str(services.repo.root), "model": services.llm.name,
                "complete_model": services.complete_llm.name, "pid": os.getpid(),
                "served": dict(state.served)}

    @app.post("/v1/complete", dependencies=[Depends(authorized)])
    def complete(body: CompleteRequest) -> dict:
        target, rel = _resolve(state, body.path)
        if why := ignored_reason(services, target):
            raise HTTPException(403, why)
        text = (body.text if body.text is not None else _read(target, rel)).replace("\r\n", "\n")
        with state.lock:
            state.counter += 1
            number = state.latest[body.client] = state.counter
        started = time.perf_counter()
        try:
            at = split_at(text, body.line, body.col)
        except UsageError as exc:
            raise HTTPException(422, str(exc)) from None
        if (ahead := _type_ahead(state, body.client, rel, at.prefix, at.suffix)) is not None:
            return {"text": ahead.text, "reason": "", "id": ahead.id, "cached": "type-ahead",
                    "latency_ms": round((time.perf_counter() - started) * 1000, 1)}
        with state.lock:  # the model runs one request at a time; a newer one ends this when it waits
            if state.latest.get(body.client) != number:
                return {"text": "", "reason": "cancelled by a newer request", "id": ""}
            variant, llm = state.variant(number)
            context = state.context(body.client, rel, text, at.prefix, renew=False)
            result = complete_at(services, text, body.line, body.col, rel, options_from(services),
                                 cancelled=lambda: state.latest.get(body.client) != number, llm=llm, context=context)
        suggestion_id = f"{os.getpid()}-{number}"
        state.remember_variant(suggestion_id, variant)
        if result.text:
            state.typed[(body.client, rel)] = _Typed(at.prefix, at.suffix, result.text, suggestion_id)
        return {**result.to_json(), "id": suggestion_id, "model": variant}

    @app.post("/v1/open", dependencies=[Depends(authorized)])
    def opened(body: OpenRequest) -> dict:
        from codeasst.complete.fim import MIDDLE, SUFFIX, fim_prompt

        target, rel = _resolve(state, body.path)
        text = body.text if body.text is not None else _read(target, rel)
        options = options_from(services)
        text = text.replace("\r\n", "\n")
        at = split_at(text, body.line, body.col or 1) if body.line is not None else None
        with state.lock:
            context = state.context(body.client, rel, text, at.prefix if at else "", renew=True)
        if at is not None:
            # The prompt at the cursor, all but the marker after which the model writes.
            prompt = fim_prompt(at.prefix, at.suffix, options, path=rel, **context).removesuffix(MIDDLE)
        else:
            # The file's beginning as a prompt prefix: the first request in it finds it cached
            # (in the PSM layout; in SPM the suffix comes first, so only a cursor helps).
            prompt = fim_prompt(text, "", options, path=rel, **context).split(SUFFIX)[0]
        started = time.perf_counter()
        with state.lock:
            services.complete_llm.load()
            warmed = services.complete_llm.warm(prompt)
        return {"path": rel, "tokens": warmed, "seconds": round(time.perf_counter() - started, 3)}

    @app.post("/v1/search", dependencies=[Depends(authorized)])
    def search(body: SearchRequest) -> dict:
        from codeasst.tasks.search import find, hits_json

        with state.lock:
            result = find(services, body.query, body.k, use_llm=not body.no_llm)
            state.served["search"] = state.served.get("search", 0) + 1
        return {"query": body.query, "hits": hits_json(result.hits), "timings": result.timings}

    @app.post("/v1/ask", dependencies=[Depends(authorized)])
    def ask(body: AskRequest) -> StreamingResponse:
        from codeasst.tasks.ask import ask as run_ask

        state.lock.acquire()
        started = False
        try:
            answer, stream = run_ask(services, body.question, None, system=body.system)
            started = True
            state.served["ask"] = state.served.get("ask", 0) + 1
        finally:
            if not started:  # the stream below releases it once the answer is written
                state.lock.release()

        def lines() -> Iterator[bytes]:
            try:
                for piece in stream:
                    yield (json.dumps({"type": "text", "text": piece}) + "\n").encode()
                yield (json.dumps({"type": "answer", **answer.to_json()}) + "\n").encode()
            finally:
                state.lock.release()

        return StreamingResponse(lines(), media_type="application/x-ndjson")

    @app.post("/v1/events", dependencies=[Depends(authorized)])
    def event(body: EventRequest) -> dict:
        variant = state.variant_of.get(body.id) or services.complete_llm.name  # the model that wrote it
        state.events.record(body.kind, body.id, variant, body.shown_length, body.accepted_length)
        return {"ok": True}

    return app


def _type_ahead(state: ServerState, client: str, rel: str, prefix: str, suffix: str) -> _Typed | None:
    """The rest of the last suggestion, if the user has since typed its first characters."""
    last = state.typed.get((client, rel))
    if last is None or not prefix.startswith(last.prefix) or suffix != last.suffix:
        return None
    typed = prefix[len(last.prefix):]
    if not typed or not last.text.startswith(typed) or len(typed) >= len(last.text):
        return None
    return _Typed(prefix, suffix, last.text[len(typed):], last.id)
