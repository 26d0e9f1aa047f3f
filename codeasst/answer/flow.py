"""The flow lead of `ask`: for a "how does / what happens when / where is X used" question, the
path through the code, from the code graph (codeasst.index.graphdb), built without the model.

The entry is the definition retrieval's best hit shows (or, in a whole file, the one whose name,
docstring and outline share most words with the question). From there the resolved calls are
followed, breadth first, a few levels deep, and the chain ends at the definition whose own lines
cover the question best: the one that does the work. A definition's words are its name's (twice),
its docstring's and its outline's (the lines that carry its logic, index/outline.py). A utility,
named from many places (string quoting, formatting), counts a tenth as a step, as Aider's repo map
weighs names defined or used everywhere. Each step is shown with `path:line` and the
first sentence of its docstring; a question about uses lists the entry's callers instead. The
chain's definitions are also what the model reads first, whole and in call order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from codeasst.answer import grounding
from codeasst.index.chunkdb import Hit
from codeasst.index.graphdb import CodeGraph, DefRow, EdgeRow
from codeasst.index.outline import outline
from codeasst.index.roles import role_of
from codeasst.retrieve.fuse import Fused
from codeasst.retrieve.query import identifiers_in

FLOW = re.compile(
    r"^\W*(?:how\b|what happens|in what (?:order|way)|walk me through|trace\b|explain how|"
    r"what (?:is|are) the (?:flow|process|sequence|steps|mechanism|path)|"
    r"(?:which|what) (?:\w+ ){0,3}(?:calls?|invokes?|uses?|runs?|triggers?)\b|who calls|where (?:is|are)\b.*\b(?:used|called|invoked))",
    re.IGNORECASE)
USES = re.compile(r"\b(?:where (?:is|are)\b.*\b(?:used|called|invoked)|who calls|what calls|callers?\b|"
                  r"used by|called by|(?:which|what) (?:\w+ ){0,3}(?:calls?|uses?|invokes?)\b)", re.IGNORECASE)
DEPTH = 3
MAX_VISITED = 80
MAX_CHAIN = 5
MAX_CALLERS = 5
CODE_ROLES = frozenset({"implementation"})
# A definition whose name this many edges use is a utility: as a step it weighs UTILITY_WEIGHT.
UTILITY_FAN_IN = 8
UTILITY_WEIGHT = 0.1
# The chain's end must cover the question at least this well (a word of its name, or two of its
# docstring's and outline's): one shared word anywhere in a body is chance.
MIN_STEP = 2


@dataclass
class Flow:
    chain: list[DefRow]  # the entry first, then each definition the one before calls
    lines: list[int] = field(default_factory=list)  # the line of each call, in the caller's file
    callers: list[EdgeRow] = field(default_factory=list)
    uses: bool = False  # the question asks where the entry is used

    def render(self, outlines: dict | None = None) -> str:
        """The chain, each step under its outline where `outlines` has one by (path, line) (the entry's
        is the lead's, above)."""
        if not self.shown:
            return ""
        out = ["How it flows (from the code graph):"]
        for i, d in enumerate(self.chain):
            doc = f": {d.doc}" if d.doc else ""
            how = "" if i == 0 else f"calls (at line {self.lines[i]}) " if self.lines[i] else "its method "
            out.append(f"{i + 1}. {how}`{_short(d.qname)}` at {d.path}:{d.line}{doc}")
            found = (outlines or {}).get((d.path, d.line)) if i else None
            if found is not None and len(found.lines) > 1:
                rendered = found.render()
                out += ["  " + line for line in (rendered[1:] if found.lines[0].number == d.line else rendered)]
        if self.callers:
            seen = []
            for e in self.callers:
                if e.src.qname not in {s.src.qname for s in seen}:
                    seen.append(e)
            out.append("Called by: " + ", ".join(f"`{_short(e.src.qname)}` ({e.path}:{e.line})"
                                                 for e in seen[:MAX_CALLERS]))
        return "\n".join(out) + "\n\n"

    @property
    def shown(self) -> bool:
        """Whether there is a flow to show: a chain of two steps or more, or callers."""
        return len(self.chain) >= 2 or bool(self.callers)

    def places(self) -> list[tuple[str, int, int]]:
        """What `render` shows, as (path, line, end line): each step of the chain and each caller's line;
        none where it shows nothing."""
        if not self.shown:
            return []
        return [(d.path, d.line, d.end_line) for d in self.chain] + [(e.path, e.line, e.line) for e in self.callers]


def _short(qname: str) -> str:
    """`pkg.mod.Class.meth` -> `Class.meth`; `pkg.mod.func` -> `func` (the path says the rest)."""
    parts = qname.split(".")
    return ".".join(parts[-2:]) if len(parts) >= 2 and parts[-2][:1].isupper() else parts[-1]


def asks_for_flow(question: str) -> bool:
    return bool(FLOW.search(question))


def _words(text: str) -> set[str]:
    return grounding._content_words(text)


def _relevance(d: DefRow, wanted: set[str], body: set[str] = frozenset()) -> int:
    """Words shared with the question: those of the name count twice (it says what it does), then
    its docstring's and its outline's (`body`), each word once."""
    named = _words(d.name) & wanted
    doc = (_words(d.doc) & wanted) - named
    return 2 * len(named) + len(doc) + len((body & wanted) - named - doc)


class Weigher:
    """How well each definition's own lines cover the question (its name, docstring and outline),
    a utility weighed down; files are read once (None `root`: names and docstrings only)."""

    def __init__(self, code_graph: CodeGraph, question: str, root: Path | None = None) -> None:
        self.graph = code_graph
        self.root = root
        self.wanted = _words(question)
        self.texts: dict[str, str | None] = {}
        self.bodies: dict[int, set[str]] = {}

    def body(self, d: DefRow) -> set[str]:
        """The words of `d`'s outline, its first line left out (the name counts already)."""
        if self.root is None or d.kind == "module":
            return set()
        if d.id not in self.bodies:
            if d.path not in self.texts:
                try:
                    self.texts[d.path] = (self.root / d.path).read_text(encoding="utf-8", errors="replace")
                except OSError:
                    self.texts[d.path] = None
            text = self.texts[d.path]
            found = outline(d.path, text, d.line, d.end_line) if text is not None else None
            self.bodies[d.id] = _words(" ".join(line.text for line in found.lines[1:])) if found else set()
        return self.bodies[d.id]

    def relevance(self, d: DefRow, wanted: set[str] | None = None) -> int:
        return _relevance(d, self.wanted if wanted is None else wanted, self.body(d))

    def as_step(self, walked: list[DefRow], wanted: set[str]) -> list[float]:
        """Each walked definition's relevance as the chain's end: a utility's a tenth."""
        used = self.graph.referenced({d.name for d in walked})
        return [self.relevance(d, wanted) * (UTILITY_WEIGHT if used.get(d.name, 0) >= UTILITY_FAN_IN else 1.0)
                for d in walked]


def candidates(code_graph: CodeGraph, hits: list, question: str, limit: int = 3, most: int = 6,
               weigher: Weigher | None = None) -> list[DefRow]:
    """Where the flow may start, best first: the definitions the best code hits show (a
    definition hit's own; in a file or a module's top level, those whose name, or docstring and
    outline, share words with the question, most words first)."""
    weigher = weigher or Weigher(code_graph, question)
    found: list[DefRow] = []
    for hit in hits[:limit]:
        if getattr(hit, "role", "implementation") not in CODE_ROLES:
            continue
        in_file = [d for d in code_graph.in_file(hit.path) if d.kind != "module"]
        if hit.kind in ("function", "method", "class"):
            holding = [d for d in in_file if hit.start_line <= d.line <= hit.end_line]
            holding = holding or [d for d in code_graph.in_file(hit.path, hit.start_line) if d.kind != "module"]
            mine = [min(holding, key=lambda d: (d.line, -d.end_line))] if holding else []
        else:
            inside = in_file if hit.start_line == 1 else [d for d in in_file if hit.start_line <= d.line <= hit.end_line]
            used = code_graph.referenced({d.name for d in inside})
            # A guess from words alone: a definition whose name shares a word with the question, or
            # whose docstring and outline share two.
            scored = [(weigher.relevance(d), d) for d in inside if d.kind in ("function", "method", "class")]
            mine = [d for score, d in sorted(scored, key=lambda p: (-p[0], p[1].kind == "class",
                                                                     -used.get(p[1].name, 0), p[1].line))
                    if score >= 2]
        found += [d for d in mine if all(d.id != f.id for f in found)]
    return found[:most]


def _walk(code_graph: CodeGraph, entry: DefRow) -> tuple[list[DefRow], dict, dict]:
    """Definitions reachable from `entry` through resolved calls (and a class's own methods),
    breadth first, in product code; a cycle (recursion, mutual calls) is visited once."""
    parent: dict[int, tuple[DefRow, int] | None] = {entry.id: None}
    depth = {entry.id: 0}
    order = [entry]
    frontier = [entry]
    while frontier and len(order) < MAX_VISITED:
        nxt = []
        for d in frontier:
            if depth[d.id] >= DEPTH:
                continue
            steps = [(edge.line, found) for edge, found in code_graph.out_edges(d, ("call",))]
            if d.kind == "class":  # a class works through its methods
                steps += [(0, [m]) for m in code_graph.members(d)]
            for line, found in steps:
                for target in found:
                    if target.id in parent or target.kind == "module" or role_of(target.path) not in CODE_ROLES:
                        continue
                    parent[target.id] = (d, line)
                    depth[target.id] = depth[d.id] + 1
                    order.append(target)
                    nxt.append(target)
        frontier = nxt
    return order, parent, depth


def _chain(entry: DefRow, question: str, walked, weigher: Weigher) -> tuple[list[DefRow], list[int], float]:
    """The chain from `entry` to the reachable definition whose own lines cover the question best
    (not counting the entry's words), and how well."""
    order, parent, depth = walked
    wanted = _words(question) - _words(entry.name)
    steps = weigher.as_step(order, wanted)
    scored = [(steps[i], -depth[d.id], -i) for i, d in enumerate(order)]
    best_i = max(range(1, len(order)), key=lambda i: scored[i], default=None)
    chain, lines = [entry], [0]
    if best_i is None or scored[best_i][0] < MIN_STEP:
        return chain, lines, 0
    path: list[tuple[DefRow, int]] = []
    node = order[best_i]
    while parent[node.id] is not None:
        caller, line = parent[node.id]
        path.append((node, line))
        node = caller
    for d, line in list(reversed(path))[-(MAX_CHAIN - 1):]:
        chain.append(d)
        lines.append(line)
    return chain, lines, scored[best_i][0]


def flow(code_graph: CodeGraph, entry: DefRow, question: str, root: Path | None = None) -> Flow:
    """The chain of calls from `entry` to the definition that does the work, and its callers
    when the question asks where it is used."""
    chain, lines, _ = _chain(entry, question, _walk(code_graph, entry), Weigher(code_graph, question, root))
    return _with_callers(code_graph, Flow(chain, lines), question)


def _with_callers(code_graph: CodeGraph, path: Flow, question: str) -> Flow:
    path.uses = bool(USES.search(question))
    if path.uses:
        callers = code_graph.in_edges(path.chain[0], ("call", "ref"), limit=20)[0]
        path.callers = [e for e in callers if role_of(e.path) in CODE_ROLES] or callers
    return path


def named(code_graph: CodeGraph, hits: list, question: str, most: int = 3) -> list[DefRow]:
    """The definitions the question names (`Schema.load`, `load_config`), in product code, those
    in the files retrieval found first."""
    files = {h.path for h in hits}
    found: list[DefRow] = []
    for name in identifiers_in(question):
        defs = [d for d in code_graph.find(name) if d.kind != "module" and role_of(d.path) in CODE_ROLES]
        defs.sort(key=lambda d: d.path not in files)
        found += [d for d in defs[:2] if all(d.id != f.id for f in found)]
    return found[:most]


def best_flow(code_graph: CodeGraph, hits: list, question: str, root: Path | None = None) -> Flow | None:
    """The flow through the code that answers a question best: from each candidate entry, the
    chain to the definition that does the work, scored by the words the entry and the chain's
    end share with the question; a definition the question names is the entry if any is, and
    the best retrieval hit's wins a tie. A question about uses starts at the definition it names
    and lists its callers. Outlines are read under `root` (None: names and docstrings only)."""
    weigher = Weigher(code_graph, question, root)
    starts = named(code_graph, hits, question) or candidates(code_graph, hits, question, weigher=weigher)
    if not starts:
        return None
    if USES.search(question):
        return _with_callers(code_graph, Flow([starts[0]], [0]), question)
    best: tuple[float, Flow] | None = None
    for entry in starts:
        chain, lines, reached = _chain(entry, question, _walk(code_graph, entry), weigher)
        score = weigher.relevance(entry) + reached
        if best is None or score > best[0]:
            best = (score, Flow(chain, lines))
    return best[1]


def chain_hits(root: Path, chain: list[DefRow], have: list[Fused], max_chars: int) -> list[Fused]:
    """The chain's definitions as hits for the model to read first, in call order: a hit that
    already shows a definition whole stands for it, else the definition is read from its file
    (up to `max_chars`)."""
    out: list[Fused] = []
    for d in chain:
        shown = next((f for f in have if f.hit.path == d.path and f.hit.start_line <= d.line
                      and f.hit.end_line >= d.end_line), None)
        if shown is not None:
            if all(shown is not f for f in out):
                out.append(shown)
            continue
        try:
            lines = (root / d.path).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        end = min(d.end_line, len(lines))
        text = "\n".join(lines[d.line - 1:end])
        while len(text) > max_chars and end > d.line:
            end -= 1
            text = "\n".join(lines[d.line - 1:end])
        if not text.strip():
            continue
        hit = Hit(f"graph:{d.path}:{d.line}", d.path, d.line, end, d.kind, d.qname,
                  "", text, 0.0, role_of(d.path))
        out.append(Fused(hit, 0.0, ("graph",)))
    return out
