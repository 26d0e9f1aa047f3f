"""E741: rename `l`, `O` and `I` to a free, descriptive name, consistently in their scope.

The scope is the function, lambda or comprehension that binds the name (the
module for a global); nested scopes that bind the same name themselves keep
theirs. Anything we cannot rename with certainty (`global`/`nonlocal`,
class attributes, keyword arguments naming the parameter, a position the AST
reports wrongly) is left for the model, and every rename is verified as a
renaming of the AST anyway.
"""

from __future__ import annotations

import ast
import builtins
import keyword
import re

from codeasst.fixing.edits import Edit, apply_edits, char_col, parents
from codeasst.lint import Diagnostic

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
           ast.GeneratorExp, ast.Module)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


class _CannotRename(Exception):
    """This occurrence needs a judgment the deterministic pass does not make."""


def _args(node: ast.AST) -> list[ast.arg]:
    if not isinstance(node, _FUNCTIONS):
        return []
    a = node.args
    return [*a.posonlyargs, *a.args, *a.kwonlyargs, *([a.vararg] if a.vararg else []),
            *([a.kwarg] if a.kwarg else [])]


def _own_nodes(scope: ast.AST):
    """Nodes evaluated in `scope` itself, not in the scopes nested in it."""
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, _SCOPES):
            # Defaults, decorators and a comprehension's first iterable run in the outer scope.
            if isinstance(node, _FUNCTIONS):
                stack.extend([*node.args.defaults, *[d for d in node.args.kw_defaults if d]])
                stack.extend(getattr(node, "decorator_list", []))
            elif not isinstance(node, ast.Module):
                stack.append(node.generators[0].iter)
            continue
        stack.extend(ast.iter_child_nodes(node))


def _binds(scope: ast.AST, name: str) -> bool:
    if any(a.arg == name for a in _args(scope)):
        return True
    if isinstance(scope, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        return any(isinstance(n, ast.Name) and n.id == name for g in scope.generators for n in ast.walk(g.target))
    for node in _own_nodes(scope):
        if isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            raise _CannotRename(f"{name} is declared {type(node).__name__.lower()}")
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, (ast.Store, ast.Del)):
            return True
        if isinstance(node, ast.ExceptHandler) and node.name == name:
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
        if isinstance(node, ast.alias) and (node.asname or node.name.split(".")[0]) == name:
            return True
    return False


def _occurrences(scope: ast.AST, name: str, lines: list[str]) -> list[tuple[int, int]]:
    """(line, character column) of every use of `name` that refers to the binding in `scope`."""
    found = []
    for arg in _args(scope):
        if arg.arg == name:
            found.append((arg.lineno, char_col(lines[arg.lineno - 1], arg.col_offset)))
    stack = _inner_parts(scope)
    while stack:
        node = stack.pop()
        if isinstance(node, _SCOPES) and not isinstance(node, ast.Module):
            # A nested scope that binds the name has its own; only the parts it evaluates outside are ours.
            stack.extend(_outer_parts(node) if _binds(node, name) else ast.iter_child_nodes(node))
            continue
        if isinstance(node, ast.Name) and node.id == name:
            found.append((node.lineno, char_col(lines[node.lineno - 1], node.col_offset)))
        elif isinstance(node, ast.ExceptHandler) and node.name == name:
            found.append(_name_after_as(node, name, lines))
        elif isinstance(node, (ast.alias, ast.MatchAs, ast.MatchStar, ast.MatchMapping, ast.keyword)) \
                and name in (getattr(node, "asname", None), getattr(node, "name", None),
                             getattr(node, "rest", None), getattr(node, "arg", None)):
            raise _CannotRename(f"{name} is bound by an import, a match pattern or a keyword argument")
        elif isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            raise _CannotRename(f"{name} is declared {type(node).__name__.lower()}")
        stack.extend(ast.iter_child_nodes(node))
    return found


def _inner_parts(scope: ast.AST) -> list[ast.AST]:
    if isinstance(scope, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)):
        return list(scope.body)
    if isinstance(scope, ast.Lambda):
        return [scope.body]
    parts = [scope.key, scope.value] if isinstance(scope, ast.DictComp) else [scope.elt]
    for i, gen in enumerate(scope.generators):
        parts.extend([gen.target, *gen.ifs, *([gen.iter] if i else [])])
    return parts


