"""The gate every fix passes, deterministic or not, before it replaces the current text.

A candidate is accepted when it parses; its AST differs from the current one
only as the targeted codes allow (codes.py); and flake8 reports fewer problems
in all, with no code reported more often than before (so nothing new).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections import Counter
from dataclasses import dataclass, field

from codeasst.fixing.codes import AMBIGUOUS_NAMES, CodeClass, classify
from codeasst.fixing.equivalence import confined, rewrites_for, same_ast, same_up_to_renames
from codeasst.lint import Diagnostic, Linter


@dataclass
class State:
    """The current best text: it parses, and `diagnostics` are flake8's findings on it."""

    text: str
    tree: ast.Module
    diagnostics: list[Diagnostic]


@dataclass
class Verdict:
    ok: bool
    reason: str = ""
    state: State | None = None
    fixed: list[str] = field(default_factory=list)  # codes that disappeared


def structure_reason(old: ast.Module, new: ast.Module, targeted: list[Diagnostic]) -> str | None:
    codes = {d.code for d in targeted}
    classes = {classify(c) for c in codes}
    rewrites = rewrites_for(codes)
    if CodeClass.SEMANTIC in classes:
        lines = {d.line for d in targeted if classify(d.code) is not CodeClass.STYLE}
        return confined(old, new, lines, rewrites)
    if CodeClass.RENAME in classes:
        names = {m.group(1) for d in targeted if d.code == "E741"
                 and (m := re.search(r"'(\w+)'", d.message))} & AMBIGUOUS_NAMES
        return same_up_to_renames(old, new, frozenset(names), rewrites)
    return same_ast(old, new, rewrites)


def verify(current: State, candidate: str, targeted: list[Diagnostic], linter: Linter,
           encoding: str = "utf-8") -> Verdict:
    if candidate == current.text:
        return Verdict(False, "it changed nothing")
    try:
        tree = ast.parse(candidate)
    except SyntaxError as exc:
        return Verdict(False, f"it does not parse: {exc.msg} (line {exc.lineno})")
    if reason := structure_reason(current.tree, tree, targeted):
        return Verdict(False, reason)
    diagnostics = linter.check(candidate, encoding)
    before = Counter(d.code for d in current.diagnostics)
    after = Counter(d.code for d in diagnostics)
    added = [d for d in diagnostics if after[d.code] > before[d.code]]
    if added:
        return Verdict(False, f"it introduced {added[0].code} {added[0].message}")
    if after.total() >= before.total():
        still = next((d for d in diagnostics if d.code in {t.code for t in targeted}), diagnostics[0])
        return Verdict(False, f"flake8 still reports {still.code} {still.message}")
    fixed = sorted((before - after).elements())
    return Verdict(True, state=State(candidate, tree, diagnostics), fixed=fixed)


def lines_inside_strings(text: str) -> set[int]:
    """Lines a multi-line string spans: whitespace there may be part of its value."""
    inside: set[int] = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.STRING and tok.end[0] > tok.start[0] or getattr(tokenize, "FSTRING_MIDDLE", None) == tok.type and tok.end[0] > tok.start[0]:
                inside.update(range(tok.start[0], tok.end[0] + 1))
    except (tokenize.TokenError, SyntaxError):
        return inside
    return inside
