"""Split source files into retrieval chunks along syntax boundaries.

The approach follows Continue's code chunker: a file that fits the budget is
one chunk; otherwise definitions (classes, functions, ...) become chunks, a
class that is too big is shown collapsed (member bodies replaced by ``...``)
and its members become chunks of their own.  Unlike Continue, code outside
definitions is kept (as "module" chunks) and structured formats get their own
splitting (see :mod:`codeasst.index.structured`).  Anything unknown, or any
failure, falls back to overlapping line windows: chunking must never stop
indexing.

Language specifics (file names, node types) live in ``languages.toml``.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import re
import tomllib
from dataclasses import dataclass
from functools import cache
from typing import Any

from codeasst.index import attributes, grammars, tags
from codeasst.index.grammars import module_name
from codeasst.index.structured import Lines, data_spans, markdown_spans, pack, sql_spans, windows
from codeasst.index.structured import node_rows as _rows

# Bump whenever a change here or in structured.py changes the chunks produced. 2: a collapsed class's
# attributes as extra_words. 3: also in the languages the graph reads through a query file.
ALGORITHM_VERSION = "3"


@dataclass(frozen=True)
class Chunk:
    path: str
    language: str
    start_line: int
    end_line: int
    kind: str
    name: str
    text: str
    # More words for the lexical index only, neither embedded nor shown (so no vector changes): a collapsed
    # class's attributes set where its text shows no more (`timeout: Default timeout, in seconds, ...`).
    extra_words: str = ""


@dataclass(frozen=True)
class _Lang:
    format: str
    grammar: str
    class_types: frozenset[str]
    namespace_types: frozenset[str]
    function_types: frozenset[str]
    wrapper_types: frozenset[str]
    leading_types: frozenset[str]
    name_fields: tuple[str, ...]
    name_leaf_types: frozenset[str]
    name_child_types: frozenset[str]
    receiver_field: str
    body_types: frozenset[str]
    default_names: dict[str, str]


@cache
def _table() -> tuple[dict[str, _Lang], dict[str, str], dict[str, str]]:
    """(languages by name, language by extension, language by file name)."""
    langs, by_ext, by_file = {}, {}, {}
    for name, t in tomllib.loads(grammars.table_bytes().decode("utf-8")).items():
        sets = {k: frozenset(t.get(k, ())) for k in _Lang.__dataclass_fields__ if k.endswith("_types")}
        langs[name] = _Lang(
            format=t.get("format", "code"),
            grammar=t.get("grammar", name),
            name_fields=tuple(t.get("name_fields", ("name",))),
            receiver_field=t.get("receiver_field", ""),
            default_names=dict(t.get("default_names", {})),
            **sets,
        )
        by_ext.update(dict.fromkeys(t.get("extensions", ()), name))
        by_file.update(dict.fromkeys(t.get("filenames", ()), name))
    return langs, by_ext, by_file


def language_for(path: str) -> str | None:
    base = path.replace("\\", "/").rsplit("/", 1)[-1]
    _, by_ext, by_file = _table()
    if base in by_file:
        return by_file[base]
    dot = base.rfind(".")
    return by_ext.get(base[dot:].lower()) if dot > 0 else None


def grammar_for(path: str) -> str | None:
    """The tree-sitter grammar of a code file's language; None for other files."""
    language = language_for(path)
    if language is None:
        return None
    spec = _table()[0][language]
    return spec.grammar if spec.format == "code" else None


def _fingerprint(table: bytes, grammars: str = "") -> str:
    digest = hashlib.sha256(f"{ALGORITHM_VERSION}\0{grammars}\0".encode() + table)
    return digest.hexdigest()[:16]


def chunker_fingerprint() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:  # grammar updates change node types and therefore chunks
        grammars = version("tree-sitter-language-pack")
    except PackageNotFoundError:
        grammars = ""
    return _fingerprint(_chunking_table(), grammars)


def _chunking_table() -> bytes:
    """The part of languages.toml that makes chunks: not the code graph's keys or the outline's table,
    which change no chunk (a change there must not rebuild everyone's index)."""
    tables = tomllib.loads(grammars.table_bytes().decode("utf-8"))
    kept = {name: {k: v for k, v in t.items() if k != "outline" and not k.startswith("graph")}
            for name, t in tables.items()}
    return json.dumps(kept, sort_keys=True).encode("utf-8")


def _text(node: Any) -> str:
    return " ".join((node.text or b"").decode("utf-8", "replace").split())


def _name_field(lang: _Lang, node: Any) -> Any | None:
    return next((c for f in lang.name_fields if (c := node.child_by_field_name(f)) is not None), None)


