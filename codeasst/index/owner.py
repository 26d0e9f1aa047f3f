"""Who may open a repository's embedded vector store.

Chroma's embedded client is not meant for several processes: a long-lived client can keep
serving an old vector index, and two writers risk the files. So `codeasst serve` takes the
store for itself (an exclusive lock on `owner.lock` beside the index, held while it runs),
and every other codeasst process that opens the store takes a shared one for its life. A
command that finds the server's lock held goes through the server instead; the server, if a
command holds the store, waits for it to finish. The kernel drops the locks of a process
that dies, `kill -9` included.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from codeasst.errors import IndexLocked

_held: dict[Path, IO[str]] = {}  # index dir -> this process's open lock file, kept until exit


def _open(index_dir: Path) -> IO[str]:
    index_dir.mkdir(parents=True, exist_ok=True)
    return (index_dir / "owner.lock").open("a+", encoding="utf-8")


def share(index_dir: Path) -> None:
    """Take a shared hold on the store for the rest of this process; IndexLocked (exit 75) while a
    server owns it. Once per process and index: later calls return at once."""
    if index_dir in _held:
        return
    fh = _open(index_dir)
    try:
        fcntl.flock(fh, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.seek(0)
        holder = fh.read().strip() or "a codeasst serve"
        fh.close()
        raise IndexLocked(f"{holder} owns this repository's index",
                          hint="run the command again: it then goes through the server; or stop the server") from None
    _held[index_dir] = fh


def own(index_dir: Path, on_wait: Callable[[], None] | None = None, poll_s: float = 0.5) -> None:
    """Take the store for this process (the server), waiting while other processes hold it;
    `on_wait` is called once if it has to wait."""
    if index_dir in _held:
        return
    fh = _open(index_dir)
    told = False
    while True:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if not told and on_wait is not None:
                on_wait()
                told = True
            time.sleep(poll_s)
    fh.seek(0)
    fh.truncate()
    fh.write(f"codeasst serve (pid {os.getpid()})")
    fh.flush()
    _held[index_dir] = fh


def release(index_dir: Path) -> None:
    """Give up this process's hold (the server as it stops; tests)."""
    fh = _held.pop(index_dir, None)
    if fh is not None:
        fh.truncate(0)
        fcntl.flock(fh, fcntl.LOCK_UN)
        fh.close()


def release_all() -> None:
    """Give up every hold this process has (a bench that measured in-process, then starts a server)."""
    for index_dir in list(_held):
        release(index_dir)
