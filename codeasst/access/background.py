"""The dense phase of a long-lived process (`codeasst serve`; `codeasst mcp` working alone): vectors for
the chunks an index update left waiting, embedded in the background a group at a time while it answers
from what is there.

Each group takes the index lock for itself alone, so an index update or a search that brings the
index up to date waits for one group (a few seconds), never for the whole embedding. A kill loses
at most the group under way (codeasst.index.indexer).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from codeasst.access.local import Local
from codeasst.errors import CodeasstError, IndexLocked

log = logging.getLogger("codeasst.background")
IDLE_S = 2.0  # how often an idle server looks for chunks waiting for vectors
BUSY_S = 0.5  # how long it waits for another run's lock
FAILED_S = 30.0  # after an error (a full disk, a store gone), before it tries again


def start(assistant: Local, stopping: Callable[[], bool]) -> threading.Thread:
    """Embed in a daemon thread until `stopping()`; returns the thread."""
    wake = threading.Event()

    def loop() -> None:
        while not stopping():
            try:
                pause = 0.0 if assistant.embed_pending(groups=1) else IDLE_S
            except IndexLocked:
                pause = BUSY_S
            except CodeasstError as exc:  # the foreground reports the same problem to whoever asks
                log.warning("background embedding paused: %s", exc.one_line())
                pause = FAILED_S
            if pause:
                wake.wait(pause)

    thread = threading.Thread(target=loop, name="codeasst-embed", daemon=True)
    thread.start()
    return thread
