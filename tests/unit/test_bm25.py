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
    best = indexer.reader().bm25("where are forwarded ips read?", 5)
    assert best[0].path == "lib/request.py" and best[0].name.endswith("forwarded_ips")


def test_postings_are_written_with_the_chunks_before_any_vector_and_follow_each_change(make_repo):
    from codeasst.backends.fake import HashingEmbedder
    from codeasst.services import build_services

    root = make_repo({"a.py": "def alpha():\n    pass\n", "b.py": "def beta():\n    pass\n"})
    embedder = HashingEmbedder()
    services = build_services(root, embedder=embedder)
    lexical = services.indexer().run(embed_limit=0)  # the lexical phase alone
    assert not embedder.calls and lexical.dense == {"embedded": 0, "total": 2}
    store = services.indexer().reader()
    assert [h.path for h in store.bm25("alpha", 5)] == ["a.py"]
    assert store.query(embedder._vector("alpha"), 5) == [], "nothing embedded: dense finds nothing, and says so"

    (root / "a.py").write_text("def gamma():\n    pass\n")
    services.indexer().run()
    store = services.indexer().reader()
    assert [h.path for h in store.bm25("gamma", 5)] == ["a.py"]
    assert store.bm25("alpha", 5) == []
    db = store.table.db
    assert db.execute("SELECT COUNT(*) FROM postings WHERE n NOT IN (SELECT n FROM chunks)").fetchone()[0] == 0
    assert db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0] == 2


def test_reads_by_id_and_by_file_are_batched_past_sqlites_variable_limit(make_repo):
    files = {f"pkg/m{i}.py": f"def fn_{i}():\n    return 'shared word'\n" for i in range(1200)}
    _, indexer = _indexed(make_repo, files)
    store = indexer.reader()
    spans = store.spans_of(sorted(files))
    assert len(spans) == 1200 and all(h.text == "" for h in spans)
    assert len(store.chunks_by_id([h.id for h in spans])) == 1200
    assert len(store.chunks_of(sorted(files))) == 1200
    assert len(store.bm25("shared word", 50)) == 50


def test_bm25_over_whole_files_from_the_chunks_postings(make_repo):
    # Each file is one chunk here, so the file-level ranking must be plain BM25 over the files with
    # the same tokens; a file whose words are spread over many small definitions ranks by all of them.
    files = {
        "a.py": "def alpha(x):\n    \"\"\"Merge the ranges.\"\"\"\n    return x\n",
        "b.py": "def beta(y):\n    \"\"\"Sort the values, then merge.\"\"\"\n    return y\n",
        "c.py": "def gamma(z):\n    return z\n",
    }
    _, indexer = _indexed(make_repo, files)
    store = indexer.reader()
    expected = FileBM25.from_texts(files).rank("how are sorted values merged into ranges", 10)
    got = store.table.rank_files("how are sorted values merged into ranges", 10)
    assert [p for p, _ in got] == [p for p, _ in expected]
    assert [round(s, 6) for _, s in got] == [round(s, 6) for _, s in expected]
    hits = store.bm25_files("how are sorted values merged into ranges", 10)
    assert [h.path for h in hits] == [p for p, _ in expected] and hits[0].text.startswith("def alpha")


def test_a_question_that_describes_code_gets_the_file_stage():
    from codeasst.retrieve.pipeline import describes

    assert describes("What mechanism keeps the symbolic matrix dimensions intact when the string form is built?")
    assert not describes("Where is load_config defined?")  # short, and names the code
    assert not describes("How does `Schema.load` call `_do_load` and `_invoke_load_processors` in order?")
    assert not describes("как click предлагает похожие варианты, если пользователь опечатался в имени опции или команды?")
