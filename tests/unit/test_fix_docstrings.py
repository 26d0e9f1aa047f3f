"""E501 in docstrings: prose is wrapped inside the quotes with every word kept in order; what is laid
out by hand (literal blocks, doctests, tables) is not. And W503/W504 where a project turns both on:
the statement joined on one line where it fits, as black would lay it."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap

import pytest

from codeasst.fixing import mechanical
from codeasst.fixing.docstrings import fix_long_docstrings
from codeasst.fixing.equivalence import same_ast
from codeasst.fixing.wrap import join_statement
from codeasst.lint import Diagnostic


def dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def long_lines(text: str, limit: int = 79) -> list[Diagnostic]:
    return [Diagnostic(i, limit + 1, "E501", f"line too long ({len(line)} > {limit} characters)")
            for i, line in enumerate(text.splitlines(), 1) if len(line) > limit]


def wrap(text: str, limit: int = 79) -> str | None:
    return fix_long_docstrings(text, ast.parse(text), long_lines(text, limit), limit)


def words(text: str) -> list[str]:
    return [w for node in ast.walk(ast.parse(text))
            if isinstance(node, (ast.FunctionDef, ast.Module)) and (doc := ast.get_docstring(node, clean=False))
            for w in doc.split()]


REQUEST = dedent('''
    def request(method, url, data=None):
        """Constructs a request.

        :param url: URL for the new :class:`Request` object.
        :param data: (optional) Dictionary, bytes, or file-like object to send in the body of the :class:`Request`.
        :param verify: (optional) Either a boolean, in which case it controls whether we verify
            the server's TLS certificate, or a string, in which case it must be a path
            to a CA bundle to use.

        - a bullet item that is much too long to fit on one line of seventy-nine columns
        """
        return url
''')


def test_a_field_wraps_under_its_text_and_carries_words_into_its_paragraph():
    fixed = wrap(REQUEST)
    assert fixed is not None and not long_lines(fixed)
    assert textwrap.indent(dedent('''
        :param data: (optional) Dictionary, bytes, or file-like object to send in
            the body of the :class:`Request`.
        :param verify: (optional) Either a boolean, in which case it controls
            whether we verify the server's TLS certificate, or a string, in which
            case it must be a path to a CA bundle to use.

        - a bullet item that is much too long to fit on one line of seventy-nine
          columns
    '''), "    ") in fixed
    assert words(fixed) == words(REQUEST)
    assert same_ast(ast.parse(REQUEST), ast.parse(fixed)) is None  # what the verifier checks


def test_a_one_line_docstring_keeps_its_quotes_and_is_not_cut_into_a_field():
    source = 'def f(value):\n    """Mark a value as unsafe.  This is the reverse operation for :func:`safe`."""\n'
    assert wrap(source) == ('def f(value):\n    """Mark a value as unsafe.  This is the reverse operation for\n'
                            '    :func:`safe`."""\n')
    # the overflow would start a line with `- `, a list item in reST: the cut moves one word left
    item = 'def f():\n    """Return the pair of values as a tuple of two elements, the first - second."""\n'
    fixed = wrap(item)
    assert fixed is not None and "\n    - second" not in fixed and words(fixed) == words(item)


@pytest.mark.parametrize("body", [
    "    Example::\n\n        session = requests.Session(); session.get('http://httpbin.org/get', timeout=3)\n",
    "    >>> requests.request('GET', 'http://httpbin.org/get', params={'key': 'value'}, timeout=30000)\n",
    "    See https://example.com/a/very/long/address/that/cannot/be/broken/anywhere/at/all/in/this/line\n",
    "    +---------------------------------------+--------------------------------------------+\n",
])
def test_what_is_laid_out_by_hand_stays_as_it_is(body):
    source = f'def f():\n    """Summary.\n\n{body}    """\n'
    assert wrap(source) is None


