"""Relations a sentence states, checked against the code graph: "A calls B", "A is called by B",
"A uses B", "A is used by B", "A returns B", "A raises B", "A inherits from B".

A small model writes relations backwards, or names two things that are both in its excerpt and
joins them with a verb the code does not back; the name check passes such a sentence. Here each
stated relation between two code names is looked up:

- calls: an edge from A to a definition named B (a call, or B passed on as a value), a call of
  B in A's own lines, or a call through one definition between them;
- uses: B named in A's lines, or in a definition A calls;
- returns: a return of B (a call of it, or the name) in A, or B in A's signature;
- raises: a raise of B in A or in a definition A calls;
- inherits: B among A's bases, however far up.

A relation the code does not have is reported with why (and, where the code has it the other
way round, says so); a relation whose subject the graph does not know is not judged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from codeasst.index.graphdb import CodeGraph, DefRow

NAME = r"`([^`\n]{1,80})`|([A-Za-z_]\w*(?:\.\w+)+(?:\(\))?|[A-Za-z_]\w*\(\)|[a-z]+_\w+|[a-z]+[A-Z]\w*|[A-Z]\w*[a-z]\w*[A-Z]\w*)"
KIND = r"(?:\s+(?:method|function|class|helper|routine|constructor|property))?"
ADVERB = r"(?:\s+(?:first|then|also|internally|directly|eventually|finally|later|simply|ultimately|further|in turn))*"
ARTICLE = r"(?:[Tt]he\s+|[Aa]n?\s+)?"
PATTERNS = [
    ("called_by", re.compile(rf"{ARTICLE}(?:{NAME}){KIND}\s+(?:is|are|gets|get|being)\s+(?:\w+ly\s+)?"
                             rf"(?:called|invoked)\s+(?:by|from|in|inside|within)\s+{ARTICLE}(?:{NAME})")),
    ("calls", re.compile(rf"{ARTICLE}(?:{NAME}){KIND}{ADVERB}\s+(?:calls|invokes|delegates to|dispatches to|"
                         rf"calls into|hands off to)\s+{ARTICLE}(?:{NAME})")),
    ("uses", re.compile(rf"{ARTICLE}(?:{NAME}){KIND}{ADVERB}\s+(?:uses|relies on|makes use of)\s+{ARTICLE}(?:{NAME})")),
    ("used_by", re.compile(rf"{ARTICLE}(?:{NAME}){KIND}\s+(?:is|are)\s+(?:\w+ly\s+)?used\s+by\s+{ARTICLE}(?:{NAME})")),
    ("returns", re.compile(rf"{ARTICLE}(?:{NAME}){KIND}{ADVERB}\s+(?:returns|yields)\s+(?:an?\s+|the\s+)?"
                           rf"(?:new\s+)?(?:instance\s+of\s+|result\s+of\s+)?(?:{NAME})")),
    ("raises", re.compile(rf"{ARTICLE}(?:{NAME}){KIND}{ADVERB}\s+(?:raises|throws)\s+(?:an?\s+)?(?:{NAME})")),
    ("inherits", re.compile(rf"{ARTICLE}(?:{NAME}){KIND}\s+(?:inherits\s+from|extends|subclasses|"
                            rf"is\s+an?\s+subclass\s+of|derives\s+from|is\s+derived\s+from)\s+{ARTICLE}(?:{NAME})")),
]
MAX_BODY_LINES = 400
MAX_HOPS = 40  # definitions a relation may go through, one step away


@dataclass(frozen=True)
class Relation:
    kind: str  # calls, called_by, uses, used_by, returns, raises, inherits
    subject: str
    object: str


def stated(sentence: str) -> list[Relation]:
    """The relations a sentence states between two code names."""
    text = sentence.replace("**", "")
    found = []
    for kind, pattern in PATTERNS:
        for m in pattern.finditer(text):
            names = [g for g in m.groups() if g]
            if len(names) == 2:
                found.append(Relation(kind, _clean(names[0]), _clean(names[1])))
    return found


def _clean(name: str) -> str:
    name = name.strip().removesuffix("()")
    name = re.sub(r"\(.*\)$", "", name)
    return name.strip(". ")


def _last(name: str) -> str:
    return name.rsplit(".", 1)[-1]


class RelationCheck:
    """Judges the relations a sentence states against the graph and the repository's files."""

    def __init__(self, code_graph: CodeGraph, root: Path) -> None:
        self.graph = code_graph
        self.root = root
        self._lines: dict[str, list[str]] = {}

    def why_wrong(self, sentence: str, paths: list[str] | None = None) -> str | None:
        """Why a relation the sentence states is not in the code, or None when each is (or cannot
        be judged). `paths`: the files the sentence cites, whose definitions a bare name means first."""
        for rel in stated(sentence):
            verdict = self.judge(rel, paths or [])
            if verdict is not None:
                return verdict
        return None

    def judge(self, rel: Relation, paths: list[str]) -> str | None:
        if rel.kind == "called_by":
            return self._judge_call(rel.object, rel.subject, paths, passive=True)
        if rel.kind == "calls":
            return self._judge_call(rel.subject, rel.object, paths)
        if rel.kind in ("uses", "used_by"):
            user, used = (rel.subject, rel.object) if rel.kind == "uses" else (rel.object, rel.subject)
            users = self._defs(user, paths)
            if not users or any(self._mentions(d, _last(used)) for d in users):
                return None
            if any(self._mentions(d, _last(user)) for d in self._defs(used, paths)):
                return f"backwards: the code has `{used}` using `{user}`"
            return f"the code shows no use of `{used}` in `{user}`"
        subjects = self._defs(rel.subject, paths)
        if not subjects:
            return None
        holds = {"returns": self._returns, "raises": self._raises, "inherits": self._inherits}[rel.kind]
        if any(holds(d, _last(rel.object)) for d in subjects):
            return None
        return f"the code shows no `{rel.subject}` that {rel.kind.replace('inherits', 'inherits from')} `{rel.object}`"

    def _judge_call(self, caller: str, callee: str, paths: list[str], passive: bool = False) -> str | None:
        callers = self._defs(caller, paths)
        if not callers:
            return None
        if any(self._calls(d, _last(callee)) for d in callers):
            return None
        said = f"`{callee}` is called by `{caller}`" if passive else f"`{caller}` calls `{callee}`"
        reverse = self._defs(callee, paths)
        if any(self._calls(d, _last(caller)) for d in reverse):
            return f"backwards: the code has `{callee}` calling `{caller}`, not {said.replace('`', '')}"
        return f"the code shows no call where {said}"

    def _defs(self, name: str, paths: list[str]) -> list[DefRow]:
        found = [d for d in self.graph.find(name) if d.kind != "module"]
        cited = [d for d in found if d.path in paths]
        return cited or found[:8]

    def _body(self, d: DefRow) -> str:
        if d.path not in self._lines:
            try:
                self._lines[d.path] = (self.root / d.path).read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                self._lines[d.path] = []
        return "\n".join(self._lines[d.path][d.line - 1:min(d.end_line, d.line - 1 + MAX_BODY_LINES)])

    def _direct(self, d: DefRow, name: str) -> bool:
        edges = self.graph.out_edges(d, ("call", "ref"))
        if any(e.name == name for e, _ in edges):
            return True
        return re.search(rf"(?<![\w]){re.escape(name)}\s*\(", self._body(d)) is not None

    def _or_one_hop(self, d: DefRow, holds) -> bool:
        """Whether `holds` is true of d, or of a definition d calls (the first MAX_HOPS of them)."""
        if holds(d):
            return True
        callees = {t.id: t for _, found in self.graph.out_edges(d, ("call",)) for t in found if t.id != d.id}
        return any(holds(t) for t in list(callees.values())[:MAX_HOPS])

    def _mentions(self, d: DefRow, name: str) -> bool:
        """`name` in d's own lines (a call, an attribute, a type, an argument), or in a definition d calls."""
        return self._or_one_hop(d, lambda x: re.search(rf"\b{re.escape(name)}\b", self._body(x)) is not None)

    def _calls(self, d: DefRow, name: str) -> bool:
        return self._or_one_hop(d, lambda x: self._direct(x, name))

    def _returns(self, d: DefRow, name: str) -> bool:
        if any(e.name == name for e, _ in self.graph.out_edges(d, ("return",))):
            return True
        if name in re.findall(r"\w+", d.signature.split("->", 1)[-1] if "->" in d.signature else ""):
            return True
        return re.search(rf"\breturn\b[^\n]*\b{re.escape(name)}\b", self._body(d)) is not None

    def _raises(self, d: DefRow, name: str) -> bool:
        def raises_here(x: DefRow) -> bool:
            if any(e.name == name for e, _ in self.graph.out_edges(x, ("raise",))):
                return True
            return re.search(rf"\b(?:raise|throw)\s+(?:new\s+)?[\w.]*\b{re.escape(name)}\b", self._body(x)) is not None

        return self._or_one_hop(d, raises_here)

    def _inherits(self, d: DefRow, name: str) -> bool:
        if d.kind != "class":
            return False
        if re.search(rf"\b{re.escape(name)}\b", d.signature.split(d.name, 1)[-1]):
            return True
        seen, frontier = {d.qname}, [d.qname]
        for _ in range(6):
            bases = [b for q in frontier for b in self.graph.bases(q)]
            # A base named outright, or one a base's own signature names (a class outside the repository).
            if any(b.name == name or re.search(rf"\b{re.escape(name)}\b", b.signature.split(b.name, 1)[-1])
                   for b in bases):
                return True
            frontier = [b.qname for b in bases if b.qname not in seen]
            seen.update(frontier)
        return False
