"""The code graph's build time and size on a checkout (issue 52): every file of the languages asked for,
read and stored by the graph as `codeasst index` does (codeasst.index.graphdb.CodeGraph.sync), into a
fresh graph.sqlite.

    python bench/graph_build.py DIR LANGUAGE [LANGUAGE ...] [--exclude DIR ...] [--runs 3]

Prints one JSON line: files, lines, definitions, edges, the best of the runs' seconds, lines a second,
and the graph file's size.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from codeasst.index import graph
from codeasst.index.graphdb import CodeGraph


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("languages", nargs="+")
    parser.add_argument("--exclude", action="append", default=[])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    root = Path(args.root)
    files, lines = {}, 0
    for base, dirs, names in os.walk(root):
        rel_base = os.path.relpath(base, root)
        dirs[:] = [d for d in dirs if not d.startswith(".")
                   and not any(os.path.normpath(os.path.join(rel_base, d)).startswith(e) for e in args.exclude)]
        for name in names:
            rel = os.path.normpath(os.path.join(rel_base, name))
            if graph.graph_language(rel) in args.languages:
                data = (root / rel).read_bytes()
                files[rel] = hashlib.sha256(data).hexdigest()
                lines += data.count(b"\n")
    best, counts, size = float("inf"), {}, 0
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp:
            code_graph = CodeGraph(Path(tmp) / "graph.sqlite")
            started = time.perf_counter()
            code_graph.sync(root, files)
            best = min(best, time.perf_counter() - started)
            counts = code_graph.counts()
            code_graph.close()
            size = sum(p.stat().st_size for p in Path(tmp).iterdir())
    print(json.dumps({"languages": args.languages, "files": len(files), "lines": lines,
                      "definitions": counts["definitions"], "edges": counts["edges"], "seconds": round(best, 2),
                      "lines_per_second": round(lines / best), "graph_mb": round(size / 2**20, 1)}))


if __name__ == "__main__":
    sys.exit(main())
