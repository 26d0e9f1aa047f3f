"""What `fix` keeps beyond the AST: the module's public names (an unused import in a library is often
its API) and its comments and docstrings, word for word. The checks in verify.py, the F401 and
comment fixes in mechanical.py, and the pipeline refusing a model's answer that breaks them."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from codeasst.backends.fake import ScriptedLLM
from codeasst.fixing import mechanical
from codeasst.fixing.pipeline import FixOptions, fix_source
from codeasst.fixing.verify import Namespace, State, namespace_reason, public_names, text_reason, verify
from codeasst.lint import Diagnostic, Linter

LIBRARY = Namespace(in_package=True)
SCRIPT = Namespace(in_package=False)


def unused(line: int, name: str) -> Diagnostic:
    return Diagnostic(line, 1, "F401", f"'{name}' imported but unused")


def state(text: str, *diagnostics: Diagnostic) -> State:
    return State(text, ast.parse(text), list(diagnostics))


def dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


# --- the namespace ------------------------------------------------------------------------------

def test_public_names_are_what_the_module_binds_at_top_level():
    tree = ast.parse(dedent("""
        import os.path
        from .models import Request as R, _helper
        from .compat import *
        __version__ = "1"
        _cache = {}
        if True:
            from .fast import speedups
        try:
            VALUE = 1
        except ImportError as exc:
            pass
        def get(): local = 1
        class Session: attribute = 2
    """))
    assert public_names(tree) == {"os", "R", "from .compat import *", "__version__", "speedups", "VALUE", "get",
                                  "Session"}


@pytest.mark.parametrize("after, allowed", [
    ("from .models import Request\n", False),  # an unused import of a library: a re-export
    ("from .models import Request, Response\ndef _get(): pass\n", False),  # a function renamed away
    ("from .models import Response\ndef get(): pass\n", False),  # dropped without being reported unused
    ("from .models import Request, Response\ndef get(): pass\n", True),  # nothing lost
])
def test_a_round_may_not_unbind_a_public_name(after, allowed):
    before = state("from .models import Request, Response\ndef get(): pass\n",
                   unused(1, ".models.Response"))
    reason = namespace_reason(before.tree, ast.parse(after), before.diagnostics, LIBRARY)
    assert (reason is None) is allowed, reason
    if "Response" not in after:
        assert "'Response'" in reason and "--remove-unused-imports" in reason


def test_the_user_may_let_reported_unused_imports_go_and_only_those():
    before = state("from .models import Request, Response\n", unused(1, ".models.Response"))
    allow = Namespace(in_package=True, remove_unused_imports=True)
    assert namespace_reason(before.tree, ast.parse("from .models import Request\n"), before.diagnostics, allow) is None
    assert "'Request'" in namespace_reason(before.tree, ast.parse("from .models import Response\n"),
                                           before.diagnostics, allow)


def test_outside_a_package_an_unused_public_import_may_go_but_not_where_it_re_exports():
    before = state("import os\nimport json\n", unused(1, "os"))
    assert namespace_reason(before.tree, ast.parse("import json\n"), before.diagnostics, SCRIPT) is None
    assert namespace_reason(before.tree, ast.parse("import json\n"), before.diagnostics, LIBRARY) is not None
    init = Namespace(package_init=True, in_package=True)
    private = state("from ._impl import _helper\n", unused(1, "._impl._helper"))
    assert namespace_reason(private.tree, ast.parse("\n"), private.diagnostics, init) is None  # not public
    starred = state("from .a import *\nimport os\n", unused(2, "os"))
    assert starred.tree and SCRIPT.is_reexport("os", starred.tree)  # a module that gathers names


def test_where_a_module_sits_says_whether_it_is_a_library(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    plain = ast.parse("import os\n")
    assert Namespace.of(tmp_path / "pkg" / "__init__.py", plain).package_init
    assert Namespace.of(tmp_path / "pkg" / "mod.py", plain).in_package
    assert not Namespace.of(tmp_path / "script.py", plain).in_package
    # stdin is linted as stdin.py at the root: a relative import still tells a package's module
    assert Namespace.of(tmp_path / "stdin.py", ast.parse("from . import utils\n")).in_package
    assert Namespace.of(Path("stdin.py"), plain, remove_unused_imports=True).remove_unused_imports


# --- the F401 fix -------------------------------------------------------------------------------

@pytest.mark.parametrize("source, diagnostics, namespace, expected", [
    # a package's re-export is marked, not removed; a private name or a function's import may go
    ("from .models import Request\n", [unused(1, ".models.Request")], LIBRARY,
     "from .models import Request  # noqa: F401\n"),
    ("import os\nimport sys\nprint(sys)\n", [unused(1, "os")], SCRIPT, "import sys\nprint(sys)\n"),
    ("from .x import _a, b\n", [unused(1, ".x._a"), unused(1, ".x.b")], LIBRARY, "from .x import b  # noqa: F401\n"),
    ("def f():\n    import os\n    return 1\n", [unused(2, "os")], LIBRARY, "def f():\n    return 1\n"),
    # in an __init__ every import is what the package offers, private names too
    ("from ._impl import _helper\n", [unused(1, "._impl._helper")], Namespace(package_init=True),
     "from ._impl import _helper  # noqa: F401\n"),
    # an existing noqa gets the code added; a bare one already silences it
    ("from .a import b  # noqa: E402\n", [unused(1, ".a.b")], LIBRARY, "from .a import b  # noqa: E402,F401\n"),
    ("from .a import b  # noqa: E402 kept for plugins\n", [unused(1, ".a.b")], LIBRARY,
     "from .a import b  # noqa: E402,F401 kept for plugins\n"),
    ("from .a import b  # noqa\nfrom .x import _c\n", [unused(2, ".x._c")], LIBRARY, "from .a import b  # noqa\n"),
    # a comment after the statement stays after it; statements sharing a line are left alone
    ("from .x import _a, b  # the API\n", [unused(1, ".x._a"), unused(1, ".x.b")], LIBRARY,
     "from .x import b  # the API  # noqa: F401\n"),
    ("import os; import sys\n", [unused(1, "os"), unused(1, "sys")], LIBRARY, None),
    # continued with backslashes it is one logical line: the noqa goes at its end, where flake8 reads it
    ("from .helpers import url_for, \\\n     flash\n", [unused(1, ".helpers.url_for"), unused(1, ".helpers.flash")],
     LIBRARY, "from .helpers import url_for, \\\n     flash  # noqa: F401\n"),
    # what the user asked for
    ("from .models import Request\nx = 1\n", [unused(1, ".models.Request")],
     Namespace(remove_unused_imports=True), "x = 1\n"),
])
def test_unused_imports_go_or_are_marked_as_re_exports(source, diagnostics, namespace, expected):
    assert mechanical.fix_unused_imports(source, ast.parse(source), diagnostics, namespace) == expected


def test_a_marked_import_too_long_for_its_line_goes_in_brackets():
    source = "from .api import request, get, head, post, patch, put, delete, options\n"
    names = ["request", "get", "head", "post", "patch", "put", "delete", "options"]
    fixed = mechanical.fix_unused_imports(source, ast.parse(source), [unused(1, f".api.{n}") for n in names], LIBRARY)
    assert fixed == ("from .api import (  # noqa: F401\n"
                     "    request, get, head, post, patch, put, delete, options,\n)\n")
    assert max(map(len, fixed.splitlines())) <= 79


# --- comments and docstrings --------------------------------------------------------------------

SPHINX = dedent("""
    class Session:
        def __init__(self):
            #: Dictionary mapping protocol or protocol and host to the URL of the proxy
            #: to be used on each request.
            self.proxies = {}
            self.count = 0  # type: int
