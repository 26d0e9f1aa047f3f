"""The repository on disk against the manifest: paths added, deleted and changed (by size and mtime
first, then by content where those moved: one touched but not changed is not chunked again), and the
staleness `codeasst status` reports."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from pathlib import Path

from codeasst.index.files import FileInfo, IgnoreRules, scan
from codeasst.index.manifest import Entry
from codeasst.index.roles import role_of
from codeasst.index.summary import IndexSummary


@dataclass
class Staleness:
    added: list[str]
    modified: list[str]
    deleted: list[str]


def staleness(root: Path, entries: dict[str, Entry], max_file_bytes: int) -> Staleness:
    """What changed since the last run, judged by size and mtime alone (no hashing)."""
    found = scan(root, IgnoreRules(root), max_file_bytes)
    current = {f.path: f for f in found.files}
    modified = [p for p, f in current.items()
                if p in entries and (entries[p].size, entries[p].mtime_ns) != (f.size, f.mtime_ns)]
    return Staleness(
        added=sorted(set(current) - set(entries)),
        modified=sorted(modified),
        deleted=sorted(set(entries) - set(current)),
    )


def read_role(root: Path, path: str) -> str:
    """The file's role, from its path and first lines (what role_of reads)."""
    try:
        with (root / path).open("rb") as fh:
            head = fh.read(4096)
    except OSError:
        return role_of(path)
    return role_of(path, head.decode("utf-8", errors="ignore"))


@dataclass
class Changes:
    deleted: list[str] = field(default_factory=list)
    touched: list[Entry] = field(default_factory=list)  # same content: the row's size, mtime or role refreshed
    todo: list[tuple[FileInfo, str]] = field(default_factory=list)  # new or changed content, with its sha256


def changes(root: Path, current: dict[str, FileInfo], entries: dict[str, Entry], relabel: bool,
            summary: IndexSummary) -> Changes:
    """The scanned files (`current`) against the manifest's `entries`, counted into `summary`.
    `relabel`: the role rules changed, so every kept file gets its role again."""
    out = Changes(deleted=sorted(set(entries) - set(current)))
    for path, info in current.items():
        old_entry = entries.get(path)
        if old_entry and (old_entry.size, old_entry.mtime_ns) == (info.size, info.mtime_ns):
            summary.unchanged += 1
            if relabel or old_entry.role is None:
                out.touched.append(replace(old_entry, role=read_role(root, path)))
            continue
        try:
            digest = hashlib.sha256((root / path).read_bytes()).hexdigest()
        except OSError as exc:
            summary.skipped.append({"path": path, "reason": f"unreadable: {exc.strerror}"})
            continue
        if old_entry and old_entry.sha256 == digest:
            role = read_role(root, path) if relabel or old_entry.role is None else old_entry.role
            out.touched.append(replace(old_entry, size=info.size, mtime_ns=info.mtime_ns, role=role))
            summary.unchanged += 1
        else:
            out.todo.append((info, digest))
            if old_entry:
                summary.changed += 1
            else:
                summary.added += 1
    summary.deleted = len(out.deleted)
    return out
