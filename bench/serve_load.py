"""Load and fault test: `codeasst serve` with editors typing, questions asked, and clients that misbehave.

    python bench/serve_load.py [--quick] [--json PATH]

Setup. A temporary git repository holds a copy of some of codeasst's own packages (serve, complete,
retrieve, tasks; --quick: serve and complete), and a temporary CODEASST_HOME links cache/models and
cache/embedders to the user's cache, so nothing big is built again. `codeasst index` runs once, then
`codeasst serve --port 0` starts (a random token), found with `codeasst serve --info --json`. All
requests go over loopback with http.client (no proxy), to the real bundled model.

Load. 8 editor clients, each with its own id and file: /v1/open, then a stretch of the file typed back
at 3-6 characters a second with thinking pauses, and after each 300 ms pause a /v1/complete with the
whole buffer, not waited for (a newer one cancels it, as from an editor). An answer with text that
comes before the client's next request is shown, then accepted or discarded (/v1/events). 2 more
clients ask questions about the code (/v1/ask) and read the streams to the end.

Faults, while the load runs:
  a. an /v1/ask whose client closes the socket right after sending; another read for one line, then
     closed; each followed by a completion from a new client (a probe), which the model must answer
     within --probe-s (it may wait out one ask answer; a model never given back is a 429 at 60 s).
  b. an /v1/ask read one byte a second (a small SO_RCVBUF) for --slow-s once its first byte comes,
     with a probe half-way.
  c. --ids distinct client ids, each a /v1/complete with the cursor inside an identifier (the gate
     answers it without the model), from 4 threads.
  d. a function appended to a file, then `codeasst index` and `codeasst search --no-llm` (both through
     the server): that file must rank first.
  e. after the load: kill -9 of the server, a restart, `codeasst status --json` and the search again.
A monitor reads /v1/health every 2 s throughout, the restart included.

Every request has a 120 s timeout; one with no answer by then is HUNG. One that finds no server
between the kill and the new server's first answer is "refused during restart", not an error.

Pass (exit 0) when all hold: HUNG 0; no 5xx and no request left without an answer outside the
restart; every question answered; the model answered some completions; clients kept <=
serve.max_clients and forgotten >= ids - max_clients; "client gone" >= 2 and every stream ended
(the slow one as "slow reader" or finished); the model queue idle at the end; each probe answered by
the model within --probe-s; the changed file first in the search, before and after the kill; after
the restart, status with no store problem, nothing stale, and the files and chunks it had before.
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
from dataclasses import dataclass, field
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


@dataclass
class Done:
    """One request and how it ended: an HTTP status (an error line's, for a stream), or HUNG / NO_ANSWER / REFUSED."""

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
        self._lock = threading.Lock()

    def retarget(self, url: str, token: str) -> None:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        self.host, self.port, self.token = host, int(port), token

    def headers(self) -> dict:
        return {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}

    def call(self, label: str, method: str, route: str, payload: dict | None = None) -> tuple[int | str, dict]:
        """One request; for /v1/ask the whole NDJSON stream is read and its last line is the body."""
        started = time.monotonic()
        conn = http.client.HTTPConnection(self.host, self.port, timeout=TIMEOUT)
        try:
            conn.request(method, route, json.dumps(payload) if payload is not None else None, self.headers())
            response = conn.getresponse()
            status, body = response.status, {}
            if status != 200 or not route.endswith("/ask"):
                body = _json(response.read())
            for raw in response if status == 200 and route.endswith("/ask") else ():
                body = _json(raw)
                status = int(body.get("status", 200)) if body.get("type") == "error" else status
        except TimeoutError as exc:  # an OSError too: told apart first
            status, body = HUNG, {"detail": repr(exc)}
        except (OSError, http.client.HTTPException) as exc:
            status, body = REFUSED if self.restarting.is_set() else NO_ANSWER, {"detail": repr(exc)}
        finally:
            conn.close()
        with self._lock:
            self.done.append(Done(label, status, time.monotonic() - started, started, body))
        return status, body

    def raw_ask(self, question: str, client: str, rcvbuf: int = 0) -> socket.socket:
        """An /v1/ask sent on a bare socket, nothing read yet: the caller misbehaves with it."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:  # before connect, so the window the server sees is small from the start
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        sock.settimeout(TIMEOUT)
        sock.connect((self.host, self.port))
        body = json.dumps({"question": question, "client": client}).encode()
        head = (f"POST /v1/ask HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nAuthorization: Bearer {self.token}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n")
        sock.sendall(head.encode() + body)
        return sock


def _json(raw: bytes) -> dict:
    try:
        value = json.loads(raw or b"{}")
    except ValueError:
        return {"detail": raw[:200].decode("utf-8", "replace")}
    return value if isinstance(value, dict) else {"list": value}


def by_model(body: dict) -> bool:
    """A completion the model worked on: not the gate, not the type-ahead cache, not cancelled."""
    return bool(body.get("prompt_tokens") or body.get("generated_tokens")) and "cancelled" not in body.get("reason", "")


def later(delay: float, work, *args) -> threading.Thread:
    def run() -> None:
        time.sleep(delay)
        work(*args)

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
        self.send(self.api.call, "open", "POST", "/v1/open", self.position(self.start))
        pos = self.start
        for number in range(self.requests):
            burst = self.rng.randint(8, 30)
            thinking = self.rng.uniform(1, 4) if self.rng.random() < 0.3 else 0.0
            time.sleep(burst / self.rng.uniform(3, 6) + thinking + 0.3)  # typing, then the 300 ms pause
            pos = min(self.end, pos + burst)
            self.latest = number
            self.send(self.complete, number, pos)
            if pos >= self.end:
                break
        for thread in self.sent:
            thread.join()

    def send(self, work, *args) -> None:
        self.sent.append(later(0, work, *args))

    def complete(self, number: int, pos: int) -> None:
        status, body = self.api.call("complete", "POST", "/v1/complete", self.position(pos))
        suggestion = body.get("text", "") if status == 200 else ""
        if not suggestion or self.latest != number:  # the user typed on: never shown
            return
        self.event({"kind": "shown", "id": body["id"], "shown_length": len(suggestion)})
        if self.text[pos:self.end].startswith(suggestion):
            self.event({"kind": "accepted", "id": body["id"], "accepted_length": len(suggestion)})
        else:
            self.event({"kind": "discarded", "id": body["id"]})

    def event(self, payload: dict) -> None:
        self.api.call("event", "POST", "/v1/events", payload)


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
    (the cursor inside `value`); then the server's health."""
    numbers = itertools.count()

    def worker() -> None:
        while (n := next(numbers)) < ids and time.monotonic() < stop_at:
            api.call("gate", "POST", "/v1/complete",
                     {"path": "flood.py", "line": 1, "col": 3, "text": "value = 1\n", "client": f"flood-{n}"})

    for thread in [later(0, worker) for _ in range(4)]:
        thread.join()
    seen["health ids"] = api.call("health", "GET", "/v1/health")[1]


def probe(api: Api, name: str, probes: dict) -> None:
    """A completion from a new client, right after a fault: the model must be free again."""
    started = time.monotonic()
    status, body = api.call("probe", "POST", "/v1/complete", {**PROBE, "client": name})
    probes[name] = {"status": status, "seconds": round(time.monotonic() - started, 1), "by_model": by_model(body),
                    "server_ms": body.get("latency_ms")}


def disconnects(api: Api, probes: dict) -> None:
    """Fault a: one client leaves before reading a byte, another after the first line."""
    api.raw_ask(QUESTIONS[2], "gone-before-reading").close()
    probe(api, "after leaving unread", probes)
    conn = http.client.HTTPConnection(api.host, api.port, timeout=TIMEOUT)
    conn.request("POST", "/v1/ask", json.dumps({"question": QUESTIONS[0], "client": "gone-after-a-line"}),
                 api.headers())
    conn.getresponse().readline()
    conn.close()
    probe(api, "after leaving at the first line", probes)


def slow_reader(api: Api, seconds: float, probes: dict, slow: dict) -> None:
    """Fault b: once the answer starts, a byte a second for `seconds`, then the socket closed; a probe half-way."""
    sock = api.raw_ask(QUESTIONS[1], "slow-reader", rcvbuf=1024)
    started, probing = time.monotonic(), None
    try:
        got = sock.recv(1)  # the answer waits for the model first, within the timeout as any request
    except TimeoutError:
        got = b""
        api.done.append(Done("slow reader", HUNG, time.monotonic() - started, started, {}))
    started = time.monotonic()
    while got and time.monotonic() - started < seconds:
        time.sleep(1.0)
        if probing is None and time.monotonic() - started > seconds / 2:
            probing = later(0, probe, api, "while a client reads slowly", probes)
        byte = sock.recv(1)
        if not byte:
            break  # cut off by the server, or the answer ended
        got += byte
    sock.close()
    slow.update(bytes=len(got), seconds=round(time.monotonic() - started, 1), head=got[:16].decode(errors="replace"))
    if probing is not None:
        probing.join()


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], check=False, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def first_hit(repo: Path, query: str) -> str | None:
    found = cli("search", query, "-C", str(repo), "--json", "--no-llm")
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
                  through_server="through codeasst serve" in index.stderr)
    change["first_hit"] = first_hit(repo, "zebra_quartz_checksum")


