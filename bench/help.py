"""How fast `codeasst --help` answers, against the interpreter's own start, in the same run.

    python bench/help.py [--runs 30] [--command "codeasst search --help"]

Each run is a fresh process (`codeasst` is the installed script next to this Python). The
baseline is `python -c pass` on the same interpreter, timed alternately with the command so
drift in machine speed hits both alike. Then one `python -X importtime` run lists which heavy
modules the command imports (none should be) and the slowest imports it makes.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

HEAVY = ("torch", "chromadb", "llama_cpp", "textual", "sentence_transformers", "fastapi", "uvicorn",
         "onnxruntime", "transformers", "numpy")


def wall(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def imports(args: list[str]) -> list[tuple[str, int, int]]:
    """(module, cumulative microseconds, nesting depth) for every module the command imports, in one run."""
    code = f"import sys; sys.argv = {['codeasst', *args]!r}; from codeasst.cli import main; main()"
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True,
                          check=False)
    rows = re.findall(r"^import time:\s+\d+ \|\s+(\d+) \| ( *)(\S.*)$", proc.stderr, flags=re.MULTILINE)
    return [(name, int(cumulative), len(indent) // 2) for cumulative, indent, name in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--command", default="codeasst --help", help="A codeasst command line to time.")
    args = parser.parse_args()

    words = shlex.split(args.command)
    program = Path(sys.executable).parent / "codeasst"
    command = [str(program), *words[1:]]
    baseline = [sys.executable, "-c", "pass"]
    wall(command)  # warm the page cache and __pycache__ before timing
    ours, base = [], []
    for i in range(args.runs):
        first, second = (command, baseline) if i % 2 == 0 else (baseline, command)
        a, b = wall(first), wall(second)
        ours.append(a if first is command else b)
        base.append(b if first is command else a)

    found = imports(words[1:])
    heavy = sorted({name.split(".")[0] for name, _, _ in found if name.split(".")[0] in HEAVY})
    top = sorted((row for row in found if row[2] == 0), key=lambda r: -r[1])[:8]

    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; "
          f"Python {platform.python_version()}; {args.runs} runs each, alternated")
    print(f"`{args.command}`   p50 {statistics.median(ours) * 1000:.0f} ms   p95 {percentile(ours, 95) * 1000:.0f} ms")
    print(f"`python -c pass`  p50 {statistics.median(base) * 1000:.0f} ms   p95 {percentile(base, 95) * 1000:.0f} ms")
    print(f"codeasst's own share (p50 difference): {(statistics.median(ours) - statistics.median(base)) * 1000:.0f} ms")
    print(f"modules imported: {len(found)}; heavy ones among them: {', '.join(heavy) or 'none'} "
          f"(checked: {', '.join(HEAVY)})")
    print("slowest top-level imports (cumulative, one -X importtime run):")
    for name, micros, _ in top:
        print(f"  {name:<24} {micros / 1000:6.1f} ms")


if __name__ == "__main__":
    main()
