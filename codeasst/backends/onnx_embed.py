"""The same sentence-transformers model, run by onnxruntime for queries.

Importing sentence-transformers costs about 6.5 s here (torch plus the
transformers import chain), which would dominate every `search` and `ask`.
onnxruntime and tokenizers import in about 0.3 s. The model is exported to ONNX
once, with mean pooling and normalisation inside the graph, so its vectors
match sentence-transformers' to float precision and both can share one index.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from codeasst.backends.base import Embedder, Vector
from codeasst.errors import ModelError

EXPORT_VERSION = 1


def onnx_path(cache_dir: Path, model_dir: Path) -> Path:
    """Where the export of `model_dir` lives; a new model version gets a new file."""
    stamp = f"{model_dir.resolve()}:{(model_dir / 'config.json').stat().st_mtime_ns}:{EXPORT_VERSION}"
    return cache_dir / "embedders" / f"{model_dir.name}-{hashlib.sha256(stamp.encode()).hexdigest()[:12]}.onnx"


def export(model_dir: Path, dest: Path) -> Path:
    """Export a sentence-transformers (BERT-style, mean-pooled) model to ONNX, atomically."""
    # Deferred: torch and transformers are only needed for this one-time export.
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    import torch
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    model = AutoModel.from_pretrained(str(model_dir), local_files_only=True).eval()

    class Pooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            hidden = self.model(input_ids=input_ids, attention_mask=attention_mask,
                                token_type_ids=token_type_ids).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2, dim=1)

    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(f".{os.getpid()}.tmp")
    # Trace with a padded batch: traced on an all-ones mask, the graph would drop the mask.
    sample = torch.ones((2, 8), dtype=torch.int64)
    mask = sample.clone()
    mask[1, 5:] = 0
    inputs = ["input_ids", "attention_mask", "token_type_ids"]
    dynamic = {name: {0: "batch", 1: "seq"} for name in inputs} | {"embedding": {0: "batch"}}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tracer chatter about shapes it treats as dynamic anyway
            torch.onnx.export(Pooled(), (sample, mask, torch.zeros_like(sample)), str(tmp),
                              input_names=inputs, output_names=["embedding"], dynamic_axes=dynamic,
                              opset_version=17, dynamo=False)
        model.eval()  # the TorchScript exporter leaves the model in training mode (dropout on)
        _check_export(tmp, model_dir, Pooled())
        os.replace(tmp, dest)
    except (RuntimeError, ValueError, ImportError) as exc:
        tmp.unlink(missing_ok=True)
        raise ModelError(f"cannot export {model_dir} to ONNX: {exc}", hint="set embedder.query_runtime = 'torch'") from None
    return dest


def _check_export(onnx_file: Path, model_dir: Path, reference) -> None:
    """Refuse an export whose vectors differ from the original's on a padded batch."""
    import numpy as np
    import torch

    session, tokenizer = _session.__wrapped__(str(onnx_file), str(model_dir), 256)
    texts = ["where is the config loaded?", "def add(a, b):\n    return a + b\n" * 20]
    encodings = tokenizer.encode_batch(texts)
    arrays = [np.array([getattr(e, f) for e in encodings], dtype=np.int64)
              for f in ("ids", "attention_mask", "type_ids")]
    got = session.run(["embedding"], dict(zip(("input_ids", "attention_mask", "token_type_ids"), arrays,
                                              strict=True)))[0]
    with torch.no_grad():
        want = reference(*(torch.from_numpy(a) for a in arrays)).numpy()
    if float(np.abs(got - want).max()) > 1e-3:
        raise ValueError("the exported model's vectors differ from the original's")


@lru_cache(maxsize=2)
def _session(path: str, model_dir: str, max_length: int):
    import onnxruntime
    from tokenizers import Tokenizer

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    tokenizer = Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json"))
    tokenizer.enable_truncation(max_length)
    tokenizer.enable_padding()
    return session, tokenizer


def _max_length(model_dir: Path, override: int | None) -> int:
    if override:
        return override
    config = model_dir / "sentence_bert_config.json"
    if config.is_file():
        return int(json.loads(config.read_text()).get("max_seq_length", 256))
    return 256


class OnnxEmbedder(Embedder):
    def __init__(self, model_dir: Path, onnx_file: Path, name: str, batch_size: int = 32,
                 max_seq_length: int | None = None) -> None:
        self.model_dir = model_dir
        self.onnx_file = onnx_file
        self.name = name  # the same model as the torch embedder: vectors are interchangeable
        self.batch_size = batch_size
        self.max_length = _max_length(model_dir, max_seq_length)

    def load(self) -> None:
        if not self.onnx_file.is_file():
            export(self.model_dir, self.onnx_file)
        _session(str(self.onnx_file), str(self.model_dir), self.max_length)

    def embed_batch(self, texts: Sequence[str]) -> list[Vector]:
        import numpy as np

        self.load()
        session, tokenizer = _session(str(self.onnx_file), str(self.model_dir), self.max_length)
        encodings = tokenizer.encode_batch(list(texts))
        feeds = {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
        }
        return session.run(["embedding"], feeds)[0].tolist()
