"""`fix_file` and `write_fix` on real files: bad input refused in one line with the file
untouched, and a write that keeps encoding, line endings and mode, or does not happen."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time

import pytest

from codeasst.backends.fake import ScriptedLLM
from codeasst.services import build_services
from codeasst.tasks.fix import (
    FileChangedError,
    FixInputError,
    LinterError,
    SourceSyntaxError,
    fix_file,
    fix_files,
    fix_text,
    fixed_bytes,
    options_from,
    write_fix,
)

MESSY = "import os\ndef f(a,b) :\n    return a+b\n"
CLEAN = "def f(a, b):\n    return a+b\n"  # E226 is in flake8's default ignore list: left alone


@pytest.fixture
def services(tmp_path):
    return build_services(tmp_path, llm=ScriptedLLM())  # no reply queued: the model must not be needed


def test_a_fix_is_written_atomically_keeping_crlf_and_mode(tmp_path, services):
    path = tmp_path / "mod.py"
    path.write_bytes(MESSY.replace("\n", "\r\n").encode())
    path.chmod(0o640)
    result = fix_file(services, path, for_write=True)
    assert path.read_bytes() == MESSY.replace("\n", "\r\n").encode()  # nothing written yet
    assert write_fix(result) and result.written
    assert path.read_bytes() == CLEAN.replace("\n", "\r\n").encode()
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["mod.py"]  # no temporary file left behind


def test_the_encoding_cookie_bom_and_symlinks_are_respected(tmp_path, services):
    latin = tmp_path / "latin.py"
    latin.write_bytes("# -*- coding: latin-1 -*-\nname='café'\n".encode("latin-1"))
    write_fix(fix_file(services, latin))
    assert latin.read_bytes() == "# -*- coding: latin-1 -*-\nname = 'café'\n".encode("latin-1")
    bom = tmp_path / "bom.py"
    bom.write_bytes(b"\xef\xbb\xbfx=1\n")
    real = tmp_path / "real.py"
    real.write_text("y=2\n")
    link = tmp_path / "link.py"
    link.symlink_to(real)
    write_fix(fix_file(services, bom))
    write_fix(fix_file(services, link))
    assert bom.read_bytes() == b"\xef\xbb\xbfx = 1\n"
    assert link.is_symlink() and real.read_text() == "y = 2\n"


def test_a_file_changed_since_it_was_read_is_not_overwritten(tmp_path, services):
    path = tmp_path / "mod.py"
    path.write_text(MESSY)
    result = fix_file(services, path, for_write=True)
    path.write_text(MESSY + "# edited meanwhile\n")
    with pytest.raises(FileChangedError, match="changed on disk"):
        write_fix(result)
    assert path.read_text() == MESSY + "# edited meanwhile\n"
    assert [p.name for p in tmp_path.iterdir()] == ["mod.py"]


@pytest.mark.parametrize("name, content, error, message", [
    ("missing.py", None, FixInputError, "no such file"),
    ("notes.txt", "x=1\n", FixInputError, "not a Python file"),
    ("blob.py", b"\x00\x01binary", FixInputError, "binary file"),
    ("big.py", "x = 1\n" * 50, FixInputError, "over the limit"),
    ("broken.py", "def f(:\n    pass\n", SourceSyntaxError, "broken.py:1:7: syntax error"),
    ("undecodable.py", b"x = '\xff'\n", FixInputError, "encoding declaration"),
])
def test_bad_input_is_one_line_and_leaves_the_file_alone(tmp_path, services, name, content, error, message):
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    before = path.read_bytes() if path.exists() else None
    with pytest.raises(error, match=message) as caught:
        fix_file(services, path, options=options_from(services, max_file_bytes=200))
    assert "\n" not in caught.value.one_line()
    assert (path.read_bytes() if path.exists() else None) == before


def test_a_read_only_file_is_refused_before_any_work(tmp_path, services):
    path = tmp_path / "ro.py"
    path.write_text(MESSY)
    path.chmod(0o444)
    with pytest.raises(FixInputError, match="read-only"):
        fix_file(services, path, for_write=True)
    assert fix_file(services, path).fixed == CLEAN  # a dry run still shows the fix
    assert path.read_text() == MESSY


def test_a_missing_linter_is_a_one_line_error(tmp_path, services):
    path = tmp_path / "mod.py"
    path.write_text(MESSY)
    with pytest.raises(LinterError, match="linter not found"):
        fix_file(services, path, options=options_from(services, linter=("/no/such/flake8",)))
    assert path.read_text() == MESSY


def test_stdin_is_linted_with_the_project_config(tmp_path, services):
    (tmp_path / "tox.ini").write_text("[flake8]\nextend-ignore = E231\n")
    result = fix_text(services, b"x = [1,2]\r\ny=1\r\n", name="pkg/mod.py")
    assert [d.code for d in result.before] == ["E225"]
    assert fixed_bytes(result) == b"x = [1,2]\r\ny = 1\r\n"


def test_a_generated_3000_line_file_is_fixed_whole(tmp_path, services):
    blocks = [f"def f{i}(l,x) :\n    s=x+{i}  \n    return [v*s for v in l]\n" for i in range(1000)]
    path = tmp_path / "big.py"
    path.write_text("\n".join(blocks))
    started = time.perf_counter()
    result = fix_file(services, path)
    assert result.clean and result.llm_calls == 0, result.after[:3]
    assert time.perf_counter() - started < 120
    write_fix(result)
    check = "import big; assert big.f7([1, 2], 1) == [8, 16]; assert big.f999([3], 0) == [2997]"
    subprocess.run([sys.executable, "-c", check], cwd=tmp_path, check=True, env={**os.environ, "PYTHONPATH": "."})


def test_fix_files_reports_each_name_in_order_and_picks_the_exit_code(tmp_path, services):
    (tmp_path / "a.py").write_text(MESSY)
    (tmp_path / "left.py").write_text("def g():\n    return undefined_name\n")  # F821: no rule fixes it
    options = options_from(services, use_llm=False)
    seen = []

    def run(*names, **flags):
        return fix_files(services, list(names), options=options, read_stdin=lambda: b"y=1\n", cwd=tmp_path,
                         on_outcome=lambda o: seen.append(o.name), **flags)

    clean = run("a.py", "-")
    assert seen == ["a.py", "-"] and clean.exit_code == 0
    assert [o.result.fixed for o in clean.outcomes] == [CLEAN, "y = 1\n"] and clean.outcomes[1].from_stdin
    assert run("left.py").exit_code == 0 and run("left.py", check=True).exit_code == 1
    assert run("a.py", check=True).exit_code == 0
    # An error is one line on its outcome; the others go on; the highest code wins over --check.
    mixed = run("missing.py", "left.py", "notes.txt", check=True)
    assert [(o.exit_code, o.result is None) for o in mixed.outcomes] == [(2, True), (0, False), (2, True)]
    assert mixed.outcomes[0].error == f"{tmp_path / 'missing.py'}: no such file" and mixed.exit_code == 2
    assert [r["path"] for r in mixed.reports(with_diff=False)] == ["left.py"]
    written = run("a.py", write=True)
    assert written.outcomes[0].result.written and (tmp_path / "a.py").read_text() == CLEAN
