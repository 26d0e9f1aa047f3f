"""The interface every front end uses, and what both implementations do alike (here, in this process):
lint an editor's buffer, fix files as `codeasst fix` does, read the code graph for `codeasst refs`."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from codeasst.access.events import Events
from codeasst.index.summary import Progress
from codeasst.services import Services
from codeasst.wire.client import Cancel


class Assistant(ABC):
    services: Services
    where: str  # "here", or the URL of the server that answers

    @property
    def root(self) -> Path:
        return self.services.repo.root

    @abstractmethod
    def status(self) -> dict:
        """What is indexed and how stale it is (`codeasst status --json`)."""

    @abstractmethod
    def search(self, query: str, k: int | None = None, *, no_llm: bool = False, context: str | None = None,
               model: str | None = None, progress: Progress | None = None, client: str = "cli",
               cancel: Cancel | None = None, roles: Sequence[str] = (), path: str | None = None) -> dict:
        """tasks.search.search_reply: hits, notes, timings, index, dense. `roles`, `path`: only files of
        those roles, under that folder or matching that glob (retrieve/scope.py)."""

    @abstractmethod
    def ask(self, question: str, *, context: str | None = None, system: str = "checked",
            history: Sequence[tuple[str, str]] = (), model: str | None = None, progress: Progress | None = None,
            client: str = "cli", cancel: Cancel | None = None) -> Events:
        """The answer as a stream of events (access/events.py)."""

    @abstractmethod
    def complete(self, path: str, line: int, col: int, text: str, *, client: str = "cli",
                 file: Path | None = None, cancel: Cancel | None = None, trigger: str = "auto") -> dict:
        """The suggestion at 1-based `line`, `col` of `text`, the file `path` (relative to the root, or
        absolute); `file`, where the text is that file on disk, is checked against the ignore rules.
        `cancel` ends it early (an editor's $/cancelRequest): its answer is then empty. `trigger` "invoked":
        the user asked for it (complete.invoked_model answers it where set)."""

    @abstractmethod
    def open(self, path: str, text: str, line: int | None = None, col: int | None = None, *,
             client: str = "cli", cancel: Cancel | None = None) -> dict:
        """A file was opened in an editor: warm its prompt, so the first suggestion finds it cached."""

    @abstractmethod
    def fix(self, path: str, text: str | None = None, *, line: int | None = None, client: str = "cli",
            cancel: Cancel | None = None) -> dict:
        """The verified fix of the file `path` (or of its unsaved `text`) as FixResult.to_json() plus
        "text", the fixed text; nothing is written. `line`: only the changes at that line."""

    @abstractmethod
    def index(self, rebuild: bool = False, progress: Progress | None = None, *, vectors: bool = True,
              wait: bool = True) -> dict:
        """Bring the index up to date; its summary (IndexSummary.to_json()). Without `vectors` it returns
        when the words and the graph are done (a server embeds the rest in the background). Without `wait`
        it returns once every chunk has the first phase's vector, and the embedder's own are made in the
        background: by the server, else by a detached process (codeasst.access.detached)."""

    @abstractmethod
    def refs(self, name: str, limit: int = 50, outline: bool = False) -> list[dict]:
        """`codeasst refs`: every definition NAME names with its callers and callees (Place.to_json());
        with `outline`, the lines of each that carry its logic (index/outline.py)."""

    @abstractmethod
    def definition(self, name: str, limit: int = 20) -> list[dict]:
        """Every definition NAME names, with its source as the file holds it now (tasks.refs.definitions)."""

    @abstractmethod
    def symbols(self, query: str, limit: int = 50) -> list[dict]:
        """Definitions by name, else by search (tasks.refs.symbols)."""

    @abstractmethod
    def event(self, kind: str, suggestion_id: str, shown_length: int = 0, accepted_length: int = 0) -> None:
        """A suggestion shown, accepted or discarded, for `codeasst stats`."""

    # Alike in both: no model, or a model the caller's own process holds.

    def lint(self, path: str, text: str) -> list[dict]:
        """flake8's findings on `text`, judged as the file `path` (its config): Diagnostic.to_json()s."""
        from codeasst.tasks.fix import lint_buffer

        return [d.to_json() for d in lint_buffer(self.services, self._absolute(path), text)]

    def ignored(self, path: str) -> str:
        """Why the repository's ignore rules exclude `path` ("" if they do not)."""
        from codeasst.tasks.complete import ignored_reason

        return ignored_reason(self.services, self._absolute(path))

    def fix_files(self, names: list[str], **kwargs: Any):
        """`codeasst fix`: tasks.fix.fix_files with the [fix] settings and the CLI's overrides."""
        from codeasst.tasks.fix import fix_files, options_from

        overrides = {k: kwargs.pop(k) for k in ("max_rounds", "use_llm", "try_syntax", "remove_unused_imports")
                     if k in kwargs}
        return fix_files(self.services, names, options=options_from(self.services, **overrides), **kwargs)

    def fix_file(self, path: Path, name: str):
        """A file's verified fix in memory, ready for write_fix (the chat's /fix)."""
        from codeasst.tasks.fix import fix_file

        return fix_file(self.services, path, for_write=True, name=name)

    @staticmethod
    def write_fix(result) -> bool:
        """Write a verified fix back atomically, as `codeasst fix --write`."""
        from codeasst.tasks.fix import write_fix

        return write_fix(result)

    @staticmethod
    def fixed_bytes(result) -> bytes:
        from codeasst.tasks.fix import fixed_bytes

        return fixed_bytes(result)

    @staticmethod
    def refs_lines(places: list[dict], show_unresolved: bool = False) -> list[str]:
        """What `codeasst refs` prints for refs()' places."""
        from codeasst.tasks.refs import place_lines

        return place_lines(places, show_unresolved)

    def switch_model(self, name: str) -> str:
        """Answer with model `name` from now on (the chat's /model); its resolved name."""
        from codeasst.models import resolve

        spec = resolve(self.services.settings, name)  # an unknown name raises here, before anything changes
        self.services.model_choice = name
        for cached in ("model_spec", "llm"):
            self.services.__dict__.pop(cached, None)
        return spec.name

    def probe(self) -> dict:
        """`codeasst models --check`: load the model here and time a short generation."""
        from codeasst.tasks.probe import probe

        return probe(self.services).to_json()

    def model_names(self) -> list[str]:
        from codeasst.models import available_models

        return [s.name for s in available_models(self.services.settings) if s.available]

    def _absolute(self, path: str) -> Path:
        target = Path(path)
        return target if target.is_absolute() else self.root / target

