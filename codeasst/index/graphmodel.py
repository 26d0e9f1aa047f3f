"""What the code graph holds for one file (codeasst.index.graph): its definitions and the edges leaving
them, as both extractors (the hand-written one and the query engine) produce them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple


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


# A tuple, not a frozen dataclass: a Java repository's graph makes tens of thousands, and a frozen
# dataclass is slow to build (3 % of jsoup's graph build).
class Edge(NamedTuple):
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
    # (class, field, the field's declared type): `Cart.pricer` is a `shop.Pricer`, so `cart.pricer.price()`
    # is Pricer's price wherever `cart` is known to be a Cart
    member_types: list[tuple[str, str, str]] = field(default_factory=list)



def node_text(src: bytes, node: Any) -> str:
    return src[node.start_byte:node.end_byte].decode("utf-8", "replace")


def first_sentence(text: str, limit: int = 160) -> str:
    words = " ".join(text.split())
    for end in (". ", ".\n"):
        cut = words.find(end)
        if 0 < cut < limit:
            return words[:cut + 1]
    return words if len(words) <= limit else words[:limit - 1].rstrip() + "…"



def walk(node: Any):
    if node is None:
        return
    yield node
    for child in node.named_children:
        yield from walk(child)
