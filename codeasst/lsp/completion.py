"""Completion: textDocument/inlineCompletion (LSP 3.18) and, for clients without it, textDocument/completion,
both from the server's one suggestion. The completion item's edit starts at the word before the cursor
(clients filter by it) and replaces the rest of the line where the suggestion restates it. The gate's
silence is an empty result. A request for a document version the client has since changed is answered
empty; a newer request for the same document ends an older one in the server, and `$/cancelRequest`
closes its connection. `initializationOptions.completion` ("inline" or "completion") says which a client
really uses. Each item carries the command codeasst.accept (commands.py counts what becomes of it)."""

from __future__ import annotations

import asyncio
import logging

from lsprotocol import types as lsp
from pygls.workspace import TextDocument

from codeasst.access import Cancel, ServerError, Unreachable
from codeasst.errors import CodeasstError
from codeasst.lsp.commands import ACCEPT, discarded, record, sweep_later
from codeasst.lsp.state import CodeasstServer
from codeasst.lsp.suggestions import Refused, completion_edit

log = logging.getLogger("codeasst.lsp")


def register(server: CodeasstServer) -> None:
    server.feature(lsp.TEXT_DOCUMENT_INLINE_COMPLETION, lsp.InlineCompletionOptions())(inline_completion)
    server.feature(lsp.TEXT_DOCUMENT_COMPLETION, lsp.CompletionOptions(trigger_characters=[".", "(", " "]))(completion)


async def inline_completion(ls: CodeasstServer, params: lsp.InlineCompletionParams) -> lsp.InlineCompletionList | None:
    if ls.session().mode == "completion":
        return None
    found = await suggest(ls, params.text_document.uri, params.position,
                          invoked=params.context.trigger_kind == lsp.InlineCompletionTriggerKind.Invoked)
    if found is None:
        return lsp.InlineCompletionList(items=[])
    reply, _, _ = found
    at = lsp.Range(params.position, params.position)
    return lsp.InlineCompletionList(items=[lsp.InlineCompletionItem(insert_text=reply["text"], range=at,
                                                                    command=_accept_command(reply))])


async def completion(ls: CodeasstServer, params: lsp.CompletionParams) -> lsp.CompletionList | None:
    s = ls.session()
    if s.mode == "inline" or (s.mode == "auto" and s.inline):
        return lsp.CompletionList(is_incomplete=True, items=[])
    invoked = params.context is not None and params.context.trigger_kind == lsp.CompletionTriggerKind.Invoked
    found = await suggest(ls, params.text_document.uri, params.position, invoked=invoked)
    if found is None:
        return lsp.CompletionList(is_incomplete=True, items=[])
    reply, doc, line_text = found
    col = doc.position_codec.position_from_client_units(doc.lines, params.position).character
    edit = completion_edit(line_text, params.position.line, col, reply["text"])
    codec = doc.position_codec
    start = codec.position_to_client_units(doc.lines, lsp.Position(edit.line, edit.start))
    end = codec.position_to_client_units(doc.lines, lsp.Position(edit.line, edit.end))
    item = lsp.CompletionItem(
        label=edit.label, kind=lsp.CompletionItemKind.Text, detail="codeasst", preselect=True, sort_text="0",
        filter_text=edit.text, insert_text_format=lsp.InsertTextFormat.PlainText,
        text_edit=lsp.TextEdit(lsp.Range(start, end), edit.text), command=_accept_command(reply),
        documentation=lsp.MarkupContent(lsp.MarkupKind.Markdown, f"```\n{reply['text']}\n```"))
    return lsp.CompletionList(is_incomplete=True, items=[item])


def _accept_command(reply: dict) -> lsp.Command:
    return lsp.Command(title="codeasst: accepted", command=ACCEPT, arguments=[reply["id"], len(reply["text"])])


async def suggest(ls: CodeasstServer, uri: str, position: lsp.Position,
                  invoked: bool = False) -> tuple[dict, TextDocument, str] | None:
    """The server's suggestion at `position` of the open document `uri`, with the document and
    the cursor line's text; None for silence, a stale version, a refusal or no server."""
    s = ls.session()
    try:
        doc, rel = ls.document(uri)
    except Refused as exc:
        log.info("no completion: %s", exc)
        return None
    version = doc.version
    if (cursor := _cursor(doc, rel, position)) is None:
        return None
    line_text, col = cursor
    assistant = s.assistant()
    if assistant is None:
        log.info("no completion: codeasst serve is not answering yet")
        return None
    discarded(ls, s.outcomes.expired())
    cancel = Cancel()
    work = asyncio.ensure_future(asyncio.to_thread(
        assistant.complete, rel, position.line + 1, col + 1, doc.source, client=f"{s.client_id}:{uri}",
        cancel=cancel, trigger="invoked" if invoked else "auto"))
    try:
        reply = await asyncio.shield(work)
    except asyncio.CancelledError:
        cancel.set()  # $/cancelRequest: the connection closes and the server stops
        raise
    except (ServerError, Unreachable, CodeasstError) as exc:
        if isinstance(exc, Unreachable):
            s.forget_server()
        log.info("no completion in %s: %s", rel, exc.one_line() if hasattr(exc, "one_line") else exc)
        return None
    reply_id = reply.get("id", "")
    discarded(ls, s.outcomes.next_request(uri, keep=reply_id))
    if doc.version != version or ls.workspace.text_documents.get(uri) is not doc:
        return None  # the client changed the document since: this answer is for text it no longer has
    if not reply.get("text"):
        log.info("silent in %s:%s: %s", rel, position.line + 1, reply.get("reason") or "nothing to suggest")
        return None
    _shown(ls, uri, reply_id, len(reply["text"]))
    return reply, doc, line_text


def _cursor(doc: TextDocument, rel: str, position: lsp.Position) -> tuple[str, int] | None:
    """The cursor line's text and the cursor's column in it (in characters); None, and a log line, for
    a position past the end of the document or of its line."""
    lines = doc.lines
    if position.line >= len(lines) and not (position.line == len(lines) and position.character == 0):
        log.info("no completion: line %s is past the end of %s", position.line + 1, rel)
        return None
    line_text = lines[position.line].rstrip("\r\n") if position.line < len(lines) else ""
    col = doc.position_codec.position_from_client_units(lines, position).character if position.line < len(lines) \
        else 0
    if col > len(line_text):
        log.info("no completion: column %s is past the end of line %s of %s", position.character, position.line + 1,
                 rel)
        return None
    return line_text, col


def _shown(ls: CodeasstServer, uri: str, suggestion_id: str, length: int) -> None:
    """The suggestion is shown: counted once, the one it replaces discarded, its discard timer set."""
    first, ended = ls.session().outcomes.show(uri, suggestion_id, length)
    discarded(ls, ended)
    if first:  # the type-ahead cache gives the rest of one already counted: not a new suggestion
        record(ls, suggestion_id, "shown", length)
    sweep_later(ls)
