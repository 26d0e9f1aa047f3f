"""What happened to each suggestion, kept in SQLite, and the seed product's metrics over it.

Per model variant and day:
- Accept Rate = accepted / shown; Discard Rate = discarded / shown;
- Happiness = Σ(AcceptedLength − 3·NumAccepts) − 0.05·ΣShowSuggestLength − 14·ΣNumDiscards,
  per shown suggestion, so days and variants of different volume compare.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from codeasst import paths
from codeasst.errors import CodeasstError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    at REAL NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('shown', 'accepted', 'discarded')),
    suggestion TEXT NOT NULL,
    variant TEXT NOT NULL,
    shown_length INTEGER NOT NULL DEFAULT 0,
    accepted_length INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS events_by_day ON events (variant, at);
"""


@dataclass(frozen=True)
class DayStats:
    variant: str
    day: str
    shown: int
    accepted: int
    discarded: int
    accepted_chars: int
    shown_chars: int

    @property
    def accept_rate(self) -> float:
        return self.accepted / self.shown if self.shown else 0.0

    @property
    def discard_rate(self) -> float:
        return self.discarded / self.shown if self.shown else 0.0

    @property
    def happiness(self) -> float:
        total = (self.accepted_chars - 3 * self.accepted) - 0.05 * self.shown_chars - 14 * self.discarded
        return total / self.shown if self.shown else 0.0


class EventStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            self._db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise CodeasstError(f"cannot read the suggestion events in {path}: {exc}",
                                hint="move it aside or delete it to start afresh") from None
        self._lock = threading.Lock()

    @classmethod
    def open_default(cls) -> EventStore:
        return cls(paths.data_dir() / "completion-events.sqlite")

    def record(self, kind: str, suggestion: str, variant: str, shown_length: int = 0, accepted_length: int = 0,
               at: float | None = None) -> None:
        with self._lock:
            self._db.execute("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?)",
                             (at if at is not None else time.time(), kind, suggestion, variant, shown_length,
                              accepted_length))

    def days(self) -> list[DayStats]:
        rows = self._db.execute("""
            SELECT variant, date(at, 'unixepoch', 'localtime') AS day,
                   SUM(kind = 'shown'), SUM(kind = 'accepted'), SUM(kind = 'discarded'),
                   SUM(CASE WHEN kind = 'accepted' THEN accepted_length ELSE 0 END),
                   SUM(CASE WHEN kind = 'shown' THEN shown_length ELSE 0 END)
            FROM events GROUP BY variant, day ORDER BY day, variant""").fetchall()
        return [DayStats(*row) for row in rows]
