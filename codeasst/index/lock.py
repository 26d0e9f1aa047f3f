"""One writer per index, and a write the disk refuses told in one line."""

from __future__ import annotations

import errno
import fcntl
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Self

from codeasst.errors import IndexLocked, IndexProblem, WorkerBusy
from codeasst.index import worker as background


class IndexLock:
    """One writer per index; a second one fails fast instead of waiting, but for the background
    embedder (codeasst.index.worker), which holds the lock a group at a time and yields it at its
    next group: a run given `wait_s` waits that long for it, and says so meanwhile (worker.want), so
    the worker takes no new group. `worker` is that embedder's own hold, labelled for the others."""

    def __init__(self, directory: Path, *, wait_s: float = 0.0, worker: bool = False) -> None:
        self.path = directory / "lock"
        self.wait_s = wait_s
        self.worker = worker

    def __enter__(self) -> Self:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = self.path.open("a+")
        with ExitStack() as waiting:
            self._take(waiting)
        self._fh.seek(0)
        self._fh.truncate()
        self._fh.write(f"{background.LABEL} (pid {os.getpid()})" if self.worker else f"pid {os.getpid()}")
        self._fh.flush()
        return self

    def _take(self, waiting: ExitStack) -> None:
        started, wants = time.monotonic(), False
        while True:
            try:
                fcntl.flock(self._fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                self._fh.seek(0)
                holder = self._fh.read().strip()
                waited = time.monotonic() - started
                if not holder and waited < 0.5:  # taken an instant ago: its holder writes its name next
                    time.sleep(0.01)
                    continue
                by_worker = holder.startswith(background.LABEL)
                if by_worker and not self.worker and waited < self.wait_s:
                    if not wants:
                        waiting.enter_context(background.want(self.path.parent))
                        wants = True
                    time.sleep(0.05)
                    continue
                self._fh.close()
                error = WorkerBusy if by_worker else IndexLocked
                raise error(f"the index is being updated by {holder or 'another process'}",
                            hint="wait for it to finish; if none is running, delete " + str(self.path)) from None

    def __exit__(self, *exc) -> None:
        self._fh.truncate(0)
        fcntl.flock(self._fh, fcntl.LOCK_UN)
        self._fh.close()


# A write refused for want of room: a full disk, a size limit on files, a quota; SQLite says
# SQLITE_FULL, or SQLITE_IOERR where the write itself failed (EFBIG).
_NO_ROOM = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)
_SQLITE_NO_ROOM = (sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR)


@contextmanager
def write_errors() -> Iterator[None]:
    """A write the disk refuses ends the run with one line, not a traceback: what was committed
    before stays whole (each group in one transaction) and the next run resumes from it."""
    hint = "is the disk full? free some space and run `codeasst index` again; it resumes where this run stopped"
    try:
        yield
    except sqlite3.OperationalError as exc:
        first = exc  # a failed ROLLBACK after SQLite rolled back by itself hides the write that failed
        while isinstance(first.__context__, sqlite3.OperationalError):
            first = first.__context__
        if (getattr(first, "sqlite_errorcode", 0) & 0xFF) not in _SQLITE_NO_ROOM:
            raise
        raise IndexProblem(f"the index could not be written: {first}", hint=hint) from None
    except OSError as exc:
        if exc.errno not in _NO_ROOM:
            raise
        raise IndexProblem(f"the index could not be written: {exc.strerror}", hint=hint) from None
