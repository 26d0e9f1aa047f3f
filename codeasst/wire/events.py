"""What happened to each suggestion, kept in SQLite, and the seed product's metrics over it.

Per model variant and day:
- Accept Rate = accepted / shown; Discard Rate = discarded / shown;
- Happiness = Σ(AcceptedLength − 3·NumAccepts) − 0.05·ΣShowSuggestLength − 14·ΣNumDiscards,
  per shown suggestion, so days and variants of different volume compare.
"""

from __future__ import annotations

import math
import sqlite3
import statistics
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


@dataclass(frozen=True)
class Arm:
    """One variant's suggestions, each with its own Happiness, for the A/B comparison."""

    variant: str
    shown: int
    accepted: int
    happiness: tuple[float, ...]  # per shown suggestion

    @property
    def accept_rate(self) -> float:
        return self.accepted / self.shown if self.shown else 0.0

    @property
    def mean_happiness(self) -> float:
        return statistics.fmean(self.happiness) if self.happiness else 0.0


@dataclass(frozen=True)
class Comparison:
    a: Arm
    b: Arm
    accept_p: float  # two-sided, two-proportion z-test
    happiness_p: float  # two-sided, Welch's t with the normal approximation (fine from about 30 a side)

    def lines(self) -> list[str]:
        a, b = self.a, self.b
        return [
            f"A/B: {a.variant} ({a.shown} shown) against {b.variant} ({b.shown} shown), all days together",
            f"  accept rate {a.accept_rate:.1%} against {b.accept_rate:.1%}: p = {self.accept_p:.3g}"
            + ("" if self.accept_p < 0.05 else " (not significant at 0.05)"),
            f"  happiness per shown {a.mean_happiness:.2f} against {b.mean_happiness:.2f}: p = {self.happiness_p:.3g}"
            + ("" if self.happiness_p < 0.05 else " (not significant at 0.05)"),
        ]


def two_proportion_p(x1: int, n1: int, x2: int, n2: int) -> float:
    """Two-sided p-value that x1/n1 and x2/n2 differ only by chance (pooled z-test)."""
    if not n1 or not n2:
        return 1.0
    pooled = (x1 + x2) / (n1 + n2)
    spread = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    if spread == 0:
        return 1.0
    return math.erfc(abs(x1 / n1 - x2 / n2) / spread / math.sqrt(2))


def welch_p(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    """Two-sided p-value that the means of a and b differ only by chance (Welch, normal approximation)."""
    if len(a) < 2 or len(b) < 2:
        return 1.0
    spread = math.sqrt(statistics.variance(a) / len(a) + statistics.variance(b) / len(b))
    if spread == 0:
        return 1.0 if statistics.fmean(a) == statistics.fmean(b) else 0.0
    return math.erfc(abs(statistics.fmean(a) - statistics.fmean(b)) / spread / math.sqrt(2))


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

    def close(self) -> None:
        with self._lock:
            self._db.close()

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

    def compare(self) -> Comparison | None:
        """The two variants with the most shown suggestions, compared; None with fewer than two."""
        rows = self._db.execute("""
            SELECT variant, SUM(kind = 'shown'), SUM(kind = 'accepted'), SUM(kind = 'discarded'),
                   SUM(CASE WHEN kind = 'accepted' THEN accepted_length ELSE 0 END),
                   SUM(CASE WHEN kind = 'shown' THEN shown_length ELSE 0 END)
            FROM events GROUP BY variant, suggestion""").fetchall()
        arms: dict[str, list[tuple[int, float]]] = {}
        for variant, shown, accepted, discarded, accepted_chars, shown_chars in rows:
            if shown:
                value = (accepted_chars - 3 * accepted) - 0.05 * shown_chars - 14 * discarded
                arms.setdefault(variant, []).append((min(accepted, 1), value))
        if len(arms) < 2:
            return None
        built = sorted((Arm(v, len(items), sum(a for a, _ in items), tuple(h for _, h in items))
                        for v, items in arms.items()), key=lambda arm: -arm.shown)
        a, b = built[:2]
        return Comparison(a, b, two_proportion_p(a.accepted, a.shown, b.accepted, b.shown),
                          welch_p(a.happiness, b.happiness))
