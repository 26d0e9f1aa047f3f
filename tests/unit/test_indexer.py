"""Incremental indexing logic, with a deterministic fake embedder but real Chroma and tree-sitter."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from chromadb.api.client import SharedSystemClient

from codeasst.backends.fake import HashingEmbedder
from codeasst.errors import IndexCorrupt, IndexLocked
from codeasst.index.indexer import Indexer
from codeasst.index.lock import IndexLock
from codeasst.services import build_services

SOURCE = {
    "app/models.py": "class User:\n    def __init__(self, name):\n        self.name = name\n",
    "app/views.py": "def profile(user):\n    return {'name': user.name}\n",
    "web/main.ts": "export function start(port: number) {\n  return port + 1;\n}\n",
    "README.md": "# Demo\n\nA tiny repository.\n",
}


def services_for(root: Path, embedder=None, **flags):
    return build_services(root, flags, embedder=embedder or HashingEmbedder())


def test_incremental_runs_touch_only_what_changed(make_repo):
    root = make_repo(SOURCE)
    embedder = HashingEmbedder()
    first = services_for(root, embedder).indexer().run()
    assert (first.added, first.changed, first.deleted, first.files) == (4, 0, 0, 4)
    assert first.chunks == first.chunks_written == services_for(root).open_store().count()

    indexer = services_for(root, embedder).indexer()
    noop = indexer.run()
    assert (noop.added, noop.changed, noop.deleted, noop.unchanged, noop.chunks_written) == (0, 0, 0, 4, 0)
    assert not indexer._stores, "a no-op run must not even open the store"

    os.utime(root / "app/views.py", ns=(1, 1))  # touched, same content
    touched = services_for(root, embedder).indexer().run()
    assert (touched.changed, touched.chunks_written) == (0, 0)

    calls_before = len(embedder.calls)
    (root / "app/views.py").write_text("def profile(user):\n    return {'name': user.name, 'id': 1}\n")
    changed = services_for(root, embedder).indexer().run()
    assert (changed.changed, changed.unchanged, changed.chunks_written) == (1, 3, 1)
    assert sum(embedder.calls[calls_before:]) == 1

    (root / "web/main.ts").unlink()
    deleted = services_for(root, embedder).indexer().run()
    assert (deleted.deleted, deleted.files) == (1, 3)
    store = services_for(root).open_store()
    assert store.count() == deleted.chunks
    chunks = services_for(root).indexer().reader()
    assert not chunks.chunks_of(["web/main.ts"]), "a deleted file's chunks are gone"
    assert set(store.ids()) == {c.id for c in chunks.chunks_of(["app/models.py", "app/views.py", "README.md"])}


def test_changing_chunker_settings_rebuilds_with_a_reason(make_repo):
    root = make_repo(SOURCE)
    services_for(root).indexer().run()
    summary = services_for(root, **{"index.chunk_chars": 700}).indexer().run()
    assert summary.rebuilt == "settings changed: chunk_chars 1000 -> 700"
    assert summary.added == 4
    assert services_for(root).open_store().count() == summary.chunks


def test_each_embedder_keeps_its_own_vectors_and_a_switch_back_embeds_nothing(make_repo):
    root = make_repo(SOURCE)
    wide, narrow = HashingEmbedder(64), HashingEmbedder(32)
    first = services_for(root, wide).indexer().run()
    assert first.embedded == first.chunks and first.embedder_changed is None

    switched = services_for(root, narrow).indexer().run()
    assert switched.rebuilt is None, "a new embedder rebuilds nothing: words and graph stay"
    assert switched.chunks_written == 0 and switched.embedded == first.chunks
    assert "fake-hashing-64 -> fake-hashing-32" in switched.embedder_changed
    narrow_store, wide_store = services_for(root, narrow).open_store(), services_for(root, wide).open_store()
    assert narrow_store.name != wide_store.name, "one collection per embedder"
    assert narrow_store.count() == wide_store.count() == first.chunks, "the old one's vectors are kept"

    # While the narrow one is in use a file changes and one is deleted: the wide one's vectors of
    # those chunks are dropped when it comes back, and only the changed chunk is embedded again.
    (root / "app/views.py").write_text("def profile(user):\n    return {'id': user.id}\n")
    (root / "web/main.ts").unlink()
    services_for(root, narrow).indexer().run()
    calls = len(wide.calls)
    back = services_for(root, wide).indexer().run()
    assert back.embedded == 1 and sum(wide.calls[calls:]) == 1, "only the changed chunk is embedded again"
    assert "2 vectors kept" in back.embedder_changed
    reader = services_for(root, wide).indexer().reader()
    held = {c.id for c in reader.chunks_of(["app/models.py", "app/views.py", "README.md"])}
    assert set(services_for(root, wide).open_store().ids()) == held, "no vector of a chunk gone, none missing"
    query = wide.embed_query("profile")
    assert {h.path for h in reader.query(query, 5)} <= {"app/models.py", "app/views.py", "README.md"}


def test_an_index_searched_after_the_embedder_changed_is_never_read_with_the_wrong_vectors(make_repo):
    root = make_repo(SOURCE)
    wide, narrow = HashingEmbedder(64), HashingEmbedder(32)
    services_for(root, wide).indexer().run()
    indexer = services_for(root, narrow).indexer()  # the setting changed; no run has switched yet
    assert indexer.status()["embedder_changed"] == {"from": "fake-hashing-64", "to": "fake-hashing-32"}
    assert indexer.dense()["embedded"] == 0
    reader = indexer.reader()
    assert reader.dense()["embedded"] == 0
    assert reader.query(narrow.embed_query("profile"), 5) == [], "the 64-wide vectors are not read as 32-wide"

    from codeasst.tasks.search import find

    with IndexLock(indexer.index_dir):  # another run holds the index: this search cannot switch it
        found = find(services_for(root, narrow), "profile of a user", use_llm=False)
    assert any("vectors are fake-hashing-64's" in note for note in found.notes), found.notes
    assert found.dense["embedded"] == 0 and found.hits, "answered from words, and says so"
    assert not any("dense" in hit.sources for hit in found.hits)


def test_bad_files_are_skipped_with_reasons_and_not_reread(make_repo):
    root = make_repo({
        "ok.py": "x = 1\n",
        "blob.py": b"\x00\x01\x02binary",
        "latin.py": "name = 'caf\u00e9'\n".encode("latin-1"),
        "bundle.js": "var a=1;" * 1_300_000,
    })
    summary = services_for(root, **{"index.max_file_bytes": 20_000_000}).indexer().run()
    reasons = {item["path"]: item["reason"] for item in summary.skipped}
    assert reasons == {
        "blob.py": "binary",
        "latin.py": "not UTF-8 text (bad byte at offset 11)",
        "bundle.js": "minified (lines average over 1,000 characters)",
    }
    assert summary.files == 1
    again = services_for(root, **{"index.max_file_bytes": 20_000_000}).indexer().run()
    assert (again.unchanged, again.chunks_written) == (4, 0)
    assert {item["path"] for item in again.skipped} == set(reasons)


def test_a_second_writer_is_refused(make_repo):
    root = make_repo(SOURCE)
    services = services_for(root)
    with IndexLock(services.repo.index_dir), pytest.raises(IndexLocked, match="being updated by pid"):
        services.indexer().run()


@pytest.mark.parametrize("damaged", ["manifest.sqlite", "chroma/chroma.sqlite3"])
def test_a_corrupted_index_says_so_and_rebuild_repairs_it(make_repo, damaged):
    root = make_repo(SOURCE)
    services = services_for(root)
    services.indexer().run()
    (root / "app/views.py").write_text("def other():\n    pass\n")  # so the next run must open the store
    target = services.repo.index_dir / damaged
    for leftover in target.parent.glob(target.name + "-*"):
        leftover.unlink()
    target.write_bytes(b"this is not a database" * 100)
    SharedSystemClient.clear_system_cache()  # as a new process would find it
    with pytest.raises(IndexCorrupt) as info:
        services_for(root).indexer().run()
    assert "codeasst index --rebuild" in info.value.one_line()
    summary = services_for(root).indexer().run(rebuild=True)
    assert summary.rebuilt == "asked with --rebuild"
    assert summary.files == 4
    assert services_for(root).open_store().count() == summary.chunks


def test_a_version_1_manifest_is_migrated_in_place(tmp_path):
    import sqlite3

    from codeasst.index.manifest import SCHEMA_VERSION, Manifest

    path = tmp_path / "manifest.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript("CREATE TABLE files (path TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER, sha256 TEXT,"
                         " chunks INTEGER, skipped TEXT); CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);"
                         "INSERT INTO files VALUES ('a.py', 1, 2, 'abc', 3, NULL); PRAGMA user_version = 1;")
    manifest = Manifest(path)
    try:
        (entry,) = manifest.entries().values()
        assert (entry.path, entry.chunks, entry.fallback, entry.role) == ("a.py", 3, False, None)
        assert manifest._db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    finally:
        manifest.close()


def test_files_chunked_by_line_windows_are_counted_per_language(make_repo):
    # Mostly one long line: tree-sitter chunks would only repeat it, so the file is cut into windows.
    inlined = "var data = '" + "x" * 1500 + "';\nfunction f() {\n  return data;\n}\n"
    root = make_repo({**SOURCE, "web/bundle.js": inlined, "notes.txt": "plain text\n" * 300})
    summary = services_for(root).indexer().run()
    assert summary.fallbacks == {"javascript": 1}, "a text file has no grammar to fall back from"
    assert services_for(root).indexer().status()["fallbacks"] == {"javascript": 1}
    again = services_for(root).indexer().run()
    assert again.fallbacks == {"javascript": 1}, "the count is the index's, not this run's"


def test_each_index_has_its_own_collection_and_keeps_it(make_repo, tmp_path, monkeypatch):
    from codeasst.paths import index_dir

    root = make_repo(SOURCE)
    services_for(root).indexer().run()
    name = services_for(root).open_store().name
    assert name == services_for(root).open_store().name
    identity = (index_dir(root) / "store-id").read_text()
    assert identity[:16] in name
    monkeypatch.setenv("CODEASST_HOME", str(tmp_path / "another-user"))
    assert services_for(root).open_store().name != name, "same path, another user: another collection"


def test_a_switch_of_store_is_a_change_of_fingerprint(make_repo):
    root = make_repo(SOURCE)
    local = services_for(root).indexer()
    server = services_for(root, **{"store.chroma_url": "http://127.0.0.1:9"}).indexer()
    assert local.fingerprint()["store"] == "embedded"
    assert server.fingerprint()["store"] == "http://127.0.0.1:9"


def test_a_store_that_lost_vectors_is_mended_from_kept_vectors_and_an_untouched_one_is_not_reopened(make_repo):
    root = make_repo(SOURCE)
    embedder = HashingEmbedder()
    built = services_for(root, embedder).indexer().run(verify=True)

    quiet = services_for(root, embedder).indexer()
    assert quiet.run(verify=True).repaired is None
    assert not quiet._stores, "a store nobody touched since it was last checked is not reopened"

    lost = [c.id for c in services_for(root).indexer().reader().chunks_of(["app/models.py"])]
    store = services_for(root).open_store()
    store.delete_ids(lost)  # behind codeasst's back: the manifest still counts them embedded
    SharedSystemClient.clear_system_cache()
    embedder.calls.clear()
    summary = services_for(root, embedder).indexer().run(verify=True)
    assert summary.repaired == f"the vector store lacked {len(lost)} of {built.chunks} vectors"
    assert summary.embedded == summary.vectors_reused == len(lost) and not embedder.calls, "kept vectors, no model"

    services_for(root).open_store().upsert(["stray"], [embedder._vector("stray")], ["gone.py"])  # a vector of no chunk
    SharedSystemClient.clear_system_cache()
    summary = services_for(root, embedder).indexer().run(verify=True)
    assert summary.repaired == "the vector store held 1 of chunks no longer indexed"
    assert "stray" not in services_for(root).open_store().ids()
    assert set(services_for(root).open_store().ids()) == {c.id for c in
                                                          services_for(root).indexer().reader().chunks_of(
                                                              ["app/models.py", "app/views.py", "web/main.ts",
                                                               "README.md"])}
    assert summary.dense == {"embedded": built.chunks, "total": built.chunks}


def test_a_text_embedded_before_keeps_its_vector(make_repo):
    """A branch switched away and back, or a file changed in one function, re-embeds only the
    texts never embedded before; the vectors stored are those the embedder gave."""
    big = "".join(f"def step_{i}(x):\n    '''Step {i} of the pipeline.'''\n" + "    x += 1\n" * 30 + "    return x\n\n\n"
                  for i in range(6))
    root = make_repo({"app/steps.py": big, "app/other.py": "def other():\n    return 1\n"})
    embedder = HashingEmbedder()
    first = services_for(root, embedder).indexer().run()
    assert first.vectors_reused == 0 and first.chunks > 3

    (root / "app/steps.py").write_text(big.replace("Step 3 of", "The third step of"))
    embedder.calls.clear()
    edited = services_for(root, embedder).indexer().run()
    assert edited.chunks_written == first.chunks - 1  # every chunk of the changed file is rewritten
    assert sum(embedder.calls) == 1 and edited.embedded == 1  # only the edited function's text is new
    assert edited.vectors_reused == 0

    (root / "app/steps.py").write_text(big)  # switched back
    embedder.calls.clear()
    back = services_for(root, embedder).indexer().run()
    assert sum(embedder.calls) == 0 and back.embedded == back.vectors_reused == 1
    store = services_for(root).indexer().reader()
    (chunk,) = [c for c in store.chunks_of(["app/steps.py"]) if c.name.endswith("step_3")]
    hit = store.query(embedder._vector(f"{chunk.path} {chunk.name}\n{chunk.text}"), 1)[0]
    assert hit.id == chunk.id and hit.score > 0.999


def test_the_embedding_rule_keeps_fixtures_and_data_lexical_and_a_new_rule_moves_them(make_repo):
    root = make_repo({**SOURCE, "tests/fixtures/sample.py": "def fixture_code():\n    return 1\n",
                      "data/rows.jsonl": "".join(f'{{"row": {i}, "name": "item {i}"}}\n' for i in range(40))})
    embedder = HashingEmbedder()
    first = services_for(root, embedder).indexer().run()
    reader = services_for(root).indexer().reader()
    lexical = {h.path for h in reader.chunks_of(["tests/fixtures/sample.py", "data/rows.jsonl"])}
    assert lexical == {"tests/fixtures/sample.py", "data/rows.jsonl"}
    assert first.lexical_only == len(reader.chunks_of(sorted(lexical)))
    assert first.dense == {"embedded": first.chunks - first.lexical_only, "total": first.chunks - first.lexical_only}
    assert {h.path for h in reader.bm25("fixture_code", 5)} == {"tests/fixtures/sample.py"}, "found by its words"
    vectors = set(services_for(root).open_store().ids())
    assert not vectors & {h.id for h in reader.chunks_of(sorted(lexical))}

    everything = services_for(root, embedder, **{"index.lexical_roles": [], "index.lexical_data": False}).indexer()
    moved = everything.run()
    assert moved.lexical_only == 0 and moved.dense["embedded"] == moved.chunks and moved.chunks_written == 0
    back = services_for(root, embedder).indexer().run()
    assert back.lexical_only == first.lexical_only and back.embedded == 0
    assert set(services_for(root).open_store().ids()) == vectors, "vectors of chunks the rule drops are dropped"


def _two_phase(root, first, final, **flags):
    services = services_for(root, final, **flags)
    return Indexer(root, services.repo.index_dir, services.settings.index, final, services.open_store, first=first)


def test_two_phases_search_reads_the_first_until_the_second_covers_every_chunk(make_repo):
    root = make_repo(SOURCE)
    fast, slow = HashingEmbedder(32), HashingEmbedder(64)
    summary = _two_phase(root, fast, slow, **{"index.group_chunks": 1}).run(embed_limit=3)
    chunks = summary.chunks
    assert chunks > 3 and summary.embedded == chunks, "the first phase ran: few enough waited"
    assert summary.final_embedded == 0, "the second did not: more than the limit waited for it"
    indexer = _two_phase(root, fast, slow)
    reader = indexer.reader()
    assert reader.in_use() == fast.name and reader.dense() == {"embedded": chunks, "total": chunks}
    assert {h.path for h in reader.query(fast.embed_query("profile user name"), 3)}, "the first phase answers"
    assert indexer.status()["first_phase"] == {"embedder": fast.name, "final": slow.name, "final_embedded": 0,
                                               "total": chunks}

    # The second phase a group at a time (as serve's background does); the switch comes with the last group.
    steps = 0
    while reader.in_use() == fast.name:
        assert _two_phase(root, fast, slow, **{"index.group_chunks": 1}).embed_pending(groups=1).final_embedded == 1
        steps += 1
        assert steps <= chunks
    assert steps == chunks and reader.in_use() == slow.name
    final = services_for(root, slow).open_store()
    assert final.count() == chunks and services_for(root, fast).open_store(fast.name).count() == chunks
    assert {h.path for h in reader.query(slow.embed_query("profile user name"), 3)}
    assert _two_phase(root, fast, slow).status()["first_phase"] is None

    # A changed file later: only the final embedder embeds it; the first phase is over.
    (root / "app/views.py").write_text("def profile(user):\n    return {'id': user.id}\n")
    later = _two_phase(root, fast, slow).run()
    assert (later.embedded, later.final_embedded) == (1, 0) and reader.in_use() == slow.name
