"""MiniLM's phase of the index in a detached process of its own: `codeasst index` returns once every chunk
has the static model's vector, and this process makes the rest (docs/commands/index.md).

One per index (codeasst.index.worker's lock), niced, on at most `index.background_cores` CPUs (so
onnxruntime runs that many threads), logging to the index directory. It works a group at a time: the
group's vectors computed without the index lock and kept by text (codeasst.index.prefetch), then
stored and marked under it, with the vector store opened afresh for each group, so between groups it
is no different from a run that has ended. A search that must write waits for one group's write at
most (and the worker takes no new one meanwhile: codeasst.index.worker.want); `codeasst index` and
`codeasst serve` stop it first. SIGTERM stops it at its next batch, keeping every group it finished; the next
`codeasst index` starts another, which resumes.

Run as `python -P -m codeasst.access.detached ROOT LOCK_FD` (LOCK_FD: the worker lock its starter took),
with the settings the starting command had (its flags passed as CODEASST_* variables).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from codeasst import paths
from codeasst.config import env_name
from codeasst.errors import CodeasstError, IndexLocked
from codeasst.index import worker
from codeasst.index.prefetch import prefetch
from codeasst.index.vectors import VectorStore
from codeasst.services import Services, build_services

log = logging.getLogger("codeasst.detached")
NICE = 10  # below the user's own commands, which it must never slow
GROUP = 64  # chunks a group at most: one group is what a foreground run may wait for (a few seconds on one core)
BUSY_S = 0.2  # how long it waits while a foreground run holds or wants the index
PAUSE_S = 0.05  # how often it looks again, paused at a batch while a search or an answer runs
_started: list[subprocess.Popen] = []


class Stopped(Exception):
    """SIGTERM arrived: stop at this batch (the group under way is dropped whole; the next run embeds it)."""


def spawn(services: Services) -> dict:
    """Start the background embedder for this index: {"pid", "log"}, or {"error": one line} where it
    could not start (its log not writable, a process limit); the index is usable either way."""
    index_dir = services.repo.index_dir
    log_path = index_dir / worker.LOG
    env = dict(os.environ)
    for key, origin in services.loaded.origins.items():
        if origin == "command-line flag":  # the worker embeds what this command would have
            value = services.settings
            for part in key.split("."):
                value = getattr(value, part)
            env[env_name(key)] = str(value)
    lock = worker.claim(index_dir)
    if lock is None:  # another command started one meanwhile: it does the work
        return {"pid": worker.pid(index_dir) or 0, "log": str(log_path)}
    try:
        with log_path.open("ab") as out:
            # -P, and not started in the repository: a repository with a `codeasst` folder of its own (this
            # one) would be imported instead of the codeasst that runs. A new session: a Ctrl-C meant for the
            # terminal's command is not its.
            proc = subprocess.Popen([sys.executable, "-P", "-m", "codeasst.access.detached", str(services.repo.root),
                                     str(lock.fileno())], stdin=subprocess.DEVNULL, stdout=out, stderr=out, env=env,
                                    cwd=index_dir, start_new_session=True, pass_fds=(lock.fileno(),))
    except OSError as exc:
        worker.release(lock)
        what = f"cannot write its log {log_path}" if exc.filename == str(log_path) else "cannot start a process"
        return {"error": f"{what}: {exc.strerror or exc}"}
    worker.started(lock, proc.pid)
    _started.append(proc)  # never waited for: it outlives this command
    return {"pid": proc.pid, "log": str(log_path)}


def _confine(cores: int) -> None:
    """Nice this process, and keep it (every thread it starts) to `cores` of the CPUs it may use, the last
    ones; onnxruntime sizes its thread pool by them. 0 leaves every CPU."""
    os.nice(NICE)
    # Linux schedules a session's processes as one group (autogroup), and nice weighs only inside it: in the
    # session of its own it starts, this process would take a whole core beside the user's commands. Not
    # Linux, or autogroup off: nice alone does it.
    with contextlib.suppress(OSError):
        Path("/proc/self/autogroup").write_text(str(NICE))
    if cores and hasattr(os, "sched_setaffinity"):
        allowed = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, allowed[-cores:])


def _embed(services: Services, stopped: list[bool]) -> str:
    """Embed a group at a time until none waits or SIGTERM; why it stopped."""
    index_dir = services.repo.index_dir
    state = {"pid": os.getpid(), "started_at": time.time(), "embedded": 0, "stopped": None}
    progress = _Watch(stopped, index_dir)
    while not stopped[0]:
        indexer = services.indexer(progress)
        try:
            prefetch(indexer, services.settings.index.group_chunks, progress)  # the model's work, without the lock
        except Stopped:
            break
        if worker.wanted(index_dir):  # a foreground run waits for the index: leave it the next turn
            time.sleep(BUSY_S)
            continue
        try:
            summary = indexer.embed_pending(groups=1, worker=True)
        except IndexLocked:
            time.sleep(BUSY_S)
            continue
        except Stopped:
            break
        finally:
            VectorStore.close_local(index_dir)  # the next group reads what other runs wrote meanwhile
        done = summary.embedded + summary.final_embedded
        state["embedded"] += done
        worker.write_state(index_dir, state)
        if not done:
            state["stopped"] = "done: every chunk has its vector" if not summary.final_waiting else \
                "nothing it could embed"
            break
        log.info("embedded %d chunks; %d still wait for %s's vectors", done, summary.final_waiting,
                 services.embedder.name)
    state["stopped"] = state["stopped"] or "stopped (SIGTERM): the next `codeasst index` resumes"
    worker.write_state(index_dir, state)
    return state["stopped"]


class _Watch:
    """The indexer's progress, watched for SIGTERM: the embedder reports each batch, and the next one
    after SIGTERM stops the group (Progress, codeasst.index.summary). While a search or an answer runs
    (worker.want), it waits at its next batch: the user's command has the CPU to itself."""

    def __init__(self, stopped: list[bool], index_dir: Path) -> None:
        self.stopped = stopped
        self.index_dir = index_dir

    def start(self, files: int) -> None:
        pass

    def advance(self, files: int = 0, chunks: int = 0) -> None:
        pass

    def start_embedding(self, chunks: int) -> None:
        pass

    def embedded(self, chunks: int) -> None:
        while not self.stopped[0] and worker.wanted(self.index_dir):
            time.sleep(PAUSE_S)
        if self.stopped[0]:
            raise Stopped


def main(argv: list[str]) -> int:
    logging.basicConfig(format="%(asctime)s %(process)d %(message)s", level=logging.INFO, stream=sys.stderr)
    root = Path(argv[0])  # the repository's root, as the starting command found it
    index_dir = paths.index_dir(root)
    stopped = [False]
    signal.signal(signal.SIGTERM, lambda *_: stopped.__setitem__(0, True))
    try:
        group = min(build_services(root).settings.index.group_chunks, GROUP)
        services = build_services(root, {"index.group_chunks": group}, on_note=log.info)
        _confine(services.settings.index.background_cores)
        lock = worker.adopt(int(argv[1]))
        try:
            services.claim_index()  # IndexLocked while a `codeasst serve` owns the index: it embeds there
            log.info("started for %s (%s)", root, services.embedder.name)
            log.info("%s", _embed(services, stopped))
        finally:
            worker.release(lock)
    except CodeasstError as exc:
        log.error("stopped: %s", exc.one_line())
        worker.write_state(index_dir, {"pid": os.getpid(), "stopped": f"failed: {exc.one_line()}"})
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
