"""Attributes and constants: where a class's attributes and a module's constants are set, and what the
comment above or the string after says they are for. Read from tree-sitter nodes, for the code graph
(codeasst.index.graph, which also records where they are read) and for the chunker, whose collapsed
class chunk carries its attributes' names and docs as words for the lexical index.

An attribute is set in a class's body (`timeout = 30`, `lines: int = 12`: class attributes, dataclass
fields, TypeScript fields, Go struct fields) or in one of its methods (`self.timeout = 30`,
`this.timeout = 30`); it is recorded once, where its class's body sets it, else in the constructor,
else at its first assignment. A constant is a module-level name in UPPER_CASE (a Go `const`): lower-case
module names are mostly aliases, loop-built tables and test symbols (`x, y = symbols('x y')`), and a
read of one cannot be told from a local of the same name without scopes the graph does not keep.

Its doc: the `#:` comment lines right above it (Sphinx's mark for an attribute's doc), else a string
right after it, else the plain comment lines right above it: most code marks no doc (sympy has no `#:`
at all), and a comment right above an attribute says what it is about half the time (sympy: 284 such,
"default limit for the number of cosets allowed"), so search finds more by them than it loses; a
tool's pragma, a TODO or NOTE, a banner (`# --- setup ---`) is left out. A comment at the end of the
code's own line is not a doc: it usually says something about that value, not what it is for.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

VALUE_KINDS = ("attribute", "constant")
GRAMMARS = frozenset({"python", "typescript", "tsx", "javascript", "go"})
SIGNATURE_CHARS = 120

# `self.x`, `this.x`: a literal start, no leading \b or alternation, scans several times faster (a tenth of
# the graph's time on sympy); receivers() checks what comes before.
_SELF = (re.compile(rb"self\.([A-Za-z_]\w*)"), re.compile(rb"cls\.([A-Za-z_]\w*)"))
_THIS = (re.compile(rb"this\.([A-Za-z_$][\w$]*)"),)
RECEIVER = {"python": _SELF, "typescript": _THIS, "tsx": _THIS, "javascript": _THIS}
_NAME_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$")
_BEFORE_NAME = _NAME_BYTES | {ord(".")}  # what cannot come right before a name of its own (`x.name`)
_CONSTRUCTORS = ("__init__", "__post_init__", "constructor")
# A plain comment that is no doc: a tool's pragma, a note to the next maintainer, a section's banner.
_NOT_DOC = re.compile(r"^(?:(?:type|pylint|fmt|mypy|isort|ruff|flake8|pyright):|(?:noqa|pragma|nosec)\b|"
                      r"(?:TODO|FIXME|XXX|HACK|NOTE|Note)\b|[-=*#~+_/])")
_PY_BLOCKS = {"if_statement", "elif_clause", "else_clause", "try_statement", "except_clause", "finally_clause",
              "with_statement", "block"}
_PY_TARGETS = {"pattern_list", "tuple_pattern", "list_pattern"}
_TS_FIELDS = {"public_field_definition": "name", "field_definition": "property", "property_signature": "name"}
_TS_CLASSES = {"class_declaration", "abstract_class_declaration", "class", "interface_declaration"}


@dataclass(frozen=True)
class Site:
    """Where a value is set: its name, the statement (or declaration) that sets it, and how plainly that
    defines it (0: a class body or a module; 1: a constructor; 2: another method)."""

    name: str
    node: Any
    rank: int = 0

    @property
    def line(self) -> int:
        return self.node.start_point[0] + 1

    @property
    def end_line(self) -> int:
        return self.node.end_point[0] + 1


def receivers(grammar: str, src: bytes, start: int = 0, end: int | None = None) -> list[re.Match]:
    """Each `self.x` (`this.x`) spelled in src[start:end], in source order (in code, a string or a
    comment alike: receiver_attribute tells)."""
    end = len(src) if end is None else end
    patterns = RECEIVER.get(grammar, ())
    found = [m for pattern in patterns for m in pattern.finditer(src, start, end)
             if m.start() == 0 or src[m.start() - 1] not in _BEFORE_NAME]
    return sorted(found, key=lambda m: m.start()) if len(patterns) > 1 else found


def occurrences(src: bytes, name: bytes) -> Iterator[int]:
    """Where `name` is spelled as a whole word (not `x.name`): a plain find, much faster than a regex."""
    at = src.find(name)
    while at >= 0:
        end = at + len(name)
        if (at == 0 or src[at - 1] not in _BEFORE_NAME) and (end == len(src) or src[end] not in _NAME_BYTES):
            yield at
        at = src.find(name, end)


def is_constant(name: str) -> bool:
    """MAX_RETRIES, _CACHE_SIZE; not T (a type variable), not __all__."""
    core = name.strip("_")
    return len(core) > 1 and name.isupper() and not (name.startswith("__") and name.endswith("__"))


def _text(src: bytes, node: Any) -> str:
    return src[node.start_byte:node.end_byte].decode("utf-8", "replace")


# --- where values are set ---

def class_attributes(grammar: str, src: bytes, class_node: Any, writes: list[Site] | None = None
                     ) -> list[tuple[Site, list[Site]]]:
    """The attributes `class_node` defines, in source order: each as the site that defines it and the
    other sites that set it too (where a doc may be). Names its body defines as methods are not attributes.
    `writes`: its methods' `self.x = ...` sites where the caller found them already (receiver_writes)."""
    if grammar == "python":
        body = class_node.child_by_field_name("body")
        members, sites = _py_body(src, body) if body is not None else (set(), [])
    elif grammar in RECEIVER:
        body = class_node.child_by_field_name("body")
        members, sites = _ts_body(src, body) if body is not None else (set(), [])
    elif grammar == "go":
        return [(s, []) for s in _go_fields(src, class_node)]
    else:
        return []
    sites += receiver_writes(grammar, src, class_node) if writes is None else writes
    by_name: dict[str, list[Site]] = {}
    for site in sites:
        if site.name not in members:
            by_name.setdefault(site.name, []).append(site)
    chosen = []
    for found in by_name.values():
        found.sort(key=lambda s: (s.rank, s.node.start_byte))
        chosen.append((found[0], found[1:]))
    return sorted(chosen, key=lambda c: c[0].node.start_byte)