def start_server(repo: Path, log: Path) -> tuple[subprocess.Popen, dict]:
    """`codeasst serve --port 0` started, and its record as `serve --info --json` prints it."""
    from codeasst.serve import discovery

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
    seen["restart_s"] = round(time.monotonic() - killed, 1)
    seen["status after"] = status_json(repo)
    seen["first hit after"] = first_hit(repo, "zebra_quartz_checksum")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def make_repo(work: Path, packages: list[str]) -> Path:
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


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")


def latency(done: list[Done]) -> str:
    ms = [d.seconds * 1000 for d in done]
    return f"p50 {pct(ms, 0.5):.0f} ms, p95 {pct(ms, 0.95):.0f} ms, max {max(ms, default=0):.0f} ms (n={len(ms)})"


def figures(done: list[Done], seen: dict, load_end: float) -> dict:
    """What the run saw, one figure a line when printed."""
    of = {label: [d for d in done if d.label == label] for label in ("complete", "gate", "ask", "open", "event")}
    ok = {label: [d for d in items if d.status == 200] for label, items in of.items()}
    model = [d for d in ok["complete"] if by_model(d.body)]
    cancelled = [d for d in ok["complete"] + ok["open"] if "cancelled" in d.body.get("reason", "")]
    gate = [d for d in ok["gate"] if "identifier" in d.body.get("reason", "")]
    end = seen.get("health end", {})
    return {
        "completions sent by editors": len(of["complete"]),
        "completions answered by the model": len(model),
        "completion latency, answered by the model": latency(model),
        "time in the model, server's latency_ms p50": round(pct([d.body["latency_ms"] for d in model], 0.5)),
        "completions cancelled by a newer request": sum(d.label == "complete" for d in cancelled),
        "completions answered by the gate or type-ahead": len(ok["complete"]) - len(model) - sum(
            d.label == "complete" for d in cancelled),
        "completions refused 429": sum(d.status == 429 for d in of["complete"]),
        "opens answered / cancelled": f"{len(ok['open'])} / {sum(d.label == 'open' for d in cancelled)}",
        "events sent": len(ok["event"]),
        "asks asked": len(of["ask"]),
        "asks answered": sum(d.body.get("type") == "answer" for d in ok["ask"]),
        "ask latency": latency(ok["ask"]),
        "gate ids sent": len(of["gate"]),
        "gate ids answered by the gate": len(gate),
        "gate latency while the load ran": latency([d for d in gate if d.at < load_end]),
        "gate latency after the load": latency([d for d in gate if d.at >= load_end]),
        "errors by status": dict(Counter(f"{d.label} {d.status}" for d in done if d.status != 200)),
        "5xx": sum(isinstance(d.status, int) and d.status >= 500 for d in done),
        "no answer outside the restart": sum(d.status == NO_ANSWER for d in done),
        "refused during restart": sum(d.status == REFUSED for d in done),
        "hung": sum(d.status == HUNG for d in done),
        **{f"rss_mb {when}": seen.get(f"health {when}", {}).get("rss_mb") for when in ("start", "ids", "end")},
        "rss_mb max seen": max(seen["rss"], default=None),
        "rss_mb after the restart": seen.get("health restarted", {}).get("rss_mb"),
        "clients after the ids": seen.get("health ids", {}).get("clients"),
        "streams": end.get("streams"), "queue at the end": end.get("queue"), "served": end.get("served"),
        **{f"probe {name}": value for name, value in seen["probes"].items()},
        "slow reader": seen["slow"], "change": seen["change"], "restart_s": seen.get("restart_s"),
        "status before the kill": brief(seen.get("status before", {})),
        "status after the restart": brief(seen.get("status after", {})),
        "first hit after the restart": seen.get("first hit after"),
    }


