"""`codeasst fix` through the real CLI, with real flake8: what lands on disk, on stdout, in the
JSON report, and the exit code of each documented outcome (README, "Exit codes")."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

from codeasst import paths
from tests.e2e.conftest import CLI, assert_one_line_error, run_cli, run_json

MESSY = "import os\ndef f(a,b) :\n    return a+b\n"  # F401, E302, E231, E203
CLEAN = "def f(a, b):\n    return a+b\n"  # E226 is in flake8's default ignore list: left alone
# An undefined name has no mechanical fix: with --no-llm it stays, with its reason.
UNFIXABLE = "def g(a,b):\n    return a + undefined_name\n"  # E231, F821
UNFIXABLE_AFTER = "def g(a, b):\n    return a + undefined_name\n"
BROKEN_FLAKE8_CONFIG = "[flake8]\nmax-line-length = eighty\n"  # flake8 itself stops with a ValueError

# A linter that edits the file the first time it runs, then runs flake8, as an editor saving the
# file in the middle of a fix would: the only way to reach the write-time check from outside.
EDITS_THE_FILE = """\
import pathlib, runpy, sys

name = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--stdin-display-name="))
path = pathlib.Path(name)
if "edited meanwhile" not in path.read_text():
    path.write_text(path.read_text() + "# edited meanwhile\\n")
