"""The tools `codeasst mcp` offers a coding agent, over the one way in (codeasst.access).

Each tool is a record: its name, what an agent reads to choose it, an input model (validated here: the
arguments come from a model that may have read hostile text) and an output model (the result's
`structuredContent`; its JSON schema is the tool's outputSchema). `call` runs one and returns a `Result`:
the structured data and a short text form, each within `mcp.max_chars`, naming `path:start-end` for
everything shown. A refusal is a `Refused` with one line; the server turns it into a tool error.

Nothing here writes to the repository or runs anything from it: `fix` returns a diff, `index` writes
only codeasst's own index (under its lock, as every writer does). A path an agent names is read only
where `index.files.may_read` allows: inside the repository, symlinks followed, not ignored.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from codeasst.access import Assistant, Cancel
from codeasst.errors import CodeasstError
from codeasst.index.files import decode_source, may_read
from codeasst.mcp.schemas import (
    AskIn,
    AskOut,
    Callee,
    Caller,
    Citation,
    Definition,
    DefinitionIn,
    DefinitionOut,
    Finding,
    FixOut,
    Hit,
    IndexIn,
    IndexOut,
    LintIn,
    LintOut,
    Place,
    ReferencesIn,
    ReferencesOut,
    SearchIn,
    SearchOut,
    StatusIn,
    StatusOut,
    _In,
)

PREVIEW_LINES = 3  # of each search hit's code, after its place
CUT = "[cut: {why}]"

class Refused(Exception):
    """A tool call that cannot be answered; the message is one line for the agent."""


@dataclass
class Calling:
    """What a call brings besides its arguments: how to report progress, and whether it was cancelled."""

    progress: Callable[[str], None] | None = None
    cancel: Cancel | None = None

    def say(self, message: str) -> None:
        if self.progress is not None:
            self.progress(message)


@dataclass
class Result:
    data: dict  # structuredContent
    text: str  # what the agent's model reads first


def _place(path: str, start: int, end: int) -> str:
    return f"{path}:{start}-{end}"


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    inputs: type[_In]
    outputs: type[BaseModel]
    run: Callable[..., Result]
    read_only: bool = True
    slow: bool = False  # reports progress

    def input_schema(self) -> dict:
        return self.inputs.model_json_schema()

    def output_schema(self) -> dict:
        return self.outputs.model_json_schema()


class Budget:
    """What a result may still hold: its text and its JSON each within `max_chars`."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.text = 0
        self.data = 0

    def take(self, text: str, data: Any) -> bool:
        size = len(json.dumps(data, default=str))
        if self.text + len(text) > self.max_chars or self.data + size > self.max_chars:
            return False
        self.text += len(text) + 1
        self.data += size
        return True

    def left(self) -> int:
        return self.max_chars - max(self.text, self.data)


RESERVE = 400  # kept for the notes and the cut line


def call(assistant: Assistant, name: str, arguments: dict | None, *, max_chars: int,
         calling: Calling | None = None) -> Result:
    """Tool `name` with the agent's `arguments`; Refused (one line) for anything it cannot answer."""
    tool = TOOLS.get(name)
    if tool is None:
        raise Refused(f"unknown tool {name!r}: one of {', '.join(TOOLS)}")
    if arguments is not None and not isinstance(arguments, dict):
        raise Refused(f"{name}: arguments must be an object")
    try:
        args = tool.inputs.model_validate(arguments or {})
    except ValidationError as exc:
        raise Refused(f"{name}: {_first_error(exc)}") from None
    try:
        return tool.run(assistant, args, Budget(max(max_chars - RESERVE, 200)), calling or Calling())
    except CodeasstError as exc:
        raise Refused(exc.one_line()) from None


def one_line(message: str) -> str:
    """A refusal as one line, whatever the agent's arguments held (a path with a newline)."""
    return message.replace("\r", "\\r").replace("\n", "\\n")


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "arguments"
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where}: {err['msg']}{more}"


def _file(assistant: Assistant, path: str) -> tuple[Any, str]:
    """The file an agent named, if codeasst may read it: (absolute path, relative name)."""
    try:
        return may_read(assistant.root, path)
    except ValueError as exc:
        raise Refused(str(exc)) from None


def _lines(assistant: Assistant, path: str) -> list[str]:
    try:
        target, _ = may_read(assistant.root, path)
        text, _why = decode_source(target.read_bytes())
    except (ValueError, OSError):
        return []
    return text.splitlines() if text is not None else []


# --- the tools ---

