"""What a lint fix must not change in a real module, checked on the text before and after.

- public names: every top-level name the module binds (functions, classes, assignments,
  imports, also inside top-level `if`/`try`/`with`/`for` blocks) that does not start with `_`,
  or is listed in `__all__`, must still be bound; an `import *` counts as a name of its own,
  because what it re-exports cannot be known without importing;
- docs: every docstring (and every bare string that documents an attribute, as Sphinx
  reads them) and every `#:` comment block must keep its words, whitespace aside; a `#:`
  block wrapped onto more `#:` lines keeps its words, one turned into `#` lines does not,
  because Sphinx then shows only its first line. Each block is known by what it documents
  (the dotted name that starts the next code line, or the line it ends), so a block moved
  away from its attribute counts as changed.

Both take source text, never import it: importing is fix_modules' separate, optional check.
"""

from __future__ import annotations

import ast
import io
import tokenize
from collections.abc import Iterator

STAR = "*"  # `from x import *` is recorded as "* from x"


def _targets(node: ast.expr) -> Iterator[str]:
    if isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, ast.Starred):
        yield from _targets(node.value)
    elif isinstance(node, (ast.Tuple, ast.List)):
        for element in node.elts:
            yield from _targets(element)


def _bound(body: list[ast.stmt]) -> Iterator[str]:
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.name
        elif isinstance(node, ast.Import):
            yield from (alias.asname or alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            source = "." * node.level + (node.module or "")
            yield from (f"{STAR} from {source}" if alias.name == STAR else alias.asname or alias.name
                        for alias in node.names)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                yield from _targets(target)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
            yield from _targets(node.target)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    yield from _targets(item.optional_vars)
        if isinstance(node, ast.Match):
            for case in node.cases:
                yield from _bound(case.body)
        # A name bound in any branch counts: `try: import json except ImportError: json = None`.
        for field in ("body", "orelse", "finalbody"):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                yield from _bound(getattr(node, field, []) or [])
        for handler in getattr(node, "handlers", []) or []:
            yield from _bound(handler.body)


def bound_names(tree: ast.Module) -> set[str]:
    """Every name bound at the module's top level."""
    return set(_bound(tree.body))


def dunder_all(tree: ast.Module) -> set[str]:
    """The string entries of `__all__` (assigned, extended with `+=` or `.extend`), where literal."""
    names: set[str] = set()
    for node in ast.walk(tree):
        value = None
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                value = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "extend" \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "__all__" and node.args:
            value = node.args[0]
        if isinstance(value, (ast.List, ast.Tuple)):
            names.update(e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str))
    return names


def public_names(tree: ast.Module) -> set[str]:
    """The top-level names a user of the module may rely on: public by spelling, or listed in `__all__`."""
    listed = dunder_all(tree)
    return {name for name in bound_names(tree) if not name.startswith("_") or name in listed}


def names_lost(before: str, after: str) -> list[str]:
    """Public top-level names of `before` that `after` no longer binds; all of them if `after` does not parse."""
    kept = public_names(ast.parse(before))
    try:
        now = bound_names(ast.parse(after))
    except SyntaxError:
        now = set()
    return sorted(kept - now)


def _words(text: str) -> str:
    return " ".join(text.split())


def _docstrings(tree: ast.Module) -> Iterator[tuple[str, str]]:
    """(where, words) for each bare string statement in a module, class or function body."""
    def visit(body: list[ast.stmt], scope: str) -> Iterator[tuple[str, str]]:
        for node in body:
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
                    and isinstance(node.value.value, str):
                yield f"docstring in {scope}", _words(node.value.value)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                yield from visit(node.body, node.name if scope == "module" else f"{scope}.{node.name}")
            else:
                for field in ("body", "orelse", "finalbody"):
                    yield from visit(getattr(node, field, []) or [], scope)
                for handler in getattr(node, "handlers", []) or []:
                    yield from visit(handler.body, scope)

    yield from visit(tree.body, "module")


def _dotted_name(tokens: list[tokenize.TokenInfo], start: int) -> str:
    """`self.headers` from the tokens of `self.headers = ...` beginning at index `start`."""
    parts: list[str] = []
    for tok in tokens[start:]:
        after_dot = not parts or parts[-1] == "."
        if (tok.type == tokenize.NAME and after_dot) or (tok.string == "." and not after_dot):
            parts.append(tok.string)
        elif parts or tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                                       tokenize.COMMENT):
            break
    return "".join(parts) or "end of file"


def _doc_comments(text: str) -> Iterator[tuple[str, str]]:
    """(what it documents, words) for each block of `#:` comments."""
    tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    block: list[str] = []
    last_row = -1
    for i, tok in enumerate(tokens):
        is_doc = tok.type == tokenize.COMMENT and tok.string.startswith("#:")
        standalone = is_doc and not tok.line[:tok.start[1]].strip()
        if block and not (standalone and tok.start[0] == last_row + 1) and tok.type not in (tokenize.NL,):
            yield f"#: for {_dotted_name(tokens, i)}", _words(" ".join(block))
            block = []
        if standalone:
            block.append(tok.string[2:])
            last_row = tok.start[0]
        elif is_doc:  # after code on the same line: it documents that line
            first = next(j for j in range(i, -1, -1) if j == 0 or tokens[j - 1].start[0] != tok.start[0])
            yield f"#: for {_dotted_name(tokens, first)}", _words(tok.string[2:])
    if block:
        yield "#: at end of file", _words(" ".join(block))


def doc_texts(text: str) -> list[tuple[str, str]]:
    """Every docstring and `#:` block in order, as (where, its words)."""
    return [*_docstrings(ast.parse(text)), *_doc_comments(text)]


def docs_changed(before: str, after: str) -> list[str]:
    """Where `after` lost or reworded a docstring or `#:` block of `before` (all of them if it does not parse)."""
    try:
        now = doc_texts(after)
    except (SyntaxError, tokenize.TokenError):
        now = []
    remaining = list(now)
    changed = []
    for item in doc_texts(before):
        if item in remaining:
            remaining.remove(item)
        else:
            changed.append(item[0])
    return changed
