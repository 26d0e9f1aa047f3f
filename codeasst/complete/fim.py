"""Fill-in-the-middle: the prompt, the generation with its stops, and the suggestion.

The FIM string is built here with Qwen2.5-Coder's tokens (llama-cpp-python's
`suffix=` path hard-codes the FIM token ids to 0). It is ordered from what
changes least to what changes most, so that the KV cache of the last request
is reused as the user types: other files first (`<|repo_name|>`,
`<|file_sep|>path`), then the current file, in one of two layouts:

    <|repo_name|>NAME\\n<|file_sep|>other.py\\n...\\n<|file_sep|>this.py\\n
    psm: <|fim_prefix|>PREFIX<|fim_suffix|>SUFFIX<|fim_middle|>
    spm: <|fim_suffix|>SUFFIX<|fim_prefix|>PREFIX<|fim_middle|>

While the user types at the cursor, only the prefix's end changes. In PSM the
whole suffix comes after it and is evaluated again on every keystroke; in SPM
only the typed characters are new. The prefix is a window of the file that
starts at a line start and moves in steps (`_window`), so that its beginning,
and the KV cache, stay the same while the user types on.

Generation stops at the model's end-of-text tokens, at a line indented less than
the cursor's (llama.cpp's `n_indent`), after the configured number of lines,
at the token cap, and, once the time cap has passed, at the next newline
(llama.cpp's `t_max_predict_ms`). The text is then cut to whole statements
(cut.py) and judged: silence, with the reason, when nothing complete is left
or the model's mean token log-probability is under the threshold.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

from codeasst.backends.base import LLM, GenerationParams
from codeasst.complete.cut import cut

PREFIX, SUFFIX, MIDDLE = "<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"
REPO, FILE_SEP = "<|repo_name|>", "<|file_sep|>"
# Where a server does not stop at them itself (llama.cpp does: they are end-of-generation tokens).
_STOPS = ("<|endoftext|>", "<|file_sep|>", "<|repo_name|>", "<|fim_", "<|im_end|>")


@dataclass(frozen=True)
class CompleteOptions:
    """How `complete` works; the defaults of the [complete] settings section."""

    max_lines: int = 4  # whole statements of the cursor's block a suggestion may hold (mid-line: 1)
    max_tokens: int = 96
    time_cap_ms: int = 1500  # past it, generation ends at the next newline
    min_mean_logprob: float = -0.6  # below it, silence (chosen on 120 rows of the dev set's tuning split)
    prefix_tokens: int = 1536  # of the current file before the cursor
    suffix_tokens: int = 16  # and after it: little, so a keystroke leaves little to read again
    context_tokens: int = 0  # other files' text, before the current file (0: none)
    context_sources: tuple[str, ...] = ("imports", "index", "recent")  # context.py
    layout: str = "psm"  # 'psm' or 'spm' (module docstring)
    in_comments: bool = False  # suggest inside comments and strings too


@dataclass
class Suggestion:
    text: str
    reason: str = ""  # why `text` is empty
    latency_ms: float = 0.0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    generated_tokens: int = 0
    mean_logprob: float | None = None
    raw: str = ""  # what the model wrote, before the cut

    def to_json(self) -> dict:
        data = asdict(self)
        data["latency_ms"] = round(self.latency_ms, 1)
        if self.mean_logprob is not None:
            data["mean_logprob"] = round(self.mean_logprob, 3)
        return data


def _window(text: str, chars: int) -> str:
    """The end of `text`, at most `chars`, starting at a line start where it was cut.

    The start moves in steps of an eighth of `chars`, not with every character: text typed at
    the end leaves the window's beginning where it was, so the model's KV cache still holds it.
    The window is therefore between 7/8 of `chars` (plus a line) and `chars` long."""
    if len(text) <= chars:
        return text
    step = max(1, chars // 8)
    start = -(-(len(text) - chars) // step) * step  # the excess, rounded up to a whole step
    cut_at = text.find("\n", start - 1)
    return text[cut_at + 1:] if cut_at != -1 else text[start:]


def _head(text: str, chars: int) -> str:
    if len(text) <= chars:
        return text
    cut_at = text.rfind("\n", 0, chars)
    return text[:cut_at] if cut_at > 0 else text[:chars]


def fim_prompt(prefix: str, suffix: str, options: CompleteOptions = CompleteOptions(), *,
               context: Sequence[tuple[str, str]] = (), repo: str = "", path: str = "") -> str:
    """The FIM string; sizes in tokens are taken as 3 characters a token (code runs 3 to 4)."""
    before, after = _window(prefix, options.prefix_tokens * 3), _head(suffix, options.suffix_tokens * 3)
    if options.layout == "spm":
        body = f"{SUFFIX}{after}{PREFIX}{before}{MIDDLE}"
    else:
        body = f"{PREFIX}{before}{SUFFIX}{after}{MIDDLE}"
    if not context and not repo:
        return body
    budget = options.context_tokens * 3
    files = []
    for other, text in context:
        piece = f"{FILE_SEP}{other}\n{text}\n"
        if len(piece) > budget:
            break
        files.append(piece)
        budget -= len(piece)
    return f"{REPO}{repo}\n" + "".join(files) + f"{FILE_SEP}{path}\n{body}"


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def generate(llm: LLM, prompt: str, prefix: str, options: CompleteOptions,
             cancelled: Callable[[], bool] | None = None) -> tuple[str, list[tuple[int, float]], int]:
    """The model's text at the cursor, (where each token ends in it, its log-probability), and the
    count of tokens generated; the stops of the module docstring applied."""
    line = prefix[prefix.rfind("\n") + 1:]
    cursor_indent, mid_line = _indent(line), bool(line.strip())
    max_lines = 1 if mid_line else options.max_lines
    params = GenerationParams(max_tokens=options.max_tokens, temperature=0.0, stop=_STOPS, logprobs=0)
    started = time.perf_counter()
    text, logprobs, ends, generated = "", [], [], 0
    def leaves_block(lines: list[str]) -> int | None:
        """The first line after the cursor's that is indented less than it (n_indent)."""
        return next((i for i, line in enumerate(lines) if i and line.strip() and _indent(line) < cursor_indent),
                    None)

    for token in llm.stream(prompt, params):
        generated += 1
        if any(stop in token.text for stop in _STOPS) or (cancelled is not None and cancelled()):
            break
        text += token.text
        logprobs.append(token.logprob if token.logprob is not None else 0.0)
        ends.append(len(text))
        lines = text.split("\n")
        if len(lines) < 2:
            continue
        done = lines[:-1]
        if (left := leaves_block(done)) is not None:
            text = "\n".join(lines[:left])
            break
        if len(done) >= max_lines or (time.perf_counter() - started) * 1000 > options.time_cap_ms:
            text = "\n".join(done[:max_lines])
            break
    else:  # the model ended: its last line is complete too
        if (left := leaves_block(text.split("\n"))) is not None:
            text = "\n".join(text.split("\n")[:left])
    return text, list(zip(ends, logprobs, strict=True)), generated


