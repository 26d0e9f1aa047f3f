"""Which flake8 codes a fix may address, and what a fix for each is allowed to change.

Every accepted fix is checked against the class of the codes it targets:

STYLE: layout only, so the AST must stay identical (compared as black does, with
docstrings normalised). pycodestyle's E1 (indentation), E2 (whitespace), E3
(blank lines), E5 (line length, backslashes), E70x (several statements on one
line, a trailing semicolon: splitting or dropping it yields the same statements),
W1/W2/W3 (tabs, trailing whitespace, blank lines), W5 (line breaks around
operators) and W605 (an invalid escape written as `\\d` or r"\\d" is the same
string constant).

EQUIVALENT: the AST changes, but into a form we can map back exactly, and the
check compares after that mapping: E401 (one import per line), E713/E714
(`not x in y` is `x not in y`), E722 (a bare except is `except BaseException`),
E711/E712 (`== None` to `is None`, `== True` to `is True`). The last two are the
one deliberate change of meaning we accept: they differ only for objects whose
`__eq__` says a non-singleton equals None/True/False (numpy arrays, `1 == True`),
which is the bug pycodestyle warns about; we never turn `== True` into a bare
truth test, as autopep8 -a does, because that does change results.

RENAME: E741 (`l`, `O`, `I`): the AST must be the same up to a consistent,
one-to-one renaming of exactly the flagged names within each function.

Anything else (pyflakes F-codes, E731, E721, plugins' codes) is SEMANTIC: the AST
may change, but only in the statements flake8 flagged, and the file must parse
and lint better. What these fixes mean is checked by the user's tests, not here.

Whatever the class, a fix keeps what the AST does not show or a module's users
rely on (verify.py): its public top-level names (F401 may not remove an import
that may be a re-export unless the user allows it), and the words and form of
its comments and docstrings.
"""

from __future__ import annotations

from enum import Enum


class CodeClass(Enum):
    STYLE = "style"
    EQUIVALENT = "equivalent"
    RENAME = "rename"
    SEMANTIC = "semantic"


STYLE_PREFIXES = ("E1", "E2", "E3", "E5", "W1", "W2", "W3", "W5")
STYLE_CODES = frozenset({"E701", "E702", "E703", "E704", "W605", "W291", "W292", "W293", "W391"})
EQUIVALENT_CODES = frozenset({"E401", "E711", "E712", "E713", "E714", "E722"})
RENAME_CODES = frozenset({"E741"})
AMBIGUOUS_NAMES = frozenset({"l", "O", "I"})

# What autopep8 may do for us: layout and the exact rewrites, never E711/E712 (it turns
# `x == True` into `x`) nor E731/F-codes (it cannot prove them).
AUTOPEP8_UNSAFE = frozenset({"E711", "E712", "E721", "E731", "E741", "W690"})


def classify(code: str) -> CodeClass:
    if code in STYLE_CODES or code.startswith(STYLE_PREFIXES):
        return CodeClass.STYLE
    if code in EQUIVALENT_CODES:
        return CodeClass.EQUIVALENT
    if code in RENAME_CODES:
        return CodeClass.RENAME
    return CodeClass.SEMANTIC


def is_style(code: str) -> bool:
    return classify(code) is CodeClass.STYLE
