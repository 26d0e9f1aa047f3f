"""Fusion and ordering of the retrievers' rankings."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from codeasst.config import RetrievalSettings
from codeasst.index.store import Hit

# RRF's k and the multi-source boost where the caller brings no settings (retrieval.rrf_k and
# retrieval.multi_source_boost say why they are what they are).
DEFAULTS = RetrievalSettings()


@dataclass(frozen=True)
class Fused:
    hit: Hit
    score: float
    sources: tuple[str, ...]


def reciprocal_rank_fusion(rankings: dict[str, list[Hit]], weights: dict[str, float] | None = None,
                           cfg: RetrievalSettings = DEFAULTS) -> list[Fused]:
    """RRF: each list gives 1/(k + rank) to its chunks, scaled by the list's weight; chunks
    found by several retrievers get a further boost (k and the boost: `cfg`'s rrf_k and
    multi_source_boost)."""
    k, boost = cfg.rrf_k, cfg.multi_source_boost
    scores: dict[str, float] = defaultdict(float)
    sources: dict[str, list[str]] = defaultdict(list)
    best: dict[str, Hit] = {}
    for name, hits in rankings.items():
        weight = (weights or {}).get(name, 1.0)
        for rank, hit in enumerate(hits, start=1):
            if name in sources[hit.id]:
                continue
            scores[hit.id] += weight / (k + rank)
            sources[hit.id].append(name)
            best.setdefault(hit.id, hit)
    fused = [
        Fused(best[i], scores[i] * (1 + boost * (len(sources[i]) - 1)), tuple(sources[i]))
        for i in scores
    ]
    fused.sort(key=lambda f: (-f.score, f.hit.path, f.hit.start_line))
    return fused


def cap_per_file(fused: list[Fused], per_file: int) -> list[Fused]:
    """Keep at most `per_file` chunks of one file, so a single big file cannot fill the context."""
    taken: dict[str, int] = defaultdict(int)
    kept = []
    for item in fused:
        if taken[item.hit.path] < per_file:
            taken[item.hit.path] += 1
            kept.append(item)
    return kept


def present(fused: list[Fused], k: int, per_file: int, min_ratio: float) -> list[Fused]:
    """What a user is shown: at most `per_file` per file, at most k, and only hits scoring at
    least `min_ratio` of the best one (the first is always kept): when the retrievers agree on
    one place, the weaker candidates are noise."""
    top = cap_per_file(fused, per_file)[:k]
    return [f for i, f in enumerate(top) if i == 0 or f.score >= min_ratio * top[0].score]


def as_fused(hits: list[Hit], source: str, cfg: RetrievalSettings = DEFAULTS) -> list[Fused]:
    """One retriever's ranking in fused form, so every stage can be presented alike."""
    return reciprocal_rank_fusion({source: hits}, cfg=cfg)


def against_lost_in_the_middle(items: list) -> list:
    """Strongest items at both ends, weakest in the middle: 1st, 3rd, 5th ... 6th, 4th, 2nd."""
    return items[0::2] + items[1::2][::-1]
