"""`codeasst complete`: one suggestion at a position of a file, or silence with its reason.

The position is 1-based (line, column in characters), as editors show it. Bad
positions, undecodable text and ignored files are refused or silenced here, so
the CLI and the server answer them alike.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from codeasst.backends.base import LLM
from codeasst.complete import gate
from codeasst.complete.fim import CompleteOptions, Suggestion, complete
from codeasst.config import IndexSettings
from codeasst.errors import UsageError
from codeasst.index.chunker import grammar_for
from codeasst.index.files import IgnoreRules, excluded
from codeasst.services import Services


@dataclass(frozen=True)
class Position:
    prefix: str
    suffix: str


def split_at(text: str, line: int, col: int) -> Position:
    """The text before and after the cursor at 1-based `line`, `col` (a column just past the line's
    end is its end); UsageError for a position outside the text."""
    lines = text.split("\n")
    if not 1 <= line <= len(lines):
        raise UsageError(f"line {line} is outside the text (1 to {len(lines)})")
    current = lines[line - 1]
    if not 1 <= col <= len(current) + 1:
        raise UsageError(f"column {col} is outside line {line} (1 to {len(current) + 1})")
    offset = sum(len(x) + 1 for x in lines[: line - 1]) + col - 1
    return Position(text[:offset], text[offset:])


def options_from(services: Services) -> CompleteOptions:
    section = services.settings.complete
    values = {name: getattr(section, name) for name in CompleteOptions.__dataclass_fields__}
    return CompleteOptions(**{**values, "context_sources": tuple(values["context_sources"])})


def ignored_reason(services: Services, path: Path) -> str:
    """Why the repository's ignore rules exclude `path` from suggestions ("" if they do not)."""
    root = services.repo.root
    try:
        rel = Path(os.path.abspath(path)).relative_to(root).as_posix()
    except ValueError:
        return ""  # outside the repository: its rules do not speak for it
    why = excluded(IgnoreRules(root), rel)
    return f"{rel} is ignored ({why})" if why else ""


def other_files(root: Path, text: str, path: str, options: CompleteOptions, *, prefix: str | None = None,
                recent: Sequence[tuple[str, str]] = (), max_file_bytes: int = IndexSettings().max_file_bytes) -> dict:
    """fim_prompt's `context` and `repo` for the file `path` (relative to `root`) with the cursor after
    `prefix` (the whole text if unset): complete.context_sources in their order, within
    complete.context_tokens (nothing at 0). `recent` is the server's ring buffer for this client;
    `max_file_bytes` the index's cap (index.max_file_bytes), which the index source keeps to."""
    if options.context_tokens <= 0:
        return {}
    from codeasst.complete import context as sources

    found: list[tuple[str, str]] = []
    for source in options.context_sources:
        if source == "imports" and grammar_for(path) == "python":
            found += sources.imported_definitions(root, path, text)
        elif source == "index":
            found += sources.related_chunks(root, path, text if prefix is None else prefix, max_file_bytes)
        elif source == "recent":
            found += [item for item in recent if item[0] != path]
    return {"context": found, "repo": root.name} if found else {}


@dataclass(frozen=True)
class Prepared:
    """A completion request made ready, before the model's turn: where the cursor is, the options, and
    why nothing is asked of the model ("" to ask). `codeasst complete`, the server's /v1/complete and
    its /v1/open all start here."""

    path: str
    at: Position
    options: CompleteOptions
    silence: str = ""
    checked: gate.Checked | None = None  # what the gate read, so complete() does not parse the text again


def prepare(services: Services, text: str, line: int, col: int, path: str, options: CompleteOptions | None = None,
            *, check_ignored: Path | None = None) -> Prepared:
    """The request at `line`, `col` of `text` (the file `path`); UsageError for a position outside it."""
    options = options or options_from(services)
    at = split_at(text.replace("\r\n", "\n"), line, col)
    if why := ignored_reason(services, check_ignored) if check_ignored is not None else "":
        return Prepared(path, at, options, why)
    checked = gate.check(at.prefix, at.suffix, grammar_for(path), options)
    return Prepared(path, at, options, checked.reason, checked)


def complete_at(services: Services, text: str, line: int, col: int, path: str,
                options: CompleteOptions | None = None, *, check_ignored: Path | None = None,
                cancelled: Callable[[], bool] | None = None, llm: LLM | None = None,
                root: Path | None = None, context: dict | None = None) -> Suggestion:
    """The suggestion at `line`, `col` of `text` (the file `path`, relative to `root`, the repository's
    unless given; for its language, name and imports), by `llm` (services.complete_llm unless given:
    the server's A/B test passes its variant's). `context`: other files' text as other_files returns
    it, when the caller keeps it (the server pins it per file); built here otherwise."""
    prepared = prepare(services, text, line, col, path, options, check_ignored=check_ignored)
    return complete_prepared(services, prepared, text, cancelled=cancelled, llm=llm, root=root, context=context)


def complete_prepared(services: Services, prepared: Prepared, text: str, *, cancelled: Callable[[], bool] | None = None,
                      llm: LLM | None = None, root: Path | None = None, context: dict | None = None) -> Suggestion:
    """The model's suggestion for a prepared request, or its silence."""
    if prepared.silence:
        return Suggestion("", reason=prepared.silence)
    llm = llm or services.complete_llm
    llm.load()  # once per process; the latency reported is the suggestion's own
    if context is None:
        context = file_context(services, prepared, text, root)
    return complete(llm, prepared.at.prefix, prepared.at.suffix, grammar_for(prepared.path), prepared.options,
                    path=prepared.path, cancelled=cancelled, checked=prepared.checked, **context)


def file_context(services: Services, prepared: Prepared | None, text: str, root: Path | None = None, *,
                 path: str = "", recent: Sequence[tuple[str, str]] = ()) -> dict:
    """other_files for a prepared request (or, with none, for the file `path` as a whole)."""
    options = prepared.options if prepared else options_from(services)
    return other_files(root or services.repo.root, text, prepared.path if prepared else path, options,
                       prefix=prepared.at.prefix if prepared else "", recent=recent,
                       max_file_bytes=services.settings.index.max_file_bytes)


def warm(llm: LLM, prepared: Prepared | None, text: str, path: str, options: CompleteOptions, context: dict, *,
         cancelled: Callable[[], bool] | None = None) -> int:
    """Evaluate now the prompt a completion in `path` will start with; the tokens evaluated. With the
    cursor known (`prepared`), its prompt as complete() asks it, all but the marker after which the
    model writes; without, the file's beginning (in the PSM layout; in SPM the suffix comes first, so
    only a cursor helps)."""
    from codeasst.complete.fim import MIDDLE, SUFFIX, fim_prompt, request

    llm.load()
    if prepared is not None:
        asked = request(llm, prepared.at.prefix, prepared.at.suffix, prepared.options)
        prompt = fim_prompt(asked.prefix, prepared.at.suffix, asked.options, path=path, **context).removesuffix(MIDDLE)
    else:
        prompt = fim_prompt(text, "", options, path=path, **context).split(SUFFIX)[0]
    return llm.warm(prompt, cancelled=cancelled)
