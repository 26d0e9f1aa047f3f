"""The confidence gate: whether a suggestion is worth the user's attention, by a small learned model.

The mean token log-probability alone does not tell right from wrong on these models
(docs/benchmarks.md, issue 10). A logistic regression over what can be computed per
request does better: the log-probabilities (mean, minimum, first token), the suggestion's
size, whether its names are already in the file, whether the file still compiles with it,
whether it copies a line just above, where the cursor is (scope.py's place), what is left
of the cursor on its line, and which model wrote it.

It was trained by `bench/train_gate.py` (scikit-learn) on the dev set's tuning split and on
typing replays of repositories no report is made on, and its operating point maximises
Happiness per request there, one for suggestions mid-line and one for those at a line's
start: a suggestion is shown when the probability that it is taken is above the operating
point for its place (or complete.min_confidence). A place whose operating point is above 1
never paid for itself in that data: there the model is not asked at all. The rule that applies
these, before and after the model is asked, is the gate's (gate.py).
The file ships in the package; it is a few coefficients read with `json`, in well under a
millisecond.
"""

from __future__ import annotations

import ast
import json
import keyword
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from codeasst.complete.scope import Hole, normalised

MODEL_FILE = Path(__file__).with_name("gate_model.json")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PLACES = ("mid-line", "opened", "between", "end")
_NEARBY_LINES = 12  # lines above the cursor a suggestion may copy


def covering(tokens: list[tuple[int, float]], text: str, raw: str | None = None) -> list[float]:
    """The log-probabilities of the tokens that wrote `text`: a prefix of the model's text `raw`, or
    its first lines with their indentation cut (cut.py), counted here as those lines of `raw`.
    `tokens` holds where each token ends in `raw`, and its log-probability."""
    if raw is not None and not raw.startswith(text):
        text = "\n".join(raw.split("\n")[: text.count("\n") + 1])
    starts = [0, *(end for end, _ in tokens)]
    return [lp for (_, lp), start in zip(tokens, starts, strict=False) if start < len(text)]


def position(prefix: str, hole: Hole, model: str) -> dict[str, float]:
    """What is known before the model is asked: where the cursor is, and which model would answer."""
    left = prefix[prefix.rfind("\n") + 1:].strip()
    values = {
        "column_one": float(hole.column_one),
        "left_chars": math.log1p(len(left)),
        "after_word": float(bool(left) and (left[-1].isalnum() or left[-1] == "_")),
        "after_open": float(bool(left) and left[-1] in "([{,=:"),
        "larger_model": float("1.5b" in model.lower()),
    }
    values.update({f"place_{p}": float(hole.place == p) for p in _PLACES})
    return values


def features(prefix: str, suffix: str, candidate: str, raw: str, tokens: list[tuple[int, float]],
             grammar: str | None) -> dict[str, float]:
    """What the gate knows of one suggestion besides its position(): `candidate` is what the cut kept
    of the model's `raw` text, `tokens` where each token ends in `raw` and its log-probability."""
    logprobs = covering(tokens, candidate, raw) or [0.0]
    window = prefix[-3000:] + suffix[:1500]
    names = {n for n in _NAME.findall(candidate) if not keyword.iskeyword(n) and len(n) > 1}
    known = sum(1 for n in names if re.search(rf"\b{re.escape(n)}\b", window))
    line_start = prefix[prefix.rfind("\n") + 1:]
    nearby = {normalised(line) for line in prefix.split("\n")[-_NEARBY_LINES - 1:-1] if line.strip()}
    first = candidate.split("\n")[0]
    return {
        "mean_logprob": sum(logprobs) / len(logprobs),
        "sum_logprob": sum(logprobs),  # the log-probability of the whole text: it must all be right to be taken
        "min_logprob": min(logprobs),
        "first_logprob": logprobs[0],
        "tokens": math.log1p(len(logprobs)),
        "chars": math.log1p(len(candidate.strip())),
        "lines": float(candidate.strip("\n").count("\n") + 1),
        "cut_short": float(len(raw.rstrip()) > len(candidate.rstrip())),
        "known_names": known / len(names) if names else 1.0,
        "new_names": math.log1p(len(names) - known),
        "compiles": _compiles(grammar, prefix + candidate + suffix),
        "copies_a_line_above": float(normalised(line_start + first) in nearby),
    }


def _compiles(grammar: str | None, text: str) -> float:
    if grammar != "python":
        return 0.5  # unknown
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return 0.0
    return 1.0


@dataclass(frozen=True)
class GateModel:
    names: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float
    thresholds: dict[str, float]  # operating points chosen for Happiness per request: mid-line, line-start
    trained_on: str = ""

    def threshold(self, place: str) -> float:
        """The operating point where the cursor is (scope.py's place); above 1, never shown."""
        return self.thresholds["mid-line" if place == "mid-line" else "line-start"]

    def probability(self, values: dict[str, float]) -> float:
        z = self.intercept + sum(c * (values.get(n, 0.0) - m) / s
                                 for n, m, s, c in zip(self.names, self.mean, self.scale, self.coef, strict=True))
        return 1 / (1 + math.exp(-max(-60.0, min(60.0, z))))


@lru_cache(maxsize=1)
def gate_model() -> GateModel | None:
    """The shipped model; None where the file is missing (silence is then decided by the log-probability)."""
    try:
        data = json.loads(MODEL_FILE.read_text(encoding="utf-8"))
        return GateModel(tuple(data["names"]), tuple(data["mean"]), tuple(data["scale"]), tuple(data["coef"]),
                         float(data["intercept"]), {k: float(v) for k, v in data["thresholds"].items()},
                         data.get("trained_on", ""))
    except (OSError, ValueError, KeyError, TypeError):
        return None
