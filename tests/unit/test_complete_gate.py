"""The learned confidence gate (complete/confidence.py): the model file ships in the package, loads in
milliseconds, knows every feature `complete` computes, and silences what it expects to cost the user."""

from __future__ import annotations

import time

from codeasst.backends.base import Token
from codeasst.backends.fake import ScriptedLLM
from codeasst.complete import confidence
from codeasst.complete.fim import CompleteOptions, complete
from codeasst.complete.scope import locate


class Sure(ScriptedLLM):
    def __init__(self, replies, logprob):
        super().__init__(replies)
        self.logprob = logprob

    def stream(self, prompt, params):
        for token in super().stream(prompt, params):
            yield Token(token.text, logprob=self.logprob)


PREFIX, SUFFIX = "def total(xs):\n    n = 0\n    for x in xs:\n        n += x\n    ", "\n\n\nprint(total([1]))\n"


def test_the_shipped_model_loads_fast_and_knows_every_feature():
    confidence.gate_model.cache_clear()
    started = time.perf_counter()
    model = confidence.gate_model()
    assert model is not None, "codeasst/complete/gate_model.json ships in the package"
    assert time.perf_counter() - started < 0.05
    hole = locate(PREFIX, SUFFIX, 4)
    values = {**confidence.position(PREFIX, hole, "bundled"),
              **confidence.features(PREFIX, SUFFIX, "return n", "return n\n", [(7, -0.1), (9, -0.2)], "python")}
    assert set(model.names) == set(values)
    assert 0.0 < model.threshold("end") < 1.0 and model.trained_on


def test_a_sure_model_is_shown_and_an_unsure_one_silenced_by_the_gate():
    sure = complete(Sure(["return n\n"], -0.01), PREFIX, SUFFIX, "python")
    assert sure.text == "return n" and sure.confidence is not None
    unsure = complete(Sure(["return n\n"], -2.5), PREFIX, SUFFIX, "python")
    assert unsure.text == "" and unsure.candidate == "return n"
    assert unsure.confidence < sure.confidence and "cost more than it gives" in unsure.reason
    # the operating point is the user's to move: at 0 every candidate shows
    shown = complete(Sure(["return n\n"], -2.5), PREFIX, SUFFIX, "python", CompleteOptions(min_confidence=0.0))
    assert shown.text == "return n"


def test_where_no_suggestion_paid_for_itself_the_model_is_not_asked(monkeypatch):
    from codeasst.tasks.complete import Position, silence_reason

    monkeypatch.setattr(confidence, "gate_model", lambda: confidence.GateModel(
        ("mean_logprob",), (0.0,), (1.0,), (1.0,), 0.0, {"mid-line": 1.01, "line-start": 0.5}))
    options = CompleteOptions()
    mid = Position("def f(x):\n    return x +", "\n")
    assert "no mid-line suggestion" in silence_reason(mid, "m.py", options)
    assert silence_reason(Position(PREFIX, SUFFIX), "m.py", options) == ""  # a line's start: asked
    assert silence_reason(mid, "m.py", CompleteOptions(min_confidence=0.2)) == ""  # the user's own threshold
