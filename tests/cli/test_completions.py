"""Shell completions: the scripts in completions/ are what the program generates now, and,
sourced in each shell, they complete command names and options by asking the program.

The scripts are Typer's small shims (`_CODEASST_COMPLETE=complete_SHELL codeasst` answers each
request), so they stay right as commands change; only a change of Typer's protocol makes them stale."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.conftest import ROOT

BIN = Path(sys.executable).parent
PROGRAM = BIN / "codeasst"
SHELLS = ("bash", "zsh", "fish")

pytestmark = pytest.mark.skipif(not PROGRAM.exists(), reason="needs the installed `codeasst` script (make setup)")


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", **extra}


def _run(args: list[str], **env: str) -> str:
    proc = subprocess.run(args, env=_env(**env), capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("shell", SHELLS)
def test_the_committed_script_is_what_the_program_generates(shell):
    generated = _run([str(PROGRAM)], _CODEASST_COMPLETE=f"source_{shell}")
    committed = (ROOT / "completions" / f"codeasst.{shell}").read_text()
    assert generated == committed, f"completions/codeasst.{shell} is stale: run `make completions`"


# (the command line typed so far, what completion must offer)
ASKED = [
    ("codeasst se", {"search", "serve"}),
    ("codeasst search --no", {"--no-llm"}),
    ("codeasst eval fi", {"fix", "fix-modules", "fim"}),
    ("codeasst eval unit", {"unittest"}),
]


def _words(line: str) -> list[str]:
    return line.split(" ")


@pytest.mark.skipif(not shutil.which("bash"), reason="bash is not installed")
@pytest.mark.parametrize(("line", "offered"), ASKED)
def test_bash_completes_through_the_sourced_script(line, offered):
    words = _words(line)
    script = (f"source {ROOT / 'completions' / 'codeasst.bash'}; COMP_WORDS=({' '.join(words)}); "
              f"COMP_CWORD={len(words) - 1}; _codeasst_completion codeasst; printf '%s\\n' \"${{COMPREPLY[@]}}\"")
    assert set(_run(["bash", "--norc", "-c", script]).split()) == offered


@pytest.mark.skipif(not shutil.which("zsh"), reason="zsh is not installed")
@pytest.mark.parametrize(("line", "offered"), ASKED)
def test_zsh_completes_through_the_sourced_script(line, offered):
    # The completion system is not loaded in `zsh -f`: compdef is a no-op and _arguments prints
    # what it was given, which is what zsh would offer.
    words = _words(line)
    script = ("compdef() { :; }; _arguments() { print -r -- \"$@\"; }; "
              f"source {ROOT / 'completions' / 'codeasst.zsh'}; words=({' '.join(words)}); CURRENT={len(words)}; "
              "_codeasst_completion")
    spec = _run(["zsh", "-f", "-c", script])
    assert set(_quoted_names(spec)) == offered, spec


def _quoted_names(spec: str) -> list[str]:
    """The values in `_arguments '*: :(("search":"help" "serve":"help"))'`."""
    return re.findall(r'"([^"]+)":"', spec.split("((", 1)[1])


@pytest.mark.skipif(not shutil.which("fish"), reason="fish is not installed")
@pytest.mark.parametrize(("line", "offered"), ASKED)
def test_fish_completes_through_the_sourced_script(line, offered):
    script = f"source {ROOT / 'completions' / 'codeasst.fish'}; complete -C '{line}'"
    answer = _run(["fish", "--no-config", "-c", script])
    assert {row.split("\t")[0] for row in answer.splitlines()} == offered, answer


@pytest.mark.parametrize(("shell", "env"), [
    ("bash", {"COMP_WORDS": "codeasst se", "COMP_CWORD": "1"}),
    ("zsh", {"_TYPER_COMPLETE_ARGS": "codeasst se"}),
    ("fish", {"_TYPER_COMPLETE_ARGS": "codeasst se", "_TYPER_COMPLETE_FISH_ACTION": "get-args"}),
])
def test_the_program_answers_each_script_s_request(shell, env):
    """Without the shells: the request each script makes (the variables it sets) gets commands back."""
    script = (ROOT / "completions" / f"codeasst.{shell}").read_text()
    assert f"_CODEASST_COMPLETE=complete_{shell}" in script
    assert all(name in script for name in env if name != "COMP_WORDS")  # bash's COMP_* are the shell's own
    answer = _run([str(PROGRAM)], _CODEASST_COMPLETE=f"complete_{shell}", **env)
    assert "search" in answer and "serve" in answer and "index" not in answer, answer
