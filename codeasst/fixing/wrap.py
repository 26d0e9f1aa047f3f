"""E501: re-lay a long statement as black (and ruff format) would, deterministically.

The statement's tokens become a tree of brackets. The value of an assignment, a
`return`, an `if`/`elif`/`while` condition, a `for` iterable and the parts of an
`assert` go in optional parentheses, which print only once they are split
(black's invisible parentheses). Then, as black does:

- a line that fits stays as it is;
- a `def`/`class` header opens its first bracket (the parameters);
- any other statement opens its last bracket whose opening line fits: `head(`,
  the contents indented by 4, `)tail` (the right-hand split). The optional
  parentheses are passed over for a bracket inside them when the value is one
  call, or one operator ending in a bracket, unless that would split a subscript
  left of the `=` (`headers[` / `'X'` / `] = ...` is never produced while the value
  can be bracketed instead);
- contents that do not fit on one indented line are split at their weakest
  operator: commas (one element per line, with a magic trailing comma where it
  cannot change the meaning), then comprehension `for`/`if`, `if`/`else`,
  `and`/`or`, comparisons, arithmetic; each piece is laid out the same way.

Subscripts are opened only when nothing else works, and a string literal is
split into adjacent literals (at spaces, inside brackets) only as a last resort.
Every line of a result fits the limit, or the statement is left as it is. The AST
does not change, and the verifier checks that it did not.
"""

from __future__ import annotations

import io
import keyword
import re
import tokenize
from dataclasses import dataclass, field, replace

_OPEN, _CLOSE = "([{", ")]}"
_SKIP = (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)
_ASSIGN = ("=", "+=", "-=", "*=", "/=", "//=", "%=", "|=", "&=", "^=", ">>=", "<<=", "**=", "@=")
_CONSTANTS = ("True", "False", "None")
# black's delimiter priorities: a line is split at the highest-priority ones it holds.
_COMPREHENSION, _COMMA, _TERNARY, _LOGIC, _STRING, _COMPARE = 20, 18, 16, 14, 12, 10
_MATH = {"|": 9, "^": 8, "&": 7, "<<": 6, ">>": 6, "+": 5, "-": 5, "*": 4, "/": 4, "//": 4, "%": 4, "@": 4,
         "**": 1}
_COMPARATORS = ("<", ">", "<=", ">=", "==", "!=", "in", "is")
_FSTRING_START = getattr(tokenize, "FSTRING_START", -1)
_FSTRING_END = getattr(tokenize, "FSTRING_END", -1)
_STRING_LITERAL = re.compile(r"([rRbBuU]{0,2})('|\")(.*)\2", re.DOTALL)
_BUDGET = 4000  # layouts tried per statement: a huge literal is left alone rather than searched for long


@dataclass
class _Tok:
    text: str
    space: str  # what goes before it when laid flat
    kind: int = tokenize.OP


@dataclass
class _Bracket:
    open: _Tok
    items: list = field(default_factory=list)
    close: _Tok | None = None
    trailer: bool = False  # a call's or a subscript's bracket, not a literal or grouping
    optional: bool = False  # parentheses we added around a value: invisible unless split

    @property
    def space(self) -> str:
        return self.open.space

    @property
    def subscript(self) -> bool:
        return self.trailer and self.open.text == "["


def _respace(item: _Tok | _Bracket, space: str) -> _Tok | _Bracket:
    if isinstance(item, _Bracket):
        return replace(item, open=replace(item.open, space=space))
    return replace(item, space=space)


def _flat(items: list, first: bool = True) -> str:
    out = []
    for i, item in enumerate(items):
        lead = "" if first and i == 0 else item.space
        if isinstance(item, _Bracket):
            inner = _flat(item.items)
            out.append(lead + inner if item.optional else lead + item.open.text + inner + item.close.text)
        else:
            out.append(lead + item.text)
    return "".join(out)


def _operand_end(item: _Tok | _Bracket | None) -> bool:
    """Whether `item` can end an operand, so that an operator after it is binary."""
    if item is None:
        return False
    if isinstance(item, _Bracket):
        return True
    if item.kind == tokenize.NAME:
        return item.text in _CONSTANTS or not keyword.iskeyword(item.text)
    return item.kind in (tokenize.NUMBER, tokenize.STRING)


