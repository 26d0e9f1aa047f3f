"""`codeasst lsp`: the Language Server Protocol over stdio, a thin client of `codeasst serve`.

It joins the repository's running server (found as `codeasst serve --info --json` finds it) or starts
one (session.py), and goes through the one way in every front end uses (codeasst.access); the models,
the gate, the cut, the KV cache and the events' store stay in the server. pygls 2 (with lsprotocol)
speaks the protocol: incremental document sync, async handlers, `$/cancelRequest`. One module a feature,
each registering its handlers (they get the server, and through it the shared State, as `ls`):

- sync.py: text document sync; an opened file's prompt is warmed in the server.
- completion.py: textDocument/inlineCompletion and textDocument/completion, one item, the suggestion.
- commands.py: codeasst.accept and codeasst.discard, and the timer that counts an unanswered one discarded.
- lint.py: flake8 diagnostics and the code actions that fix them (codeasst.fixLine, codeasst.fixFile).
- symbols.py: workspace/symbol and the command codeasst.ask.
- protocol.py: the JSON-RPC faults pygls would only log, answered.

Bad input (a file outside the repository or ignored, a position past the end, a document never
opened, a server gone) is an empty result or an LSP error, and a line on stderr; never a crash.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Callable
from pathlib import Path

from lsprotocol import types as lsp

from codeasst.lsp import commands, completion, lint, symbols, sync
from codeasst.lsp.session import Session
from codeasst.lsp.state import CodeasstServer, State
from codeasst.lsp.suggestions import Refused, file_of
from codeasst.services import Services

log = logging.getLogger("codeasst.lsp")


def build(services_for: Callable[[Path], Services], *, start: bool = True, root: Path | None = None) -> CodeasstServer:
    """The language server; `services_for(root)` builds the services of the repository the client opens."""
    server = CodeasstServer(State(services_for, start=start, root=root))
    server.feature(lsp.INITIALIZE)(initialize)
    server.feature(lsp.SHUTDOWN)(shutdown)
    for feature in (sync, completion, commands, lint, symbols):
        feature.register(server)
    return server


def initialize(ls: CodeasstServer, params: lsp.InitializeParams) -> None:
    state = ls.state
    services = state.services_for(_folder(params) if state.root is None else state.root)
    if state.session is not None:  # initialized again: the server the first session started stops
        state.session.stop()
    state.session = s = Session(services, start=state.start)
    caps = params.capabilities
    s.inline = bool(caps.text_document and caps.text_document.inline_completion is not None)
    action = caps.text_document.code_action if caps.text_document else None
    s.resolve_edits = bool(action and action.resolve_support and "edit" in action.resolve_support.properties)
    options = params.initialization_options if isinstance(params.initialization_options, dict) else {}
    if options.get("completion") in ("inline", "completion"):
        s.mode = options["completion"]
    if isinstance(options.get("discard_after_s"), int | float) and options["discard_after_s"] > 0:
        s.outcomes.discard_after_s = float(options["discard_after_s"])
    log.info("codeasst lsp for %s (completion: %s)", s.root, s.mode if s.mode != "auto" else
             "inline" if s.inline else "completion")


def _folder(params: lsp.InitializeParams) -> Path:
    """The repository the client opens: its root URI, else its first workspace folder, else its root
    path; the current directory where it names none (or no local file)."""
    uri = params.root_uri or (params.workspace_folders[0].uri if params.workspace_folders else None)
    folder = Path(params.root_path) if params.root_path and not uri else None
    with contextlib.suppress(Refused):
        folder = file_of(uri) if uri else folder
    return folder or Path.cwd()


def shutdown(ls: CodeasstServer, *_args) -> None:
    if ls.state.session is not None:
        ls.state.session.stop()


def run(services_for: Callable[[Path], Services], *, start: bool = True, root: Path | None = None) -> None:
    """Serve one editor over stdin/stdout until it leaves; the server this process started stops with it."""
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="codeasst lsp: %(message)s")
    logging.getLogger("pygls").setLevel(logging.WARNING)
    for noisy in ("pygls.server", "pygls.protocol"):  # tracebacks for bad input: a line of ours says it
        logging.getLogger(noisy).setLevel(logging.CRITICAL)
    server = build(services_for, start=start, root=root)
    try:
        server.start_io()
    finally:
        if server.state.session is not None:
            server.state.session.stop()
        with contextlib.suppress(Exception):
            sys.stdout.flush()
