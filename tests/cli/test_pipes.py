"""Pipe conventions: plain text (no escape codes, no progress) when output is not a terminal,
no colour under NO_COLOR even on a terminal, and piped stdin read where it means something."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import struct
import subprocess
import sys
import termios

import pytest

from tests.cli.conftest import ROOT, run_process

ESCAPE = re.compile(rb"\x1b\[")
# SGR parameters that set a colour: 30-39, 40-49, 90-97, 100-107 (38 and 48 start 256/true colour).
COLOUR = re.compile(rb"\x1b\[(?:[0-9;]*;)?(?:3[0-9]|4[0-9]|9[0-7]|10[0-7])(?:;[0-9;]*)?m")


def run_in_pty(args: list[str], env: dict[str, str]) -> bytes:
    """`codeasst ARGS` (fake models) with stdout and stderr on a terminal 100 columns wide; all it wrote."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    inherited = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    full_env = {**inherited, "PYTHONPATH": str(ROOT), "TERM": "xterm-256color", **env}
    proc = subprocess.Popen([sys.executable, "-m", "tests.cli.fake_main", *args], stdin=subprocess.DEVNULL,
                            stdout=slave, stderr=slave, env=full_env)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the terminal's other end is closed
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    proc.wait(timeout=60)
    return out


@pytest.mark.parametrize("args", [["--help"], ["index", "--help"], ["index", "--bogus"], ["eval"]])
def test_help_and_usage_errors_are_plain_when_piped(args):
    proc = run_process(*args, env={"TERM": "xterm-256color"})
    assert proc.stdout or proc.stderr
    assert not ESCAPE.search(proc.stdout + proc.stderr), (proc.stdout + proc.stderr)[:500]


@pytest.mark.parametrize("args", [["--help"], ["index", "--bogus"]])
def test_no_colour_on_a_terminal_under_no_color(args):
    coloured = run_in_pty(args, {})
    assert COLOUR.search(coloured), "on a terminal without NO_COLOR, help is coloured (else this test proves nothing)"
    plain = run_in_pty(args, {"NO_COLOR": "1"})
    assert b"Usage" in plain
    assert not COLOUR.search(plain), plain[:500]


def test_indexing_shows_no_progress_or_escape_codes_when_piped(tiny_repo):
    proc = run_process("index", tiny_repo)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(b"Indexed 3 files")
    assert not ESCAPE.search(proc.stdout + proc.stderr) and b"\r" not in proc.stderr, proc.stderr


def test_a_progress_bar_only_when_stderr_is_a_terminal_and_not_for_json(monkeypatch):
    """The choice itself (rich would also draw nothing on a pipe)."""
    from codeasst.cli import common

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert common.index_progress(as_json=False) is None
    monkeypatch.setattr(sys, "stderr", Terminal())
    assert common.index_progress(as_json=False) is not None
    assert common.index_progress(as_json=True) is None


def test_indexing_on_a_terminal_under_no_color_has_no_colour(make_repo):
    root = make_repo({f"pkg/m{i}.py": f"def f{i}(x):\n    return x + {i}\n" for i in range(300)})
    out = run_in_pty(["index", str(root)], {"NO_COLOR": "1"})
    assert b"Indexed 300 files" in out
    assert b"Indexing" in out and b"/300 files" in out, "a terminal still gets the progress bar, uncoloured"
    assert not COLOUR.search(out), out[:500]


def test_search_reads_its_query_from_stdin_when_none_is_given(invoke, tiny_repo):
    run = invoke("search", "--no-llm", "-C", tiny_repo, "--json", input="the invoice total with tax\n")
    assert run.exit_code == 0, run.stderr
    assert run.json()[0]["path"] == "billing/invoice.py"


def test_piped_stdin_is_context_for_a_search_with_a_query(invoke, tiny_repo):
    trace = 'Traceback (most recent call last):\n  File "util.py", line 2, in add\nTypeError: bad operand\n'
    run = invoke("search", "why does this fail?", "--no-llm", "-C", tiny_repo, "--json", input=trace)
    assert run.exit_code == 0, run.stderr
    assert any(source.startswith("stdin") for hit in run.json() for source in hit["sources"]), run.stdout


def test_ask_reads_its_question_from_stdin_when_none_is_given(invoke, tiny_repo, fake_llm):
    run = invoke("ask", "-C", tiny_repo, "--json", input="How is the invoice total computed?\n")
    assert run.exit_code == 0, run.stderr
    assert run.json()["question"].strip() == "How is the invoice total computed?"
    assert "Input from stdin" not in fake_llm.history[-1]  # the question, not context beside it


def test_ask_streams_plain_text_when_piped(tiny_repo):
    proc = run_process("ask", "how is the invoice total computed?", "-C", tiny_repo)
    assert proc.returncode == 0, proc.stderr
    assert b"billing/invoice.py:1-3" in proc.stdout
    assert not ESCAPE.search(proc.stdout + proc.stderr)
