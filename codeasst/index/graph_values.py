"""Attributes, constants and where they are read, for the hand-written extractor
(codeasst.index.graph_hand): attributes (`self.timeout = 30`, class attributes, dataclass fields,
TypeScript fields, Go struct fields) and module constants become definitions after the file's functions
and classes, and a `read` edge goes from each definition that reads one to it, once per reading
definition."""

from __future__ import annotations

import re
from typing import Any

from codeasst.index import attributes
from codeasst.index.graphmodel import Def, Edge, FileGraph, first_sentence
from codeasst.index.graphmodel import node_text as _text


class ValuesMixin:
    """The part of the extractor that reads values; the extractor gives the state named below, and its
    _enclosing, _class_of and _target."""

    graph: FileGraph
    grammar: str
    src: bytes
    dir: str
    nodes: list[Any]
    receivers: dict[int, tuple[str, str]]

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
