"""The outline of a definition: its body cut down to the lines that carry its logic, as an editor's
folding or `git grep -p` shows the shape of a function.

Kept, by what they are (most telling first, while the budget lasts): the definition's first line;
returns, raises (with their message's lines) and loop exits; branch and loop headers; calls into the
repository (the caller says which lines call what, from the code graph, with the target's
`path:line`); assignments to attributes and constants; other calls. Kept lines stay in source order
with their line numbers and indentation; what lies between is folded (`… 9 lines`). Every line shown
is a line of the file as it is now, so an outline cannot be wrong about the code, only short.

Read with tree-sitter, for every language the code graph reads (index/graph.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from codeasst.index import chunker

MAX_LINES = 12  # a definition's outline, its first line included
STATEMENT_LINES = 3  # of a raise's or return's own lines, kept together (its message may be on the next)

# What each node type is, per grammar: the rank it is kept by (lower first) comes from RANK.
_PY = {"return_statement": "return", "raise_statement": "raise", "break_statement": "exit",
       "continue_statement": "exit", "yield": "return", "assert_statement": "raise",
       "if_statement": "branch", "elif_clause": "branch", "else_clause": "branch", "match_statement": "branch",
       "case_clause": "branch", "try_statement": "branch", "except_clause": "branch", "finally_clause": "branch",
       "for_statement": "loop", "while_statement": "loop", "with_statement": "block",
       "function_definition": "def", "class_definition": "def", "lambda": "def",
       "call": "call", "assignment": "assign", "augmented_assignment": "assign"}
_JS = {"return_statement": "return", "throw_statement": "raise", "break_statement": "exit",
       "continue_statement": "exit", "if_statement": "branch", "else_clause": "branch",
       "switch_statement": "branch", "switch_case": "branch", "switch_default": "branch", "try_statement": "branch",
       "catch_clause": "branch", "finally_clause": "branch", "for_statement": "loop", "for_in_statement": "loop",
       "while_statement": "loop", "do_statement": "loop", "function_declaration": "def",
       "arrow_function": "def", "function_expression": "def", "method_definition": "def",
       "call_expression": "call", "new_expression": "call", "assignment_expression": "assign",
       "augmented_assignment_expression": "assign"}
_GO = {"return_statement": "return", "break_statement": "exit", "continue_statement": "exit",
       "if_statement": "branch", "expression_switch_statement": "branch", "type_switch_statement": "branch",
       "select_statement": "branch", "expression_case": "branch", "type_case": "branch", "default_case": "branch",
       "communication_case": "branch", "for_statement": "loop", "func_literal": "def",
       "call_expression": "call", "assignment_statement": "assign"}
KINDS = {"python": _PY, "typescript": _JS, "tsx": _JS, "javascript": _JS, "go": _GO}
# Where the target of an assignment is an attribute (self.x = ...), the assignment is kept.
_ATTRIBUTES = {"attribute", "member_expression", "selector_expression", "subscript"}
_PANICS = {"panic", "log.Fatal", "log.Fatalf", "os.Exit"}  # Go's calls that end the function like a raise

# A class's outline is its members: their first lines and its attributes, not what the methods do.
_CLASSES = {"class_definition", "class_declaration", "abstract_class_declaration", "interface_declaration",
            "type_declaration"}
_CLASS_RANK = {"first": 0, "def": 1, "assign": 2}

RANK = {"first": 0, "raise": 1, "return": 1, "exit": 1, "branch": 2, "loop": 2, "block": 2, "repo call": 3, "def": 4,
        "assign": 5, "call": 6}


@dataclass(frozen=True)
class Line:
    number: int  # in the file, 1-based
    text: str  # the file's line, as it is
    kind: str  # first, raise, return, exit, branch, loop, repo call, def, assign, call
    targets: tuple[str, ...] = ()  # for a call into the repository: "qname at path:line"

    def to_json(self) -> dict:
        return {"line": self.number, "text": self.text, "kind": self.kind, "targets": list(self.targets)}


@dataclass
class Outline:
    path: str
    start: int
    end: int
    lines: list[Line] = field(default_factory=list)

    @property
    def folded(self) -> int:
        """Lines of the definition not shown."""
        return self.end - self.start + 1 - len(self.lines)

    def render(self, width: int = 6) -> list[str]:
        """The outline as a reader sees it: numbered lines, `… N lines` where lines are folded, each
        call's targets after it."""
        out: list[str] = []
        last = self.start - 1
        for line in self.lines:
            if line.number > last + 1:
                gap = line.number - last - 1
                indent = line.text[:len(line.text) - len(line.text.lstrip())]
                out.append(f"{'':>{width}}  {indent}… {gap} line{'s' if gap > 1 else ''}")
            shown = f"{line.number:>{width}}  {line.text}"
            if line.targets:
                shown += "    → " + "; ".join(line.targets)
            out.append(shown)
            last = line.number
        if last < self.end:
            gap = self.end - last
            out.append(f"{'':>{width}}  … {gap} line{'s' if gap > 1 else ''}")
        return out

    def to_json(self) -> dict:
        return {"path": self.path, "start_line": self.start, "end_line": self.end, "folded": self.folded,
                "lines": [line.to_json() for line in self.lines]}


