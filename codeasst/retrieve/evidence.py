"""Reading a query like a developer does: the files, modules, traceback frames, identifiers
and quoted lines a bug report or pasted log mentions, each a clue to where the code is.

Everything here is plain text work; the searches it calls for (definitions, quoted lines)
run in codeasst.retrieve.lexical.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field

FRAME = re.compile(r'File "([^"\n]+)", line (\d+)')
PATH = re.compile(r"(?<![\w/.\\-])((?:[\w.-]+[/\\])*[\w-]+\.(?:py|pyi|pyx|js|jsx|ts|tsx|go|rs|java|kt|rb|php|c|h|"
                  r"cc|cpp|hpp|cs|swift|scala|sh|toml|yaml|yml|json|md|rst|cfg|ini|txt))(?::(\d+))?(?![\w])")
DOTTED = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)")
IDENT = re.compile(r"(?<![\w.])([A-Za-z_]\w*)")
CODE_SPAN = re.compile(r"`([^`\n]{3,200})`")
QUOTED = re.compile(r"\"([^\"\n]{12,160})\"|'([^'\n]{12,160})'")
ERROR_LINE = re.compile(r"^\s*(?:[\w.]+\.)?([A-Z]\w*(?:Error|Exception|Warning)):\s*(.{8,})$")
FENCE = re.compile(r"^\s*(```|~~~)")
LONG_QUERY_CHARS = 300
MAX_QUOTES = 12


def clean(text: str) -> str:
    """The query as text a search can take: line endings made LF, NUL and other control
    characters (a pasted terminal log carries colour codes) dropped, tabs kept."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)  # ANSI colour and cursor codes
    return "".join(ch for ch in text if ch in "\n\t" or unicodedata.category(ch) not in ("Cc", "Cs"))


def is_long(text: str) -> bool:
    """A pasted report, log or traceback rather than a question."""
    return len(text) > LONG_QUERY_CHARS or text.count("\n") >= 3


@dataclass
class Evidence:
    named: list[tuple[str, int | None]] = field(default_factory=list)  # (indexed file, line or None), strongest first
    identifiers: list[str] = field(default_factory=list)  # names a definition may carry
    quotes: list[str] = field(default_factory=list)  # exact text to look for


def _match_path(raw: str, files: list[str], by_name: dict[str, list[str]]) -> list[str]:
    raw = raw.replace("\\", "/").lstrip("./")
    if not raw:
        return []
    if "/" in raw:
        return [f for f in by_name.get(raw.rsplit("/", 1)[1], []) if raw == f or raw.endswith("/" + f)
                or f.endswith("/" + raw)]
    named = by_name.get(raw, [])
    return named if len(named) == 1 else []  # a bare `__init__.py` names nothing in particular


