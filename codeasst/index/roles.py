"""What part a file plays in its repository: implementation, test, fixture, docs, example,
benchmark, config, generated or vendored.

A checkout holds much more than its code: tests and docs mention a function more often than
the module that defines it, and fixtures copy code of every kind. Search weighs hits by role
(codeasst.retrieve.intent), so the role has to be known for every indexed file. It is read
from the path first (the conventions of pytest, unittest, Jest, Vitest, Mocha, Go, Cargo,
Maven, Sphinx, MkDocs), then from the text for what the path does not say: a test module
outside a test folder, a file that says it is generated.
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath

# Bump when a rule changes: stored roles are recomputed (no re-embedding).
ROLES_VERSION = "4"
ROLES = ("implementation", "test", "fixture", "docs", "example", "benchmark", "config", "generated", "vendored")

_VENDORED_DIRS = {
    "vendor",
    "vendored",
    "_vendor",
    "third_party",
    "thirdparty",
    "third-party",
    "extern",
    "_extern",
    "external",
    "externals",
    "_vendored",
    "node_modules",
    "bower_components",
}
_TEST_DIRS = {
    "test",
    "tests",
    "testing",
    "__tests__",
    "__test__",
    "spec",
    "specs",
    "e2e",
    "integration_tests",
    "unit_tests",
    "testsuite",
}
# Inside a test folder: data the tests read, not tests.
_FIXTURE_DIRS = {
    "fixtures",
    "fixture",
    "testdata",
    "test_data",
    "data",
    "__snapshots__",
    "snapshots",
    "cassettes",
    "roots",
    "samples",
    "resources",
    "golden",
    "goldens",
    "assets",
    "mocks",
    "__mocks__",
    "stubs",
}
_DOC_DIRS = {
    "doc",
    "docs",
    "documentation",
    "site",
    "website",
    "man",
    "changelog.d",
    "changes",
    "newsfragments",
    "news",
    "_docs",
}
_EXAMPLE_DIRS = {
    "example",
    "examples",
    "_examples",
    "docs_src",
    "demo",
    "demos",
    "sample",
    "samples",
    "tutorial",
    "tutorials",
    "cookbook",
    "recipes",
    "playground",
}
_BENCH_DIRS = {"bench", "benches", "benchmark", "benchmarks", "asv_bench", "perf"}
_BUILD_DIRS = {"build", "dist", "generated", "gen", "_generated"}
_DOC_NAMES = {
    "readme",
    "changelog",
    "changes",
    "history",
    "news",
    "authors",
    "contributors",
    "contributing",
    "license",
    "licence",
    "copying",
    "notice",
    "security",
    "code_of_conduct",
    "releasing",
    "release",
    "upgrading",
    "migration",
    "faq",
    "citation",
}
_DOC_SUFFIXES = {".md", ".markdown", ".rst", ".txt", ".adoc", ".asciidoc", ".mdx", ".ipynb", ".tex", ".org", ".pod"}
_CONFIG_NAMES = {
    "pyproject.toml",
    "setup.cfg",
    "setup.py",
    "tox.ini",
    "noxfile.py",
    "makefile",
    "dockerfile",
    "package.json",
    "tsconfig.json",
    "go.mod",
    "go.sum",
    "cargo.toml",
    "pom.xml",
    "build.gradle",
    "manifest.in",
    ".pre-commit-config.yaml",
    "jest.config.js",
    "vitest.config.ts",
    "vitest.config.mts",
    "rollup.config.mjs",
    "webpack.config.js",
    ".eslintrc.yml",
    ".eslintrc.json",
    ".readthedocs.yaml",
    "mkdocs.yml",
    "codecov.yml",
    "requirements.txt",
    "cmakelists.txt",
}
_CONFIG_DIRS = {".github", ".circleci", ".gitlab", ".devcontainer", ".vscode", "requirements", "ci", ".ci"}
_GENERATED_NAMES = re.compile(
    r"(_pb2(_grpc)?\.py|\.pb\.go|_generated\.\w+|\.min\.(js|css)|\.bundle\.js|"
    r"(package-lock|yarn|pnpm-lock|poetry|uv|cargo|pdm|pipfile)\.(json|lock|yaml))$",
    re.IGNORECASE,
)
# Said in a file's first lines by the tools that write it (Go's convention, protoc, setuptools-scm...).
_GENERATED_TEXT = re.compile(
    r"code generated .* do not edit|@generated\b|do not edit (this file|manually|by hand)|"
    r"^[#/*;\s-]*(this (file|module) (is|was|has been) )?(auto-?)?generated (by|from|with)\b",
    re.IGNORECASE | re.MULTILINE,
)
_CONFIG_FILE = re.compile(r"\.config\.[cm]?[jt]s$|-workspace\.yaml$|^requirements.*\.(in|txt)$")
_TEST_FILE = re.compile(
    r"(^test_.*\.py$|^conftest\.py$|_tests?\.py$|_test\.go$|\.(test|spec)\.[cm]?[jt]sx?$|\.test-d\.[cm]?tsx?$|"
    r"(Test|Tests|IT)\.(java|kt|scala|cs)$|_spec\.rb$|_test\.rb$|^test_.*\.rb$|_test\.exs$)"
)
_PY_TEST_TEXT = re.compile(r"^\s*(import (pytest|unittest)|from (pytest|unittest)\b)", re.MULTILINE)
_PY_TEST_DEF = re.compile(r"^\s*(async\s+)?def test_\w*\(|^class Test\w*[:(]", re.MULTILINE)
_JS_TEST_TEXT = re.compile(r"""(from|require\()\s*['"](vitest|@jest/globals|mocha|node:test|ava|tap|uvu|chai)['"]""")
_JS_TEST_CALL = re.compile(r"^\s*(describe|it|test)\(\s*['\"`]", re.MULTILINE)


def _in_nested_packages(dirs: tuple[str, ...]) -> bool:
    """A copy of another package inside a package: `requests/packages/urllib3/...`. A `packages/`
    folder at the root holds a monorepo's own packages, not copies."""
    return any(d == "packages" and 0 < i < len(dirs) - 1 for i, d in enumerate(dirs))


def role_of(path: str, text: str | None = None) -> str:
    """The role of the file at `path` (repository-relative, POSIX), `text` being its content if read."""
    parts = PurePosixPath(path.lower()).parts
    dirs, name = parts[:-1], parts[-1] if parts else ""
    if any(d in _VENDORED_DIRS for d in dirs) or _in_nested_packages(dirs):
        return "vendored"
    if _GENERATED_NAMES.search(name) or (text is not None and _GENERATED_TEXT.search(text[:600])):
        return "generated"
    in_tests = any(d in _TEST_DIRS for d in dirs)
    if in_tests:
        below = dirs[next(i for i, d in enumerate(dirs) if d in _TEST_DIRS) + 1 :]
        if any(d in _FIXTURE_DIRS for d in below):
            return "fixture"
        if not _is_code(name) or _has_suffix(name, {".json", ".yaml", ".yml", ".toml", ".txt", ".csv", ".xml"}):
            return "fixture"
        return "test"
    if _TEST_FILE.search(PurePosixPath(path).name) or (text is not None and _looks_like_tests(name, text)):
        return "test"
    if any(d in _FIXTURE_DIRS - {"data", "resources", "assets", "samples"} for d in dirs):
        return "fixture"
    if any(d in _BENCH_DIRS for d in dirs) or name.startswith(("bench_", "benchmark")):
        return "benchmark"
    if any(d in _EXAMPLE_DIRS for d in dirs) or name.startswith("example"):
        return "example"
    if any(d in _DOC_DIRS for d in dirs):
        # Code in a docs folder is mostly its samples; a Go file there is a package of its own
        # (cobra's doc/ generates documentation), and Sphinx's conf.py configures the build.
        if name.endswith(".go"):
            return "implementation"
        return "example" if _is_code(name) and name != "conf.py" else "docs"
    if (
        any(d in _CONFIG_DIRS for d in dirs)
        or name in _CONFIG_NAMES
        or name.startswith(".")
        or name == "pkg-info"
        or _CONFIG_FILE.search(name)
    ):
        return "config"
    if any(d in _BUILD_DIRS for d in dirs[:1]):
        return "generated"
    stem = name.split(".")[0]
    if stem in _DOC_NAMES and (_has_suffix(name, _DOC_SUFFIXES) or "." not in name):
        return "docs"
    if _has_suffix(name, _DOC_SUFFIXES) and not dirs:
        return "docs"
    if _has_suffix(name, _DOC_SUFFIXES - {".txt"}):
        return "docs"
    return "implementation"


def _has_suffix(name: str, suffixes: set[str]) -> bool:
    return PurePosixPath(name).suffix in suffixes


_CODE_SUFFIXES = {
    ".py",
    ".pyi",
    ".js",
    ".jsx",
    ".mjs",
    ".cjs",
    ".ts",
    ".tsx",
    ".mts",
    ".cts",
    ".go",
    ".rs",
    ".java",
    ".kt",
    ".kts",
    ".scala",
    ".swift",
    ".c",
    ".h",
    ".cc",
    ".cpp",
    ".hpp",
    ".cs",
    ".php",
    ".rb",
    ".ex",
    ".exs",
    ".sh",
    ".lua",
    ".zig",
    ".dart",
}


def _is_code(name: str) -> bool:
    return _has_suffix(name, _CODE_SUFFIXES)


def _looks_like_tests(name: str, text: str) -> bool:
    """A test module where the path does not say so: it imports a test framework and defines tests."""
    if name.endswith(".py"):
        return bool(_PY_TEST_TEXT.search(text)) and len(_PY_TEST_DEF.findall(text)) >= 2
    if _has_suffix(name, {".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts"}):
        return bool(_JS_TEST_TEXT.search(text)) and len(_JS_TEST_CALL.findall(text)) >= 2
    return False


def explain_role(root: Path, target: Path) -> str:
    """The role `codeasst index --explain PATH` shows: what the indexer would store for the file."""
    absolute = target if target.is_absolute() else Path.cwd() / target
    try:
        rel = Path(os.path.abspath(absolute)).relative_to(root).as_posix()
    except ValueError:
        return role_of(target.as_posix())
    try:
        with absolute.open("rb") as fh:
            head = fh.read(4096).decode("utf-8", errors="ignore")
    except OSError:  # a directory, or unreadable: the path alone
        head = None
    return role_of(rel, head)
