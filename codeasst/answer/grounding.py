"""Grounding for `ask`, by construction where a small model cannot be trusted.

- The context is short numbered excerpts; the model cites "[2]", and codeasst turns that
  into the excerpt's `path:start-end` as the answer streams (`CitingStream`).
- Each line of prose the model left uncited gets the citation of the excerpt it draws on
  most (shared names and words), marked as attached by codeasst.
- The code names the answer uses (backticked names, `a.b` paths, `name()` calls) are
  looked up in the repository's files; the ones that exist nowhere are flagged.
- A very long question is cut to its informative lines, so it can never overflow the
  model's context.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from codeasst.index import words as index_words
from codeasst.retrieve.fuse import Fused, against_lost_in_the_middle

WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# "[2]", "[1, 3]", "[Excerpt 2]", "[1][3]" is two matches.
REFERENCE = re.compile(r"\[(?:excerpts?\s*)?(\d{1,2}(?:\s*(?:,|and)\s*\d{1,2})*)\]", re.IGNORECASE)
# "[2:107]": excerpt 2's line 107 (the checked answer cites lines); "[2:107-109]" too.
LINE_REFERENCE = re.compile(r"\[(?:excerpt\s*)?(\d{1,2})\s*:\s*(?:lines?\s*)?(\d{1,6})(?:\s*-\s*(\d{1,6}))?\]",
                            re.IGNORECASE)
# A citation the model wrote as a path (see answer.ask.CITATION); here only to tell that a line has one.
WRITTEN_PLACE = re.compile(r"[\w.-]+\.[A-Za-z0-9]+:\d+|(?:[\w.-]+/)+[\w.-]+:\d+")
BACKTICKED = re.compile(r"`([^`\n]{1,80})`")
CALL = re.compile(r"(?<![\w.`])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\((?=[\w\s,'\"=*.)]{0,40}\))")
DOTTED = re.compile(r"(?<![\w.`/])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?![\w(/`])")
NAME_LIKE = re.compile(r"[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*(?:\(\))?")


def _word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


FILE_EXTENSIONS = _word_set(
    "py pyi md txt toml json jsonl yaml yml cfg ini ts tsx js jsx mjs cjs go rs java c h cpp hpp cs rb php "
    "sh html css scss lock gguf onnx log sql xml csv rst")
NOT_NAMES = frozenset({"e.g", "i.e", "etc", "vs", "a.k.a"})
# Phrases in which the model says the excerpts fall short.
NO_ANSWER = re.compile(r"(?:do(?:es)? not|don't|doesn't|cannot|can't|no)\s+(?:\w+\s+){0,3}"
                       r"(?:answer|contain|provide|mention|show|include|enough|information|find)", re.IGNORECASE)
ATTACH_THRESHOLD = 3.0
# Names an excerpt defines, in the languages the chunker parses (Go methods have a receiver first).
DEFINES = re.compile(r"\b(?:def|class|function|func|fn|interface|struct|type|enum|trait)\s+(?:\([^)]*\)\s*)?"
                     r"([A-Za-z_]\w{2,})")
MAX_REPO_BYTES = 64 * 1024 * 1024  # above this the identifier check stops reading and flags nothing unread


@dataclass(frozen=True)
class Excerpt:
    number: int
    path: str
    start_line: int
    end_line: int
    name: str
    text: str
    rank: int  # 0 for retrieval's best hit

    @property
    def place(self) -> str:
        return f"{self.path}:{self.start_line}-{self.end_line}"


def words(text: str) -> set[str]:
    return set(WORD.findall(text))


_content_words = index_words.stems


def window(text: str, start_line: int, question: str, max_chars: int) -> tuple[int, int, str]:
    """The contiguous lines of a chunk that fit `max_chars` and share the most words with the
    question, the chunk's first line (its signature or heading) counting extra. A short excerpt
    leaves room for more of them, so the context shows more places for the same prompt tokens."""
    lines = text.rstrip().splitlines() or [""]
    if len(text) <= max_chars:
        return start_line, start_line + len(lines) - 1, "\n".join(lines)
    wanted = _content_words(question)
    gains = [len(_content_words(line) & wanted) + 0.1 for line in lines]
    gains[0] += 1.0
    best, best_span = -1.0, (0, 1)
    for first in range(len(lines)):
        size, gain, last = 0, 0.0, first
        while last < len(lines) and size + len(lines[last]) + 1 <= max_chars:
            size += len(lines[last]) + 1
            gain += gains[last]
            last += 1
        if last == first:  # one line longer than the whole budget: cut it
            return start_line + first, start_line + first, lines[first][:max_chars]
        if gain > best:
            best, best_span = gain, (first, last)
    first, last = best_span
    return start_line + first, start_line + last - 1, "\n".join(lines[first:last])


def select_excerpts(hits: list[Fused], question: str, budget_chars: int, per_excerpt_chars: int,
                    in_order: int = 0) -> list[Excerpt]:
    """Excerpts of the hits in rank order, each cut to `per_excerpt_chars`, while they fit the
    budget; numbered in the order the model reads them: the first `in_order` hits first, as
    given (the best hit and the definitions it calls, in call order), then the rest strongest
    at both ends."""
    chosen, used = [], 0
    for rank, item in enumerate(hits):
        hit = item.hit
        start, end, text = window(hit.text, hit.start_line, question, per_excerpt_chars)
        if chosen and used + len(text) > budget_chars:
            continue
        chosen.append((rank, hit, start, end, text))
        used += len(text)
    keep = [c for c in chosen if c[0] < in_order]
    ordered = keep + against_lost_in_the_middle([c for c in chosen if c[0] >= in_order])
    return [Excerpt(n, hit.path, start, end, hit.name, text, rank)
            for n, (rank, hit, start, end, text) in enumerate(ordered, start=1)]


def render_numbered(excerpts: list[Excerpt], piped: str, line_numbers: bool = False) -> str:
    """The excerpts as the model reads them, each headed "[n] path:start-end name"; with
    `line_numbers`, each line after its number in the file ("107| ..."), which it cites as [n:107]."""
    parts = [f"Input from stdin:\n```\n{piped}\n```\n"] if piped else []
    for e in excerpts:
        text = "\n".join(f"{number}| {line}" for number, line in enumerate(e.text.splitlines(), e.start_line)) \
            if line_numbers else e.text
        parts.append(f"[{e.number}] {e.place} {e.name}\n{text}\n")
    return "\n".join(parts)


def bound_question(question: str, max_chars: int) -> str:
    """The question as it fits `max_chars`: a long paste keeps its first line, its last lines
    and the lines most likely to matter (names, errors, file:line), in their order."""
    if len(question) <= max_chars:
        return question
    lines = question.splitlines()
    if len(lines) < 3:
        half = max_chars // 2 - 10
        return f"{question[:half]} [...] {question[-half:]}"

    def worth(index: int, line: str) -> float:
        score = 0.0
        if index == 0 or index >= len(lines) - 2:
            score += 100.0
        if re.search(r"Error|Exception|Traceback|error:|line \d+|\?", line):
            score += 10.0
        score += min(len(WORD.findall(line)), 10) / 10 + len(re.findall(r"\w[._]\w|\w\(", line))
        return score - len(line) / 1000

    order = sorted(range(len(lines)), key=lambda i: -worth(i, lines[i]))
    budget = max_chars - 40
    while True:
        text = _kept_lines(lines, order, budget)
        if len(text) <= max_chars or budget < 100:
            return text[:max_chars]
        budget -= len(text) - max_chars + 40  # the "lines left out" markers took the rest


def _kept_lines(lines: list[str], order: list[int], budget: int) -> str:
    keep, used = set(), 0
    for index in order:
        size = min(len(lines[index]), 300) + 1
        if used + size > budget:
            continue
        keep.add(index)
        used += size
    out, skipped = [], 0
    for index, line in enumerate(lines):
        if index in keep:
            if skipped:
                out.append(f"[... {skipped} lines left out ...]")
                skipped = 0
            out.append(line[:300])
        else:
            skipped += 1
    if skipped:
        out.append(f"[... {skipped} lines left out ...]")
    return "\n".join(out)


def named_identifiers(text: str) -> list[str]:
    """The code names an answer uses: backticked names, `a.b` paths and `name()` calls, in
    order, without file paths (those are checked as citations) or code blocks."""
    prose = re.sub(r"```.*?(?:```|\Z)", " ", text, flags=re.DOTALL)
    found: list[str] = []
    for match in BACKTICKED.finditer(prose):
        inner = match.group(1).strip()
        name = re.sub(r"\(.*\)$", "", inner)
        if NAME_LIKE.fullmatch(inner) or NAME_LIKE.fullmatch(name) and inner.endswith(")"):
            found.append(name)
    bare = BACKTICKED.sub(" ", prose)
    found += [m.group(1) for m in CALL.finditer(bare)]
    found += [m.group(1) for m in DOTTED.finditer(bare)]
    names = []
    for name in found:
        name = name.strip(".")
        if not name or name.lower() in NOT_NAMES or _is_file_name(name):
            continue
        names.append(name)
    return list(dict.fromkeys(names))


def _is_file_name(name: str) -> bool:
    return "." in name and name.rsplit(".", 1)[1].lower() in FILE_EXTENSIONS


@lru_cache(maxsize=8)
def _repo_words(root: Path, files: tuple[tuple[str, int], ...]) -> frozenset[str]:
    known: set[str] = set()
    read = 0
    for rel, _mtime in files:
        known.update(words(rel))
        try:
            data = (root / rel).read_bytes()
        except OSError:
            continue
        read += len(data)
        if read > MAX_REPO_BYTES:
            break
        known.update(WORD.findall(data.decode("utf-8", errors="replace")))
    return frozenset(known)


def repo_words(root: Path, files: Iterable[str]) -> frozenset[str]:
    """Every word in the repository's indexed files and paths; cached while no file changes."""
    stamped = []
    for rel in sorted(files):
        try:
            stamped.append((rel, (root / rel).stat().st_mtime_ns))
        except OSError:
            continue
    return _repo_words(root, tuple(stamped))


