"""One way to wire the services, shared by the CLI, the TUI, the server and the tests.

Models load lazily and once per process: the backends cache their loaders.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeasst import paths
from codeasst.backends.base import LLM, Embedder
from codeasst.config import LoadedSettings, Settings, load_settings
from codeasst.index import owner
from codeasst.index.indexer import Indexer, Progress
from codeasst.index.vectors import VectorStore
from codeasst.models import ModelSpec, build_llm, resolve, resolve_ask, resolve_complete

if TYPE_CHECKING:
    from codeasst.backends.sentence_tf import SentenceTransformerEmbedder


@dataclass
class Repo:
    root: Path
    is_git: bool

    @classmethod
    def find(cls, start: Path) -> Repo:
        root, is_git = paths.find_repo_root(start)
        return cls(root, is_git)

    @property
    def index_dir(self) -> Path:
        return paths.index_dir(self.root)


@dataclass
class Services:
    repo: Repo
    loaded: LoadedSettings
    model_choice: str | None = None  # --model NAME|PATH; None means llm.model
    on_model_progress: Callable[[int, int], None] | None = field(default=None, repr=False)
    on_note: Callable[[str], None] | None = field(default=None, repr=False)
    """Where to tell the user about slow one-time work as it starts (the CLI prints to stderr)."""
    _embedder: Embedder | None = field(default=None, repr=False)
    _llm: LLM | None = field(default=None, repr=False)
    serving: bool = False
    """This process is `codeasst serve`, which owns the embedded store (index/owner.py)."""

    @property
    def settings(self) -> Settings:
        return self.loaded.settings

    def note(self, message: str) -> None:
        if self.on_note is not None:
            self.on_note(message)

    @cached_property
    def embedder(self) -> Embedder:
        """The index embedder: 'static' is the shipped static model (backends/static_embed.py); else MiniLM or
        the model folder named, on a GPU torch's (sentence-transformers on CUDA, fp32); else onnxruntime,
        unless embedder.index_runtime is 'torch' or the model's pooling cannot be exported faithfully.
        Built without importing either runtime (but for torch where an NVIDIA driver is loaded)."""
        if self._embedder is not None:
            return self._embedder
        cfg = self.settings.embedder
        if cfg.model == "static":
            from codeasst.backends.static_embed import StaticEmbedder, bundled_static_dir

            # a table lookup: no runtime, device or batch to choose
            return StaticEmbedder(bundled_static_dir(cfg.static_model))
        from codeasst.backends.onnx_export import exportable
        from codeasst.backends.sentence_tf import SentenceTransformerEmbedder, cuda_available

        if cfg.device in ("auto", "cuda") and cfg.index_runtime == "onnx" and cuda_available():
            # docs/benchmarks.md (issue 36): MiniLM on CUDA through torch outruns onnxruntime on the CPU by far.
            return SentenceTransformerEmbedder(cfg.model, "cuda", max(cfg.batch_size, cfg.gpu_batch_size),
                                               cfg.max_seq_length)
        torch_embedder = SentenceTransformerEmbedder(cfg.model, cfg.device, cfg.batch_size, cfg.max_seq_length)
        if cfg.index_runtime == "torch" or not exportable(torch_embedder.path):
            return torch_embedder
        return self._onnx_embedder(torch_embedder, cfg.precision)

    @cached_property
    def query_embedder(self) -> Embedder:
        """The embedder for queries: the index embedder when it runs on onnxruntime or is the static one
        (same vectors, fast start), else the same model on onnxruntime in fp32, whose vectors are torch's."""
        from codeasst.backends.onnx_export import exportable
        from codeasst.backends.sentence_tf import SentenceTransformerEmbedder

        embedder = self.embedder  # a test's fake, the onnxruntime embedder, or torch's
        if (not isinstance(embedder, SentenceTransformerEmbedder) or self.settings.embedder.query_runtime == "torch"
                or not exportable(embedder.path)):
            return embedder
        return self._onnx_embedder(embedder, "fp32")

    @cached_property
    def minilm(self) -> Embedder:
        """all-MiniLM-L6-v2 on onnxruntime (fp32), whatever the index embedder: what reranks over static
        vectors (retrieval.minilm_rerank)."""
        from codeasst.backends.sentence_tf import BUNDLED, SentenceTransformerEmbedder

        cfg = self.settings.embedder
        return self._onnx_embedder(SentenceTransformerEmbedder(BUNDLED, cfg.device, cfg.batch_size, cfg.max_seq_length),
                                   "fp32")

    def _onnx_embedder(self, base: SentenceTransformerEmbedder, precision: str) -> Embedder:
        from codeasst.backends.onnx_embed import OnnxEmbedder

        cfg = self.settings.embedder
        return OnnxEmbedder(base.path, paths.cache_dir(), base.name, cfg.batch_size, cfg.max_seq_length,
                            precision, cfg.device,
                            on_build=lambda: self.note("building the fast query embedder (once, used for "
                                                       "indexing too; about 30 s)"))

    @cached_property
    def model_spec(self) -> ModelSpec:
        return resolve(self.settings, self.model_choice)

    @cached_property
    def llm(self) -> LLM:
        """The language model; built on first use, and its weights loaded once per process."""
        if self._llm is not None:
            return self._llm
        return build_llm(self.model_spec, self.settings, self.on_model_progress)

    @cached_property
    def ask_spec(self) -> ModelSpec | None:
        return resolve_ask(self.settings, self.model_choice)

    @cached_property
    def ask_llm(self) -> LLM | None:
        """The model that explains ask's answers (ask.model): the same object as `llm` where both name
        one model; None where ask.model is 'none' (the answer is its lead and outline)."""
        spec = self.ask_spec
        if spec is None:
            return None
        if self._llm is not None or spec == self.model_spec:
            return self.llm
        return build_llm(spec, self.settings, self.on_model_progress)

    @cached_property
    def complete_spec(self) -> ModelSpec:
        return resolve_complete(self.settings, self.model_choice)

    @cached_property
    def complete_llm(self) -> LLM:
        """The model that completes (complete.model); the same object as `llm` when both name one model,
        but in the server, where completions get a llama.cpp context of their own: an editor's request
        never waits behind an answer being written."""
        if self._llm is not None or (self.complete_spec == self.model_spec and not self.serving):
            return self.llm
        return build_llm(self.complete_spec, self.settings, self.on_model_progress,
                         slot="complete" if self.serving else "")

    def claim_index(self) -> None:
        """Hold the embedded store for this process, or fail (exit 75) while a server owns it.
        A Chroma server is shared as Chroma supports, so it needs no claim."""
        if not self.serving and not self.settings.store.chroma_url:
            owner.share(self.repo.index_dir)

    @cached_property
    def first_embedder(self) -> Embedder | None:
        """The first phase's embedder (embedder.first_phase): the static model, whose vectors search uses
        until the index embedder's cover every chunk. None where the index embedder is static itself, or
        is a test's (an embedder passed in)."""
        if self._embedder is not None or self.settings.embedder.first_phase != "static" or self.embedder.static:
            return None
        from codeasst.backends.static_embed import StaticEmbedder, bundled_static_dir

        return StaticEmbedder(bundled_static_dir(self.settings.embedder.static_model))

    def open_store(self, embedder: str | None = None) -> VectorStore:
        """The collection of `embedder`'s vectors (the index embedder's by default)."""
        self.claim_index()
        return VectorStore.open(self.repo.root, self.repo.index_dir, embedder or self.embedder.name,
                                self.settings.store.chroma_url)

    def indexer(self, progress: Progress | None = None) -> Indexer:
        self.claim_index()  # an index run may wipe the store's files: never under a server's client
        return Indexer(self.repo.root, self.repo.index_dir, self.settings.index, self.embedder,
                       self.open_store, progress, chroma_url=self.settings.store.chroma_url,
                       first=self.first_embedder)


def build_services(start: Path | None = None, flags: dict[str, Any] | None = None, *,
                   model: str | None = None, embedder: Embedder | None = None, llm: LLM | None = None,
                   on_model_progress: Callable[[int, int], None] | None = None,
                   on_note: Callable[[str], None] | None = None) -> Services:
    """Find the repository around `start`, load its settings, and wire the backends.

    `embedder` and `llm` replace the configured backends (tests pass fakes here)."""
    repo = Repo.find(start or Path.cwd())
    loaded = load_settings(repo.root, flags)
    return Services(repo=repo, loaded=loaded, model_choice=model, on_model_progress=on_model_progress,
                    on_note=on_note, _embedder=embedder, _llm=llm)
