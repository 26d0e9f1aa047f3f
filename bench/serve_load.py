"""Load and fault test: `codeasst serve` with editors typing, questions asked, and clients that misbehave.

    python bench/serve_load.py [--quick] [--json PATH] [--log PATH] [--probe-s S]

Setup. A temporary git repository holds a copy of four of codeasst's own packages (--quick: two), and a
temporary CODEASST_HOME links cache/models and cache/embedders to the user's cache, so nothing big is
built again. `codeasst index` runs once, then `codeasst serve --port 0` starts (a random token), found
with `codeasst serve --info --json`. Requests go over loopback with http.client (no proxy) to the real
bundled model.

Load. 8 editor clients, each with its own id and file: /v1/open, then a stretch of the file typed back
at 3-6 characters a second with thinking pauses, and after each 300 ms pause a /v1/complete with the
whole buffer, not waited for (a newer one cancels it, as from an editor); an answer with text that
comes before the client's next request is shown, then accepted or discarded (/v1/events). 2 more
clients ask questions about the code (/v1/ask) and read the streams to the end.

Faults, while the load runs (c from 5 s in; a at Plan.faults_at, d 5 s and b 10 s later):
  a. an /v1/ask whose client closes the socket right after sending; another read for one line, then
     closed; each followed by a completion from a new client (a probe) that the model must answer.
  b. an /v1/ask read one byte a second (a small SO_RCVBUF) once its status line comes, for 30 s
     (--quick 15), then closed; a probe half-way.
  c. 10,000 distinct client ids (--ids), each a /v1/complete with the cursor inside an identifier,
     which the gate answers without the model, from 4 threads.
  d. a function appended to a file, then `codeasst index` and `codeasst search --no-llm`, both through
     the server: that file must rank first.
  e. after the load: kill -9 of the server, a restart, `codeasst status --json`, the search again.
A monitor reads /v1/health every 2 s throughout, the restart included. An ask of a fault or a probe
refused 429 is sent again after Retry-After, for up to 120 s, as a client would: under this load the
queue (the client served longest ago first, first come among equals) can hold a new client behind a
minute of others' work, so a probe's time says more about the queue than about the fault; a model
never given back shows as a probe refused for 120 s and as a queue still running at the end.
--probe-s bounds a probe's time too (20 s is fair on an idle machine).

Every request has a 120 s timeout; one with no answer by then is HUNG. One that finds no server
between the kill and the new server's first answer is "refused during restart", not an error.

Pass (a PASS or FAIL line each, after the figures; exit 0 when all pass): every client and fault ran to
its end; HUNG 0; no 5xx, and no request without an answer outside the restart; every question answered
or refused 429 (the model busy is an answer); the model answered completions; no request refused for a
full queue (8 editors whose newer requests end their older ones cannot fill it); clients kept <=
serve.max_clients, their text within serve.max_client_chars each; "client gone" >= 2 and every stream ended (the
slow one as "slow reader" or finished); the model queue idle at the end; each probe answered by the
model; the changed file found first, before the kill and after the restart; after it, status with no
store problem, nothing stale, and the files and chunks counted before the kill.
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import json
import os
import platform
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "codeasst.cli"]
TIMEOUT = 120.0
HUNG, NO_ANSWER, REFUSED = "hung", "no answer", "refused during restart"
ZEBRA = '\n\ndef zebra_quartz_checksum(data: bytes) -> int:\n    """A checksum nobody else defines."""\n' \
        "    return sum(data) % 65521\n"
QUESTIONS = ["How does the model queue choose which client gets the model next?",
             "What happens to a streamed answer when the client reads too slowly?",
             "How is the bearer token checked on each request?",
             "When does the type-ahead cache answer a completion without the model?"]
PROBE = {"path": "probe.py", "line": 2, "col": 12, "text": "def add(a, b):\n    return \n"}
PROBES = ("after leaving unread", "after leaving at the first line", "while a client reads slowly")
FLOOD_S = 420.0  # fault c sends nothing after this many seconds into the load: a bound, not a pace


@dataclass(frozen=True)
class Plan:
    packages: tuple[str, ...] = ("serve", "complete", "retrieve", "tasks")  # of codeasst, copied into the repo
    editors: int = 8
    requests: int = 12  # completions per editor
    questions: int = 2  # per asking client
    ids: int = 10_000  # fault c
    slow_s: float = 30.0  # fault b
    faults_at: float = 15.0  # past the start, when every client is new, and so ahead of a probe in the queue


MAX_CLIENT_CHARS = 400_000  # serve.max_client_chars, the default this bench runs with
QUICK = Plan(packages=("serve", "complete"), requests=3, questions=1, slow_s=15.0, faults_at=10.0)


@dataclass
class Done:
    """One request and how it ended: an HTTP status (an error line's, in a stream), or HUNG, NO_ANSWER, REFUSED."""

    label: str
    status: int | str
    seconds: float
    at: float
    body: dict = field(repr=False)


class Api:
    """Requests to the current server, each on its own connection, all recorded in `done`."""

    def __init__(self, url: str, token: str) -> None:
        self.retarget(url, token)
        self.restarting = threading.Event()  # set from the kill until the new server answers
        self.done: list[Done] = []
        self.raw_asks: list[str] = []  # sent by raw_ask, retries too: each a stream the server counts as it ends

    def retarget(self, url: str, token: str) -> None:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        self.host, self.port, self.token = host, int(port), token

    def headers(self) -> dict:
        return {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}

    def call(self, label: str, method: str, route: str, payload: dict | None = None) -> tuple[int | str, dict]:
        """One request; of an /v1/ask stream, read to its end, the last line is the body."""
        started = time.monotonic()
        conn = http.client.HTTPConnection(self.host, self.port, timeout=TIMEOUT)
        stream = route.endswith("/ask")
        try:
            conn.request(method, route, json.dumps(payload) if payload is not None else None, self.headers())
            response = conn.getresponse()
            status, body = response.status, {}
            if status != 200 or not stream:
                body = _json(response.read())
            for raw in response if status == 200 and stream else ():
                body = _json(raw)
                status = int(body.get("status", 200)) if body.get("type") == "error" else status
        except TimeoutError as exc:  # an OSError too: told apart first
            status, body = HUNG, {"detail": repr(exc)}
        except (OSError, http.client.HTTPException) as exc:
            status, body = REFUSED if self.restarting.is_set() else NO_ANSWER, {"detail": repr(exc)}
        finally:
            conn.close()
        self.done.append(Done(label, status, time.monotonic() - started, started, body))
        return status, body

    def raw_ask(self, question: str, client: str, rcvbuf: int = 0) -> tuple[socket.socket | None, bytes]:
        """An /v1/ask on a bare socket, read as far as its status line (none read when `rcvbuf` is -1);
        a 429 is asked again after Retry-After, for TIMEOUT at most. The caller misbehaves with the socket."""
        body = json.dumps({"question": question, "client": client}).encode()
        head = (f"POST /v1/ask HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nAuthorization: Bearer {self.token}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n")
        first = time.monotonic()
        while True:
            started, sock, got = time.monotonic(), socket.socket(), b""
            if rcvbuf > 0:  # before connect, so the window the server sees is small from the start
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            sock.settimeout(TIMEOUT)
            sock.connect((self.host, self.port))
            sock.sendall(head.encode() + body)
            self.raw_asks.append(client)
            try:
                while rcvbuf >= 0 and b"\n" not in got and (chunk := sock.recv(64)):
                    got += chunk
            except TimeoutError:
                self.done.append(Done(client, HUNG, time.monotonic() - started, started, {}))
                sock.close()
                return None, got
            if b" 429 " not in got.split(b"\n")[0]:
                return sock, got
            sock.close()
            if time.monotonic() - first > TIMEOUT:
                return None, got
            time.sleep(2)  # Retry-After


def _json(raw: bytes) -> dict:
    try:
        value = json.loads(raw or b"{}")
    except ValueError:
        return {"detail": raw[:200].decode("utf-8", "replace")}
    return value if isinstance(value, dict) else {"list": value}


def by_model(body: dict) -> bool:
    """A completion the model worked on: not the gate, not the type-ahead cache, not cancelled."""
    return bool(body.get("prompt_tokens") or body.get("generated_tokens")) and "cancelled" not in body.get("reason", "")


CRASHED: list[str] = []  # work run by later() that raised: a client or a fault that did not run to its end


def later(delay: float, work, *args) -> threading.Thread:
    def run() -> None:
        time.sleep(delay)
        try:
            work(*args)
        except Exception as exc:  # noqa: BLE001 - a failed verdict, not a traceback lost in a thread
            CRASHED.append(f"{getattr(work, '__name__', work)}: {exc!r}")

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


class Editor:
    """One editor client typing back a stretch of its file; completions not waited for (module docstring)."""

    def __init__(self, api: Api, name: str, rel: str, text: str, requests: int, seed: int) -> None:
        self.api, self.name, self.rel, self.text, self.requests = api, name, rel, text, requests
        self.rng = random.Random(seed)
        self.start, self.end = stretch(text, requests * 30)
        self.latest = -1
        self.sent: list[threading.Thread] = []

    def position(self, pos: int) -> dict:
        """The buffer with the stretch typed up to `pos`, and the cursor there."""
        before = self.text[:pos]
        return {"path": self.rel, "text": before + self.text[self.end:], "line": before.count("\n") + 1,
                "col": pos - before.rfind("\n"), "client": self.name}

    def run(self) -> None:
        self.sent.append(later(0, self.api.call, "open", "POST", "/v1/open", self.position(self.start)))
        pos = self.start
        for number in range(self.requests):
            burst = self.rng.randint(8, 30)
            thinking = self.rng.uniform(1, 4) if self.rng.random() < 0.3 else 0.0
            time.sleep(burst / self.rng.uniform(3, 6) + thinking + 0.3)  # typing, then the 300 ms pause
            pos = min(self.end, pos + burst)
            self.latest = number
            self.sent.append(later(0, self.complete, number, pos))
            if pos >= self.end:
                break
        for thread in self.sent:
            thread.join()

    def complete(self, number: int, pos: int) -> None:
        status, body = self.api.call("complete", "POST", "/v1/complete", self.position(pos))
        suggestion = body.get("text", "") if status == 200 else ""
        if not suggestion or self.latest != number:  # the user typed on: never shown
            return
        self.api.call("event", "POST", "/v1/events", {"kind": "shown", "id": body["id"], "shown_length": len(suggestion)})
        taken = self.text[pos:self.end].startswith(suggestion)  # what the user was about to type
        self.api.call("event", "POST", "/v1/events", {"kind": "accepted" if taken else "discarded", "id": body["id"],
                                                      "accepted_length": len(suggestion) if taken else 0})


def stretch(text: str, chars: int) -> tuple[int, int]:
    """[start, end) of whole lines from 40% into `text`, about `chars` long, from the first line's indent
    to just before a newline: the suffix then starts with "\\n", so the gate leaves the cursor to the model."""
    lines = text.splitlines(keepends=True)
    first = len(lines) * 2 // 5
    while first < len(lines) - 1 and not lines[first].strip():
        first += 1
    start = sum(map(len, lines[:first])) + len(lines[first]) - len(lines[first].lstrip())
    end = start
    for line in lines[first:]:
        end += len(line) if end > start else len(line.lstrip())
        if end - start >= chars:
            break
    return start, end - 1 if text[end - 1] == "\n" else end


def asker(api: Api, number: int, questions: int) -> None:
    for q in range(questions):
        api.call("ask", "POST", "/v1/ask", {"question": QUESTIONS[(number + 2 * q) % 4], "client": f"asker-{number}"})


def flood(api: Api, ids: int, stop_at: float, seen: dict) -> None:
    """Fault c: `ids` new client ids from 4 threads, each one /v1/complete that the gate answers
    (the cursor inside `value`), which the server answers without the model and without keeping
    anything for the client; the server's health before and after."""
    numbers = itertools.count()
    seen["health before ids"] = api.call("health", "GET", "/v1/health")[1]

    def worker() -> None:
        while (n := next(numbers)) < ids and time.monotonic() < stop_at:
            api.call("gate", "POST", "/v1/complete",
                     {"path": "flood.py", "line": 1, "col": 3, "text": "value = 1\n", "client": f"flood-{n}"})

    for thread in [later(0, worker) for _ in range(4)]:
        thread.join()
    seen["health ids"] = api.call("health", "GET", "/v1/health")[1]


def probe(api: Api, name: str, probes: dict) -> None:
    """A completion from a new client, right after a fault: the model must be given back."""
    started = time.monotonic()
    for tries in itertools.count(1):
        status, body = api.call("probe", "POST", "/v1/complete", {**PROBE, "client": name})
        if status != 429 or time.monotonic() - started > TIMEOUT:
            break
        time.sleep(2)  # Retry-After
    probes[name] = {"status": status, "seconds": round(time.monotonic() - started, 1), "tries": tries,
                    "by_model": by_model(body), "server_ms": body.get("latency_ms")}


def disconnects(api: Api, probes: dict) -> None:
    """Fault a: one client leaves before reading a byte, another after the first line."""
    sock, _ = api.raw_ask(QUESTIONS[2], "gone-before-reading", rcvbuf=-1)
    sock.close()
    probe(api, PROBES[0], probes)
    sock, got = api.raw_ask(QUESTIONS[0], "gone-after-a-line")
    while sock is not None and b"}\n" not in got.partition(b"\r\n\r\n")[2] and (chunk := sock.recv(1024)):
        got += chunk  # the headers, then the first chunk: one NDJSON line
    if sock is not None:
        sock.close()
    probe(api, PROBES[1], probes)


def slow_reader(api: Api, seconds: float, probes: dict, slow: dict) -> None:
    """Fault b: once the answer starts, a byte a second for `seconds`, then the socket closed; a probe half-way."""
    sock, got = api.raw_ask(QUESTIONS[1], "slow-reader", rcvbuf=1024)
    started, probing = time.monotonic(), None
    while sock is not None and time.monotonic() - started < seconds:
        time.sleep(1.0)
        if probing is None and time.monotonic() - started > seconds / 2:
            probing = later(0, probe, api, PROBES[2], probes)
        sock.settimeout(1.0)  # nothing to read yet is no reason to stay past `seconds`
        try:
            if not (byte := sock.recv(1)):
                break  # cut off by the server, or the answer ended
        except TimeoutError:
            continue
        got += byte
    if sock is not None:
        sock.close()
    slow.update(bytes=len(got), seconds=round(time.monotonic() - started, 1), head=got[:16].decode(errors="replace"))
    if probing is not None:
        probing.join()


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], check=False, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def first_hit(repo: Path) -> str | None:
    found = cli("search", "zebra_quartz_checksum", "-C", str(repo), "--json", "--no-llm")
    hits = json.loads(found.stdout) if found.returncode == 0 else []
    return hits[0]["path"] if hits else None


