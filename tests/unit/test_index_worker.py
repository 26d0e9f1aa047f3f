"""The background embedder's locks (codeasst.index.worker, codeasst.index.lock): a run waits for its group
only where it asks to, says meanwhile that it waits, and fails fast behind any other writer; one worker
per index, found by its pid and stopped by SIGTERM."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from codeasst.errors import IndexLocked, WorkerBusy
from codeasst.index import worker
from codeasst.index.lock import IndexLock


def test_a_run_behind_the_background_embedder_fails_fast_unless_it_waits(tmp_path):
    with IndexLock(tmp_path, worker=True):
        with pytest.raises(WorkerBusy, match="background embedder"):
            IndexLock(tmp_path).__enter__()
        assert not worker.wanted(tmp_path)


def test_a_waiting_run_gets_the_index_at_the_end_of_the_group_and_says_it_waits(tmp_path):
    got = threading.Event()

    def foreground() -> None:
        with IndexLock(tmp_path, wait_s=30):
            got.set()

    held = IndexLock(tmp_path, worker=True).__enter__()
    thread = threading.Thread(target=foreground)
    thread.start()
    deadline = time.monotonic() + 10
    while not worker.wanted(tmp_path):  # the worker takes no new group from here
        assert time.monotonic() < deadline, "the waiting run never said it waits"
        time.sleep(0.01)
    assert not got.is_set()
    held.__exit__(None, None, None)  # the group ends
    thread.join(10)
    assert got.is_set() and not worker.wanted(tmp_path)


def test_a_run_behind_another_foreground_run_does_not_wait(tmp_path):
    with IndexLock(tmp_path):
        started = time.monotonic()
        with pytest.raises(IndexLocked) as caught:
            IndexLock(tmp_path, wait_s=30).__enter__()
        assert not isinstance(caught.value, WorkerBusy) and time.monotonic() - started < 2


def test_one_worker_per_index_found_by_its_pid_and_stopped_by_sigterm(tmp_path):
    assert worker.pid(tmp_path) is None and worker.stop(tmp_path)
    lock = worker.claim(tmp_path)
    assert lock is not None and worker.pid(tmp_path) == 0, "starting: held, no pid yet"
    # The worker: a process that inherits the lock's descriptor and sleeps until SIGTERM ends it.
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], pass_fds=(lock.fileno(),))
    try:
        worker.started(lock, child.pid)
        assert worker.pid(tmp_path) == child.pid, "the lock outlives the starter's copy"
        assert worker.claim(tmp_path) is None, "a second worker cannot start"
        assert worker.stop(tmp_path, timeout_s=30)
        assert child.wait(10) == -15 and worker.pid(tmp_path) is None
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    again = worker.claim(tmp_path)
    assert again is not None
    worker.release(again)


def test_the_state_file_is_replaced_whole_and_a_broken_one_reads_as_none(tmp_path):
    worker.write_state(tmp_path, {"embedded": 64})
    assert worker.read_state(tmp_path) == {"embedded": 64}
    (tmp_path / worker.STATE).write_text('{"embed')
    assert worker.read_state(tmp_path) is None
    assert os.listdir(tmp_path) == [worker.STATE]


def test_the_embedder_pauses_at_its_next_batch_while_a_search_or_an_answer_runs(tmp_path):
    from codeasst.access.detached import Stopped, _Watch

    stopped = [False]
    watch = _Watch(stopped, tmp_path)
    started = time.monotonic()
    watch.embedded(32)  # no one wants the index: no wait
    assert time.monotonic() - started < 0.2

    def search() -> None:
        with worker.want(tmp_path):  # as Local.search and Local.ask hold it while they run
            time.sleep(0.6)

    thread = threading.Thread(target=search)
    thread.start()
    time.sleep(0.1)
    started = time.monotonic()
    watch.embedded(32)
    assert time.monotonic() - started >= 0.4, "the batch after went on beside the search"
    thread.join()

    thread = threading.Thread(target=search)
    thread.start()
    time.sleep(0.1)
    threading.Timer(0.1, stopped.__setitem__, (0, True)).start()  # SIGTERM while paused
    started = time.monotonic()
    with pytest.raises(Stopped):
        watch.embedded(32)
    assert time.monotonic() - started < 0.4, "a paused embedder still stops at SIGTERM"
    thread.join()
