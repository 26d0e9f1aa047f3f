"""Benchmark indexing a big real checkout, as a new user meets it (issue 36).

    python bench/index_checkout.py --repo github:sympy/sympy@COMMIT [--later 100] [--sample 2000]

In a fresh CODEASST_HOME (the query embedder's one-time export is built before any timing):
1. the first `codeasst search` in the never-indexed checkout: wall seconds until it answers (the
   lexical phase, then retrieval), and its note on what is not embedded yet;
2. `codeasst index`: wall seconds to the full index, chunks embedded and kept lexical, the index
   embedder's rate, and the peak resident memory of that process;
3. a plain sentence-transformers `encode(texts, batch_size=32)` against the index embedder on
   the same sample of the texts the index embedded (alternately, two rounds; medians);
4. the checkout moved to the commit `--later` commits after (first parent, the mirror's history),
   and `codeasst index` again: files changed and seconds.
The texts the index embedded can be written out (`--texts-out FILE.jsonl.gz`) for bench/embed_devices.py.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

CLI = [str(Path(sys.executable).parent / "codeasst")]


def run_cli(args: list[str], env: dict) -> tuple[subprocess.CompletedProcess, float, float]:
    """The CLI's result, its wall seconds and its peak resident memory in MB (its own, by wait4)."""
    import threading

    started = time.perf_counter()
    proc = subprocess.Popen([*CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    out: dict[str, str] = {}
    readers = [threading.Thread(target=lambda name=name, pipe=pipe: out.__setitem__(name, pipe.read()))
               for name, pipe in (("out", proc.stdout), ("err", proc.stderr))]
    for reader in readers:
        reader.start()
    _, status, usage = os.wait4(proc.pid, 0)
    for reader in readers:
        reader.join()
    seconds = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({proc.returncode}): {out['err'].strip()[-500:]}")
    return subprocess.CompletedProcess(proc.args, 0, out["out"], out["err"]), seconds, usage.ru_maxrss / 1024


def checkout(git_dir: Path, commit: str, dest: Path) -> None:
    """Make `dest` hold exactly the tree of `commit` (files of other commits removed)."""
    for item in dest.iterdir() if dest.exists() else []:
        if item.name != ".git":
            shutil.rmtree(item) if item.is_dir() else item.unlink()
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "--git-dir", str(git_dir), "archive", "--format=tar", commit],
                             capture_output=True, check=True)
    import io

    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tarred:
        tarred.extractall(dest, filter="data")
    if not (dest / ".git").exists():
        subprocess.run(["git", "init", "-q", str(dest)], check=True)


def later_commit(git_dir: Path, commit: str, steps: int) -> str:
    found = subprocess.run(["git", "--git-dir", str(git_dir), "rev-list", "--reverse", "--ancestry-path",
                            "--first-parent", f"{commit}..HEAD"], capture_output=True, text=True, check=True)
    commits = found.stdout.split()
    if len(commits) < steps:
        raise SystemExit(f"only {len(commits)} commits after {commit}")
    return commits[steps - 1]


def embedded_texts(index_dir: Path) -> list[str]:
    from codeasst.index.indexer import embedding_text
    from codeasst.index.store import Hit

    db = sqlite3.connect(index_dir / "manifest.sqlite")
    rows = db.execute("SELECT id, path, start_line, end_line, kind, name, language, text FROM chunks "
                      "WHERE state = 1 ORDER BY n").fetchall()
    db.close()
    return [embedding_text(Hit(*row, score=0.0)) for row in rows]


