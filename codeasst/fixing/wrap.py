"""E501: break a long statement along its brackets, deterministically (the 0.5B model rarely can).

The statement's tokens become a tree of brackets. The last bracket whose head
fits is opened onto its own lines with a hanging indent (black's right-hand
split), its contents one comma-separated element per line, and an element that
is still too long is split the same way, or before its `and`/`or`/`+`/`-`
operators, or (a string) into adjacent literals at spaces. With no bracket to
use, the right-hand side of an assignment, a `return` value or an `if`
condition is put in parentheses first. Nothing here changes the AST, and the
verifier checks that it did not.
"""

from __future__ import annotations

import io
import keyword
import re
import tokenize
from dataclasses import dataclass, field

_OPEN, _CLOSE = "([{", ")]}"
_SKIP = (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)
_BREAK_BEFORE = ("and", "or", "if", "else", "for")
_BINARY = ("+", "-")
_COMPARE = ("<", ">", "<=", ">=", "==", "!=", "in", "is")
_PRODUCT = ("*", "/", "//", "%", "@")
_HEADERS = ("if", "elif", "while", "for", "with", "def", "async", "class", "except")


@dataclass
class _Tok:
    text: str
    space: str  # what goes before it when laid flat


@dataclass
class _Bracket:
    open: _Tok
    items: list = field(default_factory=list)
    close: _Tok | None = None

    @property
    def space(self) -> str:
        return self.open.space


def _flat(items: list, first: bool = True) -> str:
    out = []
    for i, item in enumerate(items):
        lead = "" if first and i == 0 else item.space
        if isinstance(item, _Bracket):
            out.append(lead + item.open.text + _flat(item.items) + (item.close.text if item.close else ""))
        else:
            out.append(lead + item.text)
    return "".join(out)


def _tree(tokens: list[tokenize.TokenInfo]) -> list | None:
    root: list = []
    stack: list[_Bracket] = []
    prev = None
    for tok in tokens:
        if tok.type in _SKIP:
            continue
        if tok.type == tokenize.COMMENT or tok.string == "\\":
            return None
        if tok.start[0] != tok.end[0]:
            return None  # a multi-line string: its length on one line means nothing
        if prev is None:
            space = ""
        elif prev.end[0] == tok.start[0]:
            space = tok.line[prev.end[1]:tok.start[1]]
        else:  # a line break inside brackets, laid flat
            space = "" if prev.string in _OPEN or tok.string in _CLOSE or tok.string == "," else " "
        item = _Tok(tok.string, space)
        target = stack[-1].items if stack else root
        if tok.string in _OPEN:
            bracket = _Bracket(item)
            target.append(bracket)
            stack.append(bracket)
        elif tok.string in _CLOSE:
            if not stack:
                return None
            stack.pop().close = _Tok(tok.string, "")
        else:
            target.append(item)
        prev = tok
    return root if not stack else None


