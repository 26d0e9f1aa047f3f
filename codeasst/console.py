"""Terminal rendering: progress bars and human-readable summaries. No logic."""

from __future__ import annotations

import sys
import time
from typing import Any, Self


def stderr_is_tty() -> bool:
    return sys.stderr.isatty()


class RichProgress:
    """Files and chunks while indexing, then chunks/s and the time left while embedding; shown
    only on a terminal."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[unit]}  {task.fields[detail]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self._task = None
        self._chunks = 0
        self._started = 0.0
        self._running = False

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._running:
            self._progress.stop()

    def _begin(self, description: str, total: int, unit: str, detail: str) -> None:
        if not self._running:
            self._progress.start()
            self._running = True
        if self._task is not None:
            self._progress.remove_task(self._task)
        self._started = time.perf_counter()
        self._chunks = 0
        self._task = self._progress.add_task(description, total=total, unit=unit, detail=detail)

    def start(self, files: int) -> None:
        self._begin("Indexing", files, "files", "0 chunks")

    def advance(self, files: int = 0, chunks: int = 0) -> None:
        self._chunks += chunks
        self._progress.update(self._task, advance=files, detail=f"{self._chunks:,} chunks")

    def start_embedding(self, chunks: int) -> None:
        self._begin("Embedding", chunks, "chunks", "(search answers meanwhile)")

    def embedded(self, chunks: int) -> None:
        self._chunks += chunks
        rate = self._chunks / max(time.perf_counter() - self._started, 1e-6)
        self._progress.update(self._task, advance=chunks, detail=f"{rate:.1f} chunks/s")


class ModelAssemblyProgress:
    """A byte progress bar for assembling the bundled model, the first time only."""

    def __init__(self) -> None:
        self._progress = None
        self._task = None

    def __call__(self, done: int, total: int) -> None:
        if not stderr_is_tty():
            return
        if self._progress is None:
            from rich.console import Console
            from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn

            self._progress = Progress(TextColumn("Unpacking the bundled model"), BarColumn(), DownloadColumn(),
                                      console=Console(stderr=True), transient=True)
            self._progress.start()
            self._task = self._progress.add_task("model", total=total)
        self._progress.update(self._task, completed=done)
        if done >= total:
            self._progress.stop()


def index_summary_lines(summary: dict[str, Any], verbose: bool = False) -> list[str]:
    lines = []
    if summary["rebuilt"]:
        lines.append(f"Rebuilt the whole index: {summary['rebuilt']}.")
    if summary.get("embedder_changed"):
        lines.append(f"Changed the {summary['embedder_changed']}.")
    fresh = summary.get("embedded", 0) - summary.get("vectors_reused", 0)
    final = summary.get("final_embedded", 0)
    # With two phases, the rate is the first phase's (the static model's), and the second is told apart.
    first_s = summary.get("first_embed_s") or 0.0
    seconds = first_s if final and first_s else summary["embed_s"]
    rate = fresh / seconds if seconds and fresh else 0.0
    changes = (f"{summary['added']} added, {summary['changed']} changed, "
               f"{summary['deleted']} deleted, {summary['unchanged']} unchanged")
    lines.append(
        f"Indexed {_plural(summary['files'], 'file')}, {_plural(summary['chunks'], 'chunk')} ({changes}) "
        f"in {summary['elapsed_s']:.1f} s"
        + (f"; embedded {fresh:,} chunks" + (f" at {rate:.1f} chunks/s" if fresh >= 100 else "") if rate else "")
        + (f", then {final:,} with the index embedder in {summary['embed_s'] - first_s:.1f} s" if final else "")
    )
    waiting, background = summary.get("final_waiting", 0), summary.get("background") or {}
    if waiting and background.get("pid"):
        lines.append(f"Searchable now; the index embedder's vectors for {waiting:,} chunks continue in the background "
                     f"(pid {background['pid']}, one core; `codeasst status` shows how far, log {background['log']})")
    elif waiting and not background:
        lines.append(f"Searchable now; the index embedder's vectors for {waiting:,} chunks continue in the server")
    dense = summary.get("dense") or {}
    if dense.get("embedded", 0) < dense.get("total", 0):
        lines.append(f"Not yet embedded: {dense['total'] - dense['embedded']:,} of {dense['total']:,} chunks "
                     "(search answers from their words meanwhile; the next `codeasst index` resumes)")
    if summary.get("lexical_only"):
        lines.append(f"Kept lexical only (found by their words, not embedded): {summary['lexical_only']:,} chunks "
                     "of fixtures, generated, vendored and data files")
    if summary.get("repaired"):
        lines.append(f"Repaired: {summary['repaired']}; embedded them again.")
    if summary.get("graph_note"):
        lines.append(f"Code graph: {summary['graph_note']}.")
    if summary.get("fallbacks"):
        langs = ", ".join(f"{lang} {_plural(n, 'file')}" for lang, n in sorted(summary["fallbacks"].items()))
        lines.append(f"Chunked by line windows because parsing found no structure: {langs}")
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


def model_lines(specs: list[dict[str, Any]], current: str, completing: str | None = None) -> list[str]:
    """The models as a table: `*` marks the one commands use, `c` the one that completes (when it differs)."""
    rows = [("", "name", "kind", "size", "quant", "context", "source")]
    for spec in specs:
        size = f"{spec['size'] / 1e6:,.0f} MB" if spec["size"] else "-"
        mark = "*" if spec["name"] == current else "c" if spec["name"] == completing else " "
        rows.append((mark, spec["name"], spec["kind"], size, spec["quantization"] or "-",
                     str(spec["context_length"] or "-"), spec["url"] or spec["source"]))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    for spec in specs:
        if spec["note"]:
            lines.append(f"  {spec['name']}: {spec['note']}")
    if completing and completing != current:
        lines.append("  (* answers, searches and fixes; c completes: complete.model)")
    return lines


def probe_lines(result: dict[str, Any]) -> list[str]:
    lines = [f"model       {result['model']}"]
    lines += [f"{key:<11} {value}" for key, value in result["details"].items()]
    lines.append(f"load        {result['load_s']:.2f} s")
    prompt = (f"{result['prompt_tokens']} tokens, {result['prompt_tok_s']:.1f} tok/s"
              if result["prompt_tok_s"] else "n/a")
    lines.append(f"prompt      {prompt} (first token after {result['first_token_s']:.2f} s)")
    gen = f"{result['generation_tok_s']:.1f} tok/s" if result["generation_tok_s"] else "n/a"
    lines.append(f"generation  {result['generated_tokens']} tokens, {gen}")
    return lines


def status_lines(status: dict[str, Any]) -> list[str]:
    lines = [f"Repository  {status['root']}" + ("" if status["is_git"] else "  (not a git repository)"),
             f"Index       {status['store']}"]
    if not status["indexed"]:
        lines.append("Indexed     nothing yet (run `codeasst index`)")
        return lines
    lines.append(f"Indexed     {status['files']:,} files, {status['chunks']:,} chunks, "
                 f"updated {ago(status['updated_at'])}")
    lines.append(f"Embedder    {status['embedder']}")
    background = status.get("background")
    if status.get("first_phase"):
        phase = status["first_phase"]
        maker = ("the background embedder makes the rest" if background and background["running"]
                 else "`codeasst index` or `codeasst serve` makes the rest")
        lines.append(f"Vectors     the fast static ones until {phase['final']}'s are complete: "
                     f"{phase['final_embedded']:,} of {phase['total']:,} ({maker})")
    if background and background["running"]:
        lines.append(f"Background  making them (pid {background['pid']}): {background['embedded']:,} chunks so far; "
                     f"log {background['log']}")
    elif background and status.get("first_phase"):
        lines.append(f"Background  not running ({background['stopped'] or 'ended'}): the next `codeasst index` "
                     f"resumes it")
    if status.get("embedder_changed"):
        lines.append(f"Vectors     of {status['embedder_changed']['from']} until the next `codeasst index`, which "
                     f"embeds with {status['embedder_changed']['to']} (keeping both)")
    dense = status.get("dense") or {}
    if dense:
        left = dense["total"] - dense["embedded"]
        lines.append(f"Embedded    {dense['embedded']:,} of {dense['total']:,} chunks"
                     + (f" ({left:,} waiting: `codeasst index` or `codeasst serve` embeds them)" if left else "")
                     + (f"; {status['lexical_only']:,} kept lexical only" if status.get("lexical_only") else ""))
    if status.get("store_problem"):
        lines.append(f"Broken      {status['store_problem']}: the next `codeasst index` embeds what is missing")
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


def answer_footer_lines(answer) -> list[str]:
    """What follows an answer in the terminal: its sources, the citations not to rely on, and
    the names it uses that exist nowhere in the repository. `answer` may be an Answer or its
    JSON (as `codeasst serve` streams it)."""
    data = answer.to_json() if hasattr(answer, "to_json") else answer
    citations = data["citations"]
    cited = {(c["path"], c["start_line"], c["end_line"]) for c in citations if c["verified"]}
    lines = ["Sources (* drawn on by the answer):"]
    for hit in data["hits"]:
        path, start, end = hit["path"], hit["start_line"], hit["end_line"]
        drawn = (path, start, end) in cited or any(p == path and s <= end and start <= e for p, s, e in cited)
        lines.append(f"{'*' if drawn else ' '} {path}:{start}-{end}  {hit['symbol']}")
    if any(c["attached"] for c in citations) and data["system"] == "grounded":
        lines.append("(see path:lines) marks a citation codeasst attached to a line the model left uncited.")
    unverified = [c for c in citations if not c["verified"]]
    if unverified:
        lines.append("Unverified citations (do not rely on them):")
        lines += [f"  {c['path']}:{c['start_line']}-{c['end_line']}: {c['reason']}" for c in unverified]
    left_out = data.get("left_out", [])
    if left_out:
        lines.append(f"Left out {len(left_out)} sentence{'s' if len(left_out) > 1 else ''} of the model's "
                     "that the excerpts do not back:")
        lines += [f"  {item['text'][:100]} ({item['why']})" for item in left_out[:5]]
    if data["ungrounded"]:
        lines.append("Not found in the repository (the model may have made these up): "
                     + ", ".join(f"`{name}`" for name in data["ungrounded"]))
    return lines


def refs_lines(places: list, show_unresolved: bool = False) -> list[str]:
    """What `codeasst refs` prints (Assistant.refs_lines)."""
    from codeasst.access import Assistant

    return Assistant.refs_lines(places, show_unresolved)
