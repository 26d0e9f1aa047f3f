"""The checks that gate every fix: AST equivalence per code class, renames, confinement, and flake8."""

from __future__ import annotations

import ast
import sys

import pytest

from codeasst.fixing.equivalence import confined, same_ast, same_up_to_renames
from codeasst.fixing.verify import State, verify
from codeasst.lint import Diagnostic, Linter, LinterError


def _state(text: str, linter: Linter) -> State:
    return State(text, ast.parse(text), linter.check(text))


@pytest.fixture
def linter(tmp_path) -> Linter:
    return Linter(tmp_path, "mod.py", isolated=True)


def test_layout_changes_keep_the_ast_but_a_changed_value_does_not():
    before = ast.parse("def f(a,b):\n  return a+b\n")
    assert same_ast(before, ast.parse("def f(a, b):\n    return a + b\n")) is None
    assert same_ast(before, ast.parse("def f(a, b):\n    return a - b\n")) is not None


def test_docstring_whitespace_is_layout_but_other_strings_are_values():
    assert same_ast(ast.parse('def f():\n    """Doc.   \n\tmore"""\n'),
                    ast.parse('def f():\n    """Doc.\n    more"""\n')) is None
    assert same_ast(ast.parse('x = """a   \nb"""\n'), ast.parse('x = """a\nb"""\n')) is not None


def test_singleton_comparisons_are_equivalent_only_when_their_codes_are_targeted():
    before, after = ast.parse("if x == None:\n    pass\n"), ast.parse("if x is None:\n    pass\n")
    assert same_ast(before, after) is not None
    assert same_ast(before, after, frozenset({"singleton"})) is None
    assert same_ast(ast.parse("y = x == True\n"), ast.parse("y = x\n"), frozenset({"singleton"})) is not None


def test_a_consistent_rename_of_a_flagged_name_passes():
    before = ast.parse("def f(l):\n    return [v for v in l]\n")
    after = ast.parse("def f(items):\n    return [v for v in items]\n")
    assert same_up_to_renames(before, after, frozenset({"l"})) is None


@pytest.mark.parametrize("after, why", [
    ("def f(items):\n    return [v for v in l]\n", "in use"),
    ("def f(v):\n    return [v for v in v]\n", "already in use"),
    ("def f(l):\n    return [w for w in l]\n", "only"),
])
def test_renames_that_change_meaning_are_refused(after, why):
    before = ast.parse("def f(l):\n    return [v for v in l]\n")
    assert why in same_up_to_renames(before, ast.parse(after), frozenset({"l"}))


def test_a_rename_may_not_capture_a_name_an_inner_function_reads():
    before = ast.parse("def f(l):\n    def g():\n        return items\n    return l, g\n")
    after = ast.parse("def f(items):\n    def g():\n        return items\n    return items, g\n")
    assert same_up_to_renames(before, after, frozenset({"l"})) is not None


def test_semantic_fixes_must_stay_on_the_flagged_statements():
    before = ast.parse("def f():\n    x = g()\n    return 1\n")
    assert confined(before, ast.parse("def f():\n    g()\n    return 1\n"), {2}) is None
    assert "line 3" in confined(before, ast.parse("def f():\n    g()\n    return 2\n"), {2})


def test_verify_accepts_fewer_diagnostics_and_refuses_new_ones(linter):
    current = _state("def f(a,b):\n    return a+b\n", linter)
    targeted = current.diagnostics
    assert verify(current, "def f(a, b):\n    return a + b\n", targeted, linter).ok
    worse = verify(current, "def f(a, b):\n    return a + b  \n", targeted, linter)
    assert not worse.ok and "W291" in worse.reason
    broken = verify(current, "def f(a, b):\n    return a +\n", targeted, linter)
    assert not broken.ok and "does not parse" in broken.reason


def test_flake8_honours_the_project_config(tmp_path):
    (tmp_path / "setup.cfg").write_text("[flake8]\nmax-line-length = 120\nper-file-ignores =\n    gen/*.py: F401\n")
    (tmp_path / "gen").mkdir()
    long_line = "x = '" + "a" * 90 + "'\n"
    assert Linter.for_path(tmp_path / "pkg.py", tmp_path).check(long_line) == []
    assert [d.code for d in Linter.for_path(tmp_path / "pkg.py", tmp_path).check("import os\n")] == ["F401"]
    assert Linter.for_path(tmp_path / "gen" / "m.py", tmp_path).check("import os\n") == []
    assert [d.code for d in Linter(tmp_path, "x.py", isolated=True).check(long_line)] == ["E501"]


@pytest.mark.parametrize("command, message", [
    (("/nonexistent/flake8",), "linter not found"),
    ((sys.executable, "-c", "import sys; sys.exit(3)"), "failed"),
    ((sys.executable, "-c", "print('garbage'); import sys; sys.exit(1)"), "cannot read"),
    ((sys.executable, "-c", "import sys; sys.exit(1)"), "failed"),
])
def test_a_missing_or_broken_linter_is_a_one_line_error(tmp_path, command, message):
    with pytest.raises(LinterError, match=message) as caught:
        Linter(tmp_path, "x.py", command=command).check("x = 1\n")
    assert "\n" not in caught.value.one_line()


def test_feedback_lines_are_numbered_from_the_snippet():
    assert Diagnostic(12, 5, "E741", "ambiguous variable name 'l'").feedback(10) == \
        "E741: ambiguous variable name 'l' in 3 line"