def status_json(repo: Path) -> dict:
    done = cli("status", "-C", str(repo), "--json")
    return json.loads(done.stdout) if done.returncode == 0 else {"error": done.stderr.strip()[-300:]}


def change_and_find(repo: Path, rel: str, change: dict) -> None:
    """Fault d: a new function in `rel`, indexed through the server, then searched for."""
    with (repo / rel).open("a", encoding="utf-8") as fh:
        fh.write(ZEBRA)
    started = time.monotonic()
    index = cli("index", "-C", str(repo))
    change.update(index_rc=index.returncode, index_s=round(time.monotonic() - started, 1),
                  through_server="through codeasst serve" in index.stderr, first_hit=first_hit(repo))


def start_server(repo: Path, log: Path) -> tuple[subprocess.Popen, dict]:
    """`codeasst serve --port 0` started, and its record as `serve --info --json` prints it."""
    from codeasst.wire import discovery

    with log.open("a") as err:
        proc = subprocess.Popen([*CLI, "serve", "-C", str(repo), "--port", "0"], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.monotonic() + 600  # the first start ever assembles the model
    while (found := discovery.find(repo)) is None or found.pid != proc.pid:  # a killed one's record lingers
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            raise RuntimeError(f"codeasst serve did not start:\n{log.read_text()[-2000:]}")
        time.sleep(0.2)
    return proc, json.loads(cli("serve", "-C", str(repo), "--info", "--json").stdout)


def restart(api: Api, repo: Path, log: Path, servers: list[subprocess.Popen], seen: dict) -> None:
    """Fault e: kill -9, a new server, and the index as it sees it."""
    api.restarting.set()
    killed = time.monotonic()
    os.kill(servers[-1].pid, signal.SIGKILL)
    servers[-1].wait()
    proc, info = start_server(repo, log)
    servers.append(proc)
    api.retarget(info["url"], info["token"])
    seen["health restarted"] = api.call("health", "GET", "/v1/health")[1]
    api.restarting.clear()
    seen.update({"restart_s": round(time.monotonic() - killed, 1), "status after": status_json(repo),
                 "first hit after": first_hit(repo)})


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def make_repo(work: Path, packages: tuple[str, ...]) -> Path:
    """A git repository holding a copy of codeasst's `packages`; CODEASST_HOME beside it, caches linked."""
    from codeasst import paths

    user_cache = paths.cache_dir()  # read before CODEASST_HOME points elsewhere
    home = work / "home"
    (home / "cache").mkdir(parents=True)
    for name in ("models", "embedders"):
        (user_cache / name).mkdir(parents=True, exist_ok=True)
        (home / "cache" / name).symlink_to(user_cache / name)
    os.environ["CODEASST_HOME"] = str(home)
    repo = work / "repo"
    (repo / "codeasst").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    shutil.copyfile(ROOT / "codeasst" / "__init__.py", repo / "codeasst" / "__init__.py")
    for package in packages:
        shutil.copytree(ROOT / "codeasst" / package, repo / "codeasst" / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    return repo


def monitor(api: Api, stopped: threading.Event, rss: list[float]) -> None:
    """/v1/health every 2 s: the server answers all along (the restart aside), and its memory."""
    while not stopped.wait(2.0):
        status, body = api.call("health", "GET", "/v1/health")
        if status == 200:
            rss.append(body["rss_mb"])


def run(plan: Plan, log: Path | None, work: Path, servers: list[subprocess.Popen]) -> tuple[dict, dict]:
    repo = make_repo(work, plan.packages)
    # The largest files for the editors (prompts as long as real ones), the next one for the change.
    rels = [p.relative_to(repo).as_posix() for p in sorted(repo.rglob("*.py"), key=lambda p: -p.stat().st_size)]
    seen: dict = {"zebra": rels[plan.editors], "probes": {}, "slow": {}, "change": {}, "rss": []}
    started = time.monotonic()
    index = cli("index", "-C", str(repo), timeout=1800)
    if index.returncode:
        raise RuntimeError(f"codeasst index failed:\n{index.stderr[-2000:]}")
    print(f"repo: {index.stdout.strip()} ({time.monotonic() - started:.0f} s)", flush=True)
    started = time.monotonic()
    proc, info = start_server(repo, work / "serve.log")
    servers.append(proc)
    print(f"server: pid {info['pid']} at {info['url']}, up in {time.monotonic() - started:.1f} s", flush=True)
    api = Api(info["url"], info["token"])
    seen["health start"] = api.call("health", "GET", "/v1/health")[1]
    stopped = threading.Event()
    later(0, monitor, api, stopped, seen["rss"])

    load_start = time.monotonic()
    load = [later(0, Editor(api, f"editor-{i}", rel, (repo / rel).read_text(encoding="utf-8"), plan.requests, i).run)
            for i, rel in enumerate(rels[:plan.editors])]
    load += [later(0, asker, api, i, plan.questions) for i in range(2)]
    at = plan.faults_at
    faults = [later(5, flood, api, plan.ids, load_start + FLOOD_S, seen),
              later(at, disconnects, api, seen["probes"]),
              later(at + 5, change_and_find, repo, seen["zebra"], seen["change"]),
              later(at + 10, slow_reader, api, plan.slow_s, seen["probes"], seen["slow"])]
    for thread in load:
        thread.join()
    load_end = time.monotonic()
    for thread in faults:
        thread.join()
    print(f"load: {load_end - load_start:.0f} s; faults: {time.monotonic() - load_start:.0f} s", flush=True)
    seen["status before"] = status_json(repo)
    seen["health end"] = api.call("health", "GET", "/v1/health")[1]
    seen["raw asks"] = len(api.raw_asks)
    restart(api, repo, work / "serve.log", servers, seen)
    stopped.set()
    if log:
        with log.open("w") as out:
            for d in (d for d in api.done if d.label != "gate" or d.status != 200):
                out.write(json.dumps({"label": d.label, "status": d.status, "at": round(d.at - load_start, 2),
                                      "seconds": round(d.seconds, 2), "body": d.body}) + "\n")
    return figures(api.done, seen, load_end), seen


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")


def latency(done: list[Done]) -> str:
    ms = [d.seconds * 1000 for d in done]
    return f"p50 {pct(ms, 0.5):.0f} ms, p95 {pct(ms, 0.95):.0f} ms, max {max(ms, default=0):.0f} ms (n={len(ms)})"


def figures(done: list[Done], seen: dict, load_end: float) -> dict:
    """What the run saw, printed one figure a line."""
    of = {label: [d for d in done if d.label == label] for label in ("complete", "gate", "ask", "open", "event")}
    ok = {label: [d for d in items if d.status == 200] for label, items in of.items()}
    model = [d for d in ok["complete"] if by_model(d.body)]
    cancelled = {label: sum("cancelled" in d.body.get("reason", "") for d in ok[label]) for label in ("complete", "open")}
    gate = [d for d in ok["gate"] if "identifier" in d.body.get("reason", "")]
    end = seen.get("health end", {})
    return {
        "completions sent by editors": len(of["complete"]),
        "completions answered by the model": len(model),
        "completion latency, answered by the model": latency(model),
        "time in the model (the server's latency_ms) p50": round(pct([d.body["latency_ms"] for d in model], 0.5)),
        "completions cancelled by a newer request": cancelled["complete"],
        "completions answered by the gate or type-ahead": len(ok["complete"]) - len(model) - cancelled["complete"],
        "completions refused 429": sum(d.status == 429 for d in of["complete"]),
        "refused 429 for a full queue": sum("requests are waiting" in d.body.get("detail", "") for d in done),
        "opens answered / cancelled": f"{len(ok['open'])} / {cancelled['open']}",
        "events sent": len(ok["event"]),
        "asks asked": len(of["ask"]),
        "asks answered": sum(d.body.get("type") == "answer" for d in ok["ask"]),
        "asks refused 429": sum(d.status == 429 for d in of["ask"]),
        "fault asks sent": seen["raw asks"],
        "ask latency, answered": latency([d for d in ok["ask"] if d.body.get("type") == "answer"]),
        "gate ids sent": len(of["gate"]),
        "gate ids answered by the gate": len(gate),
        "gate latency while the load ran": latency([d for d in gate if d.at < load_end]),
        "gate latency after the load": latency([d for d in gate if d.at >= load_end]),
        "errors by status": dict(Counter(f"{d.label} {d.status}" for d in done if d.status != 200)),
        "5xx": sum(isinstance(d.status, int) and d.status >= 500 for d in done),
        "no answer outside the restart": sum(d.status == NO_ANSWER for d in done),
        "refused during restart": sum(d.status == REFUSED for d in done),
        "hung": sum(d.status == HUNG for d in done),
        **{f"rss_mb {when}": seen.get(f"health {when}", {}).get("rss_mb")
           for when in ("start", "before ids", "ids", "end")},
        "rss_mb max seen": max(seen["rss"], default=None),
        "rss_mb after the restart": seen.get("health restarted", {}).get("rss_mb"),
        "clients after the ids": seen.get("health ids", {}).get("clients"),
        "streams": end.get("streams"), "queues at the end": end.get("queues"), "served": end.get("served"),
        **{f"probe {name}": value for name, value in seen["probes"].items()},
        "slow reader": seen["slow"], "change": seen["change"], "restart_s": seen.get("restart_s"),
        "status before the kill": brief(seen.get("status before", {})),
        "status after the restart": brief(seen.get("status after", {})),
        "first hit after the restart": seen.get("first hit after"),
    }


def brief(status: dict) -> dict:
    return {k: status[k] for k in ("files", "chunks", "store_problem", "stale", "error") if k in status}


def criteria(f: dict, seen: dict, plan: Plan, probe_s: float) -> list[tuple[str, bool, str]]:
    clients, streams, change = f["clients after the ids"] or {}, f["streams"] or {}, seen["change"]
    indexed = int(bool(change.get("through_server")))  # an /v1/index stream, ended "done"
    opened = f["asks asked"] + f["fault asks sent"] + indexed
    finished = streams.get("done", 0) - f["asks answered"] - indexed  # the slow one, if it ended "done"
    before, after = brief(seen.get("status before", {})), brief(seen.get("status after", {}))
    probes = seen["probes"]
    return [
        ("every client and fault ran to its end", not CRASHED, "; ".join(CRASHED) or "all did"),
        ("no request hung", f["hung"] == 0, f"{f['hung']} hung"),
        ("no 5xx, none without an answer outside the restart", f["5xx"] == f["no answer outside the restart"] == 0,
         f"{f['5xx']} 5xx, {f['no answer outside the restart']} without an answer"),
        ("every question answered, or refused 429 (the model busy)",
         f["asks answered"] + f["asks refused 429"] == f["asks asked"],
         f"{f['asks answered']} answered, {f['asks refused 429']} refused, of {f['asks asked']}"),
        ("the model answered completions", f["completions answered by the model"] > 0,
         f"{f['completions answered by the model']}"),
        # 8 editors, each request ending the same editor's older one, 2 askers and 3 faults fill no queue of 32.
        ("queue never full: an editor's newer request ends its older one", f["refused 429 for a full queue"] == 0,
         f"{f['refused 429 for a full queue']} refused, {f['completions cancelled by a newer request']} cancelled"),
        # Answers without the model make no client state: 10,000 ids leave the table within its caps.
        # (Resident memory is reported, not judged: the load running beside the ids moves it.)
        ("client table within its caps", bool(clients) and clients["kept"] <= clients["max"]
         and clients["chars"] <= clients["max"] * MAX_CLIENT_CHARS, f"{clients}"),
        ("clients gone seen, every stream ended", streams.get("client gone", 0) >= 2 and sum(streams.values())
         == opened and ("slow reader" in streams or finished >= 1), f"{streams} of {opened} streams"),
        ("model queues idle at the end", bool(f["queues at the end"]) and all(
            q["waiting"] == 0 and not q["running"] for q in f["queues at the end"]), f"{f['queues at the end']}"),
        ("model given back after each fault: a probe answered by it", set(probes) == set(PROBES) and all(
            p["status"] == 200 and p["by_model"] and (not probe_s or p["seconds"] <= probe_s) for p in probes.values()),
         "; ".join(f"{name}: {p['status']} in {p['seconds']} s, {p['tries']} tries" if (p := probes.get(name))
                   else f"{name}: not sent (its fault never started)" for name in PROBES)),
        ("changed file indexed through the server, found first", change.get("through_server") is True
         and change.get("first_hit") == seen["zebra"], f"{change.get('first_hit')}, index {change.get('index_s')} s"),
        ("index consistent after kill -9", "error" not in after and after.get("store_problem") is None
         and not any((after.get("stale") or {}).values()) and before.get("files") is not None
         and (after.get("files"), after.get("chunks")) == (before.get("files"), before.get("chunks")),
         f"before {before}, after {after}"),
        ("changed file found first after the restart", seen.get("first hit after") == seen["zebra"],
         f"{seen.get('first hit after')}"),
    ]


def machine() -> str:
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"{platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, load average {load}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer files, requests and questions: about 2 minutes")
    parser.add_argument("--json", type=Path, help="also write the figures and verdicts here")
    parser.add_argument("--log", type=Path, help="write every request but the gate ids answered here (JSONL)")
    parser.add_argument("--ids", type=int, default=Plan.ids, help="distinct client ids of fault c")
    parser.add_argument("--editors", type=int, default=Plan.editors, help="simulated editor clients")
    parser.add_argument("--probe-s", type=float, default=0.0, help="a probe must be answered within this (0: any time)")
    args = parser.parse_args()
    plan = replace(QUICK if args.quick else Plan(), ids=args.ids, editors=args.editors)
    print(f"# codeasst serve load and fault test, {time.strftime('%Y-%m-%d %H:%M')}")
    print(f"machine: {machine()}")
    print(f"command: {' '.join(['python', *sys.argv])}", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that the finally below stops the servers
    work = Path(tempfile.mkdtemp(prefix="codeasst-serve-load-"))
    servers: list[subprocess.Popen] = []
    began = time.monotonic()
    try:
        found, seen = run(plan, args.log, work, servers)
    except KeyboardInterrupt:
        found = {}
    finally:
        for proc in servers:
            stop(proc)
        log = work / "serve.log"  # all but the servers' start notes: warnings, tracebacks
        odd = [line for line in (log.read_text(errors="replace").splitlines() if log.exists() else [])
               if not line.startswith("codeasst: serving") and "bearer token" not in line]
        shutil.rmtree(work, ignore_errors=True)
    print(f"server log: {len(odd)} lines besides the start notes" + "".join(f"\n  {line}" for line in odd[-40:]))
    if not found:
        print("interrupted: the servers are stopped, the temporary files removed")
        return 130
    found["elapsed_s"] = round(time.monotonic() - began)
    for name, value in found.items():
        print(f"{name}: {value}")
    verdicts = criteria(found, seen, plan, args.probe_s)
    for name, ok, detail in verdicts:
        print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}")
    passed = all(ok for _, ok, _ in verdicts)
    print(f"overall: {'PASS' if passed else 'FAIL'}")
    if args.json:
        args.json.write_text(json.dumps({"machine": machine(), "command": sys.argv, "figures": found, "pass": passed,
                                         "criteria": [{"name": n, "pass": ok, "detail": d} for n, ok, d in verdicts]},
                                        indent=2, default=str))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