def ungrounded(names: list[str], known: frozenset[str] | set[str]) -> list[str]:
    """The names with a part that appears nowhere in the repository."""
    return [name for name in names if not all(part in known for part in name.split("."))]


# Chinese and Japanese prose has no spaces between words: its length is in characters.
CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def _is_prose_unit(line: str) -> bool:
    stripped = " ".join(line.split())
    long_enough = len(stripped.split()) >= 5 or len(CJK.findall(stripped)) >= 10
    return (long_enough and not stripped.startswith("#") and not stripped.endswith(":")
            and not WRITTEN_PLACE.search(stripped))


def _names_file(line: str, excerpt: Excerpt) -> bool:
    """Whether the line names the excerpt's file: its path, or its file name in backticks."""
    return excerpt.path in line or Path(excerpt.path).name in line.split("`")


def _named_file(unit: str, excerpts: list[Excerpt]) -> Excerpt | None:
    """The best-ranked excerpt whose file the unit names."""
    named = [e for e in excerpts if _names_file(unit, e)]
    return min(named, key=lambda e: e.rank) if named else None


def _unit_names(line: str) -> set[str]:
    return set(named_identifiers(line)) | {w for w in WORD.findall(line) if "_" in w or w[1:] != w[1:].lower()}


def _defined_names(excerpt: Excerpt) -> set[str]:
    return {excerpt.name, excerpt.name.rsplit(".", 1)[-1]} | set(DEFINES.findall(excerpt.text))


