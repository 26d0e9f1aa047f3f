"""flake8 diagnostics for open Python files, on open and save (debounced), and code actions: "fix this"
(the fix's changes at a diagnostic's line) and "fix the file", each edit what `codeasst fix` would write
after its verification; nothing, with the reason shown, when no fix is verified. A client that resolves
a code action's edit gets it from codeAction/resolve, another runs the action's command
(codeasst.fixLine, codeasst.fixFile) and gets it as workspace/applyEdit."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from lsprotocol import types as lsp

from codeasst.access import ServerError, Unreachable
from codeasst.errors import CodeasstError
from codeasst.lsp.session import Session
from codeasst.lsp.state import CodeasstServer, command_args
from codeasst.lsp.suggestions import Refused

log = logging.getLogger("codeasst.lsp")

FIX_FILE = "source.fixAll.codeasst"
_PYTHON = (".py", ".pyi")


def register(server: CodeasstServer) -> None:
    server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION, lsp.CodeActionOptions(
        code_action_kinds=[lsp.CodeActionKind.QuickFix, FIX_FILE], resolve_provider=True))(code_action)
    server.feature(lsp.CODE_ACTION_RESOLVE)(resolve_action)
    server.command("codeasst.fixFile")(fix_file)
    server.command("codeasst.fixLine")(fix_line)


# Diagnostics.

def soon(ls: CodeasstServer, uri: str, delay: float) -> None:
    """Lint `uri` after `delay` seconds, instead of any lint of it still waiting."""
    cancel(ls, uri)
    ls.state.lints[uri] = asyncio.ensure_future(_lint_later(ls, uri, delay))


def cancel(ls: CodeasstServer, uri: str) -> None:
    if (task := ls.state.lints.pop(uri, None)) is not None:
        task.cancel()


async def _lint_later(ls: CodeasstServer, uri: str, delay: float) -> None:
    await asyncio.sleep(delay)
    ls.state.lints.pop(uri, None)
    try:
        doc, rel = ls.document(uri)
    except Refused as exc:
        log.info("no diagnostics: %s", exc)
        return
    if not rel.endswith(_PYTHON):
        return
    s = ls.session()
    version = doc.version
    try:
        found = await asyncio.to_thread(_lint, s, rel, doc.source)
    except CodeasstError as exc:
        log.warning("no diagnostics for %s: %s", rel, exc.one_line())
        ls.window_show_message(lsp.ShowMessageParams(lsp.MessageType.Warning, f"codeasst: {exc.one_line()}"))
        return
    if doc.version != version or uri not in ls.workspace.text_documents:
        return
    ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(
        uri=uri, version=version, diagnostics=[_diagnostic(d, doc.lines) for d in found]))


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


# Code actions.

def code_action(ls: CodeasstServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
    uri = params.text_document.uri
    try:
        doc, rel = ls.document(uri)
    except Refused as exc:
        log.info("no code actions: %s", exc)
        return []
    if not rel.endswith(_PYTHON):
        return []
    actions = []
    wanted = params.context.only
    for d in params.context.diagnostics:
        if d.source != "flake8" or (wanted and lsp.CodeActionKind.QuickFix not in wanted):
            continue
        actions.append(_action(ls.session(), f"codeasst: fix {d.code} here", lsp.CodeActionKind.QuickFix,
                               {"uri": uri, "line": d.range.start.line + 1, "version": doc.version}, [d]))
    if not wanted or any(FIX_FILE.startswith(k) for k in wanted):
        actions.append(_action(ls.session(), "codeasst: fix the file", FIX_FILE,
                               {"uri": uri, "line": None, "version": doc.version}, None))
    return actions


def _action(s: Session, title: str, kind: str, data: dict, diagnostics: list | None) -> lsp.CodeAction:
    if s.resolve_edits:
        return lsp.CodeAction(title, kind=kind, diagnostics=diagnostics, data=data)
    arguments = [data["uri"], data["version"]] if data["line"] is None else [data["uri"], data["line"], data["version"]]
    command = "codeasst.fixFile" if data["line"] is None else "codeasst.fixLine"
    return lsp.CodeAction(title, kind=kind, diagnostics=diagnostics,
                          command=lsp.Command(title=title, command=command, arguments=arguments))


async def resolve_action(ls: CodeasstServer, action: lsp.CodeAction) -> lsp.CodeAction:
    if action.command is not None or not isinstance(action.data, dict):
        return action  # a client that resolves every action: this one runs its command instead
    data = action.data
    edit, why = await _fix_edit(ls, str(data.get("uri", "")), data.get("line"), data.get("version"))
    if edit is None:
        action.title = f"{action.title}: {why}"
        ls.window_show_message(lsp.ShowMessageParams(lsp.MessageType.Info, f"codeasst: {why}"))
    action.edit = edit
    return action


async def fix_file(ls: CodeasstServer, *args: Any) -> dict:
    uri, version = command_args(args, str, int)
    return await _fix_command(ls, uri, None, version)


async def fix_line(ls: CodeasstServer, *args: Any) -> dict:
    uri, line, version = command_args(args, str, int, int)
    return await _fix_command(ls, uri, line, version)


async def _fix_command(ls: CodeasstServer, uri: Any, line: Any = None, version: Any = None) -> dict:
    edit, why = await _fix_edit(ls, str(uri), line, version)
    if edit is None:
        ls.window_show_message(lsp.ShowMessageParams(lsp.MessageType.Info, f"codeasst: {why}"))
        return {"applied": False, "reason": why}
    result = await ls.workspace_apply_edit_async(lsp.ApplyWorkspaceEditParams(edit, label="codeasst fix"))
    return {"applied": bool(result.applied), "reason": result.failure_reason or ""}


async def _fix_edit(ls: CodeasstServer, uri: str, line: Any, version: Any) -> tuple[lsp.WorkspaceEdit | None, str]:
    """The edit of the verified fix (at `line`, or of the whole file), or None and why not."""
    try:
        doc, rel = ls.document(uri)
    except Refused as exc:
        return None, str(exc)
    if version is not None and version != doc.version:
        return None, "the file changed since; ask again"
    assistant = ls.session().assistant(wait_s=30.0)
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
