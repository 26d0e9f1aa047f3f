"""The sandbox for code the evals did not write: hostile programs, run for real, must not get out.

Each hostile test first checks what holds everywhere (the program ran, and could write where it may), then skips
the rest where `isolation()` says this machine cannot give that protection."""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from codeasst.evals import sandbox
from codeasst.evals.sandbox import Isolation, isolation, run_python


def need(protection: str) -> None:
    iso = isolation()
    if not getattr(iso, protection):
        pytest.skip(f"this machine gives no {protection} isolation: {iso.note}")


def program(path: Path, source: str) -> str:
    path.write_text(textwrap.dedent(source))
    return str(path)


@pytest.fixture
def work(tmp_path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


def test_isolation_is_probed_and_described():
    iso = isolation()
    assert isinstance(iso, Isolation)
    assert iso.note and "\n" not in iso.note
    if sys.platform.startswith("linux") and iso.filesystem:
        assert iso.network and iso.note.startswith("isolated")


def test_missing_unshare_is_reported_not_raised(monkeypatch, tmp_path):
    monkeypatch.setattr(sandbox, "_TOOL_PATH", str(tmp_path))  # an empty directory: no unshare, no mount
    iso = sandbox.isolation.__wrapped__()
    assert (iso.network, iso.filesystem) == (False, False)
    assert iso.note.startswith("NOT isolated") and "unavailable" in iso.note


def test_writes_outside_its_directories_do_not_land(work, tmp_path):
    outside = tmp_path / "outside"  # a sibling of the work dir, as writable to us as the work dir itself
    outside.mkdir()
    extra = tmp_path / "extra"
    extra.mkdir()
    tag = uuid.uuid4().hex
    in_tmp = Path("/tmp") / f"codeasst-sandbox-escape-{tag}"
    in_shm = Path("/dev/shm") / f"codeasst-sandbox-escape-{tag}"
    script = program(
        work / "hostile.py",
        """
        import sys
        from pathlib import Path

        for target in sys.argv[1:]:
            try:
                Path(target).write_text("escaped")
                print("wrote", target)
            except OSError as exc:
                print("blocked", target, exc)
        """,
    )
    targets = [outside / "escaped.txt", in_tmp, in_shm, work / "inside.txt", extra / "given.txt"]
    try:
        outcome = run_python([script, *map(str, targets)], cwd=work, timeout_s=10, writable=[extra])
        assert outcome.ok, outcome.stderr
        # Where it may write, it can: a sandbox that made everything read-only would pass the checks below too.
        assert (work / "inside.txt").read_text() == "escaped"
        assert (extra / "given.txt").read_text() == "escaped"
        assert f"wrote {in_shm}" in outcome.stdout or not Path("/dev/shm").is_dir()  # a private, throwaway one
        need("filesystem")
        assert not (outside / "escaped.txt").exists(), outcome.stdout
        assert not in_tmp.exists(), outcome.stdout
        assert not in_shm.exists(), outcome.stdout
        assert f"blocked {outside / 'escaped.txt'}" in outcome.stdout
    finally:
        in_tmp.unlink(missing_ok=True)
        in_shm.unlink(missing_ok=True)


def test_remounting_read_write_is_refused(work):
    need("filesystem")
    target = Path("/tmp") / f"codeasst-sandbox-escape-{uuid.uuid4().hex}"
    # Root of a user namespace may remount what it owns; the sandbox must have dropped that power, and a user
    # namespace the program makes for itself must find the mounts locked.
    script = program(
        work / "remount.py",
        """
        import ctypes, sys
        from pathlib import Path

        libc = ctypes.CDLL(None, use_errno=True)
        MS_REMOUNT, MS_BIND, CLONE_NEWUSER, CLONE_NEWNS = 32, 4096, 0x10000000, 0x00020000
        print("remount", libc.mount(None, b"/", None, MS_REMOUNT | MS_BIND, None), ctypes.get_errno())
        print("unshare", libc.unshare(CLONE_NEWUSER | CLONE_NEWNS), ctypes.get_errno())
        print("remount", libc.mount(None, b"/", None, MS_REMOUNT | MS_BIND, None), ctypes.get_errno())
        try:
            Path(sys.argv[1]).write_text("escaped")
        except OSError as exc:
            print("blocked", exc)
        """,
    )
    try:
        outcome = run_python([script, str(target)], cwd=work, timeout_s=10)
        assert outcome.ok, outcome.stderr
        assert "remount 0" not in outcome.stdout
        assert not target.exists(), outcome.stdout
    finally:
        target.unlink(missing_ok=True)


def test_secrets_in_our_environment_do_not_reach_it(work, monkeypatch):
    secrets = {
        "CODEASST_TEST_SECRET": "hunter2",
        "GITHUB_TOKEN": "ghp_sandboxtestsecret0123456789",
        "HTTPS_PROXY": "http://user:proxypass@proxy.invalid:3128",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    script = program(work / "env.py", "import json, os; print(json.dumps(dict(os.environ)))")
    outcome = run_python([script], cwd=work, timeout_s=10, env={"ADDED": "yes"})
    assert outcome.ok, outcome.stderr
    seen = json.loads(outcome.stdout)
    for name, value in secrets.items():
        assert name not in seen
        assert value not in outcome.stdout
    assert seen["HOME"] != os.path.expanduser("~")
    assert seen["TMPDIR"] == seen["HOME"]
    assert set(seen) == {"PATH", "LANG", "HOME", "TMPDIR", "PYTHONDONTWRITEBYTECODE", "ADDED"}
    assert not Path(seen["HOME"]).exists()  # removed after the run


def test_it_cannot_connect_even_to_our_loopback(work):
    need("network")
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        script = program(
            work / "net.py",
            """
            import socket, sys

            try:
                socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2).close()
                print("connected")
            except OSError as exc:
                print("failed", exc)
            """,
        )
        outcome = run_python([script, str(port)], cwd=work, timeout_s=10)
        assert outcome.ok, outcome.stderr
        assert outcome.stdout.startswith("failed"), outcome.stdout
        listener.settimeout(0.3)
        with pytest.raises(TimeoutError):
            listener.accept()


def _running(marker: str) -> list[int]:
    """Processes (anywhere on the machine) whose command line holds marker."""
    found: list[int] = []
    if not Path("/proc").is_dir():
        return found
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:  # exited meanwhile
                continue
    return found


def _gone(marker: str, pid_file: Path) -> bool:
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        if Path("/proc").is_dir():
            # In the sandbox a pid the program writes is its namespace's, not ours: look for the command line.
            if not _running(marker):
                return True
        else:
            try:
                os.kill(int(pid_file.read_text()), 0)
            except ProcessLookupError:
                return True
        time.sleep(0.05)
    return False


SLEEPER = """
import os, subprocess, sys, time

grandchild = subprocess.Popen([sys.executable, "-c", "import sys, time; time.sleep(600)", sys.argv[1]],
                              start_new_session=sys.argv[2] == "setsid")
if sys.argv[2] == "setsid":
    import ctypes
    ctypes.CDLL(None).prctl(1, 0)  # PR_SET_PDEATHSIG: undo unshare's --kill-child
    os.setsid()  # and leave the process group that a timeout kills
with open("grandchild.pid", "w") as f:
    f.write(str(grandchild.pid))
print("started", flush=True)
time.sleep(600)
"""


def _run_sleeper(work: Path, mode: str) -> tuple[sandbox.Outcome, float, str]:
    marker = f"codeasst-sandbox-sleeper-{uuid.uuid4().hex}"
    script = program(work / "sleeper.py", SLEEPER)
    start = time.monotonic()
    outcome = run_python([script, marker, mode], cwd=work, timeout_s=1)
    return outcome, time.monotonic() - start, marker


def _cleanup(marker: str) -> None:
    for pid in _running(marker):
        os.kill(pid, signal.SIGKILL)


def test_timeout_kills_it_and_its_children(work):
    outcome, elapsed, marker = _run_sleeper(work, "plain")
    try:
        assert outcome.returncode is None and outcome.timed_out and not outcome.ok
        assert elapsed < 4
        assert "started" in outcome.stdout  # output from before the kill is kept
        assert (work / "grandchild.pid").exists()
        assert _gone(marker, work / "grandchild.pid")
    finally:
        _cleanup(marker)


def test_timeout_kills_what_left_the_process_group(work):
    need("filesystem")  # without namespaces, a process that calls setsid() is out of reach
    outcome, elapsed, marker = _run_sleeper(work, "setsid")
    try:
        assert outcome.timed_out
        assert "started" in outcome.stdout
        assert elapsed < 4
        assert _gone(marker, work / "grandchild.pid")
    finally:
        _cleanup(marker)


def test_isolated_mode_ignores_a_shadowing_module_in_cwd(work):
    (work / "json.py").write_text("print('SHADOWED')\n__file__ = 'shadowed'\n")
    outcome = run_python(["-c", "import json; print(json.__file__)"], cwd=work, timeout_s=10)
    assert outcome.ok, outcome.stderr
    assert "SHADOWED" not in outcome.stdout
    assert not outcome.stdout.strip().startswith(str(work.resolve()))
    assert Path(outcome.stdout.strip()).name == "__init__.py"


def test_stdin_and_exit_code_pass_through(work):
    code = "import sys; data = sys.stdin.read(); print(data.upper()); print('err', file=sys.stderr); sys.exit(7)"
    outcome = run_python(["-c", code], cwd=work, timeout_s=10, stdin="hello\n")
    assert (outcome.returncode, outcome.stdout, outcome.stderr) == (7, "HELLO\n\n", "err\n")
    assert not outcome.ok and not outcome.timed_out
    quiet = run_python(["-c", "import sys; print(repr(sys.stdin.read()))"], cwd=work, timeout_s=10)
    assert quiet.ok and quiet.stdout == "''\n"


def test_without_namespaces_it_still_runs_with_the_rest(work, monkeypatch):
    fallback = Isolation(network=False, filesystem=False, note="NOT isolated (test)")
    monkeypatch.setattr(sandbox, "isolation", lambda: fallback)
    monkeypatch.setenv("CODEASST_TEST_SECRET", "hunter2")
    (work / "json.py").write_text("print('SHADOWED')\n")
    code = "import json, os, sys; print(sorted(os.environ)); sys.exit(int(sys.stdin.read()))"
    outcome = run_python(["-c", code], cwd=work, timeout_s=10, stdin="3")
    assert outcome.returncode == 3
    assert "SHADOWED" not in outcome.stdout and "CODEASST_TEST_SECRET" not in outcome.stdout


def test_paths_are_arguments_not_script_text(tmp_path):
    odd = tmp_path / """it's a "dir" $(touch pwned) `x`"""
    odd.mkdir()
    outcome = run_python(["-c", "import os; open('made', 'w').close(); print(os.getcwd())"], cwd=odd, timeout_s=10)
    assert outcome.ok, outcome.stderr
    assert outcome.stdout == f"{odd.resolve()}\n"
    assert sorted(os.listdir(odd)) == ["made"]


def test_missing_writable_dir_is_an_error(work, tmp_path):
    with pytest.raises(FileNotFoundError):
        run_python(["-c", "pass"], cwd=work, timeout_s=10, writable=[tmp_path / "missing"])


# A row as an eval would run it: the model's code (or a dataset's) that tries all three escapes, and
# still exits 0, so an eval that ran it unsandboxed would even count it as passing.
HOSTILE = """
import os, socket, sys
outside, port = sys.argv[1] if len(sys.argv) > 1 else {outside!r}, {port}
for attempt in (lambda: open(outside, "w").write(os.environ.get("CODEASST_TEST_SECRET", "no secret")),
                lambda: socket.create_connection(("127.0.0.1", port), timeout=1).sendall(b"leak")):
    try:
        attempt()
    except OSError:
        pass
"""


@pytest.mark.parametrize("entry", ["eval fix kept check", "eval fim test run"])
def test_a_hostile_row_run_by_an_eval_leaks_nothing(entry, tmp_path, monkeypatch):
    """Through the evals' own entry points: nothing written outside, no secret read, no socket reached."""
    if not (isolation().filesystem and isolation().network):
        pytest.skip(isolation().note)
    from codeasst.evals import fim
    from codeasst.evals.fix import _kept

    monkeypatch.setenv("CODEASST_TEST_SECRET", "hunter2")
    outside = tmp_path / "outside" / "leaked.txt"
    outside.parent.mkdir()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.5)
    program = HOSTILE.format(outside=str(outside), port=listener.getsockname()[1])
    work = tmp_path / "work"
    work.mkdir()
    if entry == "eval fix kept check":
        ran = _kept({"test_setup_code": "", "tests": []}, program, work, 10)
    else:
        ran = fim.runs(program, [], test_code="pass")
    assert ran  # it ran, and exited cleanly: the escapes failed inside it, not the run
    assert not outside.exists()
    with pytest.raises(TimeoutError):
        listener.accept()
    listener.close()
