"""The "checked" answer of `ask`: what codeasst knows for certain first, then the model's
explanation with every sentence held to the excerpt it cites.

- The lead is built without the model: the definitions among the best excerpts, each with
  its qualified name, `path:line`, signature and the first line of its docstring. It is true
  of the code by construction, and it reaches the user as soon as retrieval ends.
- Each sentence the model writes is checked against the excerpts it cites (all excerpts when it
  cites none): a code name, a number or a quoted string that occurs in none of them is a claim
  codeasst cannot back, so the sentence is left out and listed. A repeated sentence or item is
  left out, and an opening line ("... in the following excerpts:") with nothing after it too.
- A sentence that states a relation between two code names ("A calls B", "A is called by B",
  returns, raises, inherits from) is held to the code graph (codeasst.answer.relations): a
  relation the code does not have, a backwards one included, is left out with why.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from codeasst.answer import grounding
from codeasst.answer.lines import LIST_MARK, PLACE, Lines, hold
from codeasst.index.outline_focus import DOCSTRING

DEFINITION_KINDS = frozenset({"function", "method", "class"})
# A definition's first line, in the languages the chunker parses.
SIGNATURE_START = re.compile(r"^\s*(?:(?:export|default|public|private|protected|static|async|pub|final|abstract|"
                             r"override|inline|virtual|unsafe)\s+)*"
                             r"(?:def|class|function|func|fn|interface|struct|type|enum|trait|impl)\b")
COMMENT = re.compile(r"^\s*(?://+|#+|/\*+|\*+)\s?(.*?)\s*(?:\*/)?$")
# Not before a quote: a quoted question ends in "?" too.
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*(\[])")
# The citations that end a line, and the stop after them.
TRAILING_PLACE = re.compile(rf"((?:\s*(?:{PLACE.pattern}))+)\s*([.!?]?)\s*$")
# An indented line that reads as code, not as a wrapped bullet.
CODE_LINE = re.compile(r"^(?: {4,}|\t)(?![-*+] |\d+[.)] )(?:(?:def|class|return|import|from|if|elif|else|for|while|"
                       r"try|except|with|raise|yield|func|var|let|const)\b|.*[=(){}\[\];])")
# An error a definition raises or returns: Python's raise, Go's panic, fmt.Errorf and errors.New.
RAISES = re.compile(r"\braise\s+([A-Z]\w*(?:\.\w+)*)|\b(panic)\(|\b(Errorf)\(|\berrors\.(New)\(")
STRING = re.compile(r"""[fbrRu]?"((?:[^"\\\n]|\\.){4,})"|[fbrRu]?'((?:[^'\\\n]|\\.){4,})'""")
MAX_ERRORS = 3
# The lead: up to MAX_LEAD definitions, the first with its outline, then those of its file (a class and
# its method) with theirs and the next best of other files as one line each (OTHER_FILE, OTHER_OUTLINED):
# tune, 44 keyed rows and 48 SWE-QA rows, lead alone: one file's, fact recall 0.402, an expected file
# shown 0.604, 0.92 files, lines p50/p90 27.5/42; other files outlined 0.426, 0.708, 1.71, 38/53; other
# files as one line 0.407, 0.708, 1.71, 28.5/43, and with three definitions 0.407, 0.708, 2.0, 28.5/43.
MAX_LEAD = 3
OTHER_FILE = True
OTHER_OUTLINED = False
# A model whose last sentences all claimed what the excerpts do not show has lost the thread.
MAX_FAILED_IN_A_ROW = 3
# The model explains in at most this many sentences; the lead and outline carry the rest.
MAX_SENTENCES = 3


@dataclass(frozen=True)
class Definition:
    name: str
    path: str
    line: int
    end_line: int
    signature: str
    doc: str
    errors: tuple[str, ...] = ()

    def render(self) -> str:
        if not self.signature:  # a module: what its own docstring says it is
            return f"- {self.path}:{self.line}-{self.end_line}, as its docstring says: {self.doc}"
        doc = f": {self.doc}" if self.doc else ""
        errors = f"\n  errors: {'; '.join(self.errors)}" if self.errors else ""
        return f"- `{self.name}` at {self.path}:{self.line}-{self.end_line}, `{self.signature}`{doc}{errors}"


