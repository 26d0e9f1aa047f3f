"""The index's chunks and their BM25 postings, in the manifest's SQLite database.

Lexical first: a file's chunks, their words and its manifest row are written in one
transaction, before anything is embedded, so search answers from BM25 and exact search the
moment a file is chunked. Each chunk then waits for its vector (`state`): pending, embedded
(its vector is in the vector store), or lexical only (codeasst.index.plan says its vector
does not pay). A kill at any point leaves every file either wholly in or wholly out.

Every read is bounded: by ids or paths in batches under SQLite's variable limit, or by a
LIMIT, never by how many chunks a word matches.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from codeasst.index import words
from codeasst.index.chunker import Chunk

PENDING, EMBEDDED, LEXICAL = 0, 1, 2
BATCH = 500  # ids or paths per statement: far under SQLite's variable limit (32,766; 999 before 3.32)

SCHEMA = """
    CREATE TABLE IF NOT EXISTS chunks (
        n INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, path TEXT NOT NULL, start_line INTEGER,
        end_line INTEGER, kind TEXT, name TEXT, language TEXT, text TEXT, length INTEGER,
        state INTEGER NOT NULL);
    CREATE INDEX IF NOT EXISTS chunks_path ON chunks (path);
    CREATE INDEX IF NOT EXISTS chunks_state ON chunks (state, id);
    CREATE TABLE IF NOT EXISTS postings (
        term TEXT NOT NULL, n INTEGER NOT NULL, count INTEGER NOT NULL, PRIMARY KEY (term, n)) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS postings_n ON postings (n);
"""

# The chunks each embedder other than the index's own has a vector for, kept while another is in use:
# a change of embedder shelves the one in use here and takes the new one's back (ChunkTable.switch).
SHELF = """
    CREATE TABLE IF NOT EXISTS shelved (
        embedder TEXT NOT NULL, id TEXT NOT NULL, PRIMARY KEY (embedder, id)) WITHOUT ROWID;
