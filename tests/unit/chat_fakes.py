"""A scripted assistant for the chat's behaviour and snapshot tests: it answers with queued
texts, word by word, and records what it was asked. Never proof that answering works;
the e2e test drives the real one."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

from codeasst.chat.assistant import FixProposal, Status
from codeasst.chat.history import Source, Turn
from codeasst.errors import UsageError


class ScriptedAssistant:
    root = Path(".")

    def __init__(self, replies: list[str] | None = None, sources: list[Source] | None = None,
                 delay_s: float = 0.0, hold: threading.Event | None = None, stats: dict | None = None) -> None:
        self.replies = list(replies or [])
        self.sources = sources or [Source("pkg/config.py", 3, 9, "load_config"), Source("README.md", 1, 4, "file")]
        self.delay_s = delay_s
        self.hold = hold  # when given, the answer pauses after its first word until it is set (or cancelled)
        self.asked: list[tuple[str, list[str]]] = []  # question, earlier questions it was given
        self.started = threading.Event()  # set once the first word is out
        self.saw_cancel = False
        self.model = "scripted"
        self.fixes: list[str] = []
        self.applied: list[str] = []
        self.stats = stats or {}  # more figures for each turn, e.g. dense_embedded and dense_total

    def status(self) -> Status:
        return Status(self.model, files=12, chunks=80, indexed=True)

    def answer(self, question, history, *, on_text, cancelled, progress=None) -> Turn:
        self.asked.append((question, [t.question for t in history]))
        turn = Turn(question, sources=list(self.sources))
        words = re.findall(r"\s*\S+|\s+", self.replies.pop(0) if self.replies else "No reply queued.")
        out = []
        for word in words:
            if cancelled():
                turn.state = "cancelled"
                self.saw_cancel = True
                break
            out.append(word)
            on_text(word)
            self.started.set()
            time.sleep(self.delay_s)
            waited = time.monotonic()
            while self.hold is not None and not self.hold.is_set() and not cancelled():
                if time.monotonic() - waited > 10:  # a test that breaks the cancel fails, not hangs
                    break
                time.sleep(0.01)
        turn.answer = "".join(out)
        turn.stats = {"first_token_s": 0.5, "tokens_per_s": 30.0, "cited": 1, **self.stats}
        return turn

    def search(self, query: str, progress=None) -> list[Source]:
        return list(self.sources)

    def propose_fix(self, path: str) -> FixProposal:
        if not path:
            raise UsageError("/fix needs a file: /fix path/to/module.py")
        self.fixes.append(path)
        diff = f"--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-import os,sys\n+import os\n"
        return FixProposal(path, diff, f"{path}: 2 of 2 findings fixed")

    def apply_fix(self, proposal: FixProposal) -> str:
        self.applied.append(proposal.path)
        return f"wrote {proposal.path}"

    def switch_model(self, name: str) -> str:
        if name != "bundled-1.5b":
            raise UsageError(f"unknown model {name!r}")
        self.model = name
        return name

    def models(self) -> list[str]:
        return ["bundled"]

    def excerpt(self, source: Source, context: int = 0) -> str:
        return "def load_config(path):\n    return toml.load(path)\n"