def _outer_parts(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, _FUNCTIONS):
        return [*node.args.defaults, *[d for d in node.args.kw_defaults if d], *getattr(node, "decorator_list", [])]
    return [node.generators[0].iter]


def _name_after_as(handler: ast.ExceptHandler, name: str, lines: list[str]) -> tuple[int, int]:
    row = lines[handler.lineno - 1]
    match = re.search(rf"\bas\s+({re.escape(name)})\b", row)
    if not match:
        raise _CannotRename("the except clause spans lines")
    return handler.lineno, match.start(1)


def _scope_of(binding: ast.AST, name: str, parent_map: dict) -> ast.AST:
    node = parent_map.get(binding)
    while node is not None:
        if isinstance(node, ast.ClassDef):
            raise _CannotRename(f"{name} is a class attribute; renaming it changes the class")
        if isinstance(node, _SCOPES) and _binds(node, name):
            return node
        node = parent_map.get(node)
    raise _CannotRename(f"no scope binds {name}")


def _binding_at(tree: ast.Module, line: int, col: int, lines: list[str]) -> tuple[ast.AST, str] | None:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Name, ast.arg)) and getattr(node, "lineno", None) == line:
            name = node.id if isinstance(node, ast.Name) else node.arg
            if char_col(lines[line - 1], node.col_offset) == col:
                return node, name
        if isinstance(node, ast.ExceptHandler) and node.lineno == line and node.name:
            match = re.search(rf"\bas\s+({re.escape(node.name)})\b", lines[line - 1])
            if match and match.start(1) == col:
                return node.body[0], node.name  # the handler's scope is that of its body
    return None


def _suggest(scope: ast.AST, name: str, taken: set[str], ours) -> str:
    """A plain name from how the variable is used: an index, a sequence, or a value.
    `ours(node)` says whether a Name node is this binding's (not a nested scope's own)."""
    base = "value"
    for node in ast.walk(scope):
        if isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Name) \
                and node.target.id == name and ours(node.target):
            it = node.iter
            base = "idx" if isinstance(it, ast.Call) and getattr(it.func, "id", "") == "range" else "item"
            break
        used = node.value if isinstance(node, ast.Subscript) else node.iter if isinstance(
            node, (ast.For, ast.comprehension)) else node.args[0] if isinstance(node, ast.Call) and getattr(
            node.func, "id", "") == "len" and node.args else None
        if isinstance(used, ast.Name) and used.id == name and ours(used):
            base = "items"
            break
    candidate, n = base, 2
    while candidate in taken or keyword.iskeyword(candidate) or hasattr(builtins, candidate):
        candidate, n = f"{base}{n}", n + 1
    return candidate


def fix_ambiguous_names(text: str, tree: ast.Module, diagnostics: list[Diagnostic]) -> tuple[str, list[str]] | None:
    """Apply every E741 rename we can make with certainty; returns the text and notes."""
    lines = text.splitlines(keepends=True)
    parent_map = parents(tree)
    taken = {t for t in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text)}
    edits: dict[tuple[int, int], Edit] = {}
    notes = []
    for diag in diagnostics:
        if diag.code != "E741":
            continue
        found = _binding_at(tree, diag.line, diag.col - 1, lines)
        if found is None:
            continue
        binding, name = found
        try:
            scope = _scope_of(binding, name, parent_map)
            spots = _occurrences(scope, name, lines)
        except _CannotRename:
            continue
        if any(lines[r - 1][c : c + len(name)] != name for r, c in spots) or any(s in edits for s in spots):
            continue
        spot_set = set(spots)

        def ours(node: ast.AST, spot_set=spot_set) -> bool:
            return (node.lineno, char_col(lines[node.lineno - 1], node.col_offset)) in spot_set

        new = _suggest(scope, name, taken, ours)
        taken.add(new)
        edits.update({(r, c): Edit(r, c, r, c + len(name), new) for r, c in spots})
        where = getattr(scope, "name", type(scope).__name__.lower())
        notes.append(f"renamed {name} to {new} in {where}"
                     + (" (a parameter: callers passing it by keyword must follow)"
                        if any(a.arg == name for a in _args(scope)) and not isinstance(scope, ast.Lambda) else ""))
    if not edits:
        return None
    return apply_edits(text, list(edits.values())), notes
