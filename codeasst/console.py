"""Terminal rendering: progress bars and human-readable summaries. No logic."""

from __future__ import annotations

import sys
import time
from typing import Any, Self


def stderr_is_tty() -> bool:
    return sys.stderr.isatty()


class RichProgress:
    """Files, chunks and chunks/s while indexing; shown only on a terminal."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._progress = Progress(
            TextColumn("Indexing"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("files  {task.fields[chunks]:,} chunks  {task.fields[rate]:.1f} chunks/s"),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self._task = None
        self._chunks = 0
        self._started = 0.0

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._task is not None:
            self._progress.stop()

    def start(self, files: int) -> None:
        self._progress.start()
        self._started = time.perf_counter()
        self._task = self._progress.add_task("index", total=files, chunks=0, rate=0.0)

    def advance(self, files: int = 0, chunks: int = 0) -> None:
        self._chunks += chunks
        rate = self._chunks / max(time.perf_counter() - self._started, 1e-6)
        self._progress.update(self._task, advance=files, chunks=self._chunks, rate=rate)


def index_summary_lines(summary: dict[str, Any], verbose: bool = False) -> list[str]:
    lines = []
    if summary["rebuilt"]:
        lines.append(f"Rebuilt the whole index: {summary['rebuilt']}.")
    rate = summary["chunks_written"] / summary["embed_s"] if summary["embed_s"] else 0.0
    changes = (f"{summary['added']} added, {summary['changed']} changed, "
               f"{summary['deleted']} deleted, {summary['unchanged']} unchanged")
    lines.append(
        f"Indexed {_plural(summary['files'], 'file')}, {_plural(summary['chunks'], 'chunk')} ({changes}) "
        f"in {summary['elapsed_s']:.1f} s"
        + (f"; embedded {summary['chunks_written']:,} chunks at {rate:.1f} chunks/s" if rate else "")
    )
    if summary["skipped"]:
        reasons = ", ".join(f"{reason} {n}" for reason, n in sorted(summary["skipped_by_reason"].items()))
        lines.append(f"Skipped {_plural(len(summary['skipped']), 'file')}: {reasons}"
                     + ("" if verbose else " (-v lists them)"))
        if verbose:
            lines += [f"  {item['path']}: {item['reason']}" for item in summary["skipped"]]
    return lines


def _plural(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def ago(timestamp: float | None) -> str:
    if timestamp is None:
        return "never"
    seconds = max(0, time.time() - timestamp)
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            n = int(seconds // size)
            return f"{_plural(n, unit)} ago"
    return "just now"


def status_lines(status: dict[str, Any]) -> list[str]:
    lines = [f"Repository  {status['root']}" + ("" if status["is_git"] else "  (not a git repository)"),
             f"Index       {status['store']}"]
    if not status["indexed"]:
        lines.append("Indexed     nothing yet (run `codeasst index`)")
        return lines
    lines.append(f"Indexed     {status['files']:,} files, {status['chunks']:,} chunks, "
                 f"updated {ago(status['updated_at'])}")
    lines.append(f"Embedder    {status['embedder']}")
    stale = status["stale"]
    n = {k: len(v) for k, v in stale.items()}
    if status["settings_changed"]:
        lines.append("Stale       settings changed since the last run: the next run rebuilds everything")
    elif any(n.values()):
        lines.append(f"Stale       {n['added']} added, {n['modified']} modified, {n['deleted']} deleted since then")
        for kind in ("added", "modified", "deleted"):
            lines += [f"  {kind}: {p}" for p in stale[kind][:10]]
    else:
        lines.append("Stale       no: up to date")
    return lines