"""


@dataclass(frozen=True)
class Hit:
    id: str
    path: str
    start_line: int
    end_line: int
    kind: str
    name: str
    language: str
    text: str
    score: float  # cosine similarity for dense hits, higher is closer; 0 where read by id or path
    role: str = "implementation"  # the file's role (codeasst.index.roles), filled in by retrieval


_COLUMNS = "id, path, start_line, end_line, kind, name, language, text"


def _hit(row: tuple) -> Hit:
    return Hit(*row, score=0.0)


def dense_share(counts: dict[str, int]) -> dict[str, int]:
    """From ChunkTable.counts(): {"embedded": N, "total": M}, the chunks that have their vector of
    those that get one (what search says while embedding is under way)."""
    return {"embedded": counts["embedded"], "total": counts["embedded"] + counts["pending"]}


def batched(items: Sequence, size: int = BATCH) -> Iterator[Sequence]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class ChunkTable:
    """The chunks and postings tables of one index database (`db`, owned by the caller, who
    also opens and closes the transactions of writes)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    # -- writes (inside the caller's transaction) ------------------------------------------

    def remove_paths(self, paths: Sequence[str]) -> list[str]:
        """Drop every chunk of `paths` and its postings; the ids of those that had vectors."""
        embedded: list[str] = []
        for batch in batched(list(paths)):
            marks = ",".join("?" * len(batch))
            embedded += self._embedded_in(batch)
            self.db.execute(f"DELETE FROM postings WHERE n IN (SELECT n FROM chunks WHERE path IN ({marks}))", batch)
            self.db.execute(f"DELETE FROM chunks WHERE path IN ({marks})", batch)
        return embedded

    def _embedded_in(self, paths: Sequence[str]) -> list[str]:
        """The ids of the embedded chunks of these files (at most BATCH of them)."""
        return [row[0] for row in self.db.execute(
            f"SELECT id FROM chunks WHERE state = {EMBEDDED} AND path IN ({','.join('?' * len(paths))})", paths)]

    def add(self, chunks: Iterable[tuple[str, Chunk, int]], embedded: set[str]) -> None:
        """Store new chunks, as (id, chunk, PENDING or LEXICAL), with their words; those whose id is in
        `embedded` (a chunk unchanged in a changed file, whose vector is still in the store) keep it."""
        rows, postings = [], []
        n = (self.db.execute("SELECT MAX(n) FROM chunks").fetchone()[0] or 0)
        for id_, chunk, state in chunks:
            n += 1
            counts = Counter(words.tokens(f"{chunk.text}\n{chunk.extra_words}" if chunk.extra_words else chunk.text))
            state = EMBEDDED if id_ in embedded and state == PENDING else state
            rows.append((n, id_, chunk.path, chunk.start_line, chunk.end_line, chunk.kind, chunk.name,
                         chunk.language, chunk.text, sum(counts.values()), state))
            postings += [(term, n, count) for term, count in counts.items()]
        self.db.executemany("INSERT INTO chunks (n, id, path, start_line, end_line, kind, name, language, text, "
                            "length, state) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        postings.sort()  # in the table's own order: a B-tree append, not a page split per row
        self.db.executemany("INSERT INTO postings VALUES (?, ?, ?)", postings)

    def replan(self, paths: Sequence[str], embeds: bool) -> list[str]:
        """These files' chunks moved into the plan (waiting for vectors, those they have kept) or
        out of it (lexical only); the ids of the vectors that no longer pay."""
        dropped: list[str] = []
        for batch in batched(list(paths)):
            marks = ",".join("?" * len(batch))
            if embeds:
                self.db.execute(f"UPDATE chunks SET state = {PENDING} WHERE state = {LEXICAL} AND path IN ({marks})",
                                batch)
            else:
                dropped += self._embedded_in(batch)
                self.db.execute(f"UPDATE chunks SET state = {LEXICAL} WHERE path IN ({marks})", batch)
        return dropped

    def mark(self, ids: Sequence[str], state: int) -> None:
        for batch in batched(list(ids)):
            self.db.execute(f"UPDATE chunks SET state = ? WHERE id IN ({','.join('?' * len(batch))})",
                            [state, *batch])

    def clear(self) -> None:
        self.db.execute("DELETE FROM postings")
        self.db.execute("DELETE FROM chunks")
        self.db.execute("DELETE FROM shelved")

    def switch(self, old: str | None, new: str) -> tuple[list[str], int]:
        """The embedder in use changes from `old` to `new`: the chunks `old` embedded are shelved under
        its name (its vectors stay in its own collection), and those `new` embedded before, still held
        and still planned for vectors, are marked embedded again. Returns the ids of `new`'s vectors
        that no chunk needs any longer (to drop from its collection) and how many it got back."""
        if old is None:  # a new index: nothing embedded, nothing shelved
            return [], 0
        self.db.execute(f"INSERT OR IGNORE INTO shelved SELECT ?, id FROM chunks WHERE state = {EMBEDDED}", (old,))
        self.db.execute(f"UPDATE chunks SET state = {PENDING} WHERE state = {EMBEDDED}")
        stale = [row[0] for row in self.db.execute(
            f"SELECT s.id FROM shelved s LEFT JOIN chunks c ON c.id = s.id "
            f"WHERE s.embedder = ? AND (c.id IS NULL OR c.state = {LEXICAL})", (new,))]
        back = self.db.execute(
            f"UPDATE chunks SET state = {EMBEDDED} WHERE state = {PENDING} "
            "AND id IN (SELECT id FROM shelved WHERE embedder = ?)", (new,)).rowcount
        self.db.execute("DELETE FROM shelved WHERE embedder = ?", (new,))
        return stale, back

    def shelved(self, embedder: str) -> int:
        """How many chunks that get vectors have one from `embedder`, which is not the one in use."""
        return self.db.execute(
            f"SELECT COUNT(*) FROM shelved s JOIN chunks c ON c.id = s.id WHERE s.embedder = ? "
            f"AND c.state != {LEXICAL}", (embedder,)).fetchone()[0]

    def shelve(self, embedder: str, ids: Sequence[str]) -> None:
        """Record that `embedder`, not the one in use, has vectors for these chunks (a later phase)."""
        self.db.executemany("INSERT OR IGNORE INTO shelved VALUES (?, ?)", [(embedder, id_) for id_ in ids])

    def unshelved(self, embedder: str, limit: int) -> list[Hit]:
        """Up to `limit` chunks that get vectors and lack `embedder`'s (not the one in use), by id (as
        `pending`: an order that favours no role)."""
        rows = self.db.execute(
            f"SELECT {_COLUMNS} FROM chunks c WHERE c.state != {LEXICAL} AND NOT EXISTS "
            "(SELECT 1 FROM shelved s WHERE s.embedder = ? AND s.id = c.id) ORDER BY c.id LIMIT ?", (embedder, limit))
        return [_hit(row) for row in rows]

    def unshelved_count(self, embedder: str) -> int:
        return self.db.execute(
            f"SELECT COUNT(*) FROM chunks c WHERE c.state != {LEXICAL} AND NOT EXISTS "
            "(SELECT 1 FROM shelved s WHERE s.embedder = ? AND s.id = c.id)", (embedder,)).fetchone()[0]

    # -- reads --------------------------------------------------------------------------------

    def pending(self, limit: int) -> list[Hit]:
        """Up to `limit` chunks waiting for their vectors, in the order of their ids (hashes): an order
        that favours no role, file or folder, so an index half embedded ranks as a whole one does, only
        with less dense evidence. (Embedding the code before the tests, say, is worse than no vectors
        for a question a test answers: docs/benchmarks.md, issue 36.)"""
        rows = self.db.execute(f"SELECT {_COLUMNS} FROM chunks WHERE state = {PENDING} ORDER BY id LIMIT ?",
                               (limit,))
        return [_hit(row) for row in rows]

    def counts(self) -> dict[str, int]:
        """Chunks in all, embedded, waiting for a vector, and kept lexical only."""
        found = dict(self.db.execute("SELECT state, COUNT(*) FROM chunks GROUP BY state").fetchall())
        return {"chunks": sum(found.values()), "embedded": found.get(EMBEDDED, 0),
                "pending": found.get(PENDING, 0), "lexical_only": found.get(LEXICAL, 0)}

    def embedded_ids(self) -> set[str]:
        return {row[0] for row in self.db.execute(f"SELECT id FROM chunks WHERE state = {EMBEDDED}")}

    def by_id(self, ids: Sequence[str], embedded_only: bool = False) -> dict[str, Hit]:
        """The chunks with these ids (those the index holds), by id."""
        where = f" AND state = {EMBEDDED}" if embedded_only else ""
        found: dict[str, Hit] = {}
        for batch in batched(list(dict.fromkeys(ids))):
            rows = self.db.execute(f"SELECT {_COLUMNS} FROM chunks WHERE id IN ({','.join('?' * len(batch))}){where}",
                                   batch)
            found.update((row[0], _hit(row)) for row in rows)
        return found

    def of_paths(self, paths: Sequence[str]) -> list[Hit]:
        """Every chunk of these files, in file and line order."""
        found: list[Hit] = []
        for batch in batched(sorted(set(paths))):
            found += [_hit(row) for row in self.db.execute(
                f"SELECT {_COLUMNS} FROM chunks WHERE path IN ({','.join('?' * len(batch))}) "
                "ORDER BY path, start_line, n", batch)]
        return found

    def spans_of(self, paths: Sequence[str]) -> list[Hit]:
        """Every chunk of these files without its text (""): where a line hit falls, read cheaply
        however many files a word is in."""
        found: list[Hit] = []
        for batch in batched(sorted(set(paths))):
            found += [_hit(row) for row in self.db.execute(
                "SELECT id, path, start_line, end_line, kind, name, language, '' FROM chunks "
                f"WHERE path IN ({','.join('?' * len(batch))}) ORDER BY path, start_line, n", batch)]
        return found

    def rank(self, query: str, limit: int = 50) -> list[tuple[str, float]]:
        """Chunk ids by BM25 score for the query's tokens, best first (ties by id)."""
        total, avg_length = self.db.execute("SELECT COUNT(*), AVG(length) FROM chunks").fetchone()
        if not total:
            return []
        scores: dict[str, float] = {}
        for term, query_count in Counter(words.tokens(query)).items():
            postings = self.db.execute("SELECT c.id, p.count, c.length FROM postings p JOIN chunks c ON c.n = p.n "
                                       "WHERE p.term = ?", (term,)).fetchall()
            words.add_term(scores, postings, total, avg_length or 1.0, query_count)
        return words.best(scores, limit)

    def rank_files(self, query: str, limit: int = 50) -> list[tuple[str, float]]:
        """Files by BM25 score for the query's tokens, each file read as the sum of its chunks
        (BM25 over whole files from the chunks' postings: no second index), best first."""
        lengths = dict(self.db.execute("SELECT path, SUM(length) FROM chunks GROUP BY path"))
        if not lengths:
            return []
        avg_length = sum(lengths.values()) / len(lengths)
        scores: dict[str, float] = {}
        for term, query_count in Counter(words.tokens(query)).items():
            counts = self.db.execute("SELECT c.path, SUM(p.count) FROM postings p JOIN chunks c ON c.n = p.n "
                                     "WHERE p.term = ? GROUP BY c.path", (term,)).fetchall()
            words.add_term(scores, [(path, count, lengths[path]) for path, count in counts],
                           len(lengths), avg_length or 1.0, query_count)
        return words.best(scores, limit)

    def best_in(self, query: str, paths: Sequence[str]) -> dict[str, str]:
        """For each of `paths`, the id of its chunk BM25 scores highest for the query (idf over
        every chunk); a file none of whose chunks has a query word is left out."""
        total, avg_length = self.db.execute("SELECT COUNT(*), AVG(length) FROM chunks").fetchone()
        if not total or not paths:
            return {}
        wanted = sorted(set(paths))
        marks = ",".join("?" * len(wanted))
        scores: dict[str, float] = {}
        path_of: dict[str, str] = {}
        for term, query_count in Counter(words.tokens(query)).items():
            found = self.db.execute("SELECT COUNT(*) FROM postings WHERE term = ?", (term,)).fetchone()[0]
            rows = self.db.execute("SELECT c.id, p.count, c.length, c.path FROM postings p JOIN chunks c ON c.n = p.n "
                                   f"WHERE p.term = ? AND c.path IN ({marks})", (term, *wanted)).fetchall()
            path_of.update((id_, path) for id_, _, _, path in rows)
            words.add_term(scores, [row[:3] for row in rows], total, avg_length or 1.0, query_count, found)
        best: dict[str, tuple[float, str]] = {}
        for id_, score in scores.items():
            path = path_of[id_]
            if path not in best or (score, id_) > best[path]:
                best[path] = (score, id_)
        return {path: id_ for path, (_, id_) in best.items()}

