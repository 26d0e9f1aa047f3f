"""The server's dense phase: what an update left waiting for vectors is embedded in the background,
a group at a time, while a run that holds the index lock makes it wait (fake embedder, real Chroma)."""

from __future__ import annotations

import threading
import time

from codeasst.access import alone, background
from codeasst.backends.fake import HashingEmbedder
from codeasst.index.indexer import IndexLock
from codeasst.services import build_services


def _wait_for(condition, seconds: float = 30.0) -> None:
    deadline = time.time() + seconds
    while not condition():
        assert time.time() < deadline, "timed out"
        time.sleep(0.05)


def test_the_server_embeds_what_waits_in_the_background_and_yields_to_a_run(make_repo, monkeypatch):
    monkeypatch.setattr(background, "IDLE_S", 0.05)
    monkeypatch.setattr(background, "BUSY_S", 0.05)
    root = make_repo({f"pkg/m{i}.py": f"def fn_{i}(x):\n    return x + {i}\n" for i in range(40)})
    services = build_services(root, {"index.group_chunks": 8}, embedder=HashingEmbedder())
    services.serving = True  # it owns the index, as `codeasst serve` does
    lexical = services.indexer().run(embed_limit=0)
    assert lexical.dense == {"embedded": 0, "total": 40}

    stop = threading.Event()
    lock = IndexLock(services.repo.index_dir)
    lock.__enter__()  # a run holds the index: the background waits for it
    thread = background.start(alone(services), stop.is_set)
    try:
        time.sleep(0.3)
        assert services.indexer().dense()["embedded"] == 0, "no group embedded while another run holds the lock"
        lock.__exit__(None, None, None)
        _wait_for(lambda: services.indexer().dense()["embedded"] == 40)
        assert services.indexer().status(check_store=True)["store_problem"] is None
        (root / "pkg/new.py").write_text("def fresh():\n    return 1\n")
        services.indexer().run(embed_limit=0)  # an update leaves one chunk waiting: picked up too
        _wait_for(lambda: services.indexer().dense() == {"embedded": 41, "total": 41})
    finally:
        stop.set()
        thread.join(timeout=10)
    assert not thread.is_alive()
