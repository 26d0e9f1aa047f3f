"""How big should a chunk be? Measures, per chunk budget, how much text the
embedder's 256-word-piece truncation throws away, and what embedding costs.

    python bench/chunk_budget.py [--packages rich click textual chromadb] [--sample 256]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sysconfig
import time
from pathlib import Path

from codeasst.backends.sentence_tf import SentenceTransformerEmbedder, bundled_model_dir
from codeasst.index import chunker
from codeasst.index.files import IgnoreRules, decode_source, scan
from codeasst.index.indexer import embedding_text

SITE = Path(sysconfig.get_paths()["purelib"])
BUDGETS = [600, 800, 1000, 1200, 1500, 2000]


def corpus(packages: list[str]) -> list[tuple[str, str]]:
    files = []
    for name in packages:
        root = SITE / name
        for info in scan(root, IgnoreRules(root), 1_000_000).files:
            text, _ = decode_source((root / info.path).read_bytes())
            if text is not None:
                files.append((f"{name}/{info.path}", text))
    return files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", nargs="+", default=["rich", "click", "textual", "chromadb"])
    parser.add_argument("--sample", type=int, default=256, help="chunks embedded per budget for timing")
    args = parser.parse_args()

    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(bundled_model_dir() / "tokenizer.json"))
    tokenizer.no_truncation()
    embedder = SentenceTransformerEmbedder()
    model = embedder.model
    limit = model.max_seq_length  # word pieces kept, special tokens included
    files = corpus(args.packages)
    print(f"# corpus: {len(files)} files from {', '.join(args.packages)}; embedder keeps {limit} word pieces")
    print("| budget (chars) | chunks | median chars | median word pieces | chunks truncated "
          "| text lost to truncation | embed chunks/s | embed s for corpus |")
    print("|---|---|---|---|---|---|---|---|")
    for budget in BUDGETS:
        texts = [embedding_text(c) for path, text in files for c in chunker.chunk_file(path, text, budget, 5)]
        encodings = tokenizer.encode_batch(texts, add_special_tokens=False)
        kept_chars = lost_chars = truncated = 0
        pieces = []
        for text, enc in zip(texts, encodings, strict=True):
            pieces.append(len(enc.ids))
            if len(enc.ids) > limit - 2:
                truncated += 1
                cut = enc.offsets[limit - 2][0]
                kept_chars += cut
                lost_chars += len(text) - cut
            else:
                kept_chars += len(text)
        sample = random.Random(0).sample(texts, min(args.sample, len(texts)))
        started = time.perf_counter()
        model.encode(sample, batch_size=embedder.batch_size, show_progress_bar=False)
        rate = len(sample) / (time.perf_counter() - started)
        print(f"| {budget} | {len(texts)} | {statistics.median(map(len, texts)):.0f} "
              f"| {statistics.median(pieces):.0f} | {truncated / len(texts):.1%} "
              f"| {lost_chars / (kept_chars + lost_chars):.1%} | {rate:.1f} | {len(texts) / rate:.0f} |")


if __name__ == "__main__":
    main()
