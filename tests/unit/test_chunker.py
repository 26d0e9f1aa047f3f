"""Tests for codeasst.index.chunker.

The golden files under tests/data/chunker/<language>/expected.json are the
specification of the chunker's output; regenerate them with
``UPDATE_GOLDEN=1 pytest tests/unit/test_chunker.py`` and review the diff.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

from codeasst.index import chunker, grammars
from codeasst.index.chunker import Chunk, chunk_file, chunker_fingerprint, language_for, module_name

DATA = Path(__file__).resolve().parents[1] / "data" / "chunker"
SAMPLES = sorted(p for p in DATA.iterdir() if p.is_dir())
GOLDEN_MAX_CHARS = 400
BUDGETS = [1, 7, 40, 120, 400, 1500]


def _sample(directory: Path) -> tuple[str, str]:
    """(repo path given to the chunker, text) of the one input file in a sample directory."""
    (source,) = [p for p in directory.iterdir() if p.name != "expected.json"]
    return f"src/shop/{source.name}", source.read_text(encoding="utf-8")


def _rows(text: str) -> list[str]:
    rows = text.split("\n")
    return rows[:-1] if len(rows) > 1 and rows[-1] == "" else rows


def _is_collapsed(chunk: Chunk, rows: list[str]) -> bool:
    return chunk.kind == "class" and chunk.text != "\n".join(rows[chunk.start_line - 1 : chunk.end_line])


def test_every_language_has_a_sample():
    table = chunker._table()[0]
    assert {p.name for p in SAMPLES} == set(table)


@pytest.mark.parametrize("directory", SAMPLES, ids=lambda p: p.name)
def test_golden(directory: Path):
    path, text = _sample(directory)
    # extra_words only where a chunk has them (a collapsed class's attributes), so the others read as before
    got = [{k: v for k, v in asdict(c).items() if k != "extra_words" or v}
           for c in chunk_file(path, text, max_chars=GOLDEN_MAX_CHARS)]
    expected_file = directory / "expected.json"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        expected_file.write_text(json.dumps(got, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    assert got == json.loads(expected_file.read_text(encoding="utf-8"))


@pytest.mark.parametrize("directory", SAMPLES, ids=lambda p: p.name)
def test_golden_samples_exercise_structure(directory: Path):
    path, text = _sample(directory)
    kinds = {c.kind for c in chunk_file(path, text, max_chars=GOLDEN_MAX_CHARS)}
    assert "window" not in kinds and "file" not in kinds


@pytest.mark.parametrize("budget", BUDGETS)
def test_no_chunk_exceeds_max_chars(budget: int):
    for directory in SAMPLES:
        path, text = _sample(directory)
        for chunk in chunk_file(path, text, max_chars=budget):
            assert len(chunk.text) <= budget, (directory.name, chunk)
            assert 1 <= chunk.start_line <= chunk.end_line


@pytest.mark.parametrize("budget", [120, 400, 1500])
def test_chunks_slice_back_to_source_lines(budget: int):
    for directory in SAMPLES:
        path, text = _sample(directory)
        rows = _rows(text)
        for chunk in chunk_file(path, text, max_chars=budget):
            source = "\n".join(rows[chunk.start_line - 1 : chunk.end_line])
            if _is_collapsed(chunk, rows):
                # A collapsed class starts with its real header line.
                assert source.startswith(chunk.text.split("\n")[0]), chunk
            else:
                assert chunk.text == source, chunk


@pytest.mark.parametrize("budget", [120, 400, 1500])
def test_nothing_is_dropped(budget: int):
    for directory in SAMPLES:
        path, text = _sample(directory)
        covered = set()
        chunks = chunk_file(path, text, max_chars=budget)
        for chunk in chunks:
            covered.update(range(chunk.start_line, chunk.end_line + 1))
        for number, row in enumerate(_rows(text), 1):
            if re.search(r"\w", row):
                assert number in covered, (directory.name, number, row)
        assert [c.start_line for c in chunks] == sorted(c.start_line for c in chunks)


def test_file_that_fits_is_one_chunk():
    text = "import os\n\n\ndef main():\n    print(os.getcwd())\n"
    assert chunk_file("src/tools/__init__.py", text) == [
        Chunk("src/tools/__init__.py", "python", 1, 5, "file", "tools", text.rstrip("\n"))
    ]


def test_empty_and_blank_files_give_no_chunks():
    assert chunk_file("a.py", "") == []
    assert chunk_file("a.py", "\n  \n\t\n") == []


@pytest.mark.parametrize("path", ["data.py", "blob.txt", "app.min.js", "data.json"])
def test_huge_single_line_is_cut_by_characters(path: str):
    line = "x = '" + "abcdefghij" * 1000 + "'"
    chunks = chunk_file(path, line + "\n", max_chars=1500)
    assert all(len(c.text) <= 1500 for c in chunks)
    assert "".join(c.text for c in chunks) == line
    assert all((c.start_line, c.end_line) == (1, 1) for c in chunks)


def test_minified_code_is_not_duplicated():
    line = ";".join(f"function f{i}(a){{return a+{i}}}" for i in range(2000))
    chunks = chunk_file("bundle.js", line, max_chars=500)
    assert sum(len(c.text) for c in chunks) == len(line)


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("broken.py", "class A(:\n    def f(self\n        return [1, 2\n" * 40),
        ("broken.ts", "export class { foo(: number { return }\n}\n}\n" * 40),
        ("broken.cpp", "namespace { class X { void f( { int a = ; } \n" * 40),
        ("broken.json", '{"a": [1, 2, {"b": }\n' * 60),
        ("broken.yaml", "a: [1, 2\n  - b: {c\n:::\n" * 60),
        ("broken.sql", "CREATE TABLE 'unterminated (\n  id int;\n" * 40),
        ("broken.md", "```python\n# not a heading\n" * 60),
        ("deep.py", "x = " + "[" * 3000 + "]" * 3000 + "\n"),
        ("deep.json", "[" * 3000 + "]" * 3000),
        ("nested.py", "".join("    " * i + f"def f{i}():\n" for i in range(300)) + "    " * 300 + "pass\n"),
        ("mixed.rb", "\x00\ufeffdef \udcff x\r\n  y\rend\n" * 50),
    ],
)
def test_odd_input_does_not_raise(path: str, text: str):
    for budget in (1, 50, 400):
        chunks = chunk_file(path, text, max_chars=budget, overlap_lines=3)
        assert chunks
        assert all(len(c.text) <= budget for c in chunks)


def test_unknown_extension_gives_overlapping_windows():
    text = "".join(f"line {i} of the notes\n" for i in range(1, 101))
    chunks = chunk_file("notes/todo.txt", text, max_chars=200, overlap_lines=3)
    assert {(c.kind, c.language, c.name) for c in chunks} == {("window", "text", "notes.todo")}
    assert chunks[0].start_line == 1 and chunks[-1].end_line == 100
    for before, after in itertools.pairwise(chunks):
        assert after.start_line == before.end_line - 2
    rows = _rows(text)
    assert all(c.text == "\n".join(rows[c.start_line - 1 : c.end_line]) for c in chunks)


def test_oversized_function_is_windowed_with_its_name():
    body = "".join(f"    total += compute({i}, {i + 1})\n" for i in range(60))
    text = f"def accumulate():\n    total = 0\n{body}    return total\n"
    chunks = chunk_file("calc.py", text, max_chars=300, overlap_lines=2)
    assert {(c.kind, c.name) for c in chunks} == {("function", "calc.accumulate")}
    assert chunks[0].start_line == 1 and chunks[-1].end_line == 63
    assert all(b.start_line == a.end_line - 1 for a, b in itertools.pairwise(chunks))


def test_collapsed_class_is_cut_and_the_rest_kept():
    fields = "".join(f"    field_{i}: int = {i}\n" for i in range(80))
    text = f"class Config:\n{fields}\n    def load(self):\n        return self\n"
    chunks = chunk_file("pkg/config.py", text, max_chars=300)
    head = chunks[0]
    assert (head.kind, head.name, head.start_line, head.end_line) == ("class", "pkg.config.Config", 1, 84)
    assert head.text.startswith("class Config:\n    field_0: int = 0\n") and head.text.endswith("\n    ...")
    rest = [c for c in chunks[1:] if c.kind == "class"]
    assert rest and rest[0].start_line == head.text.count("\n") + 1
    assert chunks[-1].kind == "method" and chunks[-1].name == "pkg.config.Config.load"


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("a/b.py", "python"),
        ("stubs/x.pyi", "python"),
        ("x.ts", "typescript"),
        ("x.mts", "typescript"),
        ("x.cts", "typescript"),
        ("x.tsx", "tsx"),
        ("x.js", "javascript"),
        ("x.jsx", "javascript"),
        ("x.mjs", "javascript"),
        ("x.cjs", "javascript"),
        ("x.c", "c"),
        ("x.h", "c"),
        ("x.cc", "cpp"),
        ("x.cpp", "cpp"),
        ("x.cxx", "cpp"),
        ("x.hpp", "cpp"),
        ("x.hh", "cpp"),
        ("x.hxx", "cpp"),
        ("x.go", "go"),
        ("X.java", "java"),
        ("x.kt", "kotlin"),
        ("build.gradle.kts", "kotlin"),
        ("x.swift", "swift"),
        ("x.scala", "scala"),
        ("x.rs", "rust"),
        ("X.cs", "csharp"),
        ("x.php", "php"),
        ("x.rb", "ruby"),
        ("Rakefile", "ruby"),
        ("sub/Gemfile", "ruby"),
        (".github/workflows/ci.yml", "yaml"),
        ("x.yaml", "yaml"),
        ("x.json", "json"),
        ("x.sql", "sql"),
        ("README.md", "markdown"),
        ("x.markdown", "markdown"),
        ("UPPER.PY", "python"),
        ("notes.txt", None),
        ("Makefile", None),
        (".bashrc", None),
        ("noext", None),
    ],
)
def test_language_for(path: str, language: str | None):
    assert language_for(path) == language


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("pkg/server.py", "pkg.server"),
        ("src/pkg/server.py", "pkg.server"),
        ("src/pkg/__init__.py", "pkg"),
        ("web/components/index.tsx", "web.components"),
        ("src/lib/mod.rs", "lib"),
        ("src/main.rs", "main"),
        ("index.js", "index"),
        ("docs/setup.md", "docs.setup"),
        ("./app/util.test.ts", "app.util.test"),
        ("Rakefile", "Rakefile"),
    ],
)
def test_module_name(path: str, name: str):
    assert module_name(path) == name


def test_canonical_names_follow_definitions():
    text = "class App:\n    def run(self):\n        return 1\n\n    def stop(self):\n        return 2\n"
    chunks = chunk_file("pkg/server.py", text, max_chars=60)
    assert [(c.kind, c.name) for c in chunks] == [
        ("class", "pkg.server.App"),
        ("method", "pkg.server.App.run"),
        ("method", "pkg.server.App.stop"),
    ]


def test_fingerprint_is_stable_and_tracks_the_table(monkeypatch: pytest.MonkeyPatch):
    first = chunker_fingerprint()
    assert first == chunker_fingerprint()
    assert re.fullmatch(r"[0-9a-f]{16}", first)
    assert chunker._fingerprint(b"[python]\n") == chunker._fingerprint(b"[python]\n")
    assert chunker._fingerprint(b"[python]\n") != chunker._fingerprint(b"[python]\nextensions = []\n")
    table = grammars.table_bytes()
    monkeypatch.setattr(grammars, "table_bytes", lambda: table + b"\n[lua]\nextensions = [\".lua\"]\n")
    assert chunker_fingerprint() != first, "a language chunked anew rebuilds the index"
    # Comments, the graph's keys and the outline's tables make no chunk: changing them rebuilds nothing.
    outline = b"\n# changed\n[lua]\nextensions = [\".lua\"]\ngraph = true\n[lua.outline]\nreturn = [\"return\"]\n"
    monkeypatch.setattr(grammars, "table_bytes", lambda: table + outline)
    with_lua = chunker_fingerprint()
    monkeypatch.setattr(grammars, "table_bytes", lambda: table + b"\n[lua]\nextensions = [\".lua\"]\n")
    assert chunker_fingerprint() == with_lua


def test_parsers_are_cached():
    chunk_file("a.py", "def f():\n    return 1\n" * 50, max_chars=100)
    parser = grammars.PARSERS["python"]
    chunk_file("b.py", "def g():\n    return 2\n" * 50, max_chars=100)
    assert grammars.PARSERS["python"] is parser


def test_import_is_lazy():
    code = "import sys, codeasst.index.chunker; print('tree_sitter' in sys.modules)"
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


QUERY_CLASSES = {  # (path, the class's head, a method, the documented field after them and the end)
    "java": ("src/p/Cart.java", "package p;\n\npublic class Cart {\n", "    public int m{i}() {{\n        return {i};\n    }}\n\n",
             "    /** The tax rate, in percent. */\n    private double taxRate = 0.2;\n}\n"),
    "kotlin": ("src/p/Cart.kt", "package p\n\nclass Cart {\n", "    fun m{i}(): Int {{\n        return {i}\n    }}\n\n",
               "    /** The tax rate, in percent. */\n    val taxRate = 0.2\n}\n"),
    "csharp": ("src/Cart.cs", "namespace P;\n\npublic class Cart {\n", "    public int M{i}() {{\n        return {i};\n    }}\n\n",
               "    /// <summary>The tax rate, in percent.</summary>\n    private double taxRate = 0.2;\n}\n"),
    "swift": ("Sources/Shop/Cart.swift", "struct Cart {\n", "    func m{i}() -> Int {{\n        return {i}\n    }}\n\n",
              "    /// The tax rate, in percent.\n    var taxRate = 0.2\n}\n"),
    "cpp": ("src/cart.hpp", "class Cart {\npublic:\n", "    int m{i}() {{\n        return {i};\n    }}\n\n",
            "    /// The tax rate, in percent.\n    double taxRate = 0.2;\n};\n"),
    "scala": ("src/p/Cart.scala", "package p\n\nclass Cart {\n", "  def m{i}(): Int = {{\n    {i}\n  }}\n\n",
              "  /** The tax rate, in percent. */\n  val taxRate = 0.2\n}\n"),
    "php": ("src/Cart.php", "<?php\n\nclass Cart {\n", "    public function m{i}() {{\n        return {i};\n    }}\n\n",
            "    /** The tax rate, in percent. */\n    private $taxRate = 0.2;\n}\n"),
}


@pytest.mark.parametrize("language", QUERY_CLASSES)
def test_a_collapsed_class_carries_its_fields_in_the_languages_read_by_a_query_file(language):
    path, head, method, tail = QUERY_CLASSES[language]
    text = head + "".join(method.format(i=i) for i in range(40)) + tail
    (cls,) = [c for c in chunk_file(path, text, max_chars=600) if c.kind == "class" and c.extra_words]
    assert cls.extra_words == "taxRate: The tax rate, in percent."  # past what the collapsed text shows
    assert "taxRate" not in cls.text