def _tree(tokens: list[tokenize.TokenInfo]) -> tuple[list, str] | None:
    """The bracket tree of one logical line, and its trailing comment ("" if none)."""
    root: list = []
    stack: list[_Bracket] = []
    prev = None
    comment = ""
    depth, fstart = 0, None  # Python 3.12+ tokenizes f-strings: each becomes one string token again
    for tok in tokens:
        if tok.type in _SKIP:
            continue
        if comment:
            return None  # code after a comment: the comment was inside the statement
        if tok.type == tokenize.COMMENT:
            if stack:
                return None  # a comment inside brackets has no safe place in a new layout
            comment = tok.string
            continue
        if tok.type == _FSTRING_START:
            fstart, depth = fstart or tok, depth + 1
            continue
        if depth:
            depth -= tok.type == _FSTRING_END
            if depth:
                continue
            if tok.end[0] != fstart.start[0]:
                return None
            tok = tokenize.TokenInfo(tokenize.STRING, fstart.line[fstart.start[1]:tok.end[1]], fstart.start,
                                     tok.end, fstart.line)
            fstart = None
        if tok.start[0] != tok.end[0]:
            return None  # a multi-line string: its length on one line means nothing
        if prev is None:
            space = ""
        elif prev.end[0] == tok.start[0]:
            space = tok.line[prev.end[1]:tok.start[1]]
        else:  # a line break inside brackets (or after a backslash), laid flat: no space where black puts none
            call = tok.string in "([" and (prev.string in _CLOSE or prev.type == tokenize.STRING or (
                prev.type == tokenize.NAME and not keyword.iskeyword(prev.string)))
            space = "" if prev.string in (*_OPEN, ".") or tok.string in (*_CLOSE, ",", ":", ".", ";") or call \
                else " "
        item = _Tok(tok.string, space, tok.type)
        target = stack[-1].items if stack else root
        if tok.string in _OPEN and tok.type == tokenize.OP:
            bracket = _Bracket(item, trailer=_operand_end(target[-1] if target else None))
            target.append(bracket)
            stack.append(bracket)
        elif tok.string in _CLOSE and tok.type == tokenize.OP:
            if not stack:
                return None
            stack.pop().close = _Tok(tok.string, "")
        else:
            target.append(item)
        prev = tok
    return (root, comment) if not stack and root else None


def _is(item: _Tok | _Bracket | None, *texts: str) -> bool:
    return isinstance(item, _Tok) and item.text in texts


def _optional(items: list, start: int, end: int) -> list:
    """`items` with items[start:end] in optional parentheses. Parentheses already around the whole value
    become optional (black drops redundant ones) unless they make a tuple, a generator, a `yield` or a `:=`."""
    inner = items[start:end]
    if len(inner) == 1 and isinstance(inner[0], _Bracket):
        only = inner[0]
        if only.open.text == "(" and not only.trailer and only.items and not only.optional and not any(
                _is(x, ",", "for", "yield", ":=") for x in only.items):
            return [*items[:start], replace(only, optional=True), *items[end:]]
        return items
    if not inner:
        return items
    bracket = _Bracket(_Tok("(", inner[0].space), [_respace(inner[0], ""), *inner[1:]], _Tok(")", ""), optional=True)
    return [*items[:start], bracket, *items[end:]]


def _with_optional_parens(items: list) -> list:
    """Optional parentheses where black puts its invisible ones: the value of `x = ...`, `return ...`,
    `if`/`elif`/`while ...:`, `for ... in ...:` and both parts of `assert test, message`."""
    head = items[0].text if isinstance(items[0], _Tok) else ""
    end = len(items) - (1 if _is(items[-1], ":") else 0)
    if head in ("if", "elif", "while") and end < len(items):
        return _optional(items, 1, end)
    if head == "return":
        return _optional(items, 1, len(items))
    if head == "for" and end < len(items):
        at = next((i for i in range(2, end) if _is(items[i], "in")), None)
        return _optional(items, at + 1, end) if at is not None else items
    if head == "assert":  # `assert (test, message)` would be a tuple, always true: two separate values
        comma = next((i for i in range(1, len(items)) if _is(items[i], ",")), len(items))
        return _optional(_optional(items, comma + 1, len(items)), 1, comma)
    if head == "from":  # black brackets the names of `from x import a, b` and puts one per line
        at = next((i for i in range(1, len(items)) if _is(items[i], "import")), None)
        return _optional(items, at + 1, len(items)) if at is not None and not _is(items[-1], "*") else items
    if head in ("def", "async", "class", "with", "del", "import", "raise", "except", "global", "nonlocal"):
        return items
    stop = next((i for i, item in enumerate(items) if _is(item, "lambda")), len(items))  # `=` of a default
    assigns = [i for i in range(stop) if _is(items[i], *_ASSIGN)]
    return _optional(items, assigns[-1] + 1, len(items)) if assigns else items