def outline(path: str, text: str, start: int, end: int, calls: Mapping[int, Sequence[str]] | None = None,
            max_lines: int = MAX_LINES) -> Outline | None:
    """The outline of the definition on lines `start`..`end` (1-based, inclusive) of `text`, the file
    `path` as it is now; None for a language the graph does not read. `calls`: line -> the targets of
    the calls into the repository made there ("qname at path:line"), from the code graph."""
    grammar = chunker.grammar_for(path)
    if grammar not in KINDS:  # a language whose kinds the outline does not know yet (Rust, Java, ...)
        return None
    lines = text.splitlines()
    end = min(end, len(lines))
    if start < 1 or start > end:
        return Outline(path, start, max(end, start - 1))
    tree = _tree(grammar, text)
    members = _is_class(tree.root_node, start - 1)
    marks = _marks(tree.root_node, grammar, start - 1, end - 1, lines, members)
    calls = calls or {}
    for number, targets in calls.items():
        if start <= number <= end and targets:
            marks[number] = min(marks.get(number, "call"), "repo call", key=RANK.__getitem__)
    marks[start] = "first"
    rank = _CLASS_RANK if members else RANK
    chosen = sorted(marks, key=lambda n: (rank.get(marks[n], 9), n))[:max(max_lines, 1)]
    kept = [Line(n, lines[n - 1].rstrip(), marks[n], tuple(calls.get(n, ()))) for n in sorted(chosen)]
    return Outline(path, start, end, kept)


@lru_cache(maxsize=16)
def _tree(grammar: str, text: str) -> Any:
    """A file's syntax tree, parsed once while the same text is outlined again: `ask`'s flow weighs
    every definition it walks by its outline, many of them in one file."""
    return chunker._parse(grammar, text.encode("utf-8", "surrogatepass"))


def _is_class(root: Any, row: int) -> bool:
    """Whether the definition starting on `row` is a class (or a Go type)."""
    stack = [root]
    while stack:
        node = stack.pop()
        if node.start_point[0] > row or node.end_point[0] < row:
            continue
        if node.start_point[0] == row and (node.type in _CLASSES or node.type == "type_spec"):
            return True
        stack.extend(node.children)
    return False


def _marks(root: Any, grammar: str, first: int, last: int, lines: list[str],
           members: bool = False) -> dict[int, str]:
    """Line number (1-based) -> what it holds, for the lines of rows `first`..`last` worth keeping; of a
    class (`members`), only its members' first lines and its attributes."""
    kinds = KINDS[grammar]
    marks: dict[int, str] = {}

    def mark(row: int, kind: str) -> None:
        number = row + 1
        if first <= row <= last and lines[row].strip() and (number not in marks
                                                            or RANK[kind] < RANK[marks[number]]):
            marks[number] = kind

    stack = [root]
    while stack:
        node = stack.pop()
        if node.end_point[0] < first or node.start_point[0] > last:
            continue
        kind = kinds.get(node.type)
        if kind == "assign" and not (_keeps_assignment(node) or members and _in_class_body(node, kinds)):
            kind = None
        if kind == "call" and grammar == "go" and _callee(node) in _PANICS:
            kind = "raise"
        if members and kind not in ("def", "assign"):
            kind = None
        if kind is not None:
            row = node.start_point[0]
            if kind in ("raise", "return"):  # a message on the next lines is part of what it says
                for extra in range(row, min(node.end_point[0], row + STATEMENT_LINES - 1) + 1):
                    mark(extra, kind)
            else:
                mark(row, kind)
                if kind == "assign" and row > first and lines[row - 1].strip().startswith("#:"):
                    mark(row - 1, kind)  # the attribute's doc comment: what it is for
            if members and kind == "def" and node.start_point[0] > first and _name(node) not in _CONSTRUCTORS:
                continue  # a method's body is its own outline's; the constructor's sets the attributes
        stack.extend(node.children)
    return marks


_CONSTRUCTORS = {"__init__", "__post_init__", "constructor"}


def _name(node: Any) -> str:
    name = node.child_by_field_name("name")
    return name.text.decode("utf-8", "replace") if name is not None and name.text else ""


def _in_class_body(node: Any, kinds: dict[str, str]) -> bool:
    """An assignment in a class's own body (a class attribute, a dataclass field), not in a method."""
    parent = node.parent
    while parent is not None:
        if parent.type in _CLASSES:
            return True
        if kinds.get(parent.type) == "def":
            return False
        parent = parent.parent
    return False


def _keeps_assignment(node: Any) -> bool:
    """An assignment to an attribute (`self.timeout = ...`) or to a CONSTANT is kept; a local is not."""
    left = node.child_by_field_name("left")
    if left is None:
        return False
    if left.type in _ATTRIBUTES:
        return True
    name = left.text.decode("utf-8", "replace") if left.text else ""
    return name.isupper() and len(name) > 1


def _callee(node: Any) -> str:
    function = node.child_by_field_name("function")
    return function.text.decode("utf-8", "replace") if function is not None and function.text else ""
