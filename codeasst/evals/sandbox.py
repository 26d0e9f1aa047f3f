"""Run Python code the evals did not write (model output, a package's tests or modules) in isolation.

Always, on every platform:
- `python -I -B`: no user site, no PYTHON* variables, the script's directory not on sys.path, no .pyc files;
- a minimal environment built from nothing (PATH, LANG, HOME, TMPDIR, PYTHONDONTWRITEBYTECODE and what the
  caller adds): no tokens, proxies or other secrets of ours are inherited;
- HOME and TMPDIR are a fresh temporary directory, removed afterwards;
- a time limit, after which the program and its process group are killed.

Where Linux lets an unprivileged process create namespaces (`unshare`), also:
- no network: a network namespace of its own, whose only interface is its own loopback (up where `ip` is found,
  so a package's tests can serve to themselves; it reaches nothing outside the namespace);
- no writes outside the working directory, HOME/TMPDIR and the caller's `writable` directories: every mount is
  remounted read-only and those directories are bind-mounted read-write onto themselves; /dev/shm is a fresh,
  private tmpfs (multiprocessing needs it) that vanishes with the run;
- a process namespace of its own, so it cannot signal our processes (it runs under our uid, which may be root)
  and everything it started dies with it, even what left its process group;
- no capabilities: after the mounts it runs under `setpriv` with an empty bounding set, because root of a user
  namespace could otherwise simply remount `/` read-write; a user namespace it creates itself gets the mounts
  locked read-only.

The program is process 1 of its namespace, so a signal it sends itself is ignored unless it handles it.
Not covered: reading (everything stays readable), unix sockets on the filesystem (connect() needs write
permission on the socket file, not a writable mount), CPU and memory limits. `isolation()` says which of
this holds here; callers put its note in their reports.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

# pytest, run by path in a sandbox (`run_python([str(PYTEST_RUNNER), SPEC.json])`): see its docstring.
PYTEST_RUNNER = Path(__file__).with_name("pytest_reach.py")
_PROBE_TIMEOUT_S = 20.0
_DRAIN_TIMEOUT_S = 5.0  # after a kill, how long to wait for the pipes to close
# `mount` and `setpriv` may live in an sbin directory that the minimal PATH leaves out.
_TOOL_PATH = os.pathsep.join(["/usr/bin", "/bin", "/usr/sbin", "/sbin"])

# Runs as root of the new user namespace. Arguments: mount, setpriv, ip (or ""), the working directory, the
# count and list of mount points to make read-only, the count and list of writable directories, the command.
# Paths only ever arrive as arguments, never in this text, so no quoting can go wrong.
_SETUP = r"""set -e
mount=$1 setpriv=$2 ip=$3 cwd=$4
shift 4
# The namespace's own loopback, reachable from nowhere else: a package's tests may serve to themselves on it.
if [ -n "$ip" ]; then "$ip" link set lo up; fi
n=$1; shift
while [ "$n" -gt 0 ]; do "$mount" -o remount,bind,ro -- "$1"; shift; n=$((n - 1)); done
if [ -d /dev/shm ]; then "$mount" -t tmpfs tmpfs /dev/shm; fi
n=$1; shift
# Bound onto itself, each directory is a mount of its own, still writable under the read-only one around it.
while [ "$n" -gt 0 ]; do
    "$mount" --bind -- "$1" "$1"
    "$mount" -o remount,bind,rw -- "$1"
    shift; n=$((n - 1))