def brief(status: dict) -> dict:
    return {k: status[k] for k in ("files", "chunks", "store_problem", "stale", "error") if k in status}


def criteria(f: dict, seen: dict, args: argparse.Namespace) -> list[tuple[str, bool, str]]:
    clients, streams, change = f["clients after the ids"] or {}, f["streams"] or {}, seen["change"]
    indexed = int(bool(change.get("through_server")))  # an /v1/index stream, ended "done"
    opened = f["asks asked"] + 3 + indexed
    finished = streams.get("done", 0) - f["asks answered"] - indexed  # the slow one, if it ended "done"
    before, after = brief(seen.get("status before", {})), brief(seen.get("status after", {}))
    probes = seen["probes"].values()
    return [
        ("no request hung", f["hung"] == 0, f"{f['hung']} hung"),
        ("no 5xx, and none without an answer outside the restart",
         f["5xx"] == 0 and f["no answer outside the restart"] == 0,
         f"{f['5xx']} 5xx, {f['no answer outside the restart']} without an answer"),
        ("every question answered", 0 < f["asks answered"] == f["asks asked"],
         f"{f['asks answered']} of {f['asks asked']}"),
        ("the model answered completions", f["completions answered by the model"] > 0,
         f"{f['completions answered by the model']}"),
        ("client table bounded", bool(clients) and clients["kept"] <= clients["max"]
         and clients["forgotten"] >= args.ids - clients["max"], f"{clients}"),
        ("clients gone seen, every stream ended", streams.get("client gone", 0) >= 2 and sum(streams.values())
         == opened and ("slow reader" in streams or finished >= 1), f"{streams} of {opened} streams"),
        ("model queue idle at the end", f["queue at the end"] == {"waiting": 0, "running": False},
         f"{f['queue at the end']}"),
        ("model free after each fault", len(probes) == 3 and all(
            p["status"] == 200 and p["by_model"] and p["seconds"] <= args.probe_s for p in probes),
         "; ".join(f"{name}: {p['status']} in {p['seconds']} s" for name, p in seen["probes"].items())),
        ("changed file indexed through the server, found first", change.get("through_server") is True
         and change.get("first_hit") == seen["zebra"], f"{change.get('first_hit')}, index {change.get('index_s')} s"),
        ("index consistent after kill -9", "error" not in after and after.get("store_problem") is None
         and not any((after.get("stale") or {}).values()) and before.get("files") is not None
         and (after.get("files"), after.get("chunks")) == (before.get("files"), before.get("chunks")),
         f"before {before}, after {after}"),
        ("changed file found first after the restart", seen.get("first hit after") == seen["zebra"],
         f"{seen.get('first hit after')}"),
    ]


