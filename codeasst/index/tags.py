"""The code graph's query engine: one engine for every language whose definitions and references are
described by a query file, `queries/<grammar>.scm`, in the capture convention of the grammars' own
`tags.scm` (the one GitHub's code navigation and Aider's repository map read). A new language is a
query file and a `graph = true` in its languages.toml table.

Captures a query file may use:
- `@definition.KIND` on a definition, with `@name` on its name. KIND is one of DEF_KINDS (function,
  method, constructor, class, struct, enum, union, interface, trait, record, object, type, module,
  namespace, macro, field, constant) or `impl`: a Rust `impl Foo` block, no definition itself, whose
  functions are Foo's methods (`Foo.new`); an `impl` without `@name` is an anonymous class's body
  (Scala's `new Runnable { def run() .. }`), whose functions are methods named inside what encloses
  it. `@doc` on the definition's doc, where the doc is no comment above it (otherwise the comments
  right above the definition are its doc).
- `@reference.call` on a call, with `@name` on what is called (`helper`, `Foo::new`, `self.peek`),
  and `@receiver` on what it is called on where the grammar keeps them apart (Java's `a.b()`);
  `@reference.class` likewise on a construction (`new Foo()`, `Foo { .. }`), whose name is a type's.
- `@reference.inherit` and `@reference.implementation` on a base class, an interface or a trait.
- `@import` on an import statement (`use`, `import`, `using`: a path of names with `as` aliases and
  `{...}` groups), `@include` on the file a C `#include` names, `@package` on the name of the package
  or namespace a file declares.
- `@variable` with `@type`: a variable, parameter or field whose type the code declares; a call on it
  is its type's (`Parser p; p.peek()`).
- `@variable` with `@constructor`: a variable or field whose type is not written but whose initializer
  constructs one (`val x = Foo(..)`, `var x = new Foo()`, `let x = Foo { .. }`), `@constructor` on the
  type's name; a call on it is that type's, as with `@type`. The query says which initializers
  construct for certain (a `new`, a struct literal; a bare call only of a capitalized name where the
  language constructs with one, a `#match?` on the name).

What a name means is resolved only as far as the code says (codeasst.index.tags_names): the
enclosing definitions, the file's definitions, its imports or includes, a receiver whose type is
declared, the same package; anything else stays unresolved and is counted, never guessed. A
language's table says how qualified names start (`graph_scope`: at the file, at the package the
file declares, at the Rust crate) and whether a bare call inside a class may be one of its own
methods (`graph_members`).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Any

from codeasst.errors import CodeasstError
from codeasst.index import grammars
from codeasst.index.attributes import VALUE_KINDS
from codeasst.index.graphmodel import Def, Edge, FileGraph, first_sentence
from codeasst.index.graphmodel import node_text as _text
from codeasst.index.tags_names import Names, chain, clean_name, join, strip_generics

# What each `@definition.KIND` is in the graph: readers know functions, methods, classes, modules,
# attributes and constants; the kind the code wrote stays in the definition's signature.
DEF_KINDS = {"function": "function", "method": "method", "constructor": "method", "macro": "function",
             "class": "class", "struct": "class", "enum": "class", "union": "class", "interface": "class",
             "trait": "class", "record": "class", "object": "class", "type": "class", "module": "module",
             "namespace": "module", "field": "attribute", "constant": "constant"}
SIGNATURE_CHARS = 200
_BODY_FIELDS = ("body",)
_BODY_TYPES = ("block", "body", "declaration_list", "field_declaration_list", "compound_statement",
               "class_body", "interface_body", "enum_body", "constructor_body", "enum_variant_list", "function_body",
               "body_statement", "enum_class_body")
_SCM_COMMENT = re.compile(r'"(?:[^"\\]|\\.)*"|;[^\n]*')  # a query file's string, else its comment
_EDGE_KEYS = frozenset({"reference.call", "reference.class", "reference.inherit", "reference.implementation"})
_COMMENT_START = re.compile(r"^(?:/\*+!?|///?!?|\*+(?!/)|#+|--+\[*=*\[*|-{2,})")
_COMMENT_END = re.compile(r"\*+/$|\]=*\]$")
_XML_TAG = re.compile(r"</?[A-Za-z][^>]*>")
_COMMENT_LINE = re.compile(r"^(?://|/\*|\*|#|--)")
# A comment line in a definition's head; not a C preprocessor line (`#define`) or a Rust attribute.
_HEAD_COMMENT = re.compile(r"^(?://|/\*|\*|--|#(?!\s*(?:define|if|ifdef|ifndef|else|elif|endif|include|pragma|undef)\b|\[|!))")


class QueryError(CodeasstError):
    """A language's graph query file is missing or does not compile against its grammar."""


