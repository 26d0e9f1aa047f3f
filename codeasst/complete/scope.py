"""Where the cursor sits in the code: which block a suggestion writes in, how far it may go, how many lines it may hold.

Read from the text alone, before the model is asked:

- **The block's indentation.** On a line with code left of the cursor, or an indented
  blank line (where an editor puts the cursor after Enter), it is the cursor's line's
  own. On an empty line with the cursor at column 1, it is inferred from the lines
  around it: one level deeper than a line that opens a block (`:` or `{` at its end), else
  the previous code line's, and the suggestion must carry it.
- **The floor.** A line indented less than it leaves the cursor's scope, and generation
  stops there (llama.cpp's `n_indent`). At an indented cursor the floor is the cursor's
  indentation. At column 1 it is the inferred indentation's enclosing definition body (a
  suggestion may close a nested block, never the function), and no lower than the next
  code line: so after a function's last line nothing is written at the top level
  (`# Test the function`, then `print(...)`) unless the cursor is at the top level itself.
- **The place, and the lines allowed.** `opened`: a block just opened and still empty;
  `end`: nothing of the block follows; `between`: a statement of the block follows,
  which one line fills (the next line is the user's code, not the model's to restate);
  `mid-line`: the rest of the cursor's line. Multi-line suggestions are allowed only at
  `opened` and `end` (complete.multiline = "block"), or everywhere but mid-line ("always").
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from itertools import pairwise

FOLLOWING = 8  # code lines after the cursor's that a suggestion is checked against
_DEFINITION = re.compile(r"^\s*(?:async\s+def|def|class)\s")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Hole:
    indent: str  # the indentation of a line written at the cursor
    floor: int  # a generated line indented less than this leaves the scope
    column_one: bool  # the cursor is at column 1 of an empty line inside a block: the text carries `indent`
    place: str  # "mid-line", "opened", "between", "end"
    following: tuple[str, ...]  # the next code lines after the cursor's line
    max_lines: int


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _code(line: str) -> str:
    """The line without a trailing `#` or `//` comment (naively: a `#` inside a string cuts it too)."""
    for mark in ("#", "//"):
        at = line.find(mark)
        if at != -1:
            line = line[:at]
    return line.rstrip()


def _opens(line: str) -> bool:
    return _code(line).endswith((":", "{", "(", "[")) if line.strip() else False


def _unit(lines: list[str]) -> str:
    """One level of indentation in this file: a tab, or the step of spaces by which a line most often goes
    deeper than the one before it (4 where none shows)."""
    if any(_indent(line).startswith("\t") for line in lines):
        return "\t"
    depths = [len(_indent(line)) for line in lines if line.strip()]
    steps = Counter(b - a for a, b in pairwise(depths) if 0 < b - a <= 8)
    return " " * (steps.most_common(1)[0][0] if steps else 4)


def _definition_body(before: list[str], indent: int) -> int:
    """The body indentation of the nearest definition (def, class) that encloses a line at `indent`; 0 if none."""
    for i in range(len(before) - 1, -1, -1):
        line = before[i]
        if len(_indent(line)) < indent and _DEFINITION.match(line):
            body = next((len(_indent(x)) for x in before[i + 1:] if x.strip() and len(_indent(x)) > len(_indent(line))),
                        indent)
            return min(body, indent)
    return 0


def normalised(line: str) -> str:
    return _SPACE.sub(" ", line.strip())


def locate(prefix: str, suffix: str, max_lines: int, multiline: str = "block") -> Hole:
    """The hole at the cursor between `prefix` and `suffix` (module docstring); `max_lines` is
    complete.max_lines, `multiline` complete.multiline."""
    line_start = prefix[prefix.rfind("\n") + 1:]
    following = tuple(line for line in suffix.split("\n")[1:] if line.strip())[:FOLLOWING]
    if line_start.strip():
        indent = _indent(line_start)
        return Hole(indent, len(indent), False, "mid-line", following, 1)
    before = [line for line in prefix.split("\n")[:-1] if line.strip()]
    prev = before[-1] if before else ""
    p = len(_indent(prev))
    n = len(_indent(following[0])) if following else None
    opener = _opens(prev)
    if line_start:  # the editor indented the cursor: that is the user's word on the block
        indent, column_one = line_start, False
        floor = len(indent)
    else:
        if opener:
            indent = _indent(following[0]) if n is not None and n > p else _indent(prev) + _unit(before[-50:])
        else:
            indent = _indent(prev)
        column_one = bool(indent)
        floor = len(indent) if opener else min(len(indent), max(_definition_body(before, len(indent)), n or 0))
    if opener and (n is None or n <= p):
        place = "opened"
    elif n is not None and n >= len(indent):
        place = "between"
    else:
        place = "end"
    lines = max_lines if multiline == "always" or place in ("opened", "end") else 1
    return Hole(indent, floor, column_one, place, following, lines)


def repeats_following(line: str, hole: Hole) -> bool:
    """Whether `line` is the first code line after the cursor's (whitespace aside): where a
    suggestion starts to restate what is already there."""
    return bool(hole.following) and bool(line.strip()) and normalised(line) == normalised(hole.following[0])
