"""What the features of `codeasst lsp` share: the server every handler gets as `ls`, its state, and the
steps each feature takes (the session, an open document, a command's arguments, work off the loop)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.workspace import TextDocument

from codeasst import __version__
from codeasst.lsp.protocol import CodeasstProtocol
from codeasst.lsp.session import Session
from codeasst.lsp.suggestions import Refused, path_in
from codeasst.services import Services

log = logging.getLogger("codeasst.lsp")


@dataclass
class State:
    """One editor's state, shared by the features."""

    services_for: Callable[[Path], Services]  # the services of the repository the client opens
    start: bool = True  # start a `codeasst serve` where none answers
    root: Path | None = None  # the repository, whatever the client names
    session: Session | None = None  # None until initialize
    lints: dict[str, asyncio.Task] = field(default_factory=dict)  # uri -> the debounced lint waiting to run


class CodeasstServer(LanguageServer):
    """pygls's language server with codeasst's state; each feature's handler gets it as `ls`."""

    protocol: CodeasstProtocol

    def __init__(self, state: State) -> None:
        super().__init__("codeasst", __version__, text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental,
                         protocol_cls=CodeasstProtocol)
        self.state = state

    def session(self) -> Session:
        if self.state.session is None:
            raise lsp_error("codeasst lsp is not initialized yet")
        return self.state.session

    def document(self, uri: str) -> tuple[TextDocument, str]:
        """The open document `uri` and its path relative to the root; Refused for a document never
        opened (nothing is read from disk) or outside the repository."""
        s = self.session()
        if uri not in self.workspace.text_documents:
            raise Refused(f"{uri}: not open")
        _, rel = path_in(s.root, uri)
        return self.workspace.get_text_document(uri), rel

    def report_server_error(self, error: Exception, source: Any) -> None:
        """A body that is no JSON at all: a ParseError to the client (JSON-RPC's id null), a line in the log."""
        if isinstance(error, ValueError) and not isinstance(error, JsonRpcException):
            log.info("a message that is no JSON: %s", error)
            self.protocol.parse_error()
            return
        log.error("%s", error)


def background(work: Callable[[], object]) -> None:
    """Run `work` in a thread, off the loop; a failure is a log line (a lost event or warm-up)."""

    async def run() -> None:
        try:
            await asyncio.to_thread(work)
        except Exception as exc:  # noqa: BLE001 - a lost event or warm-up is a log line
            log.info("background work failed: %s", exc)

    asyncio.ensure_future(run())


def command_args(args: tuple, *kinds: type) -> tuple:
    """A command's arguments as `kinds`, missing ones None; an LSP error for a wrong one."""
    out = []
    for i, kind in enumerate(kinds):
        value = args[i] if i < len(args) else None
        if value is not None and not (isinstance(value, kind) and not isinstance(value, bool)):
            raise lsp_error(f"argument {i + 1} should be {kind.__name__}, not {type(value).__name__}")
        out.append(value)
    if out and out[0] is None:
        raise lsp_error("missing argument 1")
    return tuple(out)


def lsp_error(message: str) -> Exception:
    return JsonRpcInvalidParams(message)
