"""Text document sync (incremental; pygls keeps the documents): an opened file is linted and its prompt
warmed in the server, a saved one linted again (debounced), a closed one's suggestion discarded and its
diagnostics cleared."""

from __future__ import annotations

from lsprotocol import types as lsp

from codeasst.lsp import lint
from codeasst.lsp.commands import discarded
from codeasst.lsp.state import CodeasstServer, background
from codeasst.lsp.suggestions import Refused


def register(server: CodeasstServer) -> None:
    server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)(did_open)
    server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)(did_save)
    server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)(did_close)


async def did_open(ls: CodeasstServer, params: lsp.DidOpenTextDocumentParams) -> None:
    uri = params.text_document.uri
    lint.soon(ls, uri, 0.0)
    try:
        doc, rel = ls.document(uri)
    except Refused:
        return
    s = ls.session()
    if (assistant := s.assistant()) is not None:  # warm the file's prompt: its first suggestion finds it cached
        background(lambda: assistant.open(rel, doc.source, client=f"{s.client_id}:{uri}"))


def did_save(ls: CodeasstServer, params: lsp.DidSaveTextDocumentParams) -> None:
    lint.soon(ls, params.text_document.uri, ls.session().debounce_s)


def did_close(ls: CodeasstServer, params: lsp.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    lint.cancel(ls, uri)
    discarded(ls, ls.session().outcomes.next_request(uri))
    ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
