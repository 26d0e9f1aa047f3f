"""One editor's session: the repository it opened, the `codeasst serve` it joins (or starts, and stops
with it), and what it was shown. No protocol here: the features (server.py registers them) use it."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time

from codeasst.access import Assistant, join
from codeasst.lsp.suggestions import Outcomes
from codeasst.services import Services

log = logging.getLogger("codeasst.lsp")

RESTART_S = 30.0  # at most one server started in this long


class Session:
    """One editor's session: its repository, the server it goes through, what it was shown."""

    def __init__(self, services: Services, *, start: bool = True, wait_s: float = 120.0) -> None:
        self.services = services
        self.root = services.repo.root
        cfg = services.settings.lsp
        self.outcomes = Outcomes(cfg.discard_after_s)
        self.debounce_s = cfg.debounce_ms / 1000
        self.mode = "auto"  # "inline" or "completion" where the client says which it shows
        self.inline = False  # the client declared textDocument/inlineCompletion
        self.resolve_edits = False  # the client resolves a code action's edit (codeAction/resolve)
        self.client_id = f"lsp-{os.getpid()}"
        self._assistant: Assistant | None = join(services)
        self._process: subprocess.Popen | None = None
        self._ready = threading.Event()
        self._lock = threading.Lock()
        self._start, self._wait_s, self._started_at = start, wait_s, -RESTART_S
        self._ready.set()
        if self._assistant is None:
            self._start_in_background()

    # The server behind.

    def _start_in_background(self) -> None:
        """Start a server unless told not to, or one was started in the last RESTART_S seconds."""
        if not self._start or time.monotonic() - self._started_at < RESTART_S or not self._ready.is_set():
            return
        self._started_at = time.monotonic()
        self._ready.clear()
        threading.Thread(target=self._start_server, args=(self._wait_s,), name="codeasst-lsp-serve", daemon=True).start()

    def _start_server(self, wait_s: float) -> None:
        """Start `codeasst serve` for the repository and wait for it to answer (its models load first)."""
        logs = self.services.repo.index_dir / "lsp-serve.log"  # beside the index it serves
        try:
            logs.parent.mkdir(parents=True, exist_ok=True)
            with open(logs, "ab") as out:
                self._process = subprocess.Popen(
                    [sys.executable, "-m", "codeasst", "serve", "--repo", str(self.root), "--port", "0"],
                    stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True)
            log.info("started codeasst serve (pid %s) for %s; its log: %s", self._process.pid, self.root, logs)
            deadline = time.monotonic() + wait_s
            while time.monotonic() < deadline and self._process.poll() is None:
                if (found := join(self.services)) is not None:
                    with self._lock:
                        self._assistant = found
                    return
                time.sleep(0.2)
            if (found := join(self.services)) is not None:  # another one started first: use it
                with self._lock:
                    self._assistant = found
                return
            log.error("codeasst serve did not start for %s (see %s)", self.root, logs)
        except OSError as exc:
            log.error("cannot start codeasst serve: %s", exc)
        finally:
            self._ready.set()

    def assistant(self, wait_s: float = 0.0) -> Assistant | None:
        """The server's assistant; None while it starts (after `wait_s`) or when none answers."""
        if wait_s:
            self._ready.wait(wait_s)
        with self._lock:
            if self._assistant is None and self._ready.is_set():
                self._assistant = join(self.services)  # one started since, or restarted
                if self._assistant is None:  # none answers (the one an editor before this one started has
                    self._start_in_background()  # stopped with it, or it died): start one
            return self._assistant

    def forget_server(self) -> None:
        with self._lock:
            self._assistant = None

    def stop(self) -> None:
        """Stop the server this session started (one it joined runs on)."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
