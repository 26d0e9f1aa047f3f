"""What a question asks of an outline (index/outline.py): the stems of its words and the code forms they
stand for (remove: `del`, `pop`; message: string literals; default: default values), and the lines of a
definition that hold them; less the lines of a Python docstring's first sentence, which the definition's
heading already shows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from codeasst.index.words import stems

# A question word on more than this share of a definition's lines tells none of them apart.
COMMON_SHARE = 0.34

# The code forms a question's words stand for, by the words' stems (index.words.stems).
FORMS = {"delete": frozenset({"remo", "dele", "drop", "disc", "clea", "purg", "unse", "evic", "pop"}),
         "message": frozenset({"mess", "text", "word", "says", "warn"}),
         "default": frozenset({"defa", "fall", "unle", "omit", "miss"})}
_FORM_LINES = {
    "delete": re.compile(r"^\s*del\b|\bdelete\b|\.(?:pop|popitem|discard|remove|clear)\("),
    "message": re.compile(r"""(["'])(?:(?!\1).)*?[A-Za-z]\s+[A-Za-z](?:(?!\1).)*?\1"""),
    "default": re.compile(r"""\bdefaults?\b|\.get\([^,()]+,|setdefault|(?<![=!<>])=\s*(?:None|True|False|null|nil|-?\d|["'\[{])"""),
}


@dataclass(frozen=True)
class Focus:
    """What a question asks, as an outline weighs a line against it: the stems of its words, and the
    code forms they stand for (FORMS)."""

    words: frozenset[str]
    forms: frozenset[str] = frozenset()

    @classmethod
    def of(cls, question: str) -> Focus:
        # "popped" and "pushed" ask about `pop` and `push`: their stems without the ending, too.
        plain = re.sub(r"\b(\w{2,}?)(\w)\2(?:ed|ing)\b", r"\1\2", question)
        plain = re.sub(r"\b(\w{3,}?)(?:ed|ing|es)\b", r"\1", plain)
        words = frozenset(stems(question) | stems(plain))
        return cls(words, frozenset(form for form, said in FORMS.items() if words & said))

    def score(self, text: str, common: frozenset[str] = frozenset()) -> int:
        """How much of the question `text` holds: its words (less the `common` ones), and a code form."""
        found = len((stems(text) & self.words) - common)
        return found + sum(1 for form in self.forms if _FORM_LINES[form].search(text))


def matched_lines(lines: list[str], start: int, end: int, focus: Focus) -> dict[int, int]:
    """Line -> how much of the question it holds, for the lines of `start`..`end` that hold some; a
    word on most of the definition's lines tells none of them apart and is not counted."""
    texts = {n: lines[n - 1] for n in range(start + 1, end + 1) if lines[n - 1].strip()}
    found = {n: stems(t) & focus.words for n, t in texts.items()}
    counts: dict[str, int] = {}
    for words in found.values():
        for word in words:
            counts[word] = counts.get(word, 0) + 1
    common = frozenset(w for w, c in counts.items() if len(texts) >= 6 and c > COMMON_SHARE * len(texts))
    scores = {n: focus.score(texts[n], common) if found[n] or focus.forms else 0 for n in texts}
    return {n: score for n, score in scores.items() if score > 0}


# A Python docstring's opening line: its quotes, and the text after them.
DOCSTRING = re.compile(r'^\s*[rRuUbB]?("""|\'\'\')\s*(.*)')
_SENTENCE_END = re.compile(r"""[.!?](?:\s|$)|\"\"\"|\'\'\'""")


def summary(lines: list[str], start: int, end: int) -> range:
    """The lines of a Python docstring's first sentence (its opening quotes on), which a definition's
    heading shows as its doc: the first lines after the signature, where a docstring opens there."""
    number = start
    while number < end and not lines[number - 1].rstrip().endswith(":"):  # a signature over several lines
        number += 1
    opening = number + 1
    match = DOCSTRING.match(lines[opening - 1]) if opening <= end else None
    if match is None:
        return range(0)
    last = opening
    rest = lines[opening - 1][match.end(1):]
    while not (rest.strip() and _SENTENCE_END.search(rest)) and last < end and lines[last].strip():
        last += 1
        rest = lines[last - 1]
    return range(opening, last + 1)