def _search(assistant: Assistant, args: SearchIn, budget: Budget, calling: Calling) -> Result:
    reply = assistant.search(args.query, args.k, no_llm=True, client="mcp", cancel=calling.cancel,
                             roles=[args.role] if args.role else (), path=args.path)
    dense = reply.get("dense") or {}
    words_only = not dense.get("embedded")
    notes = [n for n in reply["notes"] if not (words_only and n.startswith("not yet embedded"))]
    if words_only:
        notes.insert(0, "no vectors yet: these hits come from words and exact matches alone "
                        "(`index` brings the words up to date; vectors follow in the background)")
    hits, blocks, cut = [], [], None
    files: dict[str, list[str]] = {}
    for h in reply["hits"]:
        lines = files.setdefault(h["path"], _lines(assistant, h["path"]))
        body = [line for line in lines[h["start_line"] - 1:h["end_line"]] if line.strip()][:PREVIEW_LINES]
        preview = "\n".join(line[:160] for line in body)
        hit = Hit(location=_place(h["path"], h["start_line"], h["end_line"]), preview=preview,
                  **{k: h[k] for k in ("path", "start_line", "end_line", "symbol", "kind", "role", "score", "sources")})
        block = f"{hit.location}  {hit.symbol}  ({hit.kind}, {hit.role})\n" + "".join(
            f"    {line}\n" for line in preview.splitlines())
        if not budget.take(block, hit.model_dump()):
            cut = CUT.format(why=f"{len(reply['hits']) - len(hits)} more hits left out to stay within "
                                 "mcp.max_chars; ask for fewer (k) or narrow with path or role")
            break
        hits.append(hit)
        blocks.append(block)
    out = SearchOut(query=args.query, hits=hits, notes=notes, words_only=words_only, cut=cut)
    head = "".join(f"note: {n}\n" for n in notes)
    text = head + ("".join(blocks) if blocks else "no hits\n") + (f"{cut}\n" if cut else "")
    return Result(out.model_dump(), text.rstrip("\n"))


def _definition(assistant: Assistant, args: DefinitionIn, budget: Budget, _calling: Calling) -> Result:
    found = assistant.definition(args.name)
    defs, blocks, cut = [], [], None
    for i, d in enumerate(found):
        skip = args.offset if i == 0 else 0
        lines = d["source"].splitlines()[skip:]
        start = d["line"] + skip
        head = f"{_place(d['path'], d['line'], d['end_line'])}  {d['qname']}  ({d['kind']})\n"
        item = Definition(location=_place(d["path"], d["line"], d["end_line"]), source="", source_from=start,
                          **{k: d[k] for k in ("qname", "kind", "path", "line", "end_line", "signature", "doc")})
        if i > 0:  # the first is shown whole; the others by place and signature
            block = head + (f"    {d['signature']}\n" if d["signature"] else "")
            if not budget.take(block, item.model_dump()):
                cut = CUT.format(why=f"{len(found) - i} more definitions of {args.name!r} left out; "
                                     "give a qualified name")
                break
            defs.append(item)
            blocks.append(block)
            continue
        room = budget.left() - len(json.dumps(item.model_dump())) - len(head)
        shown, used = [], 0
        for n, line in enumerate(lines):
            numbered = f"{start + n:>6}  {line}\n"
            if used + 2 * len(numbered) > room:  # the line is both in the text and the JSON
                cut = CUT.format(why=f"source shown to line {start + n - 1} of {d['end_line']}; "
                                     f"call definition with offset={skip + n} to read on")
                break
            shown.append(line)
            used += 2 * len(numbered)
        item.source = "\n".join(shown)
        budget.take(head, item.model_dump())
        defs.append(item)
        blocks.append(head + "".join(f"{start + n:>6}  {line}\n" for n, line in enumerate(shown)))
    if len(found) > 1:
        blocks.insert(1, f"{args.name!r} names {len(found)} definitions; also:\n")
    out = DefinitionOut(name=args.name, definitions=defs, found=len(found), cut=cut)
    return Result(out.model_dump(), ("".join(blocks) + (f"{cut}\n" if cut else "")).rstrip("\n"))


def _references(assistant: Assistant, args: ReferencesIn, budget: Budget, _calling: Calling) -> Result:
    places, blocks, cut = [], [], None
    found = assistant.refs(args.name, limit=args.limit, outline=args.outline)
    for p in found:
        callees = [Callee(name=c["name"], line=c["line"], targets=[f"{t['qname']} at {t['path']}:{t['line']}"
                                                                   for t in c["resolved"]])
                   for c in p["callees"] if c["resolved"]]
        place = Place(location=_place(p["path"], p["line"], p["end_line"]), qname=p["qname"], kind=p["kind"],
                      signature=p["signature"],
                      callers=[Caller(location=f"{e['path']}:{e['line']}", qname=e["qname"], kind=e["kind"])
                               for e in p["callers"]],
                      callers_unresolved=p["callers_unresolved"], callees=callees,
                      callees_unresolved=sorted({c["name"] for c in p["callees"] if not c["resolved"]}),
                      bases=[f"{b['qname']} at {b['path']}:{b['line']}" for b in p["bases"]],
                      outline=(p.get("outline") or {}).get("rendered", []))
        block = "\n".join(assistant.refs_lines([p], show_unresolved=True)) + "\n"
        if not budget.take(block, place.model_dump()):
            cut = CUT.format(why=f"{len(found) - len(places)} more definitions left out; give a qualified "
                                 "name or a smaller limit")
            break
        places.append(place)
        blocks.append(block)
    out = ReferencesOut(name=args.name, places=places, cut=cut)
    return Result(out.model_dump(), ("\n".join(blocks) + (f"{cut}\n" if cut else "")).rstrip("\n"))


