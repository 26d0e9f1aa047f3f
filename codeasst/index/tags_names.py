"""What a name in a file means, as far as the file says, for the query engine (codeasst.index.tags):
the qualified names its definitions get, and the target of each call and base class.

A name is looked up in the enclosing definitions (a class's own members only where the language
lets a bare call name one, `graph_members`), then the file's definitions, then what the file imports
by name (`use`, `import`, `using`). Beyond the file, only what the language makes certain: the same
package or namespace for a type's name, then the modules the file imports whole (`*MOD;MOD|NAME`:
the first that defines it), a base class of the enclosing class (`^C.m`), the files a C or C++ file
`#include`s (`&STEMS|NAME`); these are resolved when the graph is read (codeasst.index.graphdb). A receiver is
typed only where the code declares its type (`Parser p`, `p: Parser`, a field) or its initializer
constructs one (`val p = Parser()`, `var p = new Parser()`). Anything else has no target: the graph
counts it as unresolved.

How qualified names start, by the language's `graph_scope`: `file`, at the file's module
(`src/geo/shape.cpp` -> `geo.shape`); `package`, at the package or namespace the file declares
(`com.example.Cart`), as imports name them; `crate`, at the Rust crate (the directory holding
`src/`): a crate's `lib.rs` or `main.rs` names its items from the crate's root, so that
`use crate::lexer::tokenize` names `lexer.tokenize`.
"""

from __future__ import annotations

import bisect
import posixpath
import re
from typing import Any

from codeasst.index import grammars
from codeasst.index.attributes import VALUE_KINDS
from codeasst.index.graphmodel import Edge, FileGraph

SELF_WORDS = frozenset({"self", "this", "Self", "static"})
SUPER_WORDS = frozenset({"super", "base", "parent"})
_RUST_HEADS = {"crate": "@crate", "self": "@self", "super": "@super"}
_TYPE_NOISE = re.compile(r"\b(?:const|mut|dyn|impl|final|volatile|struct|class|enum|typename|unsigned|signed)\b|[&*?\[\]]|'\w+")
_GENERICS = re.compile(r"<[^<>]*>")
_SEPARATORS = re.compile(r"::|->|\?\.|\.|\\")
_CHAIN = re.compile(r"[$\w~]+(?:(?:::|->|\?\.|\.|\\)[$\w~]+)*")


def join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def strip_generics(text: str) -> str:
    """`Vec::<T>::new`, `Map<K, List<V>>` without their type arguments."""
    text = text.replace("::<", "<")
    for _ in range(4):  # nested <...>, innermost first
        stripped = _GENERICS.sub("", text)
        if stripped == text:
            break
        text = stripped
    return text


def chain(text: str) -> list[str]:
    """`a.b.c`, `Foo::new`, `this->x`, `$this->repo`: the names joined; [] for anything else. A Rust
    path's `crate::`, `self::`, `super::` become `@crate`, `@self`, `@super` (no receiver's names)."""
    if text.isidentifier():  # most calls: a bare name, read without the regexes
        return [text]
    if "<" in text:
        text = strip_generics(text)
    text = "".join(text.split()).lstrip("\\")
    if not _CHAIN.fullmatch(text):
        return []
    parts = _SEPARATORS.split(text)
    if len(parts) > 1 and parts[0] in _RUST_HEADS and text.startswith(parts[0] + "::"):
        parts[0] = _RUST_HEADS[parts[0]]
    return ["this" if p == "$this" else p.lstrip("$") for p in parts]


def clean_name(text: str) -> str:
    """A definition's name as written (`Shape::grow`, `Foo<T>`, `ns::inner`) as dotted parts."""
    if text.startswith("`") and text.endswith("`"):
        return text.strip("`")  # Kotlin's and Scala's `a name with spaces`: one name, as written
    return ".".join(p for p in _SEPARATORS.split("".join(strip_generics(text).split())) if p)


