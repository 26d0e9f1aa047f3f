"""The sentence-transformers model, run by onnxruntime: for queries and for indexing.

Importing sentence-transformers costs about 6.5 s here (torch plus the
transformers import chain), which would dominate every `search` and `ask`.
onnxruntime and tokenizers import in about 0.3 s. The graph is built once
(codeasst.backends.onnx_export) and cached.

Indexing is embedding-bound, so `embed` tokenizes every text once, truncated
to the model's word-piece limit exactly as sentence-transformers truncates,
sorts by token count and pads only within batches of similar length, each
batch bounded in padded tokens as well as texts.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import threading
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path

from codeasst.backends.base import Embedder, Vector
from codeasst.backends.onnx_export import INPUTS, export, int8_path, onnx_path, quantize

__all__ = ["OnnxEmbedder", "buckets", "onnx_path"]

# Padded tokens per forward pass on the CPU, besides batch_size texts, so batches of long texts
# stay small enough for the caches. 2,048 was chosen on 2 cores against 1,024, 4,096 and 8,192
# (fp32 and int8); that comparison has no figure in docs/benchmarks.md and was not re-measured.
# A GPU gets batch_size texts whatever their length.
CPU_BATCH_TOKENS = 2048
_BUILDING = threading.Lock()  # the one-time ONNX export, one at a time in a process


def _threads() -> int:
    # The CPUs this process may run on (taskset, cgroup cpusets), not every CPU of the machine.
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def import_onnxruntime():
    """onnxruntime, imported so that Ctrl-C stays Ctrl-C: its native module turns a KeyboardInterrupt
    raised while it initialises into `ImportError: initialization failed` (a traceback and exit 1 where
    Ctrl-C means 130). A SIGINT that arrives during the import is held until after it; one that arrived
    just before (Python raises it at its next chance, inside the import) is raised again as itself."""
    main = threading.current_thread() is threading.main_thread() and hasattr(signal, "pthread_sigmask")
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if main else None
    try:
        return importlib.import_module("onnxruntime")
    except ImportError as exc:
        if _interrupted(exc):
            raise KeyboardInterrupt from None
        raise
    finally:
        if held is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _interrupted(exc: BaseException | None) -> bool:
    seen = 0
    while exc is not None and seen < 20:
        if isinstance(exc, KeyboardInterrupt):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


@lru_cache(maxsize=4)
def _session(path: str, device: str):
    onnxruntime = import_onnxruntime()

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    options.intra_op_num_threads = _threads()
    options.inter_op_num_threads = 1  # one graph, run op by op: parallelism is inside each op
    # Idle threads spinning for work would take CPU from other processes on a shared machine,
    # and measured no faster here on 2 cores.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    cpu = ["CPUExecutionProvider"]
    if device in ("auto", "cuda") and "CUDAExecutionProvider" in onnxruntime.get_available_providers():
        try:
            return onnxruntime.InferenceSession(path, options, providers=["CUDAExecutionProvider", *cpu])
        except (RuntimeError, ValueError):  # onnxruntime-gpu installed, but no usable GPU or CUDA
            pass
    return onnxruntime.InferenceSession(path, options, providers=cpu)


@lru_cache(maxsize=4)
def _tokenizer(model_dir: str, max_length: int):
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json"))
    # The file's own settings (all-MiniLM-L6-v2's: truncate at 128, pad to 128) are not what
    # sentence-transformers applies; it truncates at max_seq_length and pads per batch.
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length)
    return tokenizer


def _max_length(model_dir: Path, override: int | None) -> int:
    if override:
        return override
    config = model_dir / "sentence_bert_config.json"
    if config.is_file():
        return int(json.loads(config.read_text()).get("max_seq_length", 256))
    return 256


def buckets(lengths: Sequence[int], max_texts: int, max_tokens: int) -> list[list[int]]:
    """Indices of `lengths` grouped into batches of similar length: sorted by length, each batch
    at most `max_texts` long and at most `max_tokens` once padded to its longest member."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches: list[list[int]] = []
    batch: list[int] = []
    for i in order:
        # Sorted ascending, so the newcomer is the longest: it sets the padded width.
        if batch and (len(batch) >= max_texts or (len(batch) + 1) * lengths[i] > max_tokens):
            batches.append(batch)
            batch = []
        batch.append(i)
    if batch:
        batches.append(batch)
    return batches


