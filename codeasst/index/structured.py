"""Line utilities and chunking of formats without definitions (YAML, JSON, SQL, Markdown).

Everything here works on 0-based row spans ``(start_row, end_row, kind, name)``;
:mod:`codeasst.index.chunker` turns spans into chunks, so the exact-slice
invariant (a chunk's text is its lines) is kept in one place.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence

Span = tuple[int, int, str, str]

_WORD = re.compile(r"\w")


class Lines:
    """A text split on ``\\n`` only, because tree-sitter counts rows that way."""

    def __init__(self, text: str) -> None:
        rows = text.split("\n")
        if len(rows) > 1 and rows[-1] == "":
            rows.pop()
        self.rows = rows
        self._off = [0]
        for row in rows:
            self._off.append(self._off[-1] + len(row) + 1)

    def __len__(self) -> int:
        return len(self.rows)

    def size(self, start: int, end: int) -> int:
        return self._off[end + 1] - self._off[start] - 1

    def text(self, start: int, end: int) -> str:
        return "\n".join(self.rows[start : end + 1])

    def wordy(self, row: int) -> bool:
        return _WORD.search(self.rows[row]) is not None

    def trim(self, start: int, end: int, keep: Callable[[int], bool] | None = None) -> tuple[int, int]:
        """Shrink a span past rows that carry nothing (blank, or no word character)."""
        keep = keep or self.wordy
        while start <= end and not keep(start):
            start += 1
        while end >= start and not keep(end):
            end -= 1
        return start, end


def pack(lines: Lines, start: int, end: int, max_chars: int, breaks: Sequence[int] = ()) -> list[tuple[int, int]]:
    """Greedy, non-overlapping line groups; prefer to cut right before a row in ``breaks``.

    ``breaks`` must be sorted.  A cut at a break is only taken when the group
    keeps at least half the budget, so a break right after the start does not
    produce a sliver.
    """
    out = []
    cur = start
    while cur <= end:
        stop = _furthest(lines, cur, end, max_chars)
        if stop < end:
            i = bisect.bisect_right(breaks, stop + 1) - 1
            if i >= 0 and cur < breaks[i] and lines.size(cur, breaks[i] - 1) >= max_chars // 2:
                stop = breaks[i] - 1
        out.append((cur, stop))
        cur = stop + 1
    return out


def _furthest(lines: Lines, cur: int, end: int, max_chars: int) -> int:
    """The last line, from `cur` up to `end`, that a window starting at `cur` holds within `max_chars`
    (`cur` itself at least)."""
    stop = cur
    while stop < end and lines.size(cur, stop + 1) <= max_chars:
        stop += 1
    return stop


def windows(lines: Lines, start: int, end: int, max_chars: int, overlap: int) -> list[tuple[int, int]]:
    """Line windows of at most ``max_chars`` that repeat up to ``overlap`` lines of the previous one."""
    out = []
    cur = start
    while cur <= end:
        stop = _furthest(lines, cur, end, max_chars)
        out.append((cur, stop))
        if stop >= end:
            break
        # Never overlap more than half a window, or long lines would make every
        # row appear in many windows.
        cur = max(stop + 1 - min(overlap, (stop - cur + 1) // 2), cur + 1)
    return out


def _spans(pieces: list[tuple[int, int]], kind: str, name: str) -> list[Span]:
    return [(s, e, kind, name) for s, e in pieces]


# --- YAML / JSON -------------------------------------------------------------

_MAPPINGS = {"block_mapping", "flow_mapping", "object"}
_SEQUENCES = {"block_sequence", "flow_sequence", "array"}
_PAIRS = {"block_mapping_pair", "flow_pair", "pair"}
_WRAPPERS = {"stream", "document", "block_node", "flow_node", "block_sequence_item"}


def _collections(node) -> list:
    """The mapping/sequence nodes at the top of a YAML stream or JSON document."""
    if node.type in _MAPPINGS or node.type in _SEQUENCES:
        return [node]
    if node.type in _WRAPPERS:
        return [c for child in node.named_children for c in _collections(child)]
    return []


def _entries(coll, prefix: str) -> list[tuple[object, str, object]]:
    """(node, name, value) for each key of a mapping or item of a sequence."""
    out = []
    if coll.type in _MAPPINGS:
        for pair in coll.named_children:
            if pair.type in _PAIRS:
                key = pair.child_by_field_name("key")
                label = key.text.decode("utf-8", "replace").strip().strip("\"'") if key else "<anonymous>"
                out.append((pair, f"{prefix}.{label}", pair.child_by_field_name("value")))
    else:
        items = [c for c in coll.named_children if c.type != "comment"]
        out = [(item, f"{prefix}[{i}]", item) for i, item in enumerate(items)]
    return out


def node_rows(node) -> tuple[int, int]:
    """First and last row of a tree-sitter node."""
    end = node.end_point[0]
    if node.end_point[1] == 0 and end > node.start_point[0]:
        end -= 1  # nodes that swallow their newline (C preprocessor, YAML) end on the row before
    return node.start_point[0], end


def _partition(entries, lines: Lines, lo: int, hi: int, max_chars: int, overlap: int, depth: int) -> list[Span] | None:
    """Give each entry the rows since the previous one (so comments above a key stay with it)."""
    rows = [node_rows(node) for node, _, _ in entries]
    if any(rows[i][0] <= rows[i - 1][1] for i in range(1, len(rows))):
        return None  # several entries per line (flow style): rows cannot separate them
    spans: list[Span] = []
    prev = lo - 1
    for i, ((node_s, node_e), (_, name, value)) in enumerate(zip(rows, entries, strict=True)):
        last = i == len(rows) - 1
        s, e = prev + 1, max(hi, node_e) if last else node_e
        while s < node_s and not lines.wordy(s):
            s += 1
        while e > node_e and not lines.wordy(e):
            e -= 1
        prev = node_e
        if lines.size(s, e) <= max_chars:
            spans.append((s, e, "key", name))
            continue
        if depth == 0 and value is not None:
            children = [x for c in _collections(value) for x in _entries(c, name)]
            sub = _partition(children, lines, s, e, max_chars, overlap, 1) if children else None
            if sub:
                spans.extend(sub)
                continue
        spans.extend(_spans(windows(lines, s, e, max_chars, overlap), "key", name))
    return spans


def data_spans(root, lines: Lines, module: str, max_chars: int, overlap: int) -> list[Span] | None:
    """YAML/JSON: one span per top-level key (or sequence item); None if there is no structure."""
    if root.has_error:
        return None
    entries = [x for c in _collections(root) for x in _entries(c, module)]
    if not entries:
        return None
    return _partition(entries, lines, 0, len(lines) - 1, max_chars, overlap, 0)


# --- SQL -----------------------------------------------------------------------

_DOLLAR = re.compile(r"\$[A-Za-z_]*\$")
_QUOTES = re.compile(r"[\"`\[\]]")
_SQL_NAME = r"((?:[\w$]+|\"[^\"]+\"|`[^`]+`|\[[^\]]+\])(?:\.(?:[\w$]+|\"[^\"]+\"|`[^`]+`|\[[^\]]+\]))*)"
_SQL_PATTERNS = [
    re.compile(
        r"(create|alter|drop)\s+(?:or\s+replace\s+)?"
        r"(?:(?:temp|temporary|unique|materialized|unlogged|global|local|virtual|recursive|external)\s+)*"
        r"(\w+)\s+(?:if\s+(?:not\s+)?exists\s+)?(?:concurrently\s+)?" + _SQL_NAME,
        re.IGNORECASE,
    ),
    re.compile(r"(insert)\s+(into)\s+" + _SQL_NAME, re.IGNORECASE),
    re.compile(r"(delete)\s+(from)\s+" + _SQL_NAME, re.IGNORECASE),
    re.compile(r"(update)()\s+(?:only\s+)?" + _SQL_NAME, re.IGNORECASE),
]


def _split_sql(text: str) -> list[tuple[int, str]]:
    """(end_row, code without comments) per statement; quotes, comments and $$ bodies are skipped."""
    out: list[tuple[int, str]] = []
    code: list[str] = []
    row = i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "-" and text.startswith("--", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if ch == "/" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            row += text.count("\n", i, j)
            i = j
            code.append(" ")
            continue
        if ch in "'\"`" or ch == "$" and _DOLLAR.match(text, i):
            close = _DOLLAR.match(text, i).group() if ch == "$" else ch
            j = text.find(close, i + len(close))
            j = n if j < 0 else j + len(close)
            code.append(text[i:j])
            row += text.count("\n", i, j)
            i = j
            continue
        if ch == "\n":
            row += 1
        code.append(ch)
        i += 1
        if ch == ";":
            out.append((row, "".join(code)))
            code = []
    if "".join(code).strip():
        out.append((row, "".join(code)))
    return out


def _sql_name(code: str) -> str:
    code = " ".join(code.split())
    for pattern in _SQL_PATTERNS:
        m = pattern.match(code)
        if m:
            verb = "_".join(w.lower() for w in (m.group(1), m.group(2)) if w)
            return f"{verb} {_QUOTES.sub('', m.group(3))}"
    m = re.match(r"\w+", code)
    return m.group().lower() if m else "statement"


def sql_spans(text: str, lines: Lines, module: str, max_chars: int, overlap: int) -> list[Span] | None:
    statements = [(row, code) for row, code in _split_sql(text) if code.strip(" \t\r\n;")]
    if not statements:
        return None
    spans: list[Span] = []
    prev = -1
    for i, (end, code) in enumerate(statements):
        if end <= prev:  # a second statement on the row that ended the previous one
            continue
        if i == len(statements) - 1:
            end = len(lines) - 1
        s, e = lines.trim(prev + 1, end, lambda r: bool(lines.rows[r].strip()))
        prev = end
        if s > e:
            continue
        name = f"{module}.{_sql_name(code)}"
        spans.extend(_spans(windows(lines, s, e, max_chars, overlap), "statement", name))
    return spans


# --- Markdown --------------------------------------------------------------------

_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t#]*$")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*$")


def _headings(lines: Lines) -> tuple[list[tuple[int, int, str]], list[int]]:
    """(row, level, title) of each heading outside code fences, and paragraph start rows."""
    heads: list[tuple[int, int, str]] = []
    paragraphs: list[int] = []
    fence = ""
    start = 0
    if lines.rows and lines.rows[0].strip() == "---":  # front matter is not a setext underline
        for r in range(1, len(lines)):
            if lines.rows[r].strip() in ("---", "..."):
                start = r + 1
                break
    prev_text = False
    for r in range(start, len(lines)):
        row = lines.rows[r]
        m = _FENCE.match(row)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = ""
            continue
        if m:
            fence = m.group(1)
            paragraphs.append(r)
            prev_text = False
            continue
        if not row.strip():
            prev_text = False
            continue
        atx = _ATX.match(row)
        setext = _SETEXT.match(row)
        if atx:
            heads.append((r, len(atx.group(1)), (atx.group(2) or "").strip()))
            prev_text = False
        elif setext and prev_text and (not heads or heads[-1][0] != r - 1):
            heads.append((r - 1, 1 if "=" in row else 2, lines.rows[r - 1].strip()))
            if paragraphs and paragraphs[-1] == r - 1:
                paragraphs.pop()
            prev_text = False
        else:
            if not prev_text:
                paragraphs.append(r)
            prev_text = True
    return heads, paragraphs


def markdown_spans(lines: Lines, module: str, max_chars: int, overlap: int) -> list[Span]:
    heads, paragraphs = _headings(lines)
    spans: list[Span] = []

    def body(s: int, e: int, name: str) -> None:
        s, e = lines.trim(s, e, lambda r: bool(lines.rows[r].strip()))
        if s > e:
            return
        if lines.size(s, e) <= max_chars:
            spans.append((s, e, "section", name))
            return
        for ps, pe in pack(lines, s, e, max_chars, paragraphs):
            ps, pe = lines.trim(ps, pe, lambda r: bool(lines.rows[r].strip()))
            if ps > pe:
                continue
            if lines.size(ps, pe) <= max_chars:
                spans.append((ps, pe, "section", name))
            else:
                spans.extend(_spans(windows(lines, ps, pe, max_chars, overlap), "section", name))

    def section(s: int, e: int, level: int, path: list[str], inner: list[tuple[int, int, str]]) -> None:
        name = f"{module}.{' > '.join(path)}" if path else module
        if not inner or lines.size(s, e) <= max_chars:
            body(s, e, name)
            return
        top = min(h[1] for h in inner)
        subs = [h for h in inner if h[1] == top]
        body(s, subs[0][0] - 1, name)
        for i, (row, lvl, title) in enumerate(subs):
            stop = subs[i + 1][0] - 1 if i + 1 < len(subs) else e
            nested = [h for h in inner if row < h[0] <= stop]
            section(row, stop, lvl, [*path, title or "<anonymous>"], nested)

    section(0, len(lines) - 1, 0, [], heads)
    return spans
