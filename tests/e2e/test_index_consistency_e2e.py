"""The index never lies: when the vector store loses vectors the manifest counts, codeasst says so
and mends it from the vectors it keeps by text, and never answers from an empty store as if it
were one. Real CLI, embedder and Chroma (embedded and a `chroma run` server)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from codeasst.paths import index_dir
from tests.conftest import fresh_home
from tests.e2e.conftest import run_cli, run_json
from tests.e2e.test_index_e2e import REPO

pytestmark = pytest.mark.slow

QUERY = ("database table of users", "--no-llm", "-k", "1")


def test_a_lost_local_store_is_said_and_mended_before_the_search_answers(make_repo):
    root = make_repo(REPO)
    built = run_json("index", str(root))
    shutil.rmtree(index_dir(root) / "chroma")
    assert "the embedded vector store" in run_json("status", "-C", str(root))["store_problem"]

    proc = run_cli("search", *QUERY, "--json", "-C", str(root))
    assert f"the vector store lacked {built['chunks']} of {built['chunks']} vectors; mended" in proc.stderr
    assert json.loads(proc.stdout)[0]["path"] == "db/schema.sql"
    status = run_json("status", "-C", str(root))
    assert status["store_problem"] is None
    assert status["dense"] == {"embedded": built["chunks"], "total": built["chunks"]}


def test_moving_to_a_server_and_sharing_it_never_mixes_or_loses_indexes(make_repo, tmp_path, chroma_server):
    url = chroma_server
    port = int(url.rsplit(":", 1)[1])
    root = make_repo(REPO)
    local = run_json("index", str(root))
    on_server = {"CODEASST_STORE__CHROMA_URL": url}

    # Switching the store is a change of where the vectors live: the index is rebuilt there.
    moved = run_json("index", str(root), env=on_server)
    assert f"store embedded -> {url}" in moved["rebuilt"] and moved["chunks"] == local["chunks"]
    assert not (index_dir(root) / "chroma").exists(), "vectors must live on the server alone"
    assert run_json("search", *QUERY, "-C", str(root), env=on_server)[0]["path"] == "db/schema.sql"

    # A second user, same checkout path, same server: a collection of their own.
    other = {**on_server, "CODEASST_HOME": str(tmp_path / "other-user")}
    run_json("index", str(root), env=other)
    import chromadb

    client = chromadb.HttpClient(host="127.0.0.1", port=port)
    counts = {c.name: c.count() for c in client.list_collections()}
    # Two users, two collections each: the static first phase's vectors and MiniLM's.
    assert len(counts) == 4 and set(counts.values()) == {local["chunks"]}
    assert run_json("index", "--rebuild", str(root), env=other)["chunks"] == local["chunks"]
    assert len(client.list_collections()) == 4, "--rebuild drops only its own collections"

    # Someone deletes our collection of MiniLM's vectors (those in use) on the server: said, mended, never
    # an empty answer.
    identity = (index_dir(root) / "store-id").read_text()[:16]
    (ours,) = [c.name for c in client.list_collections()
               if identity in c.name and c.metadata["embedder"] == "sentence-transformers:all-MiniLM-L6-v2"]
    client.delete_collection(ours)
    assert f"has no collection {ours}" in run_json("status", "-C", str(root), env=on_server)["store_problem"]
    proc = run_cli("search", *QUERY, "--json", "-C", str(root), env=on_server)
    assert "vectors; mended" in proc.stderr and json.loads(proc.stdout)[0]["path"] == "db/schema.sql"
    assert run_json("search", *QUERY, "-C", str(root), env=other)[0]["path"] == "db/schema.sql"
    assert {c.name: c.count() for c in client.list_collections()}[ours] == local["chunks"]


def _in_a_terminal(*args: str, cwd: Path, timeout: float = 300) -> tuple[int, str]:
    """Run the CLI with stdin, stdout and stderr on a pseudo-terminal, as a person would; the screen's text."""
    import os
    import pty
    import select
    import time

    from tests.e2e.conftest import CLI

    leader, follower = pty.openpty()
    proc = subprocess.Popen([*CLI, *args], cwd=cwd, stdin=follower, stdout=follower, stderr=follower,
                            env={**os.environ, "COLUMNS": "120", "TERM": "xterm"}, close_fds=True)
    os.close(follower)
    screen, deadline = b"", time.time() + timeout
    while time.time() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            screen += chunk
        elif proc.poll() is not None:
            break
    os.close(leader)
    return proc.wait(timeout=30), screen.decode("utf-8", errors="replace")


def test_in_a_terminal_a_first_search_says_so_and_a_lost_store_is_mended(
        make_repo, tmp_path_factory, monkeypatch):
    fresh_home(tmp_path_factory, monkeypatch)  # a first run ever: nothing exported or unpacked yet
    root = make_repo(REPO)
    rc, screen = _in_a_terminal("search", *QUERY, cwd=root)
    assert rc == 0, screen
    assert "indexing it first" in screen and "building the fast query embedder" in screen
    assert "Indexing" in screen and "ETA" in screen, "a person sees files, chunks and time left"

    shutil.rmtree(index_dir(root) / "chroma")
    rc, screen = _in_a_terminal("search", *QUERY, cwd=root)
    assert rc == 0, screen
    assert "vectors; mended" in screen and "db/schema.sql" in screen
