"""Reading a pasted query for clues (codeasst.retrieve.evidence) and searching them (lexical)."""

from __future__ import annotations

from codeasst.retrieve import evidence, lexical

FILES = ["pkg/config.py", "pkg/router.py", "pkg/__init__.py", "web/__init__.py", "linear_model/_ridge.py"]

REPORT = """Crash when the configuration lacks a name

Traceback (most recent call last):
  File "/home/me/app/main.py", line 3, in <module>
    cfg = load_config("settings.json")
  File "/usr/lib/python3/site-packages/pkg/config.py", line 13, in load_config
    raise ConfigError("configuration has no name field")
pkg.config.ConfigError: configuration has no name field

Calling `Router.add_route` twice also fails, see sklearn.linear_model._ridge.Ridge and web/__init__.py:4.
"""


def test_clean_makes_any_text_searchable():
    assert evidence.clean("a\r\nb\rc\x00d\x07e\x1b[31mred\x1b[0m\tf") == "a\nb\ncdered\tf"
    assert evidence.clean("日本語 — ok") == "日本語 — ok"


def test_files_frames_and_modules_a_report_names_are_found():
    clues = evidence.read(REPORT, FILES)
    # The deepest frame first, with its line; then paths and dotted module names in the text.
    assert clues.named[0] == ("pkg/config.py", 13)
    assert ("linear_model/_ridge.py", None) in clues.named
    assert ("web/__init__.py", 4) in clues.named
    assert all(path != "pkg/__init__.py" for path, _ in clues.named)  # a bare __init__.py names nothing


def test_identifiers_and_quoted_lines_become_clues():
    clues = evidence.read(REPORT, FILES)
    assert {"load_config", "ConfigError", "add_route", "Router"} <= set(clues.identifiers)
    assert "the" not in clues.identifiers and "configuration" not in clues.identifiers
    assert 'raise ConfigError("configuration has no name field")' in clues.quotes
    assert "configuration has no name field" in clues.quotes


def test_a_long_query_is_read_in_meaningful_pieces():
    text = "Title line here\n\n" + "first paragraph " * 10 + "\n\n```\n" + "x = 1\n" * 20 + "```\n"
    pieces = evidence.parts(text)
    assert pieces[0] == "Title line here"
    assert any(p.startswith("x = 1") for p in pieces) and any("paragraph" in p for p in pieces)
    assert all(len(p) <= 1000 for p in evidence.parts("t\n\n" + "word " * 2000))


def test_condensed_keeps_the_title_and_informative_lines_within_bounds():
    text = "Router breaks\n" + "blah blah blah\n" * 300 + "ValueError: route already registered\n"
    short = evidence.condensed(text, chars=200)
    assert short.startswith("Router breaks") and len(short) <= 200
    assert "ValueError: route already registered" in short


def test_is_long():
    assert not evidence.is_long("where is the tax added?")
    assert evidence.is_long("x" * 400) and evidence.is_long("a\nb\nc\nd")


def test_rg_takes_any_keyword_text(make_repo):
    root = make_repo({"a.py": "value = compute(x)  # a*b[c]\n", "b.py": "nothing\n"})
    assert lexical.searchable(["a\r\nb", "", "  ", "c\x00d", "x" * 1000, "a"]) == ["a", "b", "cd"]
    hits = lexical.grep(root, ["a.py", "b.py"], ["compute(x)\r\n", "a*b[c]", "-e", "(?<"])
    assert {(h.path, h.keyword) for h in hits} == {("a.py", "compute(x)"), ("a.py", "a*b[c]")}


def test_definitions_are_found_by_name(make_repo):
    root = make_repo({
        "a.py": "class Router:\n    def add_route(self):\n        pass\n",
        "b.py": "from a import Router\nRouter().add_route()\n",
        "c.ts": "export function addRoute() {}\n",
    })
    hits = lexical.definitions(root, ["a.py", "b.py", "c.ts"], ["Router", "add_route", "addRoute", "bad name("])
    assert sorted((h.path, h.line, h.keyword) for h in hits) == [
        ("a.py", 1, "Router"), ("a.py", 2, "add_route"), ("c.ts", 1, "addRoute")]
