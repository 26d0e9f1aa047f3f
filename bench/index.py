"""Benchmark `codeasst index` on real code nobody here wrote.

    python bench/index.py [--packages httpx] [--rounds 3] [--noop-package transformers]

First, cold-index throughput (chunks/s, chunking and storing included) with the
onnxruntime index embedder, fp32 and int8, against a naive sentence-transformers
`model.encode(texts, batch_size=...)` of exactly the texts the indexer embeds,
measured alternately (naive, fp32, int8, naive, ...) in the same run; medians
and ratios. Then, with the default embedder, the no-op re-index time and the
re-index time after one file changes.
"""

from __future__ import annotations

import argparse
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


def compare_runtimes(repo: Path, texts: list[str], rounds: int, precisions: list[str]) -> None:
    """Naive sentence-transformers encode against cold indexing on onnxruntime, alternately."""
    from codeasst.backends.fake import HashingEmbedder
    from codeasst.backends.sentence_tf import resolve_model
    from codeasst.services import build_services

    build_services(repo, embedder=HashingEmbedder()).indexer().run()  # imports chromadb before any timing
    settings = build_services(repo).settings.embedder
    batch_size = settings.batch_size
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    model, load_s = timed(lambda: SentenceTransformer(str(resolve_model(settings.model)), device="cpu",
                                                      local_files_only=True))
    print(f"sentence-transformers load: {load_s:.2f} s (torch threads: {_torch_threads()})")
    embedders = {}
    for precision in precisions:
        embedder = build_services(repo, {"embedder.precision": precision}).embedder
        _, built_s = timed(embedder.load)
        embedders[precision] = embedder
        print(f"onnx {precision} load (export or quantize if not cached): {built_s:.2f} s, "
              f"providers {embedder.providers}, name {embedder.name}")
    model.encode(texts[:8], batch_size=batch_size)
    for embedder in embedders.values():
        embedder.embed(texts[:8])

    import numpy as np

    sample = texts[:: max(1, len(texts) // 64)][:64]
    want = np.array(model.encode(sample, batch_size=batch_size, normalize_embeddings=True))
    for precision, embedder in embedders.items():
        got = np.array(embedder.embed(sample))
        print(f"onnx {precision} vs sentence-transformers on {len(sample)} chunks: max |diff| "
              f"{np.abs(got - want).max():.2e}, min cosine {(got * want).sum(1).min():.4f}")

    rates: dict[str, list[float]] = {"naive": [], **{p: [] for p in precisions}}
    for round_ in range(1, rounds + 1):
        _, naive_s = timed(lambda: model.encode(texts, batch_size=batch_size, normalize_embeddings=True,
                                                show_progress_bar=False))
        rates["naive"].append(len(texts) / naive_s)
        line = [f"round {round_}: naive encode {len(texts)} chunks {naive_s:.1f} s ({rates['naive'][-1]:.1f}/s)"]
        for precision in precisions:
            services = build_services(repo, {"embedder.precision": precision})
            summary, cold_s = timed(lambda s=services: s.indexer().run(rebuild=True))
            rates[precision].append(summary.chunks_written / cold_s)
            line.append(f"cold index onnx {precision} {summary.chunks_written} chunks {cold_s:.1f} s "
                        f"(embedding {summary.embed_s:.1f} s; {rates[precision][-1]:.1f}/s, "
                        f"{rates[precision][-1] / rates['naive'][-1]:.2f}x)")
        print("; ".join(line))
    base = statistics.median(rates["naive"])
    print(f"median naive sentence-transformers encode: {base:.1f} chunks/s")
    for precision in precisions:
        # Each round's ratio compares runs minutes apart; on a shared machine it is steadier
        # than the ratio of medians, so both are printed.
        paired = statistics.median(r / n for r, n in zip(rates[precision], rates["naive"], strict=True))
        print(f"median cold index, onnx {precision}: {statistics.median(rates[precision]):.1f} chunks/s "
              f"-> {statistics.median(rates[precision]) / base:.2f}x naive (median of per-round ratios "
              f"{paired:.2f}x)")


def _torch_threads() -> int:
    import torch

    return torch.get_num_threads()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", nargs="+", default=["httpx"])
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of the runtime comparison")
    parser.add_argument("--precisions", default="fp32,int8", help="onnxruntime embedders to compare")
    parser.add_argument("--noop-package", default="transformers",
                        help="a large installed package for the 1,000-file no-op measurement ('' skips it)")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="codeasst-bench-"))
    os.environ["CODEASST_HOME"] = str(work / "home")
    from codeasst.services import build_services

    repo = work / "repo"
    copy_packages(args.packages, repo)
    services = build_services(repo)
    texts = chunk_texts(repo, services)

    print(f"# machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"# corpus: {', '.join(args.packages)} (installed sources), {len(texts)} chunks, settings: "
          f"chunk_chars={services.settings.index.chunk_chars}, batch_size={services.settings.embedder.batch_size}")
    compare_runtimes(repo, texts, args.rounds, args.precisions.split(","))

    print(f"default index embedder: {services.embedder.name}")
    services.indexer().run(rebuild=True)
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
