"""The code graph of one file: its definitions, and the edges leaving them (calls, inheritance,
imports, what is raised and returned), read with tree-sitter.

Which languages the graph reads is data: a `graph = true` in the language's table of
`languages.toml`. Python, TypeScript/TSX, JavaScript and Go are read by hand-written code
(codeasst.index.graph_hand); every other language by one engine over the language's query file,
`queries/<grammar>.scm` (codeasst.index.tags), so a new language is a table and a query file.

Each edge names its target as the file wrote it (`name`, the last part) and, where the file's own
imports and definitions say what that is, as a qualified name (`target`). A call the file cannot
place keeps only its name: the graph counts it as unresolved instead of guessing. Following a
re-export, an inherited method, a field's declared type or an include across files happens when the
graph is read (codeasst.index.graphdb), so a change to one file never makes another file's edges stale.

Forms of `target`: a dotted name; `^C.m` for `super().m` inside class C (a base's m, not C's);
`@DIR/NAME` for Go, whose package is a directory (`@*PATH/NAME`: any directory ending in an
import path); `&STEM;STEM|NAME` for C and C++, a NAME (a dotted tail of a qualified name) defined
in a file whose path without its suffix ends with one of the STEMs: the file itself and what it
`#include`s; `*MOD;MOD|NAME`, NAME in the first of the modules MOD that defines it (the file's package,
then what it imports whole: `use a::*`, `import a.b.*`, C#'s `using A.B;`).
"""

from __future__ import annotations

import re
import tomllib
from functools import cache

from codeasst.index import chunker, grammars, graph_hand, tags
from codeasst.index.graphmodel import Def, Edge, FileGraph, first_sentence

__all__ = [
    "GRAPH_LANGUAGES",
    "Def",
    "Edge",
    "FileGraph",
    "extract",
    "first_sentence",
    "graph_language",
    "graph_languages",
    "graph_version",
]

# Bump whenever what is extracted changes: the graph is rebuilt. 6: attributes, constants, reads.
# 7: Rust, Java, C++, C, C# and more through the query engine. 8: Scala package objects, operator
# methods, anonymous classes' methods; C# 14 extension blocks are no constructors, their functions the
# class's methods; Swift's enum cases; the declared types of classes' fields (a call through a field).
# 9: a variable whose initializer constructs a type (`val x = Foo(..)`, `var x = new Foo()`) has it.
GRAPH_VERSION = "9"


def graph_version() -> str:
    """GRAPH_VERSION and the grammars' version: a grammar update renames node types."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"{GRAPH_VERSION}/{version('tree-sitter-language-pack')}"
    except PackageNotFoundError:
        return GRAPH_VERSION


@cache
def graph_languages() -> frozenset[str]:
    """The grammars the graph reads: those whose table in languages.toml says `graph = true`."""
    table = tomllib.loads(grammars.table_bytes().decode("utf-8"))
    return frozenset(t.get("grammar", name) for name, t in table.items() if t.get("graph") is True)


# The grammars of the table codeasst ships (graph_languages() reads the table in use).
GRAPH_LANGUAGES = graph_languages()


def graph_language(path: str) -> str | None:
    grammar = chunker.grammar_for(path)
    return grammar if grammar in graph_languages() else None


def extract(path: str, text: str) -> FileGraph | None:
    """The graph of one file; None for a language the graph does not read."""
    grammar = graph_language(path)
    if grammar is None:
        return None
    if grammar in graph_hand.HAND_GRAMMARS:
        return graph_hand.extract(path, grammar, text)
    if grammar == "c" and "cpp" in graph_languages() and _CPP_HEADER.search(text):
        grammar = "cpp"  # a C++ header named .h: C's grammar reads none of its classes or namespaces
    return tags.extract(path, grammar, text)


# What C never has and a C++ header nearly always does: a class, a namespace, a template, a `::`.
_CPP_HEADER = re.compile(r"^\s*(?:class|namespace|template)\b|\w::\w", re.MULTILINE)
