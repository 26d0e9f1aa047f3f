"""The statements `eval unittest` may mask: whole one-line simple statements in a function's body.

Not the `def` line, not a docstring or a bare constant (`...`), not `pass` (its absence says
nothing), not a line that holds a second statement or a compound statement's header
(`if x: return y`), not a statement that runs on to other lines, and not the body of a nested
function or class (that is a function of its own).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

_SIMPLE = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Expr, ast.Raise, ast.Assert, ast.Delete,
           ast.Import, ast.ImportFrom, ast.Break, ast.Continue)
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass(frozen=True)
class Function:
    file: str  # relative to the repository
    qualname: str  # Class.method, outer.<locals>.inner
    def_line: int
    statements: tuple[int, ...]  # lines (1-based) of the statements that may be masked

    @property
    def key(self) -> str:
        return f"{self.file}::{self.qualname}:{self.def_line}"


@dataclass(frozen=True)
class Masked:
    """A file with one statement line taken out, the cursor where it stood (at its indentation)."""

    prefix: str
    suffix: str
    statement: str  # the line as it was, without its indentation: the ground truth
    line: int
    col: int  # 1-based, as `complete` takes it

    @property
    def text(self) -> str:
        return self.prefix + self.suffix

    def fill(self, completion: str) -> str:
        return self.prefix + completion + self.suffix


def _blocks(node: ast.AST):
    """The statement lists directly inside `node` (if/else, loops, with, try, match), recursively;
    nested functions and classes are not entered."""
    for name in ("body", "orelse", "finalbody"):
        block = getattr(node, name, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            yield block
            for stmt in block:
                if not isinstance(stmt, _NESTED):
                    yield from _blocks(stmt)
    for child in getattr(node, "handlers", []) + getattr(node, "cases", []):
        yield child.body
        for stmt in child.body:
            if not isinstance(stmt, _NESTED):
                yield from _blocks(stmt)


def _whole_line(stmt: ast.stmt, line: bytes) -> bool:
    """Whether `stmt` is all there is on its line, but for a comment (offsets are in UTF-8 bytes)."""
    before, after = line[: stmt.col_offset], line[stmt.end_col_offset:].strip()
    return not before.strip() and (not after or after.startswith(b"#"))


def _maskable(stmt: ast.stmt, lines: list[bytes]) -> bool:
    if not isinstance(stmt, _SIMPLE) or stmt.lineno != stmt.end_lineno:
        return False
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
        return False  # a docstring, `...`
    return _whole_line(stmt, lines[stmt.lineno - 1])


def functions(source: str, file: str) -> list[Function]:
    """Every function and method of `source` with the lines it may have masked; [] if it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    lines = source.encode("utf-8").split(b"\n")
    found: list[Function] = []

    def visit(node: ast.AST, scope: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{scope}{child.name}.")
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                qualname = f"{scope}{child.name}"
                statements = sorted({s.lineno for block in _blocks(child) for s in block if _maskable(s, lines)})
                found.append(Function(file, qualname, child.lineno, tuple(statements)))
                visit(child, f"{qualname}.<locals>.")
            else:
                visit(child, scope)

    visit(tree, "")
    return found


def mask(source: str, line: int) -> Masked:
    """`source` with line `line` emptied but for its indentation, the cursor after it."""
    lines = source.split("\n")
    text = lines[line - 1]
    indent = text[: len(text) - len(text.lstrip(" \t"))]
    prefix = "\n".join(lines[: line - 1] + [indent])
    suffix = "\n" + "\n".join(lines[line:])
    return Masked(prefix, suffix, text[len(indent):].rstrip(), line, len(indent) + 1)
