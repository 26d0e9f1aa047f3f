"""The completion gate: whether to ask the model at all, and whether to show what it wrote.

Before the model is asked, decided on the CPU in well under a millisecond: as the seed
product does, no suggestion inside a comment or a string (unless configured), in the middle
of an identifier, or where more than a few characters other than closing punctuation sit
right of the cursor; none at a place where no suggestion paid for itself in the learned
gate's data (confidence.py); and none in a file the repository's ignore rules exclude (the
caller checks that).

After, for the candidate the cut kept: the learned model's probability that it is taken,
under the threshold for the cursor's place (`threshold`), silences it; without the model's
file, its mean token log-probability under complete.min_mean_logprob does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from codeasst.complete import confidence
from codeasst.complete.cut import Around
from codeasst.complete.scope import Hole, locate

if TYPE_CHECKING:
    from codeasst.complete.fim import CompleteOptions

_CLOSING = set(")]}\"'`;:,. \t")
_MAX_RIGHT = 3  # characters right of the cursor, other than closing punctuation, that still allow a suggestion
_STRINGS = ("string", "template_string", "raw_string_literal", "string_literal", "interpreted_string_literal")


def threshold(model: confidence.GateModel, place: str, min_confidence: float | None) -> float:
    """The probability of being taken under which a suggestion at `place` (scope.py's) is silenced:
    complete.min_confidence where set, else the model's operating point there; above 1, never shown."""
    return model.threshold(place) if min_confidence is None else min_confidence


def never_worth_asking(place: str, min_confidence: float | None) -> bool:
    """Whether no suggestion at this place can pass the gate, so the model need not be asked."""
    model = confidence.gate_model()
    return model is not None and threshold(model, place, min_confidence) > 1.0


def _inside(around: Around, offset: int) -> str | None:
    """"a comment" or "a string" where the cursor (a byte offset) sits inside one."""
    tree = around.tree
    if tree is None:
        return None
    node = tree.root_node.descendant_for_byte_range(max(0, offset - 1), offset)
    while node is not None:
        kind = node.type
        if "comment" in kind and node.start_byte < offset <= node.end_byte:
            return "a comment"
        if kind in _STRINGS and node.start_byte < offset < node.end_byte:
            return "a string"
        node = node.parent
    return None


def reason_not_to_ask(grammar: str | None, prefix: str, suffix: str, *, in_comments: bool = False,
                      around: Around | None = None) -> str:
    """Why no suggestion should be asked for at the cursor between `prefix` and `suffix`; "" to ask.
    `around`: the text parsed, where the caller keeps it for the cut (checked)."""
    before = prefix[-1:] if prefix else ""
    after = suffix[:1]
    if before and after and (before.isalnum() or before == "_") and (after.isalnum() or after == "_"):
        return "the cursor is inside an identifier"
    rest = suffix.split("\n", 1)[0]
    if sum(1 for ch in rest if ch not in _CLOSING) > _MAX_RIGHT:
        return "there is code right of the cursor"
    if grammar and not in_comments:
        inside = _inside(around or Around(grammar, prefix, suffix), len(prefix.encode("utf-8", "surrogatepass")))
        if inside:
            return f"the cursor is inside {inside}"
    return ""


@dataclass(frozen=True)
class Checked:
    """The gate's word before the model is asked, and what it read to say it: complete() (fim.py) given
    it reads neither the cursor's place nor the text again."""

    reason: str  # why the model is not asked; "" to ask
    hole: Hole | None  # where the cursor is (scope.py); None where a reason came first
    around: Around | None  # the text parsed; None without a grammar


def check(prefix: str, suffix: str, grammar: str | None, options: CompleteOptions) -> Checked:
    """Whether to ask the model at the cursor between `prefix` and `suffix` in a file of `grammar`:
    decided from the text alone, so a server answers it without waiting for the model's turn."""
    around = Around(grammar, prefix, suffix) if grammar else None
    if why := reason_not_to_ask(grammar, prefix, suffix, in_comments=options.in_comments, around=around):
        return Checked(why, None, around)
    hole = locate(prefix, suffix, options.max_lines, options.multiline)
    if never_worth_asking(hole.place, options.min_confidence):
        return Checked(f"the gate shows no {hole.place} suggestion with this model (none paid for itself where it "
                       "was trained; complete.min_confidence shows them)", hole, around)
    return Checked("", hole, around)


def judge(place: str, features: dict[str, float], mean_logprob: float | None,
          options: CompleteOptions) -> tuple[str, float | None]:
    """Why the gate silences a candidate ("" to show it), and the learned model's probability that it is
    taken, given its `features`, at the cursor's `place` (None without the model's file, where the
    candidate's mean token log-probability under complete.min_mean_logprob silences it)."""
    model = confidence.gate_model()
    if model is None:
        if mean_logprob is not None and mean_logprob < options.min_mean_logprob:
            return f"the model is unsure (mean log-probability {mean_logprob:.2f} < {options.min_mean_logprob})", None
        return "", None
    limit = threshold(model, place, options.min_confidence)
    taken = model.probability(features)
    if taken < limit:
        return f"the gate expects it to cost more than it gives (confidence {taken:.2f} < {limit:.2f})", taken
    return "", taken
