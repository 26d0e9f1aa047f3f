"""The logic of `complete` around the model: when to ask, the FIM string, the stops, the statement
cut and silence. The model is scripted here; tests/e2e/test_complete_e2e.py runs the real one."""

from __future__ import annotations

import pytest

from codeasst.backends.base import Token
from codeasst.backends.fake import ScriptedLLM
from codeasst.complete.cut import cut, parses_as_well
from codeasst.complete.fim import CompleteOptions, complete, fim_prompt, mean_logprob
from codeasst.complete.gate import reason_not_to_ask
from codeasst.errors import UsageError
from codeasst.tasks.complete import split_at

FILE = "def area(r):\n    pi = 3.14159\n    \n\n\nprint(area(2))\n"
AT = FILE.index("    \n") + 4  # the empty line of the body, indented


def test_a_position_is_one_based_and_must_lie_in_the_text():
    at = split_at("ab\ncd\n", 2, 2)
    assert (at.prefix, at.suffix) == ("ab\nc", "d\n")
    assert split_at("ab\n", 1, 3).suffix == "\n"  # just past the line's end
    for line, col in [(0, 1), (4, 1), (1, 0), (1, 4)]:
        with pytest.raises(UsageError):
            split_at("ab\ncd\n", line, col)


@pytest.mark.parametrize("prefix, suffix, why", [
    ("x = fib", "onacci(3)\n", "inside an identifier"),
    ("x = foo(", "value, other)\n", "code right of the cursor"),
    ("# compute the ", "\nx = 1\n", "inside a comment"),
    ("s = 'hello ", "'\n", "inside a string"),
])
def test_no_model_call_where_a_suggestion_cannot_help(prefix, suffix, why):
    assert why in reason_not_to_ask("python", prefix, suffix)


@pytest.mark.parametrize("prefix, suffix", [
    ("x = foo(", ")\n"),  # closing punctuation only
    ("def f():\n    ", "\n"),
    ("x = fib", "\n"),  # the end of an identifier: completing it is the point
])
def test_the_model_is_asked_at_the_end_of_code(prefix, suffix):
    assert reason_not_to_ask("python", prefix, suffix) == ""


def test_the_fim_string_is_built_from_qwens_tokens_stable_parts_first():
    prompt = fim_prompt("a = 1\n", "\nb = 2\n", CompleteOptions(context_tokens=100),
                        context=[("util.py", "def helper(): ...")], repo="proj", path="main.py")
    assert prompt == ("<|repo_name|>proj\n<|file_sep|>util.py\ndef helper(): ...\n<|file_sep|>main.py\n"
                      "<|fim_prefix|>a = 1\n<|fim_suffix|>\nb = 2\n<|fim_middle|>")
    # a long prefix keeps its end, cut at a line start
    long = "".join(f"line_{i} = {i}\n" for i in range(2000))
    kept = fim_prompt(long, "", CompleteOptions(prefix_tokens=100)).removeprefix("<|fim_prefix|>")
    kept = kept.removesuffix("<|fim_suffix|><|fim_middle|>")
    assert kept.startswith("line_") and long.endswith(kept) and len(kept) <= 300


def test_typing_at_the_cursor_keeps_the_prompt_before_it_in_both_layouts():
    long = "".join(f"line_{i} = {i}\n" for i in range(2000))
    suffix = "\nprint(done)\n"
    for layout in ("psm", "spm"):
        options = CompleteOptions(prefix_tokens=100, layout=layout)
        prompts = [fim_prompt(long + "total = " + typed, suffix, options) for typed in ("", "c", "co", "cou")]
        starts = {p[:p.index("total = ")] for p in prompts}
        assert len(starts) == 1, f"{layout}: the window moved while the user typed"
    spm = fim_prompt("a = 1\n", "\nb = 2\n", CompleteOptions(layout="spm"))
    assert spm == "<|fim_suffix|>\nb = 2\n<|fim_prefix|>a = 1\n<|fim_middle|>"
    # line after line typed, the window moves in steps of about three lines, not with every line
    ends = [long.index(f"line_{n} =") for n in range(1000, 1300)]
    windows = {fim_prompt(long[:end], "", CompleteOptions(prefix_tokens=100))[:40] for end in ends}
    assert 50 < len(windows) < 150


