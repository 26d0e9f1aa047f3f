"""Deterministic fixes, tried before any model: exact, instant, and right every time they apply.

- autopep8 (aggressive level 2) for the layout codes and the exact rewrites (E401,
  E713/E714, W605) — it is the reference tool for pycodestyle's codes, and the
  AST check catches the rare case where it goes too far. It is never given
  E711/E712 (it turns `x == True` into `x`) nor anything it cannot prove.
- Our own rewrites, where autopep8 does nothing or does the wrong thing:
  E711/E712 (`== None` to `is None`, `== True` to `is True`); E722 (a bare
  except is `except BaseException`, exactly); F401 (drop an unused import, but
  never in `__init__.py`, from `__future__`, when listed in `__all__`, or in a
  try block probing for an optional module); E741 (rename `l`/`O`/`I`
  consistently in their scope, see renames.py); F841 (drop an unused assignment
  whose right side has no effects, else keep the right side as a statement);
  E731 (`f = lambda x: e` becomes a def; only `f.__name__` changes);
  E501 on comments (wrap a long comment line, or move a trailing comment up)
  and on code (wrap.py: split along brackets, never with backslashes).

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
from codeasst.fixing.wrap import wrap_statement
from codeasst.lint import Diagnostic

_LIMIT = re.compile(r"\(\d+ > (\d+) characters\)")
_PURE = (ast.Constant, ast.Name)


def line_limit(diagnostics: list[Diagnostic], default: int = 79) -> int:
    """The project's max-line-length, as flake8 states it in E501 messages."""
    for diag in diagnostics:
        if diag.code == "E501" and (match := _LIMIT.search(diag.message)):
            return int(match.group(1))
    return default


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
    return fixed if fixed != text else None


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


def _import_names(node: ast.Import | ast.ImportFrom) -> list[str]:
    """How pyflakes names each alias in its messages."""
    if isinstance(node, ast.Import):
        return [a.name + (f" as {a.asname}" if a.asname else "") for a in node.names]
    module = "." * node.level + (node.module or "")
    sep = "" if module.endswith(".") else "."
    return [f"{module}{sep}{a.name}" + (f" as {a.asname}" if a.asname else "") for a in node.names]


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


def _exported(tree: ast.Module) -> set[str]:
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and node.value is not None:
                return {c.value for c in ast.walk(node.value) if isinstance(c, ast.Constant)
                        and isinstance(c.value, str)}
    return set()


def fix_unused_imports(text: str, tree: ast.Module, diagnostics: list[Diagnostic], filename: str) -> str | None:
    if filename.endswith("__init__.py"):
        return None  # an __init__ imports to re-export
    unused = {(d.line, m.group(1)) for d in diagnostics if d.code == "F401"
              and (m := re.match(r"'(.+?)' imported but unused", d.message))}
    if not unused:
        return None
    exported = _exported(tree)
    parent_map = parents(tree)
    lines = text.splitlines(keepends=True)
    edits = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        if _probes_optional_module(node, parent_map):
            continue
        span = range(node.lineno, (node.end_lineno or node.lineno) + 1)
        drop = [a for a, name in zip(node.names, _import_names(node), strict=True)
                if any((row, name) in unused for row in span)
                and (a.asname or a.name.split(".")[0]) not in exported and a.name != "*"]
        if not drop:
            continue
        keep = [a for a in node.names if a not in drop]
        if keep:
            rebuilt = type(node)(**{**{f: getattr(node, f) for f in node._fields}, "names": keep})
            start, end = char_col(lines[node.lineno - 1], node.col_offset), node.end_col_offset or 0
            end = char_col(lines[(node.end_lineno or node.lineno) - 1], end)
            edits.append(Edit(node.lineno, start, node.end_lineno or node.lineno, end, ast.unparse(rebuilt)))
        elif (edit := delete_statement(lines, node, block_of(node, parent_map))) is not None:
            edits.append(edit)
    if not edits:
        return None
    fixed = apply_edits(text, edits)
    # The blank lines that separated a removed first import from the code would now open the file.
    return fixed.lstrip("\n") if text[:1] != "\n" else fixed


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


def fix_long_comments(text: str, diagnostics: list[Diagnostic], limit: int) -> str | None:
    """E501 on comments: wrap a comment line, or move a trailing comment above its line."""
    rows = {d.line for d in diagnostics if d.code == "E501"}
    comments = {tok.start[0]: tok for tok in _tokens(text) if tok.type == tokenize.COMMENT and tok.start[0] in rows}
    lines = text.splitlines(keepends=True)
    edits = []
    for row, tok in comments.items():
        line = lines[row - 1]
        code, comment = line[: tok.start[1]], tok.string
        indent = line[: len(line) - len(line.lstrip())]
        body = comment.lstrip("#").strip()
        if comment.startswith("#!") or re.match(r"#\s*(noqa|type:|pragma)", comment):
            continue
        width = max(limit - len(indent) - 2, 20)
        wrapped = textwrap.wrap(body, width, break_long_words=False, break_on_hyphens=False) or [""]
        if any(len(indent) + 2 + len(w) > limit for w in wrapped):
            continue  # a single word (a URL) longer than the limit: nothing honest to do
        block = "".join(f"{indent}# {w}\n" for w in wrapped)
        if code.strip():
            if len(code.rstrip()) > limit:
                continue
            edits.append(Edit(row, 0, row + 1, 0, block + code.rstrip() + "\n"))
        else:
            edits.append(Edit(row, 0, row + 1, 0, block))
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
