"""Seconds to a complete index, peak memory and one-shot `search` latency, per embedder setup, on one
tree, side by side in one run (issue 45).

    python bench/embedders.py TREE [--configs static,default,minilm] [--queries 5] [--rounds 3]

Setups: `static` (embedder.model = static: the static model alone), `default` (MiniLM with the static
first phase), `minilm` (MiniLM alone: embedder.first_phase = none, the default before issue 45).
For each, in a fresh CODEASST_HOME (models and the ONNX export linked from the user's cache, as the
tests do): `codeasst index --json` under /usr/bin/time (wall seconds; the summary's lexical, first
phase and embedding seconds; peak RSS), then each query as its own `codeasst search --no-llm -k 5`
process, `--rounds` times, setups alternating per query so that load falls on all alike.
TREE is used as it is (a git checkout or a plain folder); nothing in it is written.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUERIES = [
    "where are .gitignore rules applied to files?",
    "how does the index decide which chunks get vectors",
    "retry a request when the server is busy",
    "where is the config file read",
    "inline completion handler for the editor",
]


def fresh_home(base: Path, name: str) -> Path:
    home = base / name
    cache = home / "cache"
    cache.mkdir(parents=True)
    user_cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "codeasst"
    for part in ("models", "embedders"):
        (user_cache / part).mkdir(parents=True, exist_ok=True)
        (cache / part).symlink_to(user_cache / part)
    return home


CONFIGS = {
    "static": {"CODEASST_EMBEDDER__MODEL": "static"},
    "default": {},
    "minilm": {"CODEASST_EMBEDDER__FIRST_PHASE": "none"},
}


def cli(args: list[str], home: Path, config: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODEASST_")}
    env.update(CODEASST_HOME=str(home), **CONFIGS[config])
    return subprocess.run(["/usr/bin/time", "-v", sys.executable, "-m", "codeasst.cli", *args], env=env,
                          capture_output=True, text=True, check=False)


def peak_mb(stderr: str) -> float:
    found = re.search(r"Maximum resident set size \(kbytes\): (\d+)", stderr)
    return round(int(found.group(1)) / 1024, 1) if found else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("--configs", default="static,default,minilm")
    parser.add_argument("--queries", type=int, default=len(QUERIES))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--query", action="append", help="a query of your own (repeatable); replaces the default")
    args = parser.parse_args()
    embedders = args.configs.split(",")
    queries = (args.query or QUERIES)[: args.queries]
    base = Path(tempfile.mkdtemp(prefix="bench-embedders-"))
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.node()}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.2f}; tree {args.tree}")
    homes = {name: fresh_home(base, name) for name in embedders}
    rows: dict[str, dict] = {}
    try:
        for name in embedders:
            started = time.perf_counter()
            proc = cli(["index", str(args.tree), "--json"], homes[name], name)
            wall = time.perf_counter() - started
            if proc.returncode != 0:
                sys.exit(f"{name}: index failed (rc {proc.returncode}): {proc.stderr[-2000:]}")
            summary = json.loads(proc.stdout)
            rows[name] = {"index_s": round(wall, 1), "lexical_s": summary["lexical_s"], "embed_s": summary["embed_s"],
                          "first_s": summary["first_embed_s"],
                          "embedded": summary["embedded"] + summary["final_embedded"], "chunks": summary["chunks"],
                          "index_peak_mb": peak_mb(proc.stderr), "search_s": [], "search_peak_mb": []}
            print(f"{name}: index {wall:.1f} s ({summary['embedded']:,} embedded of {summary['chunks']:,} chunks, "
                  f"embedding {summary['embed_s']} s), peak {rows[name]['index_peak_mb']} MB", flush=True)
        for _ in range(args.rounds):
            for query in queries:
                for name in embedders:
                    started = time.perf_counter()
                    proc = cli(["search", query, "--no-llm", "-k", "5", "--json", "-C", str(args.tree)],
                               homes[name], name)
                    rows[name]["search_s"].append(time.perf_counter() - started)
                    rows[name]["search_peak_mb"].append(peak_mb(proc.stderr))
                    if proc.returncode != 0:
                        sys.exit(f"{name}: search failed (rc {proc.returncode}): {proc.stderr[-2000:]}")
        print("\n| setup | whole run (s) | lexical (s) | every chunk has a vector at (s) | embedding (s) "
              "| vectors made | index peak MB | search p50 / p90 (s) | search peak MB |")
        print("|---|---|---|---|---|---|---|---|---|")
        for name, row in rows.items():
            times = sorted(row["search_s"])
            p90 = times[min(len(times) - 1, int(0.9 * len(times)))] if times else 0.0
            complete = round(row["lexical_s"] + (row["first_s"] or row["embed_s"]), 1)
            print(f"| {name} | {row['index_s']} | {row['lexical_s']} | {complete} | {row['embed_s']} "
                  f"| {row['embedded']:,} | {row['index_peak_mb']} "
                  + (f"| {statistics.median(times):.2f} / {p90:.2f} | {statistics.median(row['search_peak_mb'])} |"
                     if times else "| | |"))
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