def _defines(defined: set[str], name: str) -> bool:
    return name in defined or name.rsplit(".", 1)[-1] in defined


def best_excerpt(line: str, excerpts: list[Excerpt]) -> tuple[Excerpt | None, float]:
    """The excerpt a line of prose draws on most: names it shares count most, its file named
    counts too, then shared content words; ties go to retrieval's better hit."""
    line_names = _unit_names(line)
    line_words = _content_words(line)
    best, best_score = None, 0.0
    for excerpt in excerpts:
        known = words(excerpt.text) | words(excerpt.name)
        score = 3.0 * sum(all(p in known for p in n.split(".")) for n in line_names)
        # A name the excerpt is, or defines, says more than a name it only mentions.
        defined = _defined_names(excerpt)
        score += 3.0 * sum(_defines(defined, n) for n in line_names)
        if _names_file(line, excerpt):
            score += 4.0
        score += len(line_words & _content_words(excerpt.text + " " + excerpt.name))
        score -= 0.01 * excerpt.rank
        if score > best_score:
            best, best_score = excerpt, score
    return (best, best_score) if best_score >= ATTACH_THRESHOLD else (None, best_score)


def definitions_elsewhere(line: str, excerpts: list[Excerpt], best: Excerpt, limit: int = 2) -> list[Excerpt]:
    """Excerpts of other files that define a name the line uses: a line that names a function
    defined in one file and a class defined in another draws on both."""
    names = {n for n in _unit_names(line) if not n.rsplit(".", 1)[-1].startswith("__")}  # not __init__
    found: list[Excerpt] = []
    for excerpt in sorted(excerpts, key=lambda e: e.rank):
        if excerpt.path == best.path or any(e.path == excerpt.path for e in found):
            continue
        defined = _defined_names(excerpt)
        if any(_defines(defined, n) for n in names):
            found.append(excerpt)
    return found[:limit]


