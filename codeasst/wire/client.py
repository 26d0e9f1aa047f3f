"""The one way codeasst talks to a running `codeasst serve`: the CLI's forwarded commands and the chat.

Requests go over `http.client` to the address in the server's discovery record and nowhere else:
no proxy (`http_proxy` would send the code and the token to it), no redirect, and the token only
ever goes to that address. `ServerClient.find(root)` is None when no server runs for the
repository; a server that cannot be reached mid-way raises `Unreachable`, and one that answers
with an error raises `ServerError`, which carries the exit code the command would have had alone.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

from codeasst.errors import CodeasstError
from codeasst.wire import discovery


class Cancel:
    """Set from any thread to end a request in flight: a served one has its connection closed (the
    server notices and stops its work), local work is asked `is_set` between tokens."""

    def __init__(self, event: threading.Event | None = None) -> None:
        """`event`: one that someone else sets (a server's "the client left"), read by is_set; only
        set() runs the hooks."""
        self._event = event or threading.Event()
        self._lock = threading.Lock()
        self._hooks: list[Callable[[], None]] = []

    def is_set(self) -> bool:
        return self._event.is_set()

    def set(self) -> None:
        with self._lock:
            self._event.set()
            hooks, self._hooks = self._hooks, []
        for hook in hooks:
            hook()

    def on_set(self, hook: Callable[[], None]) -> None:
        with self._lock:
            if not self._event.is_set():
                self._hooks.append(hook)
                return
        hook()


def _hang_up(connection: http.client.HTTPConnection) -> None:
    with contextlib.suppress(OSError):
        if connection.sock is not None:
            connection.sock.shutdown(socket.SHUT_RDWR)


class Unreachable(CodeasstError):
    """The server's record is there but nothing answers at its address."""


class ServerError(CodeasstError):
    """The server answered with an error; `status` is its HTTP status."""

    def __init__(self, status: int, detail: str, exit_code: int | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.exit_code = exit_code if exit_code is not None else (2 if 400 <= status < 500 and status != 429 else 1)


class ServerClient:
    def __init__(self, server: discovery.Server) -> None:
        self.server = server
        parts = urlsplit(server.url)
        if parts.scheme != "http" or not parts.hostname or not parts.port:
            raise Unreachable(f"the server record names {server.url!r}, not http://HOST:PORT")
        self.host = parts.hostname
        self.port = parts.port

    @classmethod
    def find(cls, root: Path) -> ServerClient | None:
        server = discovery.find(root)
        if server is None:
            return None
        try:
            return cls(server)
        except Unreachable:
            return None

    @property
    def url(self) -> str:
        return self.server.url

    def _send(self, method: str, route: str, payload: dict | None, timeout: float,
              cancel: Cancel | None = None) -> http.client.HTTPResponse:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.server.token:
            headers["Authorization"] = f"Bearer {self.server.token}"
        body = json.dumps(payload).encode() if payload is not None else None
        connection = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        if cancel is not None:
            cancel.on_set(lambda: _hang_up(connection))
        try:
            connection.request(method, route, body=body, headers=headers)
            return connection.getresponse()
        except OSError as exc:
            connection.close()
            raise Unreachable(f"codeasst serve at {self.url} did not answer: {exc}") from None

    @staticmethod
    def _failed(response: http.client.HTTPResponse) -> ServerError:
        try:
            data = json.loads(response.read())
        except (OSError, ValueError):
            data = {}
        detail = data.get("detail") if isinstance(data, dict) else None
        return ServerError(response.status, str(detail or f"the server answered {response.status} {response.reason}"),
                           data.get("exit_code") if isinstance(data, dict) else None)

    def call(self, method: str, route: str, payload: dict | None = None, timeout: float = 300.0,
             cancel: Cancel | None = None) -> dict | list:
        """The JSON body of a 200 answer; ServerError for any other, Unreachable for none (or a request
        `cancel`led: its connection is closed, and the server stops the work for it)."""
        response = self._send(method, route, payload, timeout, cancel)
        try:
            if response.status != 200:
                raise self._failed(response)
            try:
                return json.loads(response.read())
            except (OSError, ValueError) as exc:
                raise Unreachable(f"codeasst serve at {self.url} broke off its answer: {exc}") from None
        finally:
            response.close()

    def lines(self, route: str, payload: dict, timeout: float = 600.0) -> Iterator[dict]:
        """The lines of an NDJSON answer as they come; an error line raises ServerError."""
        response = self._send("POST", route, payload, timeout)
        if response.status != 200:
            error = self._failed(response)
            response.close()
            raise error
        return self._read_lines(response)

    def _read_lines(self, response: http.client.HTTPResponse) -> Iterator[dict]:
        with response:
            try:
                for raw in response:
                    if not raw.strip():
                        continue
                    line = json.loads(raw)
                    if line.get("type") == "error":
                        raise ServerError(int(line.get("status", 500)), str(line.get("detail")), line.get("exit_code"))
                    yield line
            except (OSError, ValueError, http.client.HTTPException) as exc:
                raise Unreachable(f"codeasst serve at {self.url} broke off its answer: {exc}") from None

    # The routes, as the commands use them.

    def search(self, query: str, k: int | None, no_llm: bool, context: str | None = None,
               model: str | None = None, *, roles: list[str] | None = None, path: str | None = None) -> dict:
        return self.call("POST", "/v1/search", {"query": query, "k": k, "no_llm": no_llm, "context": context,
                                                "model": model, "roles": roles or [], "path": path})

    def ask(self, question: str, *, system: str = "checked", context: str | None = None,
            history: list[tuple[str, str]] | None = None, model: str | None = None, client: str = "cli") -> Iterator[dict]:
        return self.lines("/v1/ask", {"question": question, "system": system, "context": context,
                                      "history": history or [], "model": model, "client": client})

    def complete(self, path: str, line: int, col: int, text: str, client: str = "cli",
                 cancel: Cancel | None = None, trigger: str = "auto") -> dict:
        return self.call("POST", "/v1/complete", {"path": path, "line": line, "col": col, "text": text,
                                                  "client": client, "trigger": trigger}, cancel=cancel)

    def index(self, rebuild: bool = False, vectors: bool = True, wait: bool = True) -> Iterator[dict]:
        return self.lines("/v1/index", {"rebuild": rebuild, "vectors": vectors, "wait": wait}, timeout=3600.0)

    def status(self) -> dict:
        return self.call("GET", "/v1/status")

    def health(self) -> dict:
        return self.call("GET", "/v1/health", timeout=30.0)

    def open(self, path: str, text: str | None, line: int | None = None, col: int | None = None,
             client: str = "cli") -> dict:
        return self.call("POST", "/v1/open", {"path": path, "text": text, "line": line, "col": col, "client": client})

    def fix(self, path: str, text: str | None = None, line: int | None = None, client: str = "cli") -> dict:
        return self.call("POST", "/v1/fix", {"path": path, "text": text, "line": line, "client": client})

    def refs(self, name: str, limit: int = 50, outline: bool = False) -> list[dict]:
        return self.call("POST", "/v1/refs", {"name": name, "limit": limit, "outline": outline})

    def definition(self, name: str, limit: int = 20) -> list[dict]:
        return self.call("POST", "/v1/definition", {"name": name, "limit": limit})

    def symbols(self, query: str, limit: int = 50) -> list[dict]:
        return self.call("POST", "/v1/symbols", {"query": query, "limit": limit})

    def event(self, kind: str, suggestion_id: str, shown_length: int = 0, accepted_length: int = 0) -> dict:
        return self.call("POST", "/v1/events", {"kind": kind, "id": suggestion_id, "shown_length": shown_length,
                                                "accepted_length": accepted_length}, timeout=30.0)
