"""Draft models for llama-cpp-python's speculative decoding.

A draft model guesses the next few tokens; the big model then evaluates them all in one batch
and keeps the leading ones it would have sampled itself (with greedy sampling the output is the
same as without a draft). When most guesses are kept, the 1.5B completion model writes at close
to the 0.5B's speed, since a batch of a few tokens costs little more than one.

ModelDraft drafts with a second, smaller llama_cpp.Llama (the 0.5B, same tokenizer) that keeps
its own KV cache: each call it keeps the longest prefix it shares with the ids it is given,
evaluates only the new ids (the tokens the big model accepted, and the one it sampled), then
writes up to `num_pred_tokens` tokens greedily, one at a time. The big model's rejections cost
the draft nothing more than dropping the tail of its cache.

Counting wraps any draft model (prompt lookup included) and remembers each draft with the
position it continues, so acceptance (accepted / drafted) can be scored against the tokens
that were generated in the end.
"""

from __future__ import annotations

from typing import Any

import llama_cpp
import numpy as np
import numpy.typing as npt
from llama_cpp.llama_speculative import LlamaDraftModel


def _common_prefix(a: npt.NDArray[np.intc], b: npt.NDArray[np.intc]) -> int:
    n = min(len(a), len(b))
    if n == 0:
        return 0
    diff = np.nonzero(a[:n] != b[:n])[0]
    return int(diff[0]) if len(diff) else n


class ModelDraft(LlamaDraftModel):
    """Greedy drafts from a smaller Llama that keeps its own KV cache between calls.

    `adaptive`: after a draft the big model cut short, the next draft is only one token longer
    than what it kept (never under `min_pred_tokens`); after a draft it kept whole, the next one
    grows by two, up to `num_pred_tokens`. `stop_at_newline`: a draft ends after a token holding
    a newline (single-line completions end there anyway).
    """

    def __init__(self, llama: llama_cpp.Llama, num_pred_tokens: int = 8, *, adaptive: bool = False,
                 min_pred_tokens: int = 2, stop_at_newline: bool = False):
        if llama._logits_all:
            raise ValueError("the draft Llama needs only its last logits: load it without logits_all")
        self.llama = llama
        self.num_pred_tokens = num_pred_tokens
        self.adaptive = adaptive
        self.min_pred_tokens = max(1, min(min_pred_tokens, num_pred_tokens))
        self.stop_at_newline = stop_at_newline
        self._n_pred = num_pred_tokens
        self._last: tuple[npt.NDArray[np.intc], npt.NDArray[np.intc]] | None = None  # (ids, draft) of the last call
        self._newline: dict[int, bool] = {}
        self.calls = 0
        self.drafted = 0
        self.evaluated = 0  # ids the draft model read (prompt included): its own cost
        self.accepted_seen = 0  # kept tokens of drafts that a later call could check

    def reset(self) -> None:
        """Forget the cache (a new document); the counters stay."""
        self.llama.reset()
        self._last = None
        self._n_pred = self.num_pred_tokens

    def prefill(self, ids: npt.ArrayLike) -> None:
        """Evaluate a prompt ahead of the first draft, so its cost falls in prompt time."""
        self._sync(np.asarray(ids, dtype=np.intc), need_logits=False)

    def _sync(self, ids: npt.NDArray[np.intc], need_logits: bool) -> None:
        llama = self.llama
        keep = _common_prefix(llama.input_ids[: llama.n_tokens], ids)
        if need_logits and keep == len(ids):
            keep -= 1  # everything is cached but the last logits are gone: read the last id again
        llama.n_tokens = keep  # eval() drops the KV cache past n_tokens itself
        new = ids[keep:]
        if len(new):
            llama.eval(new.tolist())
            self.evaluated += len(new)

    def _argmax(self) -> int:
        llama = self.llama
        logits = np.ctypeslib.as_array(llama._ctx.get_logits_ith(-1), shape=(llama.n_vocab(),))
        return int(np.argmax(logits))

    def _ends_line(self, token: int) -> bool:
        if token not in self._newline:
            self._newline[token] = b"\n" in self.llama.detokenize([token], special=True)
        return self._newline[token]

    def _adapt(self, ids: npt.NDArray[np.intc]) -> None:
        if self._last is None:
            return
        prev, draft = self._last
        pos = len(prev)
        if len(ids) <= pos or len(draft) == 0 or not np.array_equal(ids[:pos], prev):
            return  # nothing drafted, or not a continuation (a new generation)
        kept = _common_prefix(draft, ids[pos:])
        self.accepted_seen += kept
        if not self.adaptive:
            return
        if kept == len(draft) and len(ids) > pos + kept:
            self._n_pred = min(self.num_pred_tokens, self._n_pred + 2)
        elif kept < len(draft):
            self._n_pred = max(self.min_pred_tokens, kept + 1)

    def __call__(self, input_ids: npt.NDArray[np.intc], /, **kwargs: Any) -> npt.NDArray[np.intc]:
        ids = np.array(input_ids, dtype=np.intc)  # a copy: the caller's array is its live buffer
        self.calls += 1
        self._adapt(ids)
        llama = self.llama
        room = llama.n_ctx() - len(ids)
        n_pred = min(self._n_pred, room)
        if n_pred <= 0 or len(ids) == 0:
            self._last = None
            return np.array([], dtype=np.intc)
        self._sync(ids, need_logits=True)
        vocab = llama._model.vocab
        out: list[int] = []
        while True:
            token = self._argmax()
            if llama_cpp.llama_vocab_is_eog(vocab, token):
                break
            out.append(token)
            if len(out) >= n_pred or (self.stop_at_newline and self._ends_line(token)):
                break
            llama.eval([token])
            self.evaluated += 1
        draft = np.array(out, dtype=np.intc)
        self.drafted += len(draft)
        self._last = (ids, draft)
        return draft

    def stats(self) -> dict[str, int]:
        return {"calls": self.calls, "drafted": self.drafted, "evaluated": self.evaluated,
                "accepted_seen": self.accepted_seen}


class Counting(LlamaDraftModel):
    """Counts the calls and drafted tokens of any draft model and remembers its drafts.

    After a generation, `score(tokens)` (the prompt and the generated tokens, as the big model
    saw them) counts how many drafted tokens the big model kept: a draft's tokens up to its first
    difference with what was generated at the same place. Tokens drafted past the last generated
    one were never checked and are left out of both counts.
    """

    def __init__(self, inner: LlamaDraftModel):
        self.inner = inner
        self.calls = 0
        self.drafted = 0
        self.records: list[tuple[int, npt.NDArray[np.intc]]] = []

    def __call__(self, input_ids: npt.NDArray[np.intc], /, **kwargs: Any) -> npt.NDArray[np.intc]:
        draft = np.asarray(self.inner(input_ids, **kwargs), dtype=np.intc)
        self.calls += 1
        self.drafted += len(draft)
        self.records.append((len(input_ids), draft.copy()))
        return draft

    def clear(self) -> None:
        """Drop the remembered drafts (between generations); the totals stay."""
        self.records = []

    def score(self, tokens: npt.ArrayLike) -> tuple[int, int]:
        """(accepted, checked) over the remembered drafts, against the final token list."""
        final = np.asarray(tokens, dtype=np.intc)
        accepted = checked = 0
        for pos, draft in self.records:
            span = draft[: max(0, len(final) - pos)]
            checked += len(span)
            accepted += _common_prefix(span, final[pos:])
        return accepted, checked
