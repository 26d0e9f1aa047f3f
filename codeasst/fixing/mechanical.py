"""Deterministic fixes, tried before any model: exact, instant, and right every time they apply.

- autopep8 (aggressive level 2) for the layout codes and the exact rewrites (E401,
  E713/E714, W605) — it is the reference tool for pycodestyle's codes, and the
  AST check catches the rare case where it goes too far. It is never given
  E711/E712 (it turns `x == True` into `x`) nor anything it cannot prove.
- Our own rewrites, where autopep8 does nothing or does the wrong thing:
  E711/E712 (`== None` to `is None`, `== True` to `is True`); E722 (a bare
  except is `except BaseException`, exactly); F401 (drop an unused import, but
  never from `__future__`, when listed in `__all__`, or in a try block probing
  for an optional module; a re-export, see verify.Namespace, is marked
  `# noqa: F401` instead); E741 (rename `l`/`O`/`I`
  consistently in their scope, see renames.py); F841 (drop an unused assignment
  whose right side has no effects, else keep the right side as a statement);
  E731 (`f = lambda x: e` becomes a def; only `f.__name__` changes);
  E501 on comments (wrap a long comment line, carrying words on into the rest
  of its paragraph, each line keeping the prefix, `#` or `#:`; or move a
  trailing comment up) and on code (wrap.py: split along brackets, never with
  backslashes). Pragma, `# type:` and `# noqa` comments are never moved or
  wrapped, and autopep8 may not respell `#:` as `# :`.

Each function returns a candidate text or None; the pipeline verifies every one.
"""

from __future__ import annotations

import ast
import difflib
import io
import itertools
import re
import textwrap
import tokenize

from codeasst.fixing.codes import AUTOPEP8_UNSAFE
from codeasst.fixing.edits import Edit, apply_edits, block_of, char_col, delete_statement, parents
from codeasst.fixing.verify import (
    LIBRARY,
    NOQA,
    PRAGMA,
    Namespace,
    binding,
    comment_kind,
    exported_names,
    flagged_imports,
    module_scope,
)
from codeasst.fixing.wrap import join_statement, wrap_statement
from codeasst.lint import Diagnostic, reported_limit

_PURE = (ast.Constant, ast.Name)


def line_limit(diagnostics: list[Diagnostic], default: int = 79) -> int:
    """The project's max-line-length, as flake8 states it in E501 messages."""
    return reported_limit(diagnostics) or default


def autopep8_fix(text: str, codes: set[str], max_line_length: int) -> str | None:
    # Only the codes flake8 reported, so what the project's config ignores stays as it is; but
    # autopep8 re-indents (tabs, E117 over-indentation) only in its E101 pass, and breaks long
    # lines with backslashes, so E501 is ours (wrap.py).
    codes = (codes - AUTOPEP8_UNSAFE - {"E501"})
    if codes & {"W191", "E111", "E112", "E113", "E114", "E115", "E116", "E117"}:
        codes.add("E101")
    if not codes:
        return None
    import autopep8  # deferred: only `fix` needs it

    fixed = autopep8.fix_code(text, options={"select": sorted(codes), "aggressive": 2,
                                             "max_line_length": max_line_length})
    fixed = _keep_comment_forms(text, fixed)
    return fixed if fixed != text else None


def _keep_comment_forms(text: str, fixed: str) -> str:
    """Undo autopep8's E262/E265 respelling where it changes a comment's kind: `#:doc` is Sphinx's
    attribute documentation, and `# :doc` is not. It keeps the space pycodestyle asks for: `#: doc`."""
    try:
        before = [t for t in _tokens(text) if t.type == tokenize.COMMENT]
        after = [t for t in _tokens(fixed) if t.type == tokenize.COMMENT]
    except (tokenize.TokenError, SyntaxError):
        return fixed
    if len(before) != len(after):
        return fixed  # comments came or went: nothing to pair them by (verify judges the result)
    edits = []
    for old, new in zip(before, after, strict=True):
        (kind, body), (new_kind, _) = comment_kind(old.string), comment_kind(new.string)
        if kind != new_kind:
            edits.append(Edit(new.start[0], new.start[1], new.end[0], new.end[1], f"{kind} {body.strip()}".rstrip()))
    return apply_edits(fixed, edits) if edits else fixed