def import_items(text: str) -> list[tuple[str, str]]:
    """(the name bound, the dotted path it names) for each name an import statement binds; a
    wildcard (`java.util.*`, `use a::*`, C#'s `using System.Text;` of a whole namespace) as
    ("*", the module's path): it binds whatever that module defines."""
    text = re.sub(r"/\*.*?\*/|//[^\n]*", " ", text, flags=re.DOTALL)  # Kotlin's grammar keeps a comment after one
    t = " ".join(text.strip().rstrip(";").split())
    namespace = re.match(r"(?:global )?using (?!static )([\w.]+)$", t)
    if namespace:
        return [("*", namespace.group(1))]  # C#: every type of a namespace
    t = re.sub(r"^(?:pub(?:\([^)]*\))? )?(?:global )?(?:use|import|using) (?:static |function |const )?", "", t)
    t = t.replace("::", ".").replace("\\", ".").replace("=>", " as ").lstrip(".")
    alias = re.fullmatch(r"(\w+) ?= ?([\w.]+)", t)  # C#'s `using Alias = A.B.C;`
    if alias:
        return [(alias.group(1), alias.group(2))]
    out = []
    for item in _expand(t):
        path, _, bound = (part.strip() for part in item.partition(" as "))
        path = path.removesuffix(".self")
        if path.endswith((".*", "._")) and re.fullmatch(r"[\w.]+", path[:-2]):
            out.append(("*", path[:-2]))
            continue
        if not path or not re.fullmatch(r"[\w.]+", path):
            continue
        out.append((bound or path.rsplit(".", 1)[-1], path))
    return out


def _expand(text: str) -> list[str]:
    """`a.{b, c.{d, e}}` -> `a.b`, `a.c.d`, `a.c.e`."""
    start = text.find("{")
    if start < 0:
        return [text]
    depth, end = 0, len(text)
    parts, begin = [], start + 1
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                end = i
                break
        elif text[i] == "," and depth == 1:
            parts.append(text[begin:i])
            begin = i + 1
    parts.append(text[begin:end])
    return [x for p in parts if p.strip() for x in _expand(text[:start] + p.strip() + text[end + 1:])]


def crate_top(path: str) -> str:
    """Where a Rust file's qualified names start: its module path, or for a crate's root file (lib.rs,
    main.rs right in `src/`) the crate's root, `""` for a crate at the repository's top."""
    parts = path.replace("\\", "/").split("/")
    if "src" not in parts or parts[-1] not in ("lib.rs", "main.rs") or parts[-2] != "src":
        return grammars.module_name(path)
    return grammars.module_name("/".join([*parts[:-1], "x.rs"])).rpartition(".")[0]