def _queries_dir() -> Any:
    return files("codeasst.index").joinpath("queries")


@dataclass(frozen=True)
class Settings:
    scope: str  # "file", "package" or "crate": where qualified names start
    members: bool  # a bare call inside a class's method may name one of the class's own
    constructs: bool  # a bare call of a capitalized name constructs that type (Kotlin's `Cart()`)
    wrapper_types: frozenset[str]
    leading_types: frozenset[str]


@cache
def settings(grammar: str) -> Settings:
    table = tomllib.loads(grammars.table_bytes().decode("utf-8"))
    for name, t in table.items():
        if t.get("grammar", name) == grammar:
            return Settings(t.get("graph_scope", "file"), bool(t.get("graph_members", False)),
                            bool(t.get("graph_constructs", False)), frozenset(t.get("wrapper_types", ())),
                            frozenset(t.get("leading_types", ())))
    return Settings("file", False, False, frozenset(), frozenset())


@cache
def query(grammar: str) -> Any:
    return _compile(grammar)[0]


@cache
def definitions_query(grammar: str) -> Any:
    """The query file with its definition patterns alone, compiled apart: what a class chunk's fields
    need, without the calls and types that make most of a file's matches."""
    compiled, text = _compile(grammar)
    source = text.encode("utf-8")
    for i in range(compiled.pattern_count):
        pattern = source[compiled.start_byte_for_pattern(i):compiled.end_byte_for_pattern(i)].decode("utf-8")
        if "@definition." not in _SCM_COMMENT.sub(lambda m: m.group(0) if m.group(0)[0] == '"' else "", pattern):
            compiled.disable_pattern(i)
    return compiled


def _compile(grammar: str) -> tuple[Any, str]:
    from tree_sitter import Query
    from tree_sitter import QueryError as GrammarMismatch
    from tree_sitter_language_pack import get_language

    source = _queries_dir().joinpath(f"{grammar}.scm")
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as exc:
        raise QueryError(f"no graph query for {grammar} ({exc})") from exc
    try:
        return Query(get_language(grammar), text), text
    except GrammarMismatch as exc:  # a node type or field the grammar lacks, an impossible pattern
        raise QueryError(f"the graph query for {grammar} does not compile: {exc}") from exc


@cache
def reads(grammar: str) -> bool:
    """Whether the graph reads `grammar` through a query file: its table says `graph = true` and the
    file is there (Python, TypeScript, JavaScript and Go have the hand-written extractor instead)."""
    table = tomllib.loads(grammars.table_bytes().decode("utf-8"))
    graphed = any(t.get("grammar", name) == grammar and t.get("graph") is True for name, t in table.items())
    return graphed and _queries_dir().joinpath(f"{grammar}.scm").is_file()


def class_words(path: str, grammar: str, src: bytes, class_node: Any, shown_until: int) -> str:
    """`name: doc` for each field and constant a class declares past row `shown_until` (what its
    collapsed chunk no longer shows), one a line: words for the lexical index, as
    attributes.class_words gives them for Python, TypeScript and Go. Only the class's definitions
    are read, from the tree the chunker parsed."""
    from tree_sitter import QueryCursor

    if (shown_until + 1, 0) >= tuple(class_node.end_point):
        return ""  # the chunk shows the whole class
    cursor = QueryCursor(definitions_query(grammar))
    # what the chunk does not show, with what encloses it (which reaches into it): the rest is no field's
    cursor.set_point_range((shown_until + 1, 0), class_node.end_point)
    graph = _Engine(path, grammar, src, 1, value_docs_only=True).definitions(cursor.matches(class_node))
    rows = (class_node.start_point[0] + 1, class_node.end_point[0] + 1)
    owner = next((i for i, d in enumerate(graph.defs) if d.kind == "class" and (d.line, d.end_line) == rows), None)
    if owner is None:
        return ""
    return "\n".join(f"{d.name}: {d.doc}" if d.doc else d.name for d in graph.defs
                     if d.parent == owner and d.kind in VALUE_KINDS and d.line - 1 > shown_until)


