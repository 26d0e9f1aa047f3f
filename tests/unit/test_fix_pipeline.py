"""The fix loop with a scripted model: what is fixed without it, what it may and may not change,
rounds, and the best verified result kept when the model keeps failing."""

from __future__ import annotations

import ast
import textwrap

import pytest

from codeasst.backends.fake import ScriptedLLM
from codeasst.fixing.pipeline import FixOptions, SourceSyntaxError, fix_source
from codeasst.lint import Linter


@pytest.fixture
def linter(tmp_path) -> Linter:
    return Linter(tmp_path, "mod.py", isolated=True)


def run(source: str, linter: Linter, llm: ScriptedLLM | None = None, **options):
    return fix_source(textwrap.dedent(source), linter, llm=(lambda: llm) if llm else None,
                      options=FixOptions(**options), name="mod.py")


def behaviour(code: str, call: str):
    namespace: dict = {}
    exec(compile(code, "<fixed>", "exec"), namespace)  # noqa: S102 - runs the test's own snippet
    return eval(call, namespace)


def fenced(code: str) -> str:
    return "Here is the fixed code:\n```python\n" + textwrap.dedent(code).strip("\n") + "\n```\nIt is fixed."


LAYOUT = """\
import os,sys
def area(w,h) :
\tresult=w*h ;
\treturn result
"""

E741_E501 = """\
def total(l):
    s = 0
    for I in range(len(l)):
        s += l[I] * 2 if l[I] > 0 else abs(l[I]) + len(str(l[I])) + 1000000 - 999999
    return s
"""

TYPO = """\
def largest(xs, default):
    if not xs:
        return defualt
    return max(xs)
"""
GOOD = "def largest(xs, default):\n    if not xs:\n        return default\n    return max(xs)\n"


def test_layout_codes_are_fixed_without_the_model_and_keep_the_ast(linter):
    result = run(LAYOUT, linter, ScriptedLLM())  # an empty script fails the test if the model is asked
    assert result.clean and result.llm_calls == 0
    assert ast.dump(ast.parse(result.fixed)) != ast.dump(ast.parse(LAYOUT))  # E401 split the import
    assert behaviour(result.fixed, "area(3, 4)") == 12


def test_ambiguous_names_and_long_lines_are_fixed_deterministically(linter):
    result = run(E741_E501, linter, ScriptedLLM())
    assert result.clean, result.after
    assert "l" not in {n.id for n in ast.walk(ast.parse(result.fixed)) if isinstance(n, ast.Name)}
    for data in ([1, -2, 3], [0], []):
        assert behaviour(result.fixed, f"total({data})") == behaviour(E741_E501, f"total({data})")


def test_unused_imports_and_variables_go_unless_they_may_matter(linter):
    source = """\
    from __future__ import annotations
    import json
    try:
        import yaml
    except ImportError:
        yaml = None


    def f(x):
        unused = 3
        ignored = print(x)
        return x
    """
    result = run(source, linter)
    assert "import json" not in result.fixed and "unused = 3" not in result.fixed
    assert "    print(x)\n" in result.fixed  # the call's effect stays
    assert "import yaml" in result.fixed and "from __future__" in result.fixed
    assert [d.code for d in result.after] == []


def test_the_model_fixes_what_rules_cannot_and_a_bad_answer_is_retried(linter):
    llm = ScriptedLLM([
        # A fix that also changes an unflagged line must be refused...
        fenced(GOOD.replace("max(xs)", "sorted(xs)[0]")),
        # ...and the retry, told why, is accepted.
        fenced(GOOD),
    ])
    result = run(TYPO, linter, llm)
    assert result.clean and result.llm_calls == 2
    assert "line 4, which flake8 did not flag" in result.rejected[-1].reason
    assert "previous answer was rejected" in llm.history[1]
    assert "F821: undefined name 'defualt' in 3 line" in llm.history[0]
    assert behaviour(result.fixed, "largest([3, 1, 2], 0), largest([], 7)") == (3, 7)