def run(args: argparse.Namespace, work: Path, servers: list[subprocess.Popen]) -> tuple[dict, dict]:
    repo = make_repo(work, ["serve", "complete"] if args.quick else ["serve", "complete", "retrieve", "tasks"])
    # The largest files for the editors (prompts as long as real ones), the next for the change.
    rels = [p.relative_to(repo).as_posix() for p in sorted(repo.rglob("*.py"), key=lambda p: -p.stat().st_size)]
    seen: dict = {"zebra": rels[args.editors], "probes": {}, "slow": {}, "change": {}, "rss": []}
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
    load = [later(0, Editor(api, f"editor-{i}", rel, (repo / rel).read_text(encoding="utf-8"), args.requests, i).run)
            for i, rel in enumerate(rels[:args.editors])]
    load += [later(0, asker, api, i, args.questions) for i in range(2)]
    faults = [later(3, disconnects, api, seen["probes"]),
              later(6, slow_reader, api, args.slow_s, seen["probes"], seen["slow"]),
              later(5, flood, api, args.ids, load_start + args.flood_s, seen),
              later(args.change_at, change_and_find, repo, seen["zebra"], seen["change"])]
    for thread in load:
        thread.join()
    load_end = time.monotonic()
    for thread in faults:
        thread.join()
    print(f"load: {load_end - load_start:.0f} s; faults: {time.monotonic() - load_start:.0f} s", flush=True)
    seen["status before"] = status_json(repo)
    seen["health end"] = api.call("health", "GET", "/v1/health")[1]
    restart(api, repo, work / "serve.log", servers, seen)
    stopped.set()
    if args.log:
        with args.log.open("w") as out:
            for d in api.done:
                if d.label != "gate" or d.status != 200:
                    out.write(json.dumps({"label": d.label, "status": d.status, "at": round(d.at - load_start, 2),
                                          "seconds": round(d.seconds, 2), "body": d.body}) + "\n")
    return figures(api.done, seen, load_end), seen


