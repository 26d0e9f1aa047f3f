"""Bad input through the real CLI: one clear line on stderr, the right exit code, no traceback."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from codeasst.index.indexer import IndexLock
from codeasst.paths import index_dir
from tests.e2e.conftest import CLI, assert_one_line_error, run_cli, run_json


def test_a_path_that_does_not_exist(tmp_path):
    proc = run_cli("index", str(tmp_path / "nope"), check_rc=None)
    assert_one_line_error(proc, 2, "path does not exist")


def test_explain_of_a_missing_file(make_repo):
    root = make_repo({"a.py": "x = 1\n"})
    proc = run_cli("index", str(root), "--explain", str(root / "missing.py"), check_rc=None)
    assert_one_line_error(proc, 2, "path does not exist")


def test_explain_names_rule_and_file(make_repo):
    root = make_repo({".gitignore": "*.gen.py\n", "x.gen.py": "x = 1\n"})
    proc = run_cli("index", str(root), "--explain", "x.gen.py", cwd=root)
    assert proc.stdout.strip() == "x.gen.py: not indexed: excluded by '*.gen.py' in .gitignore:1; role: implementation"


def test_an_empty_repository(make_repo):
    root = make_repo({})
    proc = run_cli("index", str(root))
    assert "no indexable files under" in proc.stderr
    assert proc.stdout.startswith("Indexed 0 files, 0 chunks")
    proc = run_cli("search", "anything", "-C", str(root), check_rc=None)
    assert_one_line_error(proc, 1, "nothing is indexed")


def test_a_directory_that_is_not_a_git_repository(make_repo):
    root = make_repo({}, git=False)
    proc = run_cli("index", str(root))
    assert "is not a git repository; indexing that directory itself" in proc.stderr


def test_a_bad_setting(make_repo):
    root = make_repo({".codeasst.toml": "[index]\nchunk_chars = 'big'\n"})
    proc = run_cli("index", str(root), check_rc=None)
    assert_one_line_error(proc, 2, "index.chunk_chars: Input should be a valid integer")


def test_a_locked_index(make_repo):
    root = make_repo({"a.py": "x = 1\n"})
    with IndexLock(index_dir(root)):
        proc = run_cli("index", str(root), check_rc=None)
    assert_one_line_error(proc, 75, "the index is being updated by pid")


@pytest.mark.slow
def test_odd_files_are_skipped_with_reasons(make_repo):
    root = make_repo({
        "ok.py": "def ok():\n    return True\n",
        "image.py": b"\x89PNG\r\n\x1a\n\x00\x00\x00",
        "latin1.py": "s = 'gr\u00fc\u00df'\n".encode("latin-1"),
        "bundle.js": "function a(){return 1};" * 450_000,  # about 10 MB on one line
    })
    os.symlink("loop", root / "loop")
    proc = run_cli("index", str(root), "-v")
    assert "Skipped 4 files" in proc.stdout
    assert "  bundle.js: too large (10.3 MB > 1,000 KB cap)" in proc.stdout
    assert "  image.py: binary" in proc.stdout
    assert "  latin1.py: not UTF-8 text (bad byte at offset 7)" in proc.stdout
    assert "  loop: symlink loop" in proc.stdout
    bigger = run_json("index", str(root), env={"CODEASST_INDEX__MAX_FILE_BYTES": "20000000"})
    reasons = {s["path"]: s["reason"] for s in bigger["skipped"]}
    assert reasons["bundle.js"] == "minified (lines average over 1,000 characters)"
    assert bigger["files"] == 1


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"),
                    reason="root reads everything: runs codeasst in a user namespace as 'nobody'")
def test_an_unreadable_file_and_directory(make_repo, tmp_path, codeasst_home):
    root = make_repo({"ok.py": "def ok():\n    return 1\n", "secret.py": "k = 1\n", "private/x.py": "y = 2\n"})
    for path in (tmp_path, codeasst_home):
        for dirpath, _dirs, files in os.walk(path):
            os.chmod(dirpath, 0o777)
            for name in files:
                os.chmod(os.path.join(dirpath, name), 0o666)
    os.chmod(root / "secret.py", 0)
    os.chmod(root / "private", 0)
    proc = subprocess.run(["unshare", "--user", *CLI, "index", str(root), "--json"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    reasons = {s["path"]: s["reason"] for s in summary["skipped"]}
    assert reasons == {"private": "unreadable directory: Permission denied",
                       "secret.py": "unreadable: Permission denied"}
    assert summary["files"] == 1
    assert stat.S_IMODE((root / "secret.py").stat().st_mode) == 0


@pytest.mark.slow
def test_a_corrupted_index_offers_rebuild(make_repo):
    root = make_repo({"a.py": "def a():\n    return 1\n"})
    run_cli("index", str(root))
    (root / "a.py").write_text("def a():\n    return 2\n")
    db = index_dir(root) / "chroma" / "chroma.sqlite3"
    db.write_bytes(b"garbage" * 1000)
    proc = run_cli("index", str(root), check_rc=None)
    assert_one_line_error(proc, 3, "run `codeasst index --rebuild`")
    rebuilt = run_json("index", "--rebuild", str(root))
    assert rebuilt["rebuilt"] == "asked with --rebuild" and rebuilt["files"] == 1


def test_an_empty_question_exits_2_before_any_work(make_repo):
    root = make_repo({"a.py": "x = 1\n"})
    for command in ("ask", "search"):
        proc = run_cli(command, "  ", "-C", str(root), check_rc=None)
        assert_one_line_error(proc, 2, "the question is empty")
        assert not index_dir(root).exists(), "nothing may be indexed for an empty question"


@pytest.mark.slow
def test_search_reads_stdin_that_is_not_utf8(make_repo):
    root = make_repo({"a.py": "def cafe():\n    return 1\n"})
    proc = subprocess.run([*CLI, "search", "cafe", "--no-llm", "-C", str(root)], input=b"caf\xe9 failed\n",
                          capture_output=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert b"stdin is not UTF-8" in proc.stderr and b"Traceback" not in proc.stderr
    assert proc.stdout.startswith(b"a.py:1-2")


def test_python_dash_m_and_help_list_only_what_exists():
    import sys

    proc = subprocess.run([sys.executable, "-m", "codeasst", "--help"], capture_output=True, text=True, check=True)
    listed = re.findall(r"^│ (\w+) ", proc.stdout.split("Commands")[1], flags=re.MULTILINE)
    assert {"index", "search", "ask", "fix", "trust", "eval"} <= set(listed)
    for command in listed:
        run_cli(command, "--help")
    words = re.findall(r"\b(complete|serve|chat)\b", proc.stdout)
    assert not [w for w in words if w not in listed], words


def test_every_command_the_readme_says_takes_dash_c_does():
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    takes = re.search(r"`-C DIR` works\s+with ([^.]+)\.", readme)
    assert takes, "README must say which commands take -C DIR"
    commands = re.findall(r"`(\w+)`", takes.group(1))
    assert len(commands) >= 6
    for command in commands:
        assert re.search(r"--repo\s+-C\s", run_cli(command, "--help").stdout), command
