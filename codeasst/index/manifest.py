"""The manifest: what the index holds, per file (size, mtime, content hash, chunks), and the
chunks themselves with their words (codeasst.index.chunkdb).

It lives in SQLite beside the vectors. A file's row, its chunks and their postings are written
in one transaction, so after a crash the manifest holds each file wholly or not at all; the
vector store holds a vector only for a chunk the manifest marks embedded, and the indexer
reconciles the two when they disagree.
"""

from __future__ import annotations

import sqlite3
import time
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from codeasst.errors import IndexCorrupt
from codeasst.index import chunkdb
from codeasst.index.chunker import Chunk

SCHEMA_VERSION = 6


@dataclass(frozen=True)
class Entry:
    path: str
    size: int
    mtime_ns: int
    sha256: str
    chunks: int
    skipped: str | None = None  # why a file holds no chunks (binary, not UTF-8...)
    fallback: bool = False  # chunked by line windows although its language has a grammar
    role: str | None = None  # codeasst.index.roles; None until the indexer has read the file for it


# Numbered schema steps; step N brings a manifest from user_version N-1 to N.
_MIGRATIONS = [
    """
    CREATE TABLE IF NOT EXISTS files (
        path TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER,
        sha256 TEXT, chunks INTEGER, skipped TEXT);
    CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
    """,
    "ALTER TABLE files ADD COLUMN fallback INTEGER NOT NULL DEFAULT 0;",
    "ALTER TABLE files ADD COLUMN role TEXT;",
    "CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB, used REAL);",
    chunkdb.SCHEMA,
    chunkdb.SHELF,
]
assert len(_MIGRATIONS) == SCHEMA_VERSION


OPEN_RETRY_S = 10.0  # how long a manifest's first opening tries again while another opener holds it


