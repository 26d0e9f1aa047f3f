"""`codeasst refs NAME`: a definition's place, its callers and its callees, from the code graph; for an
attribute or a constant, the definitions that read it.

The index is brought up to date first (words and graph; vectors are not needed). A NAME may be
qualified (`pkg.mod.Class.meth`), a dotted tail (`Class.meth`) or bare (`meth`); every
definition it names is shown, the plainest first (codeasst.index.graphdb.CodeGraph.find).
Calls the graph cannot resolve (a method on a receiver whose type the code does not say, a
builtin, another package) are counted and named as such, never guessed.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from codeasst.errors import CodeasstError, IndexLocked, UsageError
from codeasst.index.attributes import VALUE_KINDS
from codeasst.index.chunker import language_for
from codeasst.index.files import decode_source
from codeasst.index.graphdb import CodeGraph, DefRow, EdgeRow, read_graph
from codeasst.index.outline import MAX_LINES, Focus, Outline, outline
from codeasst.services import Services

CALL_KINDS = ("call", "ref")
READ_KINDS = ("read",)  # into an attribute or a constant


@dataclass
class Place:
    definition: DefRow
    callers: list[EdgeRow] = field(default_factory=list)
    callers_unresolved: int = 0  # calls by this name on receivers of unknown type
    callees: list[tuple[EdgeRow, list[DefRow]]] = field(default_factory=list)
    bases: list[DefRow] = field(default_factory=list)
    outline: Outline | None = None  # where asked for: the lines that carry its logic (index/outline.py)

    def to_json(self) -> dict:
        data = self.definition.to_json()
        if self.outline is not None:
            data["outline"] = {**self.outline.to_json(), "rendered": self.outline.render()}
        data["callers"] = [{"qname": e.src.qname, "path": e.path, "line": e.line, "kind": e.kind}
                           for e in self.callers]
        data["callers_unresolved"] = self.callers_unresolved
        data["callees"] = [{"name": e.name, "line": e.line, "kind": e.kind,
                            "resolved": [d.to_json() for d in found],
                            **({} if found else {"unresolved": unresolved_reason(e)})}
                           for e, found in self.callees]
        data["bases"] = [b.to_json() for b in self.bases]
        return data


def unresolved_reason(edge: EdgeRow) -> str:
    if edge.target is None:
        return "dynamic: the receiver's type is not in the code" if edge.kind == "call" else "not resolved"
    return f"outside the repository ({edge.target})"


def references(services: Services, name: str, *, limit: int = 50, update_index: bool = True,
               outline: bool = False) -> list[Place]:
    """Every definition NAME names, with up to `limit` callers and all its callees; with `outline`, each
    with the lines that carry its logic."""
    with _named(services, name, update_index) as (code_graph, found):
        places = [place(code_graph, d, limit) for d in found]
        if outline:
            files = _Files(services.repo.root)
            for p in places:
                p.outline = outline_of(files, p.definition, p.callees)
        return places


@contextmanager
def _named(services: Services, name: str, update_index: bool) -> Iterator[tuple[CodeGraph, list[DefRow]]]:
    """The code graph, open, and every definition NAME names in it; one line for a NAME that names none."""
    if not name.strip():
        raise UsageError("give a NAME: a function, class, method, attribute or constant, bare or qualified")
    if update_index:
        _update_words(services)
    code_graph = read_graph(services.indexer().index_dir)
    if code_graph is None:
        raise CodeasstError(f"no code graph for {services.repo.root} yet", hint="run `codeasst index`")
    with closing(code_graph):
        found = code_graph.find(name, values=True)
        if not found:
            raise CodeasstError(f"no definition named {name!r} in the code graph",
                                hint="try a shorter or a qualified name; `codeasst search` finds code by words")
        yield code_graph, found


def definitions(services: Services, name: str, *, limit: int = 20, update_index: bool = True) -> list[dict]:
    """Every definition NAME names (as `references`), the plainest first, each with its source as the
    file holds it now: DefRow.to_json() plus "source". A file that no longer reads as text gives
    its place with an empty source and "unreadable"."""
    files = _Files(services.repo.root)
    with _named(services, name, update_index) as (_graph, found):
        return [files.source(d) for d in found[:limit]]


def _read_text(path) -> tuple[str | None, str | None]:
    try:
        return decode_source(path.read_bytes())
    except OSError as exc:
        return None, exc.strerror or "unreadable"


class _Files:
    """The repository's files as they are now, each read once (None: gone or not text)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._read: dict[str, tuple[str | None, str | None]] = {}
        self._lines: dict[str, list[str] | None] = {}

    def read(self, path: str) -> tuple[str | None, str | None]:
        """(text, None), or (None, why it cannot be read as text)."""
        if path not in self._read:
            self._read[path] = _read_text(self.root / path)
        return self._read[path]

    def text(self, path: str) -> str | None:
        return self.read(path)[0]

    def lines(self, path: str) -> list[str] | None:
        if path not in self._lines:
            text = self.text(path)
            self._lines[path] = text.splitlines() if text is not None else None
        return self._lines[path]

    def source(self, d: DefRow) -> dict:
        """DefRow.to_json() with "source", its lines as the file holds them now (and "unreadable" where
        the file no longer reads as text)."""
        text, why = self.read(d.path)
        lines = text.splitlines()[d.line - 1:d.end_line] if text is not None else []
        return {**d.to_json(), "source": "\n".join(lines), **({"unreadable": why} if why else {})}

    def where_now(self, d: DefRow) -> int | None:
        """The line `d` starts on in its file as it is now: the graph's line where it still says so,
        else the one line that defines that name; None where the file no longer tells."""
        lines = self.lines(d.path)
        if lines is None:
            return None
        if 0 < d.line <= len(lines) and re.search(rf"\b{re.escape(d.name)}\b", lines[d.line - 1]):
            return d.line
        pattern = re.compile(rf"^\s*(?:async\s+)?(?:def|class|func(?:\s*\([^)]*\))?|function)\s+{re.escape(d.name)}\b")
        found = [n for n, line in enumerate(lines, 1) if pattern.search(line)]
        return found[0] if len(found) == 1 else None