NEW_UNIT = re.compile(r"\s*(?:[-*+]\s|\d+[.)]\s|#|```|\|)|[^\s\da-z]")
UNDECIDED = re.compile(r"\s*(?:[-*+]|\d+[.)]?|`{1,2})?")


class CitingStream:
    """Rewrites the model's text as it streams: "[2]" becomes "[path:start-end]", and a
    paragraph or bullet of prose that ends without a citation gets " (see path:start-end)"
    for its best excerpt. Text is held back only while a "[" may still become a reference,
    and a line's newline until the next line shows whether the paragraph goes on."""

    def __init__(self, excerpts: list[Excerpt], on_attach: Callable[[Excerpt, str], None]) -> None:
        self.by_number = {e.number: e for e in excerpts}
        self.excerpts = excerpts
        self.on_attach = on_attach
        self.pending = ""
        self.line = ""
        self.unit = ""  # the paragraph or bullet so far, without the current line
        self.unit_cited = False
        self.newline_held = False
        self.in_code = False
        self.cited_numbers: list[int] = []
        self.reciting = False  # the model began to copy an excerpt, header and all: stop it

    def feed(self, piece: str) -> str:
        if self.reciting:
            return ""
        self.pending += piece
        out = []
        while self.pending:
            if self.newline_held:
                ends = self._next_line_starts_unit()
                if ends is None:
                    break  # too little of the next line to tell
                self.newline_held = False
                out.append((self._end_unit() if ends else "") + "\n")
                continue
            cut = min((i for i in (self.pending.find("["), self.pending.find("\n")) if i >= 0), default=-1)
            if cut < 0:
                out.append(self._take(len(self.pending)))
                break
            out.append(self._take(cut))
            if self.pending[0] == "\n":
                self.pending = self.pending[1:]
                out.append(self._end_line())
                continue
            line_match = LINE_REFERENCE.match(self.pending)
            if line_match:
                out.append(self._resolve_line(line_match))
                self.pending = self.pending[line_match.end():]
                continue
            match = REFERENCE.match(self.pending)
            if match and not self.line.strip():
                header = self._header_copy(match)
                if header is None:
                    break  # too little after "[n]" to tell a reference from a copied header
                if header:
                    self.reciting, self.pending = True, ""
                    break
            if match:
                out.append(self._resolve(match))
                self.pending = self.pending[match.end():]
                continue
            if len(self.pending) < 16 and "]" not in self.pending and "\n" not in self.pending:
                break  # may still become a reference
            out.append(self._take(1))
        return "".join(out)

    def close(self) -> str:
        tail = self._take(len(self.pending))
        if self.newline_held:
            self.newline_held = False
            return tail + self._end_unit() + "\n"
        if self.line.strip() and not self.in_code:
            self.unit += self.line + "\n"
        self.line = ""
        return tail + self._end_unit()

    def _header_copy(self, match: re.Match) -> bool | None:
        """Whether a line that starts with "[n]" goes on as excerpt n's header does."""
        number = int(re.findall(r"\d+", match.group(1))[0])
        if number not in self.by_number:
            return False
        header = f" {self.by_number[number].place}"
        after = self.pending[match.end():]
        if len(after) < len(header) and header.startswith(after) and "\n" not in after:
            return None
        return after.startswith(header)

    def _take(self, n: int) -> str:
        text, self.pending = self.pending[:n], self.pending[n:]
        self.line += text
        return text

    def _resolve(self, match: re.Match) -> str:
        numbers = [int(n) for n in re.findall(r"\d+", match.group(1))]
        places = [self.by_number[n].place for n in numbers if n in self.by_number]
        text = f"[{', '.join(places)}]" if places else match.group(0)
        if places:
            self.cited_numbers += [n for n in numbers if n in self.by_number]
            self.unit_cited = True
        self.line += text
        return text

    def _resolve_line(self, match: re.Match) -> str:
        """"[2:107]" -> "[path:107]": the line of excerpt 2's file (checked against the excerpt later)."""
        number = int(match.group(1))
        if number not in self.by_number:
            self.line += match.group(0)
            return match.group(0)
        last = f"-{match.group(3)}" if match.group(3) and match.group(3) != match.group(2) else ""
        text = f"[{self.by_number[number].path}:{match.group(2)}{last}]"
        self.cited_numbers.append(number)
        self.unit_cited = True
        self.line += text
        return text

    def _end_line(self) -> str:
        """A line ended: a code fence or code passes through; prose waits for the next line."""
        line, self.line = self.line, ""
        if line.strip().startswith("```") or self.in_code:
            cite = self._end_unit() if not self.in_code else ""
            if line.strip().startswith("```"):
                self.in_code = not self.in_code
            return cite + "\n"
        if not line.strip():
            return self._end_unit() + "\n"
        self.unit += line + "\n"
        self.newline_held = True
        return ""

    def _next_line_starts_unit(self) -> bool | None:
        """Whether the next line starts a new paragraph or bullet; None while it cannot tell."""
        if self.pending.startswith("\n"):
            return True
        head = self.pending.split("\n", 1)[0]
        complete = "\n" in self.pending
        if not complete and UNDECIDED.fullmatch(head):
            return None
        return bool(NEW_UNIT.match(head))

    def _end_unit(self) -> str:
        unit, cited = self.unit, self.unit_cited
        self.unit, self.unit_cited = "", False
        if cited:
            return ""
        if _is_prose_unit(unit):
            excerpt, _ = best_excerpt(unit, self.excerpts)
            drawn = [excerpt, *definitions_elsewhere(unit, self.excerpts, excerpt)] if excerpt else []
        else:
            # A short line or a list item that names an excerpt's file ("- `core/paths.py`")
            # still points at it; WRITTEN_PLACE lines already carry a place.
            plain = unit.strip()
            named = (None if not plain or plain.startswith("#") or WRITTEN_PLACE.search(plain)
                     else _named_file(plain, self.excerpts))
            drawn = [named] if named else []
        if not drawn:
            return ""
        for each in drawn:
            self.on_attach(each, unit)
        return f" (see {'; '.join(e.place for e in drawn)})"


def says_no_answer(text: str) -> bool:
    return bool(NO_ANSWER.search(text))


def where_to_look(excerpts: list[Excerpt], limit: int = 4) -> str:
    by_rank = sorted(excerpts, key=lambda e: e.rank)
    places = list(dict.fromkeys(f"{e.path} ({e.name})" for e in by_rank))[:limit]
    return ", ".join(places)
