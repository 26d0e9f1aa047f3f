"""BM25 over the indexed files, with code-aware tokens: a long bug report shares many words
with the file it is about, and ranking by those words is what dense search on a truncated
query cannot do.

The term counts of each file are kept in the index directory, keyed by the file's size and
mtime, so a query re-reads only the files that changed since the last one (the first query
after indexing reads them all).

An own implementation rather than a library: the index must be updated file by file as the
vector index is, which `bm25s` and `rank_bm25` do not offer (both rebuild from the whole
corpus). Its scoring time has no figure in docs/benchmarks.md and was not re-measured.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from codeasst.index.words import K1, add_term, best, idf, plain_tokens, tokens

__all__ = ["FileBM25", "plain_tokens", "tokens"]

CACHE_NAME = "bm25-files.pickle"
CACHE_VERSION = 1


@dataclass
class _Doc:
    size: int
    mtime_ns: int
    length: int
    counts: dict[str, int]


class FileBM25:
    """BM25 scores of the indexed files for a query."""

    def __init__(self, docs: dict[str, _Doc], tokenize: Callable[[str], list[str]] = tokens) -> None:
        self.docs = docs
        self.tokenize = tokenize
        self.postings: dict[str, list[tuple[str, int]]] = {}
        for path, doc in docs.items():
            for term, count in doc.counts.items():
                self.postings.setdefault(term, []).append((path, count))
        lengths = [d.length for d in docs.values()]
        self.avg_length = (sum(lengths) / len(lengths)) if lengths else 1.0

    @classmethod
    def for_files(cls, root: Path, files: list[str], cache_dir: Path | None = None,
                  tokenize: Callable[[str], list[str]] = tokens, memo: dict[str, _Doc] | None = None) -> FileBM25:
        """The counts of `files` under `root`, reusing those cached in `cache_dir` for unchanged files
        (only the default tokens are cached), or in `memo`, a dict kept in memory and updated here."""
        cache_dir = cache_dir if tokenize is tokens and memo is None else None
        cached = memo if memo is not None else _load(cache_dir / CACHE_NAME) if cache_dir else {}
        docs: dict[str, _Doc] = {}
        changed = len(cached) != len(files)
        for path in files:
            try:
                stat = (root / path).stat()
            except OSError:
                continue  # deleted since indexing: the next index update drops it
            doc = cached.get(path)
            if doc is None or (doc.size, doc.mtime_ns) != (stat.st_size, stat.st_mtime_ns):
                doc = _count(root / path, stat, tokenize)
                changed = True
            if doc is not None:
                docs[path] = doc
        if cache_dir and changed:
            _save(cache_dir / CACHE_NAME, docs)
        if memo is not None:
            memo.update(docs)
        return cls(docs, tokenize)

    @classmethod
    def from_texts(cls, texts: dict[str, str]) -> FileBM25:
        docs = {}
        for path, text in texts.items():
            words = tokens(text)
            docs[path] = _Doc(len(text), 0, len(words), dict(Counter(words)))
        return cls(docs)

    def idf(self, term: str) -> float:
        return idf(len(self.docs), len(self.postings.get(term, ())))

    def rank(self, query: str, limit: int = 50) -> list[tuple[str, float]]:
        """Files by BM25 score for the query's tokens, best first (ties by path)."""
        scores: dict[str, float] = {}
        for term, query_count in Counter(self.tokenize(query)).items():
            postings = [(path, count, self.docs[path].length) for path, count in self.postings.get(term, ())]
            add_term(scores, postings, len(self.docs), self.avg_length, query_count)
        return best(scores, limit)

    def score_text(self, query_terms: Counter, text: str) -> float:
        """How well one piece of a file (a chunk) matches, with the files' IDF: picks the chunk
        that stands for a file in fusion."""
        counts = Counter(self.tokenize(text))
        return sum(self.idf(t) * counts[t] * (K1 + 1) / (counts[t] + K1) for t in query_terms if t in counts)


def _count(path: Path, stat: os.stat_result, tokenize: Callable[[str], list[str]]) -> _Doc | None:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    words = tokenize(text)
    return _Doc(stat.st_size, stat.st_mtime_ns, len(words), dict(Counter(words)))


def _load(path: Path) -> dict[str, _Doc]:
    try:
        with path.open("rb") as handle:
            version, docs = pickle.load(handle)
    except (OSError, EOFError, pickle.UnpicklingError, ValueError, TypeError, AttributeError):
        return {}  # a cache: missing or unreadable means counting again
    return docs if version == CACHE_VERSION else {}


def _save(path: Path, docs: dict[str, _Doc]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".bm25-", delete=False) as handle:
            pickle.dump((CACHE_VERSION, docs), handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(handle.name, path)  # readers see the old cache or the new one, never half
    except OSError:
        pass  # a read-only index directory costs the next query a recount, not the answer