def mean_logprob(tokens: list[tuple[int, float]], text: str, raw: str | None = None) -> float | None:
    """The mean log-probability of the tokens that wrote `text`: a prefix of the model's text
    `raw`, or its first lines with their indentation cut (cut.py), counted here as those lines
    of `raw`. `tokens` holds where each token ends in `raw`, and its log-probability."""
    if raw is not None and not raw.startswith(text):
        text = "\n".join(raw.split("\n")[: text.count("\n") + 1])
    starts = [0, *(end for end, _ in tokens)]
    covering = [lp for (_, lp), start in zip(tokens, starts, strict=False) if start < len(text)]
    return sum(covering) / len(covering) if covering else None


def complete(llm: LLM, prefix: str, suffix: str, grammar: str | None, options: CompleteOptions = CompleteOptions(),
             *, context: Sequence[tuple[str, str]] = (), repo: str = "", path: str = "",
             cancelled: Callable[[], bool] | None = None) -> Suggestion:
    """One suggestion at the cursor between `prefix` and `suffix`, or silence with its reason.
    `cancelled` is asked between tokens: a newer request from the same client ends this one."""
    started = time.perf_counter()
    prompt = fim_prompt(prefix, suffix, options, context=context, repo=repo, path=path)
    cached = llm.cached_tokens(prompt)
    raw, tokens, generated = generate(llm, prompt, prefix, options, cancelled)
    if cancelled is not None and cancelled():
        return Suggestion("", reason="cancelled by a newer request", raw=raw, cached_tokens=cached,
                          generated_tokens=generated, latency_ms=(time.perf_counter() - started) * 1000)
    suggestion = Suggestion("", raw=raw, prompt_tokens=llm.count_tokens(prompt) or 0, cached_tokens=cached,
                            generated_tokens=generated)
    text, reason = cut(grammar, prefix, raw, suffix, options.max_lines) if grammar else \
        _plain_cut(raw, prefix, options)
    suggestion.mean_logprob = mean_logprob(tokens, text, raw)
    if text and suggestion.mean_logprob is not None and suggestion.mean_logprob < options.min_mean_logprob:
        text = ""
        reason = f"the model is unsure (mean log-probability {suggestion.mean_logprob:.2f} < " \
                 f"{options.min_mean_logprob})"
    suggestion.text, suggestion.reason = text, reason
    suggestion.latency_ms = (time.perf_counter() - started) * 1000
    return suggestion


def _plain_cut(raw: str, prefix: str, options: CompleteOptions) -> tuple[str, str]:
    """Without a grammar: whole lines, as many as allowed, nothing checked but whitespace."""
    mid_line = bool(prefix[prefix.rfind("\n") + 1:].strip())
    text = "\n".join(raw.split("\n")[: 1 if mid_line else options.max_lines]).rstrip()
    return (text, "") if text.strip() else ("", "whitespace only")