def _tokens(text: str) -> list[tokenize.TokenInfo]:
    return list(tokenize.generate_tokens(io.StringIO(text).readline))


def fix_singletons(text: str, diagnostics: list[Diagnostic]) -> str | None:
    """E711/E712: the operator at each flagged position becomes `is` / `is not`."""
    spots = {(d.line, d.col - 1) for d in diagnostics if d.code in ("E711", "E712")}
    lines = text.splitlines(keepends=True)
    edits = []
    for tok in _tokens(text):
        if tok.type == tokenize.OP and tok.string in ("==", "!=") and tok.start in spots:
            (row, col), (_, end) = tok.start, tok.end
            word = "is" if tok.string == "==" else "is not"
            before = "" if col and lines[row - 1][col - 1].isspace() else " "
            after = "" if end < len(lines[row - 1]) and lines[row - 1][end].isspace() else " "
            edits.append(Edit(row, col, row, end, before + word + after))
    return apply_edits(text, edits) if edits else None


def fix_bare_except(text: str, diagnostics: list[Diagnostic]) -> str | None:
    """E722: `except:` catches exactly what `except BaseException:` does."""
    rows = {d.line for d in diagnostics if d.code == "E722"}
    edits = []
    toks = _tokens(text)
    for tok, nxt in itertools.pairwise(toks):
        if tok.string == "except" and tok.start[0] in rows and nxt.string == ":":
            edits.append(Edit(tok.start[0], tok.end[1], tok.start[0], tok.end[1], " BaseException"))
    return apply_edits(text, edits) if edits else None


def _probes_optional_module(node: ast.AST, parent_map: dict) -> bool:
    """Inside `try:` with an ImportError handler, an import tests for a module: removing it changes that."""
    child, parent = node, parent_map.get(node)
    while parent is not None:
        if isinstance(parent, (ast.Try, ast.TryStar)) and child in parent.body:
            names = {n.id for h in parent.handlers if h.type for n in ast.walk(h.type) if isinstance(n, ast.Name)}
            if any(h.type is None for h in parent.handlers) or names & {
                    "ImportError", "ModuleNotFoundError", "Exception", "BaseException"}:
                return True
        child, parent = parent, parent_map.get(parent)
    return False


def _limit_for(text: str, diagnostics: list[Diagnostic]) -> int:
    """The line limit a fix must keep: flake8's when it reports E501, else the longest line there is
    (every line is within the project's limit then, whatever it is)."""
    if any(d.code == "E501" for d in diagnostics):
        return line_limit(diagnostics)
    return max([79, *map(len, text.splitlines())])


def _with_noqa(line: str, comment_col: int | None) -> str | None:
    """`line` with F401 added to its noqa comment (the comment at `comment_col`), or `  # noqa: F401`
    appended; None where no comment can go (after a backslash continuation)."""
    noqa = NOQA.search(line, comment_col) if comment_col is not None else None
    if noqa and not noqa["codes"]:
        return line  # a bare noqa silences it already
    if noqa:
        at = noqa.start("codes") + len(noqa["codes"].rstrip(", \t"))
        return line[:at] + ",F401" + line[at:]
    if line.rstrip().endswith("\\"):
        return None
    return line.rstrip() + "  # noqa: F401"


