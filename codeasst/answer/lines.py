"""The model held to lines: a sentence of the checked answer is shown only where one line of an
excerpt, with the lines beside it and the outline of the definition it is in, holds what the
sentence claims.

What a sentence claims, and what the line must hold:
- its code names, numbers and quoted strings (each found in the line's window or the question);
- most of its words: at least half of its content words (crude stems) are in the window, and one
  of them is not in the question, so a sentence that restates the question says nothing;
- its subject, when that subject is a kind of file, a folder, a setting or data (".gitignore
  files hold chunks"): one line of the window names the subject and what the sentence says it
  holds or does. A claim about what a file holds needs a line that says so.

The model cites a line as `[2:107]` (excerpt 2, line 107 of its file): that line is checked, and
no other. A sentence that cites a whole excerpt, or none, is held to the line of the excerpts
that backs it best, and shows that line as its citation; none that backs it, and it is left out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from codeasst.answer import grounding

NEAR = 2  # lines each side of the cited line that count as its window
# A small model's line numbers are near, not exact: a cited line that does not back its sentence
# gives way to the nearest line within this many that does, which becomes the citation shown.
SLACK = 6
MIN_SHARED = 0.6  # of a sentence's content words, the share its window must hold
ECHO_WORDS = 4  # runs of this many of the question's words in a row are the sentence echoing it
ECHO_LEFT = 2  # content words beyond its echo and not in the question: fewer than this, and it restates
# Words any sentence about code may use without the code saying them.
GENERIC = frozenset(grounding._content_words(
    "call calls called calling use uses used using take takes make makes pass passes handle handles "
    "perform performs ensure ensures provide provides allow allows need needs also first then after before "
    "instance object objects variable variables parameter parameters argument arguments method methods "
    "function functions class classes result results specific specified given based new way "
    "its and are not one may can for but any all has was were via per own"))
SUBJECT_END = re.compile(
    r"\b(?:is|are|was|were|holds?|contains?|stores?|lists?|keeps?|has|have|includes?|defines?|reads?|writes?|"
    r"returns?|raises?|calls?|uses?|checks?|loads?|saves?|records?|sets?|gets?|creates?|takes?|runs?|"
    r"handles?|makes?|gives?|builds?|skips?|ignores?|tells?|says?|decides?|controls?|determines?|can|will|may|"
    r"must|should)\b", re.IGNORECASE)
# A subject that is a kind of file, a folder, a setting or data.
FILE_KIND = re.compile(r"(?:^|[\s`])\.\w[\w.-]*|\b(?:files?|folders?|director(?:y|ies)|dirs?|settings?|"
                       r"config(?:uration)?s?|options?|data|tables?|databases?|cache|manifests?|environment|"
                       r"variables?|records?|rows?|entries|logs?|paths?)\b", re.IGNORECASE)
DEF_LINE = re.compile(r"^\s*(?:(?:export|default|async|public|private|static)\s+)*(?:def|class|func|function|fn)\b")
WHERE = re.compile(r"([\w./-]+\.\w+):(\d+)(?:-(\d+))?")
PLACE = re.compile(r"\[[^\]\n]*:\d+(?:-\d+)?[^\]\n]*\]|\(see [^)\n]*\)")
NUMBER = re.compile(r"(?<![\w.\-/])-?\d+(?:\.\d+)?(?![\w/])")
# Not an apostrophe: "a field's value ... it's" quotes nothing.
QUOTED = re.compile(r"(?<!\w)\"([^\"\n]{3,80})\"(?!\w)|(?<!\w)'([^'\n]{3,80})'(?!\w)")
LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
CAMEL = re.compile(r"[a-z][A-Z]")


def code_names(text: str) -> set[str]:
    """The names a sentence uses as code: backticked, dotted or called, and bare words written as
    code is (`snake_case`, `camelCase`); not a word in capitals, which prose uses too (VAT, JSON)."""
    bare = {w for w in grounding.WORD.findall(grounding.BACKTICKED.sub(" ", text))
            if "_" in w.strip("_") or CAMEL.search(w)}
    return set(grounding.named_identifiers(text)) | bare


def unbacked(sentence: str, sources: list[str], question: str) -> list[str]:
    """The code names, numbers and quoted strings of a sentence found in none of `sources` nor
    the question: what the sentence claims that its excerpts do not show."""
    text = PLACE.sub(" ", LIST_MARK.sub("", sentence))
    known_text = "\n".join(sources) + "\n" + question
    known = grounding.words(known_text)
    missing = [name for name in code_names(text) if not all(part in known for part in name.split(".") if part)]
    numbers = set(re.findall(r"\d+(?:\.\d+)?", known_text))
    missing += [n.lstrip("-") for n in NUMBER.findall(text) if n.lstrip("-") not in numbers]
    for match in QUOTED.finditer(text):
        quoted = (match.group(1) or match.group(2)).strip()
        if " " in quoted and quoted not in known_text:
            missing.append(f'"{quoted}"')
    return list(dict.fromkeys(missing))


@dataclass(frozen=True)
class Held:
    """A sentence's verdict: the line that backs it (`path:line`), or why none does."""

    place: str = ""
    why: str = ""


