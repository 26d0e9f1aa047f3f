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

Where the cursor sits decides how far a suggestion may go (scope.py): the block's
indentation (inferred at column 1, where the model is then asked as if the editor had
indented the line), the floor under which a line leaves the scope, and how many lines it
may hold (one between two statements). The suffix budget follows the machine's measured
prompt speed (suffix_budget): the more the model sees of what follows, the less it writes
what the next lines rule out.

Generation stops at the model's end-of-text tokens, at a line under the floor (llama.cpp's
`n_indent`), at a line that restates the first code line after the cursor, after the lines
allowed, at the token cap, and, once the time cap has passed, at the next newline (llama.cpp's
`t_max_predict_ms`; evaluations run without it). The text is then cut to whole statements
(cut.py) and judged by the gate (gate.py, with the learned model of confidence.py): silence, with
the reason, when nothing complete is left or the gate expects the suggestion to cost the user more
than it gives.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace

from codeasst.backends.base import LLM, GenerationParams
from codeasst.complete import gate
from codeasst.complete.confidence import covering, features, position
from codeasst.complete.cut import cut
from codeasst.complete.scope import Hole, locate, repeats_following

PREFIX, SUFFIX, MIDDLE = "<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"
REPO, FILE_SEP = "<|repo_name|>", "<|file_sep|>"
# Where a server does not stop at them itself (llama.cpp does: they are end-of-generation tokens).
_STOPS = ("<|endoftext|>", "<|file_sep|>", "<|repo_name|>", "<|fim_", "<|im_end|>")
NOMINAL_PROMPT_SPEED = 155.0  # tokens a second: the 0.5B on 2 CPU cores, where a backend cannot say
SUFFIX_RANGE = (16, 512)


@dataclass(frozen=True)
class CompleteOptions:
    """How `complete` works; the defaults of the [complete] settings section."""

    max_lines: int = 4  # whole statements of the cursor's block a suggestion may hold (scope.py)
    multiline: str = "block"  # where more than one line may be suggested: 'block' or 'always' (scope.py)
    max_tokens: int = 96
    time_cap_ms: int = 1500  # past it, generation ends at the next newline (0: no cap, as evaluations run)
    min_confidence: float | None = None  # the learned gate's threshold; None: its model's own (confidence.py)
    min_mean_logprob: float = -0.6  # the gate where the learned model's file is missing
    prefix_tokens: int = 1536  # of the current file before the cursor
    suffix_tokens: int = 0  # and after it; 0: what the machine reads in suffix_ms (suffix_budget)
    suffix_ms: int = 250
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
    candidate: str = ""  # what the cut kept, before the gate judged it
    confidence: float | None = None  # the gate's probability that the candidate is taken (confidence.py)
    suffix_tokens: int = 0  # the suffix budget the prompt had
    place: str = ""  # where the cursor was (scope.py): mid-line, opened, between, end

    features: dict[str, float] | None = field(default=None, repr=False)  # what the gate saw; not in the JSON

    def to_json(self) -> dict:
        data = asdict(self)
        del data["features"]
        if self.confidence is not None:
            data["confidence"] = round(self.confidence, 3)
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
    """The FIM string; sizes in tokens are taken as 3 characters a token (code runs 3 to 4). A suffix
    budget of 0 (decided by the machine's speed: suffix_budget) is taken at the nominal speed here."""
    suffix_tokens = options.suffix_tokens or _budget(NOMINAL_PROMPT_SPEED, options.suffix_ms)
    before, after = _window(prefix, options.prefix_tokens * 3), _head(suffix, suffix_tokens * 3)
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


def generate(llm: LLM, prompt: str, hole: Hole, options: CompleteOptions,
             cancelled: Callable[[], bool] | None = None) -> tuple[str, list[tuple[int, float]], int, str]:
    """The model's text at the cursor, (where each token ends in it, its log-probability), the count of
    tokens generated, and why a line of it was cut ("" if none); the stops of the module docstring applied."""
    params = GenerationParams(max_tokens=options.max_tokens, temperature=0.0, stop=_STOPS, logprobs=0)
    deadline = time.perf_counter() + options.time_cap_ms / 1000 if options.time_cap_ms > 0 else None
    text, logprobs, ends, generated = "", [], [], 0
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
        if (stop := stop_line(done, hole)) is not None:
            text = "\n".join(lines[:stop[0]])
            return text, list(zip(ends, logprobs, strict=True)), generated, stop[1]
        if len(done) >= hole.max_lines or (deadline is not None and time.perf_counter() > deadline):
            text = "\n".join(done[:hole.max_lines])
            break
    else:  # the model ended: its last line is complete too
        if (stop := stop_line(text.split("\n"), hole)) is not None:
            return "\n".join(text.split("\n")[:stop[0]]), list(zip(ends, logprobs, strict=True)), generated, stop[1]
    return text, list(zip(ends, logprobs, strict=True)), generated, ""


def stop_line(lines: list[str], hole: Hole) -> tuple[int, str] | None:
    """The first of the model's `lines` that leaves the cursor's scope (indented under the hole's
    floor) or restates the code after the cursor, and which; None when none does. The first line
    continues the cursor's own, so it is judged only where the cursor is at column 1 (its
    indentation is the model's) and, for a restatement, where the cursor's line is empty."""
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        if (i or hole.column_one) and len(line) - len(line.lstrip(" \t")) < hole.floor:
            return i, "the model's next line leaves the cursor's block"
        if (i or hole.place != "mid-line") and repeats_following(line, hole):
            return i, "repeats the lines after the cursor"
    return None


