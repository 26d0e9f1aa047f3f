"""Chat history per repository, in SQLite: conversations, their turns, and what was typed.

One database in the user's data directory, rows keyed by the repository's root, so
nothing is written into the repository. Schema changes are numbered migrations, run in
order and recorded in `PRAGMA user_version`.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from codeasst import paths
from codeasst.errors import CodeasstError


def _m1_initial(db: sqlite3.Connection) -> None:
    _run(db, """
        CREATE TABLE conversations (
            id INTEGER PRIMARY KEY,
            repo TEXT NOT NULL,
            started_at REAL NOT NULL,
            title TEXT NOT NULL DEFAULT ''
        );
        CREATE TABLE turns (
            id INTEGER PRIMARY KEY,
            conversation INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            at REAL NOT NULL,
            question TEXT NOT NULL,
            answer TEXT NOT NULL,
            sources TEXT NOT NULL DEFAULT '[]',
            state TEXT NOT NULL DEFAULT 'done'
        );
        CREATE TABLE inputs (
            id INTEGER PRIMARY KEY,
            repo TEXT NOT NULL,
            at REAL NOT NULL,
            text TEXT NOT NULL
        );
        CREATE INDEX turns_by_conversation ON turns (conversation, id);
        CREATE INDEX inputs_by_repo ON inputs (repo, id);
    """)


def _run(db: sqlite3.Connection, script: str) -> None:
    """Each statement of `script` in the caller's transaction (executescript would commit it)."""
    for statement in script.split(";"):
        if statement.strip():
            db.execute(statement)


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [_m1_initial]


@dataclass
class Source:
    """A place an answer or a search points at."""

    path: str
    start_line: int
    end_line: int
    label: str = ""  # the symbol, or why the place was cited
    verified: bool = True
    attached: bool = False

    @property
    def place(self) -> str:
        return f"{self.path}:{self.start_line}-{self.end_line}"


@dataclass
class Turn:
    question: str
    answer: str = ""
    sources: list[Source] = field(default_factory=list)
    state: str = "done"  # done, cancelled, failed
    ungrounded: list[str] = field(default_factory=list)
    stats: dict[str, float] = field(default_factory=dict)  # first_token_s, tokens_per_s, total_s


@dataclass
class Conversation:
    id: int
    started_at: float
    title: str
    turns: list[Turn] = field(default_factory=list)


class History:
    def __init__(self, path: Path, repo_root: Path) -> None:
        self.path = path
        self.repo = paths.repo_key(repo_root)
        path.parent.mkdir(parents=True, exist_ok=True)
        # The app writes from its worker threads; one lock keeps the connection to one at a time.
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA foreign_keys = ON")
            self._migrate()
        except sqlite3.DatabaseError as exc:
            raise CodeasstError(f"cannot read the chat history in {path}: {exc}",
                                hint="move it aside or delete it to start afresh") from None

    @classmethod
    def open_default(cls, repo_root: Path) -> History:
        return cls(paths.data_dir() / "chat.sqlite", repo_root)

    def _migrate(self) -> None:
        with self._lock:
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            for number, migration in enumerate(MIGRATIONS[version:], start=version + 1):
                self._db.execute("BEGIN")
                migration(self._db)
                self._db.execute(f"PRAGMA user_version = {number}")
                self._db.execute("COMMIT")

    def close(self) -> None:
        self._db.close()

    # Conversations

    def new_conversation(self) -> Conversation:
        now = time.time()
        with self._lock:
            cursor = self._db.execute("INSERT INTO conversations (repo, started_at) VALUES (?, ?)", (self.repo, now))
        return Conversation(cursor.lastrowid, now, "")

    def add_turn(self, conversation: Conversation, turn: Turn) -> None:
        sources = json.dumps([s.__dict__ for s in turn.sources])
        with self._lock:
            self._db.execute("INSERT INTO turns (conversation, at, question, answer, sources, state) "
                             "VALUES (?, ?, ?, ?, ?, ?)",
                             (conversation.id, time.time(), turn.question, turn.answer, sources, turn.state))
            if not conversation.title:
                conversation.title = turn.question.strip().splitlines()[0][:60] if turn.question.strip() else ""
                self._db.execute("UPDATE conversations SET title = ? WHERE id = ?", (conversation.title, conversation.id))
        conversation.turns.append(turn)

    def conversations(self, limit: int = 20) -> list[Conversation]:
        """This repository's conversations that have turns, newest first (without their turns)."""
        rows = self._db.execute(
            "SELECT c.id, c.started_at, c.title FROM conversations c WHERE c.repo = ? "
            "AND EXISTS (SELECT 1 FROM turns t WHERE t.conversation = c.id) ORDER BY c.id DESC LIMIT ?",
            (self.repo, limit)).fetchall()
        return [Conversation(*row) for row in rows]

    def load(self, conversation_id: int) -> Conversation | None:
        row = self._db.execute("SELECT id, started_at, title FROM conversations WHERE id = ? AND repo = ?",
                               (conversation_id, self.repo)).fetchone()
        if row is None:
            return None
        conversation = Conversation(*row)
        for question, answer, sources, state in self._db.execute(
                "SELECT question, answer, sources, state FROM turns WHERE conversation = ? ORDER BY id",
                (conversation_id,)):
            conversation.turns.append(Turn(question, answer, [Source(**s) for s in json.loads(sources)], state))
        return conversation

    def latest(self) -> Conversation | None:
        found = self.conversations(limit=1)
        return self.load(found[0].id) if found else None

    # What was typed, for Up and Down

    def add_input(self, text: str) -> None:
        with self._lock:
            self._db.execute("INSERT INTO inputs (repo, at, text) VALUES (?, ?, ?)", (self.repo, time.time(), text))

    def inputs(self, limit: int = 500) -> list[str]:
        """What was typed in this repository, oldest first, repeats in a row collapsed."""
        rows = self._db.execute("SELECT text FROM inputs WHERE repo = ? ORDER BY id DESC LIMIT ?",
                                (self.repo, limit)).fetchall()
        out: list[str] = []
        for (text,) in reversed(rows):
            if not out or out[-1] != text:
                out.append(text)
        return out


def to_markdown(conversation: Conversation) -> str:
    """A transcript a person can read or paste: each question, its answer, and its sources."""
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(conversation.started_at))
    lines = [f"# {conversation.title or 'Conversation'}", "", f"_codeasst chat, {when}_", ""]
    for turn in conversation.turns:
        lines += ["## " + (turn.question.strip().splitlines() or [""])[0], ""]
        if "\n" in turn.question.strip():
            lines += ["```", turn.question.strip(), "```", ""]
        lines += [turn.answer.strip() or "_(no answer)_", ""]
        if turn.state != "done":
            lines += [f"_({turn.state})_", ""]
        if turn.sources:
            lines.append("Sources:")
            lines += [f"- `{s.place}` {s.label}".rstrip() for s in turn.sources]
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def listing_markdown(conversations: list[Conversation]) -> str:
    """What /history shows: the earlier conversations, each with its id, start and title."""
    if not conversations:
        return "No earlier conversations in this repository."
    lines = ["Earlier conversations (`/resume ID` continues one):", ""]
    for c in conversations:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(c.started_at))
        lines.append(f"- **{c.id}** {when} {c.title}")
    return "\n".join(lines)
