"""`codeasst index` with MiniLM's phase in the background (issue 53): how long the command takes to return on
a fresh index of REPO, then one-shot `search` wall times and `ask`'s first byte on stdout while the background
embedder runs against the same with it stopped, in one run (alternating, so load beside them weighs on both
alike). The background embedder is stopped at the end.

    python bench/index_background.py REPO [--searches 10] [--asks 3]

Uses a CODEASST_HOME of its own (the embedder's ONNX export linked from the user's cache); prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from codeasst import paths
from codeasst.index import worker

QUERIES = ["where are .gitignore rules applied to files?", "how is a chunk's vector stored",
           "what happens when the disk is full while indexing", "how does the server own the index",
           "parse a python file into definitions"]
QUESTION = "How does codeasst decide which files to index?"
START_S = 8.0


def _cli(*args: str, env: dict) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "codeasst", *args], env=env, check=True, capture_output=True,
                   stdin=subprocess.DEVNULL)
    return time.perf_counter() - started


def _first_byte(*args: str, env: dict) -> float:
    """Seconds until the command's first byte on stdout (ask streams its lead first)."""
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "codeasst", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    proc.stdout.read(1)
    first = time.perf_counter() - started
    proc.communicate()
    return first


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("repo", type=Path)
    parser.add_argument("--searches", type=int, default=10, help="in all, half with it running")
    parser.add_argument("--asks", type=int, default=4, help="in all, half with it running")
    args = parser.parse_args()
    root = args.repo.resolve()
    home = Path(tempfile.mkdtemp(prefix="codeasst-bg-bench-"))
    (home / "cache").mkdir()
    (home / "cache" / "embedders").symlink_to(paths.cache_dir() / "embedders")
    env = {**os.environ, "CODEASST_HOME": str(home)}
    os.environ["CODEASST_HOME"] = str(home)  # for index_dir below
    index_dir = paths.index_dir(paths.find_repo_root(root)[0])

    returned = _cli("index", str(root), env=env)
    times: dict[str, list[float]] = {"search running": [], "search stopped": [], "ask running": [],
                                     "ask stopped": []}
    # Blocks in turn, twice: running, stopped, running, stopped. A restarted embedder is given its start
    # (imports, MiniLM's load: seconds of CPU, once per `codeasst index`) before its block is timed.
    for block in range(4):
        state = "running" if block % 2 == 0 else "stopped"
        if state == "stopped":
            worker.stop(index_dir)  # SIGTERM: it keeps what it did; the next block starts another
        elif worker.pid(index_dir) is None:
            _cli("index", str(root), env=env)
            time.sleep(START_S)
        for i in range(args.searches // 2):
            times[f"search {state}"].append(_cli("search", QUERIES[i % len(QUERIES)], "--no-llm", "--json", "-C",
                                                 str(root), env=env))
        for _ in range(max(1, args.asks // 2)):
            times[f"ask {state}"].append(_first_byte("ask", QUESTION, "-C", str(root), env=env))
        if state == "running" and worker.pid(index_dir) is None:
            print(f"note: the background embedder ended during block {block}", file=sys.stderr)
    worker.stop(index_dir)
    print(json.dumps({"returned_s": round(returned, 1),
                      **{f"{k} p50 s": round(statistics.median(v), 2) for k, v in times.items() if v}}, indent=2))


if __name__ == "__main__":
    main()
