"""The background embedder (issue 53): `codeasst index` returns once every chunk has the static model's
vector, and a detached process makes MiniLM's. Its faults, each through the CLI with the real embedders
and Chroma: killed with SIGKILL, two index runs at once, the repository changing under it, a background
that cannot start, a foreground index while it runs.

Every test waits for the background embedder to end, or stops it (the `background` fixture): none is
left running after the suite."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from chromadb.api.client import SharedSystemClient

from codeasst.index import worker
from codeasst.index.lock import IndexLock
from codeasst.paths import index_dir
from codeasst.services import build_services
from tests.e2e.conftest import CLI, free_port, run_cli, run_json, wait_for_port
from tests.e2e.test_index_faults_e2e import _assert_consistent, _filler, _wait

# The conftest makes `codeasst index` wait for every vector; these tests are about not waiting. Groups of 32:
# more points to kill the background at, in a repository small enough to finish in seconds on one core.
BG = {"CODEASST_INDEX__BACKGROUND": "true", "CODEASST_INDEX__GROUP_CHUNKS": "32"}
NEW_SOURCE = '''def settle_overdue_invoices(ledger, reminder_letter):
    """Send the reminder letter for every overdue invoice in the ledger."""
    return [reminder_letter.send(invoice) for invoice in ledger.overdue()]
'''


@pytest.fixture
def background():
    """Index dirs to watch: each one's background embedder is stopped at the end, whatever happened, and
    the test fails if one would not stop."""
    watched: list[Path] = []
    yield watched.append
    for directory in watched:
        running = worker.pid(directory)
        if running is not None and not worker.stop(directory, timeout_s=60):
            os.kill(running, signal.SIGKILL)
            pytest.fail(f"the background embedder (pid {running}) did not stop on SIGTERM within 60 s")


def _repo(make_repo, background, files: int = 12) -> Path:
    """About 20 chunks a file (one per function), on git."""
    root = make_repo(_filler(files, 20))
    background(index_dir(root))
    return root


def _finished(root: Path, seconds: float = 240) -> dict:
    """Wait until the background embedder has ended; `codeasst status --json` then."""
    _wait("the background embedder ended", lambda: worker.pid(index_dir(root)) is None, seconds=seconds, every=0.2)
    return run_json("status", "-C", str(root), env=BG)


def _final_embedded(root: Path) -> int:
    phase = run_json("status", "-C", str(root), env=BG)["first_phase"]
    return phase["final_embedded"] if phase else -1


def _writing(directory: Path) -> bool:
    """Whether some process holds the index lock or a write transaction on the manifest."""
    with (directory / "lock").open("a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fh, fcntl.LOCK_UN)
    db = sqlite3.connect(directory / "manifest.sqlite", timeout=0)
    try:
        db.execute("BEGIN IMMEDIATE")
        db.rollback()
        return False
    except sqlite3.OperationalError:
        return True
    finally:
        db.close()


@contextlib.contextmanager
def _paused(root: Path, pid: int) -> Iterator[None]:
    """The background embedder `pid` frozen (SIGSTOP) once it has stored a group, at a moment it writes
    nothing, so the test acts while it is under way however fast this machine embeds; let go (SIGCONT)
    on leaving. A signal sent meanwhile (SIGTERM, SIGKILL) is handled as it would be at that moment."""
    directory = index_dir(root)
    deadline = time.monotonic() + 120
    while True:
        state = worker.read_state(directory) or {}
        if state.get("pid") == pid and state.get("embedded"):
            os.kill(pid, signal.SIGSTOP)
            if not _writing(directory):
                break
            os.kill(pid, signal.SIGCONT)
        if worker.pid(directory) != pid:
            pytest.fail(f"the background embedder ended before it could be caught under way: {state}")
        if time.monotonic() > deadline:
            pytest.fail(f"the background embedder stored no group within 120 s: {state}")
        time.sleep(0.005)
    try:
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)


def _terminate_pending(pid: int) -> bool:
    """Whether SIGTERM was sent to the (stopped) process `pid` and waits for it to go on (Linux's /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(("ShdPnd:", "SigPnd:")) and int(line.split()[1], 16) & (1 << (signal.SIGTERM - 1)):
            return True
    return False


def _vectors(root: Path) -> dict[str, list[str]]:
    """Embedder name -> the chunk ids its collection holds (opened once nothing else runs)."""
    services = build_services(root)
    try:
        return {e.name: services.open_store(e.name).ids() for e in (services.embedder, services.first_embedder)}
    finally:
        SharedSystemClient.clear_system_cache()


def _assert_complete(root: Path, status: dict) -> None:
    """Every chunk that gets a vector has MiniLM's, searched now, and the static model's; no duplicate or
    left-over vector in either collection."""
    total = status["dense"]["total"]
    assert status["first_phase"] is None, f"still on the static vectors: {status['first_phase']}"
    assert status["dense"] == {"embedded": total, "total": total}
    assert status["store_problem"] is None, status["store_problem"]
    assert status["background"]["running"] is False and status["background"]["stopped"].startswith("done"), status
    for name, ids in _vectors(root).items():
        assert len(ids) == len(set(ids)) == total, f"{name}: {len(ids)} vectors ({len(set(ids))} ids) of {total}"
    assert _assert_consistent(root) >= total


@pytest.mark.slow
def test_index_returns_after_the_static_vectors_and_serve_stops_the_background_and_makes_the_rest(make_repo,
                                                                                                   background):
    root = _repo(make_repo, background, files=24)  # enough for the server to start while the background runs
    summary = run_json("index", str(root), env=BG)
    total = summary["dense"]["total"]
    assert summary["dense"] == {"embedded": total, "total": total}, "every chunk is searchable by a vector"
    assert summary["final_embedded"] == 0 and summary["final_waiting"] == total
    pid = summary["background"]["pid"]
    assert pid > 0 and summary["background"]["log"].endswith("background.log")

    port = free_port()
    proc = None
    try:
        with _paused(root, pid):  # the server starts while the background is under way, on any machine
            proc = subprocess.Popen([*CLI, "serve", "--port", str(port), "-C", str(root)], env={**os.environ, **BG},
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            _wait("the server asked the background embedder to stop", lambda: _terminate_pending(pid), proc, 300)
        wait_for_port(port, 300)
        assert worker.pid(index_dir(root)) is None, "the server took the store from the background embedder"
        assert "stopped (SIGTERM)" in Path(summary["background"]["log"]).read_text()
        _wait("the server made MiniLM's vectors", lambda: run_json("status", cwd=root)["first_phase"] is None,
              seconds=240, every=0.5)
        assert run_json("status", cwd=root)["dense"] == {"embedded": total, "total": total}
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=60)
    status = run_json("status", "-C", str(root), env=BG)
    assert status["store_problem"] is None and status["first_phase"] is None
    for name, ids in _vectors(root).items():
        assert len(ids) == len(set(ids)) == total, f"{name}: {len(ids)} vectors ({len(set(ids))} ids) of {total}"


@pytest.mark.slow
def test_background_killed_with_sigkill_resumes_at_the_next_run_without_a_duplicate(make_repo, background):
    root = _repo(make_repo, background)
    first = run_json("index", str(root), env=BG)
    pid, total = first["background"]["pid"], first["final_waiting"]
    with _paused(root, pid):
        done = _final_embedded(root)
        os.kill(pid, signal.SIGKILL)
    _wait("the killed embedder let go of its lock", lambda: worker.pid(index_dir(root)) is None, seconds=30)
    assert _final_embedded(root) == done
    assert 0 < done < total, f"killed too late to test anything: {done} of {total}"
    said = run_json("status", "-C", str(root), env=BG)["background"]
    assert said["running"] is False

    resumed = run_json("index", str(root), env=BG)
    assert resumed["chunks_written"] == 0 and resumed["embedded"] == 0, "the static phase had ended"
    assert resumed["final_waiting"] == total - done, "what the killed one stored is not embedded again"
    assert resumed["background"]["pid"] != pid
    status = _finished(root)
    _assert_complete(root, status)
    assert status["background"]["embedded"] == total - done


@pytest.mark.slow
def test_two_index_runs_while_the_background_runs_one_waits_or_says_so(make_repo, background):
    root = _repo(make_repo, background, files=6)
    run_json("index", str(root), env=BG)
    (root / "pkg0/new_module.py").write_text(NEW_SOURCE)
    runs = [subprocess.Popen([*CLI, "index", str(root), "--json"], env={**os.environ, **BG}, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    results = [(proc.wait(timeout=300), *proc.communicate()) for proc in runs]
    codes = sorted(rc for rc, _, _ in results)
    assert codes in ([0, 0], [0, 75]), results
    for rc, out, err in results:
        if rc == 75:
            assert "being updated by" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    added = [json.loads(out)["added"] for rc, out, _ in results if rc == 0]
    assert sum(added) == 1, f"the new file is written by one run: {added}"
    status = _finished(root)
    _assert_complete(root, status)


@pytest.mark.slow
def test_files_changed_while_the_background_runs_get_both_vectors_in_the_end(make_repo, background):
    root = _repo(make_repo, background)
    before = run_json("index", str(root), env=BG)
    with _paused(root, before["background"]["pid"]):  # the files change while it is under way
        (root / "pkg1/ledger.py").write_text(NEW_SOURCE)
        (root / "pkg0/mod_0.py").write_text(NEW_SOURCE.replace("settle_overdue_invoices", "chase_unpaid_bills"))
        proc = run_cli("search", "send a reminder letter for overdue invoices", "--json", "--no-llm", "-k", "3",
                       "-C", str(root), env=BG)
    hits = [hit["path"] for hit in json.loads(proc.stdout)]
    assert hits[:2] and set(hits[:2]) == {"pkg1/ledger.py", "pkg0/mod_0.py"}, f"the edits are searched: {hits}"
    assert "being updated by another run" not in proc.stderr, proc.stderr

    status = _finished(root)
    _assert_complete(root, status)
    assert status["dense"]["total"] == before["dense"]["total"] - 20 + 2
    services = build_services(root)
    try:
        changed = {c.id for c in services.indexer().reader().chunks_of(["pkg1/ledger.py", "pkg0/mod_0.py"])}
    finally:
        SharedSystemClient.clear_system_cache()
    for name, ids in _vectors(root).items():
        assert changed <= set(ids), f"{name} lacks the changed chunks' vectors"


_NO_PROCESS = """
import errno, runpy, subprocess, sys
real = subprocess.Popen

class Limited(real):
    # What fork() says under a process limit (RLIMIT_NPROC), which root, who may run this suite, ignores.
    def __init__(self, args, *rest, **kwargs):
        if "codeasst.access.detached" in args:
            raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")
        super().__init__(args, *rest, **kwargs)

subprocess.Popen = Limited
sys.argv = ["codeasst", *sys.argv[1:]]
runpy.run_module("codeasst", run_name="__main__")
"""


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["log not writable", "process limit"])
def test_a_background_that_cannot_start_is_said_in_one_line_and_the_next_run_tries_again(make_repo, background,
                                                                                          fault):
    root = _repo(make_repo, background, files=3)
    log = index_dir(root) / worker.LOG
    if fault == "log not writable":
        log.mkdir(parents=True)  # root may write any file: a folder in its place is what even root cannot open
        command = [*CLI, "index", str(root), "--json"]
    else:
        command = [sys.executable, "-c", _NO_PROCESS, "index", str(root), "--json"]
    proc = subprocess.run(command, env={**os.environ, **BG}, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["dense"]["embedded"] == summary["dense"]["total"] > 0, "it returns with what it has"
    lines = [line for line in proc.stderr.splitlines() if "background" in line]
    expected = "cannot write its log" if fault == "log not writable" else os.strerror(errno.EAGAIN)
    assert len(lines) == 1 and expected in lines[0] and "codeasst index" in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert summary["background"]["error"] and worker.pid(index_dir(root)) is None

    if fault == "log not writable":
        log.rmdir()
    again = run_json("index", str(root), env=BG)
    assert again["final_waiting"] == summary["final_waiting"] and again["background"]["pid"] > 0
    _assert_complete(root, _finished(root))


@pytest.mark.slow
def test_a_foreground_index_while_the_background_runs_gets_the_index_not_exit_75(make_repo, background):
    root = _repo(make_repo, background)
    pid = run_json("index", str(root), env=BG)["background"]["pid"]
    started = time.monotonic()
    with _paused(root, pid):  # the second run starts while the background is under way, on any machine
        again = subprocess.Popen([*CLI, "index", str(root), "--json"], env={**os.environ, **BG}, text=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        _wait("the second run asked the background embedder to stop", lambda: _terminate_pending(pid), again, 300)
    out, err = again.communicate(timeout=300)
    took = time.monotonic() - started
    assert again.returncode == 0, err
    summary = json.loads(out)
    assert summary["background"]["pid"] > 0, "the background goes on in a new process"
    assert took < 30, f"waited {took:.1f} s for the index"
    log = (index_dir(root) / worker.LOG).read_text()
    assert "stopped (SIGTERM)" in log, log
    _assert_complete(root, _finished(root))


@pytest.mark.slow
def test_a_search_behind_the_background_embedders_write_waits_only_when_it_has_edits_to_write(make_repo):
    root = make_repo(_filler(3, 20))
    run_json("index", str(root))  # every vector made here (the conftest's --wait): the lock is the point
    query = ("search", "send a reminder letter for overdue invoices", "--json", "--no-llm", "-k", "3", "-C", str(root))
    held = IndexLock(index_dir(root), worker=True).__enter__()  # as the background embedder holds it for a write
    try:
        started = time.monotonic()
        unchanged = run_cli(*query)
        assert time.monotonic() - started < 20, "nothing to write: no wait"
        assert "being updated" not in unchanged.stderr, unchanged.stderr
        (root / "pkg1/ledger.py").write_text(NEW_SOURCE)
        threading.Timer(3.0, held.__exit__, (None, None, None)).start()  # the write ends in 3 s
        started = time.monotonic()
        edited = run_cli(*query)
        waited = time.monotonic() - started
    finally:
        with contextlib.suppress(ValueError, OSError):  # released by the timer already
            held.__exit__(None, None, None)
    assert waited >= 2.5, f"the search did not wait for the write ({waited:.1f} s)"
    assert json.loads(edited.stdout)[0]["path"] == "pkg1/ledger.py", edited.stdout
    assert "being updated" not in edited.stderr, edited.stderr
