"""Suggestions that fit the hole (complete/scope.py and the stops in complete/fim.py): the block inferred at
column 1, no code past the enclosing definition, nothing that restates the lines after the cursor, one line
between two statements, and a suffix budget from the machine's speed. The model is scripted here."""

from __future__ import annotations

from codeasst.backends.fake import ScriptedLLM
from codeasst.complete.fim import CompleteOptions, complete, suffix_budget
from codeasst.complete.scope import locate

FUNCTION = "def count(xs):\n    n = 0\n    for x in xs:\n        n += x\n{hole}\n\n\nprint(count([1, 2]))\n"


def at(template: str) -> tuple[str, str]:
    text = template.replace("{hole}", "\0")
    return text.split("\0")


def suggest(reply: str, prefix: str, suffix: str, **options) -> str:
    return complete(ScriptedLLM([reply]), prefix, suffix, "python", CompleteOptions(**options)).text


def test_the_block_is_inferred_at_column_one_and_top_level_code_is_never_appended():
    prefix, suffix = at(FUNCTION)
    hole = locate(prefix, suffix, 4)
    assert (hole.indent, hole.column_one, hole.place, hole.floor) == ("        ", True, "end", 4)
    # the seed's failure: the function's last line, then a test of it at the top level
    # The model is asked at the shallowest depth the scope allows (the function's body), so it need
    # not write the indentation itself; the suggestion carries it.
    llm = ScriptedLLM(["return n\n\n# Test the function\nprint(count([3]))\n"])
    assert complete(llm, prefix, suffix, "python").text == "    return n"
    assert "        n += x\n    <|fim_suffix|>" in llm.history[0]
    # a model that writes a top-level line in the function's place leaves the scope: silence
    assert suggest("\nprint(n)\n", prefix, suffix) == ""
    # at the top level itself, top-level code is what the user writes
    top = locate("x = 1\n", "\ny = 2\n", 4)
    assert (top.indent, top.column_one, top.floor) == ("", False, 0)


def test_a_method_stays_in_its_method():
    prefix, suffix = at("class A:\n    def f(self):\n        a = 1\n{hole}\n\n    def g(self):\n        pass\n")
    assert locate(prefix, suffix, 4).floor == 8
    assert suggest("        return a\n\n    def h(self):\n        pass\n", prefix, suffix) == "        return a"


def test_between_two_statements_one_line_and_nothing_restated():
    prefix, suffix = at("def f(a):\n    b = a + 1\n{hole}\n    return c\n")
    hole = locate(prefix, suffix, 4)
    assert (hole.place, hole.max_lines, hole.indent) == ("between", 1, "    ")
    assert suggest("    c = b * 2\n    d = c\n    return c\n", prefix, suffix) == "    c = b * 2"
    # the policy that allows more: the lines after stop where the code after the cursor begins
    assert suggest("    c = b * 2\n    d = c\n    return c\n", prefix, suffix, multiline="always") == \
        "    c = b * 2\n    d = c"
    # a suggestion that is the next line itself is silence (whitespace aside)
    assert suggest("    return  c\n", prefix, suffix) == ""


def test_an_opened_block_and_the_end_of_a_block_take_several_lines():
    prefix, suffix = "def f(xs):\n    for x in xs:\n        ", "\n    return xs\n"
    assert locate(prefix, suffix, 4).place == "opened"
    assert suggest("if x:\n            x.clear()\n    return xs\n", prefix, suffix) == "if x:\n            x.clear()"
    # an editor-indented cursor keeps its own indentation as the floor
    assert locate("def f(x):\n    y = x\n    ", "\n", 4).floor == 4


def test_mid_line_is_one_line():
    hole = locate("def f(x):\n    return x +", "\n", 4)
    assert (hole.place, hole.max_lines, hole.column_one) == ("mid-line", 1, False)


class Speed(ScriptedLLM):
    def __init__(self, speed):
        super().__init__()
        self.speed = speed

    def prompt_speed(self):
        return self.speed


def test_the_suffix_budget_follows_the_machine():
    options = CompleteOptions()  # suffix_tokens 0: decided by the speed, suffix_ms 250
    assert suffix_budget(Speed(155.0), options) == 32  # 2 CPU cores
    assert suffix_budget(Speed(72.0), options) == 16  # the 1.5B there
    assert suffix_budget(Speed(8000.0), options) == 512  # a GPU
    assert suffix_budget(Speed(8000.0), CompleteOptions(suffix_tokens=24)) == 24  # set by the user
    llm = Speed(8000.0)
    llm.enqueue("return 1")
    prefix = "def f():\n    "
    complete(llm, prefix, "\n" + "x = 1\n" * 400, "python")
    assert llm.history[0].count("x = 1") > 200  # a GPU reads hundreds of suffix tokens
