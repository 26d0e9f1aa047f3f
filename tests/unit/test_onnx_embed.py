"""The onnxruntime embedder: its batching, which runtime services pick, and (slow) its vectors
against sentence-transformers' on the bundled model."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from codeasst.backends.onnx_embed import OnnxEmbedder, buckets
from codeasst.backends.sentence_tf import SentenceTransformerEmbedder
from codeasst.services import build_services

TORCH_NAME = "sentence-transformers:all-MiniLM-L6-v2"
LONG = "def handler(request, response):\n    return compute_total(request.items, discount=0.25)\n" * 30
TEXTS = [
    "where is the config loaded?",
    "   leading and trailing whitespace   \n",
    "",
    "codeasst/index/indexer.py Indexer.run\n    def run(self, rebuild: bool = False) -> IndexSummary:\n",
    LONG,  # over 256 word pieces: truncated
    "Ünïcödé and 中文 text with emoji 🙂 and CamelCaseNames",
    "x = 1\n" * 40,
]


def test_buckets_sort_by_length_and_bound_texts_and_padded_tokens():
    lengths = [50, 3, 200, 10, 10, 256, 4, 120, 7, 9]
    batches = buckets(lengths, max_texts=3, max_tokens=300)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    flat = [lengths[i] for b in batches for i in b]
    assert flat == sorted(lengths)
    for batch in batches:
        assert len(batch) <= 3
        assert len(batch) == 1 or len(batch) * max(lengths[i] for i in batch) <= 300
    assert [[lengths[i] for i in b] for b in batches] == [[3, 4, 7], [9, 10, 10], [50, 120], [200], [256]]


def test_buckets_keep_a_text_longer_than_the_budget_alone():
    assert buckets([5000, 1], max_texts=8, max_tokens=100) == [[1], [0]]
    assert buckets([6000, 5000], max_texts=8, max_tokens=100) == [[1], [0]]
    assert buckets([], max_texts=8, max_tokens=100) == []


MINILM = {"embedder.model": "bundled"}  # the static model is the default


def test_services_index_on_onnxruntime_and_name_int8_apart(make_repo):
    root = make_repo({"a.py": "x = 1\n"})
    fp32 = build_services(root, MINILM)
    assert isinstance(fp32.embedder, OnnxEmbedder) and fp32.embedder.precision == "fp32"
    assert fp32.embedder.name == TORCH_NAME, "fp32 vectors are torch's: indexes built by either stay valid"
    assert fp32.query_embedder is fp32.embedder, "queries must be embedded like the index"

    int8 = build_services(root, {**MINILM, "embedder.precision": "int8"})
    assert isinstance(int8.embedder, OnnxEmbedder) and int8.embedder.name == TORCH_NAME + "+onnx-int8"
    assert int8.query_embedder is int8.embedder
    assert fp32.open_store().name != int8.open_store().name, "int8 vectors are kept apart from fp32's"

    torch = build_services(root, {**MINILM, "embedder.index_runtime": "torch"})
    assert isinstance(torch.embedder, SentenceTransformerEmbedder) and torch.embedder.name == TORCH_NAME
    assert isinstance(torch.query_embedder, OnnxEmbedder) and torch.query_embedder.precision == "fp32"
    assert torch.query_embedder.name == TORCH_NAME
    assert fp32.open_store().name == torch.open_store().name, "fp32 onnx and torch share vectors"


def test_where_a_gpu_is_present_the_index_embedder_runs_on_it(make_repo, monkeypatch):
    from codeasst.backends import sentence_tf

    root = make_repo({"a.py": "x = 1\n"})
    assert isinstance(build_services(root, MINILM).embedder, OnnxEmbedder), "no GPU here: onnxruntime on the CPU"
    monkeypatch.setattr(sentence_tf, "cuda_available", lambda: True)
    gpu = build_services(root, MINILM).embedder
    assert isinstance(gpu, SentenceTransformerEmbedder) and (gpu.device, gpu.batch_size) == ("cuda", 1024)
    assert gpu.name == TORCH_NAME, "fp32 on the GPU: an index it builds serves queries embedded on the CPU"
    assert isinstance(build_services(root, MINILM).query_embedder, OnnxEmbedder)
    kept = build_services(root, {**MINILM, "embedder.device": "cpu"}).embedder
    assert isinstance(kept, OnnxEmbedder), "embedder.device = 'cpu' keeps it off the GPU"


def test_a_model_the_export_cannot_reproduce_stays_on_torch(make_repo, tmp_path):
    model = tmp_path / "cls-model"
    (model / "1_Pooling").mkdir(parents=True)
    (model / "config.json").write_text("{}")
    (model / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
    (model / "1_Pooling" / "config.json").write_text(json.dumps(
        {"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False}))
    services = build_services(make_repo({"a.py": "x = 1\n"}), {"embedder.model": str(model)})
    assert isinstance(services.embedder, SentenceTransformerEmbedder)
    assert services.query_embedder is services.embedder


@pytest.fixture(scope="module")
def bundled_dir():
    from codeasst.backends.sentence_tf import bundled_model_dir

    return bundled_model_dir()


@pytest.mark.slow
@pytest.mark.parametrize("max_seq_length", [None, 128])
def test_fp32_vectors_match_sentence_transformers(bundled_dir, codeasst_home, max_seq_length):
    torch_embedder = SentenceTransformerEmbedder(max_seq_length=max_seq_length)
    onnx = OnnxEmbedder(bundled_dir, codeasst_home / "cache", torch_embedder.name, batch_size=4,
                        max_seq_length=max_seq_length)
    limit = max_seq_length or 256
    tokens = torch_embedder.model.tokenizer(LONG)["input_ids"]
    assert len(tokens) > limit, "the long text must be truncated"

    want = np.array(torch_embedder.model.encode(TEXTS, batch_size=32, normalize_embeddings=True))
    got = np.array(onnx.embed(TEXTS))  # one call: mixed lengths, several buckets of 4
    assert np.abs(got - want).max() < 1e-5
    alone = np.array([onnx.embed_batch([t])[0] for t in TEXTS])
    assert np.abs(alone - want).max() < 1e-5, "padding within a bucket must not change a vector"
    assert onnx.name == torch_embedder.name


@pytest.mark.slow
def test_int8_vectors_are_close_but_not_fp32s(bundled_dir, codeasst_home):
    fp32 = OnnxEmbedder(bundled_dir, codeasst_home / "cache", TORCH_NAME)
    int8 = OnnxEmbedder(bundled_dir, codeasst_home / "cache", TORCH_NAME, precision="int8")
    a, b = np.array(fp32.embed(TEXTS)), np.array(int8.embed(TEXTS))
    cosine = (a * b).sum(1)
    assert cosine.min() > 0.95
    assert np.abs(a - b).max() > 1e-4, "int8 must differ, or it needs no identity of its own"
    assert int8.name != fp32.name


@pytest.mark.slow
def test_indexing_on_onnxruntime_imports_neither_torch_nor_sentence_transformers(make_repo, codeasst_home):
    root = make_repo({"a.py": "def add(a, b):\n    return a + b\n", "b.md": "# Title\n\nSome text.\n"})
    build_services(root).embedder.load()  # the one-time export may use torch: done here, cached
    script = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from codeasst.services import build_services
        summary = build_services(Path({str(root)!r})).indexer().run()
        print(summary.chunks_written, "torch" in sys.modules, "sentence_transformers" in sys.modules,
              "transformers" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.split()
    assert int(out[0]) >= 2
    assert out[1:] == ["False", "False", "False"]


def test_ctrl_c_while_onnxruntime_initialises_stays_a_keyboard_interrupt(monkeypatch):
    # onnxruntime's native module reports a KeyboardInterrupt raised during its initialisation as
    # `ImportError: initialization failed`; seen as such, Ctrl-C at that moment gave a traceback and exit 1.
    from codeasst.backends import onnx_embed

    def failing(name):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise ImportError("initialization failed") from exc

    monkeypatch.setattr(onnx_embed.importlib, "import_module", failing)
    with pytest.raises(KeyboardInterrupt):
        onnx_embed.import_onnxruntime()

    def broken(name):
        raise ImportError("libonnxruntime.so: cannot open shared object file")

    monkeypatch.setattr(onnx_embed.importlib, "import_module", broken)
    with pytest.raises(ImportError, match="cannot open"):
        onnx_embed.import_onnxruntime()