def extract(path: str, grammar: str, text: str) -> FileGraph:
    """The graph of one file in a language read through its query file."""
    from tree_sitter import QueryCursor

    src = text.encode("utf-8", "surrogatepass")
    tree = grammars.parse(grammar, src)
    matches = QueryCursor(query(grammar)).matches(tree.root_node)
    return _Engine(path, grammar, src, len(text.splitlines()) or 1).run(matches)


@dataclass
class _Found:
    node: Any
    name: Any
    kind: str  # the query's KIND
    doc: list[Any]


class _Engine:
    def __init__(self, path: str, grammar: str, src: bytes, lines: int, value_docs_only: bool = False) -> None:
        self.path, self.grammar, self.src = path, grammar, src
        self.value_docs_only = value_docs_only  # a class chunk's words need the docs of its fields alone
        self.settings = settings(grammar)
        module = grammars.module_name(path)
        self.graph = FileGraph(path, module)
        self.graph.defs.append(Def(module, module.rsplit(".", 1)[-1], "module", 1, lines))
        self.nodes: list[Any] = [None]
        self.starts: list[int] = []
        self.names = Names(path, self.settings.scope, self.settings.members, self.settings.constructs, self.graph)

    def run(self, matches: list[tuple[int, dict[str, list[Any]]]]) -> FileGraph:
        found, impls, uses, variables, edges = self._sort(matches)
        self._defs(found, impls)
        self.names.ready(self.starts, self.nodes)
        for captures in uses:
            if "import" in captures:
                self.names.imported(_text(self.src, captures["import"][0]), self._line(captures["import"][0]),
                                    self.names.enclosing(captures["import"][0].start_byte))
            else:
                self.names.included(_text(self.src, captures["include"][0]), self._line(captures["include"][0]))
        constructed: list[tuple[int, str, str]] = []
        for captures in variables:
            var = captures["variable"][0]
            src = self.names.enclosing(var.start_byte)
            if "type" in captures:
                self.names.typed(src, _text(self.src, var), _text(self.src, captures["type"][0]))
            else:
                constructed.append((src, _text(self.src, var), _text(self.src, captures["constructor"][0])))
        self.names.constructed(constructed)  # after the declared types, which win
        for captures in edges:
            self._edge(captures)
        self.graph.member_types = self.names.member_types()
        return self.graph

    def definitions(self, matches: list[tuple[int, dict[str, list[Any]]]]) -> FileGraph:
        """The graph with its definitions alone (no imports, calls or types are read)."""
        found, impls, *_ = self._sort(matches)
        self._defs(found, impls)
        return self.graph

    def _sort(self, matches: list[tuple[int, dict[str, list[Any]]]]) -> tuple[list, list, list, list, list]:
        """The matches by what they are, in the query's order: definitions, `impl` blocks, imports and
        includes, typed variables, edges (a file's package is read right away)."""
        found: list[_Found] = []
        impls: list[tuple[Any, Any]] = []
        uses: list[dict[str, list[Any]]] = []  # imports and includes
        variables: list[dict[str, list[Any]]] = []
        edges: list[dict[str, list[Any]]] = []  # calls, constructions, base classes, in the query's order
        def_keys: dict[int, str | None] = {}  # a pattern's `@definition.KIND`: the capture on its root
        for pattern, captures in matches:
            kind = def_keys.get(pattern, "")
            if kind == "" or (kind is not None and kind not in captures):
                kind = def_keys[pattern] = next((k for k in captures if k.startswith("definition.")), None)
            if kind is None:
                if "package" in captures:
                    self.names.package(_text(self.src, captures["package"][0]))
                if "import" in captures or "include" in captures:
                    uses.append(captures)
                if "variable" in captures and ("type" in captures or "constructor" in captures):
                    variables.append(captures)
                if not _EDGE_KEYS.isdisjoint(captures):
                    edges.append(captures)
            elif kind == "definition.impl":
                impls.append((captures[kind][0], captures.get("name", [None])[0]))
            elif "name" in captures:
                kind = kind.split(".", 1)[1]
                if kind in DEF_KINDS:
                    found.append(_Found(captures[f"definition.{kind}"][0], captures["name"][0], kind,
                                        captures.get("doc", [])))
        return found, impls, uses, variables, edges

    @staticmethod
    def _line(node: Any) -> int:
        return node.start_point[0] + 1

    # --- definitions ---

    def _defs(self, found: list[_Found], impls: list[tuple[Any, Any]]) -> None:
        """The definitions in source order, each named inside what encloses it: a definition, or an
        `impl` block (whose type names its functions; without a name, an anonymous class's body)."""
        items = [(f.node.start_byte, -f.node.end_byte, 1, f) for f in found]
        items += [(node.start_byte, -node.end_byte, 0, (node, name)) for node, name in impls]
        items.sort(key=lambda item: item[:3])
        stack: list[tuple[int, str, int, bool]] = []  # (end byte, qualified prefix, def index, is a class)
        seen: set[tuple[int, int, str]] = set()
        for start, neg_end, is_def, item in items:
            while stack and stack[-1][0] <= start:
                stack.pop()
            prefix, parent, in_class = stack[-1][1:] if stack else (self.names.top, 0, False)
            if not is_def:
                _, name_node = item
                if name_node is None:  # an anonymous class: its functions are methods, named where it is
                    stack.append((-neg_end, prefix, parent, True))
                    continue
                qname = join(prefix, clean_name(_text(self.src, name_node)))
                self.names.classes.add(qname)
                owner = self.names.local_def(qname, parent)
                stack.append((-neg_end, qname, owner, True))
                continue
            name_parts = clean_name(_text(self.src, item.name)).split(".")
            key = (start, -neg_end, name_parts[-1])
            if key in seen or not name_parts[-1]:
                continue  # one node matched by two patterns
            seen.add(key)
            kind = DEF_KINDS[item.kind]
            if kind == "function" and (in_class or len(name_parts) > 1):
                kind = "method"  # in a class's body, or `void Shape::grow()` outside it
            if len(name_parts) > 1:
                self.names.classes.add(join(prefix, ".".join(name_parts[:-1])))
            qname = join(prefix, ".".join(name_parts))
            index = len(self.graph.defs)
            self.graph.defs.append(Def(qname, name_parts[-1], kind, self._line(item.node),
                                       item.node.end_point[0] + 1, *self._details(item, kind),
                                       parent))
            self.nodes.append(item.node)
            self.starts.append(item.node.start_byte)
            if kind == "class":
                self.names.classes.add(qname)
            if kind in ("class", "module", "function", "method"):
                stack.append((item.node.end_byte, qname, index, kind == "class"))

    def _details(self, item: _Found, kind: str) -> tuple[str, str]:
        if self.value_docs_only and kind not in VALUE_KINDS:
            return "", ""
        return self._doc(item), self._signature(item.node)

    def _signature(self, node: Any) -> str:
        body = next((node.child_by_field_name(f) for f in _BODY_FIELDS if node.child_by_field_name(f)), None)
        if body is None:
            body = next((c for c in node.named_children if c.type in _BODY_TYPES), None)
        end = body.start_byte if body is not None and body.start_byte > node.start_byte else node.end_byte
        head = self.src[node.start_byte:end].decode("utf-8", "replace").splitlines()
        # a comment inside the head is the doc of what follows (Ruby keeps a nested class's there)
        sig = " ".join(" ".join(line for line in head if not _HEAD_COMMENT.match(line.strip())).split()).rstrip("{ =")
        return sig if len(sig) <= SIGNATURE_CHARS else sig[:SIGNATURE_CHARS - 1] + "…"

    def _doc(self, found: _Found) -> str:
        if found.doc:
            text = " ".join(_text(self.src, n) for n in found.doc)
            return first_sentence(_clean_comment(text.strip("\"'`")))
        outer = found.node
        while outer.parent is not None and outer.parent.type in self.settings.wrapper_types:
            outer = outer.parent
        comments: list[str] = []
        row = outer.start_point[0]
        prev = outer.prev_named_sibling
        while prev is not None and prev.end_point[0] >= row - 1 and (
                prev.type in self.settings.leading_types or "comment" in prev.type):
            row = prev.start_point[0]
            if "comment" in prev.type:
                line_start = self.src.rfind(b"\n", 0, prev.start_byte) + 1
                if self.src[line_start:prev.start_byte].strip():
                    break  # a comment at the end of a line of code is about that line
                text = _text(self.src, prev)
                if text.startswith(("//!", "/*!")):
                    break  # a Rust inner doc: the enclosing module's
                comments.insert(0, text)
            prev = prev.prev_named_sibling
        if not comments:  # a grammar that keeps the comment elsewhere (Ruby's in the module, Kotlin's in an import)
            comments = self._comment_lines_above(outer.start_byte)
        text = _clean_comment("\n".join(comments))
        return first_sentence(text) if text else ""

    def _comment_lines_above(self, start: int) -> list[str]:
        """The comment lines right above the line `start` is on, read as text."""
        found: list[str] = []
        end = self.src.rfind(b"\n", 0, start)
        if self.src[end + 1:start].strip():
            return []  # the definition does not start its line
        while end > 0:
            begin = self.src.rfind(b"\n", 0, end) + 1
            line = self.src[begin:end].decode("utf-8", "replace").strip()
            if not _COMMENT_LINE.match(line) or line.startswith(("//!", "/*!", "#!", "#[")):
                break
            found.insert(0, line)
            end = begin - 1
        return found

    # --- edges ---

    def _edge(self, captures: dict[str, list[Any]]) -> None:
        call = "reference.call" if "reference.call" in captures else (
            "reference.class" if "reference.class" in captures else None)
        if call is not None and "name" in captures:
            self._call(call, captures["name"][0], captures["receiver"][0] if "receiver" in captures else None)
            return
        for key in ("reference.inherit", "reference.implementation"):
            if key in captures:
                node = captures[key][0]
                src = self.names.inheritor(node)
                parts = chain(_text(self.src, node))
                if parts and src:
                    target = self.names.type_target(parts, src)
                    self.graph.edges.append(Edge(src, "inherit", parts[-1], target, self._line(node)))

    def _call(self, call: str, name_node: Any, receiver: Any) -> None:
        """A call (or a construction, `reference.class`) of what `name_node` names, on `receiver` if any."""
        src = self.names.enclosing(name_node.start_byte)
        written = _text(self.src, name_node)
        if receiver is not None:
            receiver_text = _text(self.src, receiver)
            parts = chain(receiver_text) or [""]  # [""]: a call's result, an index: the receiver's type is unknown
            qualified = "::" in written or "::" in receiver_text
        else:
            parts, qualified = [], "::" in written
        parts += chain(written) or ["", _last_word(written)]
        if not parts[-1]:
            return
        if call == "reference.class":  # `new Foo()`, `Foo { .. }`: a type's name
            target = self.names.type_target(parts, src, qualified=True) if parts[0] else None
        else:
            target = self.names.call_target(parts, src, qualified)
        self.graph.edges.append(Edge(src, "call", parts[-1], target, name_node.end_point[0] + 1))


def _last_word(text: str) -> str:
    found = re.findall(r"[A-Za-z_]\w*", strip_generics(text))
    return found[-1] if found else ""


def _clean_comment(text: str) -> str:
    lines = []
    for line in text.splitlines():
        line = _COMMENT_START.sub("", line.strip())
        line = _COMMENT_END.sub("", line).strip()
        lines.append(line)
    return " ".join(_XML_TAG.sub(" ", " ".join(lines)).split())
