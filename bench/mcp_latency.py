"""Tool latency of `codeasst mcp`, as an agent sees it: the SDK's own client over stdio, through a warm
`codeasst serve` and alone (no server), in one run.

    python bench/mcp_latency.py [--repo DIR] [--rounds N] [--json PATH]

The repository (default: this one) is indexed first (`codeasst index`). Then, for each way:
- through a server: `codeasst serve --port 0` starts and is warmed by one search; `codeasst mcp` joins it;
- alone: no server runs; `codeasst mcp` works in its own process.
In each, one session calls `search` (no model: the agent writes the query), `definition` and
`references` over a fixed list of queries and names, `--rounds` times, after one warm-up call of each
(a first call loads the embedder and opens the store, alone or in the server); p50 and p90 per tool are
printed and, with --json, written. Each time is the client's: from the call to its result.

Targets (issue 44): through a warm server, search p50 <= 300 ms, definition and references p50 <= 100 ms;
alone, references <= 1 s.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

CLI = [sys.executable, "-m", "codeasst.cli"]
QUERIES = ["where are gitignore rules applied to files", "how is the completion gate threshold chosen",
           "bearer token check for requests", "resume an index run that was killed", "flake8 config trust",
           "reciprocal rank fusion of rankings", "what the chat does on escape", "path leads outside the repository"]
NAMES = ["may_read", "Indexer.run", "IgnoreRules", "search_reply", "Local.ask", "fuse", "place_lines", "Scope.of"]
TARGETS = {"served": {"search": 0.300, "definition": 0.100, "references": 0.100},
           "alone": {"references": 1.0, "references, first call of a new process": 1.0}}


def calls(rounds: int) -> list[tuple[str, dict]]:
    one = [("search", {"query": q}) for q in QUERIES] + [("definition", {"name": n}) for n in NAMES] + [
        ("references", {"name": n}) for n in NAMES]
    return one * rounds


async def session(repo: Path, rounds: int) -> tuple[dict[str, list[float]], str]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "codeasst.cli", "mcp", "-C", str(repo)],
                                   env=dict(os.environ))
    times: dict[str, list[float]] = {"search": [], "definition": [], "references": []}
    async with Client(params, read_timeout_seconds=600) as client:
        where = (await client.call_tool("status", {})).structured_content["where"]
        for name, args in (("search", {"query": "warm up"}), ("definition", {"name": "main"}),
                           ("references", {"name": "main"})):
            await client.call_tool(name, args)
        for name, args in calls(rounds):
            started = time.perf_counter()
            result = await client.call_tool(name, args)
            times[name].append(time.perf_counter() - started)
            if result.is_error:
                raise SystemExit(f"{name} {args}: {result.content[0].text}")
    return times, where


async def first_references(repo: Path) -> float:
    """Seconds from starting `codeasst mcp` to its first `references` result: the process, the handshake,
    the index checked, the graph read."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "codeasst.cli", "mcp", "-C", str(repo)],
                                   env=dict(os.environ))
    started = time.perf_counter()
    async with Client(params, read_timeout_seconds=600) as client:
        result = await client.call_tool("references", {"name": "Indexer.run"})
        seconds = time.perf_counter() - started
        assert not result.is_error
    return seconds


def summary(times: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    return {name: {"n": len(t), "p50_ms": round(1000 * statistics.median(t), 1),
                   "p90_ms": round(1000 * statistics.quantiles(t, n=10)[-1], 1)} for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    repo = args.repo.resolve()
    subprocess.run([*CLI, "index", "-C", str(repo)], check=True, capture_output=True)
    results: dict[str, dict] = {}
    server = subprocess.Popen([*CLI, "serve", "--port", "0", "-C", str(repo)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            info = subprocess.run([*CLI, "serve", "--info", "--json", "-C", str(repo)], check=False,
                                  capture_output=True, text=True)
            if info.returncode == 0:
                break
            time.sleep(1)
        subprocess.run([*CLI, "search", "warm up", "--no-llm", "-C", str(repo)], check=True, capture_output=True)
        times, where = anyio.run(session, repo, args.rounds)
        assert where.startswith("http://127.0.0.1"), where
        results["served"] = summary(times)
    finally:
        server.terminate()
        server.wait(timeout=60)
    times, where = anyio.run(session, repo, args.rounds)
    assert where == "here", where
    results["alone"] = summary(times)
    results["alone"]["references, first call of a new process"] = {
        "n": 3, "p50_ms": round(1000 * statistics.median(anyio.run(first_references, repo) for _ in range(3)), 1),
        "p90_ms": 0.0}
    report = {"repo": str(repo), "machine": f"{platform.machine()}, {os.cpu_count()} cores", "results": results,
              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    for way, tools in results.items():
        for name, figures in tools.items():
            target = TARGETS[way].get(name)
            verdict = "" if target is None else (" PASS" if figures["p50_ms"] <= 1000 * target else " FAIL") + \
                f" (target p50 <= {1000 * target:.0f} ms)"
            print(f"{way:7} {name:11} n={figures['n']:3}  p50 {figures['p50_ms']:7.1f} ms  "
                  f"p90 {figures['p90_ms']:7.1f} ms{verdict}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
