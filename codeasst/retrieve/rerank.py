"""Rerank fused candidates by the LLM's relevance judgement, or by a stronger embedder's.

With the LLM, each candidate gets one short prompt; the score is P(yes) / (P(yes) + P(no))
from the first answer token's log-probabilities, so no text is generated.
"""

from __future__ import annotations

import math
from dataclasses import replace

from codeasst import prompt
from codeasst.backends.base import LLM, Embedder, GenerationParams
from codeasst.index.fingerprint import embedding_text
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


def by_embedder(embedder: Embedder, question: str, candidates: list[Fused], budget: int, k: int,
                weight: float = 1.0) -> list[Fused]:
    """The first `budget` candidates reordered by reciprocal rank fusion (RRF's `k`) of their order and the
    order of their cosine with the question under `embedder` (a stronger one than the index's: MiniLM over
    static vectors), which weighs `weight`; the rest keep their order after them. Ties keep the fused order."""
    head, tail = candidates[:budget], candidates[budget:]
    if len(head) < 2:
        return candidates
    query = embedder.embed_query(question)
    vectors = embedder.embed([embedding_text(c.hit) for c in head])
    cosine = [sum(a * b for a, b in zip(query, v, strict=True)) for v in vectors]  # both unit length
    by_cosine = sorted(range(len(head)), key=lambda i: (-cosine[i], i))
    score = {i: 1 / (k + i + 1) for i in range(len(head))}
    for rank, i in enumerate(by_cosine):
        score[i] += weight / (k + rank + 1)
    order = sorted(range(len(head)), key=lambda i: (-score[i], i))
    return [replace(head[i], score=score[i]) for i in order] + tail


def rerank(llm: LLM, question: str, candidates: list[Fused], budget: int) -> list[Fused]:
    """The first `budget` candidates reordered by relevance; the rest keep their order after them."""
    head, tail = candidates[:budget], candidates[budget:]
    judged = [(relevance(llm, question, c.hit.path, c.hit.text), i, c) for i, c in enumerate(head)]
    judged.sort(key=lambda item: (-item[0], item[1]))
    return [replace(c, score=p) for p, _, c in judged] + tail
