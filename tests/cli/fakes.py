"""Fake models wired into codeasst's own service factory, for tests of the command line's
contract (output shapes, exit codes, pipes) where the real models are not the point."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from typing import Any

from codeasst import services
from codeasst.backends.base import GenerationParams, Token
from codeasst.backends.fake import HashingEmbedder, ScriptedLLM


class PatientLLM(ScriptedLLM):
    """A scripted model that answers `default` once its queue is empty."""

    default = "The total is computed by `invoice_total` [1].\n"

    def stream(self, prompt: str, params: GenerationParams) -> Iterator[Token]:
        if not self.replies:
            self.enqueue(self.default)
        return super().stream(prompt, params)


def wire(set_attr: Callable[[Any, str, Any], None], llm: ScriptedLLM, evals: bool = False) -> None:
    """Make every `build_services` the CLI reaches use the hashing embedder and `llm`;
    `evals`: also the ones the eval commands imported by name."""
    real_build = services.build_services

    def build(start=None, flags=None, *, model=None, embedder=None, llm=None, **kwargs):
        return real_build(start, flags, model=model, embedder=HashingEmbedder(), llm=scripted, **kwargs)

    scripted = llm
    set_attr(services, "build_services", build)
    for name in ("codeasst.evals.retrieval", "codeasst.evals.ask") if evals else ():
        set_attr(importlib.import_module(name), "build_services", build)
