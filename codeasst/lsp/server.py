"""`codeasst lsp`: the Language Server Protocol over stdio, a thin client of `codeasst serve`.

It joins the repository's running server (found as `codeasst serve --info --json` finds it) or starts
one, and goes through the one way in every front end uses (codeasst.access); the models, the gate,
the cut, the KV cache and the events' store stay in the server. pygls 2 (with lsprotocol) speaks the
protocol: incremental document sync, async handlers, `$/cancelRequest`.

- textDocument/inlineCompletion (LSP 3.18) and, for clients without it, textDocument/completion:
  one item, the suggestion, whose edit starts at the word before the cursor (clients filter by it)
  and replaces the rest of the line where the suggestion restates it. The gate's silence is an empty
  result. A request for a document version the client has since changed is answered empty; a newer
  request for the same document ends an older one in the server, and `$/cancelRequest` closes its
  connection. `initializationOptions.completion` ("inline" or "completion") says which a client
  really uses.
- Each item's command, `codeasst.accept` [id, accepted length], reports the accept; `codeasst.discard`
  [id] a dismissal; a shown suggestion neither accepted by the next request for its document nor
  within lsp.discard_after_s is a discard. `codeasst stats` counts them as the server's.
- flake8 diagnostics for open Python files, on open and save (debounced), and code actions: "fix this"
  (the fix's changes at a diagnostic's line) and "fix the file", each edit what `codeasst fix` would
  write after its verification; nothing, with the reason shown, when no fix is verified.
- workspace/symbol: definitions by name from the code graph, else codeasst's search for words; the
  command `codeasst.ask` [question] returns the checked answer as Markdown and its citations as locations.

Bad input (a file outside the repository or ignored, a position past the end, a document never
opened, a server gone) is an empty result or an LSP error, and a line on stderr; never a crash.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from lsprotocol.types import ResponseError
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol

from codeasst import __version__
from codeasst.access import Assistant, Cancel, ServerError, Unreachable, join
from codeasst.errors import CodeasstError
from codeasst.lsp.suggestions import Outcomes, Refused, completion_edit, file_of, path_in
from codeasst.services import Services

log = logging.getLogger("codeasst.lsp")

RESTART_S = 30.0  # at most one server started in this long
FIX_FILE = "source.fixAll.codeasst"
_KINDS = {"function": lsp.SymbolKind.Function, "method": lsp.SymbolKind.Method, "class": lsp.SymbolKind.Class,
          "module": lsp.SymbolKind.Module}


class Session:
    """One editor's session: its repository, the server it goes through, what it was shown."""

    def __init__(self, services: Services, *, start: bool = True, wait_s: float = 120.0) -> None:
        self.services = services
        self.root = services.repo.root
        cfg = services.settings.lsp
        self.outcomes = Outcomes(cfg.discard_after_s)
        self.debounce_s = cfg.debounce_ms / 1000
        self.mode = "auto"  # "inline" or "completion" where the client says which it shows
        self.inline = False  # the client declared textDocument/inlineCompletion
        self.resolve_edits = False  # the client resolves a code action's edit (codeAction/resolve)
        self.client_id = f"lsp-{os.getpid()}"
        self._assistant: Assistant | None = join(services)
        self._process: subprocess.Popen | None = None
        self._ready = threading.Event()
        self._lock = threading.Lock()
        self._start, self._wait_s, self._started_at = start, wait_s, -RESTART_S
        self._ready.set()
        if self._assistant is None:
            self._start_in_background()

    # The server behind.

    def _start_in_background(self) -> None:
        """Start a server unless told not to, or one was started in the last RESTART_S seconds."""
        if not self._start or time.monotonic() - self._started_at < RESTART_S or not self._ready.is_set():
            return
        self._started_at = time.monotonic()
        self._ready.clear()
        threading.Thread(target=self._start_server, args=(self._wait_s,), name="codeasst-lsp-serve", daemon=True).start()

    def _start_server(self, wait_s: float) -> None:
        """Start `codeasst serve` for the repository and wait for it to answer (its models load first)."""
        logs = self.services.repo.index_dir / "lsp-serve.log"  # beside the index it serves
        try:
            logs.parent.mkdir(parents=True, exist_ok=True)
            with open(logs, "ab") as out:
                self._process = subprocess.Popen(
                    [sys.executable, "-m", "codeasst", "serve", "--repo", str(self.root), "--port", "0"],
                    stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True)
            log.info("started codeasst serve (pid %s) for %s; its log: %s", self._process.pid, self.root, logs)
            deadline = time.monotonic() + wait_s
            while time.monotonic() < deadline and self._process.poll() is None:
                if (found := join(self.services)) is not None:
                    with self._lock:
                        self._assistant = found
                    return
                time.sleep(0.2)
            if (found := join(self.services)) is not None:  # another one started first: use it
                with self._lock:
                    self._assistant = found
                return
            log.error("codeasst serve did not start for %s (see %s)", self.root, logs)
        except OSError as exc:
            log.error("cannot start codeasst serve: %s", exc)
        finally:
            self._ready.set()

    def assistant(self, wait_s: float = 0.0) -> Assistant | None:
        """The server's assistant; None while it starts (after `wait_s`) or when none answers."""
        if wait_s:
            self._ready.wait(wait_s)
        with self._lock:
            if self._assistant is None and self._ready.is_set():
                self._assistant = join(self.services)  # one started since, or restarted
                if self._assistant is None:  # none answers (the one an editor before this one started has
                    self._start_in_background()  # stopped with it, or it died): start one
            return self._assistant

    def forget_server(self) -> None:
        with self._lock:
            self._assistant = None

    def stop(self) -> None:
        """Stop the server this session started (one it joined runs on)."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


class _Protocol(LanguageServerProtocol):
    """pygls's protocol, answering what it would only log: a request whose params do not fit its method
    gets InvalidParams (its id known), a body that is no JSON a ParseError (id null), as JSON-RPC says."""

    def structure_message(self, data: dict[str, Any]):
        if "method" in data and "jsonrpc" in data and "params" not in data:
            data = {**data, "params": None}  # JSON-RPC lets a request leave its params out
        try:
            return super().structure_message(data)
        except JsonRpcException:
            request_id = data.get("id") if "method" in data else None
            if isinstance(request_id, int | str) and not isinstance(request_id, bool):
                log.info("refused %s (id %s): its params do not fit", str(data.get("method"))[:80], request_id)
                self._send_response(request_id, error=ResponseError(JsonRpcInvalidParams.CODE,
                                                                    f"invalid params for {str(data['method'])[:200]}"))
            return _DROPPED

    def handle_message(self, message: Any) -> None:
        if message is _DROPPED or not hasattr(message, "jsonrpc"):
            if message is not _DROPPED:
                log.info("dropped a message that is no JSON-RPC object")
            return
        super().handle_message(message)


_DROPPED = object()


class CodeasstServer(LanguageServer):
    session: Session | None = None

    def report_server_error(self, error: Exception, source: Any) -> None:
        """A body that is no JSON at all: a ParseError to the client (JSON-RPC's id null), a line in the log."""
        if isinstance(error, ValueError) and not isinstance(error, JsonRpcException):
            log.info("a message that is no JSON: %s", error)
            self.protocol._send_data(_ParseError())
            return
        log.error("%s", error)


def build(services_for: Callable[[Path], Services], *, start: bool = True, root: Path | None = None) -> CodeasstServer:
    """The language server; `services_for(root)` builds the services of the repository the client opens."""
    server = CodeasstServer("codeasst", __version__, text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental,
                            protocol_cls=_Protocol)
    pending: dict[str, asyncio.Task] = {}  # uri -> the debounced lint waiting to run

    def session() -> Session:
        if server.session is None:
            raise lsp_error("codeasst lsp is not initialized yet")
        return server.session

    @server.feature(lsp.INITIALIZE)
    def initialize(params: lsp.InitializeParams) -> None:
        folder = root
        if folder is None:
            uri = params.root_uri or (params.workspace_folders[0].uri if params.workspace_folders else None)
            folder = Path(params.root_path) if params.root_path and not uri else None
            with contextlib.suppress(Refused):
                folder = file_of(uri) if uri else folder
        services = services_for(folder or Path.cwd())
        if server.session is not None:  # initialized again: the server the first session started stops
            server.session.stop()
        server.session = s = Session(services, start=start)
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

    @server.feature(lsp.SHUTDOWN)
    def shutdown(*_args) -> None:
        if server.session is not None:
            server.session.stop()

    # Documents.

    def document(uri: str):
        """The open document `uri` and its path relative to the root; Refused for a document never
        opened (nothing is read from disk) or outside the repository."""
        s = session()
        if uri not in server.workspace.text_documents:
            raise Refused(f"{uri}: not open")
        _, rel = path_in(s.root, uri)
        return server.workspace.get_text_document(uri), rel

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(params: lsp.DidOpenTextDocumentParams) -> None:
        uri = params.text_document.uri
        lint_soon(uri, 0.0)
        try:
            doc, rel = document(uri)
        except Refused:
            return
        s = session()
        if (assistant := s.assistant()) is not None:  # warm the file's prompt: its first suggestion finds it cached
            background(lambda: assistant.open(rel, doc.source, client=f"{s.client_id}:{uri}"))

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(params: lsp.DidSaveTextDocumentParams) -> None:
        lint_soon(params.text_document.uri, session().debounce_s)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: lsp.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        if (task := pending.pop(uri, None)) is not None:
            task.cancel()
        for shown in session().outcomes.next_request(uri):
            record(shown.id, "discarded", shown.length)
        server.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    # Completions.

    async def suggest(uri: str, position: lsp.Position, invoked: bool = False) -> tuple[dict, Any, str] | None:
        """The server's suggestion at `position` of the open document `uri`, with the document and
        the cursor line's text; None for silence, a stale version, a refusal or no server."""
        s = session()
        try:
            doc, rel = document(uri)
        except Refused as exc:
            log.info("no completion: %s", exc)
            return None
        version = doc.version
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
        assistant = s.assistant()
        if assistant is None:
            log.info("no completion: codeasst serve is not answering yet")
            return None
        for shown in s.outcomes.expired():
            record(shown.id, "discarded", shown.length)
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
        for shown in s.outcomes.next_request(uri, keep=reply_id):
            record(shown.id, "discarded", shown.length)
        if doc.version != version or server.workspace.text_documents.get(uri) is not doc:
            return None  # the client changed the document since: this answer is for text it no longer has
        if not reply.get("text"):
            log.info("silent in %s:%s: %s", rel, position.line + 1, reply.get("reason") or "nothing to suggest")
            return None
        first, ended = s.outcomes.show(uri, reply_id, len(reply["text"]))
        for shown in ended:
            record(shown.id, "discarded", shown.length)
        if first:  # the type-ahead cache gives the rest of one already counted: not a new suggestion
            record(reply_id, "shown", len(reply["text"]))
        asyncio.get_running_loop().call_later(s.outcomes.discard_after_s + 0.05, sweep)
        return reply, doc, line_text

    def accept_command(reply: dict) -> lsp.Command:
        return lsp.Command(title="codeasst: accepted", command="codeasst.accept", arguments=[reply["id"], len(reply["text"])])

    @server.feature(lsp.TEXT_DOCUMENT_INLINE_COMPLETION, lsp.InlineCompletionOptions())
    async def inline_completion(params: lsp.InlineCompletionParams) -> lsp.InlineCompletionList | None:
        if session().mode == "completion":
            return None
        found = await suggest(params.text_document.uri, params.position,
                              invoked=params.context.trigger_kind == lsp.InlineCompletionTriggerKind.Invoked)
        if found is None:
            return lsp.InlineCompletionList(items=[])
        reply, _, _ = found
        at = lsp.Range(params.position, params.position)
        return lsp.InlineCompletionList(items=[lsp.InlineCompletionItem(insert_text=reply["text"], range=at,
                                                                        command=accept_command(reply))])

    @server.feature(lsp.TEXT_DOCUMENT_COMPLETION, lsp.CompletionOptions(trigger_characters=[".", "(", " "]))
    async def completion(params: lsp.CompletionParams) -> lsp.CompletionList | None:
        s = session()
        if s.mode == "inline" or (s.mode == "auto" and s.inline):
            return lsp.CompletionList(is_incomplete=True, items=[])
        invoked = params.context is not None and params.context.trigger_kind == lsp.CompletionTriggerKind.Invoked
        found = await suggest(params.text_document.uri, params.position, invoked=invoked)
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
            text_edit=lsp.TextEdit(lsp.Range(start, end), edit.text), command=accept_command(reply),
            documentation=lsp.MarkupContent(lsp.MarkupKind.Markdown, f"```\n{reply['text']}\n```"))
        return lsp.CompletionList(is_incomplete=True, items=[item])

    # Accepts and discards.

    def sweep() -> None:
        """Shown suggestions nobody accepted within lsp.discard_after_s: discarded."""
        if server.session is not None:
            for shown in server.session.outcomes.expired():
                record(shown.id, "discarded", shown.length)

    def record(suggestion_id: str, kind: str, shown: int, accepted: int = 0) -> None:
        s = server.session
        assistant = s.assistant() if s is not None else None
        if assistant is not None and suggestion_id:
            background(lambda: assistant.event(kind, suggestion_id, shown, accepted))

    @server.command("codeasst.accept")
    def accept(*args: Any) -> dict:
        suggestion_id, length = _args(args, str, int)
        shown = session().outcomes.accept(suggestion_id)
        if shown is None:
            return {"recorded": False}
        record(suggestion_id, "accepted", shown.length, min(length if length is not None else shown.length,
                                                            shown.length))
        return {"recorded": True}

    @server.command("codeasst.discard")
    def discard(*args: Any) -> dict:
        (suggestion_id,) = _args(args, str)
        shown = session().outcomes.accept(suggestion_id)  # no longer waiting: counted now
        if shown is None:
            return {"recorded": False}
        record(suggestion_id, "discarded", shown.length)
        return {"recorded": True}

    # Lint and fixes.

    def lint_soon(uri: str, delay: float) -> None:
        if (task := pending.pop(uri, None)) is not None:
            task.cancel()
        pending[uri] = asyncio.ensure_future(lint(uri, delay))

    async def lint(uri: str, delay: float) -> None:
        await asyncio.sleep(delay)
        pending.pop(uri, None)
        try:
            doc, rel = document(uri)
        except Refused as exc:
            log.info("no diagnostics: %s", exc)
            return
        if not rel.endswith((".py", ".pyi")):
            return
        s = session()
        version = doc.version
        try:
            found = await asyncio.to_thread(_lint, s, rel, doc.source)
        except CodeasstError as exc:
            log.warning("no diagnostics for %s: %s", rel, exc.one_line())
            server.window_show_message(lsp.ShowMessageParams(lsp.MessageType.Warning, f"codeasst: {exc.one_line()}"))
            return
        if doc.version != version or uri not in server.workspace.text_documents:
            return
        server.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(
            uri=uri, version=version, diagnostics=[_diagnostic(d, doc.lines) for d in found]))

    @server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION, lsp.CodeActionOptions(
        code_action_kinds=[lsp.CodeActionKind.QuickFix, FIX_FILE], resolve_provider=True))
    def code_action(params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        uri = params.text_document.uri
        try:
            doc, rel = document(uri)
        except Refused as exc:
            log.info("no code actions: %s", exc)
            return []
        if not rel.endswith((".py", ".pyi")):
            return []
        actions = []
        wanted = params.context.only
        for d in params.context.diagnostics:
            if d.source != "flake8" or (wanted and lsp.CodeActionKind.QuickFix not in wanted):
                continue
            actions.append(_action(session(), f"codeasst: fix {d.code} here", lsp.CodeActionKind.QuickFix,
                                   {"uri": uri, "line": d.range.start.line + 1, "version": doc.version}, [d]))
        if not wanted or any(FIX_FILE.startswith(k) for k in wanted):
            actions.append(_action(session(), "codeasst: fix the file", FIX_FILE,
                                   {"uri": uri, "line": None, "version": doc.version}, None))
        return actions

    @server.feature(lsp.CODE_ACTION_RESOLVE)
    async def resolve_action(action: lsp.CodeAction) -> lsp.CodeAction:
        if action.command is not None or not isinstance(action.data, dict):
            return action  # a client that resolves every action: this one runs its command instead
        data = action.data
        edit, why = await fix_edit(str(data.get("uri", "")), data.get("line"), data.get("version"))
        if edit is None:
            action.title = f"{action.title}: {why}"
            server.window_show_message(lsp.ShowMessageParams(lsp.MessageType.Info, f"codeasst: {why}"))
        action.edit = edit
        return action

    async def fix_edit(uri: str, line: Any, version: Any) -> tuple[lsp.WorkspaceEdit | None, str]:
        """The edit of the verified fix (at `line`, or of the whole file), or None and why not."""
        try:
            doc, rel = document(uri)
        except Refused as exc:
            return None, str(exc)
        if version is not None and version != doc.version:
            return None, "the file changed since; ask again"
        assistant = session().assistant(wait_s=30.0)
        if assistant is None:
            return None, "codeasst serve is not answering"
        try:
            reply = await asyncio.to_thread(assistant.fix, rel, doc.source, line=line if isinstance(line, int) else None)
        except (CodeasstError, ServerError, Unreachable) as exc:
            return None, exc.one_line()
        if doc.version != version and version is not None:
            return None, "the file changed while it was fixed; ask again"
        if not reply.get("changed"):
            left = reply.get("remaining") or []
            reasons = "; ".join(f"{d['code']} line {d['line']}: {d['reason']}" for d in left[:3] if d.get("reason"))
            return None, "no verified fix" + (f" ({reasons})" if reasons else "")
        end = lsp.Position(len(doc.lines), 0)
        return lsp.WorkspaceEdit(document_changes=[lsp.TextDocumentEdit(
            text_document=lsp.OptionalVersionedTextDocumentIdentifier(uri=uri, version=doc.version),
            edits=[lsp.TextEdit(lsp.Range(lsp.Position(0, 0), end), reply["text"])])]), ""

    async def fix_command(uri: Any, line: Any = None, version: Any = None) -> dict:
        edit, why = await fix_edit(str(uri), line, version)
        if edit is None:
            server.window_show_message(lsp.ShowMessageParams(lsp.MessageType.Info, f"codeasst: {why}"))
            return {"applied": False, "reason": why}
        result = await server.workspace_apply_edit_async(lsp.ApplyWorkspaceEditParams(edit, label="codeasst fix"))
        return {"applied": bool(result.applied), "reason": result.failure_reason or ""}

    @server.command("codeasst.fixFile")
    async def fix_file(*args: Any) -> dict:
        uri, version = _args(args, str, int)
        return await fix_command(uri, None, version)

    @server.command("codeasst.fixLine")
    async def fix_line(*args: Any) -> dict:
        uri, line, version = _args(args, str, int, int)
        return await fix_command(uri, line, version)

    # Code search.

    @server.feature(lsp.WORKSPACE_SYMBOL)
    async def symbols(params: lsp.WorkspaceSymbolParams) -> list[lsp.SymbolInformation]:
        s = session()
        query = params.query.strip()
        if not query:
            return []
        assistant = s.assistant(wait_s=30.0)
        if assistant is None:
            return []
        try:
            found = await asyncio.to_thread(assistant.symbols, query, 50)
        except (CodeasstError, ServerError, Unreachable) as exc:
            log.info("no symbols for %r: %s", query, exc)
            return []
        out = []
        for d in found:
            container = d["qname"].rsplit(".", 1)[0] if "." in d["qname"] else None
            place = lsp.Range(lsp.Position(max(0, d["line"] - 1), 0), lsp.Position(max(0, d["end_line"] - 1), 0))
            out.append(lsp.SymbolInformation(location=lsp.Location((s.root / d["path"]).as_uri(), place),
                                             name=d["name"] or d["path"], kind=_KINDS.get(d["kind"], lsp.SymbolKind.Variable),
                                             container_name=container))
        return out

    @server.command("codeasst.ask")
    async def ask(*args: Any) -> dict:
        (question,) = _args(args, str)
        if not question or not question.strip():
            raise lsp_error("codeasst.ask needs a question")
        s = session()
        assistant = s.assistant(wait_s=60.0)
        if assistant is None:
            raise lsp_error("codeasst serve is not answering")
        try:
            answer = await asyncio.to_thread(_answer, assistant, question)
        except (CodeasstError, ServerError, Unreachable) as exc:
            raise lsp_error(exc.one_line()) from None
        return _answer_markdown(s.root, answer)

    def background(work: Callable[[], object]) -> None:
        async def run() -> None:
            try:
                await asyncio.to_thread(work)
            except Exception as exc:  # noqa: BLE001 - a lost event or warm-up is a log line
                log.info("background work failed: %s", exc)

        asyncio.ensure_future(run())

    return server


class _ParseError(dict):
    def __init__(self) -> None:
        super().__init__(jsonrpc="2.0", id=None, error={"code": -32700, "message": "Parse error: not JSON"})


def _action(s: Session, title: str, kind: str, data: dict, diagnostics: list | None) -> lsp.CodeAction:
    if s.resolve_edits:
        return lsp.CodeAction(title, kind=kind, diagnostics=diagnostics, data=data)
    arguments = [data["uri"], data["version"]] if data["line"] is None else [data["uri"], data["line"], data["version"]]
    command = "codeasst.fixFile" if data["line"] is None else "codeasst.fixLine"
    return lsp.CodeAction(title, kind=kind, diagnostics=diagnostics, command=lsp.Command(title=title, command=command, arguments=arguments))


def _lint(s: Session, rel: str, text: str) -> list[dict]:
    """flake8 on the buffer, here (it needs no model); nothing for a file the ignore rules exclude."""
    from codeasst.access import alone

    here = alone(s.services)
    if why := here.ignored(rel):
        log.info("no diagnostics: %s", why)
        return []
    return here.lint(rel, text)


def _diagnostic(d: dict, lines: list[str]) -> lsp.Diagnostic:
    line = max(0, min(d["line"] - 1, len(lines) - 1)) if lines else 0
    text = lines[line] if lines else ""
    col = max(0, min(d["col"] - 1, len(text.rstrip("\r\n"))))
    end = col + 1 if col < len(text.rstrip("\r\n")) else col
    return lsp.Diagnostic(lsp.Range(lsp.Position(line, col), lsp.Position(line, end)), d["message"],
                          severity=lsp.DiagnosticSeverity.Error if d["code"].startswith(("E9", "F")) else
                          lsp.DiagnosticSeverity.Warning, code=d["code"], source="flake8")


def _answer(assistant: Assistant, question: str) -> dict:
    events = assistant.ask(question, client="lsp")
    try:
        for event in events:
            if event["type"] == "answer":
                return event
    finally:
        events.close()
    raise CodeasstError("the answer ended before it was done", hint="ask again")


def _answer_markdown(root: Path, answer: dict) -> dict:
    """The checked answer as Markdown, its verified citations as locations."""
    places = []
    seen = set()
    for c in answer.get("citations", []):
        key = (c["path"], c["start_line"], c["end_line"])
        if c.get("verified") and key not in seen:
            seen.add(key)
            places.append(key)
    markdown = answer.get("answer", "").rstrip()
    if places:
        markdown += "\n\n**Sources**\n" + "\n".join(f"- `{p}:{s}-{e}`" for p, s, e in places)
    locations = [{"uri": (root / p).as_uri(), "range": {"start": {"line": s - 1, "character": 0},
                                                       "end": {"line": e - 1, "character": 0}}} for p, s, e in places]
    return {"markdown": markdown, "locations": locations}


def _args(args: tuple, *kinds: type) -> tuple:
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
        if server.session is not None:
            server.session.stop()
        with contextlib.suppress(Exception):
            sys.stdout.flush()