def _ask(assistant: Assistant, args: AskIn, budget: Budget, calling: Calling) -> Result:
    answer, notes = None, []
    events = assistant.ask(args.question, client="mcp", cancel=calling.cancel)
    try:
        for event in events:
            if event["type"] == "note":
                notes.append(event["text"])
            elif calling.cancel is not None and calling.cancel.is_set():
                raise Refused("the question was cancelled")
            elif event["type"] == "text" and event["text"]:
                calling.say(event["text"])  # the answer as it is written, where the client shows progress
            elif event["type"] == "answer":
                answer = event
    finally:
        events.close()
    if answer is None:
        raise Refused("the answer stopped before it ended; ask again")
    citations = [Citation(location=_place(c["path"], c["start_line"], c["end_line"]), verified=c["verified"],
                          reason=c["reason"]) for c in answer["citations"]]
    left_out = [f"{item['text']} ({item['why']})" for item in answer["left_out"]]
    text, cut = answer["answer"].strip(), None
    footer = "".join(f"[{c.location}] {'verified' if c.verified else 'not verified: ' + c.reason}\n"
                     for c in citations)
    footer += "".join(f"left out: {line}\n" for line in left_out)
    room = budget.left() // 2 - len(footer) - len(args.question)
    if len(text) > room:
        text = text[:max(room, 0)].rsplit("\n", 1)[0]
        cut = CUT.format(why="the answer was cut to stay within mcp.max_chars; its citations are all listed")
    out = AskOut(question=args.question, answer=text, citations=citations, left_out=left_out, notes=notes, cut=cut)
    head = "".join(f"note: {n}\n" for n in notes)
    return Result(out.model_dump(), (head + text + "\n\n" + footer + (f"{cut}\n" if cut else "")).rstrip("\n"))


def _findings(path: str, items: list[dict], budget: Budget) -> tuple[list[Finding], list[str], str | None]:
    findings, lines = [], []
    for d in items:
        f = Finding(location=f"{path}:{d['line']}:{d['col']}", code=d["code"], message=d["message"])
        line = f"{f.location}: {f.code} {f.message}"
        if not budget.take(line, f.model_dump()):
            return findings, lines, CUT.format(why=f"{len(items) - len(findings)} more findings left out; "
                                                   "fix these first, or run `codeasst fix` on the file")
        findings.append(f)
        lines.append(line)
    return findings, lines, None


def _buffer(assistant: Assistant, args: LintIn) -> tuple[str, str]:
    target, rel = _file(assistant, args.path)
    if not rel.endswith((".py", ".pyi")):
        raise Refused(f"{rel!r} is not a Python file: flake8 reads .py and .pyi files")
    if args.text is not None:
        return rel, args.text
    try:
        if not target.is_file():
            raise Refused(f"{rel!r}: no such file")
        text, why = decode_source(target.read_bytes())
    except OSError as exc:
        raise Refused(f"{rel!r}: {exc.strerror or 'unreadable'}") from None
    if text is None:
        raise Refused(f"{rel!r}: {why}")
    return rel, text


def _lint(assistant: Assistant, args: LintIn, budget: Budget, _calling: Calling) -> Result:
    rel, text = _buffer(assistant, args)
    findings, lines, cut = _findings(rel, assistant.lint(rel, text), budget)
    out = LintOut(path=rel, findings=findings, cut=cut)
    body = "\n".join(lines) if lines else f"{rel}: flake8 finds nothing"
    return Result(out.model_dump(), body + (f"\n{cut}" if cut else ""))