class OnnxEmbedder(Embedder):
    """`precision` 'fp32' gives sentence-transformers' vectors, so it shares their identity (`name`);
    'int8' gives slightly different ones and is named apart, so an index never mixes the two."""

    def __init__(self, model_dir: Path, cache_dir: Path, name: str, batch_size: int = 32,
                 max_seq_length: int | None = None, precision: str = "fp32", device: str = "auto", *,
                 on_build: Callable[[], None] | None = None) -> None:
        if precision not in ("fp32", "int8"):
            raise ValueError(f"precision must be 'fp32' or 'int8', not {precision!r}")
        self.model_dir = model_dir
        self.fp32_file = onnx_path(cache_dir, model_dir)
        self.onnx_file = self.fp32_file if precision == "fp32" else int8_path(self.fp32_file)
        self.precision = precision
        self.name = name if precision == "fp32" else f"{name}+onnx-int8"
        self.batch_size = batch_size
        self.max_length = _max_length(model_dir, max_seq_length)
        self.device = device
        self.on_build = on_build  # told before a build starts: it takes seconds, once

    @property
    def built(self) -> bool:
        """Whether the graph this embedder runs is already in the cache (else load() builds it)."""
        return self.onnx_file.is_file()

    def load(self) -> None:
        import_onnxruntime()  # first, before the export's imports of it: see there
        if not self.built:
            # One build at a time in a process: torch's exporter keeps global state, and a server's or
            # `codeasst mcp`'s background embedding may start one while a search starts another.
            with _BUILDING:
                if not self.built and self.on_build:
                    self.on_build()
                if not self.fp32_file.is_file():
                    export(self.model_dir, self.fp32_file)
                if not self.onnx_file.is_file():
                    quantize(self.fp32_file, self.model_dir, self.onnx_file)
        _session(str(self.onnx_file), self.device)

    @property
    def providers(self) -> list[str]:
        """Where the model runs, e.g. ['CUDAExecutionProvider', 'CPUExecutionProvider']."""
        self.load()
        return _session(str(self.onnx_file), self.device).get_providers()

    def embed(self, texts: Sequence[str], progress: Callable[[int], None] | None = None) -> list[Vector]:
        import numpy as np

        self.load()
        session = _session(str(self.onnx_file), self.device)
        # sentence-transformers strips each text before tokenizing; so must we, to match it.
        encodings = _tokenizer(str(self.model_dir), self.max_length).encode_batch([t.strip() for t in texts])
        lengths = [len(e.ids) for e in encodings]
        on_gpu = session.get_providers()[0] == "CUDAExecutionProvider"
        max_tokens = self.batch_size * self.max_length if on_gpu else CPU_BATCH_TOKENS
        out: list[Vector] = [[] for _ in texts]
        for batch in buckets(lengths, self.batch_size, max_tokens):
            width = max(lengths[i] for i in batch)
            feeds = {name: np.zeros((len(batch), width), dtype=np.int64) for name in INPUTS}
            for row, i in enumerate(batch):
                feeds["input_ids"][row, : lengths[i]] = encodings[i].ids
                feeds["attention_mask"][row, : lengths[i]] = 1
                feeds["token_type_ids"][row, : lengths[i]] = encodings[i].type_ids
            vectors = session.run(["embedding"], feeds)[0].tolist()
            for row, i in enumerate(batch):
                out[i] = vectors[row]
            if progress:
                progress(len(batch))
        return out

    def embed_batch(self, texts: Sequence[str]) -> list[Vector]:
        return self.embed(texts)
