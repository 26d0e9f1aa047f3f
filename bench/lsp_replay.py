"""`codeasst lsp` against `codeasst serve`'s HTTP API: the LSP's overhead, and a typing replay through each.

    python bench/lsp_replay.py [--model bundled] [--max-requests 60] [--rounds 1] [--silent 60] [--asked 20]
                               [--no-replay] [--log FILE] [--keep]

Setup as bench/typing_replay.py's: the `--files` packages copied into a temporary git repository, the
last `--lines` lines of `--functions` functions of each file as the regions typed back, `codeasst serve
--port 0` with a token (typing_replay.start_server). Each part below has a CODEASST_HOME of its own
(cache/models and cache/embedders linked to the user's), so a server, discovery record and event store
of its own: `codeasst stats` after a replay counts that replay's events alone.

1. Overhead. One server, and `codeasst lsp` started in the repository as an editor starts it, which
   joins that server through its discovery record. Each position is asked twice: POST /v1/complete
   directly (client id "lsp-bench-direct"), and through the LSP, a didChange of the span that changed
   then textDocument/inlineCompletion (the LSP's client id is lsp-<pid>:<uri>, so neither hits the
   other's type-ahead cache or KV slot); which goes first alternates. Each is timed from sending the
   request to its answer; the LSP's didChange goes out just before, so its handling counts in (an editor
   sends it at the keystroke, a debounce earlier). Where the gate answered, the LSP is asked once more at
   once, with no change before it: its request alone. The positions, in file order, each as typed so far:
   `--asked` line starts (the first of each file's regions, in typing order: the model is asked) and
   `--silent` cursors two characters into a word (the gate's silence, no model). A pair is classed by how
   the server answered the direct request: the gate, the model, or the type-ahead cache. Before a file's
   pairs, the LSP opens it (didOpen) and its warm-up of the file is waited for (open_warmed), then the
   file's first line start is asked both ways unmeasured, so that its first prompt is not in the figures
   and each client's KV slot holds the file.
2. Replay. typing_replay's Replay (the same files, seed and typing model) with its HTTP Client and with
   LspClient, each on a server started fresh; `--rounds` of the two, in the order serve, lsp, then lsp,
   serve (ABBA), so that drift in the machine's load evens out. LspClient: a file's first /v1/open is
   didOpen, and it waits until the LSP's own warm-up of the file ends (as the HTTP replay waits for its
   /v1/open; the LSP warms without the cursor); /v1/complete is a didChange, then inlineCompletion; when
   no answer has come by the next keystroke (the request's budget), that keystroke goes to the LSP as a
   didChange, as an editor sends it, so an answer that comes later is stale there and answered empty, as
   the replay never shows it. /v1/events: accepted is workspace/executeCommand codeasst.accept [id,
   accepted length]; shown and discarded are the LSP's own to record, so nothing is sent for them.
   Happiness is the replay's own judgement in both (typing_replay's formula); `codeasst stats`
   afterwards shows what the event store got, which for the LSP is what the LSP recorded. Differences
   the protocol brings: the LSP has no InsertEnter warm-up (the HTTP replay posts /v1/open when the
   cursor arrives at a later region), and its client id is per document, not one for the editor.
3. A Markdown table for docs/benchmarks.md, with the command line and the machine.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import re
import secrets
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

# bench/typing_replay.py, beside this script
from typing_replay import (
    CLI,
    Asked,
    Client,
    Pace,
    Region,
    Replay,
    happiness,
    machine,
    make_home,
    next_key,
    pct,
    start_server,
    typing_arguments,
    workspace,
)

DIRECT = "lsp-bench-direct"
CAPABILITIES = {"textDocument": {"inlineCompletion": {}, "synchronization": {"didSave": False}},
                "general": {"positionEncodings": ["utf-16"]}}


class LspGone(RuntimeError):
    pass


class Lsp:
    """`codeasst lsp` over its stdio, framed as tests/lsp_client.py frames it, with a write lock (the
    replay's threads share it) and each answer's arrival time taken by the reader."""

    def __init__(self, repo: Path, log: Path) -> None:
        self.log = log
        self.proc = subprocess.Popen([*CLI, "lsp"], cwd=repo, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=dict(os.environ))
        self.ids = itertools.count(1)
        self.answers: dict[int, tuple[dict, float]] = {}
        self.stderr: list[str] = []
        self.changed = threading.Condition()
        self.writing = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        try:
            self.request("initialize", {"processId": os.getpid(), "rootUri": repo.as_uri(),
                                        "capabilities": CAPABILITIES})
        except (RuntimeError, TimeoutError, OSError, KeyboardInterrupt):  # LspGone is a RuntimeError
            self.proc.kill()
            raise
        self.notify("initialized", {})

    def _send(self, message: dict) -> None:
        body = json.dumps(message).encode()
        with self.writing:
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            self.proc.stdin.flush()

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            length = None
            while (line := out.readline()) not in (b"\r\n", b"\n"):
                if not line:
                    with self.changed:
                        self.changed.notify_all()
                    return
                name, _, value = line.decode("ascii", "replace").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            message = json.loads(out.read(length))
            arrived = time.perf_counter()
            if "method" in message:  # a notification, or a request of the server's: nothing this bench needs
                if "id" in message:
                    self._send({"jsonrpc": "2.0", "id": message["id"], "result": None})
                continue
            with self.changed:
                self.answers[message["id"]] = (message, arrived)
                self.changed.notify_all()

    def _read_stderr(self) -> None:
        with self.log.open("w", encoding="utf-8") as out:
            for raw in self.proc.stderr:
                line = raw.decode("utf-8", "replace").rstrip()
                self.stderr.append(line)
                out.write(line + "\n")
                out.flush()

    def notify(self, method: str, params: dict | None) -> None:
        self._send({"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {})})

    def start(self, method: str, params: dict | None) -> int:
        number = next(self.ids)
        self._send({"jsonrpc": "2.0", "id": number, "method": method,
                    **({"params": params} if params is not None else {})})
        return number

    def answer(self, number: int, timeout: float) -> tuple[dict, float]:
        """The answer to request `number` and the perf_counter when it came; TimeoutError after `timeout`."""
        deadline = time.perf_counter() + timeout
        with self.changed:
            while number not in self.answers:
                if self.proc.poll() is not None:
                    raise LspGone(f"codeasst lsp exited {self.proc.returncode}; its stderr ends:\n"
                                  + "\n".join(self.stderr[-20:]))
                left = deadline - time.perf_counter()
                if left <= 0:
                    raise TimeoutError(f"no answer to request {number}")
                self.changed.wait(min(left, 0.5))
            return self.answers.pop(number)

    def request(self, method: str, params: dict | None, timeout: float = 120.0) -> object:
        message, _ = self.answer(self.start(method, params), timeout)
        if "error" in message:
            raise RuntimeError(f"{method}: {message['error']}")
        return message.get("result")

    def close(self) -> int:
        try:
            self.request("shutdown", None, timeout=30)
            self.notify("exit", None)
            return self.proc.wait(30)
        except (OSError, TimeoutError, RuntimeError, subprocess.TimeoutExpired):
            self.proc.kill()
            return self.proc.wait()

    def complaints(self) -> list[str]:
        """Its stderr lines that are not the ordinary notes (the session it serves, the gate's silences; a
        "no completion" line is not ordinary here: a refusal, a position past the end, no server)."""
        ordinary = ("codeasst lsp: codeasst lsp for", "codeasst lsp: silent in", "codeasst lsp: no diagnostics")
        return [line for line in self.stderr if not line.startswith(ordinary)]


def position(text: str, offset: int) -> dict:
    """The LSP position of `offset` in `text`: 0-based line, and the column in UTF-16 code units."""
    start = text.rfind("\n", 0, offset) + 1
    return {"line": text.count("\n", 0, offset), "character": len(text[start:offset].encode("utf-16-le")) // 2}


def shared_ends(old: str, new: str) -> tuple[int, int]:
    """(p, s): `old` and `new` begin with the same p characters and end with the same s (p + s fits both)."""
    lo, hi = 0, min(len(old), len(new))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if old[:mid] == new[:mid] else (lo, mid - 1)
    p, lo, hi = lo, 0, min(len(old), len(new)) - lo
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if old[len(old) - mid:] == new[len(new) - mid:] else (lo, mid - 1)
    return p, lo


class Documents:
    """The editor's side of document sync: each open file's version and text, as the LSP has them."""

    def __init__(self, lsp: Lsp, repo: Path) -> None:
        self.lsp, self.repo = lsp, repo
        self.open: dict[str, tuple[int, str]] = {}
        self.lock = threading.RLock()

    def uri(self, path: str) -> str:
        return (self.repo / path).as_uri()

    def sync(self, path: str, text: str) -> int:
        """Give the LSP `text` for `path` (didOpen the first time, then a didChange of the span that changed); its version."""
        with self.lock:
            if path not in self.open:
                self.lsp.notify("textDocument/didOpen", {"textDocument": {
                    "uri": self.uri(path), "languageId": "python", "version": 1, "text": text}})
                self.open[path] = (1, text)
                return 1
            version, old = self.open[path]
            if old == text:
                return version
            p, s = shared_ends(old, text)
            change = {"range": {"start": position(old, p), "end": position(old, len(old) - s)},
                      "text": text[p:len(text) - s]}
            self.lsp.notify("textDocument/didChange", {"textDocument": {"uri": self.uri(path), "version": version + 1},
                                                       "contentChanges": [change]})
            self.open[path] = (version + 1, text)
            return version + 1

    def type_on(self, path: str, version: int, text: str) -> None:
        """The user typed on: `text`, unless a newer change went out since `version`."""
        with self.lock:
            if self.open[path][0] == version:
                self.sync(path, text)

    def close_all(self) -> None:
        with self.lock:
            for path in self.open:
                self.lsp.notify("textDocument/didClose", {"textDocument": {"uri": self.uri(path)}})
            self.open.clear()

    def inline(self, path: str, text: str, offset: int) -> int:
        """Ask for an inline completion at `offset` of `path` (already synced to `text`); the request's number."""
        return self.lsp.start("textDocument/inlineCompletion", {
            "textDocument": {"uri": self.uri(path)}, "position": position(text, offset), "context": {"triggerKind": 2}})


def inline_answer(message: dict) -> tuple[int, dict]:
    """An inlineCompletion answer as typing_replay's client sees one: (status, {"text", "id"})."""
    if "error" in message:
        return 500, message["error"]
    items = (message.get("result") or {}).get("items") or []
    if not items:
        return 200, {"text": "", "id": ""}
    return 200, {"text": items[0]["insertText"], "id": items[0]["command"]["arguments"][0]}


def served_opens(server: Client) -> int:
    """How many /v1/open the server has answered in full (GET /v1/health)."""
    request = urllib.request.Request(server.url + "/v1/health", headers={"Authorization": f"Bearer {server.token}"})
    with server.opener.open(request, timeout=30) as response:
        return json.loads(response.read())["served"].get("open", 0)


def open_warmed(docs: Documents, server: Client, path: str, text: str, timeout: float = 120.0) -> float | None:
    """didOpen, then wait until the LSP's warm-up of the file (a /v1/open of its own) ends, as an editor's
    user opens a file a while before typing in it: the seconds it took, None if not seen within `timeout`.
    (Asked at once, a request of the LSP's races its warm-up into the server, and the later one ends the
    other; and the warm-up holds the model meanwhile.)"""
    started = time.perf_counter()
    opens = served_opens(server)
    docs.sync(path, text)
    while served_opens(server) <= opens:
        if time.perf_counter() - started > timeout:
            return None
        time.sleep(0.05)
    return round(time.perf_counter() - started, 3)


class LspClient(Client):
    """typing_replay's client, through `codeasst lsp` (module docstring, part 2)."""

    def __init__(self, lsp: Lsp, repo: Path, url: str, token: str) -> None:
        super().__init__(url, token)  # the server itself only for /v1/health, to see the LSP's warm-up end
        self.lsp = lsp
        self.docs = Documents(lsp, repo)
        self.accepts = {True: 0, False: 0}  # codeasst.accept answered recorded / not recorded
        self.late_with_text = 0  # answers with text that came after the next keystroke had gone out
        self.unwarmed = 0  # files whose warm-up by the LSP was not seen to end within 120 s

    def post(self, route: str, payload: dict) -> tuple[int, dict]:
        if route == "/v1/open":
            # Only a file's first open: the LSP has no InsertEnter warm-up, and the text of a later one
            # goes with the next request (sent from the warm-up's thread it could land after that request's).
            seconds = 0.0
            if payload["path"] not in self.docs.open:
                seconds = open_warmed(self.docs, self, payload["path"], payload["text"])
                self.unwarmed += seconds is None
            return 200, {"path": payload["path"], "tokens": 0, "seconds": seconds or 0.0}
        if route == "/v1/events":
            if payload["kind"] != "accepted":
                return 200, {}  # shown and discarded: the LSP records them itself
            result = self.lsp.request("workspace/executeCommand", {
                "command": "codeasst.accept", "arguments": [payload["id"], payload["accepted_length"]]}) or {}
            self.accepts[bool(result.get("recorded"))] += 1
            return 200, result
        raise ValueError(f"LspClient has no {route}")

    def ask(self, asked: Asked, text: str) -> Asked:
        version = self.docs.sync(asked.path, text)
        asked.started = time.perf_counter()
        number = self.docs.inline(asked.path, text, asked.offset)
        try:
            message, arrived = self.lsp.answer(number, max(0.0, asked.started + asked.budget - time.perf_counter()))
        except TimeoutError:  # the next keystroke: the editor sends it (a late request is never taken by Tab)
            key = asked.upcoming[:next_key(asked.upcoming, 0)]
            self.docs.type_on(asked.path, version, text[:asked.offset] + key + text[asked.offset:])
            message, arrived = self.lsp.answer(number, 300)
        asked.latency = arrived - asked.started
        asked.status, asked.answer = inline_answer(message)
        if asked.answer.get("text") and asked.latency >= asked.budget:
            self.late_with_text += 1
        return asked


# Setup.

# Part 1: overhead.

@dataclass
class Pair:
    by: str  # how the server answered the direct request: gate, model, type-ahead, cancelled
    direct: float  # seconds
    lsp: float
    same: bool  # the same text (or silence) both ways
    alone: float | None = None  # the gate's silence: the LSP asked again at once, no didChange before it
    row: dict = field(default_factory=dict)  # for --log: where, and the direct answer's own figures


def spread(items: list, n: int) -> list:
    return items if n >= len(items) else [items[i * len(items) // n] for i in range(n)]


def positions(texts: dict[str, str], regions: dict[str, list[Region]], asked: int,
              silent: int) -> list[tuple[str, str, str, int]]:
    """(kind, path, text, offset), in file order, each as typed so far (the rest of its region blanked), so
    that each text differs from the one before and goes to the LSP as a didChange. "line start": the
    first line starts of each file's regions, in typing order (each prompt extends the one before, so the
    KV cache serves it); "in a word": two characters into a word of the regions (the gate's silence)."""
    starts, inside = [], []
    for path, text in texts.items():
        mine = []
        for region in regions[path]:
            target, before, after = text[region.start:region.end], text[:region.start], text[region.end:]
            for m in re.finditer(r"(?m)^[ \t]*(?=\S)", target):
                mine.append(("line start", path, before + target[:m.end()] + after, region.start + m.end()))
            for m in re.finditer(r"[A-Za-z_]\w{3,}", target):
                pos = m.start() + 2
                inside.append(("in a word", path, before + target[:pos] + after, region.start + pos))
        starts += mine[:-(-asked // len(texts))]
    order = list(texts)
    return sorted(starts[:asked] + spread(inside, silent), key=lambda p: (order.index(p[1]), p[3]))


def overhead(repo: Path, direct: Client, lsp: Lsp, texts: dict[str, str], regions: dict[str, list[Region]],
             args: argparse.Namespace) -> tuple[list[Pair], dict]:
    """The pairs (module docstring, part 1), and the seconds from each file's didOpen to the end of the LSP's warm-up."""
    docs = Documents(lsp, repo)

    def via_direct(path: str, text: str, offset: int) -> tuple[float, dict]:
        prefix = text[:offset]
        payload = {"path": path, "line": prefix.count("\n") + 1, "col": offset - (prefix.rfind("\n") + 1) + 1,
                   "text": text, "client": DIRECT}
        started = time.perf_counter()
        status, answer = direct.post("/v1/complete", payload)
        took = time.perf_counter() - started
        if status != 200:
            raise RuntimeError(f"/v1/complete answered {status}: {answer}")
        return took, answer

    def via_lsp(path: str, text: str, offset: int) -> tuple[float, dict]:
        docs.sync(path, text)
        started = time.perf_counter()
        message, arrived = lsp.answer(docs.inline(path, text, offset), 300)
        status, answer = inline_answer(message)
        if status != 200:
            raise RuntimeError(f"inlineCompletion answered an error: {answer}")
        return arrived - started, answer

    chosen = positions(texts, regions, args.asked, args.silent)
    # Before a file's pairs: its didOpen, the LSP's warm-up waited for, and its first line start asked
    # both ways unmeasured, so that each client's KV slot holds the file (the direct client has one slot,
    # the LSP one per document) and none of the figures is a file's first prompt.
    warm = {}
    for kind, path, text, offset in chosen:
        if kind == "line start":
            warm.setdefault(path, (path, text, offset))
    chosen = [p for p in chosen if warm.get(p[1]) != p[1:]]
    pairs, opened = [], {}
    turns = {kind: itertools.count() for kind, *_ in chosen}  # who goes first alternates within each kind
    for kind, path, text, offset in chosen:
        if path not in opened:
            opened[path] = open_warmed(docs, direct, path, text)
        if path in warm:
            via_direct(*warm[path])
            via_lsp(*warm.pop(path))
        lsp_first = next(turns[kind]) % 2 == 1
        if lsp_first:
            (lsp_s, lsp_answer), (direct_s, answer) = via_lsp(path, text, offset), via_direct(path, text, offset)
        else:
            (direct_s, answer), (lsp_s, lsp_answer) = via_direct(path, text, offset), via_lsp(path, text, offset)
        by = Asked(path, offset, 0.0, 0.0, answer=answer).by
        alone = via_lsp(path, text, offset)[0] if by == "gate" else None
        figures = {k: answer.get(k) for k in ("latency_ms", "prompt_tokens", "cached_tokens", "generated_tokens",
                                              "cached", "reason")}
        row = {"kind": kind, "path": path, "offset": offset, "lsp_first": lsp_first, "by": by,
               "direct_ms": round(direct_s * 1000, 1), "lsp_ms": round(lsp_s * 1000, 1),
               "lsp_alone_ms": alone and round(alone * 1000, 1), "direct": figures,
               "direct_text": answer.get("text", ""), "lsp_text": lsp_answer["text"]}
        pairs.append(Pair(by, direct_s, lsp_s, answer.get("text", "") == lsp_answer["text"], alone, row))
    return pairs, opened


def ms(values: list[float]) -> str:
    return f"{pct(values, 0.5) * 1000:.1f} / {pct(values, 0.95) * 1000:.1f}" if values else "-"


def overhead_table(pairs: list[Pair]) -> list[str]:
    rows = [("| requests, classed by the direct answer | pairs | direct: p50 / p95 ms | through the LSP: p50 / p95 ms "
             "| LSP − direct, paired: p50 / p95 ms | same answer both ways |"), "|---|---|---|---|---|---|"]
    groups = [("answered without the model (the gate's silence)", "gate"), ("answered by the model", "model"),
              ("answered by the type-ahead cache", "type-ahead"), ("cancelled", "cancelled")]
    for label, by in groups:
        group = [p for p in pairs if p.by == by]
        if group:
            rows.append(f"| {label} | {len(group)} | {ms([p.direct for p in group])} | {ms([p.lsp for p in group])} "
                        f"| {ms([p.lsp - p.direct for p in group])} | {sum(p.same for p in group)} of {len(group)} |")
        if alone := [p for p in group if p.alone is not None]:
            rows.append(f"| the same, the LSP's request alone (asked again, no didChange before it) | {len(alone)} "
                        f"| {ms([p.direct for p in alone])} | {ms([p.alone for p in alone])} "
                        f"| {ms([p.alone - p.direct for p in alone])} | |")
    return rows


# Part 2: the replays.

@dataclass
class Run:
    name: str  # serve or lsp
    round: int
    replay: Replay
    elapsed: float
    stored: dict = field(default_factory=dict)  # the event store's totals (codeasst stats)
    notes: list[str] = field(default_factory=list)


def stored_events(repo: Path) -> dict:
    """`codeasst stats --json` summed over days and variants: shown, accepted, discarded and Happiness in all;
    and from the store's rows, per suggestion: an outcome with no shown, or a kind counted twice."""
    from codeasst.wire.events import EventStore

    out = subprocess.run([*CLI, "stats", "--json"], cwd=repo, capture_output=True, text=True, check=True)
    days = json.loads(out.stdout)
    total = {kind: sum(d[kind] for d in days) for kind in ("shown", "accepted", "discarded")}
    total["happiness"] = sum(d["happiness"] * d["shown"] for d in days)
    store = EventStore.open_default()
    store.close()
    kinds: dict[str, list[str]] = {}
    with contextlib.closing(sqlite3.connect(f"file:{store.path}?mode=ro", uri=True)) as db:
        for suggestion, kind in db.execute("SELECT suggestion, kind FROM events ORDER BY at"):
            kinds.setdefault(suggestion, []).append(kind)
    total["unshown"] = sum(1 for k in kinds.values() if "shown" not in k)  # in any order: the LSP sends them apart
    total["twice"] = sum(1 for k in kinds.values() if len(k) != len(set(k)) or {"accepted", "discarded"} <= set(k))
    return total


def replay_once(name: str, round_: int, repo: Path, texts: dict, regions: dict, args: argparse.Namespace, work: Path,
                models_cache: Path) -> Run:
    os.environ["CODEASST_HOME"] = str(make_home(work, f"replay-{name}-{round_}", models_cache))
    token = secrets.token_hex(16)
    server, url = start_server(repo, args.model, token, work / f"serve-{name}-{round_}.log")
    lsp = None
    try:
        if name == "lsp":
            lsp = Lsp(repo, work / f"lsp-replay-{round_}.log")
            client: Client = LspClient(lsp, repo, url, token)
        else:
            client = Client(url, token)
        replay = Replay(client, Pace(cps=args.cps), args.debounce_ms / 1000, args.max_requests, args.seed,
                        args.max_seconds)
        started = time.perf_counter()
        for rel in args.files:
            if regions[rel] and not replay.full():
                replay.file(rel, texts[rel], regions[rel])
        replay.finish()
        run = Run(name, round_, replay, time.perf_counter() - started)
        if not isinstance(client, LspClient):
            run.notes.append("files opened (/v1/open with the cursor): " + ", ".join(
                f"{o['path']} {o['tokens']} tokens in {o['seconds']:.1f} s" for o in replay.opens))
        else:
            client.docs.close_all()  # what is still shown is discarded now, as when an editor closes
            time.sleep(2.0)  # the LSP sends its events in the background
            run.notes.append(f"codeasst.accept answered recorded {client.accepts[True]}, not recorded "
                             f"{client.accepts[False]}")
            run.notes.append(f"answers with text after the next keystroke (the LSP may have counted them shown): "
                             f"{client.late_with_text}")
            run.notes.append("files opened, seconds until the LSP's warm-up ended: "
                             + ", ".join(f"{o['path']} {o['seconds']:.1f}" for o in replay.opens)
                             + (f" ({client.unwarmed} not seen to end)" if client.unwarmed else ""))
            run.notes += [f"codeasst lsp exited {lsp.close()}"] + [f"lsp stderr: {line}" for line in lsp.complaints()]
    finally:
        if lsp is not None and lsp.proc.poll() is None:
            lsp.proc.kill()
        server.terminate()
        server.wait(timeout=60)
    run.stored = stored_events(repo)
    return run


def replay_rows(runs: list[Run]) -> list[str]:
    def judged(r: Run) -> dict:
        total, shown = happiness(r.replay.events)
        kinds = [kind for kind, _ in r.replay.events]
        return {"total": total, "shown": shown, "accepted": kinds.count("accepted"),
                "discarded": kinds.count("discarded"), "requests": max(1, len(r.replay.asked))}

    def latency(asked: list[Asked]) -> str:
        return f"{ms([a.latency for a in asked])} ({len(asked)})"

    def same(r: Run) -> str:
        """Requests at the same positions as the other protocol's replay of the round, from the first."""
        other = next(o for o in runs if o.round == r.round and o is not r).replay.asked
        pairs = list(zip(r.replay.asked, other))
        return str(next((i for i, (x, y) in enumerate(pairs) if (x.path, x.offset) != (y.path, y.offset)),
                        len(pairs)))

    rows = [
        ("requests", lambda r, j: str(len(r.replay.asked))),
        ("**Happiness per request**", lambda r, j: f"**{j['total'] / j['requests']:.2f}**"),
        ("Happiness in all", lambda r, j: f"{j['total']:.1f}"),
        ("shown / accepted / discarded", lambda r, j: f"{j['shown']} / {j['accepted']} / {j['discarded']}"),
        ("accept rate", lambda r, j: f"{j['accepted'] / max(1, j['shown']):.1%}"),
        ("latency, all requests: p50 / p95 ms", lambda r, j: latency(r.replay.asked)),
        ("latency, suggestions shown (in time, new): p50 / p95 ms",
         lambda r, j: latency([x for x in r.replay.asked if x.outcome == "shown"])),
        ("event store (`codeasst stats`): shown / accepted / discarded",
         lambda r, j: "{shown} / {accepted} / {discarded}".format(**r.stored)),
        ("event store: Happiness per request", lambda r, j: f"{r.stored['happiness'] / j['requests']:.2f}"),
        ("event store: suggestions with an outcome but no shown / counted twice",
         lambda r, j: f"{r.stored['unshown']} / {r.stored['twice']}"),
        ("replay, real time", lambda r, j: f"{r.elapsed:.0f} s"),
        ("requests at the same positions as the other's in its round, from the first", lambda r, j: same(r)),
    ]
    names = {"serve": "through serve (HTTP)", "lsp": "through codeasst lsp"}
    rounds = len({r.round for r in runs})
    out = ["| | " + " | ".join(names[r.name] + (f", round {r.round}" if rounds > 1 else "") for r in runs) + " |",
           "|---|" + "---|" * len(runs)]
    for label, cell in rows:
        out.append(f"| {label} | " + " | ".join(cell(r, judged(r)) for r in runs) + " |")
    return out


def write_log(path: Path, pairs: list[Pair], runs: list[Run]) -> None:
    with path.open("w", encoding="utf-8") as out:
        for pair in pairs:
            out.write(json.dumps({"part": "overhead", **pair.row}) + "\n")
        for run in runs:
            for a in run.replay.asked:
                out.write(json.dumps({"part": f"replay {run.name} {run.round}", "path": a.path, "offset": a.offset,
                                      "real_at": round(a.started - run.replay.real_start, 3),
                                      "budget_ms": round(a.budget * 1000), "latency_ms": round(a.latency * 1000, 1),
                                      "outcome": a.outcome, "accepted": a.accepted, "answer": a.answer}) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    typing_arguments(parser, max_requests=60, max_seconds=240.0)
    parser.add_argument("--asked", type=int, default=20, help="overhead: line starts, where the model is asked")
    parser.add_argument("--silent", type=int, default=60, help="overhead: cursors inside words (the gate's silence)")
    parser.add_argument("--rounds", type=int, default=1, help="replays through each; the order alternates (serve "
                        "then lsp, lsp then serve, ...)")
    parser.add_argument("--no-replay", action="store_true", help="the overhead only")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (its logs)")
    parser.add_argument("--log", type=Path, help="write each overhead pair and each replay request here (JSONL)")
    args = parser.parse_args()

    from codeasst import paths

    begun = time.perf_counter()
    models_cache = paths.cache_dir()
    work = Path(tempfile.mkdtemp(prefix="codeasst-lsp-"))
    repo, texts, regions = workspace(work, args.files, args.functions, args.lines)
    settings = [f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("CODEASST_") and k != "CODEASST_HOME"]
    command = " ".join([*settings, "python", Path(sys.argv[0]).as_posix(), *sys.argv[1:]])
    when = time.strftime("%Y-%m-%d %H:%M")
    before = machine()
    print(f"# lsp replay, model {args.model}, {when}; machine: {before}")
    print("files: " + "; ".join(f"{rel} ({', '.join(r.function for r in regions[rel])})" for rel in args.files))
    try:
        os.environ["CODEASST_HOME"] = str(make_home(work, "overhead", models_cache))
        token = secrets.token_hex(16)
        server, url = start_server(repo, args.model, token, work / "serve-overhead.log")
        lsp = None
        try:
            lsp = Lsp(repo, work / "lsp-overhead.log")
            pairs, opened = overhead(repo, Client(url, token), lsp, texts, regions, args)
            print("overhead: didOpen to the end of the LSP's warm-up: " + ", ".join(
                f"{path} {'not seen in 120' if s is None else f'{s:.1f}'} s" for path, s in opened.items()))
            print(f"overhead: codeasst lsp exited {lsp.close()}")
            for line in lsp.complaints():
                print(f"lsp stderr: {line}")
        finally:
            if lsp is not None and lsp.proc.poll() is None:
                lsp.proc.kill()
            server.terminate()
            server.wait(timeout=60)
        runs = []
        for round_ in range(1, 1 + (0 if args.no_replay else args.rounds)):
            order = ("serve", "lsp") if round_ % 2 else ("lsp", "serve")  # ABBA: drift in the machine evens out
            runs += [replay_once(name, round_, repo, texts, regions, args, work, models_cache) for name in order]
        for run in runs:
            for note in run.notes:
                print(f"{run.name}, round {run.round}: {note}")
        print(f"\n### `codeasst lsp` against `codeasst serve` (bench/lsp_replay.py)\n\n`{command}` ({when}; "
              f"model {args.model}; files {', '.join(f'`{f}`' for f in args.files)}; machine: {before}, after: "
              f"{machine()}; all took {time.perf_counter() - begun:.0f} s)\n")
        print("Overhead: each position asked directly (POST /v1/complete) and through the LSP "
              "(didChange, then textDocument/inlineCompletion), order alternating. Target: LSP − direct "
              "p50 ≤ 15 ms, p95 ≤ 40 ms.\n")
        print("\n".join(overhead_table(pairs)))
        if runs:
            print(f"\nThe typing replay (seed {args.seed}, --max-requests {args.max_requests}) through each, a "
                  "fresh server each. Happiness is the replay's own judgement; the event store's is what the "
                  "server recorded (for the LSP, the events the LSP sent). Target: the same within noise.\n")
            print("\n".join(replay_rows(runs)))
        if args.log:
            write_log(args.log, pairs, runs)
    finally:
        if args.keep:
            print(f"\nkept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
