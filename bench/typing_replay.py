"""Typing replay: real files typed into `codeasst serve` at a human pace, a suggestion asked at each pause.

    python bench/typing_replay.py [--model bundled|bundled-1.5b] [--max-requests 150] [--log FILE]
    python bench/typing_replay.py --offline FEATURES.jsonl --files PKG/MODULE.py ... [--gate]

Files. A few modules of installed packages nobody here wrote (`--files`, relative to
site-packages). In each, the last `--lines` lines of `--functions` functions (spread
through the file, each region starting at a statement) are blanked and typed back,
in file order. The file's package sits in a temporary git repository served by a `codeasst
serve` this script starts (`--port 0`, a bearer token, `CODEASST_HOME` in a
temporary directory whose `cache/models` links to the user's model cache, so the
bundled GGUF is not assembled again). The client opens each file first
(`POST /v1/open`, with the cursor where typing starts), as an editor does, and sends the
whole buffer with each request. Arriving at each later region is an InsertEnter: the
client posts `/v1/open` with the new cursor without waiting for it, as
`docs/editors/codeasst.lua` does, and the requests that follow overlap it as the clocks
say (below).

Typing model (seeded, `--seed`). One keystroke is one character, except Enter, which
also brings the next line's indentation (the editor indents). Within a word the
gaps are 0.5 to 1.3 times 1/`--cps`; at a word's edge (a space or punctuation on
either side) the user pauses 0.3 to 1.2 s with probability 0.35; after Enter, 0.8
to 2.5 s. Arriving at a region counts as an Enter. The client asks for a suggestion
once `--debounce-ms` pass without a keystroke (as llama.vim and Continue do), with
one client id, so the server ends an older request when a newer one comes.

Clock. The pauses are not slept: the simulated clock jumps from one request to the
next, and only the requests run in real time. Request i is sent at simulated time
s_i = keystroke + debounce; its latency L_i is measured for real. The suggestion is
shown only if it arrives before the next keystroke (L_i < gap - debounce): one that
arrives after the user typed on is never shown. If request i is still running when
request i+1 is due, i+1 is sent s_{i+1} - s_i after i, in real time, so the server
sees the overlap (and cancels i) as it would from an editor.

Accepted. A shown suggestion S is judged against the text the user is about to type
(the rest of the region, U): accepted in full when U starts with S; else accepted in
part when its first k >= 1 whole lines match U's next k whole lines (the first line
of S completes the cursor's line up to its end), with the accepted length being
those lines; else discarded. An accepted suggestion is taken with Tab in place of
the next keystroke: its text is not typed. A type-ahead answer that continues a
suggestion already shown is the same suggestion, not a new one. Each outcome is
sent to `POST /v1/events` (shown with its length, then accepted with the accepted
length, or discarded), so `codeasst stats` (run at the end) shows them too.

Happiness = Σ(AcceptedLength − 3·NumAccepts) − 0.05·ΣShowSuggestLength − 14·ΣNumDiscards
(the seed product's), in total, per request (silence costs nothing) and per shown
suggestion. A shown suggestion runs past the hole when it holds more lines than are left
to type, or a line of the code that follows the region; those are counted. The model's raw
speed is measured in the same run, before and after the replay (the server stopped).

`--offline FEATURES.jsonl`: no server and no clock. Each request goes to `complete_at` (what
the server calls) in this process, every answer counts as in time, and the confidence gate
is open (every candidate shown) unless `--gate`: one line per request the model answered,
with the gate's features and what the user took of the candidate, for bench/train_gate.py.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import platform
import random
import re
import secrets
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
import urllib.error
import urllib.request
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from search import model_speed  # bench/search.py, beside this script

SITE = Path(sysconfig.get_paths()["purelib"])
CLI = [sys.executable, "-m", "codeasst.cli"]
FILES = ["click/formatting.py", "rich/segment.py", "click/utils.py"]
CLIENT = "typing-replay"
WORD = re.compile(r"\w")


@dataclass(frozen=True)
class Region:
    """Characters [start, end) of a file that are blanked, then typed back."""

    function: str
    start: int  # at the first statement's first non-blank character
    end: int  # at the end of the function's last line (its newline stays in the buffer)


def pick_regions(text: str, functions: int, lines: int) -> list[Region]:
    """The last `lines` lines (from a statement's start) of `functions` functions spread through `text`."""
    offsets = [0]
    for line in text.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    candidates = []
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        starts = sorted({s.lineno for s in ast.walk(node) if isinstance(s, ast.stmt) and s is not node})
        first = next((n for n in starts if n >= node.end_lineno - lines + 1 and n > node.body[0].lineno), None)
        if first is None:
            continue
        line = text[offsets[first - 1]:offsets[first]]
        start = offsets[first - 1] + len(line) - len(line.lstrip(" \t"))
        end = offsets[node.end_lineno]
        end -= text[end - 1] == "\n"
        if len(text[start:end].strip()) >= 60:
            candidates.append(Region(node.name, start, end))
    candidates.sort(key=lambda r: r.start)
    chosen: list[Region] = []
    step = max(1, len(candidates) // max(1, functions))
    for region in candidates[step // 2::step]:
        if len(chosen) < functions and all(region.end < c.start or region.start > c.end for c in chosen):
            chosen.append(region)
    return sorted(chosen, key=lambda r: r.start)


def next_key(target: str, pos: int) -> int:
    """Where the keystroke at `pos` ends: Enter brings the next line's indentation with it."""
    if target[pos] != "\n":
        return pos + 1
    end = pos + 1
    while end < len(target) and target[end] in " \t":
        end += 1
    return end


@dataclass(frozen=True)
class Pace:
    cps: float = 7.0
    word_pause: tuple[float, float] = (0.3, 1.2)
    word_pause_chance: float = 0.35
    line_pause: tuple[float, float] = (0.8, 2.5)

    def gap(self, rng: random.Random, typed: str, following: str) -> float:
        """Seconds from the keystroke `typed` to the next one, which types `following`."""
        if typed.startswith("\n"):
            return rng.uniform(*self.line_pause)
        edge = not (WORD.match(typed[-1]) and following and WORD.match(following))
        if edge and rng.random() < self.word_pause_chance:
            return rng.uniform(*self.word_pause)
        return rng.uniform(0.5, 1.3) / self.cps


def accepted_length(suggestion: str, upcoming: str) -> int:
    """How much of `suggestion` the user takes, given the text they are about to type (module docstring)."""
    if upcoming.startswith(suggestion):
        return len(suggestion)
    lines = suggestion.split("\n")
    for k in range(len(lines) - 1, 0, -1):
        head = "\n".join(lines[:k])
        if head.strip() and upcoming.startswith(head + "\n"):
            return len(head)
    return 0


@dataclass
class Asked:
    """One request: when it was sent (simulated), what came back, and what became of it."""

    path: str
    offset: int
    sim_at: float
    budget: float  # seconds from sending to the next keystroke
    upcoming: str = ""  # what the user is about to type, from the cursor to the region's end
    following: str = ""  # the file's text after the region: code a suggestion must not run into
    started: float = 0.0  # real clock (perf_counter)
    latency: float = 0.0
    answer: dict = field(default_factory=dict)
    status: int = 0
    outcome: str = ""  # shown, late, silent, repeat (a type-ahead of a suggestion already shown)
    accepted: int = 0
    future: Future | None = field(default=None, repr=False, compare=False)

    @property
    def by(self) -> str:
        a = self.answer
        if a.get("cached") == "type-ahead":
            return "type-ahead"
        if a.get("reason", "").startswith("cancelled"):
            return "cancelled"
        if not a.get("prompt_tokens") and not a.get("generated_tokens"):
            return "gate"
        return "model"


class Client:
    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url, token
        # No proxy: the buffers and the token go to the server, never to an http_proxy.
        self.opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def post(self, route: str, payload: dict) -> tuple[int, dict]:
        request = urllib.request.Request(self.url + route, json.dumps(payload).encode(),
                                         {"Content-Type": "application/json",
                                          "Authorization": f"Bearer {self.token}"})
        try:
            with self.opener.open(request, timeout=300) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"{}")

    def ask(self, asked: Asked, text: str) -> Asked:
        prefix = text[:asked.offset]
        line = prefix.count("\n") + 1
        col = asked.offset - (prefix.rfind("\n") + 1) + 1
        asked.started = time.perf_counter()
        asked.status, asked.answer = self.post("/v1/complete", {"path": asked.path, "line": line, "col": col,
                                                                "text": text, "client": CLIENT})
        asked.latency = time.perf_counter() - asked.started
        return asked


class DryClient(Client):
    """No server: silence at once, to see the typing model's pauses and how many requests they make."""

    def __init__(self) -> None:
        super().__init__("", "")

    def post(self, route: str, payload: dict) -> tuple[int, dict]:
        return 200, {"text": "", "reason": "dry run", "id": "", "path": payload.get("path"), "tokens": 0,
                     "seconds": 0.0}


class InProcess(Client):
    """No server and no clock, for the gate's training data (`--offline`): each request goes to
    `complete_at`, the function the server calls, in this process, with the gate open (every
    candidate shown, so that each one gets its label), and every answer counts as in time."""

    def __init__(self, repo: Path, model: str, gate: bool = False) -> None:
        from dataclasses import replace

        from codeasst.services import build_services
        from codeasst.tasks.complete import options_from

        super().__init__("", "")
        self.services = build_services(repo, model=model)
        self.options = options_from(self.services)
        if not gate:
            self.options = replace(self.options, min_confidence=0.0, min_mean_logprob=-1e9)
        self.answers: dict[str, object] = {}  # suggestion id -> the Suggestion, features and all

    def post(self, route: str, payload: dict) -> tuple[int, dict]:
        if route != "/v1/complete":
            return 200, {"path": payload.get("path"), "tokens": 0, "seconds": 0.0}
        from codeasst.tasks.complete import complete_at

        found = complete_at(self.services, payload["text"], payload["line"], payload["col"], payload["path"],
                            self.options)
        suggestion = f"offline-{len(self.answers)}"
        self.answers[suggestion] = found
        return 200, {**found.to_json(), "id": suggestion}


class Replay:
    def __init__(self, client: Client, pace: Pace, debounce: float, max_requests: int, seed: int,
                 max_seconds: float = float("inf"), timed: bool = True) -> None:
        self.timed = timed
        self.client, self.pace, self.debounce, self.max_requests = client, pace, debounce, max_requests
        self.max_seconds = max_seconds
        self.rng = random.Random(seed)
        self.pool = ThreadPoolExecutor(max_workers=4)
        self.asked: list[Asked] = []
        self.shown_ids: set[str] = set()
        self.events: list[tuple[str, int]] = []  # (kind, length)
        self.opens: list[dict] = []
        self.warmups: list[Asked] = []  # InsertEnter's /v1/open calls; each future gives its answer
        self.last: Asked | None = None  # the latest request or warm-up sent, to overlap the next one with
        self.clock = 0.0
        self.real_start = time.perf_counter()
        self.typed_chars = self.tab_chars = self.regions = 0

    def full(self) -> bool:
        return len(self.asked) >= self.max_requests or time.perf_counter() - self.real_start > self.max_seconds

    def event(self, kind: str, suggestion: str, shown: int = 0, accepted: int = 0) -> None:
        self.events.append((kind, accepted if kind == "accepted" else shown))
        status, body = self.client.post("/v1/events", {"kind": kind, "id": suggestion, "shown_length": shown,
                                                       "accepted_length": accepted})
        if status != 200:
            raise RuntimeError(f"/v1/events answered {status}: {body}")

    def send(self, path: str, text: str, offset: int, budget: float, upcoming: str, following: str = "") -> Asked:
        """Send a request now (simulated); wait for it as long as the user would, in real time."""
        asked = Asked(path, offset, self.clock + self.debounce, budget, upcoming, following[:2000])
        self.overlap(asked.sim_at)
        self.asked.append(asked)
        self.last = asked
        asked.future = self.pool.submit(self.client.ask, asked, text)
        try:
            asked.future.result(timeout=budget if self.timed else None)
        except TimeoutError:
            pass
        return asked

    def overlap(self, sim_at: float) -> None:
        """An earlier request or warm-up still running: wait until `sim_at` comes in real time."""
        last = self.last
        if last is not None and not last.future.done():
            lag = (sim_at - last.sim_at) - (time.perf_counter() - last.started)
            if lag > 0:
                time.sleep(lag)

    def warm(self, path: str, text: str, offset: int) -> None:
        """InsertEnter at `offset`: `/v1/open` with the cursor, not waited for."""
        self.overlap(self.clock)
        prefix = text[:offset]
        payload = {"path": path, "text": text, "line": prefix.count("\n") + 1,
                   "col": offset - (prefix.rfind("\n") + 1) + 1, "client": CLIENT}
        opened = Asked(path, offset, self.clock, 0.0, started=time.perf_counter())

        def post() -> dict:
            status, body = self.client.post("/v1/open", payload)
            if status != 200:
                raise RuntimeError(f"/v1/open answered {status}: {body}")
            return body

        opened.future = self.pool.submit(post)
        self.warmups.append(opened)
        self.last = opened

    def judge(self, asked: Asked, upcoming: str) -> int:
        """Characters accepted (Tab) from the answer to `asked`, with its events sent; 0 if none."""
        if not self.timed:
            asked.future.result()
        elif not asked.future.done() or asked.latency >= asked.budget:
            asked.outcome = "late"
            return 0
        if asked.status != 200:
            raise RuntimeError(f"/v1/complete answered {asked.status}: {asked.answer}")
        text, suggestion = asked.answer.get("text", ""), asked.answer.get("id", "")
        if not text:
            asked.outcome = "silent"
            return 0
        if suggestion in self.shown_ids:
            asked.outcome = "repeat"
            return 0
        self.shown_ids.add(suggestion)
        asked.outcome = "shown"
        self.event("shown", suggestion, shown=len(text))
        asked.accepted = accepted_length(text, upcoming)
        if asked.accepted:
            self.event("accepted", suggestion, accepted=asked.accepted)
        else:
            self.event("discarded", suggestion)
        return asked.accepted

    def region(self, path: str, original: str, region: Region, entered: bool = False) -> None:
        """Type `region` back; `entered`: the cursor came here from elsewhere in the file."""
        self.regions += 1
        target = original[region.start:region.end]
        before, after = original[:region.start], original[region.end:]
        pos, gap = 0, self.pace.gap(self.rng, "\n", target[:1])  # arriving at the region is an Enter
        if entered:
            self.warm(path, before + after, len(before))
        while pos < len(target):
            pending = None
            if gap > self.debounce and not self.full():
                text = before + target[:pos] + after
                pending = self.send(path, text, len(before) + pos, gap - self.debounce, target[pos:], after)
            self.clock += gap
            took = self.judge(pending, target[pos:]) if pending else 0
            if took:  # Tab in place of the next keystroke
                key, pos = target[pos:pos + took], pos + took
                self.tab_chars += took
            else:
                end = next_key(target, pos)
                key, pos = target[pos:end], end
                self.typed_chars += len(key)
            if pos < len(target):
                gap = self.pace.gap(self.rng, key, target[pos])

    def file(self, path: str, original: str, regions: list[Region]) -> None:
        first = regions[0]
        before = original[:first.start]  # the editor opens the file with the cursor where typing starts
        status, body = self.client.post("/v1/open", {"path": path, "text": before + original[first.end:],
                                                     "line": before.count("\n") + 1,
                                                     "col": first.start - before.rfind("\n"), "client": CLIENT})
        if status != 200:
            raise RuntimeError(f"/v1/open answered {status}: {body}")
        self.opens.append(body)
        for number, region in enumerate(regions):
            if self.full():
                return
            self.region(path, original, region, entered=number > 0)

    def finish(self) -> None:
        for opened in self.warmups:
            opened.future.result()
        for asked in self.asked:
            asked.future.result()
            if asked.status != 200:
                raise RuntimeError(f"/v1/complete answered {asked.status}: {asked.answer}")
        self.pool.shutdown()


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")


def latency_line(label: str, asked: list[Asked]) -> str:
    ms = [a.latency * 1000 for a in asked]
    if not ms:
        return f"{label}: none"
    return f"{label}: p50 {pct(ms, 0.5):.0f} ms, p95 {pct(ms, 0.95):.0f} ms, max {max(ms):.0f} ms ({len(ms)})"


def runs_past(asked: Asked) -> bool:
    """Whether the suggestion goes on past the hole: more lines than are left to type, or a line of the
    code that already follows the region (whitespace aside)."""
    text = asked.answer.get("text", "")
    lines = [" ".join(line.split()) for line in text.split("\n")]
    if len(lines) > asked.upcoming.count("\n") + 1:
        return True
    after = {" ".join(line.split()) for line in asked.following.split("\n")[:40] if line.strip()}
    return any(line and line in after for line in lines[1:])


def happiness(events: list[tuple[str, int]]) -> tuple[float, int]:
    accepted = [n for kind, n in events if kind == "accepted"]
    shown = [n for kind, n in events if kind == "shown"]
    discards = sum(1 for kind, _ in events if kind == "discarded")
    total = sum(n - 3 for n in accepted) - 0.05 * sum(shown) - 14 * discards
    return total, len(shown)


def untimed(asked: list[Asked]) -> tuple[int, int, float]:
    """(shown, accepted, Happiness) had every answer been shown however late it came: the
    suggestions' quality apart from their speed (a type-ahead of one already counted is not new)."""
    seen: set[str] = set()
    events: list[tuple[str, int]] = []
    for a in asked:
        text, suggestion = a.answer.get("text", ""), a.answer.get("id", "")
        if a.status != 200 or not text or suggestion in seen:
            continue
        seen.add(suggestion)
        taken = accepted_length(text, a.upcoming)
        events += [("shown", len(text)), ("accepted", taken) if taken else ("discarded", 0)]
    total, shown = happiness(events)
    return shown, sum(1 for kind, _ in events if kind == "accepted"), total


def start_server(repo: Path, model: str, token: str, log: Path) -> tuple[subprocess.Popen, str]:
    from codeasst.wire import discovery

    with log.open("w") as err:
        proc = subprocess.Popen([*CLI, "serve", "--port", "0", "--model", model, "--token", token], cwd=repo,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.time() + 300
    while (found := discovery.find(repo.resolve())) is None:
        if time.time() > deadline or proc.poll() is not None:
            proc.kill()
            raise RuntimeError(f"codeasst serve did not start:\n{log.read_text()[-2000:]}")
        time.sleep(0.3)
    return proc, found.url


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.machine()) if Path("/proc/cpuinfo").exists() else ""
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"{os.cpu_count()} cores ({cpu}), load average {load}"


def report(replay: Replay, regions: dict[str, list[Region]], elapsed: float) -> None:
    asked = replay.asked
    by = {kind: [a for a in asked if a.by == kind] for kind in ("gate", "type-ahead", "model", "cancelled")}
    outcomes = {kind: sum(1 for a in asked if a.outcome == kind) for kind in ("shown", "late", "silent", "repeat")}
    accepts = [a for a in asked if a.accepted]
    total, shown = happiness(replay.events)
    typed = replay.typed_chars + replay.tab_chars
    print(f"regions typed: {replay.regions} of {sum(len(r) for r in regions.values())} in {len(regions)} files"
          f"{' (stopped early: --max-requests or --max-seconds)' if replay.full() else ''}; "
          f"{typed} characters, {replay.tab_chars} of them by Tab ({replay.tab_chars / max(1, typed):.1%}); "
          f"simulated typing {replay.clock:.0f} s ({replay.typed_chars / max(replay.clock, 1e-9):.1f} chars/s), "
          f"replay {elapsed:.0f} s real")
    print("opened: " + ", ".join(f"{o['path']} {o['tokens']} tokens in {o['seconds']:.2f} s" for o in replay.opens))
    entered = [opened.future.result() for opened in replay.warmups]
    if entered:
        print(f"warmed at InsertEnter: {len(entered)} times, tokens p50 "
              f"{pct([o['tokens'] for o in entered], 0.5):.0f}, seconds p50 {pct([o['seconds'] for o in entered], 0.5):.2f}"
              f" / max {max(o['seconds'] for o in entered):.2f}")
    print(f"requests {len(asked)}: answered by the gate {len(by['gate'])}, the type-ahead cache "
          f"{len(by['type-ahead'])}, the model {len(by['model'])}, cancelled by a newer request "
          f"{len(by['cancelled'])}")
    print(f"outcomes: shown {outcomes['shown']}, late (after the next keystroke, never shown) {outcomes['late']}, "
          f"silent {outcomes['silent']}, type-ahead of a shown one {outcomes['repeat']}")
    print(f"accepted {len(accepts)} of {shown} shown (accept rate {len(accepts) / max(1, shown):.1%}; "
          f"{sum(1 for a in accepts if a.accepted == len(a.answer['text']))} in full), "
          f"{sum(a.accepted for a in accepts)} characters")
    print(f"Happiness {total:.1f} in all, {total / max(1, len(asked)):.2f} per request, "
          f"{total / max(1, shown):.2f} per shown suggestion; shown for {shown / max(1, len(asked)):.1%} of requests")
    past = [a for a in asked if a.outcome == "shown" and runs_past(a)]
    print(f"shown suggestions that run past the hole (more lines than are left to type, or a line of the code "
          f"after it): {len(past)}")
    u_shown, u_accepted, u_total = untimed(asked)
    print(f"had every answer been shown however late: {u_shown} shown, {u_accepted} accepted "
          f"({u_accepted / max(1, u_shown):.1%}), Happiness {u_total:.1f}, {u_total / max(1, u_shown):.2f} per shown")
    print(latency_line("latency, all requests", asked))
    print(latency_line("latency, answered by the model", by["model"]))
    server = [a.answer["latency_ms"] / 1000 for a in by["model"]]
    if server:
        print(f"time in the model (the server's own latency_ms, no queueing): p50 {pct(server, 0.5) * 1000:.0f} ms, "
              f"p95 {pct(server, 0.95) * 1000:.0f} ms")
    in_time = sum(1 for a in by["model"] if a.latency < a.budget)
    print(f"model answers in time to be shown: {in_time} of {len(by['model'])}")
    if by["model"]:
        prompt = [a.answer["prompt_tokens"] for a in by["model"]]
        new = [a.answer["prompt_tokens"] - a.answer["cached_tokens"] for a in by["model"]]
        gen = [a.answer["generated_tokens"] for a in by["model"]]
        cold = sum(1 for a in by["model"] if a.answer["cached_tokens"] < a.answer["prompt_tokens"] / 2)
        print(f"model requests: prompt tokens p50 {pct(prompt, 0.5)}, not cached p50 {pct(new, 0.5)} "
              f"p95 {pct(new, 0.95)}, generated p50 {pct(gen, 0.5)}; {cold} with under half the prompt cached")


def offline(args: argparse.Namespace, repo: Path, texts: dict[str, str], regions: dict[str, list[Region]],
            pace: Pace, debounce: float) -> None:
    """The replay through InProcess: one line per request the model answered, with its candidate ("" for
    silence) and what the user would have taken of it."""
    client = InProcess(repo, args.model, gate=args.gate)
    replay = Replay(client, pace, debounce, args.max_requests, args.seed, timed=False)
    for rel in args.files:
        if regions[rel] and not replay.full():
            replay.file(rel, texts[rel], regions[rel])
    replay.finish()
    report(replay, regions, 0.0)
    written = 0
    with args.offline.open("a", encoding="utf-8") as out:
        for asked in replay.asked:
            found = client.answers.get(asked.answer.get("id", ""))
            if found is None or not found.features:
                continue  # the model was not asked (the gate before it, or a type-ahead)
            taken = accepted_length(found.candidate, asked.upcoming) if found.candidate else 0
            out.write(json.dumps({"source": f"replay:{asked.path}", "model": client.services.complete_llm.name,
                                  "features": found.features, "candidate": found.candidate, "accepted": taken,
                                  "upcoming": asked.upcoming[:200]}) + "\n")
            written += 1
    print(f"offline: {len(replay.asked)} requests, {written} answered by the model written to {args.offline}")


def make_home(work: Path, name: str, models_cache: Path) -> Path:
    """A CODEASST_HOME whose model and embedder caches are the user's (nothing assembled again)."""
    home = work / (f"home-{name}" if name else "home")
    (home / "cache").mkdir(parents=True)
    for sub in ("models", "embedders"):
        (models_cache / sub).mkdir(parents=True, exist_ok=True)
        (home / "cache" / sub).symlink_to(models_cache / sub)
    return home


def workspace(work: Path, files: list[str], functions: int, lines: int) -> tuple[Path, dict, dict]:
    """A git repository holding each file's whole package (what the file imports is there); the texts
    and regions."""
    repo = work / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    texts, regions = {}, {}
    for rel in files:
        top = rel.split("/")[0]
        if (SITE / top).is_file():
            shutil.copyfile(SITE / top, repo / top)
        elif not (repo / top).exists():
            shutil.copytree(SITE / top, repo / top, ignore=shutil.ignore_patterns("__pycache__"))
        texts[rel] = (repo / rel).read_text(encoding="utf-8")
        regions[rel] = pick_regions(texts[rel], functions, lines)
    return repo, texts, regions


def typing_arguments(parser: argparse.ArgumentParser, *, max_requests: int, max_seconds: float) -> None:
    """The model, the files and the typing model's options, shared with bench/lsp_replay.py."""
    parser.add_argument("--model", default="bundled", help="bundled (0.5B) or bundled-1.5b")
    parser.add_argument("--files", nargs="+", default=FILES, help="modules, relative to site-packages")
    parser.add_argument("--functions", type=int, default=3, help="functions replayed per file")
    parser.add_argument("--lines", type=int, default=5, help="last lines of each function blanked and typed")
    parser.add_argument("--cps", type=float, default=7.0, help="typing pace within a word, characters a second")
    parser.add_argument("--debounce-ms", type=float, default=200.0)
    parser.add_argument("--max-requests", type=int, default=max_requests, help="requests of the replay")
    parser.add_argument("--max-seconds", type=float, default=max_seconds,
                        help="send no new request after this long (real time; the model speed comes on top)")
    parser.add_argument("--seed", type=int, default=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    typing_arguments(parser, max_requests=150, max_seconds=480.0)
    parser.add_argument("--log", type=Path, help="write every request, answer and outcome here (JSONL)")
    parser.add_argument("--dry-run", action="store_true", help="no server and no model: the typing model alone")
    parser.add_argument("--offline", type=Path, metavar="FEATURES.jsonl",
                        help="no server and no clock: complete_at in this process with the gate open; write each "
                             "candidate's gate features and whether the user took it (bench/train_gate.py reads it)")
    parser.add_argument("--gate", action="store_true",
                        help="with --offline: keep complete's gate, to compare settings by Happiness untimed")
    args = parser.parse_args()

    from codeasst import paths

    work = Path(tempfile.mkdtemp(prefix="codeasst-typing-"))
    os.environ["CODEASST_HOME"] = str(make_home(work, "", paths.cache_dir()))
    repo, texts, regions = workspace(work, args.files, args.functions, args.lines)

    print(f"# typing replay, model {args.model}, {time.strftime('%Y-%m-%d %H:%M')}; machine: {machine()}")
    listed = [f"{rel} ({', '.join(r.function for r in regions[rel])})" for rel in args.files]
    print(f"files: {'; '.join(listed)}")
    pace, debounce = Pace(cps=args.cps), args.debounce_ms / 1000
    if args.dry_run:
        replay = Replay(DryClient(), pace, debounce, args.max_requests, args.seed)
        for rel in args.files:
            if regions[rel] and not replay.full():
                replay.file(rel, texts[rel], regions[rel])
        replay.finish()
        report(replay, regions, 0.0)
        shutil.rmtree(work, ignore_errors=True)
        return
    if args.offline:
        offline(args, repo, texts, regions, pace, debounce)
        shutil.rmtree(work, ignore_errors=True)
        return
    print(f"model before the replay: {model_speed(repo, args.model)}")
    token = secrets.token_hex(16)
    server, url = start_server(repo, args.model, token, work / "serve.log")
    replay = Replay(Client(url, token), pace, debounce, args.max_requests, args.seed, args.max_seconds)
    started = time.perf_counter()
    try:
        for rel in args.files:
            if regions[rel] and not replay.full():
                replay.file(rel, texts[rel], regions[rel])
        replay.finish()
    finally:
        server.terminate()
        server.wait(timeout=60)
    elapsed = time.perf_counter() - started
    report(replay, regions, elapsed)
    stats = subprocess.run([*CLI, "stats", "--json"], cwd=repo, capture_output=True, text=True, check=True)
    for day in json.loads(stats.stdout):
        print(f"codeasst stats: {day['variant']} shown {day['shown']}, accepted {day['accepted']}, discarded "
              f"{day['discarded']}, accept rate {day['accept_rate']:.1%}, Happiness {day['happiness']:.2f} per shown")
    print(f"model after the replay: {model_speed(repo, args.model)}; machine now: {machine()}")
    if args.log:
        with args.log.open("w") as out:
            for a in replay.asked:
                out.write(json.dumps({"path": a.path, "offset": a.offset, "upcoming": a.upcoming[:80],
                                      "sim_at": round(a.sim_at, 3),
                                      "real_at": round(a.started - replay.real_start, 3),
                                      "budget_ms": round(a.budget * 1000), "latency_ms": round(a.latency * 1000, 1),
                                      "by": a.by, "outcome": a.outcome, "accepted": a.accepted,
                                      "answer": a.answer}) + "\n")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
