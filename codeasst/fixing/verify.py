"""The gate every fix passes, deterministic or not, before it replaces the current text.

A candidate is accepted when it parses; its AST differs from the current one
only as the targeted codes allow (codes.py); it keeps the module's public names
(an unused import in a library is often its API) and its comments and
docstrings, word for word; and flake8 reports fewer problems in all, with no
code reported more often than before (so nothing new).
"""

from __future__ import annotations

import ast
import difflib
import functools
import io
import re
import tokenize
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from codeasst.fixing.codes import AMBIGUOUS_NAMES, CodeClass, classify
from codeasst.fixing.equivalence import confined, rewrites_for, same_ast, same_up_to_renames
from codeasst.lint import Diagnostic, Linter

# Scopes of their own: what they bind is not a name of the module.
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp, ast.SetComp,
           ast.DictComp, ast.GeneratorExp)
# flake8's own pattern (flake8.defaults.NOQA_INLINE_REGEXP): what it reads as a noqa comment.
NOQA = re.compile(r"# noqa(?::[\s]?(?P<codes>([A-Z]+[0-9]+(?:[,\s]+)?)+))?", re.IGNORECASE)
# Comments that tools read: their exact form and place are their meaning.
PRAGMA = re.compile(r"#+\s*(type:|pragma\b|pylint:|fmt:|mypy:|isort:|pyright:|ruff:|nosec\b|yapf:|"
                    r"flake8[:=]|-\*-|vim:|coding[:=])|#!", re.IGNORECASE)
_UNUSED = re.compile(r"'(.+?)' imported but unused")


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


# --- the module's public names -------------------------------------------------------------------

def module_scope(tree: ast.Module) -> Iterator[ast.AST]:
    """Every node evaluated in the module's own scope (inside if/try/with/for too), and the
    definitions themselves, but nothing inside a function, class, lambda or comprehension."""
    stack: list[ast.AST] = list(reversed(tree.body))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _NESTED):
            stack.extend(reversed(list(ast.iter_child_nodes(node))))


def binding(alias: ast.alias) -> str:
    """The name an import binds: `import a.b` binds `a`, `from m import b as c` binds `c`."""
    return alias.asname or alias.name.split(".")[0]


def import_names(node: ast.Import | ast.ImportFrom) -> list[str]:
    """How pyflakes names each alias in its messages."""
    if isinstance(node, ast.Import):
        return [a.name + (f" as {a.asname}" if a.asname else "") for a in node.names]
    module = "." * node.level + (node.module or "")
    sep = "" if module.endswith(".") else "."
    return [f"{module}{sep}{a.name}" + (f" as {a.asname}" if a.asname else "") for a in node.names]


def top_level_names(tree: ast.Module) -> set[str]:
    """Every name the module binds at top level; a star import counts as `from M import *`."""
    names: set[str] = set()
    for node in module_scope(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                star = alias.name == "*" and isinstance(node, ast.ImportFrom)
                names.add(f"from {'.' * node.level}{node.module or ''} import *" if star else binding(alias))
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
    return names


def exported_names(tree: ast.Module) -> set[str]:
    """The strings of a literal `__all__`."""
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and node.value is not None:
                return {c.value for c in ast.walk(node.value) if isinstance(c, ast.Constant)
                        and isinstance(c.value, str)}
    return set()


def is_public(name: str) -> bool:
    # Dunders count: `__version__` and `__author__` are read from outside.
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))


def public_names(tree: ast.Module) -> set[str]:
    exported = exported_names(tree)
    return {n for n in top_level_names(tree) if is_public(n) or n in exported}


@functools.lru_cache(maxsize=8)  # asked once per unused import
def has_star_import(tree: ast.Module) -> bool:
    return any(isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names) for n in module_scope(tree))


def flagged_imports(tree: ast.Module, diagnostics: list[Diagnostic]
                    ) -> Iterator[tuple[ast.Import | ast.ImportFrom, list[ast.alias]]]:
    """Each import statement with the aliases flake8 reported as unused (F401) in it."""
    unused = {(d.line, m.group(1)) for d in diagnostics if d.code == "F401" and (m := _UNUSED.match(d.message))}
    if not unused:
        return
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            span = range(node.lineno, (node.end_lineno or node.lineno) + 1)
            aliases = [a for a, name in zip(node.names, import_names(node), strict=True)
                       if any((row, name) in unused for row in span)]
            if aliases:
                yield node, aliases


