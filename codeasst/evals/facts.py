"""Key facts: what a correct answer must state, and what a wrong one would, for `codeasst eval ask`.

A row may carry `facts`, a list of 2 to 4 facts, each a list of acceptable forms, and `wrong`,
statements that would be false, in the same shape. A form is found in an answer when it occurs
in the answer's text, compared case-insensitively with backticks removed and runs of whitespace
as one space; a form starting with `re:` is a regular expression searched the same way.
`answerable: false` marks a question the repository does not answer: there the right answer
is to say so (an abstention), and the row is scored apart.

What is scored is what the answer claims: citations (`path:12-30`, `(see ...)`) are places, not
claims, and words the answer echoes from the question (a run of 4 or more in the question's own
order) state nothing the user did not say. Both are taken out before the forms are looked for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from codeasst.errors import UsageError


def normal(text: str) -> str:
    return " ".join(text.replace("`", "").split()).lower()


def form_found(form: str, normalized: str) -> bool:
    if form.startswith("re:"):
        return re.search(form[3:], normalized, re.IGNORECASE) is not None
    return normal(form) in normalized


def found(forms: list[str], text: str) -> bool:
    normalized = normal(text)
    return any(form_found(form, normalized) for form in forms)


ECHO_WORDS = 4


def _token(word: str) -> str:
    return word.strip(".,;:!?\"'()[]").lower()


def claims(text: str, question: str) -> str:
    """The answer without its citations and without the runs of words it echoes from the question."""
    from codeasst.answer.citations import CITATION
    from codeasst.answer.lines import PLACE

    words = CITATION.sub(" ", PLACE.sub(" ", text.replace("`", ""))).split()
    asked = [_token(w) for w in question.replace("`", "").split()]
    runs = {tuple(asked[i:i + ECHO_WORDS]) for i in range(len(asked) - ECHO_WORDS + 1)}
    echoed = [False] * len(words)
    tokens = [_token(w) for w in words]
    for i in range(len(words) - ECHO_WORDS + 1):
        if tuple(tokens[i:i + ECHO_WORDS]) in runs:
            echoed[i:i + ECHO_WORDS] = [True] * ECHO_WORDS
    return " ".join(w for w, gone in zip(words, echoed, strict=True) if not gone)


@dataclass
class FactScore:
    facts: int  # facts the key lists
    stated: list[int]  # indexes of the facts the answer states
    wrong: list[int]  # indexes of the wrong statements it makes
    answerable: bool

    @property
    def recall(self) -> float:
        return len(self.stated) / self.facts if self.facts else 1.0


def has_key(row: dict) -> bool:
    return "facts" in row or row.get("answerable") is False


def check_row(row: dict, where: str) -> None:
    """A one-line UsageError for a key that cannot be scored (before any answer is asked)."""
    if not has_key(row):
        return
    facts, wrong = row.get("facts", []), row.get("wrong", [])
    shapes = [facts, wrong, *facts, *wrong]
    if not all(isinstance(s, list) for s in shapes) or not all(isinstance(f, str) and f for s in facts + wrong
                                                                 for f in s):
        raise UsageError(f"{where}: facts and wrong must be lists of lists of non-empty strings")
    if row.get("answerable", True) and not facts:
        raise UsageError(f"{where}: an answerable row needs at least one fact")
    for form in (f for s in facts + wrong for f in s if f.startswith("re:")):
        try:
            re.compile(form[3:])
        except re.error as exc:
            raise UsageError(f"{where}: bad regular expression {form!r}: {exc}") from None


def score_facts(row: dict, text: str) -> FactScore:
    text = claims(text, row.get("question", ""))
    facts, wrong = row.get("facts", []), row.get("wrong", [])
    return FactScore(facts=len(facts), stated=[i for i, forms in enumerate(facts) if found(forms, text)],
                     wrong=[i for i, forms in enumerate(wrong) if found(forms, text)],
                     answerable=row.get("answerable", True))
