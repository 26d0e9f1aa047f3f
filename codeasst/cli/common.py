"""What every command shares: the error edge, the common options, services and the way in, stdin, output."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from codeasst.errors import CodeasstError, UsageError


class Group(TyperGroup):
    """Turns a CodeasstError into one line on stderr and its exit code, in every caller."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except CodeasstError as exc:
            note(f"error: {exc.one_line()}")
            ctx.exit(exc.exit_code)


RepoOption = Annotated[Path, typer.Option("--repo", "-C", help="Run as if started in this directory.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]
ModelOption = Annotated[str | None, typer.Option("--model", "-m", help="Model: a name from `codeasst models` or a .gguf path.")]
EmbedderOption = Annotated[str | None, typer.Option("--embedder", help="Embedder: 'bundled', 'static' or a model folder.")]


# A search or ask that wrote nothing may end without interpreter teardown: freeing the model,
# the Chroma client and the ONNX session takes about 0.25 s, a tenth of a search. main() reads it.
skip_teardown = False


def allow_fast_exit(summary: dict | None) -> None:
    """Let this run skip teardown if its index update (IndexSummary.to_json()) wrote nothing."""
    global skip_teardown
    skip_teardown = summary is None or not (summary["added"] or summary["changed"] or summary["deleted"]
                                            or summary["rebuilt"] or summary.get("embedder_changed"))


def assistant_for(services, *, unless: str | None = None, alone: bool = False, lock_wait_s: float = 0.0):
    """The one way in (codeasst.access): the running `codeasst serve` for this repository, else this process."""
    from codeasst.access import connect

    return connect(services, unless=unless, alone=alone, on_note=note, lock_wait_s=lock_wait_s)


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def note(message: str) -> None:
    typer.echo(f"codeasst: {message}", err=True)


def make_services(repo: Path, flags: dict[str, Any] | None = None, model: str | None = None, *,
                  about_repo: bool = True):
    # Imported at each call: tests replace codeasst.services.build_services, and --help needs neither module.
    from codeasst.console import ModelAssemblyProgress
    from codeasst.services import build_services

    services = build_services(repo, flags, model=model, on_model_progress=ModelAssemblyProgress(), on_note=note)
    if model is not None:
        _ = services.model_spec  # a --model that names nothing fails now (exit 2), not after indexing
    trust_note = services.loaded.trust_note()
    if trust_note:
        note(trust_note)
    if about_repo and not services.repo.is_git:
        note(f"{services.repo.root} is not a git repository; indexing that directory itself")
    return services


def read_stdin() -> str | None:
    """Piped stdin as text, or None on a terminal. Bytes that are not UTF-8 (a latin-1 file
    in a diff) are replaced, with a note, rather than refused: the rest is still useful."""
    if sys.stdin is None or sys.stdin.isatty():
        return None
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        note(f"stdin is not UTF-8 (byte {exc.start}); undecodable bytes were replaced")
        return data.decode("utf-8", errors="replace")


def text_and_stdin(given: str | None, name: str, command: str) -> tuple[str, str | None]:
    """The query and the piped context; with no query argument, piped stdin is the query."""
    piped = read_stdin()
    if given is not None:
        return given, piped or None
    if piped and piped.strip():
        return piped, None
    raise UsageError(f"give a {name}, or pipe one in: ... | codeasst {command}")


def index_progress(as_json: bool):
    """A progress bar for indexing when a person watches stderr, else None."""
    from codeasst.console import RichProgress, stderr_is_tty

    return RichProgress() if stderr_is_tty() and not as_json else None