class Names:
    """The names of one file: filled by the engine as it reads the definitions, then asked."""

    def __init__(self, path: str, scope: str, members: bool, constructs: bool, graph: FileGraph) -> None:
        self.path, self.scope, self.members, self.constructs, self.graph = path, scope, members, constructs, graph
        self.dir = posixpath.dirname(path)
        self.top = crate_top(path) if scope == "crate" else "" if scope == "package" else graph.module
        self.classes: set[str] = set()  # qualified names of classes, impl types, `A::` qualifiers
        self.stems: list[str] = [posixpath.splitext(path)[0]]
        self.wildcards: list[str] = []  # modules imported whole (`use a::*`, `import a.b.*`, C#'s `using A.B;`)
        self.var_types: dict[tuple[int, str], str] = {}
        self._qnames: set[str] = set()
        self._class_index: dict[str, int] = {}
        self._starts: list[int] = []
        self._nodes: list[Any] = []
        # asked once per call, answered from what is fixed once the definitions are read (ready())
        self._local_cache: dict[tuple[str, int], str | None] = {}
        self._scopes_cache: dict[int, list[str]] = {}
        self._class_cache: dict[int, tuple[int, str | None]] = {}
        self._name_cache: dict[tuple[str, int, bool, bool], str | None] = {}  # also kept by imports

    def package(self, text: str) -> None:
        if self.scope == "package":
            self.top = clean_name(text)

    def local_def(self, qname: str, default: int) -> int:
        """The index of the class named `qname` defined so far in the file (an `impl`'s struct)."""
        return next((i for i, d in enumerate(self.graph.defs) if d.qname == qname and d.kind == "class"), default)

    def ready(self, starts: list[int], nodes: list[Any]) -> None:
        """The definitions are all read: what names are taken, and where each definition lies."""
        self._starts, self._nodes = starts, nodes
        self._local_cache.clear()
        self._scopes_cache.clear()
        self._class_cache.clear()
        self._name_cache.clear()
        for i, d in enumerate(self.graph.defs[1:], 1):
            if d.kind in ("function", "method", "class", "module"):
                self._qnames.add(d.qname)
            if d.kind == "class":
                self._class_index.setdefault(d.qname, i)

    def enclosing(self, byte: int) -> int:
        defs = self.graph.defs
        i = bisect.bisect_right(self._starts, byte)  # defs[i] is the i-th found (defs[0] is the module)
        while i > 0 and (self._nodes[i].end_byte <= byte or defs[i].kind in VALUE_KINDS):
            i = defs[i].parent  # a field's initializer belongs to its class
        return i

    def inheritor(self, node: Any) -> int:
        """The class a base-class clause belongs to: the class it sits in, or an `impl Trait for Foo`'s
        Foo where the file defines it; 0 where neither."""
        src = self.enclosing(node.start_byte)
        if src and self.graph.defs[src].kind == "class":
            return src
        impl = node.parent
        type_node = impl.child_by_field_name("type") if impl is not None else None
        if type_node is None:
            return 0
        name = clean_name(strip_generics(type_node.text.decode("utf-8", "replace")))
        return self._class_index.get(join(self.top, name), 0)

    # --- imports and declared types ---

    def imported(self, text: str, line: int, src: int) -> None:
        self._name_cache.clear()
        for bound, path in import_items(text):
            target = self._path(path.split("."), src)
            if bound == "*":
                if target not in self.wildcards:
                    self.wildcards.append(target)
                continue
            self.graph.bindings.setdefault(bound, target)
            self.graph.edges.append(Edge(src, "import", target.rsplit(".", 1)[-1], target, line))

    def included(self, text: str, line: int) -> None:
        self._name_cache.clear()
        name = text.strip().strip('"<>')
        if not name:
            return
        stem = posixpath.splitext(name)[0]
        if stem.startswith("."):
            stem = posixpath.normpath(posixpath.join(self.dir, stem))
        stem = stem.lstrip("/")
        if stem not in self.stems:
            self.stems.append(stem)

    def typed(self, src: int, var: str, type_text: str) -> None:
        parts = [type_text] if type_text.isidentifier() else chain(
            _TYPE_NOISE.sub(" ", strip_generics(type_text)).strip())
        if not parts or (len(parts) == 1 and parts[0][:1].islower() and not self._local(parts[0], src)):
            return  # a primitive type (`int`, `u32`, `double`)
        target = self.type_target(parts, src)
        if target:
            self.var_types.setdefault((src, var), target)

    def constructed(self, items: list[tuple[int, str, str]]) -> None:
        """(definition, variable, the type's name) for each variable whose initializer constructs a type
        (`val x = Foo(..)`, `var x = new Foo()`): x is a Foo in that scope, unless its type is declared
        there, the name is a function of the file and no class, or another initializer in the same
        scope constructs another type (a name reused in two blocks of one function): then it is unknown."""
        found: dict[tuple[int, str], str | None] = {}
        for src, var, type_text in items:
            if (src, var) in self.var_types:
                continue
            parts = chain(type_text)
            target = self.type_target(parts, src) if parts else None
            if target in self._qnames and target not in self._class_index:
                target = None  # `val x = Helper()` of the file's own function Helper: no type for certain
            found[(src, var)] = target if found.get((src, var), target) == target else None
        self.var_types.update((key, target) for key, target in found.items() if target)

    def member_types(self) -> list[tuple[str, str, str]]:
        """(class, field, type) for each field the file's classes declare with a type: a call through
        the field (`Cart.shared.total()`, `cart.pricer.price()`) is its type's, in any file."""
        defs = self.graph.defs
        fields = {(d.parent, d.name) for d in defs if d.kind in VALUE_KINDS}
        return [(defs[src].qname, var, target) for (src, var), target in self.var_types.items()
                if src > 0 and defs[src].kind == "class" and (src, var) in fields and target[:1] not in "&^"]

    def _path(self, parts: list[str], src: int) -> str:
        """A Rust path's `crate`, `self` and `super` as qualified names; other paths as written."""
        if self.scope != "crate" or parts[0] not in _RUST_HEADS:
            return ".".join(parts)
        return self._rust([_RUST_HEADS[parts[0]], *parts[1:]], src)

    def _rust(self, parts: list[str], src: int) -> str:
        """`crate::a`, `self::a`, `super::a` from definition `src`: `self` is the innermost module
        around it (an inline `mod tests`, else the file's), `super` the one above."""
        here = self._package(src)
        base = {"@crate": crate_top(self._crate_root()), "@self": here}.get(parts[0])
        rest = parts[1:]
        if base is None:  # super, super::super
            base = here
            while parts and parts[0] in ("@super", "super"):
                base = base.rpartition(".")[0]
                parts = parts[1:]
            rest = parts
        return join(base, ".".join(rest))

    def _crate_root(self) -> str:
        parts = self.path.split("/")
        if "src" in parts:
            cut = len(parts) - 1 - parts[::-1].index("src")
            return "/".join([*parts[:cut + 1], "lib.rs"])
        return "lib.rs"

    # --- targets ---

    def call_target(self, parts: list[str], src: int, qualified: bool = False) -> str | None:
        """What a call names; `qualified`: the code wrote `A::b` (a namespace's or a type's b, never
        a variable's)."""
        head, name = parts[0], parts[-1]
        if not head:
            return None
        if len(parts) == 1:
            return self.name_target(head, src, call=True)
        if head.startswith("@"):
            return self._rust(parts, src)
        if head in SELF_WORDS:
            index, cls = self.class_of(src)
            if cls is None:
                return None
            if len(parts) == 2:
                return self._member(index, cls, name)
            typed = self.var_types.get((index, parts[1])) if index > 0 else None
            return ".".join([typed, *parts[2:]]) if typed else None
        if head in SUPER_WORDS and len(parts) == 2:
            index, cls = self.class_of(src)
            return f"^{cls}.{name}" if index > 0 and cls else None
        typed = self._var_type(src, head)
        if typed:
            return ".".join([typed, *parts[1:]])
        return self.type_target(parts, src, qualified)

    def type_target(self, parts: list[str], src: int, qualified: bool = True) -> str | None:
        """What a type's name (`Parser`, `geo::Shape`, `Self`) names; `qualified`: the name is a type's
        or a namespace's for certain (not `x.f` of an undeclared x), so an include may define it."""
        if parts[0] in SELF_WORDS:
            index, cls = self.class_of(src)
            return self._member(index, cls, ".".join(parts[1:])) if cls and len(parts) > 1 else cls
        if parts[0].startswith("@"):
            return self._rust(parts, src)
        base = self.name_target(parts[0], src, call=False, included=qualified)
        return ".".join([base, *parts[1:]]) if base else None

    def name_target(self, name: str, src: int, call: bool, included: bool = True) -> str | None:
        key = (name, src, call, included)
        if key in self._name_cache:
            return self._name_cache[key]
        found = self._name_cache[key] = self._name_target(name, src, call, included)
        return found

    def _name_target(self, name: str, src: int, call: bool, included: bool) -> str | None:
        local = self._local(name, src)
        if local:
            return local
        if name in self.graph.bindings:
            return self.graph.bindings[name]
        index, cls = self.class_of(src) if call and self.members else (0, None)
        if self.scope == "package":
            if call and self.constructs and name[:1].isupper():
                return self._in_modules([self._package(src)], name)  # `Cart()`: a type of the package
            if index > 0 and cls:
                return f"^{cls}.{name}"  # not the class's own: a base's (Java, C#)
            return self._in_modules([self._package(src)], name) if name[:1].isupper() else None
        if self.wildcards and self.scope == "crate":
            return self._in_modules([], name)
        if included and len(self.stems) > 1 and self.scope == "file":
            if cls:  # C++ looks in the class first (its header's), then the namespaces
                return self._included(f"{self._tail(cls)}.{name}", name)
            return self._included(name)
        return None

    def _in_modules(self, first: list[str], name: str) -> str:
        """`name` as the first of these modules that defines it: the package's own (which a wildcard
        import cannot shadow), then the modules imported whole, in the file's order (a name two of
        them define would not compile)."""
        modules = [*first, *(w for w in self.wildcards if w not in first)]
        if len(modules) == 1:
            return join(modules[0], name)
        return "*" + ";".join(modules) + "|" + name

    def _member(self, index: int, cls: str, name: str) -> str:
        """`self.name`'s target: the class's own, or (where the class lives in another file, a C++
        method defined outside its class) the name in the files this one includes."""
        if index > 0 or cls in self._class_index or self.scope != "file" or len(self.stems) < 2:
            return f"{cls}.{name}"
        return self._included(f"{self._tail(cls)}.{name}")

    def _tail(self, qname: str) -> str:
        """`qname` without the file's module: as another file (its header) names it, at its end."""
        return qname[len(self.top) + 1:] if qname.startswith(self.top + ".") else qname

    def _included(self, *tails: str) -> str:
        return "&" + ";".join(self.stems) + "|" + ",".join(tails)

    def _local(self, name: str, src: int) -> str | None:
        """The definition `name` names from definition `src`: in an enclosing definition or the file."""
        key = (name, src)
        if key in self._local_cache:
            return self._local_cache[key]
        found = None
        for prefix in self._scopes(src):
            qname = join(prefix, name)
            if qname in self._qnames:
                found = qname
                break
        self._local_cache[key] = found
        return found

    def _scopes(self, src: int) -> list[str]:
        """The qualified prefixes a bare name is looked up in from `src`, innermost first: a class's
        only where the language lets a bare name be a member."""
        found = self._scopes_cache.get(src)
        if found is None:
            found = self._scopes_cache[src] = self._scopes_of(src)
        return found

    def _scopes_of(self, src: int) -> list[str]:
        qname = self.graph.defs[src].qname if src else self.top
        out = []
        while True:
            if self.members or qname not in self.classes:
                out.append(qname)
            if not qname or qname == self.top or "." not in qname:
                break
            qname = qname.rpartition(".")[0]
        if self.top not in out and (not out or out[-1] != ""):
            out.append(self.top)
        return out

    def _package(self, src: int) -> str:
        """The innermost namespace (a module-kind definition) around `src`, else the file's package."""
        defs = self.graph.defs
        while src > 0 and defs[src].kind != "module":
            src = defs[src].parent
        return defs[src].qname if src > 0 else self.top

    def class_of(self, src: int) -> tuple[int, str | None]:
        """The class whose member `src` is (its index, -1 when the file does not define it, and its
        qualified name): a class around it, a method's qualifier (`Shape::grow`, an impl's type)."""
        found = self._class_cache.get(src)
        if found is None:
            found = self._class_cache[src] = self._class_of(src)
        return found

    def _class_of(self, src: int) -> tuple[int, str | None]:
        defs = self.graph.defs
        while src > 0:
            d = defs[src]
            if d.kind == "class":
                return src, d.qname
            if d.kind == "method" and d.parent >= 0:
                prefix = d.qname.rpartition(".")[0]
                if defs[d.parent].kind == "class" and defs[d.parent].qname == prefix:
                    return d.parent, prefix
                if prefix in self.classes:
                    return self._class_index.get(prefix, -1), prefix
            src = d.parent
        return 0, None

    def _var_type(self, src: int, var: str) -> str | None:
        """The declared type of `var` as seen from `src`: its own, an enclosing one's, its class's field."""
        index = src
        while True:
            found = self.var_types.get((index, var))
            if found:
                return found
            if index <= 0:
                break
            index = self.graph.defs[index].parent
        cls, _ = self.class_of(src)
        return self.var_types.get((cls, var)) if cls > 0 else None
