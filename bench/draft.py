"""Speculative decoding for the 1.5B completion model: no draft, prompt lookup, the 0.5B as draft.

    python bench/draft.py [--rows 12] [--max-tokens 48] [--json]

One process, one run: the 1.5B is loaded once per mode (no draft; llama-cpp-python's prompt
lookup; codeasst.backends.draft.ModelDraft over the 0.5B) and completes the same FIM prompts,
the first N rows of tests/data/fim/mbpp_lines.jsonl, greedily (temp 0), up to --max-tokens
tokens or an end-of-generation token. The 0.5B alone is measured too, as the speed to aim for.

Measured per mode, summed over the rows: prompt tok/s (prompt tokens / time to the first
token; in the 0.5B draft mode this includes the draft model reading the prompt), generation
tok/s (tokens after the first / time from the first token to the last), acceptance (drafted
tokens the 1.5B kept / drafted tokens it checked). Greedy speculative decoding must not change
the output: every mode's tokens are compared with the no-draft ones and mismatches reported.
The KV caches are cleared before every row, so rows share nothing.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import platform
import sys
import time
from pathlib import Path

import llama_cpp
from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

from codeasst.backends.draft import Counting, ModelDraft

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "fim" / "mbpp_lines.jsonl"
WARM_PROMPT = "<|fim_prefix|>def add(a, b):\n    <|fim_suffix|>\n<|fim_middle|>"


def model_path(name: str) -> str:
    """The GGUF of a bundled model ('bundled', 'bundled-1.5b'), where codeasst keeps it."""
    from codeasst.config import load_settings
    from codeasst.models import resolve

    return str(resolve(load_settings(None).settings, name).path)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def load(path: str, args, draft_model=None) -> llama_cpp.Llama:
    started = time.perf_counter()
    # With a draft model llama-cpp-python forces logits for every token, but it sizes its
    # `scores` array from the logits_all argument: n_batch rows unless that is True, and eval()
    # then fails once a position passes n_batch. So pass logits_all=True along with a draft.
    llama = llama_cpp.Llama(
        model_path=path, n_ctx=args.n_ctx, n_threads=args.threads, n_threads_batch=args.threads,
        n_batch=512, verbose=False, draft_model=draft_model, logits_all=draft_model is not None,
    )
    log(f"loaded {Path(path).name} in {time.perf_counter() - started:.1f} s")
    return llama


def prompts(args, llama: llama_cpp.Llama) -> list[list[int]]:
    rows = []
    with open(args.data, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                rows.append(json.loads(line))
            if len(rows) >= args.rows:
                break
    text = [f"<|fim_prefix|>{r['prefix']}<|fim_suffix|>{r['suffix']}<|fim_middle|>" for r in rows]
    return [llama.tokenize(t.encode(), add_bos=False, special=True) for t in text]


def generate(llama: llama_cpp.Llama, tokens: list[int], max_tokens: int, before=None) -> dict:
    """One greedy completion from a cleared cache; `before` runs inside the prompt's timing."""
    llama.reset()
    vocab = llama._model.vocab
    out: list[int] = []
    started = time.perf_counter()
    if before is not None:
        before(tokens)
    first = last = None
    gen = llama.generate(tokens, temp=0.0, top_k=1, top_p=1.0, min_p=0.0, repeat_penalty=1.0)
    for token in gen:
        last = time.perf_counter()
        if first is None:
            first = last
        out.append(int(token))
        if llama_cpp.llama_vocab_is_eog(vocab, token) or len(out) >= max_tokens:
            break
    gen.close()
    return {"tokens": out, "prompt_s": first - started, "gen_s": last - first}


def run_mode(name: str, llama: llama_cpp.Llama, rows: list[list[int]], args, counter=None, before=None,
             warm=None) -> dict:
    if warm:
        generate(llama, warm, 4, before)  # first touches of the weights, not measured
        if counter is not None:
            counter.clear()
            counter.calls = counter.drafted = 0
    results, accepted, checked = [], 0, 0
    for i, tokens in enumerate(rows):
        r = generate(llama, tokens, args.max_tokens, before)
        log(f"{name}: row {i}, {len(tokens)} prompt tokens in {r['prompt_s']:.1f} s, "
            f"{len(r['tokens'])} generated in {r['gen_s']:.1f} s")
        if counter is not None:
            a, c = counter.score(tokens + r["tokens"])
            accepted, checked = accepted + a, checked + c
            counter.clear()
        results.append(r)
    prompt_tokens = sum(len(t) for t in rows)
    prompt_s = sum(r["prompt_s"] for r in results)
    after_first = sum(len(r["tokens"]) - 1 for r in results)
    gen_s = sum(r["gen_s"] for r in results)
    out = {
        "mode": name,
        "gen_tok_s": after_first / gen_s if gen_s > 0 else None,
        "prompt_tok_s": prompt_tokens / prompt_s,
        "prompt_tokens": prompt_tokens,
        "generated_tokens": sum(len(r["tokens"]) for r in results),
        "acceptance": accepted / checked if checked else None,
        "accepted": accepted if counter is not None else None,
        "drafted_checked": checked if counter is not None else None,
        "draft_calls": counter.calls if counter is not None else None,
        "drafted": counter.drafted if counter is not None else None,
        "_tokens": [r["tokens"] for r in results],
    }
    return out