def _py_body(src: bytes, body: Any) -> tuple[set[str], list[Site]]:
    members: set[str] = set()
    sites: list[Site] = []
    for child in body.named_children:
        node = child.child_by_field_name("definition") if child.type == "decorated_definition" else child
        if node is not None and node.type in ("function_definition", "class_definition"):
            name = node.child_by_field_name("name")
            if name is not None:
                members.add(_text(src, name))
            continue
        assignment = _py_assignment(child)
        if assignment is not None:
            sites += [Site(name, child) for name in _py_names(src, assignment.child_by_field_name("left"))
                      if not (name.startswith("__") and name.endswith("__"))]
    return members, sites


def _py_assignment(statement: Any) -> Any | None:
    if statement.type == "expression_statement" and statement.named_child_count == 1:
        statement = statement.named_children[0]
    return statement if statement.type == "assignment" else None


def _py_names(src: bytes, left: Any) -> list[str]:
    if left is None:
        return []
    if left.type == "identifier":
        return [_text(src, left)]
    if left.type in _PY_TARGETS:
        return [_text(src, c) for c in left.named_children if c.type == "identifier"]
    return []


def _ts_body(src: bytes, body: Any) -> tuple[set[str], list[Site]]:
    members: set[str] = set()
    sites: list[Site] = []
    for child in body.named_children:
        if child.type in ("method_definition", "method_signature", "abstract_method_signature"):
            name = child.child_by_field_name("name")
            if name is not None:
                members.add(_text(src, name))
        elif child.type in _TS_FIELDS:
            name = child.child_by_field_name(_TS_FIELDS[child.type])
            if name is not None:  # `handle = () => ...` too: the graph has no function of it
                sites.append(Site(_text(src, name), child))
    return members, sites


def _go_fields(src: bytes, type_spec: Any) -> list[Site]:
    struct = type_spec.child_by_field_name("type")
    if struct is None or struct.type != "struct_type":
        return []
    fields = next((c for c in struct.named_children if c.type == "field_declaration_list"), None)
    if fields is None:
        return []
    return [Site(_text(src, name), child) for child in fields.named_children if child.type == "field_declaration"
            for name in child.children_by_field_name("name")]


def receiver_writes(grammar: str, src: bytes, class_node: Any) -> list[Site]:
    """`self.x = ...` (`this.x = ...`) in the class's own methods (not a nested class's)."""
    sites = []
    start, end = class_node.start_byte, class_node.end_byte
    for m in receivers(grammar, src, start, end):
        expr = receiver_attribute(grammar, class_node, m)
        if expr is None:
            continue
        statement = written_by(grammar, expr)
        if statement is None:
            continue
        method = _method_in(grammar, src, expr, class_node)
        if method is not None:
            sites.append(Site(m.group(1).decode("utf-8", "replace"), statement, method_rank(method)))
    return sites