def _delimiters(items: list, trailing_comma: bool = True) -> list[tuple[int, int]]:
    """(index, priority) of each place `items` may be split at: after a comma, else before an operator.
    Like black, the names of a lambda's parameters and of a `for` target are not split; a trailing
    comma counts only if `trailing_comma`."""
    if not trailing_comma and _is(items[-1], ","):
        return _delimiters(items[:-1])
    found: list[tuple[int, int]] = []
    lambda_args = for_target = comprehension = False
    for i, item in enumerate(items):
        if isinstance(item, _Bracket):
            continue
        text, prev = item.text, items[i - 1] if i else None
        nxt = items[i + 1] if i + 1 < len(items) else None
        if lambda_args:
            lambda_args = text != ":"
        elif for_target:
            for_target = text != "in"
        elif text == "lambda":
            lambda_args = True
        elif text == ",":
            found.append((i, _COMMA))
        elif text == "for":  # (at the start of a piece too: its target's commas are not to split at)
            if i:
                found.append((i - 1, _COMPREHENSION) if _is(prev, "async") else (i, _COMPREHENSION))
            for_target = comprehension = True
        elif text == "if" and i:
            found.append((i, _COMPREHENSION if comprehension else _TERNARY))
        elif text == "else" and i:
            found.append((i, _TERNARY))
        elif text in ("and", "or") and i:
            found.append((i, _LOGIC))
        elif (text in _COMPARATORS or text == "not" and _is(nxt, "in")) and _operand_end(prev):
            found.append((i, _COMPARE))
        elif text in _MATH and _operand_end(prev):
            found.append((i, _MATH[text]))
        elif item.kind == tokenize.STRING and isinstance(prev, _Tok) and prev.kind == tokenize.STRING:
            found.append((i, _STRING))
    return found


def _pieces(items: list, cuts: set[int], after: bool) -> list[list]:
    pieces, current = [], []
    for i, item in enumerate(items):
        if i in cuts and not after and current:
            pieces.append(current)
            current = []
        current.append(item)
        if i in cuts and after:
            pieces.append(current)
            current = []
    if current:
        pieces.append(current)
    return [[_respace(p[0], ""), *p[1:]] for p in pieces]


def _comma_allowed(where: _Bracket, last: list) -> bool:
    """May a trailing comma follow the last element inside `where`? Not where it would make a tuple
    (`(a)`, `x[a]`), and not after `*args`/`**kwargs`, a syntax error before Python 3.6."""
    if _is(last[0], "*", "**"):
        return False
    if where.open.text == "(" and not where.trailer or where.subscript:
        return any(_is(item, ",") for item in where.items)
    return True


def _magic(bracket: _Bracket) -> bool:
    """A trailing comma already there (black's "magic trailing comma"), not the one of `(a,)` or `x[a,]`."""
    grouping = bracket.open.text == "(" and not bracket.trailer or bracket.subscript
    return bool(bracket.items) and _is(bracket.items[-1], ",") and not (
        grouping and sum(_is(x, ",") for x in bracket.items) == 1)


def _holds_magic(items: list) -> bool:
    """Whether laying `items` flat would put a magic trailing comma on one line (`{a: 1,}`), which black
    never does."""
    return any(isinstance(x, _Bracket) and (_magic(x) or _holds_magic(x.items)) for x in items)


def _explodes(bracket: _Bracket) -> bool:
    """One element per line even when they would fit on one, as black does: after a magic trailing comma,
    and in a literal or an import list with commas."""
    if _magic(bracket):
        return True
    delimiters = _delimiters(bracket.items, trailing_comma=False)
    return not bracket.trailer and bool(delimiters) and max(priority for _, priority in delimiters) == _COMMA


