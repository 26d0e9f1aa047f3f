"""E501 inside a docstring: wrap the line's text onto the next line, keeping every word.

A docstring's value is documentation, so its layout inside the quotes may change
(the verifier compares docstrings with whitespace collapsed) but its words may
not. Only prose is wrapped: a literal block (after `::`), a doctest and its
output, a table and a directive are laid out by hand and stay as they are. The
overflow goes on a new line at the indentation that keeps it in the same
paragraph or field (`:param x:` text continues four columns in, a bullet's text
under its first word), and is never cut so that the new line would start a
list item, a field or a directive of its own. A word longer than the line (a
URL) is left alone.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize

from codeasst.fixing.edits import Edit, apply_edits
from codeasst.lint import Diagnostic

_FIELD = re.compile(r":[^:\s][^:]*:(\s|$)")
_BULLET = re.compile(r"([-*+•]|#\.|\d+[.)]|\(\d+\))\s")
_HAND_LAID = re.compile(r"(>>>|\.\.\.|\.\. |\||\+[-=]|={3,}|-{3,})")
# What a line of reST may not start with unless it starts a construct of its own.
_STARTS_CONSTRUCT = re.compile(r"([-*+•]\s|#\.\s|\d+[.)]\s|\(\d+\)\s|:[^:\s][^:]*:(\s|$)|\.\.|>>>|\||={3,}|\+[-=])")


def _docstring_tokens(text: str, tree: ast.Module) -> list[tokenize.TokenInfo]:
    """The string tokens that are docstrings, triple-quoted, without backslash continuations."""
    starts = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                starts.add((first.value.lineno, first.value.col_offset))
    lines = text.splitlines()
    found = []
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type != tokenize.STRING:
            continue
        row, col = tok.start
        if (row, len(lines[row - 1][:col].encode("utf-8"))) not in starts:
            continue
        prefix = re.match(r"[A-Za-z]*", tok.string).group(0)
        quotes = tok.string[len(prefix):len(prefix) + 3]
        if quotes in ('"""', "'''") and "f" not in prefix.lower() and "\\\n" not in tok.string:
            found.append(tok)
    return found


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _opening(tok: tokenize.TokenInfo) -> int:
    """The length of the string's prefix and opening quotes."""
    return len(re.match(r"[A-Za-z]*", tok.string).group(0)) + 3


def _hand_laid_rows(tok: tokenize.TokenInfo, lines: list[str]) -> set[int]:
    """Rows of the docstring laid out by hand: literal blocks, doctests with their output, tables."""
    rows, literal_base, doctest = set(), None, False
    first_row, last_row = tok.start[0], tok.end[0]
    opening = _opening(tok)
    for row in range(first_row, last_row + 1):
        line = lines[row - 1]
        content = line[tok.start[1] + opening:] if row == first_row else line.lstrip(" ")
        indent = tok.start[1] if row == first_row else _indent(line)
        if not content.strip():
            doctest = False
            continue
        if literal_base is not None and indent > literal_base:
            rows.add(row)
            continue
        literal_base = None
        if doctest or _HAND_LAID.match(content.lstrip()):
            rows.add(row)
            doctest = doctest or content.lstrip().startswith(">>>")
        if content.rstrip().rstrip("'\"").endswith("::"):
            literal_base = indent
    return rows


def _continuation_indent(lines: list[str], row: int, last_row: int, content: str, indent: int) -> int:
    nxt = lines[row] if row < last_row else ""
    if nxt.strip() and _indent(nxt) > indent and not _STARTS_CONSTRUCT.match(nxt.lstrip()):
        return _indent(nxt)  # the paragraph or field already goes on there
    if _FIELD.match(content):
        return indent + 4
    if bullet := _BULLET.match(content):
        return indent + len(bullet.group(0))
    return indent


def _split(text: str, width: int) -> tuple[str, str] | None:
    """`text` cut at the last space that leaves at most `width` characters before it and a rest that
    does not start a reST construct of its own."""
    for match in sorted(re.finditer(r" +", text), key=lambda m: -m.start()):
        head, rest = text[:match.start()], text[match.end():]
        if len(head) <= width and head.strip() and rest and not _STARTS_CONSTRUCT.match(rest):
            return head, rest
    return None


def _continues(lines: list[str], row: int, last_row: int, cont: int, hand_laid: set[int]) -> bool:
    """Whether `row` goes on with the paragraph whose text continues at column `cont`."""
    if row > last_row or row in hand_laid:
        return False
    line = lines[row - 1]
    text = line[cont:]
    return text.strip() not in ("", '"""', "'''") and _indent(line) == cont \
        and not _STARTS_CONSTRUCT.match(text)


def _wrapped(lines: list[str], row: int, last_row: int, lead: int, cont: int, limit: int,
             hand_laid: set[int]) -> tuple[list[str], int] | None:
    """Row `row` (its text from column `lead`) as lines of at most `limit`. Words that do not fit
    are carried into the next line of the same paragraph, as far as they need to go, so no line
    is left holding a stray word; past the paragraph's end they go on new lines at `cont`.
    Returns the new lines and the last row they replace."""
    out, head, text = [], lines[row - 1][:lead], lines[row - 1][lead:]
    while len(head) + len(text) > limit:
        cut = _split(text, limit - len(head))
        if cut is None:
            return None
        out.append(head + cut[0].rstrip())
        if _continues(lines, row + 1, last_row, cont, hand_laid):
            row += 1
            head, text = lines[row - 1][:cont], cut[1] + " " + lines[row - 1][cont:]
        else:
            head, text = " " * cont, cut[1]
    return [*out, head + text], row


def fix_long_docstrings(text: str, tree: ast.Module, diagnostics: list[Diagnostic], limit: int) -> str | None:
    """E501 on a docstring line: its prose wrapped, the words and their order kept."""
    rows = {d.line for d in diagnostics if d.code == "E501"}
    if not rows:
        return None
    lines = text.splitlines()
    edits = []
    for tok in _docstring_tokens(text, tree):
        first_row, last_row = tok.start[0], tok.end[0]
        wanted = sorted(rows & set(range(first_row, last_row + 1)))
        if not wanted:
            continue
        hand_laid = _hand_laid_rows(tok, lines)
        opening = _opening(tok)
        done: set[int] = set()
        for row in wanted:
            line = lines[row - 1]
            if row in hand_laid or "\t" in line:
                continue
            if row == first_row:
                lead, indent = tok.start[1] + opening, tok.start[1]
            else:
                lead = indent = _indent(line)
            content = line[lead:]
            if row == last_row and row != first_row and not content[:content.find(tok.string[-3:])].strip():
                continue  # only the closing quotes, past the limit: nothing to wrap
            cont = indent if row == first_row else _continuation_indent(lines, row, last_row, content, indent)
            if row in done or (wrapped := _wrapped(lines, row, last_row, lead, cont, limit, hand_laid)) is None:
                continue
            new, end = wrapped
            done.update(range(row, end + 1))
            edits.append(Edit(row, 0, end, len(lines[end - 1]), "\n".join(new)))
    return apply_edits(text, edits) if edits else None
