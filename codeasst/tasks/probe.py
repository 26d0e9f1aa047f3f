"""`codeasst models --check`: load the model, run a short generation, time it."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

from codeasst import prompt
from codeasst.services import Services


@dataclass
class ProbeResult:
    model: str
    details: dict[str, object]
    load_s: float
    prompt_tokens: int | None
    first_token_s: float
    prompt_tok_s: float | None
    generated_tokens: int
    generation_tok_s: float | None
    text: str

    def to_json(self) -> dict:
        return asdict(self)


def probe(services: Services, max_tokens: int = 64) -> ProbeResult:
    started = time.perf_counter()
    llm = services.llm
    llm.load()
    load_s = time.perf_counter() - started

    messages = prompt.load("probe").messages(name="add_numbers")
    prompt_tokens = llm.count_tokens(llm.chat_prompt(messages))
    started = time.perf_counter()
    first = None
    pieces = []
    for token in llm.chat_stream(messages, max_tokens=max_tokens):
        if first is None:
            first = time.perf_counter()
        pieces.append(token.text)
    ended = time.perf_counter()
    first = first or ended
    ttft = first - started
    return ProbeResult(
        model=llm.name,
        details=llm.describe(),
        load_s=round(load_s, 3),
        prompt_tokens=prompt_tokens,
        first_token_s=round(ttft, 3),
        # The first token's wait is prompt processing plus one decode step; close enough for a probe.
        prompt_tok_s=round(prompt_tokens / ttft, 1) if prompt_tokens and ttft > 0 else None,
        generated_tokens=len(pieces),
        generation_tok_s=round((len(pieces) - 1) / (ended - first), 1) if len(pieces) > 1 and ended > first else None,
        text="".join(pieces),
    )
