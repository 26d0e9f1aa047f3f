"""The one-time build of the ONNX embedder: export, fusion and int8 quantization.

The model is exported once, with mean pooling and normalisation inside the
graph, so its vectors match sentence-transformers' to float precision and both
can share one index. Attention is exported in its eager form so that
onnxruntime's BERT fusions (one Attention op per layer, SkipLayerNorm, BiasGelu)
apply; on 2 CPU cores that is about 10% faster than the unfused graph, with the
same vectors. The int8 variant quantizes the fused graph's weights per channel
(dynamic quantization: activations are quantized at run time); its vectors
differ slightly, so it is a different embedder identity (see OnnxEmbedder.name).

Only this module imports torch, and only for the export; the result is cached.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import warnings
from contextlib import contextmanager
from pathlib import Path

from codeasst.errors import ModelError

# Bump when the exported graph changes; a new version gets new files (v2: eager attention, fused).
EXPORT_VERSION = 2
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# The int8 model's vectors must stay this close (cosine) to the fp32 model's on the check texts.
INT8_MIN_COSINE = 0.95
CHECK_TEXTS = ["where is the config loaded?", "def add(a, b):\n    return a + b\n" * 20]


def onnx_path(cache_dir: Path, model_dir: Path) -> Path:
    """Where the fp32 export of `model_dir` lives; a new model version gets a new file."""
    stamp = f"{model_dir.resolve()}:{(model_dir / 'config.json').stat().st_mtime_ns}:{EXPORT_VERSION}"
    return cache_dir / "embedders" / f"{model_dir.name}-{hashlib.sha256(stamp.encode()).hexdigest()[:12]}.onnx"


def int8_path(fp32: Path) -> Path:
    return fp32.with_suffix(".int8.onnx")


def exportable(model_dir: Path) -> bool:
    """Whether the graph export reproduces what sentence-transformers computes for this model:
    a transformer followed by mean pooling (and normalisation, which the index applies anyway).
    A model with CLS or max pooling, or extra layers (Dense), would get different vectors."""
    modules_file = model_dir / "modules.json"
    if not modules_file.is_file():
        return True  # a plain transformers folder: sentence-transformers mean-pools it
    try:
        modules = json.loads(modules_file.read_text())
        kinds = [m["type"].rsplit(".", 1)[-1] for m in modules]
        if kinds[:2] != ["Transformer", "Pooling"] or set(kinds[2:]) - {"Normalize"}:
            return False
        pooling = next(m for m in modules if m["type"].endswith(".Pooling"))
        config = json.loads((model_dir / pooling["path"] / "config.json").read_text())
    except (OSError, ValueError, KeyError, TypeError, StopIteration):
        return False
    modes = {k for k, v in config.items() if k.startswith("pooling_mode") and v}
    return modes == {"pooling_mode_mean_tokens"}


@contextmanager
def _quiet():
    """onnxruntime's optimizer and quantizer log advice through the root logger; it is not for users."""
    logging.disable(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tracer chatter about shapes it treats as dynamic anyway
            yield
    finally:
        logging.disable(logging.NOTSET)


def export(model_dir: Path, dest: Path) -> Path:
    """Export a sentence-transformers (BERT-style, mean-pooled) model to ONNX, fused, atomically."""
    # Deferred: torch and transformers are only needed for this one-time export.
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    import torch
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    # Eager attention: the SDPA form does not match onnxruntime's attention fusion patterns.
    model = AutoModel.from_pretrained(str(model_dir), local_files_only=True, attn_implementation="eager").eval()

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
    dynamic = {name: {0: "batch", 1: "seq"} for name in INPUTS} | {"embedding": {0: "batch"}}
    try:
        with _quiet():
            torch.onnx.export(Pooled(), (sample, mask, torch.zeros_like(sample)), str(tmp),
                              input_names=list(INPUTS), output_names=["embedding"], dynamic_axes=dynamic,
                              opset_version=17, dynamo=False)
        model.eval()  # the TorchScript exporter leaves the model in training mode (dropout on)
        _fuse(tmp, model_dir)
        _check_export(tmp, model_dir, Pooled())
        os.replace(tmp, dest)
    except (RuntimeError, ValueError, ImportError, KeyError) as exc:
        tmp.unlink(missing_ok=True)
        raise ModelError(f"cannot export {model_dir} to ONNX: {exc}",
                         hint="set embedder.index_runtime = 'torch' and embedder.query_runtime = 'torch'") from None
    return dest


def _fuse(path: Path, model_dir: Path) -> None:
    """Apply onnxruntime's BERT fusions offline (opt_level 0: the graph stays portable across
    execution providers; each session still runs its own optimizations at load)."""
    config = json.loads((model_dir / "config.json").read_text())
    if config.get("model_type") != "bert":
        return  # the fusions below are BERT's; other models run unfused
    from onnxruntime.transformers import optimizer

    with _quiet():
        fused = optimizer.optimize_model(str(path), model_type="bert", num_heads=config["num_attention_heads"],
                                         hidden_size=config["hidden_size"], opt_level=0)
        fused.save_model_to_file(str(path))


def _embed(onnx_file: Path, model_dir: Path, texts: list[str]):
    import numpy as np
    import onnxruntime
    from tokenizers import Tokenizer

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(str(onnx_file), options, providers=["CPUExecutionProvider"])
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.enable_truncation(256)
    tokenizer.enable_padding()
    encodings = tokenizer.encode_batch(texts)
    arrays = [np.array([getattr(e, f) for e in encodings], dtype=np.int64) for f in ("ids", "attention_mask", "type_ids")]
    return arrays, session.run(["embedding"], dict(zip(INPUTS, arrays, strict=True)))[0]


def _check_export(onnx_file: Path, model_dir: Path, reference) -> None:
    """Refuse an export whose vectors differ from the original's on a padded batch."""
    import numpy as np
    import torch

    arrays, got = _embed(onnx_file, model_dir, CHECK_TEXTS)
    with torch.no_grad():
        want = reference(*(torch.from_numpy(a) for a in arrays)).numpy()
    if float(np.abs(got - want).max()) > 1e-3:
        raise ValueError("the exported model's vectors differ from the original's")


def quantize(fp32: Path, model_dir: Path, dest: Path) -> Path:
    """Quantize the fp32 export's weights to int8, per output channel, atomically.

    Per-tensor scales lose too much here (mean cosine to fp32 0.92 on code chunks, against
    0.99 per channel). Needs onnx and onnxruntime only, not torch."""
    import numpy as np
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    tmp = dest.with_suffix(f".{os.getpid()}.tmp")
    try:
        with _quiet():
            quantize_dynamic(str(fp32), str(tmp), weight_type=QuantType.QInt8, per_channel=True,
                             # the fused ops (Attention, BiasGelu) carry no type the quantizer can infer
                             extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
        _, want = _embed(fp32, model_dir, CHECK_TEXTS)
        _, got = _embed(tmp, model_dir, CHECK_TEXTS)
        if float(np.min((got * want).sum(1))) < INT8_MIN_COSINE:
            raise ValueError(f"the int8 model's vectors are further than cosine {INT8_MIN_COSINE} from fp32's")
        os.replace(tmp, dest)
    except (RuntimeError, ValueError, OSError) as exc:
        tmp.unlink(missing_ok=True)
        raise ModelError(f"cannot quantize {fp32} to int8: {exc}", hint="set embedder.precision = 'fp32'") from None
    return dest
