"""What the chat asks of codeasst, in one small interface the TUI calls from its workers.

`ChatAssistant` does the work through the one way in every front end uses (codeasst.access): the
running `codeasst serve`, else this process on one `Services`, so models load once per session.
Every method may block for seconds: the app calls them from worker threads only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from codeasst.access import Assistant as Access
from codeasst.chat.history import Source, Turn
from codeasst.errors import UsageError
from codeasst.index.indexer import Progress


@dataclass
class Status:
    model: str
    files: int = 0
    chunks: int = 0
    indexed: bool = False
    stale: int = 0  # files added, changed or deleted since the last index run

    def line(self) -> str:
        if not self.indexed:
            index = "not indexed yet: the first question indexes"
        else:
            index = f"{self.files:,} files, {self.chunks:,} chunks" + (f", {self.stale} stale" if self.stale else "")
        return f"{index} · {self.model}"


@dataclass
class FixProposal:
    path: str
    diff: str
    summary: str
    result: object = field(repr=False, default=None)  # tasks.fix.FixResult

    @property
    def changed(self) -> bool:
        return bool(self.diff)


class Assistant(Protocol):
    def status(self) -> Status: ...

    def answer(self, question: str, history: Sequence[Turn], *, on_text: Callable[[str], None],
               cancelled: Callable[[], bool], progress: Progress | None = None) -> Turn: ...

    def search(self, query: str, progress: Progress | None = None) -> list[Source]: ...

    def propose_fix(self, path: str) -> FixProposal: ...

    def apply_fix(self, proposal: FixProposal) -> str: ...

    def switch_model(self, name: str) -> str: ...

    def models(self) -> list[str]: ...

    def excerpt(self, source: Source, context: int = 0) -> str: ...


def fit_history(turns: Sequence[Turn], budget_tokens: int, answer_chars: int,
                count: Callable[[str], int]) -> list[tuple[str, str]]:
    """The latest finished turns, as (question, answer) pairs, that fit `budget_tokens` together;
    the oldest go first. Each answer is cut to its first `answer_chars` characters."""
    kept: list[tuple[str, str]] = []
    used = 0
    for turn in reversed(turns):
        if turn.state != "done" or not turn.answer.strip():
            continue
        pair = (turn.question, turn.answer[:answer_chars])
        cost = count(pair[0]) + count(pair[1])
        if used + cost > budget_tokens:
            break
        kept.append(pair)
        used += cost
    return kept[::-1]


def finish(turn: Turn, answer: dict, first: float | None, last: float | None) -> None:
    """A turn's sources, names not found and figures, from its answer (Answer.to_json) and the times
    its first and last pieces of text arrived."""
    turn.sources = sources_of(answer)
    turn.ungrounded = list(answer["ungrounded"])
    timings = answer["timings"]
    # The model's own writing time where the answer says it: the checked answer may show little or
    # nothing of what the model wrote, so the pieces' arrival times would not measure it.
    writing = timings["total_s"] - timings["model_first_token_s"] \
        if "model_first_token_s" in timings and "total_s" in timings else (last - first) if first and last else 0.0
    turn.stats = {"first_token_s": timings.get("first_token_s", 0.0),
                  "cited": sum(1 for c in answer["citations"] if c["verified"]),
                  # generation speed: the tokens after the first, over the time they took
                  "tokens_per_s": round((answer["generated_tokens"] - 1) / writing, 1) if writing > 0.05 else 0.0}
    dense = answer.get("dense") or {}
    if dense.get("embedded", 0) < dense.get("total", 0):  # said once, under this answer (tasks.search.dense_note)
        turn.stats.update(dense_embedded=dense["embedded"], dense_total=dense["total"])


def short_name(name: str, path: str) -> str:
    """A symbol without its module, which the path beside it already says: `History.latest`, not
    `codeasst.chat.history.History.latest`; nothing for the module itself."""
    module = path.rsplit(".", 1)[0].replace("/", ".").removesuffix(".__init__")
    if name == module:
        return ""
    return name.removeprefix(module + ".")


class ChatAssistant:
    """The chat's Assistant over the one way in (codeasst.access): the running `codeasst serve` when
    there is one (it owns the index and keeps its models warm, so the chat neither opens the index a
    second time nor loads models of its own for answers), else this process. `/fix` runs here, as
    `codeasst fix` does."""

    def __init__(self, assistant: Access) -> None:
        self.assistant = assistant
        self.services = assistant.services

    @property
    def root(self) -> Path:
        return self.services.repo.root

    def status(self) -> Status:
        data = self.assistant.status()
        stale = sum(len(v) for v in data["stale"].values())
        return Status(self.services.model_spec.name, data["files"], data["chunks"], data["indexed"], stale)

    def _count(self, text: str) -> int:
        llm = self.services.ask_llm
        n = llm.count_tokens(text) if llm is not None and self.assistant.where == "here" else None
        return n if n is not None else len(text) // 4 + 1

    def _earlier(self, history: Sequence[Turn]) -> list[tuple[str, str]]:
        """The earlier turns a follow-up carries, within chat.history_tokens."""
        cfg = self.services.settings.chat
        return fit_history(history, cfg.history_tokens, cfg.answer_chars, self._count) if history else []

    def answer(self, question: str, history: Sequence[Turn], *, on_text: Callable[[str], None],
               cancelled: Callable[[], bool], progress: Progress | None = None) -> Turn:
        turn = Turn(question)
        if cancelled():  # Esc while starting: do not start the model at all
            turn.state = "cancelled"
            return turn
        events = self.assistant.ask(question, history=self._earlier(history), model=self.services.model_choice,
                                    progress=progress, client="chat")
        pieces: list[str] = []
        answer: dict | None = None
        first = last = None
        try:
            for event in events:
                if cancelled():
                    turn.state = "cancelled"
                    break
                if event["type"] == "text":
                    if event["text"]:  # an empty piece is only a turn (answer.ask)
                        last = time.perf_counter()
                        first = first or last
                    pieces.append(event["text"])
                    on_text(event["text"])
                elif event["type"] == "answer":
                    answer = event
        finally:
            events.close()  # stops the model where it is (the server's, when the connection closes)
        turn.answer = answer["answer"] if answer is not None and turn.state == "done" else "".join(pieces)
        if answer is not None:
            finish(turn, answer, first, last)
        return turn

    def search(self, query: str, progress: Progress | None = None) -> list[Source]:
        reply = self.assistant.search(query, None, no_llm=True, progress=progress)
        return [Source(h["path"], h["start_line"], h["end_line"], short_name(h["symbol"], h["path"]), verified=False)
                for h in reply["hits"]]

    def _resolve(self, path: str) -> Path:
        target = Path(path).expanduser()
        return target if target.is_absolute() else self.root / target

    def propose_fix(self, path: str) -> FixProposal:
        if not path:
            raise UsageError("/fix needs a file: /fix path/to/module.py")
        result = self.assistant.fix_file(self._resolve(path), name=path)
        done = len(result.before) - len(result.after)
        summary = f"{path}: {done} of {len(result.before)} findings fixed"
        if result.after:
            summary += "; left: " + ", ".join(f"{d.code} line {d.line}" for d in result.after[:6])
            summary += " …" if len(result.after) > 6 else ""
        return FixProposal(path, result.diff(), summary, result)

    def apply_fix(self, proposal: FixProposal) -> str:
        """Write the fix back through the same verified, atomic path as `codeasst fix --write`."""
        written = self.assistant.write_fix(proposal.result)
        return f"wrote {proposal.path}" if written else f"{proposal.path}: nothing to write"

    def switch_model(self, name: str) -> str:
        return self.assistant.switch_model(name)

    def models(self) -> list[str]:
        return self.assistant.model_names()

    def excerpt(self, source: Source, context: int = 0) -> str:
        target = self._resolve(source.path)
        try:
            lines = target.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError as exc:
            raise UsageError(f"cannot read {source.path}: {exc.strerror}") from None
        start = max(1, source.start_line - context)
        return "\n".join(lines[start - 1:source.end_line + context])


def sources_of(answer: dict) -> list[Source]:
    """An answer's places (Answer.to_json, as the server sends it too): what it cites first
    (verified), then the rest of what was retrieved, marked when a citation falls inside it. Each is
    labelled with the symbol retrieved there."""
    hits = answer["hits"]

    def symbol(path: str, start: int, end: int) -> str:
        name = next((h["symbol"] for h in hits if h["path"] == path and h["start_line"] <= end
                     and start <= h["end_line"]), "")
        return short_name(name, path)

    out: list[Source] = []
    cited: set[tuple[str, int, int]] = set()
    for c in answer["citations"]:
        place = (c["path"], c["start_line"], c["end_line"])
        if c["verified"] and place not in cited:
            cited.add(place)
            out.append(Source(*place, symbol(*place), True, c["attached"]))
    for h in hits:
        place = (h["path"], h["start_line"], h["end_line"])
        if place in cited:
            continue
        drawn_on = any(p == h["path"] and s <= h["end_line"] and h["start_line"] <= e for p, s, e in cited)
        out.append(Source(*place, short_name(h["symbol"], h["path"]), verified=drawn_on))
    return out
