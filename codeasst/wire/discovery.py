"""How one-shot commands and editor clients find a running `codeasst serve` for their repository.

A server writes `<data dir>/servers/<hash of the repository root>.json` (mode 0600, in a
0700 folder: it holds the token) when it starts listening and removes it when it stops. A
command that finds the record, with its process alive, talks to the server (client.py);
`codeasst serve --info --json` prints it for an editor client.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
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
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
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
        if Path(data["repo"]).resolve() != root.resolve():
            return None
        os.kill(pid, 0)
        return Server(str(data["url"]), pid, data.get("token"))
    except (OSError, ValueError, KeyError, TypeError):
        return None
