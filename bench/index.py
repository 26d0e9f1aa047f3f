"""Benchmark `codeasst index` on real code nobody here wrote.

    python bench/index.py [--packages rich click textual chromadb] [--noop-package transformers]

Prints cold-index throughput beside the raw embedder's throughput on the same
chunks (measured in the same run), the no-op re-index time, and the re-index
time after one file changes.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

SITE = Path(sysconfig.get_paths()["purelib"])


def copy_packages(names: list[str], dest: Path) -> None:
    dest.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(dest)], check=True)
    for name in names:
        shutil.copytree(SITE / name, dest / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


def chunk_texts(root: Path, services) -> list[str]:
    """The exact texts the indexer embeds, chunked again outside the indexer."""
    from codeasst.index import chunker
    from codeasst.index.files import IgnoreRules, decode_source, scan
    from codeasst.index.indexer import embedding_text

    cfg = services.settings.index
    texts = []
    for info in scan(root, IgnoreRules(root), cfg.max_file_bytes).files:
        text, _ = decode_source((root / info.path).read_bytes())
        if text is not None:
            chunks = chunker.chunk_file(info.path, text, cfg.chunk_chars, cfg.overlap_lines)
            texts += list({embedding_text(c): None for c in chunks})
    return texts


def timed(fn):
    started = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", nargs="+", default=["rich", "click", "textual", "chromadb"])
    parser.add_argument("--noop-package", default="transformers",
                        help="a large installed package for the 1,000-file no-op measurement")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="codeasst-bench-"))
    os.environ["CODEASST_HOME"] = str(work / "home")
    from codeasst.services import build_services

    repo = work / "repo"
    copy_packages(args.packages, repo)
    services = build_services(repo)
    embedder = services.embedder
    model, load_s = timed(lambda: embedder.model)
    embedder.embed_query("warm up")

    print(f"# machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"# corpus: {', '.join(args.packages)} (installed sources), settings: "
          f"chunk_chars={services.settings.index.chunk_chars}, batch_size={embedder.batch_size}")
    print(f"embedder load: {load_s:.2f} s")

    summary, cold_s = timed(lambda: services.indexer().run())
    files_per_s = (summary.added) / cold_s
    chunks_per_s = summary.chunks_written / cold_s
    print(f"cold index: {summary.added} files, {summary.chunks_written} chunks, {cold_s:.1f} s "
          f"-> {files_per_s:.2f} files/s, {chunks_per_s:.2f} chunks/s (embedding {summary.embed_s:.1f} s of it)")

    texts = chunk_texts(repo, services)
    _, raw_s = timed(lambda: model.encode(texts, batch_size=embedder.batch_size, normalize_embeddings=True,
                                          show_progress_bar=False))
    raw_rate = len(texts) / raw_s
    print(f"raw embedder, same {len(texts)} chunks: {raw_s:.1f} s -> {raw_rate:.2f} chunks/s")
    print(f"cold index / raw embedder throughput: {chunks_per_s / raw_rate:.1%}")

    noop, noop_s = timed(lambda: build_services(repo).indexer().run())
    assert noop.chunks_written == 0
    env = dict(os.environ)
    cli = [str(Path(sys.executable).parent / "codeasst"), "index", str(repo)]
    _, cli_s = timed(lambda: subprocess.run(cli, check=True, capture_output=True, env=env))
    print(f"no-op re-index, {noop.unchanged} files: {noop_s:.3f} s in process, {cli_s:.3f} s as a CLI command")

    target = next(p for p in sorted(repo.rglob("*.py")) if p.stat().st_size > 4000)
    target.write_text(target.read_text() + "\n\ndef added_by_bench():\n    return 42\n")
    one, one_s = timed(lambda: build_services(repo).indexer().run())
    print(f"re-index after one file changes ({target.relative_to(repo)}, {one.chunks_written} chunks): "
          f"{one_s:.3f} s, of which embedding {one.embed_s:.3f} s -> overhead {one_s - one.embed_s:.3f} s")

    if args.noop_package and (SITE / args.noop_package).is_dir():
        # No-op cost is walking, stat and the manifest; the embedder never runs, so a fast
        # fake builds the large index this part needs.
        from codeasst.backends.fake import HashingEmbedder

        big = work / "big"
        copy_packages([args.noop_package], big)
        build_services(big, embedder=HashingEmbedder()).indexer().run()
        big_noop, big_s = timed(lambda: build_services(big, embedder=HashingEmbedder()).indexer().run())
        print(f"no-op re-index, {big_noop.unchanged} files ({args.noop_package}): {big_s:.3f} s in process")

    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