@dataclass(frozen=True)
class Namespace:
    """What `fix` keeps of a module's top-level names. In a library an unused import is often its
    API (`from .models import Request` in a package's __init__, a name "reexposed here for
    backward compatibility"), so such an import is a re-export and stays, unless the user asked
    for unused imports to go."""

    package_init: bool = False  # an __init__.py: every import there is what the package offers
    in_package: bool = True  # a module of a package: its public names may be imported from elsewhere
    remove_unused_imports: bool = False  # the user's choice (--remove-unused-imports)

    @classmethod
    def of(cls, path: Path | None, tree: ast.Module, remove_unused_imports: bool = False) -> Namespace:
        """For the module at `path` (None: unknown). A relative import means a package even where
        the file's place does not tell (stdin, a namespace package)."""
        init = path is not None and path.name == "__init__.py"
        beside = path is not None and (path.parent / "__init__.py").is_file()
        relative = any(isinstance(n, ast.ImportFrom) and n.level for n in ast.walk(tree))
        return cls(init, init or beside or relative, remove_unused_imports)

    def is_reexport(self, name: str, tree: ast.Module) -> bool:
        """Whether an unused import of `name` at the module's top level is taken as a re-export."""
        if self.remove_unused_imports:
            return False
        if self.package_init or has_star_import(tree):
            return True
        return self.in_package and (is_public(name) or name in exported_names(tree))


# The default: a module of a package, whose every public name may be imported from elsewhere.
LIBRARY = Namespace()


def namespace_reason(old: ast.Module, new: ast.Module, targeted: list[Diagnostic],
                     namespace: Namespace) -> str | None:
    """None unless the fix unbinds a public top-level name; only an import flake8 reported unused
    (F401) may go, and only one that is not a re-export or when the user allowed it."""
    lost = public_names(old) - public_names(new)
    if not lost:
        return None
    top = {id(n) for n in module_scope(old)}
    unused = {binding(a) for node, aliases in flagged_imports(old, targeted) if id(node) in top for a in aliases}
    may_go = {n for n in unused if not namespace.is_reexport(n, old)}
    kept = sorted(lost - may_go)
    if not kept:
        return None
    if kept[0] in unused:
        return (f"it removed the import of {kept[0]!r}, which may be the module's API (a re-export); "
                "mark it `# noqa: F401` instead (`--remove-unused-imports` lets unused imports go)")
    return f"it removed or renamed the public name {kept[0]!r}, which other modules may import"


# --- comments and docstrings ---------------------------------------------------------------------

@dataclass(frozen=True)
class _Piece:
    key: tuple  # what must survive: a word with its comment's prefix kind, a pragma, a noqa's codes
    line: int
    droppable: bool  # on a line the fix may delete (a flagged statement going away)


def comment_kind(comment: str) -> tuple[str, str]:
    """(prefix kind, text): `#: doc` is ("#:", " doc"), Sphinx's attribute documentation;
    `## x` is ("#", " x"), as pycodestyle wants it anyway."""
    match = re.match(r"#+(:?)", comment)
    prefix = match.group(0) if match else ""
    return ("#:" if match and match.group(1) else "#"), comment[len(prefix):]


@functools.lru_cache(maxsize=8)  # the current text is compared with every candidate of a round
def _comments(text: str) -> tuple[tuple[int, str, bool], ...]:
    """Each comment's line, text, and whether code precedes it on its line."""
    lines = text.splitlines()
    try:
        return tuple((t.start[0], t.string, bool(lines[t.start[0] - 1][:t.start[1]].strip()))
                     for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type == tokenize.COMMENT)
    except (tokenize.TokenError, SyntaxError):
        return ()


def _pieces(text: str, droppable: set[int], free_noqa: frozenset[str]) -> list[_Piece]:
    pieces: list[_Piece] = []
    for row, comment, trailing in _comments(text):
        drop = row in droppable
        noqa = NOQA.search(comment)
        head = (comment[:noqa.start()] if noqa else comment).rstrip()
        if head and PRAGMA.match(head) and (not head.startswith("#!") or row == 1):
            pieces.append(_Piece(("pragma", " ".join(head.lstrip("#").split()), trailing), row, drop))
        elif head:
            kind, body = comment_kind(head)
            pieces.extend(_Piece((kind, word), row, drop) for word in body.split())
        if noqa:
            codes = set(re.split(r"[,\s]+", noqa["codes"].upper().strip(", \t"))) if noqa["codes"] else {"*"}
            if codes - free_noqa:
                pieces.append(_Piece(("noqa", tuple(sorted(codes - free_noqa)), trailing), row, drop))
    return pieces


def _statements(body: list) -> Iterator[ast.AST]:
    """Every statement, nested ones too (and except and case clauses), but no expression: a walk
    that finds definitions and statements in a fraction of ast.walk's time."""
    for node in body:
        yield node
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            yield from _statements(getattr(node, name, None) or [])


@functools.lru_cache(maxsize=8)  # the current tree is compared with every candidate of a round
def docstrings(tree: ast.Module) -> tuple[tuple[int, str], ...]:
    """Each docstring's line and text, whitespace normalised (the layout inside the quotes is free)."""
    found = []
    for node in [tree, *_statements(tree.body)]:
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                found.append((first.lineno, " ".join(first.value.value.split())))
    return tuple(found)


