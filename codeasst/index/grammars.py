"""What every reader of source code in the index shares, below them all: the languages table
(`languages.toml`) as its bytes, one tree-sitter parser per grammar, and a file's module name. The
chunker, the code graph's engines and the outline import this; it imports none of them, so the
chunker may read the graph's definitions (a class chunk's attributes) without an import cycle."""

from __future__ import annotations

import threading
from importlib.resources import files
from typing import Any


def table_bytes() -> bytes:
    """languages.toml as shipped (tests replace this function to add a language)."""
    return files("codeasst.index").joinpath("languages.toml").read_bytes()


PARSERS: dict[str, Any] = {}
# One parser per grammar is shared, and a tree-sitter parser is not re-entrant.
_PARSE_LOCK = threading.Lock()


def parse(grammar: str, src: bytes) -> Any:
    with _PARSE_LOCK:
        parser = PARSERS.get(grammar)
        if parser is None:
            from tree_sitter_language_pack import get_parser  # heavy: only when a file is parsed

            parser = PARSERS[grammar] = get_parser(grammar)
        return parser.parse(src)


def module_name(path: str) -> str:
    """``src/pkg/server.py`` -> ``pkg.server``; ``pkg/__init__.py`` -> ``pkg``."""
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts:
        return "<anonymous>"
    dot = parts[-1].rfind(".")
    if dot > 0:
        parts[-1] = parts[-1][:dot]
    if len(parts) > 1 and parts[0] == "src":
        parts = parts[1:]
    if len(parts) > 1 and parts[-1] in ("__init__", "index", "mod"):
        parts.pop()
    return ".".join(parts)
