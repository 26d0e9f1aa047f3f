"""Cold-index time of one tree with codeasst's code as it was at several commits, in one run.

    python bench/index_commits.py --tree DIR COMMIT [COMMIT ...] [--rounds 2]

Each commit's `codeasst` package is checked out into a temporary worktree and run on this
virtualenv's packages, so only codeasst's own code differs between the runs; each run gets a
fresh CODEASST_HOME (the embedder's ONNX export is copied in, so no run pays for it). The runs
alternate (commit A, B, C, A, B, C, ...) so that a machine's drift falls on all of them alike.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUN = """
import json, sys, time
from pathlib import Path
from codeasst.services import build_services
services = build_services(Path(sys.argv[1]))
services.embedder.load()
started = time.perf_counter()
summary = services.indexer().run()
print(json.dumps({"seconds": time.perf_counter() - started, "chunks": summary.chunks,
                  "embed_s": summary.embed_s, "package": __import__("codeasst").__file__}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, required=True)
    parser.add_argument("commits", nargs="+")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="codeasst-commits-"))
    export = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "codeasst" / "embedders"
    trees = {}
    for commit in args.commits:
        dest = work / commit[:12]
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(dest), commit], check=True)
        trees[commit] = dest
    times: dict[str, list[float]] = {c: [] for c in args.commits}
    try:
        for round_ in range(args.rounds):
            for commit, dest in trees.items():
                home = work / f"home-{commit[:12]}-{round_}"
                if export.is_dir():
                    shutil.copytree(export, home / "cache" / "embedders")
                env = {**os.environ, "CODEASST_HOME": str(home), "PYTHONPATH": str(dest)}
                # Run from the worktree: `python -c` puts the working directory first on sys.path.
                out = subprocess.run([sys.executable, "-c", RUN, str(args.tree)], env=env, capture_output=True,
                                     text=True, check=False, cwd=dest)
                if out.returncode != 0:
                    raise SystemExit(f"{commit[:12]}: {out.stderr.strip()[-800:]}")
                result = json.loads(out.stdout.splitlines()[-1])
                assert result["package"].startswith(str(dest)), result["package"]
                times[commit].append(result["seconds"])
                print(f"round {round_ + 1}, {commit[:12]}: {result['chunks']:,} chunks, {result['seconds']:.1f} s "
                      f"(embedding {result['embed_s']:.1f} s), {result['chunks'] / result['seconds']:.1f} chunks/s",
                      flush=True)
    finally:
        for dest in trees.values():
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(dest)], check=False)
        shutil.rmtree(work, ignore_errors=True)
    for commit, seconds in times.items():
        print(f"{commit[:12]}: median {statistics.median(seconds):.1f} s over {len(seconds)} runs")


if __name__ == "__main__":
    main()
