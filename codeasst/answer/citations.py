"""Citations in an answer: each path:line the model writes, checked against the repository and the
excerpts it saw, and the places codeasst attaches where the answer names what an excerpt defines."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from codeasst.retrieve.fuse import Fused

# path:12 or path:12-30, where path has a directory separator or an extension.
CITATION = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.[A-Za-z0-9]+|(?:[\w.-]+/)+[\w.-]+):(\d+)(?:\s*[-–]\s*(\d+))?")


@dataclass
class Citation:
    path: str
    start_line: int
    end_line: int
    verified: bool
    reason: str  # why it is (not) verified
    attached: bool = False  # added by codeasst because the answer names the excerpt's symbol or file


def new_places(citations: list[Citation], have: list[Citation]) -> list[Citation]:
    seen = {(c.path, c.start_line, c.end_line) for c in have if c.verified}
    out = []
    for c in citations:
        if (c.path, c.start_line, c.end_line) not in seen:
            seen.add((c.path, c.start_line, c.end_line))
            out.append(c)
    return out


def check_citations(root: Path, text: str, hits: list[Fused],
                    shown: list[tuple[str, int, int]] | None = None) -> list[Citation]:
    """Each path:line in `text`, verified against the repository and the excerpts given
    (`shown`: the line ranges the model saw, when not the hits' own)."""
    seen = set()
    citations = []
    if shown is None:
        shown = [(f.hit.path, f.hit.start_line, f.hit.end_line) for f in hits]
    for match in CITATION.finditer(text):
        path, start = match.group(1).removeprefix("./"), int(match.group(2))
        end = int(match.group(3)) if match.group(3) else start
        if (path, start, end) in seen:
            continue
        seen.add((path, start, end))
        citations.append(_verify(root, path, start, end, shown))
    return citations


# Names an excerpt defines, in the languages the chunker parses (Go methods have a receiver first).
DEFINES = re.compile(r"\b(?:def|class|function|func|fn|interface|struct|type|enum|trait)\s+(?:\([^)]*\)\s*)?"
                     r"([A-Za-z_]\w{2,})")
NOT_DEFINITIONS = frozenset({"file", "module", "window", "section", "key", "statement"})


def defined_names(hit) -> set[str]:
    names = set(DEFINES.findall(hit.text))
    if hit.kind not in NOT_DEFINITIONS:
        names.add(hit.name.rsplit(".", 1)[-1])
    return {n for n in names if len(n) >= 3}


def attach_citations(text: str, hits: list[Fused], written: list[Citation]) -> list[Citation]:
    """Citations codeasst adds for the excerpts the answer draws on by name: one that defines
    a name the answer uses as a word, or whose file path the answer writes. A small model
    often explains the right code without citing it; the reader still gets the place."""
    cited = {(c.path, c.start_line, c.end_line) for c in written if c.verified}
    attached = []
    for item in hits:
        hit = item.hit
        place = (hit.path, hit.start_line, hit.end_line)
        if place in cited:
            continue
        named = sorted(n for n in defined_names(hit) if re.search(rf"(?<!\w){re.escape(n)}(?!\w)", text))
        if named or hit.path in text:
            cited.add(place)
            attached.append(Citation(*place, True, f"the answer names {', '.join(named[:3]) or hit.path}",
                                     attached=True))
    return attached


def _verify(root: Path, path: str, start: int, end: int, shown: list[tuple[str, int, int]]) -> Citation:
    target = (root / path).resolve()
    if root.resolve() not in target.parents or not target.is_file():
        return Citation(path, start, end, False, "no such file in the repository")
    try:
        count = len(target.read_text(encoding="utf-8", errors="replace").splitlines())
    except OSError as exc:
        return Citation(path, start, end, False, f"unreadable: {exc.strerror}")
    if end < start or start < 1 or end > count:
        return Citation(path, start, end, False, f"lines out of range (the file has {count})")
    if not any(p == path and s <= end and start <= e for p, s, e in shown):
        return Citation(path, start, end, False, "exists, but was not among the excerpts the model saw")
    return Citation(path, start, end, True, "matches an excerpt")
