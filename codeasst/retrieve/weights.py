"""The fusion weights a query gets, and where each came from.

Short questions and long reports weigh the retrievers differently: a report's words and clues
beat its meaning, squeezed into 256 word pieces. retrieval.weights holds the first,
retrieval.long_weights what a long query changes. A user's own retrieval.weights key outweighs
a long query's default for it: a weight the user chose is never dropped without a word.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from codeasst.config import RetrievalSettings
from codeasst.retrieve import evidence

if TYPE_CHECKING:
    from codeasst.config import LoadedSettings

LONG_DEFAULT = "long-query default"


def _long_keys(cfg: RetrievalSettings) -> list[str]:
    """The keys of retrieval.long_weights that apply to a long query: those set in that table, and its
    defaults where retrieval.weights does not set the key itself."""
    mine, theirs = cfg.set_keys("long_weights"), cfg.set_keys("weights")
    return [key for key in cfg.long_weights if key in mine or key not in theirs]


def fusion_weights(cfg: RetrievalSettings, long: bool) -> dict[str, float]:
    """Each retriever's weight in rank fusion for a short question, or a long query (`long`)."""
    weights = dict(cfg.weights)
    if long:
        weights.update({key: cfg.long_weights[key] for key in _long_keys(cfg)})
    return weights


def origins(loaded: LoadedSettings, long: bool) -> dict[str, str]:
    """Where each weight fusion_weights gives came from: a config file, the environment, a flag, or a default."""
    cfg = loaded.settings.retrieval
    out = {key: loaded.origin(f"retrieval.weights.{key}") if key in cfg.set_keys("weights") else "default"
           for key in cfg.weights}
    if long:
        set_long = cfg.set_keys("long_weights")
        out.update({key: loaded.origin(f"retrieval.long_weights.{key}") if key in set_long else LONG_DEFAULT
                    for key in _long_keys(cfg)})
    return out


def weights_lines(loaded: LoadedSettings, question: str) -> list[str]:
    """What `search --explain` says of fusion: each retriever's weight for this query, grouped by where it
    came from, then the other fusion settings (RRF's k, the boost, the cut-off without -k, the weight of
    dense search by an untranslated question, a long query's title weight) and where each came from."""
    cfg = loaded.settings.retrieval
    long = evidence.is_long(evidence.clean(question))
    weights, where = fusion_weights(cfg, long), origins(loaded, long)
    groups: dict[str, list[str]] = {}
    for key, value in weights.items():
        groups.setdefault(where[key], []).append(f"{key} {value:g}")
    said = "; ".join(f"{', '.join(items)} ({origin})" for origin, items in groups.items())
    kind = "a long query (retrieval.long_weights over retrieval.weights)" if long else \
        "a short question (retrieval.weights)"
    names = ["rrf_k", "multi_source_boost", "min_score_ratio", "original_language_weight"]
    names += ["title_weight"] if long else []
    return [f"weights for {kind}: {said}",
            "fusion: " + ", ".join(f"retrieval.{name} {getattr(cfg, name):g} ({loaded.origin(f'retrieval.{name}')})"
                                   for name in names)]
