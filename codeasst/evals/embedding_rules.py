"""Which chunks' vectors pay (issue 36): retrieval with every chunk embedded, scored again as if
each candidate rule had kept some files lexical only, from the same run's rankings.

A rule's stage drops, from every dense ranking, the chunks of the files the rule would not
embed, and fuses the rankings again as search does: exactly what search would rank had those
chunks no vectors (dense search would fill the depth with the next-nearest embedded chunks,
which rank below every chunk kept here, so a rule's figures can only be a little low).
"lexical only" drops every dense ranking: what search answers before anything is embedded.
"""

from __future__ import annotations

from codeasst.index import chunker
from codeasst.index.plan import Plan
from codeasst.retrieve import intent
from codeasst.retrieve.fuse import Fused
from codeasst.retrieve.pipeline import DENSE, Retrieval, fuse

# Every chunk embedded: the index the rules are measured against (flags for build_services).
EMBED_ALL = {"index.lexical_roles": [], "index.lexical_data": False}
RULES: dict[str, Plan | None] = {
    "fused, embedding by the rule": Plan(frozenset({"fixture", "generated", "vendored"}), True),
    "fused, the rule and tests lexical": Plan(frozenset({"fixture", "generated", "vendored", "test"}), True),
    "fused, the rule, tests and docs lexical": Plan(frozenset({"fixture", "generated", "vendored", "test",
                                                               "docs", "benchmark"}), True),
    "fused, lexical only": None,
}


def lexical_paths(entries: dict) -> dict[str, set[str]]:
    """Rule stage -> the indexed files it would keep lexical (None: all of them), from the manifest's entries."""
    out = {}
    for name, plan in RULES.items():
        out[name] = {path for path, e in entries.items() if e.chunks and (
            plan is None or not plan.embeds(path, e.role, chunker.language_for(path) or "", e.chunks))}
    return out


def embedded_counts(entries: dict, lexical: dict[str, set[str]]) -> dict[str, dict[str, int]]:
    total = sum(e.chunks for e in entries.values())
    return {name: {"chunks": total, "embedded": total - sum(entries[p].chunks for p in paths)}
            for name, paths in lexical.items()}


def stages(result: Retrieval, cfg, lexical: dict[str, set[str]]) -> dict[str, list[Fused]]:
    long = "bm25" in result.rankings  # only long queries run BM25 over files
    out = {}
    for name, paths in lexical.items():
        rankings = {k: [h for h in v if h.path not in paths] if k in DENSE else v for k, v in result.rankings.items()}
        if RULES[name] is None:
            rankings = {k: v for k, v in rankings.items() if k not in DENSE}
        fused = fuse(rankings, cfg, long)
        out[name] = intent.weigh(fused, result.intent, cfg.off_intent) if cfg.roles else fused
    return out
