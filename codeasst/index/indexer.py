"""Bring a repository's index up to date, touching only what changed: lexical first, vectors after.

A run has two phases. The lexical one chunks every new or changed file and writes its chunks,
their words and its manifest row in one transaction (codeasst.index.chunkdb): search answers
from BM25 and exact search as soon as it ends. The dense one then embeds the chunks still
waiting (those codeasst.index.plan gives vectors), a group at a time: each group's
vectors are kept by text (the manifest's `vectors`), stored, then its chunks marked embedded.
A kill at any point loses at most the embedding of the group under way, and the next run
embeds nothing twice; a vector whose chunk is gone never answers, and is dropped when the
vector store and the manifest are reconciled.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

from codeasst.backends.base import Embedder
from codeasst.config import IndexSettings
from codeasst.index import chunker, plan, report
from codeasst.index.changes import changes, staleness
from codeasst.index.chunkdb import EMBEDDED, LEXICAL, PENDING, dense_share
from codeasst.index.files import FileInfo, IgnoreRules, decode_source, scan
from codeasst.index.fingerprint import VECTOR_KEYS, chunk_id, embedding_text, fingerprint, vector_key
from codeasst.index.graphdb import CodeGraph
from codeasst.index.lock import IndexLock, write_errors
from codeasst.index.manifest import Entry, Manifest
from codeasst.index.roles import ROLES_VERSION, role_of
from codeasst.index.store import ChunkStore, own_dense
from codeasst.index.summary import IndexSummary, Progress
from codeasst.index.vectors import VectorStore, location_of

# Names other modules import from here, though they live in the modules above.
__all__ = ["IndexLock", "IndexSummary", "Indexer", "Progress", "chunk_id", "embedding_text"]

# Vectors kept for texts that come back (a branch switched back, a function moved): at least this many,
# or twice the index's chunks.
KEPT_VECTORS = 50_000
# Chunks written per transaction in the lexical phase, at least: each commit rewrites the pages of
# every term its chunks use, so bigger groups write each page fewer times (sympy's 55,207 chunks:
# commits were 10.6 of 52 s at 256 a group).
LEXICAL_GROUP = 4096
# How many more chunks a search embeds before it answers where the vectors are the first phase's (the static
# model's: about 2,000 chunks a second against MiniLM's 40 on 2 cores) than index.search_embed_limit says.
FIRST_PHASE_FASTER = 20


class Indexer:
    """Brings one repository's index up to date. `embed_limit` (in run()) bounds the dense phase:
    None embeds every chunk still waiting, N embeds them only when at most N wait (a search
    answers at once in a big repository and leaves the rest to `codeasst index` or `serve`).

    With a `first` embedder (the static model, embedder.first_phase), vectors come in two phases:
    every chunk gets the first embedder's vectors (seconds), which search uses, then `embedder`'s,
    kept apart (the manifest's shelf) until every chunk has one; then the index uses `embedder`'s.
    Each phase is resumable: a kill in either loses at most one group."""

    def __init__(self, root: Path, index_dir: Path, settings: IndexSettings, embedder: Embedder,
                 open_store: Callable[[str], VectorStore], progress: Progress | None = None, *,
                 chroma_url: str | None = None, first: Embedder | None = None) -> None:
        self.root = root
        self.index_dir = index_dir
        self.settings = settings
        self.embedder = embedder
        self.first = first if first is not None and first.name != embedder.name else None
        self._open_store = open_store  # an embedder's name -> its collection
        self._stores: dict[str, VectorStore] = {}
        self._in_use: str | None = None  # the embedder whose vectors the index uses, once this run chose it
        self.progress = progress
        self.location = location_of(chroma_url)
        self._kept_vectors = KEPT_VECTORS
        self.plan = plan.Plan.from_settings(settings)

    @property
    def manifest_path(self) -> Path:
        return self.index_dir / "manifest.sqlite"

    def fingerprint(self) -> dict[str, str]:
        return fingerprint(self.settings, self.location)

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
        return self.manifest_path.exists()

    def _entries(self) -> dict[str, Entry]:
        """The manifest's entries, read without creating a manifest where there is none."""
        if not self.has_index():
            return {}
        manifest = Manifest(self.manifest_path)
        try:
            return manifest.entries()
        finally:
            manifest.close()

    def stale(self) -> bool:
        """Whether a file was added, changed or deleted since the last run (by size and mtime; writes nothing)."""
        found = staleness(self.root, self._entries(), self.settings.max_file_bytes)
        return bool(found.added or found.modified or found.deleted)

    def indexed_files(self) -> list[str]:
        """The files that hold chunks, as the manifest lists them."""
        return sorted(path for path, entry in self._entries().items() if entry.chunks)

    def store_of(self, embedder: str) -> VectorStore:
        # Opened only when there is work: a no-op run never pays for importing chromadb.
        if embedder not in self._stores:
            self._stores[embedder] = self._open_store(embedder)
        return self._stores[embedder]

    @property
    def store(self) -> VectorStore:
        """The collection of the embedder whose vectors the index uses."""
        return self.store_of(self._in_use or self._in_use_now())

    def _in_use_now(self) -> str:
        if self.has_index():
            manifest = Manifest(self.manifest_path)
            try:
                found = manifest.get_meta("embedder")
            finally:
                manifest.close()
            if found:
                return found
        return self.embedder.name

    @property
    def usable(self) -> tuple[str, ...]:
        """The embedders whose vectors search may read: this one, then its first phase."""
        return (self.embedder.name, *([self.first.name] if self.first else []))

    def reader(self) -> ChunkStore:
        """What retrieval reads: the chunks, their words and the vectors embedded so far, when they are
        this embedder's or its first phase's (until a run takes them back, a changed embedder reads none)."""
        return ChunkStore(self.manifest_path, self.store_of, self.usable)

    def dense(self) -> dict[str, int]:
        """{"embedded": N, "total": M}: the chunks that have their vector, of those that get one."""
        if not self.has_index():
            return {"embedded": 0, "total": 0}
        manifest = Manifest(self.manifest_path)
        try:
            return own_dense(manifest, self.usable)
        finally:
            manifest.close()

    def store_problem(self, embedded: int) -> str | None:
        """Why the vector store does not hold the `embedded` vectors the manifest counts, if it does
        not (opens the store). Mended by the next run, which embeds what is missing again."""
        if self.location == "embedded" and embedded and not (self.index_dir / "chroma" / "chroma.sqlite3").is_file():
            return f"the manifest counts {embedded:,} vectors but the embedded vector store in {self.index_dir} is gone"
        if embedded and not self.store.exists:
            return f"the manifest counts {embedded:,} vectors but {self.location} has no collection {self.store.name}"
        held = self.store.count()
        if held != embedded:
            return f"the manifest counts {embedded:,} vectors but {self.location} holds {held:,}"
        return None

    def status(self, check_store: bool = False) -> dict:
        """What the index holds and how stale it is, without writing anything (codeasst.index.report)."""
        return report.status(self, check_store)

    def run(self, rebuild: bool = False, verify: bool = False, embed_limit: int | None = None, *,
            final: bool = True, wait_s: float = 0.0) -> IndexSummary:
        """`verify` also checks the vector store against the manifest, which opens the store;
        without it a run that has nothing to write never imports chromadb. Without `final` the run
        stops after the first phase's vectors and leaves the embedder's own to the background
        (summary.final_waiting). `wait_s`: how long to wait for the background embedder's group."""
        started = time.perf_counter()
        summary = IndexSummary(root=str(self.root))
        with write_errors(), IndexLock(self.index_dir, wait_s=wait_s):
            if rebuild:
                self._wipe()
            manifest = Manifest(self.manifest_path)
            try:
                self._run(manifest, summary, rebuild, verify)
                self._sync_graph(manifest, summary)
                summary.lexical_s = round(time.perf_counter() - started, 3)
                self._embed(manifest, summary, embed_limit, final=final)
                self._finish(manifest, summary)
            finally:
                manifest.close()
        summary.elapsed_s = round(time.perf_counter() - started, 3)
        return summary

    def embed_pending(self, groups: int | None = None, *, worker: bool = False) -> IndexSummary:
        """The dense phase alone, for at most `groups` groups (all when None), under the lock for
        that time only: the server and the background embedder (`worker`) embed a group at a time, so
        an index update waits for one group, never for the whole. Raises IndexLocked while another run
        holds it."""
        started = time.perf_counter()
        summary = IndexSummary(root=str(self.root))
        with write_errors(), IndexLock(self.index_dir, worker=worker):
            manifest = Manifest(self.manifest_path)
            try:
                if manifest.get_meta("fingerprint") is not None:
                    self._embed(manifest, summary, None, groups)
                summary.dense = dense_share(manifest.chunks.counts())
                summary.final_waiting = self._final_waiting(manifest)
            finally:
                manifest.close()
        summary.elapsed_s = round(time.perf_counter() - started, 3)
        return summary

    def _wipe(self) -> None:
        """Remove the local index files whatever state they are in, then empty the collection."""
        for name in ("manifest.sqlite", "manifest.sqlite-wal", "manifest.sqlite-shm", "bm25-chunks.sqlite",
                     "graph.sqlite", "graph.sqlite-wal", "graph.sqlite-shm"):
            (self.index_dir / name).unlink(missing_ok=True)
        self._stores.clear()  # their client would write to the files deleted next
        VectorStore.destroy_local(self.index_dir)
        self.store.drop()  # for a Chroma server, the only copy lives there

    def _run(self, manifest: Manifest, summary: IndexSummary, rebuild: bool, verify: bool) -> None:
        """The lexical phase: every new or changed file chunked and written, deleted ones dropped."""
        entries = self._settle(manifest, summary, rebuild, verify)
        found = scan(self.root, IgnoreRules(self.root), self.settings.max_file_bytes)
        summary.skipped = [{"path": p, "reason": r} for p, r in found.skipped]
        # Roles are not in the vectors: new rules relabel the files without re-embedding them.
        relabel = manifest.get_meta("roles") != ROLES_VERSION
        diff = changes(self.root, {f.path: f for f in found.files}, entries, relabel, summary)
        if diff.deleted:
            self._drop_vectors(manifest.remove(diff.deleted))
        if diff.touched:
            manifest.put(diff.touched)
        if relabel or manifest.get_meta("plan") != self.plan.signature():
            kept = {p: e for p, e in manifest.entries().items() if e.chunks and p not in diff.deleted}
            self._replan(manifest, kept)
        if diff.todo:
            self._write(diff.todo, manifest, summary, entries)

    def _settle(self, manifest: Manifest, summary: IndexSummary, rebuild: bool, verify: bool) -> dict[str, Entry]:
        """The manifest's entries still valid under this run's settings: none when the index is rebuilt
        (asked, or its fingerprint changed), which clears what the old settings made; `verify` also
        reconciles the vector store with the manifest where the store changed since the last run."""
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
        if summary.rebuilt and not rebuild:
            if self.location == "embedded":
                self._stores.clear()  # the store may be damaged or gone: start it afresh
                VectorStore.destroy_local(self.index_dir)
            else:
                self.store.drop()
                if old is not None and old["store"] == "embedded":
                    VectorStore.destroy_local(self.index_dir)  # the vectors moved to a server
            (self.index_dir / "bm25-chunks.sqlite").unlink(missing_ok=True)  # words lived there before layout 2
            manifest.clear(vectors=rebuild or any(old.get(k) != wanted[k] for k in VECTOR_KEYS))
            entries = {}
        elif verify and entries:
            stamp = manifest.get_meta("store_stamp")
            if stamp is None or stamp != self._store_stamp():
                self._reconcile(manifest, summary)
        if stored is None or summary.rebuilt:
            manifest.set_meta({"fingerprint": json.dumps(wanted), "root": str(self.root)})
        self._take_embedder(manifest, summary)
        return entries

    def _target(self, manifest: Manifest, in_use: str | None) -> str:
        """The embedder the index should use: this one, or its first phase until this one's vectors
        (kept on the shelf meanwhile) cover every chunk that gets a vector."""
        final = self.embedder.name
        if self.first is None or in_use == final:
            return final
        if in_use is not None and manifest.chunks.counts()["chunks"] and not manifest.chunks.unshelved_count(final):
            return final
        return self.first.name

    def _take_embedder(self, manifest: Manifest, summary: IndexSummary) -> None:
        """Make the embedder this run should use the one in use (_target): the last one's vectors stay in
        its collection, shelved, and the new one's, kept from when it was last in use or made on the shelf,
        count again (its vectors of chunks gone since are dropped). Nothing is re-embedded that an
        embedder embedded before."""
        in_use = manifest.get_meta("embedder")
        target = self._target(manifest, in_use)
        self._in_use = target
        if in_use == target:
            return
        stale, back = manifest.switch_embedder(in_use, target)
        self._drop_vectors(stale)
        if in_use is not None and not (self.first is not None and in_use == self.first.name):
            summary.embedder_changed = (f"embedder {in_use} -> {target}: {back:,} vectors kept from its last use, "
                                        f"the last one's kept for a switch back")

    def graph(self) -> CodeGraph:
        """The code graph (codeasst.index.graphdb), as the last run left it."""
        return CodeGraph(self.index_dir / "graph.sqlite")

    def _sync_graph(self, manifest: Manifest, summary: IndexSummary) -> None:
        """The code graph brought in line with the files just written, file by file."""
        files = {p: e.sha256 for p, e in manifest.entries().items() if e.chunks}
        code_graph = self.graph()
        try:
            summary.graph = code_graph.sync(self.root, files)
            summary.graph_note = code_graph.note
        finally:
            code_graph.close()

    def _finish(self, manifest: Manifest, summary: IndexSummary) -> None:
        final = manifest.entries()
        meta = {"updated_at": str(time.time()), "roles": ROLES_VERSION, "plan": self.plan.signature()}
        counts = manifest.chunks.counts()
        if self._stores and self.location == "embedded":
            # Opened by this run, written by it or checked against the manifest: they agree now.
            problem = self.store_problem(counts["embedded"])
            meta["store_stamp"] = "" if problem else self._store_stamp() or ""
        manifest.set_meta(meta)
        summary.files = sum(1 for e in final.values() if e.chunks)
        summary.chunks = sum(e.chunks for e in final.values())
        summary.dense = dense_share(counts)
        summary.final_waiting = self._final_waiting(manifest)
        summary.lexical_only = counts["lexical_only"]
        summary.fallbacks = report.fallbacks(final)
        # Files skipped for their content stay in the manifest so they are not re-read each run.
        known = {item["path"] for item in summary.skipped}
        summary.skipped += [{"path": e.path, "reason": e.skipped} for e in final.values()
                            if e.skipped and e.path not in known]
        summary.skipped.sort(key=lambda item: item["path"])

    def _reconcile(self, manifest: Manifest, summary: IndexSummary) -> None:
        """Bring the vector store in line with the manifest: vectors of chunks it no longer holds are
        dropped, chunks marked embedded whose vector is missing wait for it again (the kept vectors
        give most of them back without the embedder)."""
        embedded = manifest.chunks.embedded_ids()
        if self.store_problem(len(embedded)) is None:
            return
        held = set(self.store.ids())
        orphans, missing = sorted(held - embedded), sorted(embedded - held)
        self._drop_vectors(orphans)
        manifest.mark_chunks(missing, PENDING)
        found = ([f"lacked {len(missing):,} of {len(embedded):,} vectors"] if missing else []) + (
            [f"held {len(orphans):,} of chunks no longer indexed"] if orphans else [])
        summary.repaired = "the vector store " + " and ".join(found) if found else None

    def _embeds(self, entry: Entry) -> bool:
        return self.plan.embeds(entry.path, entry.role, chunker.language_for(entry.path) or "", entry.chunks)

    def _replan(self, manifest: Manifest, entries: dict[str, Entry]) -> None:
        """Every file's chunks placed by the embedding rule again (its settings or the roles changed)."""
        decisions: dict[bool, list[str]] = {}
        for path, entry in entries.items():
            decisions.setdefault(self._embeds(entry), []).append(path)
        self._drop_vectors(manifest.replan(decisions))

    def _drop_vectors(self, ids: list[str]) -> None:
        if ids:
            self.store.delete_ids(ids)

    def _write(self, todo: list[tuple[FileInfo, str]], manifest: Manifest, summary: IndexSummary,
               previous: dict[str, Entry]) -> None:
        if self.progress:
            self.progress.start(len(todo))
        group: list[tuple[Entry, list[chunker.Chunk]]] = []
        pending = 0
        for info, digest in todo:
            entry, chunks = self._chunk_file(info, digest)
            if entry.skipped and not previous.get(info.path):
                summary.skipped.append({"path": info.path, "reason": entry.skipped})
            group.append((entry, chunks))
            pending += len(chunks)
            if pending >= max(self.settings.group_chunks, LEXICAL_GROUP):
                self._flush(group, manifest, summary)
                group, pending = [], 0
        self._flush(group, manifest, summary)

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
        """One group of files' chunks and words written with their rows, in one transaction."""
        if not group:
            return
        new = [(chunk_id(c), c, PENDING if self._embeds(entry) else LEXICAL) for entry, chunks in group for c in chunks]
        self._drop_vectors(manifest.write_files([entry for entry, _ in group], new))
        summary.chunks_written += len(new)
        if self.progress:
            self.progress.advance(files=len(group), chunks=len(new))

    def _final_waiting(self, manifest: Manifest) -> int:
        """Chunks still waiting for this embedder's vectors while the index uses the first phase's."""
        on_first = self.first is not None and manifest.get_meta("embedder") == self.first.name
        return manifest.chunks.unshelved_count(self.embedder.name) if on_first else 0

    def _embed(self, manifest: Manifest, summary: IndexSummary, limit: int | None,
               groups: int | None = None, final: bool = True) -> None:
        """The dense phases: chunks waiting for the vectors of the embedder in use embedded a group at a
        time, in an order that favours no role (codeasst.index.chunkdb.ChunkTable.pending); then, while
        that is the first phase's, this embedder's vectors for every chunk, kept on the shelf, and the
        index switched to them once complete. Neither phase runs while more than `limit` chunks wait for it;
        the second not at all without `final`."""
        if self._in_use is None:
            self._take_embedder(manifest, summary)
        counts = manifest.chunks.counts()
        self._kept_vectors = max(KEPT_VECTORS, 2 * counts["chunks"])
        started = time.perf_counter()
        budget = [groups]
        waiting = counts["pending"]
        on_first = self.first is not None and self._in_use == self.first.name
        in_use = self.first if on_first else self.embedder
        if waiting and (limit is None or waiting <= limit * (FIRST_PHASE_FASTER if on_first else 1)):
            embedded, reused = self._embed_groups(manifest, in_use, waiting, budget,
                                                  lambda: manifest.chunks.pending(self.settings.group_chunks),
                                                  lambda ids: manifest.mark_chunks(ids, EMBEDDED))
            summary.embedded += embedded
            summary.vectors_reused += reused
            if on_first:
                summary.first_embed_s = round(time.perf_counter() - started, 3)
        if final and self.first is not None and self._in_use == self.first.name and not manifest.chunks.counts()["pending"]:
            final = self.embedder.name
            left = manifest.chunks.unshelved_count(final)
            if left and (limit is None or left <= limit):
                summary.final_embedded += self._embed_groups(
                    manifest, self.embedder, left, budget,
                    lambda: manifest.chunks.unshelved(final, self.settings.group_chunks),
                    lambda ids: manifest.shelve(final, ids))[0]
            if counts["chunks"] and not manifest.chunks.unshelved_count(final):
                self._take_embedder(manifest, summary)  # complete: the index uses this embedder's vectors now
        summary.embed_s = round(summary.embed_s + time.perf_counter() - started, 3)

    def _embed_groups(self, manifest: Manifest, embedder: Embedder, waiting: int, budget: list[int | None],
                      batches: Callable[[], list], done_with: Callable[[list[str]], None]) -> tuple[int, int]:
        """Embed with `embedder` the chunks `batches()` gives until none is left or the group budget (shared
        by the phases) is spent; each group's vectors kept by text, stored in its collection, then marked by
        `done_with`. The chunks embedded, and of those the ones whose vector was kept from before."""
        if self.progress:  # before the embedder loads, which takes seconds: the user sees work start
            self.progress.start_embedding(waiting)
        embedder.load()
        store = self.store_of(embedder.name)
        embedded = reused = 0
        while budget[0] is None or budget[0] > 0:
            batch = batches()
            if not batch:
                break
            texts = [embedding_text(c) for c in batch]
            keys = [vector_key(embedder.name, text) for text in texts]
            known = manifest.vectors(keys)
            todo = list({key: text for key, text in zip(keys, texts, strict=True) if key not in known}.items())
            tell = (lambda n: self.progress.embedded(n)) if self.progress else None
            fresh = embedder.embed([text for _, text in todo], progress=tell) if todo else []
            new = {key: vector for (key, _), vector in zip(todo, fresh, strict=True)}
            if tell and len(todo) < len(batch):
                tell(len(batch) - len(todo))
            # Kept by text first: a kill between here and the mark below costs no embedding again.
            manifest.keep_vectors(new, self._kept_vectors)
            store.upsert([c.id for c in batch], [known.get(k) or new[k] for k in keys], [c.path for c in batch])
            done_with([c.id for c in batch])
            embedded += len(batch)
            reused += len(batch) - len(todo)
            if budget[0] is not None:
                budget[0] -= 1
        return embedded, reused
