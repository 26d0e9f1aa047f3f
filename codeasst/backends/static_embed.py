"""A static embedder: a vector per token, averaged; no transformer at run time (issue 45).

The vectors are all-MiniLM-L6-v2's own, distilled once by model2vec (codeasst/embedders/static-minilm, built
by scripts/build_static_embedder.py), then trained on code chunks to give what MiniLM gives for them
(static-code: scripts/train_static_embedder.py, tokenlearn; issue 53), shipped as package
data; embedder.static_model chooses. Embedding is a
tokenizer pass and a table lookup, so it runs on numpy and `tokenizers`, both already needed by the
onnxruntime embedder, rather than on the `model2vec` package: that would add a dependency for 20
lines, its loader falls back to the Hugging Face hub for a path it cannot find, and ours checks the
files against the manifest's sha256 first. The build script checks that these vectors are
model2vec's own `encode` (cosine 1 on its sample).

One deliberate difference from model2vec's `encode`: a text with no known token (empty, or only
characters the vocabulary lacks) gets the mean of the table's vectors, "an average text", where
model2vec gives a zero vector; so every text has a unit vector that cosine distance can use.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from codeasst.backends.base import Embedder, Vector
from codeasst.embedders import SHIPPED
from codeasst.errors import ModelError

MANIFEST = "manifest.json"
REQUIRED = frozenset({"model.safetensors", "tokenizer.json"})
# Tokens averaged per text, and characters read before tokenizing (the token limit times the
# vocabulary's median token length): model2vec's defaults. A chunk is about 1,000 characters; a
# 100,000-character one is cut here, not tokenized whole.
MAX_TOKENS = 512
_REBUILD = "reinstall codeasst, or rebuild it: python scripts/build_static_embedder.py"




def bundled_static_dir(name: str = SHIPPED[0]) -> Path:
    """A static model shipped with codeasst (embedder.static_model), or the folder that names one."""
    from importlib.resources import files

    if name in SHIPPED:
        return Path(str(files("codeasst.embedders") / name))
    return Path(name).expanduser()


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def artefact_sha256(files: dict[str, str]) -> str:
    """One digest for the whole model: over `sha256sum`'s lines for its files, sorted by name."""
    lines = "".join(f"{sha}  {name}\n" for name, sha in sorted(files.items()))
    return hashlib.sha256(lines.encode()).hexdigest()


def read_manifest(folder: Path) -> dict[str, Any]:
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        files = manifest["output"]["files"]
        if not isinstance(files, dict) or not REQUIRED <= files.keys():
            raise ValueError(f"it must list {', '.join(sorted(REQUIRED))}")
        if artefact_sha256(files) != manifest["output"]["sha256"]:
            raise ValueError("its file list does not match its sha256")
    except FileNotFoundError:
        raise ModelError(f"the static embedder is missing: no {folder / MANIFEST}", hint=_REBUILD) from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ModelError(f"the static embedder's manifest is damaged ({folder / MANIFEST}: {exc})",
                         hint=_REBUILD) from None
    return manifest


@dataclass(frozen=True)
class _Model:
    table: Any  # numpy array, one row per token id (int8 or float16 as stored)
    fallback: Any  # float32 unit vector for a text with no known token
    tokenizer: Any
    unk_id: int | None
    max_chars: int


@lru_cache(maxsize=4)
def _load(folder: str) -> _Model:
    """Check every file against the manifest (once per process and folder), then load."""
    import numpy as np
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    root = Path(folder)
    manifest = read_manifest(root)
    for name, expected in manifest["output"]["files"].items():
        path = root / name
        if not path.is_file():
            raise ModelError(f"the static embedder is missing {path}", hint=_REBUILD)
        if file_sha256(path) != expected:
            raise ModelError(f"the static embedder is damaged: {path} does not match its sha256", hint=_REBUILD)
    # The files are the build's own now (their sha256 matched), and the build loaded them: no error
    # of a damaged file can come from here.
    table = load_file(str(root / "model.safetensors"))["embeddings"]
    tokenizer = Tokenizer.from_file(str(root / "tokenizer.json"))
    vocab = tokenizer.get_vocab()
    if table.ndim != 2 or table.shape[0] != len(vocab):
        raise ModelError(f"the static embedder in {root} has {table.shape[0]} vectors for {len(vocab)} tokens",
                         hint=_REBUILD)
    tokenizer.no_padding()
    tokenizer.enable_truncation(MAX_TOKENS)
    unk_token = getattr(tokenizer.model, "unk_token", None)
    unk_id = tokenizer.token_to_id(unk_token) if unk_token else None
    # Not the unknown token's own vector: Zipf weighting leaves the first tokens of the vocabulary
    # (the special ones) near zero, and int8 rounds them to zero.
    fallback = table.mean(axis=0, dtype=np.float32)
    norm = np.linalg.norm(fallback)
    fallback = fallback / norm if norm else np.eye(table.shape[1], dtype=np.float32)[0]
    median_token = int(np.median([len(token) for token in vocab]))
    return _Model(table, fallback, tokenizer, unk_id, MAX_TOKENS * median_token)


class StaticEmbedder(Embedder):
    """Loads (and checks) its files once per process, on first use."""

    batch_size = 1024  # no padding, no forward pass: big batches only save Python overhead
    static = True

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder or bundled_static_dir()
        manifest = read_manifest(self.folder)
        # The artefact's digest is in the name: a rebuilt model means every stored vector is stale.
        self.name = f"static:{manifest.get('name', self.folder.name)}@{manifest['output']['sha256'][:12]}"
        self.dim = int(manifest["output"].get("dim", 0))

    def load(self) -> None:
        _load(str(self.folder))

    def embed_batch(self, texts: Sequence[str]) -> list[Vector]:
        import numpy as np

        model = _load(str(self.folder))
        encodings = model.tokenizer.encode_batch_fast([t[: model.max_chars] for t in texts],
                                                      add_special_tokens=False)
        out = np.empty((len(texts), model.table.shape[1]), dtype=np.float32)
        for row, encoding in enumerate(encodings):
            ids = np.asarray(encoding.ids, dtype=np.int64)
            if model.unk_id is not None:
                ids = ids[ids != model.unk_id]  # as model2vec: an unknown piece says nothing
            out[row] = model.table[ids].astype(np.float32).mean(axis=0) if ids.size else model.fallback
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        # A text whose token vectors cancel out exactly (never seen) would divide by zero.
        empty = norms[:, 0] == 0
        out[empty], norms[empty] = model.fallback, 1.0
        return (out / norms).tolist()
