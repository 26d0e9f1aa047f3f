"""The outline of a definition: its body cut down to the lines that carry its logic, as an editor's
folding or `git grep -p` shows the shape of a function.

Kept, by what they are (most telling first, while the budget lasts): the definition's first line;
where a question is asked (`Focus`, index/outline_focus.py), the lines that match its words or the code
forms they stand for (remove: `del`, `pop`; message: string literals; default: default values), each
with the branch that encloses it; returns, raises (with their message's lines) and loop exits; branch
and loop headers, each with the statement under it that does the work (a `del`, a literal assigned, a
return or a raise); calls into the repository (the caller says which lines call what, from the code
graph, with the target's `path:line`); assignments to attributes and constants, and deletes; other
calls. Kept lines stay in source order with their line numbers and indentation; what lies between is
folded, the number of the line after a fold marked (`…128`), and a fold never hides a single line that
holds a word: that line is shown instead. A docstring's first sentence, which the definition's heading
shows, is not kept for the question's words. Every line shown is a line of the file as it is now, so an
outline cannot be wrong about the code, only short.

A class's outline is its attributes and its members' first lines; asked a question, it descends into
the methods the question matches instead, and names the others on one line (`… and 14 more methods:`).

Read with tree-sitter, for every language whose table in languages.toml has an outline table: which node
types are returns, raises, branches, loops, calls and assignments is data there (Kinds).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from codeasst.index import chunker, grammars
from codeasst.index.outline_focus import Focus, matched_lines, summary
from codeasst.index.words import stems

MAX_LINES = 12  # a definition's outline, its first line included
STATEMENT_LINES = 3  # of a raise's or return's own lines, kept together (its message may be on the next)

# Where the target of an assignment is one of a language's `attributes` (self.x = ...), or holds one
# (Kotlin's `this.x`), the assignment is kept; so is one to a CONSTANT.
# A class's outline is its members: their first lines and its attributes, not what the methods do.
_CLASS_RANK = {"first": 0, "def": 1, "assign": 2}
RANK = {"first": 0, "raise": 1, "return": 1, "exit": 1, "branch": 2, "loop": 2, "block": 2, "repo call": 3, "def": 4,
        "assign": 5, "delete": 5, "work": 5, "call": 6, "match": 7, "fill": 8}
# Where a question is asked, this many of a definition's best-matching lines (with the branch around
# each) come before every kind above but the first line: the rest keep their kind's rank.
MATCH_SHARE = 0.7
MATCHED_METHODS = 3  # of a class asked about, the methods shown with their own outlines
MORE_NAMES = 12  # of the others, the names listed on the one line that stands for them

@dataclass(frozen=True)
class Kinds:
    """What a language's node types are to the outline, from its `[<language>.outline]` table in
    languages.toml: node type -> kind (a key of RANK), or "type:first" for a node of that type whose first
    child is of the type `first` (Kotlin's `jump_expression` is a return, a throw or a break by its keyword);
    the calls that end the function like a raise (Go's `panic`, Rust's `panic!`) or delete (Go's `delete`,
    C's `free`); the assignment targets that are attributes; the constructors, by name or node type; and
    the language's class and function types (the chunker's)."""

    nodes: Mapping[str, str]
    raise_calls: frozenset[str]
    delete_calls: frozenset[str]
    attributes: frozenset[str]
    constructors: frozenset[str]
    constructor_types: frozenset[str]
    classes: frozenset[str]
    functions: frozenset[str]

    def of(self, node: Any) -> str | None:
        if node.children:
            kind = self.nodes.get(f"{node.type}:{node.children[0].type}")
            if kind is not None:
                return kind
        return self.nodes.get(node.type)

    def constructs(self, node: Any, name: str) -> bool:
        return name in self.constructors or node.type in self.constructor_types


@lru_cache(maxsize=32)
def kinds_of(grammar: str | None) -> Kinds | None:
    """The outline's kinds for a grammar, or None where its language has no outline table. A table may
    name another language's instead (`outline = "typescript"`)."""
    tables = tomllib.loads(grammars.table_bytes().decode("utf-8"))
    for name, table in tables.items():
        if table.get("grammar", name) != grammar or "outline" not in table:
            continue
        data = table["outline"]
        if isinstance(data, str):
            data = tables[data]["outline"]
        nodes = {node: kind for kind in RANK if kind in data for node in data[kind]}
        return Kinds(nodes, frozenset(data.get("raise_calls", ())), frozenset(data.get("delete_calls", ())),
                     frozenset(data.get("attributes", ())), frozenset(data.get("constructors", ())),
                     frozenset(data.get("constructor_types", ())), frozenset(table.get("class_types", ())),
                     frozenset(table.get("function_types", ())))
    return None


@dataclass(frozen=True)
class Line:
    number: int  # in the file, 1-based
    text: str  # the file's line, as it is
    kind: str  # first, raise, return, exit, branch, loop, repo call, def, assign, delete, work, call, match, fill
    targets: tuple[str, ...] = ()  # for a call into the repository: "qname at path:line"

    def to_json(self) -> dict:
        return {"line": self.number, "text": self.text, "kind": self.kind, "targets": list(self.targets)}


@dataclass
class Outline:
    path: str
    start: int
    end: int
    lines: list[Line] = field(default_factory=list)
    more: tuple[str, ...] = ()  # of a class asked about: the methods not shown, named on one line

    @property
    def folded(self) -> int:
        """Lines of the definition not shown."""
        return self.end - self.start + 1 - len(self.lines)

    @property
    def chosen(self) -> int:
        """Lines kept for what they hold, from the budget: a line shown in place of a one-line fold is not."""
        return sum(1 for line in self.lines if line.kind != "fill")

    def render(self, width: int = 6) -> list[str]:
        """The outline as a reader sees it: numbered lines, each call's targets after it; where lines are
        folded before one, its number is marked (`…128`), so a fold takes no line of its own (its size is
        in the numbers, the definition's last line in its heading)."""
        out: list[str] = []
        last = self.start - 1
        for line in self.lines:
            number = f"…{line.number}" if line.number > last + 1 else str(line.number)
            shown = f"{number:>{width}}  {line.text}"
            if line.targets:
                shown += "    → " + "; ".join(line.targets)
            out.append(shown)
            last = line.number
        if self.more:
            names = ", ".join(self.more[:MORE_NAMES]) + (", …" if len(self.more) > MORE_NAMES else "")
            out.append(f"{'':>{width}}  … and {len(self.more)} more method{'s' if len(self.more) > 1 else ''}: {names}")
        return out

    def to_json(self) -> dict:
        return {"path": self.path, "start_line": self.start, "end_line": self.end, "folded": self.folded,
                "lines": [line.to_json() for line in self.lines], "more": list(self.more)}


def outline(path: str, text: str, start: int, end: int, calls: Mapping[int, Sequence[str]] | None = None,
            max_lines: int = MAX_LINES, focus: Focus | None = None) -> Outline | None:
    """The outline of the definition on lines `start`..`end` (1-based, inclusive) of `text`, the file
    `path` as it is now; None for a language the outline does not read. `calls`: line -> the targets of
    the calls into the repository made there ("qname at path:line"), from the code graph. `focus`: the
    question asked, whose lines are kept first."""
    grammar = chunker.grammar_for(path)
    kinds = kinds_of(grammar)
    if kinds is None:  # a language without an outline table in languages.toml
        return None
    lines = text.splitlines()
    end = min(end, len(lines))
    if start < 1 or start > end:
        return Outline(path, start, max(end, start - 1))
    root = _tree(grammar, text).root_node
    calls = calls or {}
    focus = focus if focus is not None and (focus.words or focus.forms) else None
    members = _is_class(root, start - 1, kinds)
    shape = _shape(root, grammar, kinds, start - 1, end - 1, lines, members)
    if members and focus is not None:
        return _class_asked(path, text, start, end, calls, max_lines, focus, shape)
    marks = shape.marks
    for number, targets in calls.items():
        if start <= number <= end and targets:
            marks[number] = min(marks.get(number, "call"), "repo call", key=RANK.__getitem__)
    marks[start] = "first"
    matched = matched_lines(lines, start, end, focus) if focus is not None and not members else {}
    for number in summary(lines, start, end):  # the heading shows the docstring's first sentence already
        matched.pop(number, None)
    chosen = _choose(shape, matched, max_lines, _CLASS_RANK if members else RANK)
    return Outline(path, start, end, _kept(lines, chosen, marks, calls, start, end))


@dataclass
class _Shape:
    """What an outline is chosen from: line -> its kind; a branch's or loop's header -> the line of the
    statement that does its work; line -> the header of the branch or loop it is in; of a class, its
    methods as (name, first line, last line)."""

    marks: dict[int, str] = field(default_factory=dict)
    work: dict[int, int] = field(default_factory=dict)
    under: dict[int, int] = field(default_factory=dict)
    methods: list[tuple[str, int, int]] = field(default_factory=list)
    constructors: set[int] = field(default_factory=set)  # the first lines of the methods that construct


def _choose(shape: _Shape, matched: dict[int, int], max_lines: int, rank: Mapping[str, int]) -> list[int]:
    """The lines kept, in the order they were chosen: the best-matching lines first (up to MATCH_SHARE of
    the budget), then by kind; each with the lines that go with it while the budget lasts."""
    marks = shape.marks
    top = set(sorted(matched, key=lambda n: (-matched[n], n))[:max(1, int(max_lines * MATCH_SHARE))])
    for number in matched:
        marks.setdefault(number, "match")

    def key(n: int) -> tuple:
        if n in top and marks[n] != "first":
            return (0.5, -matched[n], n)
        return (rank.get(marks[n], 9), 0, n)

    chosen: list[int] = []
    budget = max(max_lines, 1)
    for number in sorted(marks, key=key):
        if len(chosen) >= budget:
            break
        with_it = [shape.under[number]] if number in top and number in shape.under else []
        with_it += [shape.work[number]] if number in shape.work else []
        group = [line for line in dict.fromkeys((number, *with_it)) if line not in chosen]
        if len(chosen) + len(group) <= budget:  # a branch without its work, or an answer without its branch: neither
            chosen += group
    return chosen


def _kept(lines: list[str], chosen: Sequence[int], marks: Mapping[int, str], calls: Mapping[int, Sequence[str]],
          start: int, end: int) -> list[Line]:
    """The chosen lines in source order, and each line a fold would hide alone shown instead, unless blank."""
    numbers = sorted(set(chosen))
    fills = [n + 1 for n, m in zip([start - 1, *numbers], [*numbers, end + 1], strict=True) if m - n == 2]
    fills = [n for n in fills if start <= n <= end and n not in numbers and re.search(r"\w", lines[n - 1])]
    return [Line(n, lines[n - 1].rstrip(), "fill" if n in fills else marks.get(n, "work"),
                 tuple(calls.get(n, ()))) for n in sorted([*numbers, *fills])]


def _class_asked(path: str, text: str, start: int, end: int, calls: Mapping[int, Sequence[str]], max_lines: int,
                 focus: Focus, shape: _Shape) -> Outline:
    """A class asked about: its first line, the methods the question matches with their own outlines,
    its attributes while the budget lasts, and the other methods named on one line."""
    lines = text.splitlines()
    by_name = [(2 * len(stems(name) & focus.words), first) for name, first, _ in shape.methods]
    scores = {first: score for score, first in by_name if score}
    if not scores:  # no method is named: the one whose lines hold most of the question
        for name, first, last in shape.methods:
            score = sum(matched_lines(lines, first, last, focus).values())
            if score:
                scores[first] = score
    picked = sorted(scores, key=lambda n: (-scores[n], n))[:MATCHED_METHODS]
    share = max(4, (max_lines - 1) * 2 // 3 // max(len(picked), 1))
    kept: dict[int, Line] = {start: Line(start, lines[start - 1].rstrip(), "first")}
    inside: set[int] = set()
    for name, first, last in shape.methods:
        if first in picked:
            found = outline(path, text, first, last, calls, share, focus)
            kept.update({line.number: line for line in found.lines} if found else {})
            inside.update(range(first, last + 1))
    shown = {first for _, first, _ in shape.methods if first in picked}
    rest = {n: k for n, k in shape.marks.items()
            if n not in inside and n != start and (k == "assign" or n in shape.constructors)}
    left = max_lines - sum(1 for line in kept.values() if line.kind != "fill")
    for number in sorted(rest, key=lambda n: (_CLASS_RANK.get(rest[n], 9), n))[:max(left, 0)]:
        kept[number] = Line(number, lines[number - 1].rstrip(), rest[number])
        shown.add(number)
    fills = _kept(lines, list(kept), {n: line.kind for n, line in kept.items()}, calls, start, end)
    more = tuple(name for name, first, _ in shape.methods if first not in shown)
    return Outline(path, start, end, [kept.get(line.number, line) for line in fills], more)


@lru_cache(maxsize=16)
def _tree(grammar: str, text: str) -> Any:
    """A file's syntax tree, parsed once while the same text is outlined again: `ask`'s flow weighs
    every definition it walks by its outline, many of them in one file."""
    return grammars.parse(grammar, text.encode("utf-8", "surrogatepass"))


def _is_class(root: Any, row: int, kinds: Kinds) -> bool:
    """Whether the definition starting on `row` is a class (a struct, a trait, a Go type...)."""
    stack = [root]
    while stack:
        node = stack.pop()
        if node.start_point[0] > row or node.end_point[0] < row:
            continue
        if node.start_point[0] == row and node.type in kinds.classes:
            return True
        if node.start_point[0] == row and node.type in kinds.functions:
            return False  # a function whose first line names a struct (C's `int f(struct cart *c)`)
        stack.extend(reversed(node.children))
    return False


def _kind(node: Any, kinds: Kinds, members: bool) -> str | None:
    """What `node` is, for the outline (a key of RANK), or None where it is not kept for itself."""
    kind = kinds.of(node)
    if node.type == "unary_expression" and node.children and node.children[0].type == "delete":
        return "delete" if not members else None  # JS/TS's `delete obj.key`
    if kind == "assign" and not (_keeps_assignment(node, kinds) or members and _in_class_body(node, kinds)):
        kind = None
    if kind == "call" and (kinds.raise_calls or kinds.delete_calls):
        callee = _callee(node)
        kind = "raise" if callee in kinds.raise_calls else "delete" if callee in kinds.delete_calls else kind
    if members and kind not in ("def", "assign"):
        kind = None
    return kind


def _shape(root: Any, grammar: str, kinds: Kinds, first: int, last: int, lines: list[str],
           members: bool = False) -> _Shape:
    """The lines of rows `first`..`last` worth keeping, by kind, with the lines that go with them; of a
    class (`members`), only its members' first lines and its attributes."""
    shape = _Shape()
    marks = shape.marks

    def mark(row: int, kind: str) -> None:
        number = row + 1
        if first <= row <= last and lines[row].strip() and (number not in marks
                                                            or RANK[kind] < RANK[marks[number]]):
            marks[number] = kind

    stack: list[tuple[Any, int]] = [(root, 0)]  # a node, and the branch or loop header line it is under
    while stack:
        node, header = stack.pop()
        if node.end_point[0] < first or node.start_point[0] > last:
            continue
        row = node.start_point[0]
        if header and not members and row + 1 != header and first <= row <= last:
            shape.under[row + 1] = header  # the innermost is visited last
        kind = _kind(node, kinds, members)
        if kind is not None:
            if kind in ("raise", "return"):  # a message on the next lines is part of what it says
                for extra in range(row, min(node.end_point[0], row + STATEMENT_LINES - 1) + 1):
                    mark(extra, kind)
            else:
                mark(row, kind)
                if kind == "assign" and row > first and lines[row - 1].strip().startswith("#:"):
                    mark(row - 1, kind)  # the attribute's doc comment: what it is for
            if members and kind == "def" and row > first:
                name = chunker.definition_name(grammar, node) or ""
                shape.methods.append((name, row + 1, node.end_point[0] + 1))
                if not kinds.constructs(node, name):
                    continue  # a method's body is its own outline's; the constructor's sets the attributes
                shape.constructors.add(row + 1)
        if kind in ("branch", "loop") and not members:
            work = _work(node, kinds)
            if work is not None and work.start_point[0] != row and first <= work.start_point[0] <= last \
                    and lines[work.start_point[0]].strip():
                shape.work[row + 1] = work.start_point[0] + 1
            header = row + 1
        stack.extend((child, header) for child in node.children)
    shape.methods.sort(key=lambda method: method[1])
    return shape


_PLAIN_ASSIGNMENTS = {"assignment", "assignment_expression", "assignment_statement"}  # `n += 1` counts, no work
_BLOCKS = {"block", "statement_block", "compound_statement", "statement_list", "statements",
           "control_structure_body", "constructor_body", "function_body", "then", "do", "body_statement"}
_LITERALS = {"string", "concatenated_string", "integer", "float", "true", "false", "none", "number",
             "template_string", "null", "undefined", "interpreted_string_literal", "raw_string_literal",
             "int_literal", "float_literal", "nil", "list", "dictionary", "tuple", "set", "array", "object",
             "unary_operator", "string_literal", "boolean_literal", "null_literal", "line_string_literal",
             "character_literal", "char_literal", "decimal_integer_literal", "real_literal", "encapsed_string",
             "boolean", "hash", "simple_symbol", "verbatim_string_literal"}


def _body(node: Any) -> list[Any]:
    """The statements directly under a branch or loop (a body without braces is one statement)."""
    body = node.child_by_field_name("consequence") or node.child_by_field_name("body")
    if body is None:
        body = next((c for c in node.named_children if c.type in _BLOCKS), None)
    if body is None:
        return []
    if body.type not in _BLOCKS:
        return [body]
    out = [c for c in body.named_children if c.type != "comment"]
    while len(out) == 1 and out[0].type in _BLOCKS:  # Kotlin's body > statements, Go's block > statement_list
        out = [c for c in out[0].named_children if c.type != "comment"]
    return out


def _work(node: Any, kinds: Kinds) -> Any | None:
    """The statement under a branch or loop that does its work: the first `del`, literal assigned, return
    or raise; else the only statement there is (a `pass`, a bare `return`)."""
    body = _body(node)
    for statement in body:
        inner = statement.named_children[0] if statement.type == "expression_statement" and \
            statement.named_children else statement
        kind = _kind(inner, kinds, False)
        if kind in ("return", "raise", "exit", "delete"):
            return statement
        if inner.type in _PLAIN_ASSIGNMENTS:
            right = inner.child_by_field_name("right")
            if right is not None and right.type == "expression_list" and right.named_child_count == 1:
                right = right.named_children[0]
            if kind == "assign" or right is not None and right.type in _LITERALS:
                return statement
    return body[0] if len(body) == 1 and kinds.of(body[0]) not in ("branch", "loop") else None


def _in_class_body(node: Any, kinds: Kinds) -> bool:
    """An assignment in a class's own body (a class attribute, a dataclass field, a Java field), not in a method."""
    parent = node.parent
    while parent is not None:
        if parent.type in kinds.classes:
            return True
        if kinds.of(parent) == "def":
            return False
        parent = parent.parent
    return False


def _keeps_assignment(node: Any, kinds: Kinds) -> bool:
    """An assignment to an attribute (`self.timeout = ...`) or to a CONSTANT is kept; a local is not."""
    left = node.child_by_field_name("left") or next(iter(node.named_children), None)
    if left is None:
        return False
    if left.type in kinds.attributes or any(child.type in kinds.attributes for child in left.named_children):
        return True
    name = left.text.decode("utf-8", "replace") if left.text else ""
    return name.isupper() and len(name) > 1


_ARGUMENTS = {"argument_list", "arguments", "call_suffix", "value_arguments", "token_tree"}


def _callee(node: Any) -> str:
    """What a call calls, as written: `log.Fatal`, `panic!`, Ruby's `raise`."""
    text = node.text.decode("utf-8", "replace") if node.text else ""
    for child in node.children:
        if child.type in _ARGUMENTS:
            return text[:child.start_byte - node.start_byte].strip()
    function = node.child_by_field_name("function")
    return function.text.decode("utf-8", "replace") if function is not None and function.text else ""