def _first_sentence(text: str, limit: int = 160) -> str:
    text = " ".join(text.split()).strip("\"' ")
    cut = re.search(r"(?<=[.!?])\s", text)
    text = text[: cut.start()] if cut else text
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def _signature_and_doc(lines: list[str], start: int) -> tuple[str, str]:
    """A definition's signature (to the line that opens its body, at most 13 lines) and its
    doc (a Python docstring after it, or the comment just above it)."""
    end = start
    while end < min(start + 12, len(lines) - 1) and not lines[end].rstrip().endswith((":", "{")):
        end += 1
    signature = " ".join(" ".join(lines[start:end + 1]).split()).rstrip(":{ ").strip()
    signature = signature.replace("( ", "(").replace(", )", ")").replace(",)", ")").replace(" )", ")")
    if len(signature) > 200:
        signature = signature[:197].rstrip() + "..."
    after = lines[end + 1:end + 2]
    match = DOCSTRING.match(after[0]) if after else None
    if match:
        body = [match.group(2)] + lines[end + 2:end + 6]
        return signature, _first_sentence(" ".join(body).split(match.group(1))[0])
    above: list[str] = []
    for line in reversed(lines[:start]):
        comment = COMMENT.match(line)
        if not comment or line.strip().startswith("@"):
            break
        above.insert(0, comment.group(1))
    return signature, _first_sentence(" ".join(above)) if above else ""


def errors_of(lines: list[str]) -> tuple[str, ...]:
    """The errors a definition's code raises or returns, each with the first words of its message
    (in the statement, or on the lines just before it, where Go builds the message first)."""
    found: list[str] = []
    for i, line in enumerate(lines):
        match = RAISES.search(line)
        if not match or line.lstrip().startswith(("#", "//", "*")):
            continue
        kind = match.group(1) or ("panic" if match.group(2) else "error")
        # The statement's own lines while its parentheses are open; else a message just assigned.
        last = i
        while last < min(i + 3, len(lines) - 1) and " ".join(lines[i:last + 1]).count("(") > \
                " ".join(lines[i:last + 1]).count(")"):
            last += 1
        before = [b for b in lines[max(0, i - 2):i] if re.search(r":=|\w\s*=\s", b) and not RAISES.search(b)]
        message = STRING.search(" ".join(lines[i:last + 1])) or STRING.search(" ".join(before))
        text = (message.group(1) or message.group(2)).strip() if message else ""
        item = f"`{kind}`" + (f' ("{text[:100]}{"..." if len(text) > 100 else ""}")' if text else "")
        if item not in found:
            found.append(item)
    return tuple(found[:MAX_ERRORS])


def module_doc(lines: list[str], limit: int = 320) -> str:
    """The first paragraph of a Python module's docstring, when the file opens with one."""
    match = DOCSTRING.match(lines[0]) if lines else None
    if not match:
        return ""
    paragraph = [match.group(2)]
    for line in lines[1:12]:
        if not line.strip() or match.group(1) in paragraph[-1]:
            break
        paragraph.append(line)
    text = " ".join(" ".join(paragraph).split(match.group(1))[0].split())
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def definition_of(excerpt: grounding.Excerpt, kind: str, question: str) -> Definition | None:
    """The definition an excerpt shows: the chunk's own when it is one; in a whole file or a
    module's top level, the definition whose name shares the most words with the question."""
    lines = excerpt.text.splitlines()
    starts = [i for i, line in enumerate(lines) if SIGNATURE_START.match(line)]
    inner = _answering(lines, starts, question) if kind in ("file", "module") and excerpt.start_line == 1 else None
    if kind in ("file", "module") and excerpt.start_line == 1:
        summary = module_doc(lines)
        if summary and inner is None:
            last = next((i for i, line in enumerate(lines[1:], start=1) if not line.strip()), len(lines)) - 1
            return Definition(excerpt.name, excerpt.path, 1, 1 + last, "", summary)
    if not starts:
        return None
    if kind in DEFINITION_KINDS:
        start, name, end_line = starts[0], excerpt.name, excerpt.end_line
    elif kind in ("file", "module"):
        wanted = grounding._content_words(question)
        named = [(len(grounding._content_words(" ".join(grounding.DEFINES.findall(lines[i]))) & wanted), i)
                 for i in starts]
        shared, start = max(named, key=lambda pair: (pair[0], -pair[1]))
        if inner is not None:
            shared, start = 1, inner
        if not shared:
            return None
        name = grounding.DEFINES.findall(lines[start])[0]
        later = [i for i in starts if i > start and len(lines[i]) - len(lines[i].lstrip())
                 <= len(lines[start]) - len(lines[start].lstrip())]
        end_line = excerpt.start_line + (later[0] - 1 if later else len(lines) - 1)
    else:
        return None
    signature, doc = _signature_and_doc(lines, start)
    body = lines[start:end_line - excerpt.start_line + 1]
    return Definition(name, excerpt.path, excerpt.start_line + start, end_line, signature, doc, errors_of(body))


