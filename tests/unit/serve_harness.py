"""`codeasst serve` for tests: the app on a real 127.0.0.1 listener (uvicorn in a thread) with a
scripted model, and, as `python -m tests.unit.serve_harness REPO`, a real serve process on a
scripted model that takes a second a token (the tests of stopping)."""

from __future__ import annotations

import http.client
import json
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import uvicorn

from codeasst.backends.base import GenerationParams, Token
from codeasst.backends.fake import HashingEmbedder, ScriptedLLM
from codeasst.services import build_services
from codeasst.wire.events import EventStore


class SlowLLM(ScriptedLLM):
    """A scripted model that takes `delay` seconds a token, and says when it stopped."""

    def __init__(self, replies: list[str], delay: float) -> None:
        super().__init__(replies)
        self.delay = delay
        self.stopped = threading.Event()

    def stream(self, prompt: str, params: GenerationParams) -> Iterator[Token]:
        try:
            for token in super().stream(prompt, params):
                time.sleep(self.delay)
                yield token
        finally:
            self.stopped.set()


TOKEN = "guard-test-token"


@contextmanager
def listening(services, token: str | None = TOKEN) -> Iterator[tuple[int, object]]:
    """The app on a free 127.0.0.1 port, served by uvicorn in a thread; yields (port, its state)."""
    from codeasst.serve.app import create_app

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = create_app(services, token, EventStore(services.repo.root.parent / "events.sqlite"), port=port)
    server = uvicorn.Server(uvicorn.Config(app, log_level="critical", timeout_graceful_shutdown=1))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.time() + 20
    while not server.started and time.time() < deadline:
        time.sleep(0.02)
    try:
        yield port, app.state.codeasst
    finally:
        app.state.codeasst.stop()
        server.should_exit = True
        thread.join(10)


def request(port: int, method: str, route: str, payload: dict | None = None, *, token: str | None = TOKEN,
            headers: dict | None = None, timeout: float = 30) -> tuple[int, dict]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    sent = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {}),
            **(headers or {})}
    connection.request(method, route, json.dumps(payload) if payload is not None else None, sent)
    response = connection.getresponse()
    body = response.read()
    connection.close()
    return response.status, json.loads(body) if body.startswith(b"{") else {"raw": body.decode()}


def services_for(root, llm=None):
    return build_services(root, embedder=HashingEmbedder(), llm=llm or ScriptedLLM(["return a + b"] * 20))


if __name__ == "__main__":
    from codeasst.serve.run import run_server

    services = build_services(Path(sys.argv[1]), embedder=HashingEmbedder(),
                              llm=SlowLLM(["return a + b + 0 + 0 + 0"] * 20, delay=1.0))
    run_server(services, host="127.0.0.1", port=0, token=None, no_token=False,
               note=lambda message: print(message, file=sys.stderr))