class _Layout:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.budget = _BUDGET

    def fits(self, indent: int, text: str) -> bool:
        return indent + len(text) <= self.limit

    def line(self, items: list, indent: int, where: _Bracket | None, explode: bool = False,
             strings: bool = True) -> list[str] | None:
        """The lines for `items` at `indent`, inside the bracket `where` (None: a statement), each within
        the limit, or None. `explode`: one element per line even if they fit; `strings`: literals may be split."""
        self.budget -= 1
        if self.budget < 0:
            return None
        text = _flat(items)
        if self.fits(indent, text) and not explode and not _holds_magic(items):
            return [" " * indent + text]
        if where is not None and (lines := self.delimiter_split(items, indent, where, strings)) is not None:
            return lines
        if (lines := self.right_hand_split(items, indent, where)) is not None:
            return lines
        return self.split_string(items, indent) if where is not None and strings else None

    def delimiter_split(self, items: list, indent: int, where: _Bracket, strings: bool = True) -> list[str] | None:
        delimiters = _delimiters(items, trailing_comma=False)
        if not delimiters:
            return None
        top = max(priority for _, priority in delimiters)
        pieces = _pieces(items, {i for i, priority in delimiters if priority == top}, after=top == _COMMA)
        if len(pieces) < 2:
            return None  # only a trailing comma: nothing to split at
        if top == _COMMA and not _is(pieces[-1][-1], ",") and _comma_allowed(where, pieces[-1]):
            pieces[-1] = [*pieces[-1], _Tok(",", "")]
        lines: list[str] = []
        # Between adjacent literals, a literal too long on its own is better reflowed with the others.
        strings = strings and top != _STRING
        for piece in pieces:
            laid = self.line(piece, indent, where, strings=strings)
            if laid is None:
                return None
            lines.extend(laid)
        return lines

    def right_hand_split(self, items: list, indent: int, where: _Bracket | None,
                         subscripts: bool = True) -> list[str] | None:
        """Open the last bracket whose head and tail fit; subscripts only when no other bracket does."""
        brackets = [k for k in reversed(range(len(items))) if isinstance(items[k], _Bracket) and items[k].items
                    and (subscripts or not items[k].subscript)]
        for k in sorted(brackets, key=lambda k: items[k].subscript):  # stable: last first within each kind
            if (lines := self.split_at(items, k, indent, where)) is not None:
                return lines
        return None

    def split_at(self, items: list, k: int, indent: int, where: _Bracket | None) -> list[str] | None:
        bracket = items[k]
        omitted = None
        if bracket.optional and not (k and _is(items[k - 1], ",")) and self.can_omit(bracket, indent):
            # (an assert's message keeps its parentheses: `assert test, (` reads better than `assert (`)
            inline = [*items[:k], _respace(bracket.items[0], bracket.space), *bracket.items[1:], *items[k + 1:]]
            # Unlike black, a subscript is opened only if bracketing the whole value fails too.
            omitted = self.right_hand_split(inline, indent, where, subscripts=False)
            # As black, keep the parentheses rather than open a bracket left of the `=` (`f(a).b = ...`).
            left = _flat(items[:k - 1]) if k and _is(items[k - 1], *_ASSIGN) else None
            if omitted is not None and not (left is not None and len(omitted[0].strip()) <= len(left)):
                return omitted
            omitted = omitted or self.right_hand_split(inline, indent, where)
        head = (_flat(items[:k]) + bracket.space if k else "") + bracket.open.text
        tail = bracket.close.text + _flat(items[k + 1:], first=False)
        if not self.fits(indent, head) or not self.fits(indent, tail) or _holds_magic([*items[:k], *items[k + 1:]]):
            return omitted
        body = self.line(bracket.items, indent + 4, bracket, explode=_explodes(bracket))
        if body is None or omitted is not None and bracket.optional and len(body) > 1:
            return omitted or None  # the value alone does not fit on a line: the subscript split is no worse
        return [" " * indent + head, *body, " " * indent + tail]

    def can_omit(self, bracket: _Bracket, indent: int) -> bool:
        """black's `can_omit_invisible_parens`: whether to split inside the value rather than around it."""
        body = bracket.items
        delimiters = _delimiters(body)
        if not delimiters:
            return True
        top = max(priority for _, priority in delimiters)
        if sum(priority == top for _, priority in delimiters) > 1:
            return False  # with more than one delimiter of a kind the parentheses read better
        first, last = body[0], body[-1]
        if isinstance(first, _Bracket) and first.items and len(body) > 1 \
                and self.fits(indent + 4, first.close.text + _flat(body[1:], first=False)):
            return True
        if isinstance(last, _Bracket) and not last.subscript and last.items:
            seen_other = any(isinstance(x, _Bracket) for x in body[:-1])
            return seen_other or self.fits(indent + 4, _flat(body[:-1]) + last.space + last.open.text)
        return False

    def split_string(self, items: list, indent: int) -> list[str] | None:
        """Last resort: the string literals that open `items` (after `name=` or an operator, if any) are
        reflowed into adjacent literals split after spaces; after `name=` or an operator, in parentheses
        of their own (`== (` / literals / `)`)."""
        start = 0
        if len(items) >= 3 and _is(items[1], "=") and isinstance(items[0], _Tok):
            start = 2  # a keyword argument
        elif isinstance(items[0], _Tok) and (items[0].kind == tokenize.OP or keyword.iskeyword(items[0].text)):
            start = 2 if _is(items[1:2] and items[1], "not", "in") else 1  # `== '...'`, `not in '...'`
        run = start
        while run < len(items) and isinstance(items[run], _Tok) and items[run].kind == tokenize.STRING:
            run += 1
        parts = [_STRING_LITERAL.fullmatch(item.text) for item in items[start:run]]
        if not parts or not all(parts) or len({(m.group(1).lower(), m.group(2)) for m in parts}) > 1:
            return None  # not literals of one kind (an f-string, bytes beside str, mixed quotes)
        prefix, quote = parts[0].group(1), parts[0].group(2)
        body = "".join(m.group(3) for m in parts)
        if any(m.group(3).startswith(quote * 2) for m in parts):
            return None  # a triple-quoted string is not ours to split
        if "\\" in body and (len(parts) > 1 or "\\N{" in body):
            return None  # no escape may change: `\1` + `2` joined is `\12`; `\N{NAME}` holds spaces
        keyword_value = start > 0  # (its own parentheses)
        comma = "," if _is(items[-1], ",") else ""
        after = _flat(items[run:len(items) - len(comma)], first=False)  # `% args`, `.format(...)`
        pad = indent + (4 if keyword_value else 0)
        width = self.limit - pad - len(prefix) - 2
        end = after + ("" if keyword_value else comma)
        pieces = _fill(body, width)
        if len(pieces[-1]) + len(end) > width:  # make room for what follows the last literal
            pieces[-1:] = _fill(pieces[-1], width - len(end))
        lines = [" " * pad + f"{prefix}{quote}{piece}{quote}" for piece in pieces]
        lines[-1] += end
        if len(pieces) < 2 or any(len(line) > self.limit for line in lines):
            return None
        if keyword_value:
            opening = _flat(items[:start]) + ("(" if _is(items[start - 1], "=") else " (")
            return [" " * indent + opening, *lines, " " * indent + ")" + comma]
        return lines