def monitor(api: Api, stopped: threading.Event, rss: list[float]) -> None:
    """/v1/health every 2 s: the server answers all along (the restart aside), and its memory."""
    while not stopped.wait(2.0):
        status, body = api.call("health", "GET", "/v1/health")
        if status == 200:
            rss.append(body["rss_mb"])


def machine() -> str:
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"{platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, load average {load}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer files, requests and questions: about 2 minutes")
    parser.add_argument("--json", type=Path, help="also write the figures and verdicts here")
    parser.add_argument("--log", type=Path, help="write every request but the gate ids' here (JSONL)")
    parser.add_argument("--editors", type=int, default=8)
    parser.add_argument("--requests", type=int, help="completions per editor (12; --quick 3)")
    parser.add_argument("--questions", type=int, help="questions per asking client (2; --quick 1)")
    parser.add_argument("--ids", type=int, default=10_000, help="distinct client ids of fault c")
    parser.add_argument("--slow-s", type=float, help="how long the slow reader reads (30; --quick 15)")
    parser.add_argument("--probe-s", type=float, default=55.0, help="a probe must be answered within this")
    parser.add_argument("--change-at", type=float, help="seconds into the load of fault d (20; --quick 10)")
    parser.add_argument("--flood-s", type=float, default=420.0, help="fault c sends nothing after this (a bound)")
    args = parser.parse_args()
    args.requests = args.requests or (3 if args.quick else 12)
    args.questions = args.questions or (1 if args.quick else 2)
    args.slow_s = args.slow_s or (15.0 if args.quick else 30.0)
    args.change_at = args.change_at or (10.0 if args.quick else 20.0)

    print(f"# codeasst serve load and fault test, {time.strftime('%Y-%m-%d %H:%M')}")
    print(f"machine: {machine()}")
    print(f"command: {' '.join(['python', *sys.argv])}", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that the finally below stops the servers
    work = Path(tempfile.mkdtemp(prefix="codeasst-serve-load-"))
    servers: list[subprocess.Popen] = []
    began = time.monotonic()
    try:
        found, seen = run(args, work, servers)
    finally:
        for proc in servers:
            stop(proc)
        log = work / "serve.log"  # all but the servers' start notes: warnings, tracebacks
        odd = [line for line in (log.read_text(errors="replace").splitlines() if log.exists() else [])
               if not line.startswith("codeasst: serving") and "bearer token" not in line]
        shutil.rmtree(work, ignore_errors=True)
    print("server log: " + ("nothing but the start notes" if not odd else f"{len(odd)} lines, the last:"))
    print("\n".join(odd[-40:]))
    found["elapsed_s"] = round(time.monotonic() - began)
    for name, value in found.items():
        print(f"{name}: {value}")
    verdicts = criteria(found, seen, args)
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