def method_rank(method: str) -> int:
    """How plainly an assignment in this method defines an attribute: the constructor's most."""
    return 1 if method in _CONSTRUCTORS else 2


def receiver_attribute(grammar: str, root: Any, m: re.Match) -> Any | None:
    """The `self.x` (`this.x`) expression node a RECEIVER match is, or None (in a string, a comment)."""
    receiver = root.descendant_for_byte_range(m.start(), m.start(1) - 1)
    expr = receiver.parent if receiver is not None else None  # a string's or comment's: no attribute
    if expr is None or expr.type not in ("attribute", "member_expression"):
        return None
    obj = expr.child_by_field_name("object")
    return expr if obj is not None and obj.start_byte == receiver.start_byte else None


def written_by(grammar: str, expr: Any) -> Any | None:
    """The statement that assigns to `expr` (`self.x = 1`, `self.a, self.b = ...`), or None when it does not."""
    parent = expr.parent
    if grammar == "python" and parent is not None and parent.type in _PY_TARGETS:
        parent = parent.parent
    if parent is None or parent.type not in ("assignment", "assignment_expression"):
        return None
    left = parent.child_by_field_name("left")
    if left is None or not (left.start_byte <= expr.start_byte and expr.end_byte <= left.end_byte):
        return None
    while parent.parent is not None and parent.parent.type in ("assignment", "expression_statement",
                                                                "assignment_expression"):
        parent = parent.parent  # `self.a = self.b = 0`: the whole statement
    return parent


def _method_in(grammar: str, src: bytes, node: Any, class_node: Any) -> str | None:
    """The name of the method of `class_node` that holds `node`; None where no method does (the class
    body itself, or a nested class)."""
    function_types = ("function_definition",) if grammar == "python" else ("method_definition",)
    method = None
    parent = node.parent
    while parent is not None and parent.start_byte >= class_node.start_byte:
        if parent.start_byte == class_node.start_byte and parent.type == class_node.type:
            break
        if parent.type in function_types:
            method = parent
        elif parent.type in ("class_definition", *_TS_CLASSES):
            return None
        parent = parent.parent
    if method is None:
        return None
    name = method.child_by_field_name("name")
    return _text(src, name) if name is not None else ""


def module_constants(grammar: str, src: bytes, root: Any) -> list[Site]:
    """The module's constants, each at its first assignment, in source order."""
    sites: list[Site] = []
    if grammar == "python":
        stack = list(reversed(root.named_children))
        while stack:
            node = stack.pop()
            if node.type in _PY_BLOCKS:
                stack += reversed(node.named_children)
                continue
            assignment = _py_assignment(node)
            if assignment is not None:
                sites += [Site(n, node) for n in _py_names(src, assignment.child_by_field_name("left"))
                          if is_constant(n)]
    elif grammar == "go":
        for decl in root.named_children:
            if decl.type == "const_declaration":
                sites += [Site(_text(src, name), spec) for spec in decl.named_children if spec.type == "const_spec"
                          for name in spec.children_by_field_name("name")]
    else:
        for node in root.named_children:
            statement = node
            if node.type == "export_statement":
                node = node.child_by_field_name("declaration") or node
            if node.type not in ("lexical_declaration", "variable_declaration"):
                continue
            for declarator in node.named_children:
                name = declarator.child_by_field_name("name")
                if (declarator.type == "variable_declarator" and name is not None and name.type == "identifier"
                        and is_constant(_text(src, name))):  # a function's name is the graph's already
                    sites.append(Site(_text(src, name), statement))
    seen: set[str] = set()
    return [s for s in sites if s.name not in seen and not seen.add(s.name)]


# --- where they are read ---

def is_read(expr: Any) -> bool:
    """Whether the code reads `expr` where it stands: not a write (`x = `, `x += `, a loop's or an
    import's name), a call (a call edge says that), a parameter's or keyword's name, or the
    attribute part of `a.x` (for a bare name)."""
    parent = expr.parent
    if parent is None:
        return False
    if parent.type in _TARGET_LISTS:
        return False
    for field_name in _NOT_READ_FIELDS.get(parent.type, ()):
        child = parent.child_by_field_name(field_name)
        if child is not None and child.start_byte == expr.start_byte and child.end_byte == expr.end_byte:
            return False
    if parent.type == "expression_list" and parent.parent is not None \
            and parent.parent.type in ("assignment_statement", "short_var_declaration"):
        left = parent.parent.child_by_field_name("left")
        return left is None or left.start_byte != parent.start_byte
    return parent.type not in _NOT_READ_PARENTS