def _resolve(lang: _Lang, node: Any, depth: int = 0) -> str:
    """Follow name fields down to the identifier (C: pointer_declarator > function_declarator > identifier)."""
    if node.type in lang.name_leaf_types or node.named_child_count == 0 or depth > 8:
        return _text(node)
    child = _name_field(lang, node)
    if child is None and node.type.endswith("declarator"):  # C++ reference_declarator has no field
        child = next((c for c in node.named_children if c.type != "parameter_list"), None)
    return _resolve(lang, child, depth + 1) if child is not None else _text(node)


def _own_name(lang: _Lang, node: Any) -> str | None:
    if node.type in lang.default_names:
        return lang.default_names[node.type]
    child = _name_field(lang, node)
    if child is not None:
        return _resolve(lang, child)
    child = next((c for c in node.named_children if c.type in lang.name_child_types), None)
    return _text(child) if child is not None else None


def definition_name(grammar: str, node: Any) -> str | None:
    """A definition node's own name, as the chunker reads it (a name field, C's declarator chain,
    Kotlin's first identifier); None where it has none or the grammar is no language's."""
    lang = next((lang for lang in _table()[0].values() if lang.grammar == grammar), None)
    return _own_name(lang, node) if lang is not None else None


@dataclass
class _Def:
    inner: Any  # the definition node (inside any wrappers)
    start: int  # rows, including wrappers and leading comments
    end: int
    name: str
    qualified: bool  # name carries its owner (Go receiver, C++ A::f): a method


_Piece = tuple[int, int, str, str, str | None, str]  # start, end, kind, name, text override, extra words


