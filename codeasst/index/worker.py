"""The background embedder's files beside an index, and how other runs find, stop and pass it.

`codeasst index` returns once every chunk has the static model's vector and leaves MiniLM's to a
detached process of its own (codeasst.access.detached). These are its traces in the index
directory, read and written with nothing but file locks, so any codeasst process can use them:

- `worker.lock`: held (exclusive) by the running worker for its whole life, with its pid inside:
  one worker per index, and the kernel lets go of it when the worker dies, `kill -9` included;
- `want.lock`: held (shared) by a foreground run while it waits for the index lock the worker
  holds for one group, and by a search or an answer while it runs: the worker takes no new group,
  and pauses at its next batch, while anyone holds it;
- `background.log`: what the worker said; `background.json`: how far it got, and why it stopped.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

LOCK = "worker.lock"
WANT = "want.lock"
LOG = "background.log"
STATE = "background.json"
# The label the worker writes into the index lock while it holds it (codeasst.index.lock): a foreground
# run that finds it waits for the group in flight instead of failing.
LABEL = "codeasst's background embedder"


def _open(index_dir: Path, name: str) -> IO[str]:
    index_dir.mkdir(parents=True, exist_ok=True)
    return (index_dir / name).open("a+", encoding="utf-8")


def pid(index_dir: Path) -> int | None:
    """The running worker's pid; 0 while it starts (its lock held, its pid not yet written); None when none runs."""
    if not (index_dir / LOCK).exists():
        return None
    with _open(index_dir, LOCK) as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            text = fh.read().strip()
            return int(text) if text.isdigit() else 0
        fcntl.flock(fh, fcntl.LOCK_UN)
    return None


def claim(index_dir: Path) -> IO[str] | None:
    """The worker's lock, taken by the command that starts it and handed down to it (the same open file:
    the lock is one, and lasts until the last of the two lets go), so no second worker can start between
    the two and `pid` sees it from the start. None while another worker holds it."""
    fh = _open(index_dir, LOCK)
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.close()
        return None
    fh.seek(0)
    fh.truncate()
    fh.flush()
    return fh


def started(fh: IO[str], pid_: int) -> None:
    """The starting command's part: the worker's pid written, its own hold on the lock let go of."""
    fh.write(str(pid_))
    fh.flush()
    fh.close()  # not unlocked: the worker holds the same lock through its copy of the file


def adopt(fd: int) -> IO[str]:
    """The worker's part: the lock its starting command took, through the descriptor it inherited."""
    return os.fdopen(fd, "a+", encoding="utf-8")


def release(fh: IO[str]) -> None:
    """The worker, as it ends (the kernel does the same for one killed)."""
    fh.truncate(0)
    fcntl.flock(fh, fcntl.LOCK_UN)
    fh.close()


def wanted(index_dir: Path) -> bool:
    """Whether a foreground run waits for the index: then the worker starts no group."""
    with _open(index_dir, WANT) as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fh, fcntl.LOCK_UN)
    return False


@contextlib.contextmanager
def want(index_dir: Path) -> Iterator[None]:
    """Say, while inside, that this run waits for the index (see `wanted`). Where there is no index yet,
    no worker runs for it: nothing is said, and nothing is written."""
    if not index_dir.is_dir():
        yield
        return
    with _open(index_dir, WANT) as fh:
        fcntl.flock(fh, fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def stop(index_dir: Path, timeout_s: float = 60.0) -> bool:
    """Ask the running worker to stop (SIGTERM: it ends at its next batch, keeping every group it
    finished) and wait until it has; True once none runs."""
    deadline = time.monotonic() + timeout_s
    running = pid(index_dir)
    while running == 0 and time.monotonic() < deadline:  # starting: its pid comes in an instant
        time.sleep(0.05)
        running = pid(index_dir)
    if running is None:
        return True
    with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
        os.kill(running, signal.SIGTERM)
    while pid(index_dir) is not None:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def read_state(index_dir: Path) -> dict | None:
    try:
        return json.loads((index_dir / STATE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):  # half written by a worker killed as it wrote: the next one rewrites it
        return None


def write_state(index_dir: Path, state: dict) -> None:
    """Replaced whole, so a reader never sees half of it."""
    path = index_dir / STATE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state), encoding="utf-8")
    tmp.replace(path)
