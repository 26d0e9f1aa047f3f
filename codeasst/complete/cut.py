"""Where a suggestion ends: whole statements only, checked with tree-sitter.

The model's text is cut at line ends. Of the cuts, the longest is kept whose
insertion at the cursor parses with no error the file did not have without it:
`x = foo(` alone never passes, `x = foo(a)` does. Lines that leave the cursor's
block (indented less than the cursor's line) were stopped before they got here
(fim.py); lines that repeat what follows the cursor are dropped here.

The text without the suggestion is the same for every cut tried: it is parsed once per
request (`Around`), and the gate's reading of it (gate.py) serves the cut where both read
the same text.
"""

from __future__ import annotations

import ast
import threading
from functools import cached_property
from typing import Any

_PARSERS: dict[str, Any] = {}
_LOCK = threading.Lock()


def parse(grammar: str, text: str) -> Any | None:
    """The tree-sitter tree of `text`; None where there is no grammar for it."""
    with _LOCK:
        parser = _PARSERS.get(grammar)
        if parser is None:
            try:
                from tree_sitter_language_pack import get_parser

                parser = _PARSERS[grammar] = get_parser(grammar)
            except (ImportError, LookupError, ValueError):
                return None
        return parser.parse(text.encode("utf-8", "surrogatepass"))


class Around:
    """The text at the cursor without a suggestion, `prefix + suffix`, parsed at most once however
    many cuts are compared with it (and the gate asks it whether the cursor is in a comment)."""

    def __init__(self, grammar: str, prefix: str, suffix: str) -> None:
        self.grammar, self.prefix, self.suffix = grammar, prefix, suffix

    def reads(self, grammar: str, prefix: str, suffix: str) -> bool:
        """Whether this is the text `prefix + suffix` in `grammar` (a cut may be asked with a prefix the
        gate did not read: the indentation fim.py adds at column 1)."""
        return (self.grammar, self.prefix, self.suffix) == (grammar, prefix, suffix)

    @cached_property
    def tree(self) -> Any | None:
        return parse(self.grammar, self.prefix + self.suffix)

    @cached_property
    def errors(self) -> int | None:
        return _count_errors(self.tree)

    @cached_property
    def compiles(self) -> bool:
        return _python_ok(self.prefix + self.suffix)


def _errors(grammar: str, text: str) -> int | None:
    """ERROR and MISSING nodes in the tree of `text`; None where there is no grammar for it."""
    return _count_errors(parse(grammar, text))


def _count_errors(tree: Any | None) -> int | None:
    if tree is None:
        return None
    count, stack = 0, [tree.root_node]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            count += 1
        elif node.has_error:
            stack.extend(node.children)
    return count


def _python_ok(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


def parses_as_well(grammar: str, prefix: str, middle: str, suffix: str, around: Around | None = None) -> bool:
    """Whether `prefix + middle + suffix` has no syntax error that `prefix + suffix` (`around`, when the
    caller has it parsed) lacks."""
    if around is None or not around.reads(grammar, prefix, suffix):
        around = Around(grammar, prefix, suffix)
    after = prefix + middle + suffix
    errors_before, errors_after = around.errors, _errors(grammar, after)
    if errors_before is not None and errors_after is not None and errors_after > errors_before:
        return False
    if grammar == "python":
        # tree-sitter takes an empty block for a block; Python does not. Where the text compiles
        # without the suggestion, or with it, the compiler's word is the stricter one.
        return _python_ok(after) or not around.compiles
    return errors_after is not None


def _repeats(lines: list[str], following: list[str]) -> bool:
    """Whether `lines` are the lines that already follow the cursor (whitespace aside)."""
    wanted = [line.strip() for line in lines if line.strip()]
    after = [line.strip() for line in following if line.strip()][: len(wanted)]
    return bool(wanted) and wanted == after


def cut(grammar: str, prefix: str, text: str, suffix: str, max_lines: int,
        around: Around | None = None) -> tuple[str, str]:
    """The longest run of whole lines of `text` (at most `max_lines`; one where the cursor is
    mid-line) that parses at the cursor, and "" or the reason there is none. `around`: the text
    without it, parsed already (the gate's), where the caller has it.

    At a cursor already indented on an empty line (where an editor puts it after Enter), the
    model often writes the indentation again. Inserted as written, its text is indented twice:
    it does not parse, or worse, it parses into the block above the cursor (a line after a
    `raise` inside an `if`). The cursor's indentation is the user's, so the text is tried
    first without the first line's own indentation, and as written only where that finds
    nothing. Right after a Python block's opening line, at its indentation, the body needs the
    extra indentation: there the text is tried as written first."""
    if around is None or not around.reads(grammar, prefix, suffix):
        around = Around(grammar, prefix, suffix)
    line_start = prefix[prefix.rfind("\n") + 1:]
    extra = len(text) - len(text.lstrip(" \t"))
    if not line_start or line_start.strip() or not extra:
        return _cut(around, text, max_lines)
    # Only the first line: it follows the cursor's indentation; the next lines carry their own.
    order = [text[extra:], text]
    if grammar == "python" and _opens_block(prefix, line_start):
        order.reverse()
    tried = {}
    for candidate in order:
        tried[candidate] = _cut(around, candidate, max_lines)
        if tried[candidate][0]:
            return tried[candidate]
    return tried[text]  # nothing either way: the reason is that of the text as written


def _opens_block(prefix: str, line_start: str) -> bool:
    """Whether the code line before the cursor's ends with `:` and is indented no deeper than the cursor."""
    for line in reversed(prefix.split("\n")[:-1]):
        code = line.split("#")[0].rstrip()
        if code:
            return code.endswith(":") and len(line) - len(line.lstrip(" \t")) >= len(line_start)
    return False


def _cut(around: Around, text: str, max_lines: int) -> tuple[str, str]:
    grammar, prefix, suffix = around.grammar, around.prefix, around.suffix
    line_start = prefix[prefix.rfind("\n") + 1:]
    rest_of_line, _, after = suffix.partition("\n")
    mid_line = bool(line_start.strip())
    lines = text.split("\n")[: 1 if mid_line else max_lines]
    for i in range(1, len(lines)):
        if lines[i].strip() and lines[i].strip() == lines[i - 1].strip():
            lines = lines[:i]  # the model repeating itself: what came before the loop is the answer
            break
    following = after.split("\n")
    reason = "no complete statement"
    for n in range(len(lines), 0, -1):
        middle = "\n".join(lines[:n]).rstrip()
        if not middle.strip():
            return "", "whitespace only"
        if rest_of_line.strip() and middle.endswith(rest_of_line.strip()):
            middle = middle[: -len(rest_of_line.strip())]  # the model wrote the `)` already there
            if not middle.strip():
                return "", "repeats the rest of the line"
        if _repeats(lines[:n], following) or (middle.strip() == rest_of_line.strip()):
            reason = "repeats the lines after the cursor"
            continue
        if parses_as_well(grammar, prefix, middle, suffix, around):
            return middle, ""
    return "", reason
