"""The code graph of one file: its definitions, and the edges leaving them (calls, inheritance,
imports, what is raised and returned), read with tree-sitter queries.

Each edge names its target as the file wrote it (`name`, the last part) and, where the file's
own imports and definitions say what that is, as a qualified name (`target`, e.g.
`codeasst.index.indexer.Indexer.run`). A call on a receiver the file cannot type
(`manifest.close()`) keeps only its name: the graph says it cannot resolve it instead of
guessing. Qualified names are those the chunker gives chunks (module path, then the enclosing
definitions). Following a re-export or an inherited method across files happens when the graph
is read (codeasst.index.graphdb), so a change to one file never makes another file's edges stale.

Attributes (`self.timeout = 30`, class attributes, dataclass fields, TypeScript fields, Go struct
fields) and module constants are definitions too (codeasst.index.attributes), after the file's
functions and classes; a `read` edge goes from each definition that reads one (`self.timeout` in a
method, a constant by its name in the module or imported by name) to it, once per reading definition.

Forms of `target`: a dotted name; `^C.m` for `super().m` inside class C (a base's m, not C's);
`@DIR/NAME` for Go, whose package is a directory (`@*PATH/NAME`: any directory ending in an
import path).
"""

from __future__ import annotations

import bisect
import builtins
import posixpath
import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from codeasst.index import attributes, chunker

# Bump whenever what is extracted changes: the graph is rebuilt. 6: attributes, constants, reads.
GRAPH_VERSION = "6"