def test_whole_statements_only():
    prefix, suffix = FILE[:AT], FILE[AT:]
    assert cut("python", prefix, "return pi * r ** 2", suffix, 4) == ("return pi * r ** 2", "")
    # a statement the model did not finish is dropped; the complete lines before it stay
    assert cut("python", prefix, "area = pi * r\nreturn foo(area,", suffix, 4) == ("area = pi * r", "")
    assert cut("python", prefix, "return foo(area,", suffix, 4)[0] == ""
    # mid-line: one line only, and the `)` already right of the cursor is not written twice
    assert cut("python", "x = max(", "a, b)\nprint(x)", ")\n", 4) == ("a, b", "")
    assert cut("python", "def f():\n    ", "   ", "\n", 4) == ("", "whitespace only")


def test_repeating_what_follows_is_silence():
    prefix = "def f(x):\n    "
    suffix = "\n    return x + 1\n"
    assert cut("python", prefix, "return x + 1", suffix, 4) == ("", "repeats the lines after the cursor")
    # the model looping on one line: the loop is cut off
    assert cut("python", prefix, "x += 1\nx += 1\nx += 1", suffix, 4) == ("x += 1", "")


def test_the_check_is_against_the_errors_the_file_already_has():
    broken_elsewhere = "x = (\n"
    assert parses_as_well("python", "def f():\n    ", "return 1", "\n" + broken_elsewhere)
    assert not parses_as_well("python", "def f():\n    ", "return (1,", "\n")


def test_generation_stops_at_a_line_that_leaves_the_block():
    llm = ScriptedLLM(["return pi * r ** 2\n\nprint(area(3))"])
    suggestion = complete(llm, FILE[:AT], FILE[AT:], "python")
    assert suggestion.text == "return pi * r ** 2"
    assert "print(area(3))" not in suggestion.raw  # stopped there, not only cut
    assert llm.history[0].startswith("<|fim_prefix|>def area(r):")


class Unsure(ScriptedLLM):
    def stream(self, prompt, params):
        for token in super().stream(prompt, params):
            yield Token(token.text, logprob=-2.5)


def test_an_unsure_model_is_silent_and_says_why(monkeypatch):
    suggestion = complete(Unsure(["return pi * r ** 2"]), FILE[:AT], FILE[AT:], "python")
    assert suggestion.text == "" and "cost more than it gives" in suggestion.reason  # the learned gate
    assert suggestion.raw == suggestion.candidate == "return pi * r ** 2"
    monkeypatch.setattr("codeasst.complete.confidence.gate_model", lambda: None)  # its file missing: the log-probability
    suggestion = complete(Unsure(["return pi * r ** 2"]), FILE[:AT], FILE[AT:], "python",
                          CompleteOptions(min_mean_logprob=-1.0))
    assert suggestion.text == "" and "unsure" in suggestion.reason


def test_indentation_written_again_at_an_indented_cursor_is_dropped():
    prefix, suffix = "def f(items):\n    total = 0\n    ", "\n    return total\n"
    # the editor indented the line; the model indents again: as written it would not parse
    assert cut("python", prefix, "    for item in items:\n        total += item", suffix, 4) == (
        "for item in items:\n        total += item", "")
    # text that parses as written is kept as written, and a cursor at column 0 keeps the model's indentation
    assert cut("python", prefix, "total += 1", suffix, 4) == ("total += 1", "")
    assert cut("python", "def f():\n", "    return 1", "\n", 4) == ("    return 1", "")
    # written again, it would parse into the block above the cursor: the cursor's indentation wins
    above = "def f(q, stop):\n    if stop:\n        raise ValueError\n\n    "
    assert cut("python", above, "    q.put(1)", "\n", 4) == ("q.put(1)", "")
    # right after a block's opening line the body needs the extra indentation: kept as written
    assert cut("python", "def f(x):\n    if x:\n    ", "    return 1", "\n    return 2\n", 4) == (
        "    return 1", "")
    # the log-probability is that of the tokens that wrote those lines
    raw = "    for item in items:\n        total += item"
    tokens = [(4, -0.1), (22, -0.3), (len(raw), -0.5)]
    assert mean_logprob(tokens, "for item in items:\n        total += item", raw) == pytest.approx(-0.3)