def mean_logprob(tokens: list[tuple[int, float]], text: str, raw: str | None = None) -> float | None:
    """The mean log-probability of the tokens that wrote `text` (confidence.covering)."""
    logprobs = covering(tokens, text, raw)
    return sum(logprobs) / len(logprobs) if logprobs else None


def suffix_budget(llm: LLM, options: CompleteOptions) -> int:
    """Tokens of suffix in the prompt: complete.suffix_tokens, or where it is 0, what this machine reads
    in complete.suffix_ms (in the PSM layout the suffix is read again after every keystroke), as a
    power of two between SUFFIX_RANGE's ends: on 2 CPU cores (about 155 tokens a second) 32, on a GPU 512."""
    if options.suffix_tokens > 0:
        return options.suffix_tokens
    return _budget(llm.prompt_speed() or NOMINAL_PROMPT_SPEED, options.suffix_ms)


def _budget(speed: float, ms: int) -> int:
    tokens = 2 ** round(math.log2(max(1.0, speed * ms / 1000)))
    return int(min(SUFFIX_RANGE[1], max(SUFFIX_RANGE[0], tokens)))


@dataclass(frozen=True)
class Request:
    """What the model is asked at the cursor: the prefix it reads (at column 1, with the indentation
    the suggestion will carry, `lead`), the hole it writes in, and the options with the suffix budget
    decided. complete() asks it; the server's /v1/open warms the same prompt."""

    prefix: str
    lead: str
    hole: Hole  # as the model writes: its first line continues `lead`
    where: Hole  # as the user's cursor was, for the gate
    options: CompleteOptions


def request(llm: LLM, prefix: str, suffix: str, options: CompleteOptions, where: Hole | None = None) -> Request:
    """`where`: the hole at the cursor, where the gate located it already with these options."""
    where = where or locate(prefix, suffix, options.max_lines, options.multiline)
    hole, lead = where, ""
    if where.column_one:
        # The model is asked as if the editor had indented the line: after a bare newline it often
        # writes no indentation at all (its tokenizer joins a newline and the spaces after it, so
        # that split is rare in what it learned from). The suggestion carries the indentation.
        # Where the block could end at several depths, the shallowest the scope allows is the likelier:
        # a function's last line after a loop, not one more line of the loop (bench/fim_lines.py's rows).
        lead = where.indent[: where.floor]
        prefix, hole = prefix + lead, replace(where, column_one=False)
    return Request(prefix, lead, hole, where, replace(options, suffix_tokens=suffix_budget(llm, options)))


def complete(llm: LLM, prefix: str, suffix: str, grammar: str | None, options: CompleteOptions = CompleteOptions(),
             *, context: Sequence[tuple[str, str]] = (), repo: str = "", path: str = "",
             cancelled: Callable[[], bool] | None = None, checked: gate.Checked | None = None) -> Suggestion:
    """One suggestion at the cursor between `prefix` and `suffix`, or silence with its reason.
    `cancelled` is asked between tokens: a newer request from the same client ends this one.
    `checked`: what the gate read before asking (gate.check, with these options), read again otherwise."""
    started = time.perf_counter()
    asked = request(llm, prefix, suffix, options, checked.hole if checked else None)
    prefix, hole, options = asked.prefix, asked.hole, asked.options
    prompt = fim_prompt(prefix, suffix, options, context=context, repo=repo, path=path)
    cached = llm.cached_tokens(prompt)
    raw, tokens, generated, stopped = generate(llm, prompt, hole, options, cancelled)
    if cancelled is not None and cancelled():
        return Suggestion("", reason="cancelled by a newer request", raw=raw, cached_tokens=cached,
                          generated_tokens=generated, latency_ms=(time.perf_counter() - started) * 1000)
    suggestion = Suggestion("", raw=raw, prompt_tokens=llm.count_tokens(prompt) or 0, cached_tokens=cached,
                            generated_tokens=generated, suffix_tokens=options.suffix_tokens, place=hole.place,
                            features=position(prefix, asked.where, llm.name))
    text, reason = cut(grammar, prefix, raw, suffix, hole.max_lines, checked.around if checked else None) \
        if grammar else _plain_cut(raw, hole.max_lines)
    if not text and stopped and not raw.strip():
        reason = stopped
    suggestion.mean_logprob = mean_logprob(tokens, text, raw)
    if text:
        suggestion.features.update(features(prefix, suffix, text, raw, tokens, grammar))
        reason, suggestion.confidence = gate.judge(hole.place, suggestion.features, suggestion.mean_logprob, options)
        text = asked.lead + text
    suggestion.candidate = text
    text = "" if reason else text
    suggestion.text, suggestion.reason = text, reason
    suggestion.latency_ms = (time.perf_counter() - started) * 1000
    return suggestion


def _plain_cut(raw: str, max_lines: int) -> tuple[str, str]:
    """Without a grammar: whole lines, as many as allowed, nothing checked but whitespace."""
    text = "\n".join(raw.split("\n")[:max_lines]).rstrip()
    return (text, "") if text.strip() else ("", "whitespace only")
