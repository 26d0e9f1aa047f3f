"""`--try-syntax`: ask the model to repair a syntax error, which is refused by default.

A syntax error has no AST to compare, so this is the one fix that is checked
only by the parser and flake8, plus a bound on how much of the code around the
error may change. The user asks for it explicitly and sees the diff.
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Callable

from codeasst import prompt
from codeasst.backends.base import LLM
from codeasst.fixing.units import Unit, ask_for_code, extract_code, splice
from codeasst.lint import Linter

_TOP = re.compile(r"(@|def |async def |class )")
_MIN_SIMILARITY = 0.85  # a repair rewrites a token or two, not the function


def _window(lines: list[str], line: int, max_lines: int) -> Unit:
    """The top-level definition around the error, by indentation, since there is no AST."""
    start = line
    while start > 1 and not _TOP.match(lines[start - 1]):
        start -= 1
    while start > 1 and lines[start - 2].startswith("@"):
        start -= 1
    end = line
    while end < len(lines) and not _TOP.match(lines[end]):
        end += 1
    while end > line and not lines[end - 1].strip():
        end -= 1  # the blank lines before the next definition stay where they are
    start, end = max(start, line - max_lines // 2), min(end, line + max_lines // 2)
    return Unit(start, end, f"line {start}", None)


def repair(text: str, error: SyntaxError, llm: Callable[[], LLM], linter: Linter, rounds: int,
           max_lines: int, encoding: str = "utf-8") -> tuple[str | None, list[str], int]:
    """(the repaired text or None, why each attempt failed, model calls)."""
    lines = text.splitlines(keepends=True)
    row = min(max(error.lineno or 1, 1), len(lines))
    unit = _window(lines, row, max_lines)
    snippet, margin = unit.snippet(lines)
    reasons: list[str] = []
    for _ in range(rounds):
        hints = "Fix only the syntax error; change nothing else.\n"
        if reasons:
            hints += f"Your previous answer was rejected: {reasons[-1]}.\n"
        messages = prompt.load("fix").messages(
            code=snippet.rstrip("\n"), feedback=f"E999 SyntaxError: {error.msg} in {row - unit.start + 1} line",
            hints=hints)
        extracted = extract_code(ask_for_code(llm(), messages, int(len(snippet) / 2.5) + 96), unit)
        if extracted is None:
            reasons.append("it held no code")
            continue
        if difflib.SequenceMatcher(None, snippet, extracted.code).ratio() < _MIN_SIMILARITY:
            reasons.append("it rewrote far more than the error")
            continue
        candidate = splice(text, unit, extracted.code, margin)
        try:
            ast.parse(candidate)
        except SyntaxError as exc:
            reasons.append(f"it still does not parse: {exc.msg} (line {exc.lineno})")
            continue
        if any(d.code == "E999" for d in linter.check(candidate, encoding)):
            reasons.append("flake8 still reports a syntax error")
            continue
        return candidate, reasons, len(reasons) + 1
    return None, reasons, len(reasons)
