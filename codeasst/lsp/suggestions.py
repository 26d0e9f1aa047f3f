"""What the LSP server decides on its own, with no protocol around it: which files it answers for,
how a suggestion becomes a completion item's edit, and which shown suggestions count as discarded.
(Every other decision, the gate, the cut, the KV cache, the events' store, is the server's.)"""

from __future__ import annotations

import re
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

from codeasst.index.files import inside

_WORD_END = re.compile(r"[A-Za-z_][A-Za-z_0-9]*$")


class Refused(Exception):
    """A document the server does not answer for; its message is the log line."""


def file_of(uri: str) -> Path:
    """The local file a `file:` URI names; Refused for another scheme or host."""
    parts = urlsplit(uri)
    if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
        raise Refused(f"{uri}: not a local file")
    raw = unquote(parts.path)
    if "\x00" in raw:
        raise Refused(f"{uri}: not a file name")
    return Path(raw)


def path_in(root: Path, uri: str) -> tuple[Path, str]:
    """The file a `file:` URI names and its path relative to `root`; Refused for another scheme, or a
    file outside the repository, symlinks followed (a link inside that leads out is outside)."""
    target = file_of(uri)
    try:
        rels = inside(root, target)  # as codeasst serve checks every path a request names
    except ValueError:
        raise Refused(f"{uri}: outside the repository {root}") from None
    return target, rels[-1]


@dataclass(frozen=True)
class Edit:
    """A completion item's edit on one line: replace columns [start, end) of line `line` (0-based,
    in characters) with `text`; `label` is what a menu shows."""

    line: int
    start: int
    end: int
    text: str
    label: str


def completion_edit(line_text: str, line: int, col: int, suggestion: str) -> Edit:
    """The suggestion at column `col` (0-based) of `line_text` as a completion item's edit. Clients
    filter and replace from the start of the word before the cursor, so the edit starts there and
    carries the word; it runs to the end of the line where the suggestion's first line ends with what
    follows the cursor (the model wrote the line whole), else it ends at the cursor."""
    before, after = line_text[:col], line_text[col:]
    word = _WORD_END.search(before)
    start = word.start() if word else col
    first = suggestion.split("\n", 1)[0]
    rest = after.rstrip()
    end = len(line_text) if rest and first.rstrip().endswith(rest) and first.strip() != rest.strip() else col
    text = before[start:] + suggestion
    label = (before[start:] + first).strip() or suggestion.strip().split("\n", 1)[0]
    return Edit(line, start, end, text, label[:80])


@dataclass
class Shown:
    id: str
    length: int
    at: float = field(default_factory=time.monotonic)


@dataclass
class Outcomes:
    """Suggestions shown per document, until accepted or discarded: a shown suggestion that is neither
    accepted by the next request for that document nor within `discard_after_s` is a discard (as
    Copilot and Tabby count them). Each suggestion is counted shown once and gets one outcome, however
    often the type-ahead cache gives its rest again."""

    discard_after_s: float = 10.0
    shown: dict[str, Shown] = field(default_factory=dict)  # uri -> the suggestion shown there last
    seen: OrderedDict[str, bool] = field(default_factory=OrderedDict)  # id -> had its outcome (the latest ids)

    def show(self, uri: str, suggestion_id: str, length: int) -> tuple[bool, list[Shown]]:
        """A suggestion shown in `uri`: whether it is shown for the first time (to count it), and the
        ones it ends (the document's last, if another) to count as discarded."""
        ended = self.next_request(uri, keep=suggestion_id)
        first = suggestion_id not in self.seen
        if first:
            self.seen[suggestion_id] = False
            while len(self.seen) > 10_000:
                self.seen.popitem(last=False)
        if uri not in self.shown and not self.seen[suggestion_id]:
            self.shown[uri] = Shown(suggestion_id, length)
        return first, ended

    def next_request(self, uri: str, keep: str = "") -> list[Shown]:
        """A new request in `uri`: the suggestion shown there before is discarded (unless it is `keep`,
        the same suggestion still shown while its first characters are typed)."""
        last = self.shown.get(uri)
        if last is None or last.id == keep:
            return []
        return [self._done(uri)]

    def accept(self, suggestion_id: str) -> Shown | None:
        """The accepted suggestion, no longer waiting for its outcome; None if it is not waiting (already
        counted, or never shown)."""
        for uri, shown in list(self.shown.items()):
            if shown.id == suggestion_id:
                return self._done(uri)
        return None

    def expired(self, now: float | None = None) -> list[Shown]:
        """Suggestions shown longer ago than discard_after_s, to count as discarded."""
        now = time.monotonic() if now is None else now
        return [self._done(uri) for uri, shown in list(self.shown.items()) if now - shown.at > self.discard_after_s]

    def _done(self, uri: str) -> Shown:
        shown = self.shown.pop(uri)
        self.seen[shown.id] = True
        return shown
