"""The CodeasstError family. The CLI edge turns each into one line and an exit code."""

from __future__ import annotations


class CodeasstError(Exception):
    """Base of every error codeasst reports to the user as one line."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint

    def one_line(self) -> str:
        text = str(self)
        return f"{text} ({self.hint})" if self.hint else text


class UsageError(CodeasstError):
    """Bad arguments: a path that does not exist, an option out of range."""

    exit_code = 2


class ConfigError(CodeasstError):
    """A config file or environment variable that cannot be used."""

    exit_code = 2


class IndexProblem(CodeasstError):
    """The index cannot be used as it is."""

    exit_code = 3


class IndexCorrupt(IndexProblem):
    """The on-disk index is damaged."""

    def __init__(self, message: str) -> None:
        super().__init__(message, hint="run `codeasst index --rebuild` to start it afresh")


class IndexLocked(IndexProblem):
    """Another process is writing the same index."""

    exit_code = 75  # EX_TEMPFAIL: trying again later can succeed


class WorkerBusy(IndexLocked):
    """The background embedder (codeasst.index.worker) holds the index for its group in flight: it yields
    it at the group's end, so a run may wait for it rather than fail."""


class ModelError(CodeasstError):
    """A model (embedder or LLM) could not be found, loaded or reached."""

    exit_code = 4


class ModelChoiceError(ModelError):
    """`--model` or `llm.model` names no model codeasst knows, or a file that does not exist, or a
    `[models.NAME]` entry lacks what it needs: bad input, not a failing model."""

    exit_code = 2


class StoreError(CodeasstError):
    """The vector store (embedded Chroma or a Chroma server) failed."""

    exit_code = 4
