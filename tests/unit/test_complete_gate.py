"""The completion gate (complete/gate.py) and its learned model (complete/confidence.py): the model file
ships in the package, loads in milliseconds, knows every feature `complete` computes, and silences what it
expects to cost the user; the gate's threshold rule is one, and the text around the cursor is parsed once."""

from __future__ import annotations

import time
from types import SimpleNamespace

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
    from codeasst.complete.gate import check

    def silence_reason(at, path, options):  # what prepare() asks the gate before the model's turn
        return check(at.prefix, at.suffix, "python", options).reason

    monkeypatch.setattr(confidence, "gate_model", lambda: confidence.GateModel(
        ("mean_logprob",), (0.0,), (1.0,), (1.0,), 0.0, {"mid-line": 1.01, "line-start": 0.5}))
    options = CompleteOptions()
    mid = SimpleNamespace(prefix="def f(x):\n    return x +", suffix="\n")
    assert "no mid-line suggestion" in silence_reason(mid, "m.py", options)
    assert silence_reason(SimpleNamespace(prefix=PREFIX, suffix=SUFFIX), "m.py", options) == ""  # a line's start: asked
    assert silence_reason(mid, "m.py", CompleteOptions(min_confidence=0.2)) == ""  # the user's own threshold


def test_the_threshold_rule_is_the_gates_before_and_after_the_model_is_asked(monkeypatch):
    from codeasst.complete import gate

    model = confidence.GateModel(("mean_logprob",), (0.0,), (1.0,), (1.0,), 0.0, {"mid-line": 1.01, "line-start": 0.5})
    monkeypatch.setattr(confidence, "gate_model", lambda: model)
    assert gate.threshold(model, "mid-line", None) == 1.01 and gate.threshold(model, "end", None) == 0.5
    assert gate.threshold(model, "mid-line", 0.2) == 0.2  # the user's own
    sure = {"mean_logprob": 60.0}  # a probability of 1.0, all but
    # Where the model is not asked, no candidate would have passed: the same rule silences it after.
    assert gate.never_worth_asking("mid-line", None) and "cost more" in gate.judge("mid-line", sure, -0.1,
                                                                                   CompleteOptions())[0]
    assert not gate.never_worth_asking("mid-line", 0.2)
    assert gate.judge("mid-line", sure, -0.1, CompleteOptions(min_confidence=0.2))[0] == ""
    assert gate.judge("between", {"mean_logprob": -3.0}, -3.0, CompleteOptions())[0].startswith("the gate expects")


def test_the_text_around_the_cursor_is_parsed_once_a_request(monkeypatch):
    """The gate reads the text before the model is asked, the cut compares every try with it: one parse
    of it serves both (and every try), however many lines the cut tries, and the result is the same."""
    from codeasst.complete import cut, gate

    parsed = []
    real = cut.parse
    monkeypatch.setattr(cut, "parse", lambda grammar, text: parsed.append(text) or real(grammar, text))
    prefix, suffix = "def f(items):\n    total = 0\n    ", "\n\nprint(f([1]))\n"
    raw = "    for item in items:\n        total += item\n        total -= (\n"  # indented twice; the last line open
    options = CompleteOptions(min_confidence=0.0)
    checked = gate.check(prefix, suffix, "python", options)
    assert checked.reason == "" and parsed == [prefix + suffix]
    shown = complete(Sure([raw], -0.1), prefix, suffix, "python", options, checked=checked)
    assert shown.text == "for item in items:\n        total += item"
    assert parsed.count(prefix + suffix) == 1  # the gate's, read again by no try of the cut
    parsed.clear()
    alone = complete(Sure([raw], -0.1), prefix, suffix, "python", options)
    assert parsed.count(prefix + suffix) == 1 and len(parsed) >= 3  # the text once, then each try
    assert {**alone.to_json(), "latency_ms": 0} == {**shown.to_json(), "latency_ms": 0}