def _deletable_lines(tree: ast.Module, targeted: list[Diagnostic]) -> set[int]:
    """The lines of the simple statements a semantic fix may delete (an unused import, an unused
    variable): their comments may go with them."""
    rows = {d.line for d in targeted if classify(d.code) is CodeClass.SEMANTIC}
    lines: set[int] = set()
    for node in _statements(tree.body) if rows else ():
        if isinstance(node, ast.stmt) and not hasattr(node, "body"):
            span = range(node.lineno, (node.end_lineno or node.lineno) + 1)
            if rows & set(span):
                lines.update(span)
    return lines


def _comment_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if "#" in line]


def text_reason(old: State, new_text: str, new_tree: ast.Module, targeted: list[Diagnostic]) -> str | None:
    """None if every comment keeps its words in order and its prefix (`#`, `#:`), pragmas and noqa
    comments their exact form and place, and every docstring its text; re-wrapping is free.
    Comments on a statement a semantic fix deletes may go with it; a `# noqa: F401` may be added
    to mark a re-export."""
    old_docs, new_docs = docstrings(old.tree), docstrings(new_tree)
    for (line, before), (_, after) in zip(old_docs, new_docs, strict=False):
        if before != after:
            return f"it changed the docstring on line {line}; a docstring's text must stay as it is"
    if len(old_docs) != len(new_docs):
        return "it added or removed a docstring"
    if _comment_lines(old.text) == _comment_lines(new_text):
        return None  # no line that could hold a comment changed (tokenizing a long file costs more)
    free = frozenset({"F401"}) if any(d.code == "F401" for d in targeted) else frozenset()
    before = _pieces(old.text, _deletable_lines(old.tree, targeted), free)
    after = _pieces(new_text, set(), free)
    # Only the stretch between the common head and tail needs matching: a round changes a few lines.
    head = next((i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a.key != b.key),
                min(len(before), len(after)))
    tail = next((i for i, (a, b) in enumerate(zip(reversed(before[head:]), reversed(after[head:]), strict=False))
                 if a.key != b.key), min(len(before), len(after)) - head)
    before, after = before[head:len(before) - tail], after[head:len(after) - tail]
    matcher = difflib.SequenceMatcher(None, [p.key for p in before], [p.key for p in after], autojunk=False)
    for tag, i1, i2, j1, _ in matcher.get_opcodes():
        if tag == "equal" or (tag == "delete" and all(before[i].droppable for i in range(i1, i2))):
            continue
        if tag == "insert":
            piece = after[j1]
            what = "a noqa comment" if piece.key[0] == "noqa" else "comment text"
            return f"it added {what} (line {piece.line}); comments must keep their words and form"
        return (f"it changed or removed the comment on line {before[i1].line}; comments (and their `#:`, "
                "`# type:`, `# noqa` and pragma forms) must keep their words, re-wrapped at most")
    return None


# --- the gate ------------------------------------------------------------------------------------

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
           encoding: str = "utf-8", namespace: Namespace = LIBRARY, must_fix: bool = True) -> Verdict:
    """`namespace` says which imports may go; by default none that could be a re-export. A layout
    pass (`must_fix=False`: the project's formatter) need not remove a diagnostic, only add none."""
    if candidate == current.text:
        return Verdict(False, "it changed nothing")
    try:
        tree = ast.parse(candidate)
    except SyntaxError as exc:
        return Verdict(False, f"it does not parse: {exc.msg} (line {exc.lineno})")
    if reason := structure_reason(current.tree, tree, targeted) \
            or namespace_reason(current.tree, tree, targeted, namespace) \
            or text_reason(current, candidate, tree, targeted):
        return Verdict(False, reason)
    diagnostics = linter.check(candidate, encoding)
    before = Counter(d.code for d in current.diagnostics)
    after = Counter(d.code for d in diagnostics)
    added = [d for d in diagnostics if after[d.code] > before[d.code]]
    if added:
        return Verdict(False, f"it introduced {added[0].code} {added[0].message}")
    if must_fix and after.total() >= before.total():
        still = next((d for d in diagnostics if d.code in {t.code for t in targeted}), diagnostics[0])
        return Verdict(False, f"flake8 still reports {still.code} {still.message}")
    fixed = sorted((before - after).elements())
    return Verdict(True, state=State(candidate, tree, diagnostics), fixed=fixed)


def lines_inside_strings(text: str) -> set[int]:
    """Lines a multi-line string spans: whitespace there may be part of its value."""
    inside: set[int] = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            strings = (tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING))
            if tok.type in strings and tok.end[0] > tok.start[0]:
                inside.update(range(tok.start[0], tok.end[0] + 1))
    except (tokenize.TokenError, SyntaxError):
        return inside
    return inside