class Manifest:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(path, isolation_level=None, timeout=5)
        except sqlite3.DatabaseError as exc:
            raise IndexCorrupt(f"index manifest {path} is unreadable: {exc}") from None
        deadline = time.monotonic() + OPEN_RETRY_S
        while True:
            try:
                self._open()
                break
            except sqlite3.OperationalError as exc:
                # A new file that several processes open at once: switching it to WAL can answer "locked"
                # at once, without waiting (SQLite's deadlock guard); the next try finds it switched.
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise IndexCorrupt(f"index manifest {path} is unreadable: {exc}") from None
                time.sleep(0.05)
            except sqlite3.DatabaseError as exc:
                raise IndexCorrupt(f"index manifest {path} is unreadable: {exc}") from None
        self.chunks = chunkdb.ChunkTable(self._db)

    def _open(self) -> None:
        self._db.execute("PRAGMA journal_mode=WAL").fetchall()
        self._db.execute("PRAGMA synchronous=NORMAL")
        # The chunks' postings are written in bulk, in term order across the whole table: a larger
        # page cache than SQLite's 2 MB default keeps the pages being written in memory.
        self._db.execute("PRAGMA cache_size=-65536")
        self._migrate()

    def _version(self) -> int:
        # fetchall: a statement left unfinished keeps its read lock, and two openers would wait on each other
        version = self._db.execute("PRAGMA user_version").fetchall()[0][0]
        if version > SCHEMA_VERSION:
            raise IndexCorrupt(f"index manifest {self.path} was written by a newer codeasst")
        return version

    def _migrate(self) -> None:
        """The schema brought up to date under the write lock, the version read again once it is held:
        two processes opening a new manifest at once would otherwise both run the same step (the
        second failing on `duplicate column`). Statement by statement: executescript commits first."""
        if self._version() == SCHEMA_VERSION:
            return
        with self._transaction():
            version = self._version()
            for number, step in enumerate(_MIGRATIONS[version:], start=version + 1):
                for statement in step.split(";"):
                    if statement.strip():
                        self._db.execute(statement)
                self._db.execute(f"PRAGMA user_version = {number}")

    def entries(self) -> dict[str, Entry]:
        try:
            rows = self._db.execute("SELECT path, size, mtime_ns, sha256, chunks, skipped, fallback, role FROM files")
            return {row[0]: Entry(*row[:6], fallback=bool(row[6]), role=row[7]) for row in rows}
        except sqlite3.DatabaseError as exc:
            raise IndexCorrupt(f"index manifest {self.path} is unreadable: {exc}") from None

    def put(self, entries: list[Entry]) -> None:
        with self._transaction():
            self._put(entries)

    def _put(self, entries: list[Entry]) -> None:
        self._db.executemany(
            "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [(e.path, e.size, e.mtime_ns, e.sha256, e.chunks, e.skipped, int(e.fallback), e.role) for e in entries],
        )

    def write_files(self, entries: list[Entry], chunks: list[tuple[str, Chunk, int]]) -> list[str]:
        """Replace these files' rows and chunks, (id, chunk, state), in one transaction; the ids of
        the vectors that no chunk of theirs has any longer (to drop from the vector store)."""
        new_ids = {id_ for id_, _, _ in chunks}
        with self._transaction():
            old = set(self.chunks.remove_paths([e.path for e in entries]))
            self.chunks.add(chunks, old)
            self._put(entries)
        return sorted(old - new_ids)

    def remove(self, paths: list[str]) -> list[str]:
        """Forget these files and their chunks; the ids of the vectors to drop."""
        with self._transaction():
            gone = self.chunks.remove_paths(paths)
            self._db.executemany("DELETE FROM files WHERE path = ?", [(p,) for p in paths])
        return gone

    def replan(self, decisions: dict[bool, list[str]]) -> list[str]:
        """Files' chunks moved in or out of the embedding plan (embeds -> paths), in one
        transaction; the ids of the vectors to drop."""
        dropped: list[str] = []
        with self._transaction():
            for embeds, paths in decisions.items():
                dropped += self.chunks.replan(paths, embeds)
        return dropped

    def mark_chunks(self, ids: Sequence[str], state: int) -> None:
        with self._transaction():
            self.chunks.mark(ids, state)

    def switch_embedder(self, old: str | None, new: str) -> tuple[list[str], int]:
        """Make `new` the embedder in use, in one transaction (codeasst.index.chunkdb.ChunkTable.switch)."""
        with self._transaction():
            found = self.chunks.switch(old, new)
            self._db.execute("INSERT OR REPLACE INTO meta VALUES ('embedder', ?)", (new,))
        return found

    def shelve(self, embedder: str, ids: Sequence[str]) -> None:
        with self._transaction():
            self.chunks.shelve(embedder, ids)

    def clear(self, vectors: bool = True) -> None:
        """Forget every file and chunk; the kept vectors too unless `vectors` is False (they are
        keyed by their text, so a rebuild with the same embedder may reuse them)."""
        with self._transaction():
            self._db.execute("DELETE FROM files")
            self._db.execute("DELETE FROM meta")
            self.chunks.clear()
            if vectors:
                self._db.execute("DELETE FROM vectors")

    def vectors(self, keys: Sequence[str]) -> dict[str, list[float]]:
        """The kept vectors of these embedded texts (by key), marked as used now."""
        found: dict[str, list[float]] = {}
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), 500):  # SQLite caps the parameters of one statement
            batch = unique[start : start + 500]
            rows = self._db.execute(f"SELECT key, vector FROM vectors WHERE key IN ({','.join('?' * len(batch))})",
                                    batch)
            found.update((key, array("f", blob).tolist()) for key, blob in rows)
        if found:
            with self._transaction():
                self._db.executemany("UPDATE vectors SET used = ? WHERE key = ?",
                                     [(time.time(), key) for key in found])
        return found

    def keep_vectors(self, vectors: dict[str, Sequence[float]], limit: int) -> None:
        """Keep these vectors for texts embedded again later (a branch switched back, a function
        moved); beyond `limit` vectors, the least recently used are dropped."""
        now = time.time()
        with self._transaction():
            self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                                 [(key, array("f", vector).tobytes(), now) for key, vector in vectors.items()])
            self._db.execute("DELETE FROM vectors WHERE key IN (SELECT key FROM vectors ORDER BY used DESC "
                             "LIMIT -1 OFFSET ?)", (limit,))

    def get_meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, values: dict[str, str]) -> None:
        with self._transaction():
            self._db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", list(values.items()))

    def _transaction(self):
        return _Transaction(self._db)

    def close(self) -> None:
        self._db.close()


class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type, exc, tb) -> None:
        self.db.execute("COMMIT" if exc_type is None else "ROLLBACK")
