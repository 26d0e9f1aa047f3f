"""Checks that a fix changed only what its codes allow (see codes.py for the classes).

Each check returns None when the change is allowed, else a short reason.
"""

from __future__ import annotations

import ast
import copy
import difflib
from collections.abc import Iterable, Iterator

REWRITES_FOR_CODE = {"E711": "singleton", "E712": "singleton", "E713": "not_in", "E714": "not_in",
                     "E722": "bare_except", "E401": "split_import"}
_SINGLETONS = (None, True, False)
_STMT_LISTS = ("body", "orelse", "finalbody", "handlers", "cases")
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
# Fields that hold a name the program binds or reads; a rename may change these and nothing else.
_IDENTIFIER_FIELDS = {ast.Name: "id", ast.arg: "arg", ast.ExceptHandler: "name", ast.alias: "asname",
                      ast.MatchAs: "name", ast.MatchStar: "name", ast.MatchMapping: "rest"}


def rewrites_for(codes: Iterable[str]) -> frozenset[str]:
    return frozenset(REWRITES_FOR_CODE[c] for c in codes if c in REWRITES_FOR_CODE)


def _is_singleton(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and any(node.value is s for s in _SINGLETONS)


def _is_docstring_owner(node: ast.AST) -> bool:
    return isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))


class _Canonical(ast.NodeTransformer):
    """Rewrites a tree into the form two equivalent spellings share."""

    def __init__(self, rewrites: frozenset[str]) -> None:
        self.rewrites = rewrites

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if _is_docstring_owner(node) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                # A docstring is documentation: its words count, not where its lines break
                # (a long line may be wrapped inside the quotes).
                first.value.value = " ".join(first.value.value.split())
        super().generic_visit(node)
        if "split_import" in self.rewrites:
            for field in _STMT_LISTS:
                body = getattr(node, field, None)
                if isinstance(body, list) and any(isinstance(s, ast.Import) and len(s.names) > 1 for s in body):
                    setattr(node, field, [part for s in body for part in _split_import(s)])
        return node

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        if "singleton" in self.rewrites:
            operands = [node.left, *node.comparators]
            for i, op in enumerate(node.ops):
                if isinstance(op, (ast.Eq, ast.NotEq)) and (_is_singleton(operands[i]) or _is_singleton(operands[i + 1])):
                    node.ops[i] = ast.Is() if isinstance(op, ast.Eq) else ast.IsNot()
        return node

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        inner = node.operand
        if "not_in" in self.rewrites and isinstance(node.op, ast.Not) and isinstance(inner, ast.Compare) \
                and len(inner.ops) == 1 and isinstance(inner.ops[0], (ast.In, ast.Is)):
            inner.ops = [ast.NotIn() if isinstance(inner.ops[0], ast.In) else ast.IsNot()]
            return inner
        return node

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> ast.AST:
        self.generic_visit(node)
        if "bare_except" in self.rewrites and node.type is None:
            node.type = ast.Name("BaseException", ast.Load())
        return node


def _split_import(stmt: ast.stmt) -> list[ast.stmt]:
    if isinstance(stmt, ast.Import) and len(stmt.names) > 1:
        return [ast.Import(names=[alias]) for alias in stmt.names]
    return [stmt]


def canonical(tree: ast.AST, rewrites: frozenset[str] = frozenset()) -> ast.AST:
    return _Canonical(rewrites).visit(copy.deepcopy(tree))


def canonical_dump(tree: ast.AST, rewrites: frozenset[str] = frozenset()) -> str:
    return ast.dump(canonical(tree, rewrites))


def same_ast(old: ast.AST, new: ast.AST, rewrites: frozenset[str] = frozenset()) -> str | None:
    if canonical_dump(old, rewrites) == canonical_dump(new, rewrites):
        return None
    return "the code's structure changed (AST differs), which a layout fix must not do"


