"""Where a search may look: a role filter and a path filter (`codeasst search --role --path`, the
MCP `search` tool). Hits outside are dropped from every ranking before they are fused, and each
retriever reaches deeper, so a narrow scope still gets its k hits from the files it admits."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

from codeasst.errors import UsageError
from codeasst.index.roles import ROLES

DEPTH_FACTOR = 4  # how much deeper each ranking reaches when a scope narrows it
_GLOB = set("*?[")


@dataclass(frozen=True)
class Scope:
    roles: frozenset[str] = frozenset()  # empty: every role
    path: str = ""  # a folder or file (`src/`, `pkg/mod.py`), or a glob (`*.py`, `src/**/test_*.py`); "": all

    @classmethod
    def of(cls, roles: list[str] | tuple[str, ...] | None = None, path: str | None = None) -> Scope | None:
        """The scope the user asked for, None when unrestricted; an unknown role is a usage error."""
        roles = tuple(r.strip().lower() for r in roles or () if r.strip())
        unknown = [r for r in roles if r not in ROLES]
        if unknown:
            raise UsageError(f"unknown role {unknown[0]!r}: one of {', '.join(ROLES)}")
        path = (path or "").strip().replace("\\", "/").removeprefix("./")
        if "\0" in path:
            raise UsageError("the path filter holds a NUL character")
        if not roles and not path:
            return None
        return cls(frozenset(roles), path)

    def admits(self, path: str, role: str = "implementation") -> bool:
        if self.roles and role not in self.roles:
            return False
        if not self.path:
            return True
        if _GLOB & set(self.path):
            return fnmatch.fnmatchcase(path, self.path) or fnmatch.fnmatchcase(path, self.path.rstrip("/") + "/*")
        folder = self.path.rstrip("/")
        return path == folder or path.startswith(folder + "/")

    def describe(self) -> str:
        parts = ([f"role {' or '.join(sorted(self.roles))}"] if self.roles else []) + (
            [f"path {self.path}"] if self.path else [])
        return ", ".join(parts)
