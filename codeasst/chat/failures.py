"""Where the chat's failures go: one line on the screen, and the unexpected ones to a log file.

The app must never die with a traceback over an hour's conversation: an error codeasst expects
says what to do, and any other goes to the log file with its traceback."""

from __future__ import annotations

import logging
from pathlib import Path

from codeasst import paths
from codeasst.errors import CodeasstError

# The name the log file's lines have always carried, from when this lived in codeasst.chat.app.
log = logging.getLogger("codeasst.chat.app")


def problem(exc: Exception) -> str:
    """A failure as one line for the screen; an unexpected one is logged with its traceback."""
    if isinstance(exc, CodeasstError):
        return f"error: {exc.one_line()}"
    log.error("unexpected error in chat", exc_info=exc)
    return f"unexpected error: {type(exc).__name__}: {exc} (details in {log_file()})"


def log_file() -> Path:
    return paths.data_dir() / "logs" / "chat.log"


def setup_logging() -> None:
    """Unexpected errors in the chat go to a log file, not over the screen."""
    target = log_file()
    target.parent.mkdir(parents=True, exist_ok=True)
    for old in list(log.handlers):  # one log file, however often the app is made in a process
        log.removeHandler(old)
        old.close()
    handler = logging.FileHandler(target, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
