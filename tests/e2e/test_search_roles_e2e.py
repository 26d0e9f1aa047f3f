"""Search over a checkout as a user has it: the module that runs flake8, beside tests and docs that
mention flake8 far more often than it does. The real CLI, embedder, Chroma and ripgrep; no LLM
(`--no-llm`), so the ranking is the retrievers' and the roles' alone."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import run_json

pytestmark = pytest.mark.slow

LINT = '''"""Run the linter over a file and read what it reports."""

import subprocess
import sys


def run_checker(path, config=None):
    """Run the checker on one file; returns its findings."""
    args = [sys.executable, "-m", "flake8", "--format=%(path)s:%(row)d:%(col)d: %(code)s %(text)s"]
    if config:
        args += ["--config", config]
    proc = subprocess.run([*args, path], capture_output=True, text=True, check=False)
    return parse_report(proc.stdout)


def parse_report(text):
    findings = []
    for line in text.splitlines():
        where, _, message = line.partition(": ")
        path, row, col = where.rsplit(":", 2)
        code, _, detail = message.partition(" ")
        findings.append((path, int(row), int(col), code, detail))
    return findings
'''

STORE = '''"""Where findings are kept between runs."""

import json


def save(findings, path):
    with open(path, "w") as fh:
        json.dump(findings, fh)


def load(path):
    with open(path) as fh:
        return json.load(fh)
'''

TEST_LINT = '''"""Where flake8 is run and its output parsed: tests of flake8 output, flake8 codes, flake8 config."""

import pytest

from tidy.lint import parse_report, run_checker

FLAKE8_OUTPUT = "a.py:1:1: F401 'os' imported but unused\\nb.py:3:80: E501 line too long (90 > 79 characters)\\n"


def test_flake8_output_is_parsed_into_findings():
    # flake8 output lines: path:row:col: code text, as flake8 prints them
    assert parse_report(FLAKE8_OUTPUT)[0] == ("a.py", 1, 1, "F401", "'os' imported but unused")


def test_flake8_reports_unused_imports(tmp_path):
    # flake8 finds F401 in a file that imports os without using it
    target = tmp_path / "a.py"
    target.write_text("import os\\n")
    assert [f[3] for f in run_checker(str(target))] == ["F401"]


@pytest.mark.parametrize("code", ["E501", "F401", "W291"])
def test_flake8_codes_are_kept(code):
    # each flake8 code survives the flake8 output parser
    assert parse_report(f"x.py:1:1: {code} flake8 says so\\n")[0][3] == code
'''

TEST_CLI = '''"""flake8 is run by the command line and its output parsed: tests over files with flake8 problems."""

from tidy.cli import main


def test_cli_prints_flake8_findings(capsys, tmp_path):
    # the CLI runs flake8 and prints each flake8 finding
    (tmp_path / "a.py").write_text("import os\\n")
    main([str(tmp_path / "a.py")])
    assert "F401" in capsys.readouterr().out  # flake8's code for an unused import


def test_cli_exit_code_follows_flake8(tmp_path):
    # a file flake8 finds nothing in exits 0
    (tmp_path / "ok.py").write_text("x = 1\\n")
    assert main([str(tmp_path / "ok.py")]) == 0
'''

CLI = '''"""tidy's command line."""

import sys

from tidy.lint import run_checker
from tidy.store import save


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    findings = [f for path in argv for f in run_checker(path)]
    for finding in findings:
        print(":".join(map(str, finding)))
    save(findings, ".tidy-findings.json")
    return 1 if findings else 0
'''

DOC = '''# Linting with flake8

tidy runs flake8 for you. flake8 reads its config from `setup.cfg` or `.flake8`; tidy passes
`--config` when you give one. flake8 output is parsed into findings; every flake8 code is kept.
See the flake8 documentation for the meaning of each flake8 code (E501, F401, W291...).
'''


def test_the_module_that_runs_flake8_outranks_the_tests_and_docs_that_mention_it(make_repo):
    root = make_repo({"tidy/__init__.py": "", "tidy/lint.py": LINT, "tidy/store.py": STORE, "tidy/cli.py": CLI,
                      "tests/test_lint.py": TEST_LINT, "tests/test_cli.py": TEST_CLI, "docs/flake8.md": DOC})
    hits = run_json("search", "where is flake8 run and its output parsed?", "--no-llm", "--repo", str(root))
    assert hits[0]["path"] == "tidy/lint.py", hits
    # The definition whose words are the question's is found by BM25 over chunks as well as by meaning.
    assert {"dense", "bm25-chunks"} <= set(hits[0]["sources"]), hits
    roles = {hit["path"]: hit["role"] for hit in hits}
    assert roles["tidy/lint.py"] == "implementation"
    assert {roles.get("tests/test_lint.py"), roles.get("tests/test_cli.py")} <= {"test", None}

    # Asked for the tests, the tests come first: roles do not simply push tests down.
    tests = run_json("search", "how is the flake8 output parser tested?", "--no-llm", "--repo", str(root))
    assert tests[0]["role"] == "test", tests
    assert "tests/test_lint.py" in [hit["path"] for hit in tests[:2]], tests

    # --role and --path keep only what they admit, however the rest would rank.
    only_docs = run_json("search", "where is flake8 run and its output parsed?", "--no-llm", "--role", "docs",
                         "--repo", str(root))
    assert only_docs and {hit["path"] for hit in only_docs} == {"docs/flake8.md"}, only_docs
    under_tests = run_json("search", "where is flake8 run and its output parsed?", "--no-llm", "--path", "tests/",
                           "--repo", str(root))
    assert under_tests and {hit["path"] for hit in under_tests} <= {"tests/test_lint.py", "tests/test_cli.py"}
    globbed = run_json("search", "flake8 findings", "--no-llm", "--path", "tidy/*.py", "--role", "implementation",
                       "--repo", str(root))
    assert globbed and all(hit["path"].startswith("tidy/") for hit in globbed), globbed
