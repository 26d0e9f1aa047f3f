"""The figures of `codeasst status`: chunks, vectors, staleness, the background embedder's progress
(codeasst.index.worker). Read only."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict
from typing import TYPE_CHECKING

from codeasst.index import chunker, worker
from codeasst.index.changes import staleness
from codeasst.index.manifest import Entry, Manifest
from codeasst.index.store import own_dense

if TYPE_CHECKING:
    from pathlib import Path

    from codeasst.index.indexer import Indexer


def fallbacks(entries: dict[str, Entry]) -> dict[str, int]:
    """Language -> files cut into line windows although the language has a grammar."""
    return dict(Counter(chunker.language_for(e.path) for e in entries.values() if e.fallback))


def background(index_dir: Path) -> dict | None:
    """The background embedder: whether it runs, its log, and what its last state file says (chunks it
    embedded, when it started, why it stopped); None where none ever ran for this index."""
    running = worker.pid(index_dir)
    state = worker.read_state(index_dir)
    if running is None and state is None:
        return None
    state = state or {}
    return {"running": running is not None, "pid": running or state.get("pid"),
            "log": str(index_dir / worker.LOG), "embedded": state.get("embedded", 0),
            "started_at": state.get("started_at"), "stopped": None if running is not None else state.get("stopped")}


def status(indexer: Indexer, check_store: bool = False) -> dict:
    """What the index holds and how stale it is. `check_store` also compares the vector store with the
    manifest (which opens the store)."""
    entries: dict[str, Entry] = {}
    updated = stored = in_use = None
    first_phase, final = False, 0
    counts = {"embedded": 0, "pending": 0, "lexical_only": 0}
    dense = {"embedded": 0, "total": 0}
    if indexer.has_index():
        manifest = Manifest(indexer.manifest_path)
        try:
            entries = manifest.entries()
            updated = manifest.get_meta("updated_at")
            stored = manifest.get_meta("fingerprint")
            in_use = manifest.get_meta("embedder")
            counts = manifest.chunks.counts()
            dense = own_dense(manifest, indexer.usable)
            first_phase = indexer.first is not None and in_use == indexer.first.name
            final = dense["total"] - manifest.chunks.unshelved_count(indexer.embedder.name) if first_phase else 0
        finally:
            manifest.close()
    switched = in_use is not None and in_use not in indexer.usable
    stale = staleness(indexer.root, entries, indexer.settings.max_file_bytes)
    return {
        "root": str(indexer.root),
        "index_dir": str(indexer.index_dir),
        "indexed": updated is not None,
        "updated_at": float(updated) if updated else None,
        "files": sum(1 for e in entries.values() if e.chunks),
        "chunks": sum(e.chunks for e in entries.values()),
        "dense": dense,
        "lexical_only": counts["lexical_only"],
        "skipped": sum(1 for e in entries.values() if e.skipped),
        "fallbacks": fallbacks(entries),
        "store_problem": (indexer.store_problem(counts["embedded"]) if check_store and updated and not switched
                          else None),
        "settings_changed": bool(stored) and json.loads(stored) != indexer.fingerprint(),
        "embedder_changed": {"from": in_use, "to": indexer.embedder.name} if switched else None,
        "first_phase": ({"embedder": in_use, "final": indexer.embedder.name, "final_embedded": final,
                         "total": dense["total"]} if first_phase else None),
        "background": background(indexer.index_dir),
        "stale": asdict(stale),
    }
