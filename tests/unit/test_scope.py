"""Where a search may look (retrieve/scope.py): roles, folders and globs, and what is refused."""

from __future__ import annotations

import pytest

from codeasst.errors import UsageError
from codeasst.retrieve.scope import Scope


def test_no_filter_is_no_scope():
    assert Scope.of() is None and Scope.of([], "  ") is None


@pytest.mark.parametrize(("path", "admitted", "refused"), [
    ("src/", ["src/a.py", "src/pkg/b.py"], ["srcx/a.py", "lib/src/a.py"]),
    ("./src", ["src/a.py"], ["src.py"]),
    ("src/a.py", ["src/a.py"], ["src/a.pyi"]),
    ("*.py", ["a.py", "pkg/b.py"], ["a.pyi", "README.md"]),
    ("src/**/test_*.py", ["src/x/test_a.py"], ["tests/test_a.py"]),
    ("docs", ["docs/index.md"], ["docsite/x.md"]),
])
def test_paths(path, admitted, refused):
    scope = Scope.of(None, path)
    assert all(scope.admits(p) for p in admitted) and not any(scope.admits(p) for p in refused)


def test_roles_and_path_together():
    scope = Scope.of(["Test", "docs"], "pkg/")
    assert scope.admits("pkg/test_a.py", "test") and scope.admits("pkg/x.md", "docs")
    assert not scope.admits("pkg/a.py", "implementation") and not scope.admits("other/t.py", "test")
    assert scope.describe() == "role docs or test, path pkg/"


def test_an_unknown_role_or_a_nul_is_a_usage_error():
    with pytest.raises(UsageError, match="unknown role 'secrets'"):
        Scope.of(["secrets"])
    with pytest.raises(UsageError, match="NUL"):
        Scope.of(None, "a\0b")
