"""Words as codeasst's BM25 reads them, and BM25's scoring of a term.

Shared by the index's postings (codeasst.index.chunkdb) and the file-level BM25 the evals and
completions use (codeasst.retrieve.bm25), so both count and weigh a word one way.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

K1 = 1.2
B = 0.75
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")
CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
# English glue words carry no evidence about where code lives; code words like `self` stay:
# IDF already makes them cheap.
STOP = frozenset(["a", "an", "and", "are", "as", "at", "be", "but", "by", "can", "could", "did", "do", "does", "for", "from", "had", "has", "have", "he", "her", "his", "i", "if", "in", "into", "is", "it", "its", "me", "my", "no", "not", "of", "on", "or", "our", "she", "so", "than", "that", "the", "their", "them", "then", "there", "these", "they", "this", "those", "to", "too", "us", "was", "we", "were", "what", "when", "where", "which", "while", "who", "why", "will", "with", "would", "you", "your"])


def tokens(text: str) -> list[str]:
    """Lower-cased tokens: each whole identifier, and its snake_case and CamelCase parts
    (`load_config` -> load_config, load, config; `HTTPClient` -> httpclient, http, client)."""
    out: list[str] = []
    for word in WORD.findall(text):
        out += _word_tokens(word)
    return out


@lru_cache(maxsize=200_000)
def _word_tokens(word: str) -> tuple[str, ...]:
    # Cached: a checkout repeats its identifiers thousands of times, and splitting them was most
    # of the lexical phase's time (issue 36).
    lower = word.lower()
    if len(lower) < 2 or lower in STOP:
        return ()
    parts = [p.lower() for piece in word.split("_") for p in CAMEL.findall(piece)]
    if len(parts) > 1:
        return (lower, *(p for p in parts if len(p) >= 2 and p not in STOP))
    return (lower,)


# Words that say nothing of where an answer lies in code: glue, and the words every question about
# code uses ("function", "value"). Read by stems() below.
STEM_STOP = frozenset(["the", "this", "that", "these", "those", "with", "from", "into", "about", "which", "what", "when", "where", "while", "does", "have", "been", "there", "their", "then", "than", "them", "they", "will", "would", "could", "should", "also", "only", "each", "every", "some", "such", "more", "most", "other", "used", "uses", "using", "code", "file", "files", "function", "method", "class", "module", "value", "values", "answer", "question", "excerpt", "excerpts", "line", "lines", "based", "provided", "given", "here", "your", "you", "how", "why"])
STEM = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")


def stems(text: str, stop: frozenset[str] = STEM_STOP) -> set[str]:
    """Crude stems of the words and of the parts of identifiers (`apply_vat`: appl, vat), so
    "applied" meets `apply_vat`; short enough to be cheap, good enough to rank lines. The one way
    `ask` and the outline weigh a line against a question. `stop`: the words left out (none where a
    name's every part counts: `RegisterMethod` is regi, meth)."""
    return {p.lower()[:4] for p in STEM.findall(text) if len(p) >= 3 and p.lower() not in stop}


def plain_tokens(text: str) -> list[str]:
    """Lower-cased words as a plain BM25 reads them: the baseline `codeasst eval retrieval` runs."""
    return re.findall(r"\w+", text.lower())


def idf(documents: int, found: int) -> float:
    return math.log(1 + (documents - found + 0.5) / (found + 0.5))


def add_term(scores: dict[str, float], postings: list[tuple[str, int, int]], documents: int, avg_length: float,
             query_count: int, found: int | None = None) -> None:
    """One query term's BM25 share added to each document that has it; `postings`: (document,
    count, document length), all those with the term unless `found` says how many have it. A word
    repeated in the query counts a little more, not in proportion (a pasted log repeats a line)."""
    weight = idf(documents, len(postings) if found is None else found) * (1 + math.log(query_count))
    for key, count, length in postings:
        norm = K1 * (1 - B + B * length / avg_length)
        scores[key] = scores.get(key, 0.0) + weight * count * (K1 + 1) / (count + norm)


def best(scores: dict[str, float], limit: int) -> list[tuple[str, float]]:
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:limit]
