"""`codeasst complete` through the CLI with the real bundled model: a whole statement at the cursor,
silence where it should be, and one-line errors for bad positions and input."""

from __future__ import annotations

import ast
import subprocess

import pytest

from tests.e2e.conftest import CLI, assert_one_line_error, run_cli, run_json

pytestmark = pytest.mark.slow

MODULE = '''\
def add(a, b):
    """Return the sum of a and b."""
    return a + b


def is_even(n):
    """Return True when n is even."""
    

print(is_even(4))
'''
BODY_LINE = 8  # the empty, indented line of is_even's body


def test_a_whole_statement_at_the_cursor(tmp_path):
    (tmp_path / "mod.py").write_text(MODULE)
    result = run_json("complete", "mod.py", "--line", str(BODY_LINE), "--col", "5", "-C", str(tmp_path),
                      cwd=tmp_path)
    assert result["text"].startswith("return n % 2 == 0"), result
    assert result["prompt_tokens"] > 30 and result["generated_tokens"] >= 5 and result["latency_ms"] > 0
    # inserted at the cursor, the suggestion makes a module Python accepts (model output is never run)
    lines = MODULE.split("\n")
    lines[BODY_LINE - 1] = "    " + result["text"]
    body = ast.parse("\n".join(lines)).body[1].body
    assert isinstance(body[-1], ast.Return)
    # plain output is the text alone, ready to insert
    plain = run_cli("complete", "mod.py", "--line", str(BODY_LINE), "--col", "5", cwd=tmp_path)
    assert plain.stdout == result["text"]


def test_at_column_one_the_suggestion_carries_the_block_and_stays_in_the_function(tmp_path):
    # The cursor at column 1 of the function's emptied last line: the block is inferred from the
    # lines around it, the suggestion brings its indentation, and nothing follows at the top level.
    (tmp_path / "mod.py").write_text(MODULE)
    result = run_json("complete", "mod.py", "--line", str(BODY_LINE), "--col", "1", cwd=tmp_path)
    assert result["text"].startswith("    return n % 2 == 0"), result
    assert "\nprint" not in result["text"] and result["place"] == "end"
    lines = MODULE.split("\n")
    lines[BODY_LINE - 1] = result["text"]
    body = ast.parse("\n".join(lines)).body[1].body
    assert isinstance(body[-1], ast.Return)


def test_stdin_silence_and_bad_positions(tmp_path):
    proc = subprocess.run([*CLI, "complete", "-", "--path", "x.py", "--line", "1", "--col", "8", "--json"],
                          input="x = fib" + "onacci(3)\n", cwd=tmp_path, capture_output=True, text=True, check=False,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert '"reason": "the cursor is inside an identifier"' in proc.stdout
    (tmp_path / "mod.py").write_text(MODULE)
    assert_one_line_error(run_cli("complete", "mod.py", "--line", "99", "--col", "1", cwd=tmp_path, check_rc=None),
                          2, "line 99 is outside the text")
    assert_one_line_error(run_cli("complete", "mod.py", "--line", "1", "--col", "80", cwd=tmp_path, check_rc=None),
                          2, "column 80 is outside line 1")
    (tmp_path / "bin.py").write_bytes(b"x = '\xff'\n")
    assert_one_line_error(run_cli("complete", "bin.py", "--line", "1", "--col", "1", cwd=tmp_path, check_rc=None),
                          2, "not UTF-8")
    assert_one_line_error(run_cli("complete", "nope.py", "--line", "1", "--col", "1", cwd=tmp_path, check_rc=None),
                          2, "nope.py: no such file")