class _CodeChunker:
    def __init__(self, lang: _Lang, src: bytes, lines: Lines, module: str, max_chars: int, overlap: int,
                 path: str = ""):
        self.lang, self.src, self.lines, self.module = lang, src, lines, module
        self.max_chars, self.overlap = max_chars, overlap
        self.out: list[_Piece] = []
        self._line_starts: list[int] | None = None
        self.path = path

    def run(self, root: Any) -> list[_Piece]:
        defs, breaks = self._scan(root.named_children)
        self._gaps(0, len(self.lines) - 1, defs, breaks, "module", self.module)
        for d in defs:
            self._emit(d, [self.module], in_class=False)
        return self.out

    # --- finding definitions ---

    def _as_def(self, node: Any) -> Any | None:
        lang = self.lang
        if node.type in lang.class_types or node.type in lang.function_types:
            return node
        if node.type in lang.namespace_types:
            return node if self._body(node) is not None else None
        if node.type in lang.wrapper_types:
            found = [d for c in node.named_children if (d := self._as_def(c)) is not None]
            return found[0] if len(found) == 1 else None
        return None

    def _scan(self, nodes: list[Any]) -> tuple[list[_Def], list[int]]:
        """Definitions among ``nodes``, looking inside non-definitions only when they are too big to keep whole."""
        defs: list[_Def] = []
        breaks: list[int] = []
        for i, node in enumerate(nodes):
            inner = self._as_def(node)
            start, end = _rows(node)
            if inner is None:
                breaks.append(start)
                if node.named_child_count and self.lines.size(start, end) > self.max_chars:
                    sub_defs, sub_breaks = self._scan(node.named_children)
                    defs += sub_defs
                    breaks += sub_breaks
                continue
            j = i - 1
            while j >= 0 and nodes[j].type in self.lang.leading_types and _rows(nodes[j])[1] >= start - 1:
                row, col = nodes[j].start_point
                if self.lines.rows[row][:col].strip():
                    break  # a trailing comment of the code before it
                start, j = row, j - 1
            name, qualified = self._name(node, inner)
            defs.append(_Def(inner, start, end, name, qualified))
        return defs, sorted(breaks)

    def _body(self, node: Any) -> Any | None:
        body = node.child_by_field_name("body")
        if body is None and self.lang.body_types:
            body = next((c for c in node.named_children if c.type in self.lang.body_types), None)
        return body

    # --- names ---

    def _name(self, outer: Any, inner: Any) -> tuple[str, bool]:
        node, name = inner, None
        while name is None:  # anonymous functions borrow the name of their wrapper
            name = _own_name(self.lang, node)
            if node.id == outer.id or node.parent is None:
                break
            node = node.parent
        name = name or "<anonymous>"
        qualified = "::" in name.strip(":")
        receiver = inner.child_by_field_name(self.lang.receiver_field) if self.lang.receiver_field else None
        owner = self._type_name(receiver) if receiver is not None else None
        if owner:
            name, qualified = f"{owner}.{name}", True
        return name.replace("::", ".").replace("\\", ".").strip("."), qualified

    def _type_name(self, node: Any) -> str | None:
        if node.type == "type_identifier":
            return _text(node)
        return next((t for c in node.named_children if (t := self._type_name(c))), None)

    # --- emitting ---

    def _add(self, start: int, end: int, kind: str, name: str, text: str | None = None, words: str = "") -> None:
        self.out.append((start, end, kind, name, text, words))

    def _emit(self, d: _Def, scope: list[str], in_class: bool) -> None:
        lang, inner = self.lang, d.inner
        container = inner.type in lang.class_types or inner.type in lang.namespace_types
        kind = "class" if container else "method" if in_class or d.qualified else "function"
        name = ".".join([*scope, d.name])
        if self.lines.size(d.start, d.end) <= self.max_chars:
            self._add(d.start, d.end, kind, name)
            return
        body = self._body(inner)
        nodes = (body if body is not None else inner).named_children
        while len(nodes) == 1 and nodes[0].named_child_count and self._as_def(nodes[0]) is None:
            nodes = nodes[0].named_children  # Go block > statement_list, Kotlin function_body > statements
        members, breaks = self._scan(nodes)
        inner_scope = [*scope, d.name]
        if container:
            text, shown_until = self._collapse(d, members)
            self._add(d.start, d.end, kind, name, text, self._attribute_words(inner, shown_until, members))
            # Class-level code that did not fit in the collapsed form must not be lost.
            self._gaps(shown_until + 1, d.end, members, breaks, kind, name)
        elif members:
            self._gaps(d.start, d.end, members, breaks, kind, name)
        else:
            for s, e in windows(self.lines, d.start, d.end, self.max_chars, self.overlap):
                self._add(s, e, kind, name)
        for m in members:
            self._emit(m, inner_scope, in_class=container and inner.type in lang.class_types)

    def _attribute_words(self, class_node: Any, shown_until: int, members: list[_Def]) -> str:
        """The attributes a collapsed class's text no longer shows, with their docs (index/attributes.py):
        a search for what an attribute is for finds its class, with no chunk of its own to embed."""
        grammar = self.lang.grammar
        if grammar in attributes.GRAMMARS:
            return attributes.class_words(grammar, self.src, class_node, shown_until)
        if not tags.reads(grammar) or not self._declares_past(shown_until, class_node.end_point[0], members):
            return ""
        # Java, Rust, C#, ...: the fields the graph's query file defines in the class, with their docs
        return tags.class_words(self.path, grammar, self.src, class_node, shown_until)

    def _declares_past(self, shown_until: int, last: int, members: list[_Def]) -> bool:
        """Whether a row after `shown_until` (and before the class's last) is neither a member's nor
        blank: only there can a field the collapsed text does not show be declared."""
        covered = sorted((m.start, m.end) for m in members if m.end > shown_until)
        row, i = shown_until + 1, 0
        while row < last:
            while i < len(covered) and covered[i][1] < row:
                i += 1
            if i < len(covered) and covered[i][0] <= row:
                row = covered[i][1] + 1
                continue
            if self.lines.rows[row].strip():
                return True
            row += 1
        return False

    def _gaps(self, start: int, end: int, defs: list[_Def], breaks: list[int], kind: str, name: str) -> None:
        """Chunk the rows of ``start..end`` that no definition covers."""
        runs, cur = [], start
        for d in sorted(defs, key=lambda d: d.start):
            if d.start > cur:
                runs.append((cur, min(d.start - 1, end)))
            cur = max(cur, d.end + 1)
        runs.append((cur, end))
        lines = self.lines
        for run_start, run_end in runs:
            for s, e in pack(lines, run_start, run_end, self.max_chars, breaks):
                s, e = lines.trim(s, e, lambda r: bool(lines.rows[r].strip()))
                if s <= e and any(lines.wordy(r) for r in range(s, e + 1)):
                    self._add(s, e, kind, name)

    def _collapse(self, d: _Def, members: list[_Def]) -> tuple[str, int]:
        """The definition with member bodies replaced by ``...``, cut to fit; also the last row it shows."""
        if self._line_starts is None:
            self._line_starts = [0] + [m.end() for m in re.finditer(b"\n", self.src)]
        starts = self._line_starts
        lo = starts[d.start]
        hi = starts[d.end + 1] - 1 if d.end + 1 < len(starts) else len(self.src)
        pieces: list[tuple[bytes, int | None]] = []
        pos = lo
        for m in sorted(members, key=lambda m: m.inner.start_byte):
            body = self._body(m.inner)
            if body is None or body.start_byte < pos or body.end_byte > hi:
                continue
            pieces += [(self.src[pos : body.start_byte], pos), (_stub(self.src[body.start_byte :][:2]), None)]
            # Indentation-based bodies can end after the newline; keep that newline.
            pos = body.start_byte + len(self.src[body.start_byte : body.end_byte].rstrip())
        pieces.append((self.src[pos:hi], pos))

        member_rows = sorted((m.start, m.end) for m in members)
        member_starts = [s for s, _ in member_rows]
        out: list[str] = []
        cuts: list[tuple[int, int]] = []  # (offset of a newline in the output, its source row)
        length = 0
        for raw, at in pieces:
            chunk = raw.decode("utf-8", "replace")
            if at is not None:
                row, k = bisect.bisect_right(starts, at) - 1, chunk.find("\n")
                while k >= 0:
                    i = bisect.bisect_right(member_starts, row) - 1
                    if i < 0 or row >= member_rows[i][1]:  # never cut inside a member
                        cuts.append((length + k, row))
                    row, k = row + 1, chunk.find("\n", k + 1)
            out.append(chunk)
            length += len(chunk)
        text = "".join(out)
        if len(text) <= self.max_chars:
            return text, d.end
        first = members[0].start if members else min(d.start + 1, d.end)
        indent = re.match(r"[ \t]*", self.lines.rows[first]).group()
        fitting = [(off, row) for off, row in cuts if off + len(indent) + 4 <= self.max_chars]
        if not fitting:
            return text[: self.max_chars], d.start
        off, row = fitting[-1]
        return f"{text[:off].rstrip()}\n{indent}...", row


