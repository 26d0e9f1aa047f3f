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

Near words cannot stand in for a claim:
- a sentence that cites a docstring or a comment is held to one sentence of it, not to words
  gathered from the lines around it;
- a claim of time or condition ("when", "if", "only", "unless") needs its condition's words on a
  condition: the cited line, or the branch header that encloses it (citing a definition's first
  line, a condition of its outline);
- a name written `self.x` or `obj.x` matches the attribute `.x` on the line, and a few words match
  the code that says them (iterates: a `for`; removes: `del`, `.pop(`; a dictionary: `.items()`).

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
PROSE_MARK = "\x00prose "  # a window that is one sentence of a docstring or comment
PRONOUNS = frozenset({"it", "this", "they", "these", "that", "which", "its", "each", "all"})
COMMENT = re.compile(r"^\s*(?:#|//|/\*|\*|--)")
DOC_QUOTES = re.compile(r'"""|\'\'\'')
PROSE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(\[])|\n\s*\n")
# A claim of time or condition, and the clause that says which: up to the next stop or comma.
CONDITION = re.compile(r"\b(?:when(?:ever)?|if|only|unless|once)\b([^,.;:()\[]{0,80})", re.IGNORECASE)
CONDITION_LINE = re.compile(r"^\s*(?:}\s*)?(?:if|elif|else|while|for|case|when|except|catch|switch|unless|guard|"
                            r"match)\b|\bif\b.+\belse\b|\?[^?:]+:|&&|\|\|")
# Words a sentence may use for what the code writes in its own way, by the code that says them.
CODE_FORMS = ((re.compile(r"\bfor\b.+\bin\b|\bfor\s*\(|\.forEach\(|\brange\b"), "iterates loops over each"),
              (re.compile(r"\.items\(\)|\bdict\b|\bMap\b|\bmap\["), "dictionary mapping"),
              (re.compile(r"^\s*del\b|\bdelete\b|\.(?:pop|remove|discard)\("), "removes deletes drops"),
              (re.compile(r"\braise\b|\bthrow\b|\bpanic\("), "raises throws error"),
              (re.compile(r"\breturn\b"), "returns gives"))


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
    missing = [name for name in code_names(text) if not all(part in known for part in name.split(".") if part)
               and not _attribute_on(name, known_text)]
    numbers = set(re.findall(r"\d+(?:\.\d+)?", known_text))
    missing += [n.lstrip("-") for n in NUMBER.findall(text) if n.lstrip("-") not in numbers]
    for match in QUOTED.finditer(text):
        quoted = (match.group(1) or match.group(2)).strip()
        if " " in quoted and quoted not in known_text:
            missing.append(f'"{quoted}"')
    return list(dict.fromkeys(missing))


def _attribute_on(name: str, text: str) -> bool:
    """`self.x` or `obj.x` written in a sentence, where the line has the attribute `.x` of some receiver."""
    parts = [p for p in name.split(".") if p]
    return len(parts) > 1 and bool(re.search(rf"\.{re.escape(parts[-1])}\b", text))


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
        self.blocks: dict[int, list[tuple[int, int] | None]] = {}  # by excerpt number: each row's prose block

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

    def windows(self, excerpt: grounding.Excerpt, line: int) -> list[str] | None:
        """What a sentence citing `line` may be backed by: its window; where the line is prose (a
        docstring or a comment), each sentence of that prose the line is part of, one at a time, with
        the definition's name. None when the excerpt does not show that line."""
        window = self.window(excerpt, line)
        if window is None:
            return None
        prose = self.prose(excerpt, line)
        return [f"{PROSE_MARK}{excerpt.name}\n{sentence}" for sentence in prose] if prose else [window]

    def conditions(self, excerpt: grounding.Excerpt, line: int) -> str:
        """The conditions a claim of "when" or "if" citing `line` may stand on: the line itself where it
        is a condition (or prose), and the headers of the branches that enclose it; for a definition's
        first line, the conditions of its outline."""
        rows = excerpt.text.splitlines()
        i = line - excerpt.start_line
        if not 0 <= i < len(rows):
            return ""
        out = [rows[i]] if CONDITION_LINE.search(rows[i]) or self.prose(excerpt, line) else []
        indent = len(rows[i]) - len(rows[i].lstrip())
        for j in range(i - 1, -1, -1):
            text = rows[j]
            if not text.strip() or len(text) - len(text.lstrip()) >= indent:
                continue
            indent = len(text) - len(text.lstrip())
            if DEF_LINE.match(text):
                break
            if CONDITION_LINE.search(text):
                out.append(text)
        if DEF_LINE.match(rows[i]):
            out += [text for _, text in self.outlines.get(excerpt.number, ()) if CONDITION_LINE.search(text)]
        return "\n".join(out)

    def prose(self, excerpt: grounding.Excerpt, line: int) -> list[str]:
        """The sentences of the docstring or comment `line` is part of that it holds a part of ([]: code)."""
        rows = excerpt.text.splitlines()
        if excerpt.number not in self.blocks:
            self.blocks[excerpt.number] = _prose_blocks(rows)
        blocks = self.blocks[excerpt.number]
        i = line - excerpt.start_line
        block = blocks[i] if 0 <= i < len(blocks) else None
        return _prose_sentences(rows, i, block) if block is not None else []

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


def _prose_sentences(rows: list[str], i: int, block: tuple[int, int]) -> list[str]:
    """The sentences of the prose `block` (rows first..last) that row `i` holds a part of (a row may
    end one sentence and start the next)."""
    first, last = block
    joined, spans = "", []
    for j in range(first, last + 1):
        text = _unmarked(rows[j])
        spans.append((len(joined), len(joined) + len(text)))
        joined += text + "\n"
    mine = spans[i - first]
    out, start = [], 0
    for match in [*PROSE_END.finditer(joined), None]:
        end = match.start() if match else len(joined)
        if start < mine[1] and end > mine[0] and joined[start:end].strip():
            out.append(" ".join(joined[start:end].split()))
        start = match.end() if match else end
    return out