def _marked_reexport(lines: list[str], comments: dict[int, int], node: ast.Import | ast.ImportFrom,
                     keep: list[ast.alias], limit: int) -> Edit | None:
    """The statement with only the `keep` aliases and `# noqa: F401` on its first line, where flake8
    reports F401: the one re-export form pyflakes honours (it does not read `import x as x` as
    one), and it changes no code. Too long for the line, a one-line `from` import goes in brackets.
    `comments` maps a line to the column of its comment."""
    first_row, last_row = node.lineno, node.end_lineno or node.lineno
    first, last = lines[first_row - 1], lines[last_row - 1]
    start, end = char_col(first, node.col_offset), char_col(last, node.end_col_offset or 0)
    head, tail = first[:start], last[end:].rstrip("\r\n")
    if head.strip() or tail.strip()[:1] not in ("", "#"):
        return None  # shares its line with another statement
    if keep == node.names and first.rstrip("\r\n").endswith("\\") and not tail.strip():
        # Continued with backslashes: one logical line, so flake8 reads a noqa at its end for all of it.
        marked = _with_noqa(last.rstrip("\r\n"), comments.get(last_row))
        if marked is None or len(marked) > limit:
            return None
        return Edit(last_row, 0, last_row, len(last.rstrip("\r\n")), marked)
    if keep == node.names:
        line, last_row, col = first.rstrip("\r\n"), first_row, comments.get(first_row)  # its layout kept
    elif any((first_row, start) < (row, col) < (last_row, end) for row, col in comments.items()):
        return None  # rebuilding it would lose the comments between its names
    else:
        rebuilt = type(node)(**{**{f: getattr(node, f) for f in node._fields}, "names": keep})
        line = head + ast.unparse(rebuilt)
        col = len(line) + comments[last_row] - end if comments.get(last_row, -1) >= end else None
        line += tail
    marked = _with_noqa(line, col)
    if marked is None:
        return None
    if len(marked) <= limit:
        return Edit(first_row, 0, last_row, len(lines[last_row - 1].rstrip("\r\n")), marked)
    if not isinstance(node, ast.ImportFrom) or tail.strip() or node.end_lineno != first_row:
        return None
    names = [a.name + (f" as {a.asname}" if a.asname else "") for a in keep]
    body = textwrap.wrap(", ".join(names) + ",", limit - len(head) - 4, break_long_words=False,
                         break_on_hyphens=False)
    text = "\n".join([f"{head}from {'.' * node.level}{node.module or ''} import (  # noqa: F401",
                      *(f"{head}    {part}" for part in body), f"{head})"])
    if max(map(len, text.splitlines())) > limit:
        return None
    return Edit(first_row, 0, first_row, len(first.rstrip("\r\n")), text)


def fix_unused_imports(text: str, tree: ast.Module, diagnostics: list[Diagnostic],
                       namespace: Namespace = LIBRARY) -> str | None:
    """F401: drop an unused import, or mark one that `namespace` takes as a re-export."""
    flagged = list(flagged_imports(tree, diagnostics))
    if not flagged:
        return None
    exported = exported_names(tree)
    top = {id(n) for n in module_scope(tree)}
    limit = _limit_for(text, diagnostics)
    parent_map = parents(tree)
    lines = text.splitlines(keepends=True)
    comments = {t.start[0]: t.start[1] for t in _tokens(text) if t.type == tokenize.COMMENT}
    edits = []
    for node, aliases in flagged:
        future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        if future or _probes_optional_module(node, parent_map):
            continue
        aliases = [a for a in aliases if binding(a) not in exported and a.name != "*"]
        reexports = [a for a in aliases if id(node) in top and namespace.is_reexport(binding(a), tree)]
        drop = [a for a in aliases if a not in reexports]
        keep = [a for a in node.names if a not in drop]
        if reexports:
            edit = _marked_reexport(lines, comments, node, keep, limit)
        elif keep:
            edit = _rebuilt(lines, node, keep)
        else:
            edit = delete_statement(lines, node, block_of(node, parent_map))
        if edit is not None:
            edits.append(edit)
    if not edits:
        return None
    fixed = apply_edits(text, edits)
    # The blank lines that separated a removed first import from the code would now open the file.
    return fixed.lstrip("\n") if text[:1] != "\n" else fixed


