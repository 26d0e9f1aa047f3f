"""llama.cpp in process, through llama-cpp-python.

The model loads once per process (the loader is cached) and keeps its KV
cache between calls, so a prompt that shares a prefix with the previous one
only evaluates the new part: what makes inline completion fast.
"""

from __future__ import annotations

import atexit
import codecs
import hashlib
import json
import os
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import lru_cache
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING

from codeasst.backends.base import LLM, GenerationParams, Token
from codeasst.errors import ModelError

if TYPE_CHECKING:
    import numpy as np


def default_threads() -> int:
    """Physical cores, roughly: hyper-threads slow llama.cpp's matrix work down."""
    count = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, count if count <= 4 else count // 2)


def gpu_offload_supported() -> bool:
    import llama_cpp

    return bool(llama_cpp.llama_supports_gpu_offload())


CALIBRATION = "def f(x):\n    return [x * i for i in range(10)]\n" * 8  # about 130 tokens of code
SPEED_SAMPLE = 32  # new prompt tokens a request must read for its speed to count
SPEED_SAVE_S = 60.0  # the measured speed is written to disk at most this often
REUSE_CHUNK = 64  # tokens: a shorter run found further on in the cache is read again, not shifted
WARM_BATCH = 256  # tokens evaluated between two looks at `cancelled` (about 1.5 s on 2 CPU cores)


# Every Llama this process made that is still alive, for close_all; weak, so one the cache drops is freed.
_LOADED: weakref.WeakSet = weakref.WeakSet()


def close_all() -> None:
    """Free every model this process loaded, while llama_cpp is still whole. Left to the interpreter's
    teardown, `Llama.__del__` finds its library half unloaded and prints a traceback after the last
    line the user should see. Registered with atexit below; tests call it at the end."""
    _load.cache_clear()
    for llama in list(_LOADED):
        llama.close()
    _LOADED.clear()


atexit.register(close_all)


@lru_cache(maxsize=4)
def _load(path: str, n_ctx: int, n_gpu_layers: int, n_threads: int, slot: str = ""):
    # `slot` names a context of its own on the same weights (the server's completions: they never wait
    # behind an answer being written in the other); the file's pages are shared through the OS cache.
    # Deferred: llama_cpp loads a large shared library.
    import llama_cpp

    if not Path(path).is_file():
        raise ModelError(f"model file not found: {path}")
    try:
        with no_weight_repacking(amx_cpu()):
            llama = llama_cpp.Llama(
                model_path=path, n_ctx=n_ctx, n_gpu_layers=n_gpu_layers, n_threads=n_threads,
                n_threads_batch=n_threads, n_batch=512, verbose=False,
            )
    except (ValueError, RuntimeError, OSError) as exc:
        raise ModelError(f"cannot load {path}: {exc} (a corrupt GGUF, or not enough memory?)") from None
    _LOADED.add(llama)
    return llama


