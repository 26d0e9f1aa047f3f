"""Helpers for end-to-end tests: the real CLI in a subprocess, real models, real Chroma."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "codeasst.cli"]


def run_cli(*args: str, cwd: Path | None = None, env: dict | None = None, check_rc: int | None = 0,
            timeout: float = 600, input_text: str | None = None) -> subprocess.CompletedProcess:
    """The CLI in a subprocess; stdin is `input_text` when given, else empty (not a terminal)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    proc = subprocess.run([*CLI, *args], cwd=cwd, env=full_env, capture_output=True, text=True,
                          timeout=timeout, check=False, input=input_text)
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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, seconds: float) -> None:
    """Wait until a server the test started listens on 127.0.0.1:port."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.3)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {seconds} s")


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture
def chroma_server(tmp_path):
    """A real `chroma run` server on 127.0.0.1; yields its URL."""
    chroma = Path(sys.executable).parent / "chroma"
    port = free_port()
    server = subprocess.Popen([str(chroma), "run", "--path", str(tmp_path / "chroma-server"), "--host", "127.0.0.1",
                               "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, 60)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=30)