""")


@pytest.mark.parametrize("after, allowed", [
    (SPHINX.replace("to the URL of the proxy\n        #: to", "to the URL\n        #: of the proxy to"), True),
    (SPHINX.replace("#: to be", "#:    to be"), True),  # whitespace inside a comment is layout
    (SPHINX.replace("#: Dictionary", "# : Dictionary"), False),  # autopep8's E265 respelling
    (SPHINX.replace("proxy\n        #: to", "\n        # proxy to"), False),  # a wrap that lost the prefix
    (SPHINX.replace("protocol and host", "host and protocol"), False),  # words out of order
    (SPHINX.replace("  # type: int", ""), False),
    (SPHINX.replace("self.count = 0  # type: int", "# type: int\n        self.count = 0"), False),  # moved off its line
    (SPHINX.replace("= 0  # type: int", "= 0  # type: int  # noqa: E501"), False),  # a new noqa silences
])
def test_comments_keep_their_words_in_order_and_their_form(after, allowed):
    reason = text_reason(state(SPHINX), after, ast.parse(after), [])
    assert (reason is None) is allowed, reason


def test_a_comment_may_go_with_the_statement_a_fix_deletes_and_a_re_export_may_be_marked():
    before = state("import os  # for the path\nimport sys\n", unused(1, "os"))
    assert text_reason(before, "import sys\n", ast.parse("import sys\n"), before.diagnostics) is None
    marked = "import os  # for the path  # noqa: F401\nimport sys\n"
    assert text_reason(before, marked, ast.parse(marked), before.diagnostics) is None
    # a comment above the import stays: it says why the import is there
    kept = state("# reexposed here for backward compatibility\nimport os\n", unused(2, "os"))
    assert text_reason(kept, "", ast.parse(""), kept.diagnostics) is not None


@pytest.mark.parametrize("after, allowed", [
    ('def f():\n    """Return the\n    sum of both."""\n', True),  # re-laid inside the quotes
    ('def f():\n    """Return the difference."""\n', False),
    ("def f():\n    pass\n", False),
])
def test_a_docstring_keeps_its_text(after, allowed):
    before = state('def f():\n    """Return the sum of both."""\n')
    assert (text_reason(before, after, ast.parse(after), []) is None) is allowed


def test_verify_refuses_a_round_that_drops_a_re_export(tmp_path):
    linter = Linter(tmp_path, "mod.py", isolated=True)
    text = "from .models import Request\nx = 1\n"
    current = State(text, ast.parse(text), linter.check(text))
    verdict = verify(current, "x = 1\n", current.diagnostics, linter, namespace=LIBRARY)
    assert not verdict.ok and "'Request'" in verdict.reason
    assert verify(current, "x = 1\n", current.diagnostics, linter, namespace=SCRIPT).ok


# --- the comment fixes --------------------------------------------------------------------------

def long_lines(text: str, limit: int = 79) -> list[Diagnostic]:
    return [Diagnostic(i, limit + 1, "E501", f"line too long ({len(line)} > {limit} characters)")
            for i, line in enumerate(text.splitlines(), 1) if len(line) > limit]


def test_a_long_sphinx_comment_wraps_into_its_paragraph_keeping_its_prefix():
    fixed = mechanical.fix_long_comments(SPHINX, long_lines(SPHINX), 79)
    assert fixed == SPHINX.replace("to the URL of the proxy\n        #: to be used on each request.",
                                   "to the URL of the\n        #: proxy to be used on each request.")


def test_a_long_comment_ending_its_paragraph_is_split_evenly():
    source = "x = 1\n# " + " ".join(["word"] * 17) + " end.\n# Next sentence.\n"
    fixed = mechanical.fix_long_comments(source, long_lines(source, 79), 79)
    assert fixed.splitlines()[1:] == ["# " + " ".join(["word"] * 9), "# " + " ".join(["word"] * 8) + " end.",
                                      "# Next sentence."]


@pytest.mark.parametrize("comment", [
    "# type: Dict[str, Tuple[int, int, int, int, int, int, int, int, int, int, int, int, int, int]]",
    "# pylint: disable=too-many-arguments,too-many-locals,too-many-branches,line-too-long",
    "# see https://example.com/a/very/long/address/that/no/line/can/hold/without/breaking/it",
])
def test_pragma_type_comments_and_urls_are_never_wrapped(comment):
    source = f"x = 1\n{comment}\n"
    assert mechanical.fix_long_comments(source, long_lines(source), 79) is None


def test_a_trailing_noqa_is_never_moved_off_its_line():
    source = "value = compute(1, 2)  # noqa: F821 this explanation makes the line far too long to fit\n"
    assert mechanical.fix_long_comments(source, long_lines(source), 79) is None


def test_autopep8_may_not_respell_a_sphinx_comment():
    fixed = mechanical.autopep8_fix("x = 1 #:doc\n##: more\n", {"E261", "E262", "E265", "E266"}, 79)
    assert fixed == "x = 1  #: doc\n#: more\n"


# --- through the pipeline -----------------------------------------------------------------------

def test_a_model_answer_that_renames_a_public_name_is_refused(tmp_path):
    """Confined to the flagged statement, the first answer would pass the AST check; it renames what
    other modules import, so it is refused, and the retry, told why, keeps the name."""
    source = "default_timeout = 5\nTIMEOUT = defualt_timeout\n"
    llm = ScriptedLLM(["```python\nTIMEOUT_S = default_timeout\n```", "```python\nTIMEOUT = default_timeout\n```"])
    result = fix_source(source, Linter(tmp_path, "mod.py", isolated=True), llm=lambda: llm,
                        options=FixOptions(max_rounds=3), name="mod.py")
    assert result.fixed == "default_timeout = 5\nTIMEOUT = default_timeout\n" and result.llm_calls == 2
    assert "public name 'TIMEOUT'" in result.rejected[-1].reason, result.rejected


def test_a_model_answer_that_drops_a_comment_is_refused(tmp_path):
    comment = "    # sum in order: floats are not associative\n"
    source = f"def total(xs):\n{comment}    return sum(xss)\n"
    fixed = source.replace("xss", "xs")
    llm = ScriptedLLM([f"```python\n{fixed.replace(comment, '')}```", f"```python\n{fixed}```"])
    result = fix_source(source, Linter(tmp_path, "mod.py", isolated=True), llm=lambda: llm,
                        options=FixOptions(max_rounds=3), name="mod.py")
    assert result.fixed == fixed and result.llm_calls == 2
    assert "comment on line 2" in result.rejected[-1].reason, result.rejected