def _answering(lines: list[str], starts: list[int], question: str) -> int | None:
    """Of a whole file's definitions, the one whose name (counted twice) and docstring's first line
    share at least INNER_WORDS words with the question: it answers better than the module's own
    docstring does. None where none does."""
    wanted = grounding._content_words(question)
    best, found = INNER_WORDS - 1, None
    for i in starts:
        names = grounding.DEFINES.findall(lines[i])
        doc = next((row for row in lines[i + 1:i + 4] if row.strip() and not row.rstrip().endswith(")")), "")
        score = 2 * len(grounding._content_words(" ".join(names)) & wanted) + len(
            grounding._content_words(doc) & wanted - grounding._content_words(" ".join(names)))
        if names and score > best:
            best, found = score, i
    return found


INNER_WORDS = 3  # a definition of a file answers before its module docstring from this many shared words

# How far above a piece of a long definition its first line is looked for.
MAX_HEAD_LINES = 400


def with_head(excerpt: grounding.Excerpt, root: Path) -> grounding.Excerpt | None:
    """A piece of a long definition (the chunker cuts one into windows that keep its name) from
    the definition's first line on, read from the file: its signature and doc are the lead's.
    None when the file no longer shows that definition above the piece."""
    try:
        lines = (root / excerpt.path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    name = excerpt.name.rsplit(".", 1)[-1]
    top = excerpt.start_line - 1
    for i in range(min(top, len(lines)) - 1, max(top - MAX_HEAD_LINES, 0) - 1, -1):
        if SIGNATURE_START.match(lines[i]) and name in grounding.DEFINES.findall(lines[i]):
            end = min(excerpt.end_line, len(lines))
            return replace(excerpt, start_line=i + 1, end_line=end, text="\n".join(lines[i:end]))
    return None


def lead(excerpts: list[grounding.Excerpt], hits: list, question: str,
         roles: set[str] | frozenset[str] = frozenset({"implementation"}), root: Path | None = None,
         files: Sequence[str] = (), named: Sequence[tuple[str, int]] = ()) -> list[Definition]:
    """The definition the best hit shows, and the next hit's when it is in the same file (a class
    and its method) or both are modules' docstrings; `hits` are retrieval's, by the excerpts'
    rank, for each chunk's kind and file role. None when the best hit is no definition, or of a
    role that does not answer (`roles`, from the question's intent): its docs or a test answer
    better than a definition beside them. A hit that is a later piece of a long definition stands
    for the whole definition, whose start is read under `root`. `files`: the files BM25 over whole
    files ranks first for the question, best first (a signal for the ranked lead); `named`: the places
    (path, first line) of the definitions the question names."""
    found: list[Definition] = []
    passed = False
    ordered = sorted(excerpts, key=lambda e: e.rank)
    if RANKED:
        ordered = _by_answer(ordered, hits, question, roles, files, named)
    for excerpt in ordered[:MAX_LEAD + 1]:
        hit = hits[excerpt.rank]
        definition = None
        if hit.role in roles:
            definition = definition_of(excerpt, hit.kind, question)
            if definition is None and root is not None and hit.kind in DEFINITION_KINDS:
                head = with_head(excerpt, root)
                definition = definition_of(head, hit.kind, question) if head else None
            if definition is None and not found and not passed:
                passed = True  # code of the right role that defines nothing (a table of values): the next hit may lead
                continue
        if len(found) == MAX_LEAD:
            break
        # A second one from the same file (a class and its method), or a second module's own summary.
        if definition is None or found and definition.path != found[0].path and (
                definition.signature or found[0].signature) and not OTHER_FILE:
            break
        if all(d.name != definition.name for d in found):
            found.append(definition)
    return found


# The lead is the definition that answers, ranked among the best hits' definitions by the question's
# words in its name, its docstring and its body, and by its hit's rank (issue 51).
RANKED = True
RANKED_HITS = 10  # of the best hits, those whose definitions compete for the lead (tune: 3, 6 and 10 hits 0.358, 0.358, 0.366)
NAME_WEIGHT, DOC_WEIGHT, BODY_WEIGHT, RANK_WEIGHT = 3.0, 1.5, 0.5, 2.0
# Its file's place among the files BM25 over whole files ranks first: FILE_WEIGHT / (place + 1), for
# the first FILE_DEPTH files (a file's words say what it is about where a chunk's few do not).
FILE_WEIGHT, FILE_DEPTH = 1.0, 5
NAMED_WEIGHT = 6.0  # a definition the question names (`validates_schema`, `FlagSet.Parse`)  # tune: 0 / 1 / 2 / 4: fact recall 0.385 / 0.402 / 0.394 / 0.394


def _by_answer(excerpts: list[grounding.Excerpt], hits: list, question: str, roles,
               files: Sequence[str] = (), named: Sequence[tuple[str, int]] = ()) -> list:
    """The first RANKED_HITS excerpts, those that show a definition of a wanted role first, by how well
    it answers: the question's words in its name (NAME_WEIGHT each), its docstring and its lines, its
    hit's rank, its file's place in BM25 over whole files, and whether the question names it; then the
    others, in rank order."""
    file_place = {path: place for place, path in enumerate(files[:FILE_DEPTH])}
    if not excerpts or hits[excerpts[0].rank].role not in roles:
        return excerpts  # docs or a test answer better than a definition beside them: no lead
    wanted = grounding._content_words(question)
    scored = []
    for place, excerpt in enumerate(excerpts[:RANKED_HITS]):
        hit = hits[excerpt.rank]
        definition = definition_of(excerpt, hit.kind, question) if hit.role in roles else None
        if definition is None:
            continue
        name = grounding._content_words(definition.name.rsplit(".", 1)[-1]) & wanted
        doc = grounding._content_words(definition.doc) & wanted - name
        body = grounding._content_words(excerpt.text) & wanted - name - doc
        score = (NAME_WEIGHT * len(name) + DOC_WEIGHT * len(doc) + BODY_WEIGHT * len(body)
                 + RANK_WEIGHT / (place + 1))
        if excerpt.path in file_place:
            score += FILE_WEIGHT / (file_place[excerpt.path] + 1)
        if (definition.path, definition.line) in named:
            score += NAMED_WEIGHT
        scored.append((score, -place, excerpt))
    if not scored:
        return excerpts
    best = max(scored, key=lambda item: (item[0], item[1]))[2]
    defining = [e for _, _, e in scored if e is not best]  # scored in rank order
    # the best first, then the other definitions in rank order (one may join it: a method of its class,
    # a second module's docstring), then the hits that define nothing
    return [best, *defining] + [e for e in excerpts if e is not best and all(e is not d for d in defining)]


def render_lead(definitions: list[Definition], outlines: dict | None = None) -> str:
    """The lead: each definition, and under it its outline (the lines that carry its logic, index/outline.py)
    where `outlines` has one by (path, line); its first line is the signature already shown."""
    if not definitions:
        return ""
    parts = []
    for d in definitions:
        parts.append(d.render())
        found = (outlines or {}).get((d.path, d.line))
        if found is not None and len(found.lines) > 1:
            rendered = found.render()
            parts += ["  " + line for line in (rendered[1:] if found.lines[0].number == d.line else rendered)]
    return "In the code:\n" + "\n".join(parts) + "\n\n"


def _cite(text: str, place: str) -> str:
    """`text` with its citations replaced by the line that backs it, before its closing stop."""
    bare = re.sub(r"[ \t]{2,}", " ", PLACE.sub("", text)).rstrip()
    stop = re.search(r"\s*([.!?:;,]?)$", bare)
    return f"{bare[:stop.start()].rstrip()} [{place}]{stop.group(1)}"


def _normal(line: str) -> str:
    text = PLACE.sub("", LIST_MARK.sub("", line))
    return re.sub(r"\d+", "#", " ".join(text.lower().split())).strip(" .")


class LineChecker:
    """Takes the answer as CitingStream writes it (citations already as places) and gives back
    what may be shown, a sentence at a time as each ends: each sentence checked, repeats, a
    dangling opener and code left out."""

    def __init__(self, excerpts: list[grounding.Excerpt], question: str,
                 relations: Callable[[str, list[str]], str | None] | None = None,
                 outlines: Mapping[int, Sequence[tuple[int, str]]] | None = None) -> None:
        self.excerpts = excerpts
        self.lines = Lines(excerpts, outlines)  # what each sentence is held to (answer/lines.py)
        self.places: list[tuple[str, int]] = []  # the line each shown sentence cites
        self.question = question
        self.relations = relations  # why a relation the sentence states is not in the code (answer/relations.py)
        self.pending = ""
        self.held = ""  # an opening line ending in ":", shown only if something follows it
        self.seen: set[str] = set()
        self.in_code = False
        self.line_kept = ""  # what of the current line was shown
        self.code_noted = False  # the code block under way is already listed as left out
        self.shown = 0  # sentences shown
        self.failed = 0  # sentences left out in a row for what they claim
        self.done = False  # nothing the model writes from here on would be shown: stop it
        self.dropped: list[tuple[str, str]] = []  # (sentence, why)
        self.tail = ""  # the last two characters shown

    def feed(self, text: str) -> str:
        self.pending += text
        shown = self._feed()
        # No blank lines before the first sentence, nor two in a row (where code was left out).
        shown = re.sub(r"\n{3,}", "\n\n", self.tail + shown)[len(self.tail):] if self.tail else shown.lstrip("\n")
        self.tail = (self.tail + shown)[-2:]
        return shown

    def _feed(self) -> str:
        out = []
        while self.pending and not self.done:
            newline = self.pending.find("\n")
            ended = None if self.in_code or self.pending.lstrip().startswith("`" * 3) else \
                SENTENCE_END.search(self.pending)
            if ended and (newline < 0 or ended.start() < newline):
                sentence, self.pending = self.pending[: ended.start()], self.pending[ended.end():]
                out.append(self._sentence(sentence))
            elif newline >= 0:
                line, self.pending = self.pending[:newline], self.pending[newline + 1:]
                out.append(self._line_end(line))
            else:
                break
        return "".join(out)

    def close(self) -> str:
        out = self._line_end(self.pending, last=True) if self.pending and not self.done else ""
        self.pending = ""
        if self.held:
            self.dropped.append((self.held.strip(), "an opening line with nothing after it"))
            self.held = ""
        return out.rstrip("\n") + ("\n" if out.strip() else "")

    def _check(self, sentence: str, places: str = "") -> str | None:
        """The place a sentence may be shown with (the line that backs it), or None, recorded with why."""
        if not grounding.WORD.search(PLACE.sub("", sentence)):
            return None
        key = _normal(sentence)
        if key in self.seen:
            self.dropped.append((sentence.strip(), "repeats an earlier sentence"))
            return None
        held = hold(sentence + " " + places, self.lines, self.question)
        wrong = held.why
        if not wrong and self.relations is not None:
            wrong = self.relations(sentence, [held.place.rsplit(":", 1)[0]])
        if wrong:
            self.dropped.append((sentence.strip(), wrong))
            self.failed += 1
            self.done = self.done or self.failed >= MAX_FAILED_IN_A_ROW
            return None
        self.seen.add(key)
        self.shown += 1
        self.failed = 0
        path, line = held.place.rsplit(":", 1)
        self.places.append((path, int(line)))
        self.done = self.done or self.shown >= MAX_SENTENCES
        return held.place

    def _sentence(self, sentence: str) -> str:
        """A sentence that ended with more of its line to come."""
        place = self._check(sentence)
        if place is None:
            return ""
        sentence = _cite(sentence, place)
        shown = " " + sentence.strip(" ") if self.line_kept else self._release() + sentence
        self.line_kept += shown
        return shown

    def _line_end(self, line: str, last: bool = False) -> str:
        """The rest of a line: its last sentence, and the citation at its end, which backs it."""
        end = "" if last else "\n"
        kept_before, self.line_kept = self.line_kept, ""
        code = CODE_LINE.match(line) or self.code_noted and line.startswith(("    ", "\t"))
        if line.strip().startswith("`" * 3) or self.in_code or code and not kept_before:
            # Code the model writes is either a copy of an excerpt (Sources has it) or made up:
            # neither is a claim to show. One note for each block.
            if line.strip().startswith("`" * 3):
                self.in_code = not self.in_code
            # Code after an explanation is the model restating the excerpts: nothing more to show.
            self.done = self.done or bool(self.shown)
            if not self.code_noted:
                self.dropped.append((line.strip()[:80], "code: the excerpts are in Sources"))
                self.code_noted = True
            return ""
        self.code_noted = False
        if not line.strip():
            return (self._release() + end) if kept_before or not self.held else ("" if not kept_before else end)
        trailing = TRAILING_PLACE.search(line)
        places = trailing.group(1).strip() if trailing else ""
        body = line[: trailing.start()] if trailing else line
        place = self._check(body, places) if body.strip() else None
        if place is not None:
            body = _cite(body + (trailing.group(2) if trailing else ""), place)
            text = " " + body.strip(" ") if kept_before else body
            if not kept_before and PLACE.sub("", text).rstrip().endswith(":") and not last:
                released = self._release()
                self.held = text + end
                return released
            return self._release() + text + end
        return end if kept_before else ""

    def _release(self) -> str:
        held, self.held = self.held, ""
        return held