def _fix(assistant: Assistant, args: LintIn, budget: Budget, calling: Calling) -> Result:
    rel, text = _buffer(assistant, args)
    result = assistant.fix(rel, text, client="mcp", cancel=calling.cancel)
    remaining, lines, cut = _findings(rel, result["remaining"], budget)
    diff = "".join(difflib.unified_diff(text.replace("\r\n", "\n").splitlines(keepends=True),
                                        result["text"].splitlines(keepends=True), f"a/{rel}", f"b/{rel}"))
    room = budget.left() // 2
    if len(diff) > room:
        diff = diff[:room].rsplit("\n", 1)[0] + "\n"
        cut = CUT.format(why="the diff was cut to stay within mcp.max_chars; run `codeasst fix FILE` for all of it")
    out = FixOut(path=rel, clean=result["clean"], changed=result["changed"], fixed=result["fixed"],
                 remaining=remaining, diff=diff, cut=cut)
    head = (f"{rel}: {result['fixed']} of {result['before']} findings fixed and verified; nothing was written"
            if result["changed"] else f"{rel}: no verified fix")
    body = "\n".join([head, *(["remaining:", *lines] if lines else []), diff.rstrip("\n")])
    return Result(out.model_dump(), body + (f"\n{cut}" if cut else ""))


def _status(assistant: Assistant, _args: StatusIn, budget: Budget, _calling: Calling) -> Result:
    data = assistant.status()
    dense = data.get("dense") or {}
    stale = data.get("stale") or {}
    changed = {k: list(stale.get(k, []))[:50] for k in ("added", "modified", "deleted")}
    out = StatusOut(root=str(data["root"]), indexed=bool(data.get("indexed")), files=data.get("files", 0),
                    chunks=data.get("chunks", 0), embedded=dense.get("embedded", 0),
                    embeddable=dense.get("total", 0), changed_since=changed, where=assistant.where)
    counts = ", ".join(f"{len(stale.get(k, []))} {k}" for k in changed)
    text = (f"{out.root}: " + (f"{out.files} files, {out.chunks} chunks; vectors for {out.embedded} of "
                               f"{out.embeddable}; since the last run: {counts}" if out.indexed else "not indexed yet"))
    return Result(out.model_dump(), text)


def _index(assistant: Assistant, args: IndexIn, _budget: Budget, _calling: Calling) -> Result:
    summary = assistant.index(args.rebuild, vectors=False)
    dense = summary.get("dense") or {}
    dense_wait = max(dense.get("total", 0) - dense.get("embedded", 0), 0)
    note = ("vectors follow in the background" + (" (codeasst serve)" if assistant.where != "here" else
                                                  ", while this session lasts") +
            "; search works from words meanwhile")
    out = IndexOut(files=summary.get("files", 0), chunks=summary.get("chunks", 0), added=summary.get("added", 0),
                   changed=summary.get("changed", 0), deleted=summary.get("deleted", 0),
                   waiting_for_vectors=dense_wait, seconds=round(summary.get("elapsed_s", 0.0), 2), note=note)
    text = (f"indexed {out.files} files ({out.added} added, {out.changed} changed, {out.deleted} deleted) "
            f"in {out.seconds} s; {note}")
    return Result(out.model_dump(), text)


TOOLS: dict[str, Tool] = {t.name: t for t in (
    Tool("search", "Find the code in this repository that does or names something, from words or identifiers "
         "(BM25, exact matches and, where embedded, vectors; fused, weighed by file role). Returns hits as "
         "path:start-end with each hit's first lines. Faster and cheaper than grep plus reading files: use it "
         "first, then `definition` on the symbol of a function, class or method hit.", SearchIn, SearchOut, _search),
    Tool("definition", "The source of a function, class or method by name (bare, dotted tail or qualified), with "
         "its signature, docstring and path:start-end; every definition the name has is listed.",
         DefinitionIn, DefinitionOut, _definition),
    Tool("references", "Who calls a definition and what it calls, from the code graph (path:line each); calls "
         "the graph cannot resolve are counted, never guessed. For an attribute or constant: who reads it.",
         ReferencesIn, ReferencesOut, _references),
    Tool("ask", "A short answer about this code: the definitions that answer with their outlines (or, for "
         "'where do I add X?', where the existing ones are registered), then, where a GPU runs codeasst's local "
         "model, its sentences, each checked against the line it cites. Seconds on a CPU; prefer search and "
         "definition when you can read code yourself.", AskIn, AskOut, _ask, slow=True),
    Tool("lint", "flake8's findings for a Python file or its unsaved text, with the project's flake8 config.",
         LintIn, LintOut, _lint),
    Tool("fix", "A verified fix of flake8's findings in a Python file, as a unified diff. Nothing is written: "
         "apply the diff yourself.", LintIn, FixOut, _fix),
    Tool("status", "What is indexed, how much has vectors, and which files changed since the last index run.",
         StatusIn, StatusOut, _status),
    Tool("index", "Bring codeasst's index of this repository up to date (words and code graph); returns when "
         "they are done. Writes only codeasst's own index, never the repository.", IndexIn, IndexOut, _index,
         read_only=False, slow=True),
)}