# Where a name or attribute stands but is not read: (parent type) -> the fields it would be in.
_NOT_READ_FIELDS = {
    "assignment": ("left",), "augmented_assignment": ("left",), "for_statement": ("left",),
    "for_in_clause": ("left",), "call": ("function",), "keyword_argument": ("name",),
    "default_parameter": ("name",), "typed_default_parameter": ("name",), "attribute": ("attribute",),
    "assignment_expression": ("left",), "augmented_assignment_expression": ("left",),
    "call_expression": ("function",), "member_expression": ("property",), "variable_declarator": ("name",),
    "required_parameter": ("pattern",), "optional_parameter": ("pattern",), "for_in_statement": ("left",),
    "selector_expression": ("field",), "const_spec": ("name",), "var_spec": ("name",),
    "update_expression": ("argument",),
}
_NOT_READ_PARENTS = frozenset({
    "dotted_name", "aliased_import", "import_from_statement", "import_statement", "global_statement",
    "nonlocal_statement", "parameters", "lambda_parameters", "typed_parameter", "delete_statement",
    "function_definition", "class_definition", "as_pattern_target", "import_specifier", "namespace_import",
    "import_clause", "export_specifier", "formal_parameters", "inc_statement", "dec_statement",
})
_TARGET_LISTS = frozenset({"pattern_list", "tuple_pattern", "list_pattern"})


# --- what the code says about them ---

def doc(grammar: str, src: bytes, site: Site) -> str:
    """The site's doc comment or string, its lines joined; empty when none."""
    node = site.node
    above = _comments_above(grammar, src, node.start_byte)
    if above:
        return above
    if grammar == "python":
        after = node.next_named_sibling
        if after is not None and after.type == "expression_statement" and after.named_child_count == 1:
            after = after.named_children[0]
        if after is not None and after.type == "string" and after.start_point[0] == node.end_point[0] + 1:
            raw = _text(src, after)
            return " ".join(raw.lstrip("rRbBuUfF").strip("\"'").split())
        return _comments_above(grammar, src, node.start_byte, plain=True)
    return ""


def _comments_above(grammar: str, src: bytes, start: int, plain: bool = False) -> str:
    """The comment lines right above the line that `start` is on: for Python the `#:` ones (or, `plain`,
    the other `#` ones); for the other languages every `//` and `/* */` line."""
    found: list[str] = []
    end = src.rfind(b"\n", 0, start)  # the newline ending the line above
    if src[end + 1:start].strip():
        return ""  # the statement does not start its line (`x = 1; y = 2`)
    while end > 0:
        begin = src.rfind(b"\n", 0, end) + 1
        line = src[begin:end].decode("utf-8", "replace").strip()
        if grammar == "python":
            if not line.startswith("#") or line.startswith("#:") == plain:
                break
            text = line[2:] if line.startswith("#:") else line.lstrip("#").strip()
            if plain and (_NOT_DOC.match(text) or not re.search(r"[A-Za-z]", text)):
                break
        elif line.startswith(("//", "/*", "*")) or line.endswith("*/"):
            text = line.strip("/*! \t")
        else:
            break
        found.append(text.strip())
        end = begin - 1
    return " ".join(t for t in reversed(found) if t)


def signature(grammar: str, src: bytes, site: Site) -> str:
    """The line that sets it, stripped (a comment at its end left out), cut to SIGNATURE_CHARS."""
    start = src.rfind(b"\n", 0, site.node.start_byte) + 1
    end = src.find(b"\n", site.node.start_byte)
    line = src[start:end if end >= 0 else len(src)].decode("utf-8", "replace")
    if grammar == "python":
        line = re.sub(r"\s#[^'\"]*$", "", line)
    line = line.strip()
    return line if len(line) <= SIGNATURE_CHARS else line[:SIGNATURE_CHARS - 1].rstrip() + "…"


def class_words(grammar: str, src: bytes, class_node: Any, shown_until: int) -> str:
    """`name: doc` for each attribute of a class that its collapsed chunk does not show (set in a method,
    or in its body past row `shown_until`), one a line: words for the lexical index."""
    lines = []
    for site, others in class_attributes(grammar, src, class_node):
        if site.rank == 0 and site.node.start_point[0] <= shown_until:
            continue
        text = next((d for s in (site, *others) if (d := doc(grammar, src, s))), "")
        lines.append(f"{site.name}: {text}" if text else site.name)
    return "\n".join(lines)