def outline_at(root: Path, code_graph: CodeGraph | None, path: str, line: int, end_line: int,
               max_lines: int = MAX_LINES, focus: Focus | None = None) -> Outline | None:
    """The outline of the definition starting at `path`:`line`, its calls' targets from the graph where
    there is one (else none are named); None for a file not readable as text or a language unread.
    `focus`: the question asked, whose lines it keeps first."""
    files = _Files(root)
    found = [d for d in code_graph.in_file(path, line) if d.line == line] if code_graph is not None else []
    if not found:
        text = files.text(path)
        return outline(path, text, line, end_line, max_lines=max_lines, focus=focus) if text is not None else None
    d = found[0]
    return outline_of(files, d, code_graph.out_edges(d, ("call",)) if d.kind != "class" else [], max_lines, focus)


def outline_of(files: _Files, d: DefRow, callees: list[tuple[EdgeRow, list[DefRow]]],
               max_lines: int = MAX_LINES, focus: Focus | None = None) -> Outline | None:
    """`d`'s outline from its file as it is now, each call into the repository with its targets'
    `path:line` (a target whose file changed so that its line cannot be found is left out)."""
    text = files.text(d.path)
    if text is None:
        return None
    calls: dict[int, list[str]] = {}
    for edge, targets in callees:
        for target in targets:
            line = files.where_now(target)
            if line is not None and f"{target.qname} at {target.path}:{line}" not in calls.get(edge.line, []):
                calls.setdefault(edge.line, []).append(f"{target.qname} at {target.path}:{line}")
    return outline(d.path, text, d.line, d.end_line, calls, max_lines=max_lines, focus=focus)


def _update_words(services: Services) -> None:
    """The index's words and graph up to date; no vectors (the graph needs none)."""
    indexer = services.indexer()
    if not indexer.has_index():
        services.note(f"no index for {services.repo.root} yet: indexing it first")
    try:
        summary = indexer.run(embed_limit=0)
        if summary.graph_note:
            services.note(summary.graph_note)
    except IndexLocked:
        services.note("the index is being updated by another run; reading the graph as it is")


def place(code_graph: CodeGraph, d: DefRow, limit: int = 50) -> Place:
    if d.kind in VALUE_KINDS:  # its "callers" are the definitions that read it
        return Place(d, code_graph.in_edges(d, READ_KINDS, limit=limit)[0])
    callers, unresolved = code_graph.in_edges(d, CALL_KINDS, limit=limit)
    callees = code_graph.out_edges(d, ("call",)) if d.kind != "class" else []
    bases = code_graph.bases(d.qname) if d.kind == "class" else []
    return Place(d, callers, unresolved, callees, bases)