def test_a_docstring_whose_words_change_is_refused():
    before = ast.parse('def f():\n    """Return the sum of both values."""\n')
    assert same_ast(before, ast.parse('def f():\n    """Return the sum\n    of both values."""\n')) is None
    assert same_ast(before, ast.parse('def f():\n    """Return the sum of values."""\n')) is not None


# --- W503/W504 --------------------------------------------------------------------------------

SIX = dedent('''
    def write(fp, data):
        if (isinstance(fp, file) and
                isinstance(data, unicode) and
                fp.encoding is not None):
            return True
''')


def test_both_operator_breaks_on_join_the_statement_where_it_fits():
    assert join_statement(SIX, 2, 4, 100) == \
        "    if isinstance(fp, file) and isinstance(data, unicode) and fp.encoding is not None:\n"
    assert join_statement(SIX, 2, 4, 79) is None  # does not fit: left for the report
    # a tuple in the parentheses keeps them
    assert join_statement("if (a,\n        b):\n    pass\n", 1, 2, 79) == "if (a, b):\n"
    diags = [Diagnostic(2, 38, "W504", "line break after binary operator")]
    fixed = mechanical.fix_operator_breaks(SIX, diags, 100)
    assert fixed is not None and same_ast(ast.parse(SIX), ast.parse(fixed)) is None


def test_the_project_limit_comes_from_its_flake8_config(tmp_path):
    from codeasst.lint import Linter
    (tmp_path / "setup.cfg").write_text("[flake8]\nmax-line-length = 100\nignore = F821\n")
    assert Linter.for_path(tmp_path / "m.py", tmp_path).line_limit() == 100
    (tmp_path / "setup.cfg").write_text("[flake8]\nignore = E501\n")
    other = tmp_path / "other"
    other.mkdir()
    (other / "setup.cfg").write_text("[flake8]\nextend-ignore = E501\n")
    assert Linter.for_path(other / "m.py", other).line_limit() is None
    # the same text flake8 flags at 79 columns by default
    proc = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "-"], input="x = '" + "a" * 80 + "'\n",
                          capture_output=True, text=True, check=False)
    assert "E501" in proc.stdout


# --- the project's formatter ------------------------------------------------------------------

def test_only_the_changed_lines_are_given_to_the_formatter():
    from codeasst.fixing.formatter import changed_ranges
    before = "a = 1\nb = 2\nc = 3\nd = 4\n"
    assert changed_ranges(before, before) == []
    assert changed_ranges(before, "a = 1\nb = (\n    2\n)\nc = 3\nd = 4\n") == [(2, 4)]
    assert changed_ranges(before, "a = 10\nb = 2\nc = 3\nd = 40\n") == [(1, 1), (4, 4)]
    assert changed_ranges(before, "b = 2\nc = 3\nd = 4\n") == []  # a deletion leaves no line to format


def test_a_formatter_is_found_where_configured_and_never_inside_the_repository(tmp_path, monkeypatch):
    from codeasst.fixing import formatter
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / ".git").mkdir()
    module = repo / "pkg" / "m.py"
    assert formatter.find_formatter(module, repo) is None  # nothing configured
    (repo / "pyproject.toml").write_text("[tool.ruff]\nline-length = 100\n")
    assert formatter.find_formatter(module, repo) is None  # ruff's linter settings alone are not its formatter
    (repo / "pyproject.toml").write_text("[tool.black]\nline-length = 100\n")
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "black").write_text("#!/bin/sh\n")
    monkeypatch.setattr(formatter.sys, "executable", str(tools / "python"))
    found = formatter.find_formatter(module, repo)
    assert found is not None and (found.name, found.executable, found.root) == ("black", tools / "black", repo)
    # a black the repository ships is never run
    (repo / "bin").mkdir()
    (repo / "bin" / "black").write_text("#!/bin/sh\n")
    monkeypatch.setattr(formatter.sys, "executable", str(repo / "bin" / "python"))
    assert formatter.find_formatter(module, repo) is None