sys.argv[0] = "flake8"
runpy.run_module("flake8", run_name="__main__")
"""


def use_linter(*command: str) -> None:
    """Set fix.linter in the user's own config (a repository's config may not set it)."""
    config = paths.user_config_file()
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"[fix]\nlinter = {json.dumps(list(command))}\n")


def fix_stdin(data: bytes, *args: str, cwd=None) -> subprocess.CompletedProcess:
    """`codeasst fix ... -` with `data` on stdin; stdout stays bytes, to compare exactly."""
    proc = subprocess.run([*CLI, "fix", *args, "-"], input=data, cwd=cwd, capture_output=True, timeout=600,
                          check=False, env=dict(os.environ))
    proc.stderr = proc.stderr.decode("utf-8", errors="replace")
    return proc


def flake8(root, *names: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flake8", *names], cwd=root, capture_output=True, text=True,
                          check=False)


def test_write_fixes_the_file_in_place_keeping_its_mode(make_repo):
    root = make_repo({"mod.py": MESSY})
    (root / "mod.py").chmod(0o750)
    proc = run_cli("fix", "--no-llm", "--write", "mod.py", cwd=root)
    assert (root / "mod.py").read_text() == CLEAN
    assert stat.S_IMODE((root / "mod.py").stat().st_mode) == 0o750
    assert proc.stdout == ""  # with --write the diff is not printed
    assert "mod.py: fixed and wrote 4 of 4 diagnostics" in proc.stderr
    assert flake8(root, "mod.py").stdout == ""
    assert sorted(p.name for p in root.iterdir()) == [".git", "mod.py"]  # no temporary file left


def test_without_write_the_diff_is_printed_and_the_file_left_alone(make_repo):
    root = make_repo({"mod.py": MESSY})
    proc = run_cli("fix", "--no-llm", "mod.py", cwd=root)
    assert proc.stdout.startswith("--- a/mod.py\n+++ b/mod.py\n")
    assert "-import os\n" in proc.stdout and "+def f(a, b):\n" in proc.stdout
    assert (root / "mod.py").read_text() == MESSY


def test_check_exits_1_while_diagnostics_remain_and_0_once_clean(make_repo):
    root = make_repo({"left.py": UNFIXABLE, "mod.py": MESSY})
    proc = run_cli("fix", "--no-llm", "--check", "left.py", cwd=root, check_rc=1)
    assert "left.py: fixed 1 of 2 diagnostics" in proc.stderr
    assert "left F821 line 2: no deterministic fix applies; the model was not used" in proc.stderr
    run_cli("fix", "--no-llm", "left.py", cwd=root, check_rc=0)  # without --check what remains is no failure
    run_cli("fix", "--no-llm", "--check", "mod.py", cwd=root, check_rc=0)  # all of it can be fixed
    run_cli("fix", "--no-llm", "--write", "left.py", cwd=root)
    assert (root / "left.py").read_text() == UNFIXABLE_AFTER
    run_cli("fix", "--no-llm", "--check", "left.py", cwd=root, check_rc=1)  # the F821 is still there
    (root / "left.py").write_text("def g(a, b):\n    return a + b\n")
    proc = run_cli("fix", "--no-llm", "--check", "left.py", cwd=root, check_rc=0)
    assert proc.stdout == "" and "fixed 0 of 0 diagnostics" in proc.stderr


def test_stdin_is_read_and_the_fixed_code_printed(make_repo):
    root = make_repo({})
    proc = fix_stdin(MESSY.replace("\n", "\r\n").encode(), "--no-llm", cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == CLEAN.replace("\n", "\r\n").encode()  # fixed, line endings kept
    assert "stdin.py: fixed 4 of 4 diagnostics" in proc.stderr


def test_stdin_filename_judges_piped_code_as_that_file(make_repo):
    """An editor pipes a package's __init__.py: its imports are the package's API, and its folder's
    flake8 config applies. Without the name, stdin is a loose script whose unused imports go."""
    init = "from pkg.core import run\nfrom pkg.util import helper\n\n__version__ = '1.0'\n"
    root = make_repo({"pkg/__init__.py": init, "pkg/core.py": "def run():\n    pass\n",
                      "pkg/util.py": "def helper():\n    pass\n", "pkg/tox.ini": "[flake8]\nextend-ignore = E231\n"})
    proc = fix_stdin(init.encode(), "--no-llm", "--stdin-filename", "pkg/__init__.py", cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert b"from pkg.core import run  # noqa: F401" in proc.stdout and b"import helper" in proc.stdout
    assert "pkg/__init__.py: fixed 2 of 2 diagnostics" in proc.stderr  # named as the file it is
    assert fix_stdin(init.encode(), "--no-llm", cwd=root).stdout == b"__version__ = '1.0'\n"
    # The config beside the named file applies: E231 is ignored there, not at the top.
    code = b"x = [1,2]\n"
    assert fix_stdin(code, "--no-llm", "--stdin-filename", "pkg/new.py", cwd=root).stdout == code
    assert fix_stdin(code, "--no-llm", cwd=root).stdout == b"x = [1, 2]\n"
    proc = run_cli("fix", "--no-llm", "--stdin-filename", "pkg/new.py", "pkg/core.py", cwd=root, check_rc=None)
    assert_one_line_error(proc, 2, "give - as the file")


def test_dash_c_runs_as_if_started_in_that_directory(make_repo, tmp_path):
    root = make_repo({"pkg/mod.py": MESSY, "tox.ini": "[flake8]\nextend-ignore = E231\n"})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = run_cli("fix", "--no-llm", "--write", "-C", str(root), "pkg/mod.py", cwd=elsewhere)
    assert "pkg/mod.py: fixed and wrote 3 of 3 diagnostics" in proc.stderr  # the name as given, under DIR
    assert (root / "pkg" / "mod.py").read_text() == "def f(a,b):\n    return a+b\n"  # E231 ignored by tox.ini
    assert list(elsewhere.iterdir()) == []
    # stdin is linted as a file of DIR's project, with its config.
    proc = fix_stdin(b"x = [1,2]\ny=1\n", "--no-llm", "-C", str(root), cwd=elsewhere)
    assert proc.returncode == 0 and proc.stdout == b"x = [1,2]\ny = 1\n", proc.stderr
    # The project's .codeasst.toml is the one found from DIR.
    (root / ".codeasst.toml").write_text("[fix]\nmax_file_bytes = 10\n")
    proc = run_cli("fix", "--no-llm", "-C", str(root), "pkg/mod.py", cwd=elsewhere, check_rc=None)
    assert_one_line_error(proc, 2, "bytes is over the limit of 10")


def test_json_reports_every_file(make_repo):
    root = make_repo({"a.py": MESSY, "b.py": UNFIXABLE})
    reports = run_json("fix", "--no-llm", "a.py", "b.py", cwd=root)
    assert [r["path"] for r in reports] == ["a.py", "b.py"]
    a, b = reports
    keys = {"path", "clean", "changed", "written", "before", "fixed", "remaining", "changes", "rejected",
            "llm_calls", "seconds", "diff"}
    assert set(a) == keys and set(b) == keys
    assert (a["clean"], a["changed"], a["written"], a["before"], a["fixed"], a["remaining"]) == \
        (True, True, False, 4, 4, [])
    assert a["diff"].startswith("--- a/a.py\n+++ b/a.py\n") and a["llm_calls"] == 0
    assert {c["stage"] for c in a["changes"]} <= {"autopep8", "rules"}
    assert sorted(code for c in a["changes"] for code in c["codes"]) == ["E203", "E231", "E302", "F401"]
    assert (b["clean"], b["before"], b["fixed"]) == (False, 2, 1)
    assert [(d["code"], d["line"]) for d in b["remaining"]] == [("F821", 2)]
    assert b["remaining"][0]["reason"] == "no deterministic fix applies; the model was not used"
    assert (root / "a.py").read_text() == MESSY  # --json alone writes nothing
    written = run_json("fix", "--no-llm", "--write", "a.py", cwd=root)
    assert written[0]["written"] is True and "diff" not in written[0]
    assert (root / "a.py").read_text() == CLEAN


@pytest.mark.parametrize("name, content, fragment", [
    ("missing.py", None, "missing.py: no such file"),
    ("notes.txt", "x=1\n", "notes.txt: not a Python file"),
    ("broken.py", "def f(:\n    pass\n", "broken.py:1:7: syntax error"),
])
def test_bad_input_exits_2_in_one_line_and_touches_nothing(make_repo, name, content, fragment):
    root = make_repo({name: content} if content is not None else {})
    proc = run_cli("fix", "--no-llm", "--write", name, cwd=root, check_rc=None)
    assert_one_line_error(proc, 2, fragment)
    assert proc.stdout == ""
    assert ((root / name).read_text() if content is not None else None) == content


@pytest.mark.parametrize("data, fragment", [
    # latin-1 without a coding comment, on the lines where one would be, and past them
    (b"x = '\xe9'\n", "stdin.py: not valid UTF-8 (byte 0xe9 on line 1) and no encoding declaration"),
    (b"x = 1\ny = 2\nz = '\xe9'\n", "stdin.py: not valid utf-8 (byte 0xe9 on line 3)"),
    (b"\xef\xbb\xbfx = 1\nz = '\xe9'\n", "stdin.py: not valid utf-8 (byte 0xe9 on line 2)"),  # after a BOM
])
def test_stdin_that_is_not_utf8_exits_2_in_one_line(make_repo, data, fragment):
    proc = fix_stdin(data, "--no-llm", cwd=make_repo({}))
    assert_one_line_error(proc, 2, fragment)
    assert proc.stdout == b""


def test_a_broken_flake8_config_exits_4_in_one_line(make_repo):
    root = make_repo({"mod.py": MESSY, "tox.ini": BROKEN_FLAKE8_CONFIG})
    proc = run_cli("fix", "--no-llm", "--write", "mod.py", cwd=root, check_rc=None)
    assert_one_line_error(proc, 4, "flake8 failed")
    assert (root / "mod.py").read_text() == MESSY


def test_a_missing_linter_exits_4_in_one_line(make_repo):
    use_linter("/no/such/flake8")
    root = make_repo({"mod.py": MESSY})
    proc = run_cli("fix", "--no-llm", "--write", "mod.py", cwd=root, check_rc=None)
    assert_one_line_error(proc, 4, "linter not found: /no/such/flake8")
    assert (root / "mod.py").read_text() == MESSY


def test_a_file_changed_during_the_fix_exits_75_and_is_not_overwritten(make_repo, tmp_path):
    wrapper = tmp_path / "edits_the_file.py"
    wrapper.write_text(EDITS_THE_FILE)
    use_linter(sys.executable, str(wrapper))
    root = make_repo({"mod.py": MESSY})
    proc = run_cli("fix", "--no-llm", "--write", "mod.py", cwd=root, check_rc=None)
    assert_one_line_error(proc, 75, "mod.py: changed on disk while it was being fixed; nothing written")
    assert (root / "mod.py").read_text() == MESSY + "# edited meanwhile\n"
    assert sorted(p.name for p in root.iterdir()) == [".git", "mod.py"]  # no temporary file left


def test_one_bad_file_does_not_stop_the_others_and_the_worst_code_wins(make_repo):
    root = make_repo({"good.py": MESSY})
    broken = make_repo({"mod.py": MESSY, "tox.ini": BROKEN_FLAKE8_CONFIG}, name="broken")
    proc = run_cli("fix", "--no-llm", "--write", "missing.py", "good.py", cwd=root, check_rc=None)
    assert_one_line_error(proc, 2, "missing.py: no such file")
    assert (root / "good.py").read_text() == CLEAN and "good.py: fixed and wrote" in proc.stderr
    proc = run_cli("fix", "--no-llm", "--check", "missing.py", str(broken / "mod.py"), cwd=root, check_rc=None)
    assert proc.returncode == 4, proc.stderr  # 4 (flake8 failed) over 2 (no such file) and 1 (--check)
    assert proc.stderr.count("error:") == 2 and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_the_model_fixes_what_rules_cannot(make_repo):
    # A typo'd name: no rule fixes an F821, the bundled model must find `ranked`.
    source = ("def top_words(text, n):\n    words = text.lower().split()\n"
              "    ranked = sorted(set(words), key=lambda w: (-words.count(w), w))\n    return rankd[:n]\n")
    root = make_repo({"mod.py": source})
    [report] = run_json("fix", "--write", "--check", "mod.py", cwd=root)
    fixed = (root / "mod.py").read_text()
    assert report["clean"] and report["written"] and report["llm_calls"] >= 1, report
    assert "rankd" not in fixed and flake8(root, "mod.py").stdout == ""
    check = "import mod; assert mod.top_words('b a b c a b', 2) == ['b', 'a']"
    subprocess.run([sys.executable, "-c", check], cwd=root, check=True)


def test_a_project_folder_that_shadows_the_standard_library_still_lints(tmp_path):
    # flask/ holds json/ and logging.py: run as `python -m flake8` there, they shadowed the stdlib.
    (tmp_path / "json").mkdir()
    (tmp_path / "json" / "__init__.py").write_text("raise ImportError('shadowed')\n")
    (tmp_path / "logging.py").write_text("import os\nx=1\n")
    proc = run_cli("fix", "logging.py", "--no-llm", "-C", str(tmp_path))
    assert "+x = 1" in proc.stdout and "Traceback" not in proc.stderr
