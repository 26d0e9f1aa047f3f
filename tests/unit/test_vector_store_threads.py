"""The embedded Chroma store opened from several threads at once, as `codeasst serve` does (a status
request while it embeds in the background): Chroma is not safe to start twice at once in a process."""

from __future__ import annotations

import threading

from codeasst.index.vectors import VectorStore


def test_threads_opening_one_store_at_once_all_get_it(tmp_path):
    failures: list[str] = []
    for trial in range(3):
        folder = tmp_path / f"index{trial}"
        folder.mkdir()
        start = threading.Barrier(6)

        def open_and_count(folder=folder, start=start) -> None:
            start.wait()
            try:
                assert VectorStore.open(folder, folder, "fake").count() == 0
            except Exception as exc:  # noqa: BLE001 - each failure is what the test counts
                failures.append(repr(exc)[:200])

        threads = [threading.Thread(target=open_and_count) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert failures == []