def amx_cpu() -> bool:
    """Whether the CPU says it has Intel AMX (Sapphire Rapids and later)."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            return any(line.startswith("flags") and " amx_int8" in line for line in fh)
    except OSError:
        return False


_params_lock = threading.Lock()


@contextmanager
def no_weight_repacking(wanted: bool) -> Iterator[None]:
    """Models loaded in the block keep their weights as the file has them (llama.cpp's use_extra_bufts
    off), where `wanted`. On a CPU with AMX, a llama.cpp built natively repacks the weights for AMX,
    and the first decode then crashes the process (a segmentation fault, seen on 2 cores of a Xeon
    in a VM with llama-cpp-python 0.3.36); without the repacking the same build runs. Llama() takes
    no such option, so its default parameters are changed for the moment it reads them."""
    if not wanted:
        yield
        return
    import llama_cpp.llama_cpp as bindings

    with _params_lock:
        default = bindings.llama_model_default_params

        def plain():
            params = default()
            params.use_extra_bufts = False
            return params

        bindings.llama_model_default_params = plain
        try:
            yield
        finally:
            bindings.llama_model_default_params = default


class LlamaCppLLM(LLM):
    def __init__(self, path: Path, *, name: str | None = None, context_length: int = 4096,
                 gpu_layers: int | None = None, threads: int | None = None,
                 state_cache: Path | None = None, slot: str = "") -> None:
        self.path = path
        self.slot = slot
        self.name = name or path.stem
        self.context_length = context_length
        # -1 offloads every layer; llama.cpp built without CUDA/Metal ignores it, so say 0 there.
        self.gpu_layers = gpu_layers if gpu_layers is not None else (-1 if gpu_offload_supported() else 0)
        self.threads = threads or default_threads()
        self._lock = threading.Lock()  # one llama context: one generation at a time
        self._current: str | None = None  # whose KV cache the context holds (switch)
        self._kept: OrderedDict[str, tuple[np.ndarray, bytes]] = OrderedDict()  # others', least recent first
        self.state_cache = state_cache
        self._speed: float | None = None  # prompt tokens a second, a moving average over requests
        self._speed_saved = 0.0

    @property
    def llama(self):
        return _load(str(self.path), self.context_length, self.gpu_layers, self.threads, self.slot)

    def load(self) -> None:
        _ = self.llama

    def tokenize(self, text: str) -> list[int]:
        return self.llama.tokenize(text.encode(), add_bos=False, special=True)

    def count_tokens(self, text: str) -> int:
        return len(self.tokenize(text))

    def describe(self) -> dict[str, object]:
        import llama_cpp

        meta = self.llama.metadata
        layers = int(meta.get(f"{meta.get('general.architecture', '')}.block_count", 0))
        offloaded = 0 if self.gpu_layers == 0 else (layers if self.gpu_layers < 0 else min(self.gpu_layers, layers))
        info = llama_cpp.llama_print_system_info().decode(errors="replace")
        accelerator = next((name for name in ("CUDA", "Metal", "Vulkan", "ROCm") if name in info), None)
        return {
            "backend": f"llama.cpp (llama-cpp-python {llama_cpp.__version__})",
            "device": accelerator if accelerator and offloaded else "CPU",
            "gpu_layers": f"{offloaded} of {layers}",
            "threads": self.threads,
            "context_length": self.context_length,
            "file": str(self.path),
        }

    def cached_tokens(self, prompt: str) -> int:
        llama = self.llama
        return _shared(llama.input_ids[: llama.n_tokens], self.tokenize(prompt))

    def _speed_file(self) -> Path:
        from codeasst import paths

        stat = self.path.stat()
        key = hashlib.sha256(repr((str(self.path), stat.st_size, self.threads, self.gpu_layers,
                                   os.cpu_count())).encode()).hexdigest()[:24]
        return paths.cache_dir() / "speed" / f"{key}.json"

    def prompt_speed(self) -> float | None:
        """Measured on this machine: by the requests of this process, else as the last process left
        it on disk, else once now on a fixed piece of code (about 0.8 s on 2 CPU cores, once a machine)."""
        if self._speed is not None:
            return self._speed
        file = self._speed_file()
        try:
            self._speed = float(json.loads(file.read_text(encoding="utf-8"))["prompt_tokens_per_s"])
            return self._speed
        except (OSError, ValueError, KeyError, TypeError):
            pass
        tokens = self.tokenize(CALIBRATION)
        with self._lock:
            llama = self.llama
            llama.n_tokens = 0  # a cold read of the calibration text (the cache held nothing of it anyway)
            started = time.perf_counter()
            llama.eval(tokens)
            seconds = time.perf_counter() - started
            llama.n_tokens = 0
        self._measured(len(tokens), seconds)
        return self._speed

    def _measured(self, tokens: int, seconds: float) -> None:
        if tokens < SPEED_SAMPLE or seconds <= 0:
            return
        sample = tokens / seconds
        self._speed = sample if self._speed is None else 0.7 * self._speed + 0.3 * sample
        if time.monotonic() - self._speed_saved > SPEED_SAVE_S:
            self._speed_saved = time.monotonic()
            file = self._speed_file()
            try:
                file.parent.mkdir(parents=True, exist_ok=True)
                tmp = file.with_suffix(f".{os.getpid()}.tmp")
                tmp.write_text(json.dumps({"prompt_tokens_per_s": round(self._speed, 1)}), encoding="utf-8")
                os.replace(tmp, file)
            except OSError:
                pass  # a read-only cache: the speed is measured again next time

    def switch(self, key: str, keep: int) -> None:
        """The server's clients each type in their own file: with one context, each request of another
        client would evaluate its whole prompt again (seconds), so the one leaving keeps its KV cache
        (its tokens and llama.cpp's state, about 12 KB a token for the 0.5B), and the one coming back
        finds its own. The logits are not kept: llama-cpp-python evaluates the last token again."""
        import numpy as np

        with self._lock:
            if key == self._current:
                return
            llama = self.llama
            if self._current is not None and llama.n_tokens and keep > 0:
                self._kept[self._current] = (np.array(llama.input_ids[: llama.n_tokens]), _state_bytes(llama))
                while len(self._kept) > keep:
                    self._kept.popitem(last=False)
            saved = self._kept.pop(key, None)
            if saved is not None:
                _load_state(llama, *saved)
            self._current = key

    def warm(self, text: str, cancelled: Callable[[], bool] | None = None) -> int:
        tokens = self.tokenize(text)[: self.context_length - 256]
        with self._lock:
            llama = self.llama
            same = _reuse(llama, tokens)  # eval() drops the cache past here and appends the rest
            for start in range(same, len(tokens), WARM_BATCH):
                if cancelled is not None and cancelled():
                    return start - same
                llama.eval(tokens[start:start + WARM_BATCH])
        return len(tokens) - same

    def reuse_prefix(self, text: str) -> None:
        """Restore the KV cache for `text` from disk, or compute and save it.

        A one-shot command starts with an empty cache; a fixed system prompt of ~100
        tokens costs 0.7 s to process on 2 CPU cores and 0.01 s to restore."""
        if self.state_cache is None:
            return
        import numpy as np

        llama = self.llama
        tokens = self.tokenize(text)
        if list(llama.input_ids[: llama.n_tokens][: len(tokens)]) == tokens:
            return  # already in the cache
        stat = self.path.stat()
        key = hashlib.sha256(repr((str(self.path), stat.st_size, stat.st_mtime_ns, self.context_length,
                                   tokens)).encode()).hexdigest()[:24]
        file = self.state_cache / f"{key}.npz"
        with self._lock:
            if file.is_file():
                try:
                    _restore(llama, np.load(file))
                    return
                except (OSError, ValueError, RuntimeError, KeyError):
                    file.unlink(missing_ok=True)  # a damaged cache entry is recomputed
            llama.reset()
            llama.eval(tokens)
            state = llama.save_state()
            self.state_cache.mkdir(parents=True, exist_ok=True)
            tmp = file.with_suffix(f".{os.getpid()}.tmp.npz")
            np.savez(tmp, state=np.frombuffer(state.llama_state, dtype=np.uint8),
                     tokens=np.array(tokens, dtype=np.int32), seed=np.array([state.seed], dtype=np.int64))
            os.replace(tmp, file)

    def stream(self, prompt: str, params: GenerationParams) -> Iterator[Token]:
        import llama_cpp
        import numpy as np

        llama = self.llama
        tokens = self.tokenize(prompt)
        if len(tokens) + 1 >= self.context_length:
            raise ModelError(f"the prompt has {len(tokens)} tokens; the context holds {self.context_length}",
                             hint="raise llm.context_length or send less")
        budget = min(params.max_tokens, self.context_length - len(tokens) - 1)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        with self._lock:
            held = _reuse(llama, tokens)
            started = time.perf_counter()
            # generate() reuses the KV cache for the longest common prefix with the last call.
            stream = llama.generate(tokens, temp=params.temperature, top_k=40, top_p=0.95, min_p=0.05,
                                    repeat_penalty=params.repeat_penalty, reset=True)
            for generated, token in enumerate(stream, start=1):
                if generated == 1:  # the prompt's new part was read: its speed, the first token's aside
                    self._measured(len(tokens) - held, time.perf_counter() - started)
                if llama_cpp.llama_vocab_is_eog(llama._model.vocab, token):
                    break
                text = decoder.decode(llama.detokenize([token], special=True))
                logprob = top = None
                if params.logprobs is not None:
                    logits = np.ctypeslib.as_array(llama._ctx.get_logits(), shape=(llama.n_vocab(),))
                    logprob, top = _logprobs(llama, logits, token, params.logprobs)
                yield Token(text, logprob, top)
                if generated >= budget:
                    break
            tail = decoder.decode(b"", final=True)
            if tail:
                yield Token(tail)


def _shared(held, tokens) -> int:
    """How many tokens the two sequences share from their start."""
    same = 0
    for a, b in zip(held, tokens, strict=False):
        if a != b:
            break
        same += 1
    return same


def _reuse(llama, tokens: list[int]) -> int:
    """Make the KV cache hold the longest start of `tokens` it can, without evaluating anything; the
    count held. Past the common prefix, runs of at least REUSE_CHUNK tokens that are still in the cache
    further on are shifted back into place, as llama.cpp's server does with `--cache-reuse`: when the
    prompt's window of the file moves on (the user typed past a step, or moved down to another
    function), the text both windows hold is not read again, only what is new."""
    cached = [int(t) for t in llama.input_ids[: llama.n_tokens]]
    head = head_cache = _shared(cached, tokens)
    ctx = llama._ctx
    while head_cache < len(cached) and head < len(tokens):
        run = _shared(islice(cached, head_cache, None), islice(tokens, head, None))
        if run >= REUSE_CHUNK:
            ctx.kv_cache_seq_rm(-1, head, head_cache)
            ctx.kv_cache_seq_shift(0, head_cache, head_cache + run, head - head_cache)  # one sequence: 0
            head, head_cache = head + run, head_cache + run
        else:
            head_cache += 1
    ctx.kv_cache_seq_rm(-1, head, -1)
    if head != len(cached):
        # The logits held are those of the last token evaluated, which is gone now: generate() must
        # evaluate the prompt's last token again rather than sample from them.
        llama._requires_eval = True
    llama.input_ids[:head] = tokens[:head]
    llama.n_tokens = head
    return head


def _restore(llama, saved) -> None:
    _load_state(llama, saved["tokens"], saved["state"].tobytes(), int(saved["seed"][0]))


def _load_state(llama, tokens, blob: bytes, seed: int | None = None) -> None:
    """Put a saved KV cache (its tokens and llama.cpp's state bytes) back into the context. Not through
    Llama.load_state, which writes its whole logit table (512 rows of the vocabulary: 311 MB, a second):
    the logits are not kept, and llama-cpp-python evaluates the last token again before sampling."""
    import ctypes

    import llama_cpp

    llama.input_ids[: len(tokens)] = tokens
    llama.n_tokens = len(tokens)
    llama._requires_eval = True
    if seed is not None:
        llama._seed = seed
    buffer = (ctypes.c_uint8 * len(blob)).from_buffer_copy(blob)
    if llama_cpp.llama_state_set_data(llama._ctx.ctx, buffer, len(blob)) != len(blob):
        raise RuntimeError("llama.cpp refused the saved state")


def _state_bytes(llama) -> bytes:
    """llama.cpp's state of the context, without Llama.save_state's copy of every logit row (hundreds
    of MB for a 150k-token vocabulary)."""
    import ctypes

    import llama_cpp

    size = llama_cpp.llama_state_get_size(llama._ctx.ctx)
    buffer = (ctypes.c_uint8 * int(size))()
    written = llama_cpp.llama_state_get_data(llama._ctx.ctx, buffer, size)
    return ctypes.string_at(buffer, int(written))


def _logprobs(llama, logits, token: int, k: int) -> tuple[float, dict[str, float]]:
    import numpy as np

    shifted = logits - logits.max()
    logz = np.log(np.exp(shifted).sum())
    logp = shifted - logz
    best = np.argpartition(-logp, k)[:k] if k else []
    top = {llama.detokenize([int(i)], special=True).decode("utf-8", "replace"): float(logp[i]) for i in best}
    return float(logp[token]), top
