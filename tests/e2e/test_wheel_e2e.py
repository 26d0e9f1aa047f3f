"""The package installs as users install it (`pipx install .`, `uv tool install .`, `pip install .`).

The wheel is built from a clean copy of the tree (the files git tracks or would track, so a stale
`build/` cannot hide a package left out), installed with --no-deps into a new virtual environment
that sees this one's dependencies but not its editable codeasst, and run from there: every module
imports, every command answers --help, the data files load, and a real search runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.conftest import write_tree

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow

# Run inside the installed environment: what a user's `codeasst` would import.
CHECK = r"""
import importlib, json, pkgutil, sys
import codeasst
from click.testing import CliRunner
from typer.main import get_command

assert "site-packages" in codeasst.__file__, codeasst.__file__  # the wheel's, not the source tree's
failed = []
for module in pkgutil.walk_packages(codeasst.__path__, "codeasst."):
    if module.name.endswith("__main__"):  # runs the CLI; `codeasst --help` below covers it
        continue
    try:
        importlib.import_module(module.name)
    except Exception as exc:  # noqa: BLE001 - every failure is reported
        failed.append(f"{module.name}: {exc!r}")
from codeasst.cli import app
from codeasst import prompt
group = get_command(app)
runner = CliRunner()
helped = []
for name in sorted(group.commands):
    result = runner.invoke(group, [name, "--help"])
    if result.exit_code != 0:
        failed.append(f"codeasst {name} --help: exit {result.exit_code} {result.output[-300:]}")
    helped.append(name)
prompt.load("ask_checked")  # package data: the prompts
from codeasst.index import tags
from codeasst.index.graph import graph_languages
from codeasst.index.graph_hand import HAND_GRAMMARS
for grammar in sorted(graph_languages() - HAND_GRAMMARS):  # package data: the code graph's query files
    tags.query(grammar)
print(json.dumps({"failed": failed, "commands": helped, "file": codeasst.__file__}))
"""


def _clean_copy(dest: Path) -> None:
    """The files git tracks or would track (untracked but not ignored): never build/, .venv, caches."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        source = ROOT / rel
        if source.is_file():  # a file deleted but not yet staged is listed too
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / rel)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A new virtual environment with the wheel installed; its bin/ folder."""
    if not (ROOT / ".git").exists():
        pytest.skip("the wheel test copies the tree git lists; this is not a git checkout")
    work = tmp_path_factory.mktemp("wheel")
    source, wheels, venv = work / "source", work / "dist", work / "venv"
    _clean_copy(source)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "-w", str(wheels), str(source)], check=True, capture_output=True, timeout=300)
    (wheel,) = wheels.glob("codeasst-*.whl")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True,
                   capture_output=True, timeout=300)
    # The dependencies, already installed here, seen by path: a plain .pth line adds the folder without
    # running the .pth files in it, so this environment's editable codeasst stays out of sight.
    theirs = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                            capture_output=True, text=True, check=True).stdout.strip()
    (Path(theirs) / "deps-of-the-test.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv / "bin"


def _run(argv: list, cwd: Path | None = None, **kwargs) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False, **kwargs)


def test_wheel_imports_every_module_and_answers_every_command(installed, tmp_path):
    proc = _run([str(installed / "python"), "-c", CHECK], cwd=tmp_path)  # not the source tree's folder
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["failed"] == []
    assert {"index", "search", "ask", "complete", "fix", "lsp", "serve", "chat"} <= set(report["commands"])
    for argv in (["--help"], ["lsp", "--help"]):
        proc = _run([str(installed / "codeasst"), *argv], cwd=tmp_path)
        assert proc.returncode == 0 and "Usage" in proc.stdout, proc.stderr[-2000:]


def test_wheel_searches_a_small_repository(installed, make_repo):
    repo = make_repo({"shapes.py": "def circle_area(radius):\n    \"\"\"The area of a circle.\"\"\"\n"
                                   "    return 3.14159 * radius * radius\n",
                      "words.py": "def shout(text):\n    return text.upper() + '!'\n"})
    write_tree(repo, {"README.md": "A tiny repository for the wheel test.\n"})
    proc = _run([str(installed / "codeasst"), "search", "area of a circle", "--json", "--no-llm"], cwd=repo)
    assert proc.returncode == 0, proc.stderr[-3000:]
    hits = json.loads(proc.stdout)
    assert hits and hits[0]["path"] == "shapes.py", hits