def graph_version() -> str:
    """GRAPH_VERSION and the grammars' version: a grammar update renames node types."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"{GRAPH_VERSION}/{version('tree-sitter-language-pack')}"
    except PackageNotFoundError:
        return GRAPH_VERSION


@dataclass(frozen=True)
class Def:
    qname: str
    name: str
    kind: str  # module, class, function, method; attribute, constant (attributes.VALUE_KINDS)
    line: int
    end_line: int
    doc: str = ""  # the first sentence of its docstring or leading comment
    signature: str = ""
    parent: int = -1  # index of the enclosing definition in FileGraph.defs; -1: the module


@dataclass(frozen=True)
class Edge:
    src: int  # index of the enclosing definition in FileGraph.defs (0 is the module)
    kind: str  # call, inherit, import, raise, return, ref (a definition passed or stored as a value), read
    name: str
    target: str | None
    line: int


@dataclass
class FileGraph:
    path: str
    module: str
    defs: list[Def] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    bindings: dict[str, str] = field(default_factory=dict)  # module-level name -> what it imports


GRAPH_LANGUAGES = {"python", "typescript", "tsx", "javascript", "go"}

_QUERIES = {
    "python": """
        (function_definition name: (identifier) @name) @function
        (class_definition name: (identifier) @name) @class
        (call function: (_) @call)
        (class_definition superclasses: (argument_list [(identifier) (attribute)] @inherit))
        (raise_statement . (_) @raise)
        (return_statement . (_) @return)
        (import_statement) @import
        (import_from_statement) @import
        (argument_list [(identifier) (attribute)] @ref)
        (keyword_argument value: [(identifier) (attribute)] @ref)
        (list [(identifier) (attribute)] @ref)
        (tuple [(identifier) (attribute)] @ref)
        (set [(identifier) (attribute)] @ref)
        (pair value: [(identifier) (attribute)] @ref)
        (assignment right: [(identifier) (attribute)] @ref)
        (decorator [(identifier) (attribute)] @ref)
        (assignment left: (identifier) @var right: (call function: [(identifier) (attribute)] @type))
        (typed_parameter (identifier) @var type: (type [(identifier) (attribute)] @type))
        (typed_default_parameter name: (identifier) @var type: (type [(identifier) (attribute)] @type))
    """,
    "typescript": """
        (function_declaration name: (identifier) @name) @function
        (generator_function_declaration name: (identifier) @name) @function
        (method_definition name: (_) @name) @function
        (variable_declarator name: (identifier) @name value: [(arrow_function) (function_expression)]) @function
        (class_declaration name: (_) @name) @class
        (abstract_class_declaration name: (_) @name) @class
        (interface_declaration name: (_) @name) @class
        (call_expression function: (_) @call)
        (new_expression constructor: (_) @call)
        (extends_clause value: (_) @inherit)
        (implements_clause (_) @inherit)
        (extends_type_clause (_) @inherit)
        (throw_statement (new_expression constructor: (_) @raise))
        (variable_declarator name: (identifier) @var value: (new_expression constructor: (_) @type))
        (required_parameter pattern: (identifier) @var type: (type_annotation (type_identifier) @type))
        (optional_parameter pattern: (identifier) @var type: (type_annotation (type_identifier) @type))
        (return_statement . (_) @return)
        (import_statement) @import
    """,
    "go": """
        (function_declaration name: (identifier) @name) @function
        (method_declaration name: (field_identifier) @name) @function
        (type_spec name: (type_identifier) @name) @class
        (call_expression function: (_) @call)
        (struct_type (field_declaration_list (field_declaration !name type: (_) @inherit)))
        (return_statement (expression_list . (_) @return))
        (import_spec) @import
    """,
}
_QUERIES["tsx"] = _QUERIES["typescript"]
# JavaScript has no types, and names its `extends` class_heritage: a TypeScript node type in a query is an
# error, which left JavaScript with no graph at all before version 6.
_TS_ONLY = ("interface_declaration", "implements_clause", "extends_type_clause", "abstract_class", "extends_clause",
            "required_parameter", "optional_parameter")
_QUERIES["javascript"] = "\n".join(line for line in _QUERIES["typescript"].splitlines()
                                   if not any(t in line for t in _TS_ONLY)) + "\n(class_heritage (_) @inherit)\n"


@cache
def _query(grammar: str) -> Any:
    from tree_sitter import Query
    from tree_sitter_language_pack import get_language

    return Query(get_language(grammar), _QUERIES[grammar])


def graph_language(path: str) -> str | None:
    grammar = chunker.grammar_for(path)
    return grammar if grammar in GRAPH_LANGUAGES else None


def extract(path: str, text: str) -> FileGraph | None:
    """The graph of one file; None for a language the graph does not read."""
    grammar = graph_language(path)
    if grammar is None:
        return None
    from tree_sitter import QueryCursor

    src = text.encode("utf-8", "surrogatepass")
    tree = chunker._parse(grammar, src)
    matches = QueryCursor(_query(grammar)).matches(tree.root_node)
    return _Extractor(path, grammar, src, len(text.splitlines()) or 1).run(matches, tree.root_node)


def _text(src: bytes, node: Any) -> str:
    return src[node.start_byte:node.end_byte].decode("utf-8", "replace")


def first_sentence(text: str, limit: int = 160) -> str:
    words = " ".join(text.split())
    for end in (". ", ".\n"):
        cut = words.find(end)
        if 0 < cut < limit:
            return words[:cut + 1]
    return words if len(words) <= limit else words[:limit - 1].rstrip() + "…"


class _Extractor:
    def __init__(self, path: str, grammar: str, src: bytes, lines: int) -> None:
        self.path, self.grammar, self.src = path, grammar, src
        self.module = chunker.module_name(path)
        self.graph = FileGraph(path, self.module)
        self.graph.defs.append(Def(self.module, self.module.rsplit(".", 1)[-1], "module", 1, lines))
        self.dir = posixpath.dirname(path)
        self.nodes: list[Any] = [None]  # definition nodes, by index in graph.defs
        self.starts: list[int] = []
        self.receivers: dict[int, tuple[str, str]] = {}  # Go method -> (receiver variable, its type)
        self._scopes: dict[tuple[int, str], str] | None = None  # (enclosing def, name) -> qualified name
        self._imported: list[str] = []
        self.var_types: dict[tuple[int, str], str] = {}  # (definition, variable) -> its type's target

    # --- definitions ---

    def run(self, matches: list[tuple[int, dict[str, list[Any]]]], root: Any) -> FileGraph:
        found, rest = [], []
        for _, captures in matches:
            for kind in ("function", "class"):
                if kind in captures:
                    if not self._overload(captures[kind][0]):
                        found.append((captures[kind][0], captures["name"][0], kind))
                    break
            else:
                rest.append(captures)
        found.sort(key=lambda f: (f[0].start_byte, -f[0].end_byte))
        self._defs(found)
        for captures in rest:
            if "import" in captures:
                self._import(captures["import"][0])
            elif "var" in captures:
                self._typed(captures["var"][0], captures["type"][0])
        for captures in rest:
            for kind, nodes in captures.items():
                if kind not in ("import", "var", "type"):
                    self._edge(kind, nodes[0])
        self._values(root)
        return self.graph

    def _overload(self, node: Any) -> bool:
        """A Python `@overload` stub: its implementation follows under the same name, and stands for it."""
        parent = node.parent
        return self.grammar == "python" and parent is not None and parent.type == "decorated_definition" and any(
            _text(self.src, d).lstrip("@").strip().rsplit(".", 1)[-1] == "overload"
            for d in parent.named_children if d.type == "decorator")

    def _defs(self, found: list[tuple[Any, Any, str]]) -> None:
        stack: list[int] = []
        defs = self.graph.defs
        for node, name_node, kind in found:
            while stack and self.nodes[stack[-1]].end_byte <= node.start_byte:
                stack.pop()
            parent = stack[-1] if stack else 0
            name = _text(self.src, name_node)
            parent_def = defs[parent]
            if kind == "function" and (parent_def.kind == "class" or node.type == "method_declaration"):
                kind = "method"
            if node.type == "method_declaration":  # Go: qualified by its receiver's type
                receiver = self._go_receiver(node)
                if receiver:
                    self.receivers[len(defs)] = receiver
                    name = f"{receiver[1]}.{name}"
            qname = f"{parent_def.qname}.{name}"
            defs.append(Def(qname, name.rsplit(".", 1)[-1], kind, node.start_point[0] + 1, node.end_point[0] + 1,
                            self._doc(node), self._signature(node), parent))
            self.nodes.append(node)
            self.starts.append(node.start_byte)
            stack.append(len(defs) - 1)

    def _go_receiver(self, node: Any) -> tuple[str, str] | None:
        receiver = node.child_by_field_name("receiver")
        param = next((c for c in receiver.named_children if c.type == "parameter_declaration"), None) if receiver else None
        if param is None:
            return None
        kind = param.child_by_field_name("type")
        type_name = next((_text(self.src, n) for n in _walk(kind) if n.type == "type_identifier"), None)
        var = param.child_by_field_name("name")
        return (_text(self.src, var) if var is not None else "", type_name) if type_name else None

    def _signature(self, node: Any) -> str:
        body = node.child_by_field_name("body")
        end = body.start_byte if body is not None else node.end_byte
        head = self.src[node.start_byte:end].decode("utf-8", "replace")
        if self.grammar == "python":  # a comment between the colon and the body is no part of it
            head = re.sub(r"#[^\n'\"]*$", "", head.rstrip())
        sig = " ".join(head.split()).rstrip(":{ ")
        return sig if len(sig) <= 200 else sig[:199] + "…"

    def _doc(self, node: Any) -> str:
        if self.grammar == "python":
            body = node.child_by_field_name("body")
            first = body.named_children[0] if body is not None and body.named_children else None
            if first is not None and first.type == "expression_statement" and first.named_children:
                first = first.named_children[0]
            if first is not None and first.type == "string":
                raw = _text(self.src, first)
                return first_sentence(raw.strip("rRbBuUfF").strip("\"'"))
            return ""
        comments = []  # TypeScript and Go: the comment lines right above the definition
        prev = node.prev_named_sibling
        if node.parent is not None and node.parent.type in ("export_statement", "lexical_declaration"):
            prev = node.parent.prev_named_sibling
        while prev is not None and prev.type == "comment":
            comments.insert(0, _text(self.src, prev))
            prev = prev.prev_named_sibling
        text = " ".join(c.strip("/*! \t").replace("*", " ") for c in comments)
        return first_sentence(text) if text.strip() else ""

    def _enclosing(self, byte: int) -> int:
        i = bisect.bisect_right(self.starts, byte)  # defs[i] is the i-th found (defs[0] is the module)
        while i > 0 and self.nodes[i].end_byte <= byte:
            i = self.graph.defs[i].parent
        return i

    def _class_of(self, index: int) -> int:
        defs = self.graph.defs
        while index > 0 and defs[index].kind != "class":
            index = defs[index].parent
        return index

    # --- imports ---

    def _import(self, node: Any) -> None:
        self._imported = []
        {"python": self._import_python, "go": self._import_go}.get(self.grammar, self._import_ts)(node)
        line = node.start_point[0] + 1
        src = self._enclosing(node.start_byte)
        for target in self._imported:
            self.graph.edges.append(Edge(src, "import", target.rsplit(".", 1)[-1].rsplit("/", 1)[-1], target, line))

    def _bind(self, name: str, target: str) -> None:
        self.graph.bindings.setdefault(name, target)
        self._imported.append(target)

    def _import_python(self, node: Any) -> None:
        if node.type == "import_statement":
            for child in node.named_children:
                if child.type == "aliased_import":
                    self._bind(_text(self.src, child.child_by_field_name("alias")),
                               _text(self.src, child.child_by_field_name("name")))
                elif child.type == "dotted_name":
                    dotted = _text(self.src, child)
                    self.graph.bindings.setdefault(dotted.split(".")[0], dotted.split(".")[0])
                    self._imported.append(dotted)
            return
        module_node = node.child_by_field_name("module_name")
        base = self._absolute(module_node)
        for child in node.children_by_field_name("name"):
            if child.type == "aliased_import":
                name, alias = _text(self.src, child.child_by_field_name("name")), \
                    _text(self.src, child.child_by_field_name("alias"))
            else:
                name = alias = _text(self.src, child)
            self._bind(alias, f"{base}.{name}" if base else name)

    def _absolute(self, node: Any) -> str:
        """A module named in `from X import`, made absolute (relative imports against this file)."""
        text = _text(self.src, node).replace(" ", "")
        dots = len(text) - len(text.lstrip("."))
        if not dots:
            return text
        package = self.module.split(".")
        if not self.path.endswith("__init__.py"):
            package = package[:-1]
        package = package[:len(package) - (dots - 1)] if dots - 1 <= len(package) else []
        rest = text[dots:]
        return ".".join([*package, rest] if rest else package)

    def _import_ts(self, node: Any) -> None:
        source = node.child_by_field_name("source")
        if source is None:
            return
        spec = _text(self.src, source).strip("'\"`")
        if spec.startswith("."):
            target = chunker.module_name(posixpath.normpath(posixpath.join(self.dir, spec)) + ".ts")
        else:
            target = spec
        clause = next((c for c in node.named_children if c.type == "import_clause"), None)
        if clause is None:
            self._imported.append(target)
            return
        for child in clause.named_children:
            if child.type == "identifier":
                self._bind(_text(self.src, child), target)
            elif child.type == "namespace_import":
                ident = next((c for c in child.named_children if c.type == "identifier"), None)
                if ident is not None:
                    self._bind(_text(self.src, ident), target)
            elif child.type == "named_imports":
                for spec_node in child.named_children:
                    if spec_node.type != "import_specifier":
                        continue
                    name = _text(self.src, spec_node.child_by_field_name("name"))
                    alias = spec_node.child_by_field_name("alias")
                    self._bind(_text(self.src, alias) if alias is not None else name, f"{target}.{name}")

    def _import_go(self, node: Any) -> None:
        path_node = node.child_by_field_name("path")
        if path_node is None:
            return
        spec = _text(self.src, path_node).strip('"`')
        alias = node.child_by_field_name("name")
        name = _text(self.src, alias) if alias is not None else spec.rsplit("/", 1)[-1]
        self._bind(name, f"@*{spec}")

    # --- edges ---

    def _typed(self, var: Any, kind: Any) -> None:
        """`x = Foo(...)`, `x: Foo`: calls on x within that definition are Foo's (when Foo is a class)."""
        src = self._enclosing(var.start_byte)
        _, target = self._target(kind, src)
        if target:
            self.var_types.setdefault((src, _text(self.src, var)), target)

    def _edge(self, kind: str, node: Any) -> None:
        if kind == "name":
            return
        if kind == "ref" and self.src[node.start_byte:node.start_byte + 5] in (b"self.", b"cls.", b"this."):
            return  # an attribute of an instance, not a definition passed on
        src = self._enclosing(node.start_byte)
        if kind in ("raise", "return") and node.type in ("call", "call_expression", "new_expression"):
            node = node.child_by_field_name("function") or node.child_by_field_name("constructor") or node
        name, target = self._target(node, src)
        if kind == "ref" and (target is None or "." not in target):
            return  # a local variable, or a name the file cannot place: only definitions passed as values count
        if kind == "call" and target is None and self.grammar == "python" and name in _BUILTINS \
                and node.type == "identifier":
            return  # len(), isinstance(), super(): no edge the reader would follow
        if name:
            self.graph.edges.append(Edge(src, kind, name, target, node.start_point[0] + 1))

    def _chain(self, node: Any) -> list[str] | None:
        """`a.b.c` as ["a", "b", "c"]; None for anything but names joined by dots."""
        t = node.type
        if t in ("identifier", "type_identifier", "property_identifier", "field_identifier",
                 "package_identifier", "this", "super"):
            return [_text(self.src, node)]
        if t in ("attribute", "member_expression", "selector_expression"):
            obj = node.child_by_field_name("object") or node.child_by_field_name("operand")
            attr = (node.child_by_field_name("attribute") or node.child_by_field_name("property")
                    or node.child_by_field_name("field"))
            head = self._chain(obj) if obj is not None else None
            if attr is None:
                return None
            if head is None:  # a call's result, an index: only the last name is known
                return ["", _text(self.src, attr)]
            return [*head, _text(self.src, attr)]
        if t in ("call", "call_expression") and self.grammar == "python":
            fn = node.child_by_field_name("function")
            if fn is not None and _text(self.src, fn) == "super":
                return ["super()"]
        if t in ("generic_type", "nested_type_identifier", "qualified_type"):
            return self._chain(node.named_children[0]) if node.named_children else None
        return None

    def _target(self, node: Any, src: int) -> tuple[str, str | None]:
        parts = self._chain(node)
        if self.grammar == "python" and node.type == "attribute":
            obj = node.child_by_field_name("object")
            if obj is not None and obj.type == "call" and self._chain(obj) == ["super()"]:
                cls = self._class_of(src)
                name = parts[-1] if parts else ""
                return name, (f"^{self.graph.defs[cls].qname}.{name}" if cls else None)
        if not parts or not parts[-1]:
            return "", None
        name = parts[-1]
        if self.grammar == "go":
            return name, self._go_target(parts, src)
        head = parts[0]
        if head in ("self", "cls", "this"):
            cls = self._class_of(src)
            if cls and len(parts) == 2:
                return name, f"{self.graph.defs[cls].qname}.{name}"
            return name, None
        if not head:
            return name, None
        resolved = self.var_types.get((src, head)) if len(parts) > 1 else None
        resolved = resolved or self._local(head, src) or self.graph.bindings.get(head)
        if resolved is None:
            return name, None
        return name, ".".join([resolved, *parts[1:]])

    def _local(self, name: str, src: int) -> str | None:
        """A definition `name` visible from definition `src`: in an enclosing function or the module."""
        defs = self.graph.defs
        if self._scopes is None:
            self._scopes = {}
            for d in defs[1:]:
                if d.kind not in attributes.VALUE_KINDS:  # a constant passed on is a `read`, not a `ref`
                    self._scopes.setdefault((d.parent, d.name), d.qname)
        scope = src
        while True:
            if scope == 0 or defs[scope].kind in ("function", "method"):
                found = self._scopes.get((scope, name))
                if found is not None:
                    return found
            if scope == 0:
                return None
            scope = defs[scope].parent

    def _go_target(self, parts: list[str], src: int) -> str | None:
        if len(parts) == 1:
            return f"@{self.dir}/{parts[0]}"
        if len(parts) == 2:
            head, name = parts
            receiver = self.receivers.get(src)
            if receiver and head == receiver[0]:
                return f"@{self.dir}/{receiver[1]}.{name}"
            imported = self.graph.bindings.get(head)
            if imported:
                return f"{imported}/{name}"
        return None

    # --- attributes, constants and their reads ---

    def _values(self, root: Any) -> None:
        """Attributes and constants as definitions, after the others (so those keep their places), then
        the `read` edges into them."""
        defs = self.graph.defs
        code = len(defs)
        members = {(d.parent, d.name) for d in defs[1:]}
        self._seen_reads: set[tuple[int, str]] = set()
        writes = self._receiver_reads(root, members)
        for index in range(1, code):
            if defs[index].kind == "class":
                for site, others in attributes.class_attributes(self.grammar, self.src, self.nodes[index],
                                                                writes.get(index, [])):
                    if (index, site.name) not in members:
                        self._value(site, others, "attribute", index)
        for site in attributes.module_constants(self.grammar, self.src, root):
            if (0, site.name) not in members:
                self._value(site, [], "constant", 0)
        self._constant_reads(root, code)

    def _value(self, site: attributes.Site, others: list[attributes.Site], kind: str, parent: int) -> None:
        doc = next((d for s in (site, *others) if (d := attributes.doc(self.grammar, self.src, s))), "")
        self.graph.defs.append(Def(f"{self.graph.defs[parent].qname}.{site.name}", site.name, kind, site.line,
                                   site.end_line, first_sentence(doc) if doc else "",
                                   attributes.signature(self.grammar, self.src, site), parent))

    def _read(self, src: int, name: str, target: str, node: Any) -> None:
        """One `read` edge per reading definition and target: the first line it reads it on."""
        if (src, target) not in self._seen_reads:
            self._seen_reads.add((src, target))
            self.graph.edges.append(Edge(src, "read", name, target, node.start_point[0] + 1))

    def _receiver_reads(self, root: Any, members: set[tuple[int, str]]) -> dict[int, list[attributes.Site]]:
        """`self.x` (`this.x`, a Go receiver's `c.x`) read in a class's methods: an attribute of the class,
        or of a base (the graph follows the bases when read); a method of the class itself is no attribute.
        Returns the `self.x = ...` found on the way, by class (one scan for both)."""
        defs = self.graph.defs
        writes: dict[int, list[attributes.Site]] = {}
        if self.grammar == "go":
            for index, (var, type_name) in self.receivers.items():
                node = self.nodes[index]
                if not var or var == "_":
                    continue
                pattern = re.compile(rb"\b" + re.escape(var.encode()) + rb"\.([A-Za-z_]\w*)")
                for m in pattern.finditer(self.src, node.start_byte, node.end_byte):
                    ident = root.descendant_for_byte_range(m.start(), m.start(1) - 1)
                    expr = ident.parent if ident is not None and ident.type == "identifier" else None
                    if expr is not None and expr.type == "selector_expression" and attributes.is_read(expr):
                        name = m.group(1).decode("utf-8", "replace")
                        self._read(self._enclosing(m.start()), name, f"@{self.dir}/{type_name}.{name}", expr)
            return writes
        for m in attributes.receivers(self.grammar, self.src):
            expr = attributes.receiver_attribute(self.grammar, root, m)
            if expr is None:
                continue
            src = self._enclosing(m.start())
            cls = self._class_of(src)
            if not cls or src == cls:
                continue  # no method's: a function's `self`, or the class body's
            name = m.group(1).decode("utf-8", "replace")
            statement = attributes.written_by(self.grammar, expr)
            if statement is not None:
                method = src
                while defs[method].parent != cls:
                    method = defs[method].parent
                writes.setdefault(cls, []).append(
                    attributes.Site(name, statement, attributes.method_rank(defs[method].name)))
            elif (cls, name) not in members and attributes.is_read(expr):
                self._read(src, name, f"{defs[cls].qname}.{name}", expr)
        return writes

    def _constant_reads(self, root: Any, code: int) -> None:
        """The module's constants read by name, those it imports by name (`from .config import TIMEOUT`),
        and those read through an imported module or a class (`config.TIMEOUT`, `Session.TIMEOUT`)."""
        defs = self.graph.defs
        local = {d.name: (f"@{self.dir}/{d.name}" if self.grammar == "go" else d.qname)
                 for d in defs[code:] if d.kind == "constant"}
        imported = {} if self.grammar == "go" else {
            n: t for n, t in self.graph.bindings.items() if attributes.is_constant(n)}
        for name, target in {**imported, **local}.items():
            for at in attributes.occurrences(self.src, name.encode()):
                node = root.descendant_for_byte_range(at, at + len(name))
                if node is not None and node.type == "identifier" and attributes.is_read(node):
                    self._read(self._enclosing(at), name, target, node)
        if self.grammar == "go":
            return
        heads = set(self.graph.bindings) | {d.name for d in defs[1:code] if d.parent == 0 and d.kind == "class"}
        for m in _DOTTED_CONSTANT.finditer(self.src) if heads else ():
            if not attributes.is_constant(m.group(1).decode("utf-8", "replace")):
                continue
            ident = root.descendant_for_byte_range(m.start(1), m.end(1))
            expr = ident.parent if ident is not None else None
            if expr is None or expr.type not in ("attribute", "member_expression"):
                continue
            head = expr.child_by_field_name("object")
            if head is None or head.type != "identifier" or _text(self.src, head) not in heads \
                    or not attributes.is_read(expr):
                continue
            src = self._enclosing(m.start())
            name, target = self._target(expr, src)
            if target:
                self._read(src, name, target, expr)


# `.NAME` as a constant is spelled (attributes.is_constant says which are): after `module.` or `Class.`.
_DOTTED_CONSTANT = re.compile(rb"\.(_*[A-Z][A-Z0-9_]+)(?![\w$])")
_BUILTINS = frozenset(dir(builtins))


def _walk(node: Any):
    if node is None:
        return
    yield node
    for child in node.named_children:
        yield from _walk(child)