def _module_files(dotted: str, files: set[str]) -> list[str]:
    """`sklearn.linear_model._ridge.Ridge` -> `linear_model/_ridge.py` when that is indexed: the
    package's own name and trailing attribute names are dropped as needed; at least two parts
    must remain. A package's `__init__.py` is not taken: `from sympy.vector import ...` names an
    API, rarely the file at fault."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        for start in range(end):
            candidate = "/".join(parts[start:end]) + ".py"
            if candidate in files and end - start >= 2:  # `os.path` is no clue to a `path.py`
                return [candidate]
    return []


def read(text: str, files: list[str]) -> Evidence:
    """The clues in `text` about the indexed `files`."""
    by_name: dict[str, list[str]] = {}
    for f in files:
        by_name.setdefault(f.rsplit("/", 1)[-1], []).append(f)
    file_set = set(files)
    evidence = Evidence()

    def name(path: str, line: int | None) -> None:
        if (path, line) not in evidence.named:
            evidence.named.append((path, line))

    # Traceback frames, deepest (last) first: that is where the error surfaced.
    frames = [(m.group(1), int(m.group(2))) for m in FRAME.finditer(text)]
    for raw, line in reversed(frames):
        for path in _match_path(raw, files, by_name):
            name(path, line)
    for match in PATH.finditer(text):
        for path in _match_path(match.group(1), files, by_name):
            name(path, int(match.group(2)) if match.group(2) else None)
    for match in DOTTED.finditer(text):
        for path in _module_files(match.group(1), file_set):
            name(path, None)

    evidence.identifiers = _identifiers(text)
    evidence.quotes = _quotes(text)
    return evidence


def _identifiers(text: str) -> list[str]:
    """Names that look like code: snake_case, CamelCase, dotted parts, backticked; commonest first."""
    counts: Counter[str] = Counter()
    for match in DOTTED.finditer(text):
        for part in match.group(1).split("."):
            if _code_like(part):
                counts[part] += 1
    for match in IDENT.finditer(text):
        if _code_like(match.group(1)):
            counts[match.group(1)] += 1
    for match in CODE_SPAN.finditer(text):
        for word in IDENT.findall(match.group(1)):
            if len(word) >= 4:
                counts[word] += 1
    return [word for word, _ in counts.most_common(40)]


def _code_like(word: str) -> bool:
    if len(word) < 4 or word.startswith("__") and word.endswith("__"):
        return False
    inner = word.strip("_")
    return "_" in inner or (any(c.isupper() for c in inner[1:]) and any(c.islower() for c in inner))


def _quotes(text: str) -> list[str]:
    """Exact text worth a fixed-string search: error messages, quoted strings, lines of code
    shown in a traceback or a code block."""
    found: list[str] = []

    def add(raw: str) -> None:
        quote = raw.strip()
        if 12 <= len(quote) <= 160 and quote not in found and not quote.startswith(("File ", ">>>", "Traceback")):
            found.append(quote)

    lines = text.split("\n")
    for i, line in enumerate(lines):
        error = ERROR_LINE.match(line)
        if error:
            # Messages are often formatted: the part before the first value is what the code holds.
            add(re.split(r"['\"{(\[<]|\d", error.group(2), maxsplit=1)[0])
        if FRAME.search(line) and i + 1 < len(lines) and not FRAME.search(lines[i + 1]):
            add(lines[i + 1])  # the source line a traceback shows under its frame
    for match in QUOTED.finditer(text):
        add(match.group(1) or match.group(2))
    return found[:MAX_QUOTES]


def title(text: str) -> str:
    return next((line.strip() for line in text.split("\n") if line.strip()), "")


def parts(text: str, limit: int = 8, chars: int = 1000) -> list[str]:
    """The pieces of a long query that each carry a meaning of their own: its title, then its
    paragraphs and code blocks (each whole, up to `chars`), longest first up to `limit`."""
    blocks: list[str] = []
    current: list[str] = []
    in_code = False
    for line in text.split("\n"):
        if FENCE.match(line):
            if current:
                blocks.append("\n".join(current))
            current = []
            in_code = not in_code
            continue
        if not line.strip() and not in_code:
            if current:
                blocks.append("\n".join(current))
            current = []
            continue
        current.append(line)
    if current:
        blocks.append("\n".join(current))
    head = title(text)
    pieces = sorted((b.strip()[:chars] for b in blocks if len(b.strip()) >= 40), key=len, reverse=True)
    return [head, *[p for p in pieces if p != head]][:limit]


def condensed(text: str, chars: int = 600) -> str:
    """The title and the most informative lines of a long query, in their order, within
    `chars`: what a small model can read in a second rather than the whole paste."""
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    if not lines:
        return ""
    head = lines[0][:chars]
    scored = sorted(range(1, len(lines)), key=lambda i: -_informative(lines[i]))
    keep, used = [], len(head)
    for i in scored:
        if used + len(lines[i]) + 1 > chars:
            continue
        keep.append(i)
        used += len(lines[i]) + 1
    return "\n".join([head, *(lines[i] for i in sorted(keep))])


def _informative(line: str) -> float:
    words = re.findall(r"\w+", line)
    if not words:
        return 0.0
    code = sum(_code_like(w) for w in words)
    return (len(set(words)) + 3 * code + (5 if ERROR_LINE.match(line) else 0)) / (1 + len(line) / 80)
