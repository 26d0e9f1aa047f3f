"""Small text edits at AST positions (1-based lines, UTF-8 byte columns, as ast reports them)."""

from __future__ import annotations

import ast
from dataclasses import dataclass


def char_col(line: str, byte_col: int) -> int:
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))


@dataclass(frozen=True)
class Edit:
    line: int  # 1-based
    col: int  # character column on that line
    end_line: int
    end_col: int
    text: str


def apply_edits(source: str, edits: list[Edit]) -> str:
    """Apply non-overlapping edits; later ones first, so earlier positions stay valid."""
    lines = source.splitlines(keepends=True)
    for edit in sorted(edits, key=lambda e: (e.line, e.col), reverse=True):
        head = lines[edit.line - 1][: edit.col]
        tail = lines[edit.end_line - 1][edit.end_col:] if edit.end_line <= len(lines) else ""
        lines[edit.line - 1 : edit.end_line] = [head + edit.text + tail]
    return "".join(lines)


def node_edit(source_lines: list[str], node: ast.AST, text: str) -> Edit:
    """Replace exactly the span of `node`."""
    line, end_line = node.lineno, node.end_lineno or node.lineno
    return Edit(line, char_col(source_lines[line - 1], node.col_offset), end_line,
                char_col(source_lines[end_line - 1], node.end_col_offset or 0), text)


def delete_statement(source_lines: list[str], stmt: ast.stmt, siblings: list[ast.stmt]) -> Edit | None:
    """Remove a statement that has its lines to itself; `pass` if it was its block's only one."""
    first = source_lines[stmt.lineno - 1]
    last = source_lines[(stmt.end_lineno or stmt.lineno) - 1]
    start = char_col(first, stmt.col_offset)
    end = char_col(last, stmt.end_col_offset or 0)
    if first[:start].strip() or last[end:].strip() not in ("", ";") and not last[end:].lstrip().startswith("#"):
        return None  # shares its line with another statement: leave it to a later pass
    if len(siblings) == 1:
        return Edit(stmt.lineno, start, stmt.end_lineno or stmt.lineno, end, "pass")
    return Edit(stmt.lineno, 0, (stmt.end_lineno or stmt.lineno) + 1, 0, "")


def parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    found = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            found[child] = node
    return found


def block_of(stmt: ast.stmt, parent_map: dict[ast.AST, ast.AST]) -> list[ast.stmt]:
    parent = parent_map.get(stmt)
    for field in ("body", "orelse", "finalbody"):
        block = getattr(parent, field, None)
        if isinstance(block, list) and stmt in block:
            return block
    return [stmt]
