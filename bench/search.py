"""Latency of `codeasst search` and `codeasst ask`, as a user runs them: one CLI process per query.

    python bench/search.py [--packages rich click] [--queries 10]

The repository is the installed source of the given packages (rich and click
together are about 50k lines). It is indexed first; every measured command
then finds the index up to date. Search is timed from process start to exit;
ask from process start to the first byte of the answer on stdout. The baseline
in the same run is `search --no-llm` (dense and exact search, no query analysis).
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


def first_byte(args: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    proc = subprocess.Popen([*CLI, *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL)
    proc.stdout.read(1)
    elapsed = time.perf_counter() - started
    proc.stdout.read()
    proc.wait()
    return elapsed


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", nargs="+", default=["rich", "click"])
    parser.add_argument("--queries", type=int, default=10)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="codeasst-bench-"))
    os.environ["CODEASST_HOME"] = str(work / "home")
    repo = work / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    for name in args.packages:
        shutil.copytree(SITE / name, repo / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    lines = sum(len(p.read_text(errors="replace").splitlines()) for p in repo.rglob("*.py"))
    index_s = wall(["index", "."], repo)
    rows = [json.loads(line) for line in QUESTIONS.read_text().splitlines() if line.strip()]
    questions = [r["question"] for r in rows if r["repo"] in args.packages][: args.queries]

    print(f"# machine: {platform.machine()}, {os.cpu_count()} cores; repo: {', '.join(args.packages)} "
          f"({lines:,} lines of Python); cold index {index_s:.0f} s")
    wall(["search", "warm up the page cache", "--no-llm"], repo)
    baseline = [wall(["search", q, "--no-llm"], repo) for q in questions]
    full = [wall(["search", q], repo) for q in questions]
    ttft = [first_byte(["ask", q], repo) for q in questions]
    for label, values in (("search --no-llm (baseline)", baseline), ("search", full),
                          ("ask, time to first answer byte", ttft)):
        print(f"{label}: p50 {statistics.median(values):.2f} s, p90 {pct(values, 0.9):.2f} s, "
              f"max {max(values):.2f} s over {len(values)} queries")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
