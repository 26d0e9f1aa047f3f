"""What a query wants (the implementation, its tests, its docs, an example), and how much each
file role (codeasst.index.roles) weighs for it.

A question about how something works wants the code even when tests and docs mention the
names more often; "how is X tested?" wants the tests. Fused scores are multiplied by the
weight of the hit's role for the query's intent, so a role that does not answer the intent
sinks without being dropped: a question the role rules misread still finds its file lower down.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING

from codeasst.config import RetrievalSettings
from codeasst.retrieve.fuse import Fused

if TYPE_CHECKING:
    from codeasst.config import LoadedSettings

INTENTS = ("implementation", "test", "docs", "usage", "benchmark")

_TEST = re.compile(r"\b(tests?|tested|testing|test[- ]?(suite|cases?)|unit[- ]?tests?|fixtures?|conftest|"
                   r"covered by|regression tests?)\b", re.IGNORECASE)
_BENCH = re.compile(r"\b(bench(mark(s|ed|ing)?)?|benches)\b", re.IGNORECASE)
_DOCS = re.compile(r"\b(documented|documentation|docs|readme|changelog|change ?log|release notes|user guide|"
                   r"explained in the)\b|\bwhere (is|are)\b[^?]*\b(explained|described)\b", re.IGNORECASE)
_USAGE = re.compile(r"\b(examples?|sample (app|code|project)|demo|tutorial|usage|how (do|can|should) (i|you|we) "
                    r"use|show me how)\b", re.IGNORECASE)

# The roles that answer each intent: weight 1. Every other role is weighed down by the factor below.
WANTED = {
    "implementation": {"implementation"},
    "test": {"test", "fixture"},
    "docs": {"docs"},
    "usage": {"example", "docs"},
    "benchmark": {"benchmark"},
}
# How much a hit of a role that does not answer the intent keeps of its fused score: retrieval.off_intent,
# where the caller brings no settings.
OFF_INTENT = RetrievalSettings().off_intent


def intent_of(question: str, long: bool = False) -> str:
    """The query's intent, from its words (English: a translated query is passed in translated).
    A long query (a bug report, a pasted log) is read by its first line only: its body mentions
    tests, examples and docs in passing ("the test fails", "example:"), and what a report asks
    for is the code to fix; 85 of the 239 reports of the localization dev set, whose fixes all
    edit code, read as another intent by their whole text, 3 by their first lines."""
    if long:
        question = next((line for line in question.splitlines() if line.strip()), "")
    for name, pattern in (("test", _TEST), ("benchmark", _BENCH), ("docs", _DOCS), ("usage", _USAGE)):
        if pattern.search(question):
            return name
    return "implementation"


def role_weight(role: str, intent: str, off_intent: dict[str, float] | None = None) -> float:
    if role in WANTED[intent]:
        return 1.0
    return (OFF_INTENT if off_intent is None else off_intent).get(role, 1.0)


# Roles weighed down only where a file of a role the intent wants matches as well: a generated file (protocol
# bindings, parser tables, API models made from a specification) is often the only place that defines what
# a question names, and then it must come first; beside hand-written code that matches as well, it sinks.
SPARED_WHEN_BEST = frozenset({"generated"})


def weigh(fused: list[Fused], intent: str, off_intent: dict[str, float] | None = None) -> list[Fused]:
    """Fused hits with each score times its role's weight for `intent`, best first; a generated file's hit
    that scores above every hit of a wanted role keeps its score (SPARED_WHEN_BEST)."""
    best_wanted = max((f.score for f in fused if f.hit.role in WANTED[intent]), default=0.0)

    def weight(f: Fused) -> float:
        if f.hit.role in SPARED_WHEN_BEST and f.score > best_wanted:
            return 1.0
        return role_weight(f.hit.role, intent, off_intent)

    out = [replace(f, score=f.score * weight(f)) for f in fused]
    out.sort(key=lambda f: (-f.score, f.hit.path, f.hit.start_line))
    return out


def explain_lines(question: str, roles_on: bool = True, loaded: LoadedSettings | None = None) -> list[str]:
    """What `search --explain` says before the hits: the intent read from the question and what
    each role keeps of its score for it; with the `loaded` settings, also the fusion weights the
    question gets and where each came from (codeasst.retrieve.weights)."""
    from codeasst.retrieve import evidence
    from codeasst.retrieve.weights import weights_lines

    fusion = weights_lines(loaded, question) if loaded is not None else []
    if not roles_on:
        return ["roles: off (retrieval.roles = false): hits are ranked without their files' roles", *fusion]
    off = loaded.settings.retrieval.off_intent if loaded is not None else OFF_INTENT
    question = evidence.clean(question)
    wants = intent_of(question, evidence.is_long(question))
    kept = ", ".join(f"{role} x{role_weight(role, wants, off):g}" for role in off if role_weight(role, wants, off) != 1)
    return [f"intent: {wants} (answered by {', '.join(sorted(WANTED[wants]))} files; others weigh less: {kept})",
            *fusion]