@pytest.mark.parametrize("reply", [
    "I cannot help with that.",
    fenced(GOOD.replace("max(xs)", "max(xs")),  # does not parse
    fenced(GOOD.replace("max(xs)", "max(xs)  ")),  # trades the F821 for a W291
])
def test_rejected_answers_leave_the_code_as_it_was(linter, reply):
    result = run(TYPO, linter, ScriptedLLM([reply] * 3))
    # The retry repeats the rejected answer: a third try, told the same, would too.
    assert result.fixed == TYPO and not result.clean and result.llm_calls == 2
    (remaining,) = result.after
    assert remaining.code == "F821" and "rejected" in result.reasons[remaining]
    assert "not asked again" in result.reasons[remaining]


def test_the_best_partial_result_is_kept_when_one_function_stays_unfixed(linter):
    source = TYPO + "\n\n" + TYPO.replace("largest", "smallest").replace("max", "min")
    result = run(source, linter, ScriptedLLM([fenced(GOOD), "no", "no", "no"]), max_rounds=3)
    assert [d.code for d in result.after] == ["F821"]
    assert result.fixed.startswith(GOOD)
    assert "return defualt" in result.fixed.split("def smallest")[1]
    assert result.llm_calls == 3  # the fixed unit is not asked again, the other not after repeating itself


def test_only_the_function_around_the_diagnostic_is_sent(linter):
    filler = "".join(f"\n\ndef f{i}(x):\n    return x + {i}\n" for i in range(300))
    llm = ScriptedLLM([fenced(GOOD)])
    result = run(filler.lstrip("\n") + "\n\n" + TYPO, linter, llm)
    assert result.clean
    assert len(llm.history[0]) < 1500 and "def f299" not in llm.history[0]


def test_a_missing_import_from_the_answer_goes_to_the_top(linter):
    source = "import os\n\n\ndef root():\n    return os.sep + sys.platform\n"
    reply = fenced("import sys\n\ndef root():\n    return os.sep + sys.platform\n\nprint(root())\n")
    result = run(source, linter, ScriptedLLM([reply]))
    assert result.clean
    assert result.fixed == "import os\nimport sys\n\n\ndef root():\n    return os.sep + sys.platform\n"


def test_a_syntax_error_is_reported_and_nothing_is_fixed(linter):
    with pytest.raises(SourceSyntaxError, match=r"mod.py:1:7: syntax error") as caught:
        run("def f(:\n    pass\n", linter, ScriptedLLM())
    assert caught.value.exit_code == 2


def test_without_the_model_what_remains_says_why(linter):
    result = run(TYPO, linter, use_llm=False)
    (remaining,) = result.after
    assert "model was not used" in result.reasons[remaining]
    assert result.to_json()["remaining"][0]["code"] == "F821"


def test_lambda_assignments_become_defs_without_the_model(linter):
    source = "def largest(xs):\n    key = lambda x: -x\n    return sorted(xs, key=key)[0]\n"
    result = run(source, linter, ScriptedLLM())
    assert result.clean and "def key(x):\n        return -x\n" in result.fixed
    assert behaviour(result.fixed, "largest([3, 1, 2])") == 3


def test_the_model_may_repair_a_syntax_error_only_when_asked(linter):
    broken = "def f(x):\n    return x +* 2\n\n\ndef g():\n    return 1\n"
    with pytest.raises(SourceSyntaxError) as refused:
        run(broken, linter, ScriptedLLM())
    assert "--try-syntax" in refused.value.one_line()
    llm = ScriptedLLM([fenced("def f(x):\n    y = abs(x)\n    return y * 2 if y else 0\n"),  # a rewrite
                       fenced("def f(x):\n    return x * 2\n")])
    result = run(broken, linter, llm, try_syntax=True)
    assert result.clean and result.original == textwrap.dedent(broken) and result.llm_calls == 2
    assert result.fixed == broken.replace("x +* 2", "x * 2")
    assert "E999" in llm.history[0] and "def g" not in llm.history[0]
    with pytest.raises(SourceSyntaxError, match="could not repair"):
        run(broken, linter, ScriptedLLM(["no"] * 3), try_syntax=True)


