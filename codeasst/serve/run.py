"""Starting and stopping `codeasst serve`: the token, the socket, the index it owns, the record
that lets clients find it, and a stop within seconds on SIGTERM or SIGINT whatever is in flight."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import sys
import threading
from collections.abc import Callable

from codeasst.access import background
from codeasst.errors import IndexLocked, UsageError
from codeasst.index import owner, worker
from codeasst.serve.guard import is_loopback
from codeasst.services import Services
from codeasst.wire import discovery


def choose_token(host: str, token: str | None, no_token: bool) -> str | None:
    """The token requests must carry: the one given, none (`--no-token`, loopback only), or a new random one."""
    if no_token and token:
        raise UsageError("--no-token and --token (or CODEASST_SERVE_TOKEN) contradict each other")
    if no_token:
        if not is_loopback(host):
            raise UsageError(f"--no-token is refused on {host}: a server reachable from other machines needs a token")
        return None
    return token or secrets.token_urlsafe(32)


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    # Listening before the announcement: a client that finds the server at once is queued until
    # uvicorn accepts, not refused (it would fall back to loading the models itself).
    sock.listen(2048)
    return sock


def run_server(services: Services, *, host: str, port: int, token: str | None, no_token: bool,
               note: Callable[[str], None]) -> None:
    import uvicorn

    from codeasst.serve.app import create_app

    token = choose_token(host, token, no_token)
    running = discovery.find(services.repo.root)
    if running is not None:
        raise IndexLocked(f"codeasst serve is already running for {services.repo.root} at {running.url} "
                          f"(pid {running.pid})", hint="stop it first, or use it")
    index_dir = services.repo.index_dir
    # The server embeds in the background itself (access/background.py): a background embedder that
    # `codeasst index` left running stops at its next batch, keeping what it did, and lets go of the store.
    worker.stop(index_dir)
    if not services.settings.store.chroma_url:
        owner.own(index_dir, on_wait=lambda: note("another codeasst process (index, search, ask or chat) has this "
                                                  "repository's index open; waiting for it to finish"))
    services.serving = True
    services.llm.load()
    services.complete_llm.load()
    if services.ask_llm is not None:
        services.ask_llm.load()
    sock = _listen(host, port)
    bound = sock.getsockname()[1]
    app = create_app(services, token, port=bound, bound=host)
    state = app.state.codeasst
    background.start(state.assistant, lambda: state.stopping)  # vectors for what the lexical phase left waiting
    # Clients connect over loopback when the server listens on every interface.
    connect = "127.0.0.1" if host == "0.0.0.0" else "::1" if host == "::" else host
    url = f"http://{'[' + connect + ']' if ':' in connect else connect}:{bound}"
    # Built before "serving" is said: configuring logging is no place for a Ctrl-C to land (a SIGINT
    # there left logging's lock half-released: RuntimeError instead of exit 130).
    shutdown_s = services.settings.serve.shutdown_s
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=max(0.5, shutdown_s))
    record = discovery.announce(services.repo.root, url, token)
    models = (services.llm.name if services.complete_llm is services.llm
              else f"{services.llm.name}, completions in a context of their own"
              if services.complete_llm.name == services.llm.name
              else f"{services.llm.name}, completing with {services.complete_llm.name}")
    if services.ask_llm is not services.llm:
        models += f", answering with {services.ask_llm.name if services.ask_llm else 'no model (ask.model none, or auto with no GPU)'}"
    note(f"serving {services.repo.root} on {url} (model {models}; OpenAPI at {url}/docs)")
    if token is None:
        note("no token: any program of any user on this machine may read the code through the server")
    else:
        note(f"requests need the bearer token in {record} (codeasst serve --info --json prints it)")
    if not is_loopback(host):
        note(f"listening on {host}: other machines can reach the server; each request needs the token")

    class Server(uvicorn.Server):
        def handle_exit(self, sig, frame) -> None:
            if not self.should_exit:
                _stopping(state, shutdown_s)
            super().handle_exit(sig, frame)

    server = Server(config)
    previous = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        server.run(sockets=[sock])
    finally:
        signal.signal(signal.SIGTERM, previous)
        state.close()
        discovery.withdraw(record)
        owner.release(index_dir)


def _exit_on_sigterm(_signum, _frame) -> None:
    # uvicorn raises the signal again once it has stopped; ending here lets the cleanup above run.
    sys.exit(0)


def _stopping(state, shutdown_s: float) -> None:
    """The first SIGTERM or SIGINT: end every wait and generation now, and make sure the process
    is gone a little after uvicorn's grace period even if some thread is stuck."""
    state.stop()

    def deadline() -> None:
        threading.Event().wait(shutdown_s + 5)
        os._exit(1)

    threading.Thread(target=deadline, name="codeasst-stop-deadline", daemon=True).start()
