"""Shared fixtures. Every test gets its own CODEASST_HOME, so nothing touches the user's files."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def shared_model_cache(tmp_path_factory) -> Path:
    """The bundled GGUF joined from its parts and the embedder's ONNX export, made once per
    test run: each costs seconds, and a suite of end-to-end tests would redo them dozens of
    times. The tests of making them use directories of their own (see fresh_home)."""
    return tmp_path_factory.mktemp("shared-model-cache")


def fresh_home(tmp_path_factory, monkeypatch, shared: Path | None = None) -> Path:
    home = tmp_path_factory.mktemp("codeasst-home")
    for name in list(os.environ):
        if name.startswith("CODEASST_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("CODEASST_HOME", str(home))
    # complete.model "auto" picks the 1.5B wherever it is installed (a developer's machine, not CI);
    # the suite is about the bundled 0.5B, so it runs on that model everywhere.
    monkeypatch.setenv("CODEASST_COMPLETE__MODEL", "bundled")
    # ask.model "auto" leaves the model out where llama.cpp has no GPU (CI): the suite's answers are
    # the 0.5B's everywhere; a test of the default sets "auto" itself.
    monkeypatch.setenv("CODEASST_ASK__MODEL", "llm")
    # `codeasst index` waits for every vector, as in CI (`--wait`): a test reads what the run made, and no
    # test leaves a detached embedder behind it. The background embedder's own tests turn it back on.
    monkeypatch.setenv("CODEASST_INDEX__BACKGROUND", "false")
    if shared is not None:
        (home / "cache").mkdir()
        for name in ("models", "embedders"):
            (shared / name).mkdir(exist_ok=True)
            (home / "cache" / name).symlink_to(shared / name)
    return home


@pytest.fixture(autouse=True)
def codeasst_home(tmp_path_factory, monkeypatch, shared_model_cache) -> Path:
    return fresh_home(tmp_path_factory, monkeypatch, shared_model_cache)


def write_tree(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


@pytest.fixture
def make_repo(tmp_path):
    """Create a repository from {path: content}; git-initialised unless git=False."""

    def make(files: dict[str, str | bytes], git: bool = True, name: str = "repo") -> Path:
        root = tmp_path / name
        root.mkdir()
        if git:
            subprocess.run(["git", "init", "-q", str(root)], check=True)
        write_tree(root, files)
        return root

    return make


def pytest_sessionfinish(session, exitstatus) -> None:
    """The models the tests loaded, freed before the summary is the last thing printed (left to the
    interpreter's teardown, llama.cpp's objects print tracebacks after it)."""
    import sys

    if "codeasst.backends.llama_cpp" in sys.modules:
        sys.modules["codeasst.backends.llama_cpp"].close_all()
