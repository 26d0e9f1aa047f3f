"""Benchmark the model runtime against llama-cpp-python called directly, in the same run.

    python bench/llm.py [--model bundled|PATH] [--prompt-tokens 1024] [--gen-tokens 128] [--repeats 3]

Both sides share one llama_cpp.Llama (same weights, threads, context and batch
size); the KV cache is cleared before every cold measurement.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

from codeasst.backends.base import GenerationParams
from codeasst.services import build_services

FILLER = "def helper_{i}(value):\n    return value * {i} + {j}\n\n"


def make_prompt(llm, tokens: int) -> str:
    text, i = "", 0
    while llm.count_tokens(text) < tokens:
        text += FILLER.format(i=i, j=i % 7)
        i += 1
    return text


def median_of(repeats: int, fn) -> float:
    values = []
    for _ in range(repeats):
        values.append(fn())
    return statistics.median(values)


def paired(repeats: int, ours, direct) -> tuple[float, float]:
    """Medians of both, measured alternately so drift in machine speed hits both alike."""
    a, b = [], []
    for i in range(repeats):
        first, second = (ours, direct) if i % 2 == 0 else (direct, ours)
        x, y = first(), second()
        a.append(x if first is ours else y)
        b.append(y if first is ours else x)
    return statistics.median(a), statistics.median(b)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None)
    parser.add_argument("--prompt-tokens", type=int, default=1024)
    parser.add_argument("--gen-tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    services = build_services(Path(tempfile.mkdtemp()), model=args.model)
    started = time.perf_counter()
    llm = services.llm
    llm.load()
    load_s = time.perf_counter() - started
    llama = llm.llama
    details = llm.describe()
    print(f"# machine: {platform.machine()}, {os.cpu_count()} cores; {details['backend']}, device {details['device']}, "
          f"gpu layers {details['gpu_layers']}, threads {details['threads']}, context {details['context_length']}")
    print(f"load (includes unpacking the bundled model on first use): {load_s:.2f} s")

    prompt = make_prompt(llm, args.prompt_tokens)
    n_prompt = llm.count_tokens(prompt)

    def ours_first_token() -> float:
        llama.reset()
        started = time.perf_counter()
        next(iter(llm.generate(prompt, GenerationParams(max_tokens=1))))
        return time.perf_counter() - started

    def direct_first_token() -> float:
        llama.reset()
        started = time.perf_counter()
        next(iter(llama.create_completion(prompt, max_tokens=1, temperature=0.0, stream=True)))
        return time.perf_counter() - started

    def ours_generation() -> float:
        llama.reset()
        stream = iter(llm.generate("def main():\n", GenerationParams(max_tokens=args.gen_tokens)))
        next(stream)
        started = time.perf_counter()
        count = sum(1 for _ in stream)
        return count / (time.perf_counter() - started)

    def direct_generation() -> float:
        llama.reset()
        stream = iter(llama.create_completion("def main():\n", max_tokens=args.gen_tokens, temperature=0.0,
                                              stream=True))
        next(stream)
        started = time.perf_counter()
        count = sum(1 for _ in stream)
        return count / (time.perf_counter() - started)

    ours_ttft, direct_ttft = paired(args.repeats, ours_first_token, direct_first_token)
    ours_gen, direct_gen = paired(args.repeats, ours_generation, direct_generation)
    print(f"cold prompt, {n_prompt} tokens: codeasst {n_prompt / ours_ttft:.1f} tok/s ({ours_ttft:.2f} s), "
          f"llama_cpp direct {n_prompt / direct_ttft:.1f} tok/s ({direct_ttft:.2f} s) -> "
          f"overhead {ours_ttft / direct_ttft - 1:+.1%}")
    print(f"generation: codeasst {ours_gen:.1f} tok/s, llama_cpp direct {direct_gen:.1f} tok/s -> "
          f"overhead {direct_gen / ours_gen - 1:+.1%}")

    def cached_prefix() -> float:
        llama.reset()
        next(iter(llm.generate(prompt, GenerationParams(max_tokens=1))))  # fills the KV cache
        started = time.perf_counter()
        next(iter(llm.generate(prompt + "def tail():\n", GenerationParams(max_tokens=1))))
        return time.perf_counter() - started

    def cold_same_length() -> float:
        llama.reset()
        started = time.perf_counter()
        next(iter(llm.generate(prompt + "def tail():\n", GenerationParams(max_tokens=1))))
        return time.perf_counter() - started

    warm = median_of(args.repeats, cached_prefix)
    cold = median_of(args.repeats, cold_same_length)
    print(f"first token, {n_prompt}-token prefix already in the KV cache: {warm:.3f} s; "
          f"same prompt cold: {cold:.3f} s ({cold / warm:.0f}x)")


if __name__ == "__main__":
    main()
