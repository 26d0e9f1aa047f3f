"""What the model is shown, and how its answer is cut out and put back."""

from __future__ import annotations

import ast
import textwrap

from codeasst.fixing.renames import fix_ambiguous_names
from codeasst.fixing.units import Unit, extract_code, group_by_unit, splice, unit_for_line
from codeasst.lint import Diagnostic, Linter

SOURCE = textwrap.dedent("""\
    import os


    class Shelf:
        @property
        def size(self):
            l = len(os.listdir("."))
            return l

        def empty(self):
            return not self.size
    """)


def test_the_unit_is_the_method_with_its_decorator():
    unit = unit_for_line(ast.parse(SOURCE), 7, max_lines=50)
    assert (unit.start, unit.end, unit.name, unit.function) == (5, 8, "Shelf.size", "size")
    snippet, margin = unit.snippet(SOURCE.splitlines(keepends=True))
    assert margin == "    " and snippet.startswith("@property\ndef size(self):\n    l = ")


def test_a_function_too_long_to_show_is_cut_to_the_statement():
    body = "".join(f"    x{i} = {i}\n" for i in range(200))
    tree = ast.parse("def big():\n" + body + "    return x1\n")
    assert unit_for_line(tree, 50, max_lines=120) == Unit(50, 50, "line 50", None)
    groups = group_by_unit(tree, [Diagnostic(50, 1, "E501", ""), Diagnostic(51, 1, "E501", "")], 120)
    assert [(u.start, len(d)) for u, d in groups] == [(50, 1), (51, 1)]


def test_the_answer_is_found_in_prose_fences_and_unclosed_blocks():
    unit = Unit(5, 8, "Shelf.size", "size")
    reply = ("First, an example:\n```python\nprint(1)\n```\nThe fix:\n```python\n    @property\n"
             "    def size(self):\n        n = 1\n        return n\n\nshelf = Shelf()\n```\nDone.")
    assert extract_code(reply, unit).code == "@property\ndef size(self):\n    n = 1\n    return n\n"
    unclosed = "```py\ndef size(self):\n    return 2\n"
    assert extract_code(unclosed, unit).code == "def size(self):\n    return 2\n"
    assert extract_code("def size(self):\n    return 3", unit).code == "def size(self):\n    return 3\n"
    assert extract_code("I would rename the variable.", unit) is None


def test_splicing_restores_the_indentation_and_touches_nothing_else():
    fixed = splice(SOURCE, Unit(5, 8, "Shelf.size", "size"), "@property\ndef size(self):\n\n    return 0\n", "    ")
    assert fixed.splitlines()[4:8] == ["    @property", "    def size(self):", "", "        return 0"]
    assert fixed.splitlines()[:4] == SOURCE.splitlines()[:4]
    assert fixed.splitlines()[8:] == SOURCE.splitlines()[8:]


def test_renames_follow_scopes(tmp_path):
    source = textwrap.dedent("""\
        def f(l):
            def g():
                return [l for l in range(3)]
            try:
                return g() + l
            except ValueError as O:
                return O
        """)
    diags = Linter(tmp_path, "mod.py", isolated=True).check(source)
    assert [d.code for d in diags] == ["E741"] * 3
    fixed, notes = fix_ambiguous_names(source, ast.parse(source), diags)
    assert "def f(value):" in fixed and "return g() + value" in fixed
    assert "[idx for idx in range(3)]" in fixed  # the comprehension's own `l`, named for its own use
    assert "except ValueError as value2:\n        return value2" in fixed  # `value` is taken by then
    assert any("parameter" in note for note in notes)
