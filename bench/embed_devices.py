"""The index embedder on a GPU against the CPU, on one machine in one run (issue 36).

    python bench/embed_devices.py --texts TEXTS.jsonl.gz --model MODEL_DIR [--cpu-sample 2000]

TEXTS: the texts an index embedded (bench/index_checkout.py --texts-out), one JSON string a line.
Runs what codeasst runs: `SentenceTransformerEmbedder` on CUDA at several batch sizes over every
text (the embedder services.embedder picks where a GPU is present), and on the CPU, on a sample, a
plain sentence-transformers encode (batch 32, every core) and codeasst's onnxruntime embedder
(fp32 and int8, exported here). Needs torch, sentence-transformers, onnxruntime, onnx and
tokenizers; nothing of codeasst's beyond its backends.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def rate(embed, texts: list[str]) -> tuple[float, list]:
    embed(texts[:64])  # warm: kernels, allocator, thread pools
    started = time.perf_counter()
    vectors = embed(texts)
    return len(texts) / (time.perf_counter() - started), vectors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=Path, required=True)
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--cpu-sample", type=int, default=2000)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer

    from codeasst.backends.sentence_tf import SentenceTransformerEmbedder, cuda_available

    with gzip.open(args.texts, "rt", encoding="utf-8") as lines:
        texts = [json.loads(line) for line in lines]
    sample = random.Random(36).sample(texts, min(args.cpu_sample, len(texts)))
    results: dict = {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "texts": len(texts),
                     "cpu_sample": len(sample), "torch": torch.__version__, "cuda_available": cuda_available()}
    if torch.cuda.is_available():
        results["gpu"] = torch.cuda.get_device_name(0)
        for batch in (32, 256, 1024):
            embedder = SentenceTransformerEmbedder(str(args.model), "cuda", batch)
            speed, _ = rate(embedder.embed_batch, texts)
            results[f"gpu_torch_fp32_batch{batch}_chunks_s"] = round(speed, 1)
            print(f"GPU torch fp32, batch {batch}: {speed:,.1f} chunks/s over {len(texts):,} texts", flush=True)
        gpu_vectors = np.array(SentenceTransformerEmbedder(str(args.model), "cuda", 256).embed_batch(sample[:256]))

    plain = SentenceTransformer(str(args.model), device="cpu", local_files_only=True)
    speed, cpu_vectors = rate(lambda t: plain.encode(t, batch_size=32, normalize_embeddings=True,
                                                     show_progress_bar=False), sample)
    results["cpu_plain_encode_chunks_s"] = round(speed, 1)
    results["cpu_torch_threads"] = torch.get_num_threads()
    print(f"CPU plain sentence-transformers encode, batch 32, {torch.get_num_threads()} threads: "
          f"{speed:,.1f} chunks/s over {len(sample):,} texts", flush=True)
    if torch.cuda.is_available():
        cosine = (gpu_vectors * np.array(cpu_vectors[:256])).sum(1)
        results["gpu_vs_cpu_min_cosine"] = round(float(cosine.min()), 6)

    try:
        from codeasst.backends.onnx_embed import OnnxEmbedder

        cache = Path(tempfile.mkdtemp(prefix="embed-devices-"))
        for precision in ("fp32", "int8"):
            onnx = OnnxEmbedder(args.model, cache, "bench", 32, precision=precision, device="cpu")
            started = time.perf_counter()
            onnx.load()
            built = time.perf_counter() - started
            speed, _ = rate(onnx.embed, sample)
            results[f"cpu_onnx_{precision}_chunks_s"] = round(speed, 1)
            print(f"CPU onnxruntime {precision} (codeasst's; built in {built:.0f} s): {speed:,.1f} chunks/s "
                  f"over {len(sample):,} texts", flush=True)
    except Exception as exc:  # noqa: BLE001 - a bench reports what it could not measure and goes on
        results["cpu_onnx_error"] = f"{type(exc).__name__}: {exc}"[:300]
        print(f"CPU onnxruntime: not measured ({results['cpu_onnx_error']})", flush=True)
    print(json.dumps(results, indent=1))
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