def compare_encoders(texts: list[str], embedder, rounds: int = 2) -> dict:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(embedder.model_dir), device="cpu", local_files_only=True)
    model.encode(texts[:16], batch_size=32)
    embedder.embed(texts[:16])
    plain, ours = [], []
    for _ in range(rounds):
        started = time.perf_counter()
        model.encode(texts, batch_size=32, normalize_embeddings=True, show_progress_bar=False)
        plain.append(len(texts) / (time.perf_counter() - started))
        started = time.perf_counter()
        embedder.embed(texts)
        ours.append(len(texts) / (time.perf_counter() - started))
    return {"plain_encode_chunks_s": round(statistics.median(plain), 1),
            "index_embedder_chunks_s": round(statistics.median(ours), 1),
            "ratio": round(statistics.median(o / p for o, p in zip(ours, plain, strict=True)), 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", required=True, help="github:OWNER/NAME@COMMIT, from a local mirror")
    parser.add_argument("--query", default="how are the arguments of a function simplified before it is evaluated")
    parser.add_argument("--later", type=int, default=100, help="commits later for the re-index (0 skips it)")
    parser.add_argument("--sample", type=int, default=2000, help="texts in the encoder comparison (0 skips it)")
    parser.add_argument("--texts-out", type=Path, help="write the embedded texts here (JSON lines, gzip)")
    parser.add_argument("--precision", default=None, help="embedder.precision for the index run")
    args = parser.parse_args()

    from codeasst.evals.repos import GITHUB_SPEC, mirrors_dir

    match = GITHUB_SPEC.fullmatch(args.repo)
    git_dir = mirrors_dir() / f"{match['owner']}+{match['name']}" / "repo"
    work = Path(tempfile.mkdtemp(prefix="codeasst-bench-checkout-"))
    tree = work / "tree"
    checkout(git_dir, match["commit"], tree)
    env = {**os.environ, "CODEASST_HOME": str(work / "home")}
    if args.precision:
        env["CODEASST_EMBEDDER__PRECISION"] = args.precision
    os.environ.update(env)
    from codeasst.services import build_services

    services = build_services(tree)
    services.query_embedder.load()  # the one-time export, not part of any timing below
    services.embedder.load()
    print(f"# machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"# checkout: {args.repo}; index embedder {services.embedder.name}")

    found, first_s, first_mb = run_cli(["search", args.query, "--no-llm", "--json", "-k", "5", "-C", str(tree)], env)
    hits = json.loads(found.stdout)
    note = next((line for line in found.stderr.splitlines() if "not yet embedded" in line), "(no note)")
    print(f"first search, never indexed: answered in {first_s:.1f} s (peak {first_mb:.0f} MB); "
          f"top: {', '.join(h['path'] for h in hits[:3])}")
    print(f"  its note: {note}")

    indexed, index_s, index_mb = run_cli(["index", "--json", "-C", str(tree)], env)
    summary = json.loads(indexed.stdout)
    embedded = summary["dense"]["embedded"]
    print(f"full index: {index_s:.1f} s wall (peak {index_mb:.0f} MB); {summary['chunks']:,} chunks, "
          f"{embedded:,} embedded ({summary['embedded']:,} by this run in {summary['embed_s']:.1f} s, "
          f"{summary['embedded'] / max(summary['embed_s'], 1e-9):.1f} chunks/s), {summary['lexical_only']:,} "
          f"kept lexical; all chunks over search + index wall time: "
          f"{summary['chunks'] / (first_s + index_s):.1f} chunks/s")

    texts = embedded_texts(services.repo.index_dir)
    if args.texts_out:
        with gzip.open(args.texts_out, "wt", encoding="utf-8") as out:
            for text in texts:
                out.write(json.dumps(text) + "\n")
        print(f"wrote {len(texts):,} embedded texts to {args.texts_out}")
    if args.sample:
        sample = random.Random(36).sample(texts, min(args.sample, len(texts)))
        versus = compare_encoders(sample, build_services(tree).embedder)
        print(f"same {len(sample):,} texts, two rounds alternately: plain sentence-transformers encode "
              f"{versus['plain_encode_chunks_s']} chunks/s, index embedder {versus['index_embedder_chunks_s']} "
              f"chunks/s ({versus['ratio']}x)")

    if args.later:
        commit = later_commit(git_dir, match["commit"], args.later)
        checkout(git_dir, commit, tree)
        moved, moved_s, _ = run_cli(["index", "--json", "-C", str(tree)], env)
        again = json.loads(moved.stdout)
        print(f"re-index {args.later} commits later ({commit[:12]}): {again['added']} added, {again['changed']} "
              f"changed, {again['deleted']} deleted files; {moved_s:.1f} s ({again['embedded']:,} chunks embedded, "
              f"{again['vectors_reused']:,} of them from kept vectors)")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
