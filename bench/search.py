"""Latency of `codeasst search` and `codeasst ask`, as a user runs them: one CLI process per query.

    python bench/search.py [--packages rich click] [--queries 10] [--work DIR]

The repository is the installed source of the given packages (rich and click
together are about 50k lines). It is indexed first (`--work DIR` keeps it, and
its index, for the next run); every measured command then finds the index up
to date. Search is timed from process start to exit; ask from process start to
the first byte of the answer on stdout, with and without the full query analysis. The same queries
then run in one process that loads the models once, as a server or the TUI
would. Last, a `codeasst serve` is started for the repository and the same one-shot
commands run again: they find it and send their request to it. The baseline in the same
run is `search --no-llm` (dense and exact search, no query analysis).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

SITE = Path(sysconfig.get_paths()["purelib"])
CLI = [sys.executable, "-m", "codeasst.cli"]
QUESTIONS = Path(__file__).resolve().parent.parent / "tests" / "data" / "retrieval" / "questions.jsonl"


def wall(args: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run([*CLI, *args], cwd=cwd, check=True, capture_output=True, stdin=subprocess.DEVNULL)
    return time.perf_counter() - started


def first_byte(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> float:
    started = time.perf_counter()
    proc = subprocess.Popen([*CLI, *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})
    proc.stdout.read(1)
    elapsed = time.perf_counter() - started
    proc.stdout.read()
    proc.wait()
    return elapsed


def model_speed(repo: Path, model: str | None = None) -> str:
    """The model's raw speed now: this machine's speed drifts by 20% over an hour.
    (bench/typing_replay.py measures with this too.)"""
    from codeasst.backends.base import GenerationParams
    from codeasst.services import build_services

    llm = build_services(repo, model=model).llm
    llm.load()
    # A new first line each call: the KV cache of an earlier call must not answer for this one.
    prompt = f"# {time.time_ns()}\n" + " ".join(f"item_{i} = compute({i})" for i in range(100))
    tokens = llm.count_tokens(prompt)
    started = time.perf_counter()
    pieces = llm.generate(prompt, GenerationParams(max_tokens=129))
    next(pieces)
    first = time.perf_counter()
    generated = 1 + sum(1 for _ in pieces)
    done = time.perf_counter()
    return (f"prompt {tokens / (first - started):.0f} tok/s ({tokens} tokens), "
            f"generation {(generated - 1) / (done - first):.1f} tok/s")


def in_one_process(repo: Path, questions: list[str]) -> tuple[list[float], list[float]]:
    """The same queries in one process that loaded the models once, as a long-lived
    server or the TUI holds them: what is left once start-up and loading are paid."""
    from codeasst.answer.ask import ask
    from codeasst.services import build_services
    from codeasst.tasks.search import find as search

    services = build_services(repo)
    search(services, "warm up the models")
    searches, firsts = [], []
    for q in questions:
        started = time.perf_counter()
        search(services, q)
        searches.append(time.perf_counter() - started)
        started = time.perf_counter()
        _, stream = ask(services, q)
        next(piece for piece in stream if piece)  # an empty piece is a turn, not text (answer.ask)
        firsts.append(time.perf_counter() - started)
        stream.close()
    from codeasst.index import owner

    owner.release_all()  # the server started next waits for every process that holds the store
    return searches, firsts


def through_server(repo: Path, questions: list[str]) -> tuple[list[float], list[float], list[float]]:
    """One-shot `search`, `search --no-llm` and `ask` again, with `codeasst serve` running for the repository."""
    from codeasst.wire import discovery

    server = subprocess.Popen([*CLI, "serve", "--port", "0"], cwd=repo, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        deadline = time.time() + 300
        while discovery.find(repo.resolve()) is None:
            if time.time() > deadline or server.poll() is not None:
                raise RuntimeError("codeasst serve did not start")
            time.sleep(0.5)
        wall(["search", "warm up the server's models"], repo)
        searches = [wall(["search", q], repo) for q in questions]
        no_llm = [wall(["search", q, "--no-llm"], repo) for q in questions]
        firsts = [first_byte(["ask", q], repo) for q in questions]
        return searches, no_llm, firsts
    finally:
        server.terminate()
        server.wait(timeout=60)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", nargs="+", default=["rich", "click"])
    parser.add_argument("--queries", type=int, default=10)
    parser.add_argument("--work", type=Path, help="Keep the repository and its index here, for the next run.")
    args = parser.parse_args()

    work = args.work or Path(tempfile.mkdtemp(prefix="codeasst-bench-"))
    os.environ["CODEASST_HOME"] = str(work / "home")
    repo = work / "repo"
    if not repo.is_dir():
        repo.mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        for name in args.packages:
            shutil.copytree(SITE / name, repo / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    lines = sum(len(p.read_text(errors="replace").splitlines()) for p in repo.rglob("*.py"))
    index_s = wall(["index", "."], repo)
    rows = [json.loads(line) for line in QUESTIONS.read_text().splitlines() if line.strip()]
    questions = [r["question"] for r in rows if r["repo"] in args.packages][: args.queries]

    print(f"# machine: {platform.machine()}, {os.cpu_count()} cores; repo: {', '.join(args.packages)} "
          f"({lines:,} lines of Python); index (cold unless --work was reused) {index_s:.0f} s")
    wall(["search", "warm up the page cache", "--no-llm"], repo)
    baseline = [wall(["search", q, "--no-llm"], repo) for q in questions]
    full = [wall(["search", q], repo) for q in questions]
    ttft = [first_byte(["ask", q], repo) for q in questions]
    ttft_full = [first_byte(["ask", q], repo, {"CODEASST_ASK__QUERY_ANALYSIS": "true"}) for q in questions]
    warm_search, warm_ttft = in_one_process(repo, questions)
    served_search, served_no_llm, served_ttft = through_server(repo, questions)
    print(f"model now: {model_speed(repo)}")
    for label, values in (("search --no-llm (baseline)", baseline), ("search", full),
                          ("ask, time to first answer byte", ttft),
                          ("ask with full query analysis, time to first answer byte", ttft_full),
                          ("search, in one warm process", warm_search),
                          ("ask, in one warm process, time to first token", warm_ttft),
                          ("search --no-llm, one-shot through a running serve", served_no_llm),
                          ("search, one-shot through a running serve", served_search),
                          ("ask, one-shot through a running serve, time to first answer byte", served_ttft)):
        print(f"{label}: p50 {statistics.median(values):.2f} s, p90 {pct(values, 0.9):.2f} s, "
              f"max {max(values):.2f} s over {len(values)} queries")
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
