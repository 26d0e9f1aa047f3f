"""Shared fixtures. Every test gets its own CODEASST_HOME, so nothing touches the user's files."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def codeasst_home(tmp_path_factory, monkeypatch) -> Path:
    home = tmp_path_factory.mktemp("codeasst-home")
    for name in list(os.environ):
        if name.startswith("CODEASST_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("CODEASST_HOME", str(home))
    return home


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
