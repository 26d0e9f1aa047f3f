"""The command line's conventions (JSON schemas, exit codes, pipes, completions, startup).

`invoke` runs the real Typer app in this process with the hashing embedder and a scripted
model in place of the real ones: what these tests check is the CLI's contract, not the models.
The tests that need the real entry point (`python -m codeasst`) run it in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.cli.fakes import PatientLLM, wire

ROOT = Path(__file__).resolve().parents[2]

# A tiny repository: two Python modules and a Markdown file.
TINY = {
    "billing/invoice.py": (
        "def invoice_total(items, tax=0.2):\n"
        "    \"\"\"The invoice total with tax.\"\"\"\n"
        "    return sum(items) * (1 + tax)\n"
    ),
    "util.py": "def add(a, b):\n    return a + b\n",
    "README.md": "# tiny\n\nInvoices and additions.\n",
}


@dataclass
class Run:
    exit_code: int
    stdout: str
    stderr: str
    exception: BaseException | None

    def json(self):
        return json.loads(self.stdout)


@pytest.fixture
def fake_llm(monkeypatch) -> PatientLLM:
    """Every command's services get the hashing embedder and this scripted model."""
    llm = PatientLLM()
    wire(monkeypatch.setattr, llm, evals=True)
    return llm


@pytest.fixture
def invoke(fake_llm):
    """Run `codeasst ARGS...` in this process; stdin is `input` (None: empty and not a terminal)."""
    from codeasst.cli import app

    def run(*args: str, input: str | bytes | None = None) -> Run:
        result = CliRunner().invoke(app, [str(a) for a in args], input=input)
        exception = None if isinstance(result.exception, SystemExit) else result.exception
        return Run(result.exit_code, result.stdout, result.stderr, exception)

    return run


@pytest.fixture
def tiny_repo(make_repo) -> Path:
    return make_repo(TINY)


def run_process(*args, input: bytes | str | None = None, env: dict | None = None, fake: bool = True,
                cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """`codeasst ARGS...` as a process of its own, through its real entry point: with the fake
    models (tests.cli.fake_main) unless `fake` is False. stdin is `input`, else /dev/null."""
    module = "tests.cli.fake_main" if fake else "codeasst"
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    stdin = {"input": input.encode() if isinstance(input, str) else input} if input is not None else {
        "stdin": subprocess.DEVNULL}
    return subprocess.run([sys.executable, "-m", module, *map(str, args)], capture_output=True, env=full_env,
                          cwd=cwd, timeout=timeout, check=False, **stdin)
