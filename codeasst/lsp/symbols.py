"""Code search: workspace/symbol answers definitions by name from the code graph, else codeasst's search
for words; the command `codeasst.ask` [question] returns the checked answer as Markdown and its
citations as locations."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from codeasst.access import Assistant, ServerError, Unreachable
from codeasst.errors import CodeasstError
from codeasst.lsp.state import CodeasstServer, command_args, lsp_error

log = logging.getLogger("codeasst.lsp")

_KINDS = {"function": lsp.SymbolKind.Function, "method": lsp.SymbolKind.Method, "class": lsp.SymbolKind.Class,
          "module": lsp.SymbolKind.Module, "attribute": lsp.SymbolKind.Field, "constant": lsp.SymbolKind.Constant}


def register(server: CodeasstServer) -> None:
    server.feature(lsp.WORKSPACE_SYMBOL)(symbols)
    server.command("codeasst.ask")(ask)


async def symbols(ls: CodeasstServer, params: lsp.WorkspaceSymbolParams) -> list[lsp.SymbolInformation]:
    s = ls.session()
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


async def ask(ls: CodeasstServer, *args: Any) -> dict:
    (question,) = command_args(args, str)
    if not question or not question.strip():
        raise lsp_error("codeasst.ask needs a question")
    s = ls.session()
    assistant = s.assistant(wait_s=60.0)
    if assistant is None:
        raise lsp_error("codeasst serve is not answering")
    try:
        answer = await asyncio.to_thread(_answer, assistant, question)
    except (CodeasstError, ServerError, Unreachable) as exc:
        raise lsp_error(exc.one_line()) from None
    return _answer_markdown(s.root, answer)


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