def _rebuilt(lines: list[str], node: ast.Import | ast.ImportFrom, keep: list[ast.alias]) -> Edit:
    """The statement with only the `keep` aliases."""
    rebuilt = type(node)(**{**{f: getattr(node, f) for f in node._fields}, "names": keep})
    start, end = char_col(lines[node.lineno - 1], node.col_offset), node.end_col_offset or 0
    end = char_col(lines[(node.end_lineno or node.lineno) - 1], end)
    return Edit(node.lineno, start, node.end_lineno or node.lineno, end, ast.unparse(rebuilt))


def _has_effects(node: ast.expr) -> bool:
    if isinstance(node, _PURE):
        return False
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_has_effects(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return any(k is None or _has_effects(k) for k in node.keys) or any(_has_effects(v) for v in node.values)
    return True


def fix_unused_variables(text: str, tree: ast.Module, diagnostics: list[Diagnostic]) -> str | None:
    """F841: drop `x = <no effects>`, turn `x = call()` into `call()`, drop `as e` from an except."""
    wanted = {(d.line, m.group(1)) for d in diagnostics if d.code == "F841"
              and (m := re.match(r"local variable '(.+?)' is assigned to but never used", d.message))}
    # `total = ...; return totl`: the variable is unused because of a typo; the model should fix
    # the typo, not lose the assignment.
    undefined = [m.group(1) for d in diagnostics if d.code == "F821"
                 and (m := re.match(r"undefined name '(.+?)'", d.message))]
    wanted = {(row, name) for row, name in wanted if not difflib.get_close_matches(name, undefined, cutoff=0.6)}
    if not wanted:
        return None
    parent_map = parents(tree)
    lines = text.splitlines(keepends=True)
    edits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and (node.lineno, node.targets[0].id) in wanted:
            value = node.value
            if not _has_effects(value):
                if (edit := delete_statement(lines, node, block_of(node, parent_map))) is not None:
                    edits.append(edit)
            elif value.lineno == node.lineno:
                row = lines[node.lineno - 1]
                edits.append(Edit(node.lineno, char_col(row, node.col_offset), node.lineno,
                                  char_col(row, value.col_offset), ""))
        elif isinstance(node, ast.ExceptHandler) and node.name and node.type is not None \
                and (node.lineno, node.name) in wanted and node.type.end_lineno == node.lineno:
            row = lines[node.lineno - 1]
            start = char_col(row, node.type.end_col_offset or 0)
            match = re.match(rf"\s*\)?\s*as\s+{re.escape(node.name)}\b", row[start:])
            if match and ")" not in match.group(0):
                edits.append(Edit(node.lineno, start, node.lineno, start + match.end(), ""))
    return apply_edits(text, edits) if edits else None


_LIST_ITEM = re.compile(r"([-*+]|\d+[.)])\s")


def _prose(comment: str) -> tuple[str, str] | None:
    """(prefix, text) of a comment that may be re-wrapped, `#: Doc.` is ("#:", "Doc."); None for a
    pragma, `# type:` or noqa comment, whose form is its meaning, and for text laid out by hand
    (indented past the prefix: code, a table)."""
    if PRAGMA.match(comment) or NOQA.search(comment):
        return None
    prefix = re.match(r"#+:?", comment).group(0)
    text = comment[len(prefix):]
    text = text[1:] if text[:1] == " " else text
    return None if text[:1].isspace() else (prefix, text.rstrip())


def _fill(words: list[str], width: int) -> tuple[list[str], list[str]]:
    """The words that fit on one line of `width` (at least one), and the rest."""
    used = -1
    for i, word in enumerate(words):
        used += len(word) + 1
        if i and used > width:
            return words[:i], words[i:]
    return words, []


def _balanced(words: list[str], width: int) -> list[list[str]]:
    """`words` on as few lines of `width` as greedy filling needs, but of even length, so the last
    line is not a stray word or two (`# hooks`)."""
    def fill(w: int) -> list[list[str]]:
        rest, out = words, []
        while rest:
            line, rest = _fill(rest, w)
            out.append(line)
        return out

    best = fill(width)
    low = max(map(len, words))
    while low < width:  # the narrowest width that still needs no more lines
        mid = (low + width) // 2
        if len(fill(mid)) <= len(best):
            width = mid
        else:
            low = mid + 1
    return fill(width)


def fix_long_comments(text: str, diagnostics: list[Diagnostic], limit: int) -> str | None:
    """E501 on comments: wrap a comment line, or move a trailing comment above its line.

    Words that no longer fit are carried into the next line of the same paragraph (same column,
    same prefix, prose), so a wrap never leaves a stray `# to`; every line keeps the prefix, so
    `#:` documentation stays documentation. A word longer than a line (a URL) is never broken."""
    rows = {d.line for d in diagnostics if d.code == "E501"}
    comments = {tok.start[0]: tok for tok in _tokens(text) if tok.type == tokenize.COMMENT}
    lines = text.splitlines(keepends=True)

    def follows(row: int, col: int, prefix: str, after: str) -> list[str] | None:
        """The words of `row` if it goes on with the paragraph of a comment at `col` with `prefix`
        whose line before ended with the word `after`."""
        tok = comments.get(row)
        if tok is None or tok.start[1] != col or lines[row - 1][:col].strip():
            return None
        prose = _prose(tok.string)
        if prose is None or prose[0] != prefix or not prose[1] or _LIST_ITEM.match(prose[1]):
            return None  # another kind of comment, a blank line or a list item: a new paragraph
        if after.endswith((".", "!", "?", ":")) and prose[1][0].isupper():
            return None  # a sentence that starts on a line of its own
        return prose[1].split()

    edits, done = [], set()
    for row in sorted(rows & comments.keys()):
        tok, line = comments[row], lines[row - 1]
        prose = _prose(tok.string)
        if row in done or prose is None or (row == 1 and tok.string.startswith("#!")):
            continue
        prefix, words = prose[0], prose[1].split()
        code = line[: tok.start[1]]
        indent = line[: len(line) - len(line.lstrip())] if code.strip() else code
        width = limit - len(indent) - len(prefix) - 1
        if not words or width < 20 or any(len(w) > width for w in words):
            continue  # a word (a URL) longer than the line: nothing honest to do
        if code.strip():
            if len(code.rstrip()) > limit:
                continue
            block = "".join(f"{indent}{prefix} {' '.join(w)}\n" for w in _balanced(words, width))
            edits.append(Edit(row, 0, row + 1, 0, block + code.rstrip() + "\n"))
            continue
        block, last, carry = [], row, []
        while True:
            first, carry = _fill(carry + words, width)
            done.add(last)
            nxt = follows(last + 1, len(indent), prefix, words[-1]) if carry else None
            if nxt is None or any(len(w) > width for w in nxt):
                block.extend(_balanced(first + carry, width))  # the paragraph ends: new lines for the rest
                break
            block.append(first)
            last, words = last + 1, nxt
        edits.append(Edit(row, 0, last + 1, 0, "".join(f"{indent}{prefix} {' '.join(w)}\n" for w in block)))
    return apply_edits(text, edits) if edits else None


def _docstring_positions(tree: ast.Module) -> set[tuple[int, int]]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add((first.value.lineno, first.value.col_offset))
    return found


def fix_whitespace_in_strings(text: str, tree: ast.Module, diagnostics: list[Diagnostic]) -> str | None:
    """W291/W293/W191/E101 inside a multi-line string (not a docstring): the whitespace is part of
    the value, so spell the same value as adjacent one-line literals with escapes."""
    rows = {d.line for d in diagnostics if d.code in ("W291", "W293", "W191", "E101")}
    docstrings = _docstring_positions(tree)
    lines = text.splitlines(keepends=True)
    edits = []
    for tok in _tokens(text):
        (row, col), (end_row, end_col) = tok.start, tok.end
        if tok.type != tokenize.STRING or end_row == row or not rows & set(range(row, end_row + 1)):
            continue
        prefix = re.match(r"[A-Za-z]*", tok.string).group(0).lower()
        if "f" in prefix or (row, len(lines[row - 1][:col].encode("utf-8"))) in docstrings:
            continue
        value = ast.literal_eval(tok.string)
        pieces = [repr(p) for p in value.splitlines(keepends=True)] or [repr(value)]
        joiner = "\n" + " " * (col + 1)
        edits.append(Edit(row, col, end_row, end_col, "(" + joiner.join(pieces) + ")"))
    return apply_edits(text, edits) if edits else None


def _logical_lines(text: str) -> list[tuple[int, int]]:
    spans, start = [], None
    for tok in _tokens(text):
        if tok.type in (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER):
            continue
        if start is None:
            start = tok.start[0]
        if tok.type == tokenize.NEWLINE:
            spans.append((start, tok.start[0]))
            start = None
    return spans


def fix_long_lines(text: str, diagnostics: list[Diagnostic], limit: int, only: int | None = None) -> str | None:
    """E501 on code: re-lay the statement along its brackets (wrap.py); `only` picks one line."""
    rows = {d.line for d in diagnostics if d.code == "E501" and only in (None, d.line)}
    lines = text.splitlines(keepends=True)
    edits = []
    for first, last in _logical_lines(text):
        if rows & set(range(first, last + 1)) and (new := wrap_statement(text, first, last, limit)):
            edits.append(Edit(first, 0, last + 1, 0, "".join(new)))
    return apply_edits(text, edits) if edits and lines else None


def fix_operator_breaks(text: str, diagnostics: list[Diagnostic], limit: int) -> str | None:
    """W503/W504, where a project turns both on (as any `ignore =` setting does) and no line break
    next to an operator passes: the statement on one line, where it fits the limit."""
    rows = {d.line for d in diagnostics if d.code in ("W503", "W504")}
    edits = [Edit(first, 0, last + 1, 0, new) for first, last in _logical_lines(text)
             if last > first and rows & set(range(first, last + 1))
             and (new := join_statement(text, first, last, limit))]
    return apply_edits(text, edits) if edits else None


def fix_overlong(text: str, limit: int) -> str | None:
    """Wrap every code line longer than `limit`, whether flake8 flagged it yet or not (autopep8's
    re-indenting can push a line over the limit: wrapping in the same step keeps its fix whole)."""
    long_rows = [Diagnostic(i, limit + 1, "E501", "")
                 for i, line in enumerate(text.splitlines(), 1) if len(line) > limit]
    return fix_long_lines(text, long_rows, limit) if long_rows else None


def fix_lambda_assignments(text: str, tree: ast.Module, diagnostics: list[Diagnostic]) -> str | None:
    """E731: `f = lambda x: e` becomes `def f(x): return e` (only its __name__ changes)."""
    rows = {d.line for d in diagnostics if d.code == "E731"}
    lines = text.splitlines(keepends=True)
    edits = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Assign) and node.lineno in rows and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Lambda)):
            continue
        first, last = lines[node.lineno - 1], lines[(node.end_lineno or node.lineno) - 1]
        start, end = char_col(first, node.col_offset), char_col(last, node.end_col_offset or 0)
        if first[:start].strip() or last[end:].strip():
            continue  # shares its line with other code
        indent = first[:start]
        body = ast.unparse(node.value.body)
        text_def = f"def {node.targets[0].id}({ast.unparse(node.value.args)}):\n{indent}    return {body}"
        edits.append(Edit(node.lineno, start, node.end_lineno or node.lineno, end, text_def))
    return apply_edits(text, edits) if edits else None
