"""Where codeasst keeps its files: one place decides, CODEASST_HOME overrides."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from codeasst.errors import UsageError

APP_NAME = "codeasst"
PROJECT_CONFIG = ".codeasst.toml"
HOME_ENV = "CODEASST_HOME"


def _home() -> Path | None:
    value = os.environ.get(HOME_ENV)
    return Path(value).expanduser() if value else None


def config_dir() -> Path:
    home = _home()
    if home:
        return home / "config"
    import platformdirs

    return Path(platformdirs.user_config_dir(APP_NAME))


def data_dir() -> Path:
    home = _home()
    if home:
        return home / "data"
    import platformdirs

    return Path(platformdirs.user_data_dir(APP_NAME))


def cache_dir() -> Path:
    home = _home()
    if home:
        return home / "cache"
    import platformdirs

    return Path(platformdirs.user_cache_dir(APP_NAME))


def user_config_file() -> Path:
    return config_dir() / "config.toml"


def repo_key(root: Path) -> str:
    """A stable, filesystem-safe name for a repository, from its resolved root."""
    resolved = str(root.resolve())
    digest = hashlib.sha256(resolved.encode()).hexdigest()[:12]
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", root.resolve().name).strip("-")[:40] or "root"
    return f"{slug}-{digest}"


def index_dir(root: Path) -> Path:
    return data_dir() / "indexes" / repo_key(root)


def find_repo_root(start: Path) -> tuple[Path, bool]:
    """The repository containing `start`, and whether it is a git repository.

    Outside git, the directory itself is the root: users index plain folders too.
    """
    if not start.exists():
        raise UsageError(f"path does not exist: {start}")
    start = start.resolve()
    if not start.is_dir():
        start = start.parent
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return candidate, True
    return start, False


def fix_start_dir(names: list[str], cwd: Path, stdin_filename: str | None = None) -> Path:
    """Where `codeasst fix` looks for the repository and its config: the first file's directory (for
    stdin, `-`, the directory of the file it stands for), else `cwd`."""
    first = names[0] if names else None
    if first == "-":
        first = stdin_filename
    first = cwd / first if first else cwd
    if first.is_dir():
        return first
    return first.parent if first.parent.exists() else cwd