def machine() -> dict:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"cores": cores, "load_average": [round(x, 2) for x in os.getloadavg()],
            "platform": f"{platform.system()} {platform.machine()}", "python": platform.python_version(),
            "llama_cpp_python": llama_cpp.__version__}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=12)
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--model", default=None, help="the 1.5B GGUF (default: the bundled-1.5b model)")
    parser.add_argument("--draft", default=None, help="the draft model's GGUF (default: the bundled 0.5B)")
    parser.add_argument("--draft-tokens", type=int, default=8, help="ModelDraft's num_pred_tokens")
    parser.add_argument("--adaptive", action="store_true", help="ModelDraft drafts fewer tokens after rejections")
    parser.add_argument("--lookup-tokens", type=int, default=10, help="prompt lookup's num_pred_tokens")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument("--modes", default="none,lookup,draft,small",
                        help="a subset of none,lookup,draft,small (none is the baseline for speed-up and outputs)")
    args = parser.parse_args()
    wanted = set(args.modes.split(","))

    info = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"), "machine": machine(),
            "rows": args.rows, "max_tokens": args.max_tokens, "threads": args.threads, "n_ctx": args.n_ctx,
            "draft_tokens": args.draft_tokens, "adaptive": args.adaptive, "lookup_tokens": args.lookup_tokens}
    big = args.model or model_path("bundled-1.5b")

    small = load(args.draft or model_path("bundled"), args)
    rows = prompts(args, small)
    warm = small.tokenize(WARM_PROMPT.encode(), add_bos=False, special=True)
    modes = []

    if "none" in wanted:
        llm = load(big, args)
        modes.append(run_mode("none", llm, rows, args, warm=warm))
        del llm
        gc.collect()

    if "lookup" in wanted:
        lookup = Counting(LlamaPromptLookupDecoding(max_ngram_size=2, num_pred_tokens=args.lookup_tokens))
        llm = load(big, args, draft_model=lookup)
        modes.append(run_mode("prompt lookup", llm, rows, args, counter=lookup, warm=warm))
        del llm
        gc.collect()

    if "draft" in wanted:
        drafter = ModelDraft(small, num_pred_tokens=args.draft_tokens, adaptive=args.adaptive)
        counted = Counting(drafter)

        def prefill(tokens: list[int]) -> None:
            drafter.reset()
            drafter.prefill(tokens)

        llm = load(big, args, draft_model=counted)
        modes.append(run_mode("0.5B draft", llm, rows, args, counter=counted, before=prefill, warm=warm))
        del llm
        gc.collect()

    if "small" in wanted:
        small.reset()
        modes.append(run_mode("0.5B alone (reference)", small, rows, args, warm=warm))

    base = modes[0] if modes and modes[0]["mode"] == "none" else None
    mismatches = []
    for m in modes:
        m["speedup"] = m["gen_tok_s"] / base["gen_tok_s"] if base and m["gen_tok_s"] and base["gen_tok_s"] else None
    for m in modes if base else []:
        if m is base or m["mode"].startswith("0.5B alone"):
            continue
        for i, (a, b) in enumerate(zip(base["_tokens"], m["_tokens"])):
            if a != b:
                at = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
                mismatches.append({"mode": m["mode"], "row": i, "first_difference": at,
                                   "none": small.detokenize(a).decode(errors="replace"),
                                   "this": small.detokenize(b).decode(errors="replace")})
    info["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    for m in modes:
        m["tokens"] = m.pop("_tokens")  # per row, in the JSON only: to compare runs
    info["modes"] = modes
    info["mismatches"] = mismatches
    info["identical_outputs"] = (not mismatches) if base and len(modes) > 1 else None

    if args.json:
        json.dump(info, sys.stdout)
        print()
        return

    def fmt(x, spec):
        return "-" if x is None else format(x, spec)

    mach = info["machine"]
    print(f"# {info['date']}; {mach['platform']}, {mach['cores']} cores, load average {mach['load_average']} "
          f"(at the end {info['load_average_end']}); llama-cpp-python {mach['llama_cpp_python']}, "
          f"{args.threads} threads")
    print(f"# {args.rows} rows, up to {args.max_tokens} tokens; 0.5B draft: {args.draft_tokens} tokens"
          f"{' (adaptive)' if args.adaptive else ''}; prompt lookup: {args.lookup_tokens} tokens")
    print()
    print("| mode | gen tok/s | speed-up vs none | acceptance | prompt tok/s |")
    print("|---|---:|---:|---:|---:|")
    for m in modes:
        acc = "-" if m["acceptance"] is None else f"{m['acceptance']:.0%} ({m['accepted']}/{m['drafted_checked']})"
        print(f"| {m['mode']} | {fmt(m['gen_tok_s'], '.1f')} | {fmt(m['speedup'], '.2f')}x | {acc} "
              f"| {fmt(m['prompt_tok_s'], '.0f')} |")
    print()
    if mismatches:
        print(f"outputs differ from no draft in {len(mismatches)} case(s):")
        for x in mismatches:
            print(f"- {x['mode']}, row {x['row']}, from token {x['first_difference']}: "
                  f"{x['none']!r} vs {x['this']!r}")
    elif info["identical_outputs"]:
        print("outputs: the draft modes' token sequences are identical to no draft's, every row")


if __name__ == "__main__":
    main()