class Lines:
    """The excerpts' lines by file and number, and the outline lines of the definition each is in."""

    def __init__(self, excerpts: Sequence[grounding.Excerpt],
                 outlines: Mapping[int, Sequence[tuple[int, str]]] | None = None) -> None:
        self.excerpts = list(excerpts)
        self.outlines = dict(outlines or {})  # by excerpt number: (line, text) of its definition's outline

    def window(self, excerpt: grounding.Excerpt, line: int) -> str | None:
        """The cited line, the lines beside it, the first line of the definition it is in and that
        definition's outline; None when the excerpt does not show that line."""
        lines = excerpt.text.splitlines()
        i = line - excerpt.start_line
        if not 0 <= i < len(lines):
            return None
        near = lines[max(0, i - NEAR):i + NEAR + 1]
        head = [lines[j] for j in _enclosing(lines, i) if j < i - NEAR]
        outline = [text for number, text in self.outlines.get(excerpt.number, ())
                   if abs(number - line) > NEAR]
        return "\n".join([excerpt.name, *head, *near, *outline])

    def cited(self, sentence: str) -> list[tuple[grounding.Excerpt, int | None]]:
        """The excerpts a sentence cites, each with its cited line (None for a whole excerpt)."""
        out = []
        for match in WHERE.finditer(sentence):
            path, first, last = match.group(1), int(match.group(2)), match.group(3)
            mine = [e for e in self.excerpts if e.path == path]
            e = next((e for e in mine if e.start_line <= first <= e.end_line), mine[0] if mine else None)
            if e is not None:  # a line outside every excerpt of the file stays cited, and fails
                single = last is None or int(last) == first
                whole = not single and first == e.start_line and int(last) == e.end_line
                out.append((e, None if whole else first))
        return out


def _enclosing(lines: list[str], i: int) -> list[int]:
    """The first line of the definition line `i` is in (the nearest definition above it, less indented)."""
    indent = len(lines[i]) - len(lines[i].lstrip())
    for j in range(i - 1, -1, -1):
        text = lines[j]
        if DEF_LINE.match(text) and len(text) - len(text.lstrip()) < indent:
            return [j]
    return []


def claims(sentence: str) -> str:
    """A sentence without its citations and list marks: what it says."""
    return PLACE.sub(" ", LIST_MARK.sub("", sentence)).strip()


def _content(text: str) -> set[str]:
    return grounding._content_words(text) - GENERIC


def why_not(sentence: str, window: str, question: str) -> str:
    """Why `window` does not hold what `sentence` claims ("" where it does)."""
    text = claims(sentence)
    missing = unbacked(text, [window], question)
    if missing:
        return "not on the line it cites: " + ", ".join(missing[:3])
    said = _content(text)
    known = _content(window)
    asked = _content(question)
    beyond = _beyond_echo(text, question)
    echoed = len(beyond.split()) < len(re.findall(r"\w+", text))
    if not _specific(text, question) and (not said - asked or echoed and len(_content(beyond) - asked) < ECHO_LEFT):
        return "restates the question"
    if said and len(said & known) < MIN_SHARED * len(said):
        return "most of its words are not on the line it cites: " + ", ".join(sorted(said - known)[:3])
    if said and not (said & known) - asked:
        return "says nothing the line holds beyond the question"
    return _subject(text, window)


