"""File selection: ignore rules at every level, re-inclusion, defaults, content checks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codeasst.errors import UsageError
from codeasst.index.files import IgnoreRules, decode_source, explain, scan


def indexed(root: Path, cap: int = 1_000_000) -> list[str]:
    return [f.path for f in scan(root, IgnoreRules(root), cap).files]


def test_gitignore_at_every_level_with_negations(make_repo):
    root = make_repo({
        ".gitignore": "*.log\n!keep.log\n/top-only.txt\n",
        "a.log": "x", "keep.log": "x", "top-only.txt": "x",
        "sub/top-only.txt": "x",
        "sub/.gitignore": "!debug.log\nsecret/\n",
        "sub/debug.log": "x", "sub/other.log": "x",
        "sub/secret/s.py": "x",
        "sub/code.py": "x",
    })
    assert indexed(root) == [
        ".gitignore", "keep.log", "sub/.gitignore", "sub/code.py", "sub/debug.log", "sub/top-only.txt",
    ]


def test_git_info_exclude(make_repo):
    root = make_repo({"local.py": "x", "main.py": "x"})
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "exclude").write_text("local.py\n")
    assert indexed(root) == ["main.py"]


def test_codeasstignore_excludes_and_reincludes(make_repo):
    root = make_repo({
        ".gitignore": "generated/\n*.gen.py\n",
        ".codeasstignore": "!generated/\n!api.gen.py\ndocs/\n",
        "generated/models.py": "x", "api.gen.py": "x", "other.gen.py": "x",
        "docs/index.md": "x", "main.py": "x",
    })
    assert indexed(root) == [".codeasstignore", ".gitignore", "api.gen.py", "generated/models.py", "main.py"]


def test_builtin_defaults(make_repo):
    root = make_repo({
        "node_modules/pkg/index.js": "x", ".venv/lib/x.py": "x", "myenv/pyvenv.cfg": "x",
        "myenv/lib/site.py": "x", "poetry.lock": "x", "package-lock.json": "{}",
        "app.min.js": "x", "logo.png": b"\x89PNG", "__pycache__/m.pyc": b"\0",
        "locale/fr/LC_MESSAGES/django.po": 'msgid "Enter a valid value."\nmsgstr "Saisissez une valeur valide."\n',
        "locale/django.pot": 'msgid "Enter a valid value."\n', "src/app.py": "x",
    })
    assert indexed(root) == ["src/app.py"]


def test_codeasstignore_can_reinclude_a_default(make_repo):
    root = make_repo({"poetry.lock": "x", ".codeasstignore": "!poetry.lock\n"})
    assert "poetry.lock" in indexed(root)


def test_oversized_files_are_skipped_with_a_reason(make_repo):
    root = make_repo({"big.py": "x" * 5000, "small.py": "x"})
    result = scan(root, IgnoreRules(root), 1000)
    assert [f.path for f in result.files] == ["small.py"]
    assert result.skipped == [("big.py", "too large (5,000 bytes > 1,000 bytes cap)")]


def test_symlink_loops_and_broken_links_are_reported_not_followed(make_repo):
    root = make_repo({"real.py": "x"})
    os.symlink("loop", root / "loop")
    os.symlink("missing.py", root / "dangling.py")
    os.symlink(".", root / "self")
    os.symlink("real.py", root / "alias.py")
    result = scan(root, IgnoreRules(root), 1000)
    assert [f.path for f in result.files] == ["real.py"]
    assert dict(result.skipped) == {
        "alias.py": "symlink (not followed)",
        "dangling.py": "broken symlink",
        "loop": "symlink loop",
        "self": "symlink (not followed)",
    }


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"\x7fELF\x00\x00binary", "binary"),
        ("caf\u00e9".encode("latin-1"), "not UTF-8 text (bad byte at offset 3)"),
        (b"var a=1;" * 1_300_000, "minified (lines average over 1,000 characters)"),
    ],
)
def test_content_checks(data, reason):
    assert decode_source(data) == (None, reason)


def test_decode_keeps_normal_text_and_strips_bom():
    assert decode_source("\ufeffdef f():\n    return 1\n".encode()) == ("def f():\n    return 1\n", None)


def test_explain_names_the_rule_and_its_file(make_repo, monkeypatch):
    root = make_repo({
        ".gitignore": "# comment\n*.log\n",
        ".codeasstignore": "!keep.log\n",
        "a.log": "x", "keep.log": "x", "main.py": "x", "node_modules/x.js": "x",
        "blob.dat": b"\0\1\2",
    })
    monkeypatch.chdir(root)
    rules = IgnoreRules(root)
    assert explain(root, Path("a.log"), rules, 10**6) == (False, "excluded by '*.log' in .gitignore:2")
    assert explain(root, Path("keep.log"), rules, 10**6) == (True, "re-included by '!keep.log' in .codeasstignore:1")
    assert explain(root, Path("main.py"), rules, 10**6) == (True, "no ignore rule matches")
    assert explain(root, Path("node_modules/x.js"), rules, 10**6) == (
        False, "parent directory node_modules/ is excluded by 'node_modules/' in built-in defaults")
    assert explain(root, root / "blob.dat", rules, 10**6) == (False, "binary")
    with pytest.raises(UsageError, match="does not exist"):
        explain(root, Path("nope.py"), rules, 10**6)