done
# The inherited working directory is on the old, now read-only mount; entering it again lands on the bind.
cd -- "$cwd"
unset PWD OLDPWD  # set by cd; the environment stays exactly what run_python built
exec "$setpriv" --bounding-set=-all --inh-caps=-all --no-new-privs -- "$@"
"""


@dataclass(frozen=True)
class Isolation:
    network: bool  # network cut off (unshare -n)
    filesystem: bool  # everything read-only except the writable dirs
    note: str  # one line for reports


@dataclass(frozen=True)
class Outcome:
    returncode: int | None  # None when it ran past its time limit (it and its children are killed)
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    @property
    def timed_out(self) -> bool:
        return self.returncode is None


@dataclass(frozen=True)
class _Tools:
    unshare: str
    mount: str
    setpriv: str
    ip: str  # "" when missing: the loopback then stays down, and tests that serve on it fail alike everywhere


def _tools() -> _Tools:
    """The programs the sandbox needs; FileNotFoundError names the first one missing."""
    if not sys.platform.startswith("linux"):
        raise FileNotFoundError(f"namespaces are Linux only, this is {sys.platform}")
    found = {}
    for name in ("unshare", "mount", "setpriv"):
        path = shutil.which(name, path=_TOOL_PATH)
        if path is None:
            raise FileNotFoundError(f"{name} not found")
        found[name] = path
    return _Tools(**found, ip=shutil.which("ip", path=_TOOL_PATH) or "")


def _unescape(field: str) -> str:
    # mountinfo writes space, tab, newline and backslash as octal escapes.
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), field)


def _writable_mounts() -> list[str]:
    """Our mount points that are not read-only already; the sandbox's mount namespace starts as a copy of ours.
    Those under /proc are left out: the sandbox mounts a fresh /proc over them."""
    points: list[str] = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as table:
        for line in table:
            fields = line.split()
            point, options = _unescape(fields[4]), fields[5].split(",")
            if "ro" not in options and not point.startswith("/proc/") and point not in points:
                points.append(point)
    return points


def _sandboxed(tools: _Tools, command: Sequence[str], cwd: Path, writable: Sequence[Path]) -> list[str]:
    ro = _writable_mounts()
    rw = list(dict.fromkeys(str(path) for path in writable))
    return [
        tools.unshare, "--user", "--map-current-user", "--keep-caps", "--net", "--mount", "--propagation",
        "private", "--pid", "--fork", "--kill-child", "--mount-proc", "--",
        "/bin/sh", "-c", _SETUP, "sh", tools.mount, tools.setpriv, tools.ip, str(cwd),
        str(len(ro)), *ro, str(len(rw)), *rw, *command,
    ]


@functools.cache
def isolation() -> Isolation:
    """What protection this machine gives, found by running a trivial program in the sandbox once."""
    try:
        tools = _tools()
        with tempfile.TemporaryDirectory(prefix="codeasst-sandbox-probe-") as scratch:
            here = Path(scratch).resolve()
            probe = subprocess.run(
                _sandboxed(tools, [sys.executable, "-I", "-S", "-c", "pass"], here, [here]),
                check=False, cwd=here, env=_environment(here, None), stdin=subprocess.DEVNULL,
                capture_output=True, timeout=_PROBE_TIMEOUT_S,
            )
        if probe.returncode != 0:
            lines = probe.stderr.decode("utf-8", "replace").strip().splitlines()
            raise OSError(lines[-1][:200] if lines else f"the probe exited with {probe.returncode}")
    except (OSError, subprocess.SubprocessError) as exc:
        reason = str(exc) or type(exc).__name__
        return Isolation(
            network=False, filesystem=False,
            note=f"NOT isolated from the network or filesystem: unshare is unavailable here ({reason}); "
            "python -I, a minimal environment, a temporary HOME and a time limit only",
        )
    return Isolation(
        network=True, filesystem=True,
        note="isolated: no network, read-only filesystem except the work dir, own process namespace, "
        "no capabilities (unshare); python -I, a minimal environment, a temporary HOME and a time limit",
    )


def _environment(home: Path, extra: Mapping[str, str] | None) -> dict[str, str]:
    env = {
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": str(home),
        "TMPDIR": str(home),
        # -I makes the interpreter ignore it; Pythons the program starts itself read it.
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    env.update(extra or {})
    return env


def _children(pid: int) -> list[int]:
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:  # gone already, or a kernel without CONFIG_PROC_CHILDREN: the process group must do
        return []


def _kill(proc: subprocess.Popen[bytes]) -> None:
    # In the sandbox the direct child is unshare, and its child is process 1 of the namespace: killing that one
    # kills everything in the namespace, also what left the process group with setsid(). --kill-child does the
    # same when unshare dies, unless the program undid its parent-death signal.
    for child in _children(proc.pid):
        with suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def _text(data: bytes | None) -> str:
    # What text mode would give; decoded here because output cut off by a timeout arrives as bytes.
    text = (data or b"").decode("utf-8", "replace")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _remove(path: Path) -> None:
    # The program may have taken away permissions that a non-root owner needs to delete what it left.
    for root, dirs, _ in os.walk(path):
        for name in dirs:
            entry = os.path.join(root, name)
            if not os.path.islink(entry):
                with suppress(OSError):
                    os.chmod(entry, 0o700)
    # Whatever still resists stays in the system temp dir: failing the run over it would lose its outcome.
    shutil.rmtree(path, ignore_errors=True)


def run_python(
    args: Sequence[str],
    *,
    cwd: Path,
    timeout_s: float,
    writable: Sequence[Path] = (),
    stdin: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Outcome:
    """sys.executable -I -B *args, in cwd, isolated as far as `isolation()` says. cwd and `writable` (existing
    paths) are writable, as is HOME = TMPDIR, a fresh temporary directory removed afterwards. `env` adds to the
    minimal environment; nothing is inherited from os.environ. stdin None reads as empty."""
    cwd = cwd.resolve()
    dirs = [cwd, *(Path(path).resolve() for path in writable)]
    for path in dirs:
        if not path.exists():
            raise FileNotFoundError(f"sandbox directory does not exist: {path}")
    command = [sys.executable, "-I", "-B", *args]
    home = Path(tempfile.mkdtemp(prefix="codeasst-sandbox-")).resolve()
    try:
        if isolation().filesystem:
            command = _sandboxed(_tools(), command, cwd, [*dirs, home])
        proc = subprocess.Popen(
            command, cwd=cwd, env=_environment(home, env),
            stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        )
        data = None if stdin is None else stdin.encode("utf-8")
        returncode: int | None
        try:
            out, err = proc.communicate(data, timeout=timeout_s)
            returncode = proc.returncode
        except subprocess.TimeoutExpired:
            _kill(proc)
            returncode = None
            try:
                out, err = proc.communicate(timeout=_DRAIN_TIMEOUT_S)
            except subprocess.TimeoutExpired as exc:
                # Unsandboxed, a process that left the group can outlive the kill and hold the pipes open.
                out, err = exc.stdout, exc.stderr
                for pipe in (proc.stdout, proc.stderr):
                    if pipe is not None:
                        pipe.close()
                proc.wait()
        return Outcome(returncode, _text(out), _text(err))
    finally:
        _remove(home)
