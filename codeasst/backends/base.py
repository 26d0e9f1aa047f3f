"""Base classes for model backends. Each has exactly one abstract method."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

Vector = list[float]


class Embedder(ABC):
    """Turns texts into vectors. Subclasses implement `embed_batch` only."""

    #: Identity of the model; a change of it means every stored vector is stale.
    name: str = "embedder"
    batch_size: int = 32
    #: A vector per token, averaged (backends/static_embed.py): its rankings weigh less in fusion.
    static: bool = False

    @abstractmethod
    def embed_batch(self, texts: Sequence[str]) -> list[Vector]:
        """Embed one batch of texts, returning one vector per text."""

    def load(self) -> None:
        """Load the model now rather than on first use, so timings and progress exclude it."""

    def embed(self, texts: Sequence[str], progress: Callable[[int], None] | None = None) -> list[Vector]:
        """Embed any number of texts in batches of similar length.

        Sorting by length keeps padding, and so wasted work, small; results
        come back in the caller's order.
        """
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
        out: list[Vector | None] = [None] * len(texts)
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            vectors = self.embed_batch([texts[i] for i in batch])
            if len(vectors) != len(batch):
                raise ValueError(f"{self.name} returned {len(vectors)} vectors for {len(batch)} texts")
            for i, vector in zip(batch, vectors, strict=True):
                out[i] = vector
            if progress:
                progress(len(batch))
        return out  # type: ignore[return-value]

    def embed_query(self, text: str) -> Vector:
        return self.embed_batch([text])[0]


@dataclass(frozen=True)
class Token:
    """One generated piece of text, with its log-probability where the backend gives it."""

    text: str
    logprob: float | None = None
    top: dict[str, float] | None = None  # the most likely alternatives at this position


@dataclass
class Completion:
    text: str
    tokens: list[Token] = field(default_factory=list)
    finish_reason: str = "stop"  # "stop" (end of text or a stop sequence) or "length"


@dataclass(frozen=True)
class GenerationParams:
    max_tokens: int = 256
    temperature: float = 0.0  # greedy by default: answers and tests stay reproducible
    stop: tuple[str, ...] = ()
    logprobs: int | None = None  # how many alternatives to report per token, when supported
    repeat_penalty: float = 1.0  # above 1 discourages the loops small models fall into in prose


Message = dict[str, str]  # {"role": "system" | "user" | "assistant", "content": "..."}


class LLM(ABC):
    """A language model. Subclasses implement `stream` only: raw prompt in, tokens out."""

    name: str = "llm"
    context_length: int = 4096

    @abstractmethod
    def stream(self, prompt: str, params: GenerationParams) -> Iterator[Token]:
        """Yield tokens for a raw prompt (no chat template applied), ending at end of text
        or after params.max_tokens. Honouring params.stop is optional: `generate` enforces it."""

    def load(self) -> None:
        """Load the model now rather than on first use, so timings exclude it."""

    def count_tokens(self, text: str) -> int | None:
        """Tokens in `text` by the model's own tokenizer, where the backend can tell."""
        return None

    def describe(self) -> dict[str, object]:
        """Backend, device and the like, for `codeasst models --check`."""
        return {"backend": type(self).__name__}

    def cached_tokens(self, prompt: str) -> int:
        """How many of the prompt's tokens the backend already holds in its KV cache (0: unknown)."""
        return 0

    def prompt_speed(self) -> float | None:
        """Prompt tokens this backend reads a second, as measured here; None where it cannot say."""
        return None

    def switch(self, key: str, keep: int) -> None:
        """Make the model's cache `key`'s (a client of the server), keeping up to `keep` others' aside to
        come back to; a backend with no cache of its own does nothing."""

    def warm(self, text: str, cancelled: Callable[[], bool] | None = None) -> int:
        """Evaluate `text` into the KV cache now, for a prompt that will start with it; the tokens
        evaluated (0 where the backend keeps no cache). `cancelled` is asked between batches: what is
        evaluated by then stays cached."""
        return 0

    def reuse_prefix(self, text: str) -> None:
        """Hint that prompts will start with `text` (a fixed system prompt), so a backend can
        restore its processed state from disk instead of recomputing it in every process."""

    def generate(self, prompt: str, params: GenerationParams = GenerationParams()) -> Iterator[Token]:
        """`stream` with stop sequences enforced, even when one spans several tokens."""
        tokens = self.stream(prompt, params)
        if not params.stop:
            yield from tokens
            return
        yield from cut_at_stop(tokens, params.stop)

    def complete(self, prompt: str, **params) -> Completion:
        return self._collect(self.generate(prompt, GenerationParams(**params)), params)

    def chat_prompt(self, messages: Sequence[Message]) -> str:
        """Render messages with the model's chat template; ChatML unless a backend knows better."""
        rendered = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
        return rendered + "<|im_start|>assistant\n"

    def chat_stream(self, messages: Sequence[Message], **params) -> Iterator[Token]:
        stop = tuple(params.pop("stop", ())) + ("<|im_end|>",)
        return self.generate(self.chat_prompt(messages), GenerationParams(stop=stop, **params))

    def chat(self, messages: Sequence[Message], **params) -> Completion:
        return self._collect(self.chat_stream(messages, **dict(params)), params)

    @staticmethod
    def _collect(tokens: Iterator[Token], params: dict) -> Completion:
        collected = list(tokens)
        text = "".join(t.text for t in collected)
        limit = params.get("max_tokens", GenerationParams.max_tokens)
        return Completion(text, collected, "length" if len(collected) >= limit else "stop")


def cut_at_stop(tokens: Iterator[Token], stops: Sequence[str]) -> Iterator[Token]:
    """Pass tokens through until a stop string appears; hold back only text that could
    still turn out to be the start of one."""
    held: list[Token] = []
    longest = max(len(s) for s in stops)
    for token in tokens:
        held.append(token)
        text = "".join(t.text for t in held)
        hits = [i for i in (text.find(s) for s in stops) if i >= 0]
        if hits:
            cut = min(hits)
            for t in held:
                if cut <= 0:
                    break
                yield t if len(t.text) <= cut else Token(t.text[:cut], t.logprob, t.top)
                cut -= len(t.text)
            return
        # Release tokens that end before the last `longest - 1` characters.
        safe = len(text) - (longest - 1)
        while held and len(held[0].text) <= safe:
            safe -= len(held[0].text)
            yield held.pop(0)
    yield from held
