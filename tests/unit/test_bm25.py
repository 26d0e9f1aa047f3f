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