def _stub(head: bytes) -> bytes:
    """What replaces a collapsed body, keeping its opening token so the signature still reads right."""
    for prefix, stub in ((b"{", b"{ ... }"), (b"=>", b"=> ..."), (b"=", b"= ...")):
        if head.startswith(prefix):
            return stub
    return b"..."


def _structure(path: str, text: str, lang: _Lang, lines: Lines, max_chars: int, overlap: int) -> list[Any] | None:
    module = module_name(path)
    if lang.format == "code":
        src = text.encode("utf-8", "surrogatepass")
        chunker = _CodeChunker(lang, src, lines, module, max_chars, overlap, path)
        return chunker.run(grammars.parse(lang.grammar, src).root_node)
    if lang.format in ("yaml", "json"):
        root = grammars.parse(lang.grammar, text.encode("utf-8", "surrogatepass")).root_node
        return data_spans(root, lines, module, max_chars, overlap)
    if lang.format == "sql":
        return sql_spans(text, lines, module, max_chars, overlap)
    if lang.format == "markdown":
        return markdown_spans(lines, module, max_chars, overlap)
    return None


def _pieces(path: str, text: str, lang: _Lang | None, lines: Lines, max_chars: int, overlap: int) -> list[_Piece]:
    module, last = module_name(path), len(lines) - 1
    if lines.size(0, last) <= max_chars:
        return [(0, last, "file", module, None, "")]
    spans = None
    # Minified or generated files keep all structure on a few lines: chunks would only repeat those lines.
    long_chars = sum(len(r) for r in lines.rows if len(r) > max_chars)
    if lang is not None and long_chars * 2 <= len(text):
        try:
            spans = _structure(path, text, lang, lines, max_chars, overlap)
        except Exception:  # noqa: BLE001 - a grammar quirk or deep recursion must not stop indexing
            spans = None
    if not spans:
        spans = [(s, e, "window", module) for s, e in windows(lines, 0, last, max_chars, overlap)]
    return [(*s, None, "") if len(s) == 4 else s for s in spans]


def fell_back(path: str, chunks: list[Chunk]) -> bool:
    """Whether a file whose language has a grammar was cut into plain line windows instead
    (the parse failed, found nothing to split along, or the file is minified)."""
    name = language_for(path)
    return name in _table()[0] and any(c.kind == "window" for c in chunks)


def chunk_file(path: str, text: str, max_chars: int = 1500, overlap_lines: int = 5) -> list[Chunk]:
    max_chars, overlap_lines = max(1, int(max_chars)), max(0, int(overlap_lines))
    if not text.strip():
        return []
    name = language_for(path)
    lines = Lines(text)
    pieces = _pieces(path, text, _table()[0].get(name) if name else None, lines, max_chars, overlap_lines)
    pieces.sort(key=lambda p: (p[0], -p[1]))

    chunks: list[Chunk] = []
    cut_rows: set[int] = set()  # a row longer than max_chars is emitted once, whoever covers it
    language = name or "text"
    for start, end, kind, cname, override, words in pieces:
        if override is not None:
            chunks.append(Chunk(path, language, start + 1, end + 1, kind, cname, override[:max_chars], words))
            continue
        fits = lines.size(start, end) <= max_chars
        for s, e in [(start, end)] if fits else windows(lines, start, end, max_chars, 0):
            body = lines.text(s, e)
            if len(body) <= max_chars:
                if body.strip():
                    chunks.append(Chunk(path, language, s + 1, e + 1, kind, cname, body))
            elif s not in cut_rows:
                cut_rows.add(s)
                for i in range(0, len(body), max_chars):
                    chunks.append(Chunk(path, language, s + 1, s + 1, kind, cname, body[i : i + max_chars]))
    return chunks