def place_lines(places: list[dict], show_unresolved: bool = False) -> list[str]:
    """What `codeasst refs` prints for places as Place.to_json() gives them."""
    lines: list[str] = []
    # a name defined in two languages (a Go `Parse`, a Rust `parse` asked as `parse`): each labelled
    languages = {language_for(p["path"]) for p in places}
    for p in places:
        if lines:
            lines.append("")
        label = f", {language_for(p['path'])}" if len(languages) > 1 else ""
        lines.append(f"{p['qname']}  ({p['kind']}{label})  {p['path']}:{p['line']}")
        if p["signature"]:
            lines.append(f"  {p['signature']}")
        if p["doc"]:
            lines.append(f"  {p['doc']}")
        if p.get("outline"):
            lines.append(f"outline ({p['outline']['folded']} of {p['end_line'] - p['line'] + 1} lines folded):")
            lines += p["outline"]["rendered"]
        if p["bases"]:
            lines.append("bases: " + ", ".join(f"{b['qname']} ({b['path']}:{b['line']})" for b in p["bases"]))
        if p["kind"] in VALUE_KINDS:
            lines.append(f"read by ({len(p['callers'])}):")
            lines += [f"  {e['path']}:{e['line']}  {e['qname']}" for e in p["callers"]]
            continue
        more = f"; {p['callers_unresolved']} more calls by this name on receivers of unknown type" \
            if p["callers_unresolved"] else ""
        lines.append(f"callers ({len(p['callers'])}{more}):")
        lines += [f"  {e['path']}:{e['line']}  {e['qname']}" + ("  (passes it on)" if e["kind"] == "ref" else "")
                  for e in p["callers"]]
        resolved = [c for c in p["callees"] if c["resolved"]]
        unresolved = [c for c in p["callees"] if not c["resolved"]]
        lines.append(f"callees ({len(resolved)}; {len(unresolved)} unresolved):")
        seen: set[tuple[str, int]] = set()
        for c in resolved:
            for target in c["resolved"]:
                if (target["path"], target["line"]) not in seen:
                    seen.add((target["path"], target["line"]))
                    lines.append(f"  {p['path']}:{c['line']}  {target['qname']}  -> {target['path']}:{target['line']}")
        if show_unresolved and unresolved:
            lines.append("unresolved: " + ", ".join(sorted({f"{c['name']} ({c['unresolved']})" for c in unresolved})))
    return lines


_SYMBOL = re.compile(r"[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*")


def symbols(services: Services, query: str, *, limit: int = 50, update_index: bool = True) -> list[dict]:
    """What an editor's symbol search (LSP workspace/symbol) shows for `query`: the definitions the code
    graph has by that name (a qualified name, a dotted tail, or the start of a bare name), the name
    itself first; for a query that names no definition (words, as a docstring would say them), the
    definitions in the chunks codeasst's search finds for it, those whose name and docstring share most
    words with the query first. The index's words and graph are brought up to date first (vectors are
    not waited for)."""
    query = query.strip()
    if not query:
        return []
    if update_index:
        _update_words(services)
    code_graph = read_graph(services.indexer().index_dir)
    with closing(code_graph) if code_graph is not None else contextlib.nullcontext():
        found: list[DefRow] = []
        if code_graph is not None and _SYMBOL.fullmatch(query):
            found = code_graph.find(query, values=True) if "." in query else []
            found += [d for d in code_graph.starting(query, limit, values=True) if d not in found]
        if found:
            return [_symbol(d, "graph") for d in found[:limit]]
        return _searched(services, code_graph, query, limit)


def _searched(services: Services, code_graph: CodeGraph | None, query: str, limit: int) -> list[dict]:
    from codeasst.tasks.search import find

    result = find(services, query, min(limit, 20), use_llm=False, update_index=False)
    words = set(re.findall(r"[a-z]+", query.lower()))

    def shared(d: DefRow) -> int:
        return len(words & set(re.findall(r"[a-z]+", f"{d.name.replace('_', ' ')} {d.doc}".lower())))

    out: list[dict] = []
    for fused in result.hits:
        hit = fused.hit
        # An attribute or constant only where it shares a word with the query: a class's dozens would crowd out
        # its methods.
        inside = [d for d in (code_graph.in_file(hit.path, values=True) if code_graph is not None else [])
                  if d.kind != "module" and hit.start_line <= d.line <= hit.end_line
                  and (d.kind not in VALUE_KINDS or shared(d))]
        out += [_symbol(d, "search") for d in sorted(inside, key=lambda d: -shared(d))] or [
            {"name": hit.name.rsplit(".", 1)[-1] or hit.path, "qname": hit.name, "kind": hit.kind, "path": hit.path,
             "line": hit.start_line, "end_line": hit.end_line, "source": "search"}]
    seen: set[tuple[str, int]] = set()
    return [d for d in out if (d["path"], d["line"]) not in seen and not seen.add((d["path"], d["line"]))][:limit]


def _symbol(d: DefRow, source: str) -> dict:
    return {"name": d.name, "qname": d.qname, "kind": d.kind, "path": d.path, "line": d.line,
            "end_line": d.end_line, "source": source}