class _Renames:
    """A one-to-one map of names per function, seeded with every name that stays the same."""

    def __init__(self, allowed: frozenset[str]) -> None:
        self.allowed = allowed
        self.scopes: list[tuple[dict[str, str], dict[str, str]]] = [({}, {})]
        self.renamed: set[tuple[str, str]] = set()

    def same(self, name: str) -> str | None:
        # A kept name is recorded in every enclosing scope: renaming an outer `l` to a name
        # that an inner function reads from further out would capture that read.
        for forward, backward in self.scopes:
            if forward.get(name, name) != name or backward.get(name, name) != name:
                return f"the new name {name!r} was already in use"
            forward[name] = backward[name] = name
        return None

    def renamed_to(self, old: str, new: str) -> str | None:
        if old not in self.allowed:
            return f"{old!r} was renamed, but only {', '.join(sorted(self.allowed))} may be"
        forward, backward = self.scopes[-1]
        if forward.get(old, new) != new or backward.get(new, old) != old:
            return f"{old!r} was not renamed consistently"
        forward[old], backward[new] = new, old
        self.renamed.add((old, new))
        return None


def same_up_to_renames(old: ast.AST, new: ast.AST, allowed: frozenset[str],
                       rewrites: frozenset[str] = frozenset()) -> str | None:
    """None if `new` is `old` with some of the `allowed` names renamed consistently per function."""
    renames = _Renames(allowed)
    return _walk(canonical(old, rewrites), canonical(new, rewrites), renames)


def _walk(a: object, b: object, renames: _Renames) -> str | None:
    if type(a) is not type(b):
        return "the code's structure changed, beyond renaming"
    if isinstance(a, list):
        if len(a) != len(b):
            return "the code's structure changed, beyond renaming"
        return next((r for x, y in zip(a, b, strict=True) if (r := _walk(x, y, renames))), None)
    if not isinstance(a, ast.AST):
        return None if a == b else "a value changed, beyond renaming"
    scoped = isinstance(a, _SCOPES)
    if scoped:
        renames.scopes.append(({}, {}))
    try:
        ident = _IDENTIFIER_FIELDS.get(type(a))
        for field in a._fields:
            va, vb = getattr(a, field, None), getattr(b, field, None)
            if field == ident and isinstance(va, str) and isinstance(vb, str):
                reason = renames.same(va) if va == vb else renames.renamed_to(va, vb)
            elif isinstance(a, (ast.Global, ast.Nonlocal)) and field == "names":
                reason = None if va == vb else "a global or nonlocal declaration changed"
            else:
                reason = _walk(va, vb, renames)
            if reason:
                return reason
    finally:
        if scoped:
            renames.scopes.pop()
    return None


def _statements(body: list, depth: int = 0) -> Iterator[tuple[tuple[int, str], int, int]]:
    """Each statement (and except/case clause) as ((depth, dump without its body), first, last line)."""
    for node in body:
        header = copy.copy(node)
        children = []
        for field in _STMT_LISTS:
            if isinstance(getattr(node, field, None), list):
                children.extend(getattr(node, field))
                setattr(header, field, [])
        starts = [getattr(c, "lineno", None) or getattr(c.pattern, "lineno", node.lineno) for c in children]
        last = min(starts) - 1 if starts else (node.end_lineno or node.lineno)
        first = getattr(node, "lineno", None) or node.pattern.lineno
        yield (depth, ast.dump(header)), first, max(first, last)
        yield from _statements(children, depth + 1)


def confined(old: ast.Module, new: ast.Module, lines: set[int],
             rewrites: frozenset[str] = frozenset()) -> str | None:
    """None if every statement that differs is one flake8 flagged (lines in the old numbering)."""
    before = list(_statements(canonical(old, rewrites).body))
    after = list(_statements(canonical(new, rewrites).body))

    def flagged(i: int) -> bool:
        return 0 <= i < len(before) and any(before[i][1] <= n <= before[i][2] for n in lines)

    matcher = difflib.SequenceMatcher(None, [s[0] for s in before], [s[0] for s in after], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if not all(flagged(i) for i in range(i1, i2)):
            bad = next(i for i in range(i1, i2) if not flagged(i))
            return f"it changed line {before[bad][1]}, which flake8 did not flag"
        added = [key for key, _, _ in after[j1 + (i2 - i1):j2]]
        # New imports at module level are how a missing name (F821) is usually fixed.
        imports = all(depth == 0 and dump.startswith(("Import(", "ImportFrom(")) for depth, dump in added)
        if added and not imports and not (flagged(i1 - 1) or flagged(i1) or flagged(i2 - 1)):
            return "it added statements away from the flagged lines"
    return None