def test_long_lines_are_wrapped_without_changing_what_they_mean(linter):
    source = textwrap.dedent("""\
        def check(rawdata, i, fallback_value_for_missing_entries):
            assert rawdata[i:i + 3] == '<![', 'unexpected call to parse_marked_section() at %d' % i
            value = rawdata[i] if rawdata and i < len(rawdata) else fallback_value_for_missing_entries
            return value
        """)
    result = run(source, linter, ScriptedLLM())
    assert result.clean, result.after
    assert ast.dump(ast.parse(result.fixed)) == ast.dump(ast.parse(source))
    assert max(len(line) for line in result.fixed.splitlines()) <= 79


TWO_TYPOS = """\
def clamp(value, low, high):
    if value < low:
        return lwo
    if value > high:
        return hihg
    return value
"""


def test_one_call_per_function_carries_all_its_diagnostics(linter):
    llm = ScriptedLLM([fenced(TWO_TYPOS.replace("lwo", "low").replace("hihg", "high"))])
    result = run(TWO_TYPOS, linter, llm)
    assert result.clean and result.llm_calls == 1
    assert "undefined name 'lwo' in 3 line" in llm.history[0] and "undefined name 'hihg' in 5 line" in llm.history[0]


def test_long_lines_the_wrapper_cannot_wrap_are_not_sent_to_the_model(linter):
    url = "https://example.com/a/very/long/path/that/cannot/be/split/anywhere/at/all/x"
    source = f"def link():\n    return '{url}'\n\n\n" + TYPO
    llm = ScriptedLLM([fenced(GOOD)])  # one answer only: asking about the URL fails the test
    result = run(source, linter, llm)
    assert result.llm_calls == 1 and "E501" not in llm.history[0]
    (remaining,) = result.after
    assert remaining.code == "E501" and "cannot be wrapped without changing behaviour" in result.reasons[remaining]
    report = result.to_json()
    assert report["llm_calls"] == 1 and report["seconds"] > 0
    assert "cannot be wrapped" in report["remaining"][0]["reason"]


@pytest.mark.parametrize(("source", "code", "why"), [
    ("import os\n\nos.umask(0)\nimport sys  # after a call: moving it changes the order\n\nprint(sys)\n",
     "E402", "order"),
    ("import sys\n\n\ndef text(x):\n    return x if sys.version_info[0] > 2 else unicode(x)\n", "F821", "Python 2"),
])
def test_what_no_fix_could_pass_is_not_sent_to_the_model(linter, source, code, why):
    result = run(source, linter, ScriptedLLM())  # an empty script fails the test if the model is asked
    assert result.llm_calls == 0 and [d.code for d in result.after] == [code]
    assert why in result.reasons[result.after[0]]


def test_a_retry_rejected_for_the_same_reason_ends_the_unit(linter):
    # Two different answers, both changing an unflagged line: the feedback did not help.
    llm = ScriptedLLM([fenced(GOOD.replace("max(xs)", "sorted(xs)[-1]")),
                       fenced(GOOD.replace("max(xs)", "max(list(xs))")), fenced(GOOD)])
    result = run(TYPO, linter, llm)
    assert result.llm_calls == 2 and not result.clean and len(llm.replies) == 1
    assert "not asked again" in result.reasons[result.after[0]]


def test_a_lambda_among_statements_becomes_a_def_with_its_blank_line(linter):
    source = "def largest(xs):\n    ys = list(xs)\n    key = lambda x: -x\n    return sorted(ys, key=key)[0]\n"
    result = run(source, linter, ScriptedLLM())  # E306 after the new def must not send it to the model
    assert result.clean and "ys = list(xs)\n\n    def key(x):\n        return -x\n" in result.fixed
    assert behaviour(result.fixed, "largest([3, 1, 2])") == 3


def test_an_answer_that_changes_nothing_ends_the_unit(linter):
    llm = ScriptedLLM([fenced(TYPO), fenced(GOOD)])  # the code back as it was: the model sees no fix
    result = run(TYPO, linter, llm)
    assert result.llm_calls == 1 and not result.clean and len(llm.replies) == 1
    assert "not asked again" in result.reasons[result.after[0]]