def _beyond_echo(text: str, question: str) -> str:
    """`text` without the runs of ECHO_WORDS or more words it repeats from the question."""
    def words(t: str) -> list[str]:
        return re.findall(r"\w+", t.lower().replace("`", ""))

    asked = words(question)
    runs = {tuple(asked[i:i + ECHO_WORDS]) for i in range(len(asked) - ECHO_WORDS + 1)}
    said = words(text)
    echoed = set()
    for i in range(len(said) - ECHO_WORDS + 1):
        if tuple(said[i:i + ECHO_WORDS]) in runs:
            echoed.update(range(i, i + ECHO_WORDS))
    return " ".join(w for i, w in enumerate(said) if i not in echoed)


def _specific(text: str, question: str) -> bool:
    """Whether a sentence states a name, number or quoted string the question does not."""
    asked = grounding.words(question)
    return (any(not all(p in asked for p in name.split(".")) for name in code_names(text))
            or any(n.lstrip("-") not in question for n in NUMBER.findall(text))
            or any((m.group(1) or m.group(2)) not in question for m in QUOTED.finditer(text)))


def _subject(text: str, window: str) -> str:
    """A sentence whose subject is a kind of file, folder, setting or data needs a line (or two lines
    together) that names the subject and something of what the sentence says of it."""
    verb = SUBJECT_END.search(text.replace(":", " is ", 1) if ":" in text[:60] else text)
    if verb is None or verb.start() == 0:
        return ""
    subject = text[:verb.start()]
    kind = FILE_KIND.search(subject)
    if not kind:
        return ""
    dotted = [m.group(0).strip(" `") for m in FILE_KIND.finditer(subject) if m.group(0).strip(" `").startswith(".")]
    named = _content(" ".join(dotted)) if dotted else _content(subject)
    rest = _content(text[verb.start():]) - _content(subject)
    if not named:
        return ""
    rows = window.splitlines()
    for first, second in zip(rows, rows[1:] + [""]):
        words = _content(first + " " + second)
        if named & words and (not rest or rest & words):
            return ""
    return "no line says this of " + " ".join(subject.split())[:40]


def hold(sentence: str, lines: Lines, question: str) -> Held:
    """The line that backs a sentence. A cited line is the only one tried; a cited excerpt's lines,
    or where nothing is cited every excerpt's, are tried in order and the first that backs it wins."""
    cited = lines.cited(sentence)
    pinned = [(e, line) for e, line in cited if line is not None]
    if pinned:
        reasons = []
        for e, line in pinned:
            for near in sorted(range(line - SLACK, line + SLACK + 1), key=lambda n: abs(n - line)):
                window = lines.window(e, near)
                if window is None:
                    if near == line:
                        reasons.append("cites a line it was not shown")
                    continue
                why = why_not(sentence, window, question)
                if not why:
                    return Held(f"{e.path}:{near}")
                if near == line:
                    reasons.append(why)
        return Held(why=reasons[0] if reasons else "cites a line it was not shown")
    candidates = [e for e, _ in cited] or lines.excerpts
    said = _content(claims(sentence))
    best: tuple[tuple[int, int], str] | None = None
    first_why = ""
    for e in candidates:
        rows = e.text.splitlines()
        for line in range(e.start_line, e.end_line + 1):
            window = lines.window(e, line)
            if window is None:
                continue
            why = why_not(sentence, window, question)
            if not why:
                shared = (len(said & _content(rows[line - e.start_line])), len(said & _content(window)))
                if best is None or shared > best[0]:
                    best = (shared, f"{e.path}:{line}")
            elif not first_why:
                first_why = why
    if best is not None:
        return Held(best[1])
    return Held(why=first_why or "no line of the excerpts holds it")
