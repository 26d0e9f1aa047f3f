"""Rerank fused candidates by the LLM's relevance judgement.

Each candidate gets one short prompt; the score is P(yes) / (P(yes) + P(no))
from the first answer token's log-probabilities, so no text is generated.
"""

from __future__ import annotations

import math
from dataclasses import replace

from codeasst import prompt
from codeasst.backends.base import LLM, GenerationParams
from codeasst.retrieve.fuse import Fused

CODE_CHARS = 700  # keeps each judgement to a few hundred prompt tokens


def relevance(llm: LLM, question: str, path: str, code: str) -> float:
    messages = prompt.load("rerank").messages(question=question, path=path, code=code[:CODE_CHARS])
    tokens = list(llm.generate(llm.chat_prompt(messages), GenerationParams(max_tokens=1, logprobs=10)))
    if not tokens or not tokens[0].top:
        return 0.5
    yes = no = 0.0
    for text, logprob in tokens[0].top.items():
        word = text.strip().lower()
        if word == "yes":
            yes += math.exp(logprob)
        elif word == "no":
            no += math.exp(logprob)
    return yes / (yes + no) if yes + no else 0.5


def rerank(llm: LLM, question: str, candidates: list[Fused], budget: int) -> list[Fused]:
    """The first `budget` candidates reordered by relevance; the rest keep their order after them."""
    head, tail = candidates[:budget], candidates[budget:]
    judged = [(relevance(llm, question, c.hit.path, c.hit.text), i, c) for i, c in enumerate(head)]
    judged.sort(key=lambda item: (-item[0], item[1]))
    return [replace(c, score=p) for p, _, c in judged] + tail