def _prose_blocks(rows: list[str]) -> list[tuple[int, int] | None]:
    """For each row, the rows (first, last) of the comment run or docstring it is in; None for code."""
    out: list[tuple[int, int] | None] = [None] * len(rows)
    j = 0
    while j < len(rows):
        if COMMENT.match(rows[j]):
            last = j
            while last + 1 < len(rows) and COMMENT.match(rows[last + 1]):
                last += 1
            out[j:last + 1] = [(j, last)] * (last + 1 - j)
            j = last + 1
            continue
        quotes = len(DOC_QUOTES.findall(rows[j]))
        if quotes == 1:  # a docstring opens here and closes at the next row with quotes
            last = next((k for k in range(j + 1, len(rows)) if DOC_QUOTES.search(rows[k])), len(rows) - 1)
            out[j:last + 1] = [(j, last)] * (last + 1 - j)
            j = last + 1
            continue
        if quotes >= 2 and DOC_QUOTES.match(rows[j].strip()):
            out[j] = (j, j)  # a docstring on one line
        j += 1
    return out


def _unmarked(row: str) -> str:
    """A row of a comment or docstring without its comment mark or quotes."""
    return DOC_QUOTES.sub(" ", re.sub(r"^\s*(?:#+|//+|/\*+|\*+/?|--)", " ", row)).replace("*/", " ").strip()


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


def _known(window: str) -> set[str]:
    """The words a window holds, and those of the code forms it writes (CODE_FORMS)."""
    known = _content(window)
    for pattern, words in CODE_FORMS:
        if any(pattern.search(row) for row in window.splitlines()):
            known |= grounding._content_words(words)
    return known


def _unmet_condition(text: str, conditions: str, question: str) -> str:
    """The condition a sentence claims ("when the host changes") where no condition it may stand on
    holds a word of it ("" where one does, or it claims none)."""
    held = _known(conditions)
    for match in CONDITION.finditer(text):
        clause = _content(match.group(1)) - _content(question)
        if clause and not clause & held:
            return "its condition is on no condition of the line it cites: " + " ".join(match.group(1).split()[:6])
    return ""


def why_not(sentence: str, window: str, question: str, conditions: str | None = None) -> str:
    """Why `window` does not hold what `sentence` claims ("" where it does); `conditions`: the conditions
    a claim of "when" or "if" may stand on (Lines.conditions), None for no such check."""
    text = claims(sentence)
    missing = unbacked(text, [window], question)
    if missing:
        return "not on the line it cites: " + ", ".join(missing[:3])
    said = _content(text)
    known = _known(window)
    asked = _content(question)
    beyond = _beyond_echo(text, question)
    echoed = len(beyond.split()) < len(re.findall(r"\w+", text))
    if not _specific(text, question) and (not said - asked or echoed and len(_content(beyond) - asked) < ECHO_LEFT):
        return "restates the question"
    if said and len(said & known) < MIN_SHARED * len(said):
        return "most of its words are not on the line it cites: " + ", ".join(sorted(said - known)[:3])
    if said and not (said & known) - asked:
        return "says nothing the line holds beyond the question"
    return (_subject(text, window) or (_other_subject(text, window) if window.startswith(PROSE_MARK) else "")
            or (_unmet_condition(text, conditions, question) if conditions is not None else ""))


def _other_subject(text: str, window: str) -> str:
    """Where the prose sentence a claim cites is about something the claim never names, and the claim
    about something else ("The app context is pushed …" cited for "The request context is …")."""
    prose = window.split("\n", 1)[-1]
    verb, claim_verb = SUBJECT_END.search(prose), SUBJECT_END.search(text)
    if verb is None or claim_verb is None or verb.start() == 0:
        return ""  # an imperative ("Return the …") is said of the definition itself
    head = prose[:verb.start()].split()
    if not head or head[0].lower() in PRONOUNS:
        return ""
    theirs, mine = _content(" ".join(head)), _content(text[:claim_verb.start()])
    if theirs - _content(text) and mine - theirs:
        return "the sentence it cites is about " + " ".join(head)[:40]
    return ""


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
    conditional = bool(CONDITION.search(claims(sentence)))
    pinned = [(e, line) for e, line in cited if line is not None]
    if pinned:
        reasons = []
        for e, line in pinned:
            for near in sorted(range(line - SLACK, line + SLACK + 1), key=lambda n: abs(n - line)):
                windows = lines.windows(e, near)
                if windows is None:
                    if near == line:
                        reasons.append("cites a line it was not shown")
                    continue
                conditions = lines.conditions(e, near) if conditional else None
                whys = [why_not(sentence, window, question, conditions) for window in windows]
                why = "" if "" in whys else whys[0]
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
            windows = lines.windows(e, line)
            if windows is None:
                continue
            conditions = lines.conditions(e, line) if conditional else None
            whys = [why_not(sentence, w, question, conditions) for w in windows]
            why = "" if "" in whys else whys[0]
            window = windows[whys.index("")] if not why else windows[0]
            if not why:
                shared = (len(said & _content(rows[line - e.start_line])), len(said & _content(window)))
                if best is None or shared > best[0]:
                    best = (shared, f"{e.path}:{line}")
            elif not first_why:
                first_why = why
    if best is not None:
        return Held(best[1])
    return Held(why=first_why or "no line of the excerpts holds it")
