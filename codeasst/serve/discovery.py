"""How one-shot commands find a running `codeasst serve` for their repository, and talk to it.

A server writes `<data dir>/servers/<hash of the repository root>.json` (mode 0600:
it holds the token) when it starts listening and removes it when it stops. A
command that finds the record, with its process alive, sends its request there;
on any failure to connect it falls back to doing the work itself, silently.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from codeasst import paths


@dataclass(frozen=True)
class Server:
    url: str
    pid: int
    token: str | None = None


def record_path(root: Path) -> Path:
    key = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:16]
    return paths.data_dir() / "servers" / f"{key}.json"


def announce(root: Path, url: str, token: str | None) -> Path:
    path = record_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump({"url": url, "pid": os.getpid(), "token": token, "repo": str(root)}, f)
    os.replace(tmp, path)
    return path


def withdraw(path: Path) -> None:
    with contextlib.suppress(OSError):
        if json.loads(path.read_text(encoding="utf-8")).get("pid") == os.getpid():
            path.unlink()


def find(root: Path) -> Server | None:
    """The server for `root`, if one announced itself and its process still runs."""
    try:
        data = json.loads(record_path(root).read_text(encoding="utf-8"))
        pid = int(data["pid"])
        os.kill(pid, 0)
        return Server(str(data["url"]), pid, data.get("token"))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _request(server: Server, route: str, payload: dict) -> urllib.request.Request:
    headers = {"Content-Type": "application/json"}
    if server.token:
        headers["Authorization"] = f"Bearer {server.token}"
    return urllib.request.Request(server.url + route, json.dumps(payload).encode(), headers)


def post(server: Server, route: str, payload: dict, timeout: float = 120.0) -> tuple[int, dict] | None:
    """(status, JSON body) from the server; None when it cannot be reached (fall back)."""
    try:
        with urllib.request.urlopen(_request(server, route, payload), timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        try:
            return exc.code, json.loads(exc.read())
        except (ValueError, OSError):
            return exc.code, {"detail": exc.reason}
    except (OSError, ValueError):
        return None


def stream(server: Server, route: str, payload: dict, timeout: float = 600.0) -> Iterator[dict] | None:
    """The server's NDJSON lines, or None when it cannot be reached."""
    try:
        response = urllib.request.urlopen(_request(server, route, payload), timeout=timeout)
    except (OSError, ValueError):
        return None

    def lines() -> Iterator[dict]:
        with response:
            for line in response:
                if line.strip():
                    yield json.loads(line)

    return lines()