def _fill(text: str, width: int) -> list[str]:
    """`text` in pieces of at most `width` characters, each ending after a space where it can."""
    pieces, piece = [], ""
    for word in re.findall(r"\S*\s*", text):
        if piece and len(piece) + len(word) > width:
            pieces.append(piece)
            piece = ""
        piece += word
    return [*pieces, piece] if piece or not pieces else pieces


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
    parsed = _tree(tokens)
    if parsed is None:
        return None
    items, comment = parsed
    if len(items) == 1 and isinstance(items[0], _Tok):
        return None  # a lone name or string (a docstring): nothing to split
    layout = _Layout(limit)
    if _is(items[0], "def", "class") or _is(items[0], "async") and _is(items[1:2] and items[1], "def"):
        # black's left-hand split: the parameters open, the return annotation stays on the last line.
        k = next((i for i, item in enumerate(items) if isinstance(item, _Bracket)), None)
        laid = layout.split_at(items, k, indent, None) if k is not None and items[k].items else None
    else:
        laid = layout.line(_with_optional_parens(items), indent, None)
    if laid is None or len(laid) < 2:
        return None
    if comment:  # a trailing comment stays at the end of the statement, as black keeps it
        laid[-1] += "  " + comment
        if len(laid[-1]) > limit:
            return None
    return [line.rstrip() + "\n" for line in laid]


def join_statement(source: str, first: int, last: int, limit: int) -> str | None:
    """The logical line spanning lines first..last of `source` laid flat on one line, as black
    joins a statement that fits; None when it does not fit or holds a comment or multi-line string."""
    chunk = "".join(source.splitlines(keepends=True)[first - 1:last])
    indent = chunk[:len(chunk) - len(chunk.lstrip(" "))]
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(chunk).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    parsed = _tree(tokens)
    if parsed is None or "\t" in indent:
        return None
    items, comment = parsed
    if len(items) == 3 and _is(items[0], "if", "elif", "while") and _is(items[2], ":") \
            and isinstance(items[1], _Bracket) and items[1].open.text == "(" and items[1].items \
            and not any(_is(item, ",", "for", ":=", "yield") for item in items[1].items):
        # black's redundant parentheses around a condition, once it is on one line: `if a and b:`
        items = [items[0], replace(items[1], optional=True, open=replace(items[1].open, space=" ")), items[2]]
    line = indent + _flat(items) + ("  " + comment if comment else "")
    return line + "\n" if len(line) <= limit else None
