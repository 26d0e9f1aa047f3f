"""Bring a repository's index up to date, touching only what changed.

Crash safety: a group of files is written as "delete their old chunks, store
the new ones, then record them in the manifest". A kill at any point leaves
the manifest claiming no more than the store holds, and the next run redoes
the unrecorded files, deleting by path first, so nothing is duplicated or lost.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Protocol, Self

from codeasst.backends.base import Embedder
from codeasst.config import IndexSettings
from codeasst.errors import IndexLocked, IndexProblem
from codeasst.index import chunker
from codeasst.index.files import FileInfo, IgnoreRules, decode_source, scan
from codeasst.index.manifest import Entry, Manifest
from codeasst.index.roles import ROLES_VERSION, role_of
from codeasst.index.store import ChunkStore, location_of

# Bump when the text fed to the embedder changes shape.
EMBED_TEXT_VERSION = 1
# Vectors kept for texts that come back (a branch switched back, a function moved): at least this many,
# or twice the index's chunks.
KEPT_VECTORS = 50_000


class Progress(Protocol):
    def start(self, files: int) -> None: ...
    def advance(self, files: int = 0, chunks: int = 0) -> None: ...


@dataclass
class IndexSummary:
    root: str
    files: int = 0  # files holding chunks, after the run
    chunks: int = 0  # chunks in the index, after the run
    added: int = 0
    changed: int = 0
    deleted: int = 0
    unchanged: int = 0
    chunks_written: int = 0
    vectors_reused: int = 0  # chunks whose text was embedded before: their vector was kept, not recomputed
    skipped: list[dict[str, str]] = field(default_factory=list)
    rebuilt: str | None = None  # why the whole index was rebuilt, if it was
    fallbacks: dict[str, int] = field(default_factory=dict)  # language -> files chunked by line windows
    elapsed_s: float = 0.0
    embed_s: float = 0.0

    def skipped_by_reason(self) -> dict[str, int]:
        return dict(Counter(item["reason"].split(" (")[0] for item in self.skipped))

    def to_json(self) -> dict:
        data = asdict(self)
        data["skipped_by_reason"] = self.skipped_by_reason()
        return data


@dataclass
class Staleness:
    added: list[str]
    modified: list[str]
    deleted: list[str]


def embedding_text(chunk: chunker.Chunk) -> str:
    """What the embedder sees: where the code lives and what it is called, then the code."""
    return f"{chunk.path} {chunk.name}\n{chunk.text}"


def chunk_id(chunk: chunker.Chunk) -> str:
    key = "\0".join(map(str, (chunk.path, chunk.start_line, chunk.end_line, chunk.kind, chunk.name, chunk.text)))
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def fingerprint(settings: IndexSettings, embedder_name: str, store: str) -> dict[str, str]:
    """Everything whose change makes every stored vector stale, or leaves them elsewhere."""
    return {
        "store": store,
        "embedder": embedder_name,
        "chunker": chunker.chunker_fingerprint(),
        "chunk_chars": str(settings.chunk_chars),
        "overlap_lines": str(settings.overlap_lines),
        "embed_text": str(EMBED_TEXT_VERSION),
    }


class IndexLock:
    """One writer per index; a second one fails fast instead of waiting."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / "lock"

    def __enter__(self) -> Self:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = self.path.open("a+")
        try:
            fcntl.flock(self._fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._fh.seek(0)
            holder = self._fh.read().strip() or "another process"
            self._fh.close()
            raise IndexLocked(
                f"the index is being updated by {holder}",
                hint="wait for it to finish; if none is running, delete " + str(self.path),
            ) from None
        self._fh.seek(0)
        self._fh.truncate()
        self._fh.write(f"pid {os.getpid()}")
        self._fh.flush()
        return self

    def __exit__(self, *exc) -> None:
        self._fh.truncate(0)
        fcntl.flock(self._fh, fcntl.LOCK_UN)
        self._fh.close()


def _fallbacks(entries: dict[str, Entry]) -> dict[str, int]:
    """Language -> files cut into line windows although the language has a grammar."""
    return dict(Counter(chunker.language_for(e.path) for e in entries.values() if e.fallback))


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class IndexMismatch(IndexProblem):
    """The manifest and the vector store disagree: answers from this index would be wrong."""

    def __init__(self, problem: str) -> None:
        super().__init__(f"the index cannot be trusted: {problem}",
                         hint="run `codeasst index` to rebuild it; a search in a terminal rebuilds it by itself")
        self.problem = problem


class Indexer:
    """`on_mismatch` says what run() does when the manifest and the vector store disagree:
    "rebuild" them, or "raise" IndexMismatch."""

    def __init__(self, root: Path, index_dir: Path, settings: IndexSettings, embedder: Embedder,
                 open_store: Callable[[], ChunkStore], progress: Progress | None = None, *,
                 chroma_url: str | None = None, on_mismatch: str = "rebuild") -> None:
        self.root = root
        self.index_dir = index_dir
        self.settings = settings
        self.embedder = embedder
        self._open_store = open_store
        self._store: ChunkStore | None = None
        self.progress = progress
        self.location = location_of(chroma_url)
        self.on_mismatch = on_mismatch
        self._kept_vectors = KEPT_VECTORS

    def fingerprint(self) -> dict[str, str]:
        return fingerprint(self.settings, self.embedder.name, self.location)

    def store_problem(self, claimed: int, *, open_store: bool = True) -> str | None:
        """Why the vector store cannot hold the `claimed` chunks the manifest lists, if it cannot.

        Without `open_store` only what needs no Chroma client is checked (a missing
        embedded store): a no-op run stays fast."""
        if not claimed:
            return None
        if self.location == "embedded" and not (self.index_dir / "chroma" / "chroma.sqlite3").is_file():
            return f"the manifest lists {claimed:,} chunks but the embedded vector store in {self.index_dir} is gone"
        if not open_store and self._store is None:
            return None
        if not self.store.exists:
            return f"the manifest lists {claimed:,} chunks but {self.location} has no collection {self.store.name}"
        held = self.store.count()
        if held != claimed:
            return f"the manifest lists {claimed:,} chunks but {self.location} holds {held:,}"
        return None

    def _store_stamp(self) -> str | None:
        """The embedded store's files, with sizes and mtimes. Chroma rewrites them whenever a
        client opens the store, so an unchanged stamp since the store was last found to match
        the manifest means nobody has touched it since: a no-op run need not import chromadb
        (about 1.5 s) to check it again. None for a server, which is always checked."""
        if self.location != "embedded":
            return None
        try:
            files = sorted((self.index_dir / "chroma").iterdir())
            return json.dumps([(f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in files])
        except FileNotFoundError:
            return None

    def has_index(self) -> bool:
        return (self.index_dir / "manifest.sqlite").exists()

    def _entries(self) -> dict[str, Entry]:
        """The manifest's entries, read without creating a manifest where there is none."""
        if not self.has_index():
            return {}
        manifest = Manifest(self.index_dir / "manifest.sqlite")
        try:
            return manifest.entries()
        finally:
            manifest.close()

    def indexed_files(self) -> list[str]:
        """The files that hold chunks, as the manifest lists them."""
        return sorted(path for path, entry in self._entries().items() if entry.chunks)

    def verify(self) -> None:
        """Raise IndexMismatch unless the store holds what the manifest lists (opens the store)."""
        problem = self.store_problem(sum(e.chunks for e in self._entries().values()))
        if problem:
            raise IndexMismatch(problem)

    @property
    def store(self) -> ChunkStore:
        # Opened only when there is work: a no-op run never pays for importing chromadb.
        if self._store is None:
            self._store = self._open_store()
        return self._store

    def status(self, check_store: bool = False) -> dict:
        """What the index holds and how stale it is, without writing anything. `check_store`
        also compares the store with the manifest (which opens the store)."""
        entries: dict[str, Entry] = {}
        updated = stored = None
        if (self.index_dir / "manifest.sqlite").exists():
            manifest = Manifest(self.index_dir / "manifest.sqlite")
            try:
                entries = manifest.entries()
                updated = manifest.get_meta("updated_at")
                stored = manifest.get_meta("fingerprint")
            finally:
                manifest.close()
        stale = self._staleness(entries)
        chunks = sum(e.chunks for e in entries.values())
        return {
            "root": str(self.root),
            "index_dir": str(self.index_dir),
            "indexed": updated is not None,
            "updated_at": float(updated) if updated else None,
            "files": sum(1 for e in entries.values() if e.chunks),
            "chunks": chunks,
            "skipped": sum(1 for e in entries.values() if e.skipped),
            "fallbacks": _fallbacks(entries),
            "store_problem": self.store_problem(chunks) if check_store else None,
            "settings_changed": bool(stored) and json.loads(stored) != self.fingerprint(),
            "stale": asdict(stale),
        }

    def _staleness(self, entries: dict[str, Entry]) -> Staleness:
        """What changed since the last run, judged by size and mtime alone (no hashing)."""
        found = scan(self.root, IgnoreRules(self.root), self.settings.max_file_bytes)
        current = {f.path: f for f in found.files}
        modified = [p for p, f in current.items()
                    if p in entries and (entries[p].size, entries[p].mtime_ns) != (f.size, f.mtime_ns)]
        return Staleness(
            added=sorted(set(current) - set(entries)),
            modified=sorted(modified),
            deleted=sorted(set(entries) - set(current)),
        )

    def run(self, rebuild: bool = False, verify: bool = False) -> IndexSummary:
        """`verify` also checks the store's count against the manifest, which opens the
        store; without it a run that has nothing to write never imports chromadb."""
        started = time.perf_counter()
        summary = IndexSummary(root=str(self.root))
        with IndexLock(self.index_dir):
            if rebuild:
                self._wipe()
            manifest = Manifest(self.index_dir / "manifest.sqlite")
            try:
                self._run(manifest, summary, rebuild, verify)
            finally:
                manifest.close()
        summary.elapsed_s = round(time.perf_counter() - started, 3)
        return summary

    def _wipe(self) -> None:
        """Remove the local index files whatever state they are in, then empty the collection."""
        for name in ("manifest.sqlite", "manifest.sqlite-wal", "manifest.sqlite-shm"):
            (self.index_dir / name).unlink(missing_ok=True)
        self._store = None  # its client would write to the files deleted next
        ChunkStore.destroy_local(self.index_dir)
        self.store.drop()  # for a Chroma server, the only copy lives there

    def _run(self, manifest: Manifest, summary: IndexSummary, rebuild: bool, verify: bool) -> None:
        wanted = self.fingerprint()
        stored = manifest.get_meta("fingerprint")
        old = json.loads(stored) if stored is not None else None
        if old is not None:
            old.setdefault("store", "embedded")  # indexes made before the store was fingerprinted
        entries = manifest.entries()
        if rebuild:
            summary.rebuilt = "asked with --rebuild"
        elif old is not None and old != wanted:
            changed = sorted(k for k in wanted if old.get(k) != wanted[k])
            summary.rebuilt = "settings changed: " + ", ".join(f"{k} {old.get(k)} -> {wanted[k]}" for k in changed)
        else:
            stamp = manifest.get_meta("store_stamp")
            check = verify and (stamp is None or stamp != self._store_stamp())
            problem = self.store_problem(sum(e.chunks for e in entries.values()), open_store=check)
            if problem and self.on_mismatch == "raise":
                raise IndexMismatch(problem)
            summary.rebuilt = problem
        if summary.rebuilt and not rebuild:
            if self.location == "embedded":
                self._store = None  # the store may be damaged or gone: start it afresh
                ChunkStore.destroy_local(self.index_dir)
            else:
                self.store.drop()
                if old is not None and old["store"] == "embedded":
                    ChunkStore.destroy_local(self.index_dir)  # the vectors moved to a server
            manifest.clear()
            entries = {}
        if stored is None or summary.rebuilt:
            manifest.set_meta({"fingerprint": json.dumps(wanted), "root": str(self.root)})

        found = scan(self.root, IgnoreRules(self.root), self.settings.max_file_bytes)
        summary.skipped = [{"path": p, "reason": r} for p, r in found.skipped]
        current = {f.path: f for f in found.files}

        deleted = sorted(set(entries) - set(current))
        touched: list[Entry] = []
        todo: list[tuple[FileInfo, str]] = []
        # Roles are not in the vectors: new rules relabel the files without re-embedding them.
        relabel = manifest.get_meta("roles") != ROLES_VERSION
        for path, info in current.items():
            old = entries.get(path)
            if old and (old.size, old.mtime_ns) == (info.size, info.mtime_ns):
                summary.unchanged += 1
                if relabel or old.role is None:
                    touched.append(replace(old, role=self._role(path)))
                continue
            try:
                digest = _sha256(self.root / path)
            except OSError as exc:
                summary.skipped.append({"path": path, "reason": f"unreadable: {exc.strerror}"})
                continue
            if old and old.sha256 == digest:
                role = self._role(path) if relabel or old.role is None else old.role
                touched.append(replace(old, size=info.size, mtime_ns=info.mtime_ns, role=role))
                summary.unchanged += 1
            else:
                todo.append((info, digest))
                if old:
                    summary.changed += 1
                else:
                    summary.added += 1
        summary.deleted = len(deleted)

        if deleted:
            self.store.delete_paths(deleted)
            manifest.remove(deleted)
        if touched:
            manifest.put(touched)
        if todo:
            self._write(todo, manifest, summary, entries)
        if todo or deleted or summary.rebuilt:
            # Search's BM25 over chunks counts what changed now, not at the next query.
            from codeasst.retrieve.bm25 import ChunkBM25

            ChunkBM25.for_store(self.store, self.index_dir).close()

        final = manifest.entries()
        meta = {"updated_at": str(time.time()), "roles": ROLES_VERSION}
        if self._store is not None and self.location == "embedded":
            # Opened by this run, written by it or checked against the manifest: they agree now.
            problem = self.store_problem(sum(e.chunks for e in final.values()))
            meta["store_stamp"] = "" if problem else self._store_stamp() or ""
        manifest.set_meta(meta)
        summary.files = sum(1 for e in final.values() if e.chunks)
        summary.chunks = sum(e.chunks for e in final.values())
        summary.fallbacks = _fallbacks(final)
        # Files skipped for their content stay in the manifest so they are not re-read each run.
        known = {item["path"] for item in summary.skipped}
        summary.skipped += [{"path": e.path, "reason": e.skipped} for e in final.values()
                            if e.skipped and e.path not in known]
        summary.skipped.sort(key=lambda item: item["path"])

    def _write(self, todo: list[tuple[FileInfo, str]], manifest: Manifest, summary: IndexSummary,
               previous: dict[str, Entry]) -> None:
        if self.progress:  # before the embedder loads, which takes seconds: the user sees work start
            self.progress.start(len(todo))
        self.embedder.load()
        self._kept_vectors = max(KEPT_VECTORS, 2 * sum(e.chunks for e in previous.values()))
        group: list[tuple[Entry, list[chunker.Chunk]]] = []
        pending = 0
        for info, digest in todo:
            entry, chunks = self._chunk_file(info, digest)
            if entry.skipped and not previous.get(info.path):
                summary.skipped.append({"path": info.path, "reason": entry.skipped})
            group.append((entry, chunks))
            pending += len(chunks)
            if pending >= self.settings.group_chunks:
                self._flush(group, manifest, summary)
                group, pending = [], 0
        self._flush(group, manifest, summary)

    def _role(self, path: str) -> str:
        """The file's role, from its path and first lines (what role_of reads)."""
        try:
            with (self.root / path).open("rb") as fh:
                head = fh.read(4096)
        except OSError:
            return role_of(path)
        return role_of(path, head.decode("utf-8", errors="ignore"))

    def _chunk_file(self, info: FileInfo, digest: str) -> tuple[Entry, list[chunker.Chunk]]:
        try:
            data = (self.root / info.path).read_bytes()
        except OSError as exc:
            return Entry(info.path, info.size, info.mtime_ns, digest, 0, f"unreadable: {exc.strerror}",
                         role=role_of(info.path)), []
        text, reason = decode_source(data)
        if text is None:
            return Entry(info.path, info.size, info.mtime_ns, digest, 0, reason, role=role_of(info.path)), []
        chunks = chunker.chunk_file(info.path, text, self.settings.chunk_chars, self.settings.overlap_lines)
        unique = list({chunk_id(c): c for c in chunks}.items())
        fallback = chunker.fell_back(info.path, chunks)
        return (Entry(info.path, info.size, info.mtime_ns, digest, len(unique), None, fallback,
                      role_of(info.path, text[:4096])),
                [c for _, c in unique])

    def roles(self) -> dict[str, str]:
        """Path -> role for the files that hold chunks."""
        return {path: entry.role or role_of(path) for path, entry in self._entries().items() if entry.chunks}

    def _flush(self, group: list[tuple[Entry, list[chunker.Chunk]]], manifest: Manifest,
               summary: IndexSummary) -> None:
        if not group:
            return
        chunks = [c for _, cs in group for c in cs]
        started = time.perf_counter()
        advance = (lambda n: self.progress.advance(chunks=n)) if self.progress else None
        texts = [embedding_text(c) for c in chunks]
        keys = [hashlib.sha256(text.encode()).hexdigest()[:32] for text in texts]
        known = manifest.vectors(keys)
        todo = list({key: text for key, text in zip(keys, texts, strict=True) if key not in known}.items())
        fresh = self.embedder.embed([text for _, text in todo], progress=advance) if todo else []
        new = {key: vector for (key, _), vector in zip(todo, fresh, strict=True)}
        if advance and len(todo) < len(chunks):
            advance(len(chunks) - len(todo))
        vectors = [known.get(key) or new[key] for key in keys]
        summary.vectors_reused += len(chunks) - len(todo)
        summary.embed_s = round(summary.embed_s + time.perf_counter() - started, 3)
        self.store.replace(
            paths=[entry.path for entry, _ in group],
            ids=[chunk_id(c) for c in chunks],
            vectors=vectors,
            documents=[c.text for c in chunks],
            metadatas=[
                {"path": c.path, "language": c.language, "start_line": c.start_line,
                 "end_line": c.end_line, "kind": c.kind, "name": c.name}
                for c in chunks
            ],
        )
        manifest.put([entry for entry, _ in group])
        # Kept only once the chunks are stored: a vector never outlives a failed write unrecorded.
        manifest.keep_vectors(new, self._kept_vectors)
        summary.chunks_written += len(chunks)
        if self.progress:
            self.progress.advance(files=len(group))
