"""The piece of a file shown to the model for a diagnostic, how the model is asked, and how its
answer goes back.

A unit is the innermost function around the line (decorators included) when it
has at most `max_lines` lines, else the innermost statement, else the line
itself: a 3,000-line file costs the model no more than its longest function.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from codeasst.backends.base import LLM
from codeasst.lint import Diagnostic

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL)
_CLOSED_BLOCK = re.compile(r"```[^\n]*\n.*?^\s*```", re.DOTALL | re.MULTILINE)
_CODE_START = re.compile(r"^(@|def |async def |class |import |from |if |for |while |with |try:|[A-Za-z_][\w.]*\s*=)")


@dataclass(frozen=True)
class Unit:
    start: int  # first line, 1-based
    end: int  # last line, inclusive
    name: str  # "Class.method", or "line N" for code outside functions
    function: str | None  # the function's own name when the unit is a whole function

    def snippet(self, lines: list[str]) -> tuple[str, str]:
        """(the unit's text with its common indentation removed, that indentation)."""
        body = lines[self.start - 1 : self.end]
        margin = _margin(body)
        return "".join(line[len(margin):] if line.strip() else line.lstrip(" \t") for line in body), margin


def _margin(lines: list[str]) -> str:
    indents = [line[: len(line) - len(line.lstrip(" \t"))] for line in lines if line.strip()]
    if not indents:
        return ""
    common = indents[0]
    for indent in indents[1:]:
        while not indent.startswith(common):
            common = common[:-1]
    return common


def _children(stmt: ast.stmt) -> list[ast.stmt]:
    found: list = []
    for field in ("body", "orelse", "finalbody"):
        found.extend(getattr(stmt, field, None) or [])
    for handler in getattr(stmt, "handlers", None) or []:
        found.extend(handler.body)
    for case in getattr(stmt, "cases", None) or []:
        found.extend(case.body)
    return found


def unit_for_line(tree: ast.Module, line: int, max_lines: int) -> Unit:
    body, qual = tree.body, ""
    best: Unit | None = None
    while True:
        stmt = next((s for s in body if _first_line(s) <= line <= (s.end_lineno or s.lineno)), None)
        if stmt is None:
            return best if best is not None else Unit(line, line, f"line {line}", None)
        first, last = _first_line(stmt), stmt.end_lineno or stmt.lineno
        name = getattr(stmt, "name", None)
        if isinstance(stmt, _FUNCTIONS) and last - first < max_lines:
            return Unit(first, last, qual + stmt.name, stmt.name)
        children = _children(stmt)
        inside = [c for c in children if _first_line(c) <= line <= (c.end_lineno or c.lineno)]
        if not inside:
            if last - first < max_lines:
                return Unit(first, last, qual + name if name else f"line {first}", None)
            header_end = min((_first_line(c) for c in children), default=last + 1) - 1
            if line <= header_end and header_end - first < max_lines:
                return Unit(first, header_end, f"line {first}", None)
            return Unit(line, line, f"line {line}", None)
        if name:
            qual += name + "."
        body = children


def _first_line(stmt: ast.stmt) -> int:
    return min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", []))])


def group_by_unit(tree: ast.Module, diagnostics: list[Diagnostic], max_lines: int) -> list[tuple[Unit, list[Diagnostic]]]:
    groups: dict[Unit, list[Diagnostic]] = {}
    for diag in diagnostics:
        groups.setdefault(unit_for_line(tree, diag.line, max_lines), []).append(diag)
    # Merge units that overlap (a header-only unit inside a function unit, say) into the first.
    merged: list[tuple[Unit, list[Diagnostic]]] = []
    for unit, diags in sorted(groups.items(), key=lambda item: (item[0].start, -item[0].end)):
        if merged and unit.start <= merged[-1][0].end:
            merged[-1][1].extend(diags)
        else:
            merged.append((unit, diags))
    return merged


@dataclass(frozen=True)
class Extracted:
    code: str  # the unit's replacement, without the unit's indentation
    imports: list[str]  # import lines the answer put above a function, for a missing name (F821)


def ask_for_code(llm: LLM, messages: list, max_tokens: int) -> str:
    """The model's answer, cut off once it holds a complete fenced block: small models go on to
    explain their fix, which on a CPU costs more than the fix itself."""
    pieces: list[str] = []
    for token in llm.chat_stream(messages, max_tokens=max_tokens):
        pieces.append(token.text)
        if "`" in token.text and _CLOSED_BLOCK.search("".join(pieces)):
            break
    return "".join(pieces)


def extract_code(reply: str, unit: Unit) -> Extracted | None:
    """The code in a model's answer: the fenced block that holds the function, else the answer itself."""
    blocks = [body for lang, body in _FENCE.findall(reply) if lang.lower() in ("", "python", "py", "python3")]
    if not blocks:
        lines = reply.splitlines(keepends=True)
        start = next((i for i, line in enumerate(lines) if _CODE_START.match(line)), None)
        if start is None:
            return None
        blocks = ["".join(lines[start:])]
    if unit.function:
        marker = re.compile(rf"^\s*(async\s+)?def\s+{re.escape(unit.function)}\s*\(", re.MULTILINE)
        with_def = [b for b in blocks if marker.search(b)]
        blocks = with_def or blocks
    code = _dedent(max(blocks, key=len))
    imports: list[str] = []
    if unit.function:
        code, imports = _just_the_function(code, unit.function)
    code = code.strip("\n") + "\n"
    return Extracted(code, imports) if code.strip() else None


def _dedent(code: str) -> str:
    lines = code.splitlines(keepends=True)
    margin = _margin(lines)
    return "".join(line[len(margin):] if line.strip() else "\n" for line in lines)


def _just_the_function(code: str, name: str) -> tuple[str, list[str]]:
    """Drop what a model adds around the function (examples, prints), keeping new imports."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return _by_indentation(code, name), []
    lines = code.splitlines(keepends=True)
    for node in tree.body:
        if isinstance(node, _FUNCTIONS) and node.name == name:
            imports = [ast.get_source_segment(code, n) or "" for n in tree.body
                       if isinstance(n, (ast.Import, ast.ImportFrom)) and n.lineno < node.lineno]
            return "".join(lines[_first_line(node) - 1 : node.end_lineno]), imports
    return code, []


def _by_indentation(code: str, name: str) -> str:
    """The function's lines when the answer as a whole does not parse (mixed indentation, prose
    after it): from its decorators to the last line indented under its `def`."""
    lines = code.splitlines(keepends=True)
    marker = re.compile(rf"^(\s*)(async\s+)?def\s+{re.escape(name)}\s*\(")
    start = next((i for i, line in enumerate(lines) if marker.match(line)), None)
    if start is None:
        return code  # verification will reject it with the parser's own message
    indent = len(marker.match(lines[start]).group(1))
    end = start + 1
    while start > 0 and lines[start - 1].strip().startswith("@"):
        start -= 1
    while end < len(lines) and (not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > indent):
        end += 1
    return _dedent("".join(lines[start:end]))


def splice(text: str, unit: Unit, code: str, margin: str) -> str:
    lines = text.splitlines(keepends=True)
    new = [margin + line if line.strip() else "\n" for line in code.splitlines(keepends=True)]
    if new and not new[-1].endswith("\n"):
        new[-1] += "\n"
    return "".join(lines[: unit.start - 1] + new + lines[unit.end:])


def add_imports(text: str, tree: ast.Module, imports: list[str]) -> str:
    """Put import lines after the module's last top-level import (or its docstring)."""
    if not imports:
        return text
    anchor = 0
    for i, node in enumerate(tree.body):
        is_doc = i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        if isinstance(node, (ast.Import, ast.ImportFrom)) or is_doc:
            anchor = node.end_lineno or node.lineno
        else:
            break
    lines = text.splitlines(keepends=True)
    block = [line.strip() + "\n" for line in imports]
    return "".join(lines[:anchor] + block + lines[anchor:])
