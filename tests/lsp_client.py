"""A plain JSON-RPC client of `codeasst lsp` over its stdio, for tests and bench/: it frames messages
itself, so it can also send what a correct client never would (malformed JSON, wrong framing)."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any


class LspError(Exception):
    def __init__(self, error: dict) -> None:
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.error = error


class LspProcess:
    """`codeasst lsp` started as the editors start it; requests by id, notifications kept in order."""

    def __init__(self, repo: Path, *args: str, env: dict | None = None) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "codeasst", "lsp", *args], cwd=repo,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env={**os.environ, **(env or {})})
        self.ids = itertools.count(1)
        self.answers: dict[Any, dict] = {}
        self.notifications: list[dict] = []
        self.server_requests: list[dict] = []
        self.stderr: list[str] = []
        self.changed = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    # Framing.

    def send_raw(self, body: bytes, header: bytes | None = None) -> None:
        self.proc.stdin.write((header if header is not None else f"Content-Length: {len(body)}\r\n\r\n".encode()) + body)
        self.proc.stdin.flush()

    def send(self, message: dict) -> None:
        self.send_raw(json.dumps(message).encode())

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    with self.changed:
                        self.changed.notify_all()
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode("ascii", "replace").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            message = json.loads(out.read(length))
            with self.changed:
                if "id" in message and "method" in message:  # a request of the server's
                    self.server_requests.append(message)
                    self.send({"jsonrpc": "2.0", "id": message["id"], "result": self.reply_to(message)})
                elif "id" in message:  # an id the server could not read back comes as null
                    key = message["id"] if isinstance(message["id"], int | str) else json.dumps(message["id"])
                    self.answers[key] = message
                else:
                    self.notifications.append(message)
                self.changed.notify_all()

    def reply_to(self, message: dict) -> Any:
        """What this client answers the server's own requests: it applies every edit."""
        if message["method"] == "workspace/applyEdit":
            return {"applied": True}
        return None

    def _read_stderr(self) -> None:
        for line in self.proc.stderr:
            self.stderr.append(line.decode("utf-8", "replace").rstrip())

    # Messages.

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {})})

    def start_request(self, method: str, params: Any = None) -> int:
        number = next(self.ids)
        self.send({"jsonrpc": "2.0", "id": number, "method": method, **({"params": params} if params is not None else {})})
        return number

    def answer(self, number: Any, timeout: float = 120.0) -> dict:
        deadline = time.monotonic() + timeout
        with self.changed:
            while number not in self.answers:
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise TimeoutError(f"no answer to request {number} (process {'alive' if self.proc.poll() is None else 'gone'})"
                                       f"; stderr: {self.stderr[-5:]}")
                self.changed.wait(min(left, 0.5))
            return self.answers.pop(number)

    def request(self, method: str, params: Any = None, timeout: float = 120.0) -> Any:
        message = self.answer(self.start_request(method, params), timeout)
        if "error" in message:
            raise LspError(message["error"])
        return message.get("result")

    def wait_for(self, method: str, test=lambda params: True, timeout: float = 60.0) -> dict:
        """The first notification `method` whose params pass `test`."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                for note in self.notifications:
                    if note.get("method") == method and test(note.get("params")):
                        return note["params"]
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no {method}; stderr: {self.stderr[-5:]}")
                self.changed.wait(min(left, 0.5))

    # The usual conversation.

    def initialize(self, root: Path, capabilities: dict | None = None, options: dict | None = None) -> dict:
        result = self.request("initialize", {"processId": os.getpid(), "rootUri": root.as_uri(),
                                             "capabilities": capabilities or {},
                                             **({"initializationOptions": options} if options else {})})
        self.notify("initialized", {})
        return result

    def open(self, path: Path, text: str, version: int = 1, language: str = "python") -> str:
        uri = path.as_uri()
        self.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": language, "version": version,
                                                              "text": text}})
        return uri

    def close(self, timeout: float = 30.0) -> int:
        """shutdown, exit, and the process's exit code."""
        try:
            self.request("shutdown", None, timeout=timeout)
            self.notify("exit")
        except (OSError, TimeoutError, LspError):
            pass
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()
        finally:
            for stream in (self.proc.stdin, self.proc.stdout):
                try:
                    stream.close()
                except OSError:
                    pass


INLINE_CAPS = {"textDocument": {"inlineCompletion": {}, "codeAction": {"resolveSupport": {"properties": ["edit"]}}},
               "workspace": {"applyEdit": True}}
COMPLETION_CAPS = {"textDocument": {"completion": {"completionItem": {"snippetSupport": False}}},
                   "workspace": {"applyEdit": True}}
