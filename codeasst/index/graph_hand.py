"""The graph of Python, TypeScript/TSX, JavaScript and Go files, read by hand-written code over
tree-sitter queries kept here (the languages the graph read before its query engine,
codeasst.index.tags; they stay on this code until their sets are compared on the engine).

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
"""

from __future__ import annotations

import bisect
import builtins
import posixpath
import re
from functools import cache
from typing import Any

from codeasst.index import attributes, grammars
from codeasst.index.graph_values import ValuesMixin
from codeasst.index.graphmodel import Def, Edge, FileGraph, first_sentence, walk
from codeasst.index.graphmodel import node_text as _text

HAND_GRAMMARS = frozenset({"python", "typescript", "tsx", "javascript", "go"})

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


def extract(path: str, grammar: str, text: str) -> FileGraph:
    """The graph of one file in one of HAND_GRAMMARS."""
    from tree_sitter import QueryCursor

    src = text.encode("utf-8", "surrogatepass")
    tree = grammars.parse(grammar, src)
    matches = QueryCursor(_query(grammar)).matches(tree.root_node)
    return _Extractor(path, grammar, src, len(text.splitlines()) or 1).run(matches, tree.root_node)


class _Extractor(ValuesMixin):
    def __init__(self, path: str, grammar: str, src: bytes, lines: int) -> None:
        self.path, self.grammar, self.src = path, grammar, src
        self.module = grammars.module_name(path)
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
        type_name = next((_text(self.src, n) for n in walk(kind) if n.type == "type_identifier"), None)
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
            target = grammars.module_name(posixpath.normpath(posixpath.join(self.dir, spec)) + ".ts")
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


_BUILTINS = frozenset(dir(builtins))