class _Layout:
    def __init__(self, limit: int, step: int) -> None:
        self.limit, self.step = limit, step

    def lay(self, items: list, col: int, indent: int, min_body: int = 0) -> list[str] | None:
        """Lines for `items`: the first continues at column `col`, the rest start with their indentation.
        Brackets holding fewer than `min_body` characters are not opened (`x[i]` split is unreadable)."""
        text = _flat(items)
        if col + len(text) <= self.limit:
            return [text]
        for k in reversed(range(len(items))):
            bracket = items[k]
            if not isinstance(bracket, _Bracket) or not bracket.items or bracket.close is None \
                    or len(_flat(bracket.items)) < min_body:
                continue
            head = _flat(items[:k]) + bracket.space + bracket.open.text if k else bracket.open.text
            tail = bracket.close.text + _flat(items[k + 1:], first=False)
            if col + len(head) > self.limit or indent + len(tail) > self.limit:
                continue
            body = self.body(bracket.items, indent + self.step)
            if body is not None:
                return [head, *body, " " * indent + tail]
        return None

    def body(self, items: list, indent: int) -> list[str] | None:
        pad = " " * indent
        elements, current = [], []
        for item in items:
            current.append(item)
            if isinstance(item, _Tok) and item.text == ",":
                elements.append(current)
                current = []
        if current:
            elements.append(current)
        if indent + len(_flat(items)) <= self.limit:
            return [pad + _flat(items)]
        lines: list[str] = []
        for element in elements:
            laid = (self.operators(element, indent) or self.lay(element, indent, indent, min_body=20)
                    or self.lay(element, indent, indent) or self.string(element, indent))
            if laid is None:
                return None
            lines.extend([pad + laid[0], *laid[1:]])
        return lines

    def operators(self, items: list, indent: int) -> list[str] | None:
        """Break before top-level `and`/`or` (else `+`/`-`, comparisons, products), packing as many
        parts per line as fit."""
        for ops in (_BREAK_BEFORE, _BINARY, _COMPARE, _PRODUCT):
            parts, current = [], []
            for i, item in enumerate(items):
                binary = i > 0 and isinstance(item, _Tok) and item.text in ops and (
                    ops is _BREAK_BEFORE or isinstance(items[i - 1], _Bracket)
                    or re.match(r"[\w'\"]", items[i - 1].text[-1:] or " ")) and not (
                    isinstance(items[i - 1], _Tok) and keyword.iskeyword(items[i - 1].text)
                    and items[i - 1].text not in ("True", "False", "None"))
                if binary and current:
                    parts.append(current)
                    current = []
                current.append(item)
            parts.append(current)
            if len(parts) < 2:
                continue
            lines, line = [], ""
            for part in parts:
                text = _flat(part) if not line else _flat(part, first=False)
                if line and indent + len(line) + len(text) > self.limit:
                    lines.append(line)
                    line = _flat(part)
                else:
                    line += text
            lines.append(line)
            if all(indent + len(x) <= self.limit for x in lines):
                return [lines[0], *[" " * indent + x for x in lines[1:]]]
        return None

    def string(self, items: list, indent: int) -> list[str] | None:
        """A single long string literal becomes adjacent literals, split after spaces."""
        trailing = items[1:] if len(items) == 2 and isinstance(items[1], _Tok) and items[1].text == "," else []
        if len(items) - len(trailing) != 1 or not isinstance(items[0], _Tok):
            return None
        match = re.fullmatch(r"([rRbBuU]{0,2})('|\")(.*)\2", items[0].text, re.DOTALL)
        if not match or "\\" in match.group(3) and "r" not in match.group(1).lower():
            return None  # an escape could be cut in half; leave it to the model
        prefix, quote, body = match.groups()
        width = self.limit - indent - len(prefix) - 2 - 1
        words = re.findall(r"\S*\s*", body)
        pieces, piece = [], ""
        for word in words:
            if piece and len(piece) + len(word) > width:
                pieces.append(piece)
                piece = ""
            piece += word
        if piece:
            pieces.append(piece)
        if len(pieces) < 2 or any(len(p) > width for p in pieces):
            return None
        lines = [f"{prefix}{quote}{p}{quote}" for p in pieces]
        lines[-1] += _flat(trailing, first=False)
        return [lines[0], *[" " * indent + x for x in lines[1:]]]


_ASSIGN = ("=", "+=", "-=", "*=", "/=", "//=", "%=", "|=", "&=", "^=", ">>=", "<<=", "**=", "@=")


def _parenthesize(items: list) -> list | None:
    """Put the value of `x = ...`, `return ...`, `assert ...` or `if ...:` in brackets, so it can be split."""
    if not items:
        return None
    head = items[0].text if isinstance(items[0], _Tok) else ""
    end = len(items) - (1 if isinstance(items[-1], _Tok) and items[-1].text == ":" else 0)
    if head in ("return", "if", "elif", "while", "assert"):
        start = 1
        if head == "assert":  # `assert (test, message)` would be a tuple, always true
            end = next((i for i in range(1, end) if isinstance(items[i], _Tok) and items[i].text == ","), end)
    else:
        assigns = [i for i, item in enumerate(items) if isinstance(item, _Tok) and item.text in _ASSIGN]
        if not assigns:
            return None
        start = assigns[-1] + 1
    if start >= end:
        return None
    inner = items[start:end]
    bracket = _Bracket(_Tok("(", inner[0].space), inner, _Tok(")", ""))
    inner[0] = _Tok(inner[0].text, "") if isinstance(inner[0], _Tok) else inner[0]
    return [*items[:start], bracket, *items[end:]]


def wrap_statement(source: str, first: int, last: int, limit: int) -> list[str] | None:
    """New lines for the logical line spanning lines first..last of `source`, or None."""
    lines = source.splitlines(keepends=True)
    chunk = "".join(lines[first - 1:last])
    indent = len(chunk) - len(chunk.lstrip(" "))
    if "\t" in chunk[:indent + 1]:
        return None
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(chunk).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    items = _tree(tokens)
    if not items:
        return None
    header = isinstance(items[0], _Tok) and items[0].text in _HEADERS
    layout = _Layout(limit, 8 if header else 4)  # 8 keeps a header's continuation off its body's indent
    # Open a substantial bracket, else bracket the value and split that, else any bracket at all.
    laid = layout.lay(items, indent, indent, min_body=20)
    if laid is None and (wrapped := _parenthesize(items)) is not None:
        laid = layout.lay(wrapped, indent, indent, min_body=20)
    if laid is None:
        laid = layout.lay(items, indent, indent)
    if laid is None or len(laid) < 2:
        return None
    return [" " * indent + laid[0] + "\n", *[line.rstrip() + "\n" for line in laid[1:]]]
