"""Helpers for end-to-end tests: the real CLI in a subprocess, real models, real Chroma."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "codeasst.cli"]


def run_cli(*args: str, cwd: Path | None = None, env: dict | None = None, check_rc: int | None = 0,
            timeout: float = 600) -> subprocess.CompletedProcess:
    full_env = dict(os.environ)
    full_env.update(env or {})
    proc = subprocess.run([*CLI, *args], cwd=cwd, env=full_env, capture_output=True, text=True,
                          timeout=timeout, check=False)
    if check_rc is not None:
        assert proc.returncode == check_rc, f"rc={proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc


def run_json(*args: str, **kwargs):
    return json.loads(run_cli(*args, "--json", **kwargs).stdout)


def assert_one_line_error(proc: subprocess.CompletedProcess, rc: int, fragment: str) -> None:
    assert proc.returncode == rc, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert "Traceback" not in proc.stderr
    assert any(fragment in line for line in lines), proc.stderr
    assert len([line for line in lines if "error" in line]) == 1, proc.stderr


@pytest.fixture
def cli():
    return run_cli
