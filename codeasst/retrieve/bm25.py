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

import math
import os
import pickle
import re
import sqlite3
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

CACHE_NAME = "bm25-files.pickle"
CHUNKS_DB_NAME = "bm25-chunks.sqlite"
CACHE_VERSION = 1
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
    out = []
    for word in WORD.findall(text):
        lower = word.lower()
        if len(lower) < 2 or lower in STOP:
            continue
        out.append(lower)
        parts = [p.lower() for piece in word.split("_") for p in CAMEL.findall(piece)]
        if len(parts) > 1:
            out.extend(p for p in parts if len(p) >= 2 and p not in STOP)
    return out


def plain_tokens(text: str) -> list[str]:
    """Lower-cased words as a plain BM25 reads them: the baseline `codeasst eval retrieval` runs."""
    return re.findall(r"\w+", text.lower())


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
        return _idf(len(self.docs), len(self.postings.get(term, ())))

    def rank(self, query: str, limit: int = 50) -> list[tuple[str, float]]:
        """Files by BM25 score for the query's tokens, best first (ties by path)."""
        scores: dict[str, float] = {}
        for term, query_count in Counter(self.tokenize(query)).items():
            postings = [(path, count, self.docs[path].length) for path, count in self.postings.get(term, ())]
            _add_term(scores, postings, len(self.docs), self.avg_length, query_count)
        return _best(scores, limit)

    def score_text(self, query_terms: Counter, text: str) -> float:
        """How well one piece of a file (a chunk) matches, with the files' IDF: picks the chunk
        that stands for a file in fusion."""
        counts = Counter(self.tokenize(text))
        return sum(self.idf(t) * counts[t] * (K1 + 1) / (counts[t] + K1) for t in query_terms if t in counts)


class ChunkBM25:
    """BM25 over the index's chunks rather than its files, for short questions: a definition whose
    words are the question's stands out from a file that merely mentions them somewhere.

    The postings live in a SQLite file in the index directory, so a query reads only its own terms'.
    A chunk's id is a hash of its path, place and text (codeasst.index.indexer.chunk_id): a query
    lists the store's ids (cheap), counts only the chunks it has not seen and forgets those gone.
    Where the index directory cannot be written, the postings are kept in memory for the call."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def close(self) -> None:
        self.db.close()

    @classmethod
    def for_store(cls, store, cache_dir: Path | None = None) -> ChunkBM25:
        db = _postings_db(cache_dir / CHUNKS_DB_NAME if cache_dir else None)
        ids = set(store.ids())
        known = {row[0] for row in db.execute("SELECT id FROM docs")}
        gone, new = sorted(known - ids), sorted(ids - known)
        if gone or new:
            with db:
                for start in range(0, len(gone), 500):
                    batch = gone[start : start + 500]
                    marks = ",".join("?" * len(batch))
                    db.execute(f"DELETE FROM docs WHERE id IN ({marks})", batch)
                    db.execute(f"DELETE FROM postings WHERE id IN ({marks})", batch)
                for start in range(0, len(new), 2000):  # Chroma reads a bounded batch at a time
                    hits = store.chunks_by_id(new[start : start + 2000])
                    counted = [(hit.id, Counter(tokens(hit.text))) for hit in hits]
                    db.executemany("INSERT OR REPLACE INTO docs VALUES (?, ?)",
                                   [(id_, sum(counts.values())) for id_, counts in counted])
                    db.executemany("INSERT INTO postings VALUES (?, ?, ?)",
                                   [(term, id_, n) for id_, counts in counted for term, n in counts.items()])
        return cls(db)

    def rank(self, query: str, limit: int = 50) -> list[tuple[str, float]]:
        """Chunk ids by BM25 score for the query's tokens, best first (ties by id)."""
        total, avg_length = self.db.execute("SELECT COUNT(*), AVG(length) FROM docs").fetchone()
        if not total:
            return []
        scores: dict[str, float] = {}
        for term, query_count in Counter(tokens(query)).items():
            postings = self.db.execute("SELECT p.id, p.count, d.length FROM postings p JOIN docs d ON d.id = p.id "
                                       "WHERE p.term = ?", (term,)).fetchall()
            _add_term(scores, postings, total, avg_length, query_count)
        return _best(scores, limit)


def _idf(documents: int, found: int) -> float:
    return math.log(1 + (documents - found + 0.5) / (found + 0.5))


def _add_term(scores: dict[str, float], postings: list[tuple[str, int, int]], documents: int, avg_length: float,
              query_count: int) -> None:
    """One query term's BM25 share added to each document that has it; `postings`: (document,
    count, document length). A word repeated in the query counts a little more, not in proportion
    (a pasted log repeats a line many times)."""
    weight = _idf(documents, len(postings)) * (1 + math.log(query_count))
    for key, count, length in postings:
        norm = K1 * (1 - B + B * length / avg_length)
        scores[key] = scores.get(key, 0.0) + weight * count * (K1 + 1) / (count + norm)


def _best(scores: dict[str, float], limit: int) -> list[tuple[str, float]]:
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:limit]


def _postings_db(path: Path | None) -> sqlite3.Connection:
    """The postings file at `path`, made anew if damaged or of another version; in memory when
    there is no path or it cannot be written (the call then counts every chunk)."""
    for _ in range(2 if path is not None else 0):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(path, timeout=10)
        except (OSError, sqlite3.Error):
            break
        try:
            _postings_schema(db)
            return db
        except sqlite3.DatabaseError:  # damaged, of another version, or not writable
            db.close()
            try:
                path.unlink()  # a cache: counted again
            except OSError:
                break
    db = sqlite3.connect(":memory:")
    _postings_schema(db)
    return db


def _postings_schema(db: sqlite3.Connection) -> None:
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version not in (0, CACHE_VERSION):
        raise sqlite3.DatabaseError("postings of another version")
    db.executescript(f"""
        CREATE TABLE IF NOT EXISTS docs (id TEXT PRIMARY KEY, length INTEGER);
        CREATE TABLE IF NOT EXISTS postings (term TEXT, id TEXT, count INTEGER);
        CREATE INDEX IF NOT EXISTS postings_term ON postings (term);
        CREATE INDEX IF NOT EXISTS postings_id ON postings (id);
        PRAGMA user_version = {CACHE_VERSION};
    """)


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
