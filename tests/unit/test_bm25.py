"""BM25 over files with code-aware tokens, kept incrementally (codeasst.retrieve.bm25)."""

from __future__ import annotations

import os

from codeasst.retrieve import bm25
from codeasst.retrieve.bm25 import FileBM25


def test_tokens_split_identifiers_and_keep_them_whole():
    assert bm25.tokens("load_config HTTPClient addRoute the x") == [
        "load_config", "load", "config", "httpclient", "http", "client", "addroute", "add", "route"]


def test_the_file_sharing_the_rare_words_ranks_first():
    index = FileBM25.from_texts({
        "router.py": "class Router:\n    def add_route(self, path):\n        self.routes[path] = 1\n",
        "config.py": "def load_config(path):\n    return json.load(open(path))\n",
        "util.py": "def helper(path):\n    return path\n",
    })
    ranked = index.rank("Adding a route twice: Router.add_route raises on a duplicate path")
    assert ranked[0][0] == "router.py"
    assert index.rank("nothing matches zzz") == []


def test_counts_are_kept_and_only_changed_files_recounted(tmp_path, monkeypatch):
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("def alpha():\n    pass\n")
    (root / "b.py").write_text("def beta():\n    pass\n")
    cache = tmp_path / "index"
    first = FileBM25.for_files(root, ["a.py", "b.py"], cache)
    assert first.rank("beta")[0][0] == "b.py"
    assert (cache / bm25.CACHE_NAME).is_file()

    counted = []
    real = bm25._count
    monkeypatch.setattr(bm25, "_count", lambda path, stat, tokenize: counted.append(path.name) or real(path, stat, tokenize))
    (root / "a.py").write_text("def gamma_beta():\n    pass\n")
    os.utime(root / "a.py", ns=(1, 1))
    second = FileBM25.for_files(root, ["a.py", "b.py"], cache)
    assert counted == ["a.py"]  # b.py came from the cache
    assert second.rank("gamma")[0][0] == "a.py"
    third = FileBM25.for_files(root, ["b.py"], cache)  # a.py left the index
    assert set(third.docs) == {"b.py"} and counted == ["a.py"]


def test_a_broken_cache_is_recounted(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("def alpha():\n    pass\n")
    (tmp_path / "index").mkdir()
    (tmp_path / "index" / bm25.CACHE_NAME).write_bytes(b"not a pickle")
    assert FileBM25.for_files(root, ["a.py"], tmp_path / "index").rank("alpha")[0][0] == "a.py"


def _ids(words):
    return {id_ for (id_,) in words.db.execute("SELECT id FROM docs")}


def _indexed(make_repo, files):
    from codeasst.backends.fake import HashingEmbedder
    from codeasst.services import build_services

    services = build_services(make_repo(files), embedder=HashingEmbedder())
    indexer = services.indexer()
    indexer.run()
    return services, indexer


def test_chunk_bm25_ranks_the_definition_whose_words_the_question_uses(make_repo):
    # A real Chroma store and tree-sitter chunks: the function that handles the proxy header beats
    # the files that mention it once, however big.
    _, indexer = _indexed(make_repo, {
        "lib/request.py": ("def forwarded_ips(headers):\n    \"\"\"Client addresses from X-Forwarded-For.\"\"\"\n"
                           "    return [ip.strip() for ip in headers['x-forwarded-for'].split(',')]\n\n\n"
                           + "".join(f"def helper_{n}(headers):\n" + "    value = headers.get('accept')\n" * 12
                                     + "    return value\n\n\n" for n in range(6))),
        "docs/guide.md": "# Guide\n\nBehind a proxy, addresses come from a header.\n\n" + "Unrelated prose. " * 200,
    })
    words = bm25.ChunkBM25.for_store(indexer.store, indexer.index_dir)
    best = indexer.store.chunks_by_id([id_ for id_, _ in words.rank("where are forwarded ips read?", 5)])
    assert best[0].path == "lib/request.py" and best[0].name.endswith("forwarded_ips")


def test_chunk_counts_are_kept_by_chunk_id_and_only_new_chunks_read(make_repo, monkeypatch):
    services, indexer = _indexed(make_repo, {"a.py": "def alpha():\n    pass\n", "b.py": "def beta():\n    pass\n"})
    store = indexer.store
    first = bm25.ChunkBM25.for_store(store, indexer.index_dir)
    assert (indexer.index_dir / bm25.CHUNKS_DB_NAME).is_file()
    assert _ids(first) == set(store.ids())

    read = []
    real = type(store).chunks_by_id
    monkeypatch.setattr(type(store), "chunks_by_id", lambda self, ids: read.extend(ids) or real(self, ids))
    again = bm25.ChunkBM25.for_store(store, indexer.index_dir)
    assert read == [] and _ids(again) == _ids(first)  # nothing new: all from the cache

    (services.repo.root / "a.py").write_text("def gamma():\n    pass\n")
    services.indexer().run()
    after = bm25.ChunkBM25.for_store(store, indexer.index_dir)
    assert len(read) == 1  # the one changed chunk
    assert _ids(after) == set(store.ids())  # alpha's chunk is forgotten
    assert [store.chunks_by_id([i])[0].path for i, _ in after.rank("gamma")] == ["a.py"]
    assert after.rank("alpha") == []


def test_damaged_or_unwritable_postings_are_counted_again(make_repo, tmp_path):
    _, indexer = _indexed(make_repo, {"a.py": "def alpha():\n    pass\n"})
    (indexer.index_dir / bm25.CHUNKS_DB_NAME).write_bytes(b"not a database at all" * 100)
    ranked = bm25.ChunkBM25.for_store(indexer.store, indexer.index_dir).rank("alpha")
    assert [indexer.store.chunks_by_id([i])[0].path for i, _ in ranked] == ["a.py"]
    unwritable = tmp_path / "no-such-dir-file"
    unwritable.write_text("a file where a directory should be")
    assert bm25.ChunkBM25.for_store(indexer.store, unwritable / "sub").rank("alpha")  # in memory
