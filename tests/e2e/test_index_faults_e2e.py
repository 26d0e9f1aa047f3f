"""Faults while indexing: a search while embedding is under way, kill -9 in either phase, a file
that changes while it is embedded, a word shared by tens of thousands of chunks, a disk that fills,
and two runs at once. Each says the index stays consistent and resumes where it stopped.

The CLI tests (marked slow) use the real embedder and Chroma; the others the fake embedder with real
tree-sitter and Chroma, where the CLI is not the point."""

from __future__ import annotations

import json
import os
import resource
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest
from chromadb.api.client import SharedSystemClient

from codeasst.backends.fake import HashingEmbedder
from codeasst.index import indexer as indexer_module
from codeasst.index.fingerprint import vector_key
from codeasst.index.indexer import embedding_text
from codeasst.paths import index_dir
from codeasst.services import build_services
from codeasst.tasks.search import find
from tests.conftest import write_tree
from tests.e2e.conftest import CLI, assert_one_line_error, run_cli, run_json
from tests.e2e.test_index_e2e import REPO

# Progress a group of 64 chunks at a time: many points to stop at. MiniLM alone, without the static first
# phase, whose seconds leave no time to stop in (the static model is killed in a test of its own).
GROUPS = {"CODEASST_INDEX__GROUP_CHUNKS": "64", "CODEASST_EMBEDDER__FIRST_PHASE": "none"}
NATO = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima",
        "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango", "uniform", "victor", "whiskey",
        "xray", "yankee", "zulu")
TARGET = "zz_ledger/reconcile.py"  # the one file the query's words are in
TARGET_SOURCE = '''"""Month-end bookkeeping."""


def reconcile_overdrawn_accounts(ledger, bank_statement):
    """Match the bank statement's entries to the ledger and flag the overdrawn accounts."""
    flagged = []
    for account in ledger.accounts:
        if account.balance(bank_statement) < 0:
            flagged.append(account)
    return flagged
'''
QUERY = "reconcile the ledger with the bank statement and flag overdrawn accounts"


# -- helpers -----------------------------------------------------------------------------------


def _filler(files: int, functions: int, prefix: str = "pkg") -> dict[str, str]:
    """`files` Python modules of `functions` tiny functions each, named by NATO words: one chunk per function
    where a module outgrows a chunk (20 functions do), else one per module."""
    tree = {}
    for i in range(files):
        tree[f"{prefix}{i % 8}/mod_{i}.py"] = "".join(
            f"def {NATO[(i + j) % 26]}_{NATO[(i * 7 + j * 3) % 26]}_{i}_{j}(value):\n    return value + {j}\n\n\n"
            for j in range(functions))
    return tree


def _embedding_repo(make_repo) -> Path:
    """About 1,200 chunks: long enough to embed (tens of seconds on 2 cores) to stop it half way."""
    return make_repo({**_filler(60, 20), TARGET: TARGET_SOURCE})


def _manifest(root: Path) -> Path:
    return index_dir(root) / "manifest.sqlite"


def _db_counts(root: Path) -> dict[str, int] | None:
    """What the manifest holds now, read beside a writer: chunks embedded (state 1), waiting (0), and
    vectors kept by text; None before the manifest has its tables."""
    if not _manifest(root).exists():
        return None
    db = sqlite3.connect(_manifest(root), timeout=10)
    try:
        states = dict(db.execute("SELECT state, COUNT(*) FROM chunks GROUP BY state").fetchall())
        kept = db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0]
    except sqlite3.OperationalError:  # no tables yet
        return None
    finally:
        db.close()
    return {"embedded": states.get(1, 0), "pending": states.get(0, 0), "kept": kept,
            "total": states.get(1, 0) + states.get(0, 0)}


def _waiting_with_kept_vector(root: Path) -> int:
    """Chunks waiting for their vector whose text's vector the manifest keeps (the group in flight at a kill)."""
    db = sqlite3.connect(_manifest(root))
    try:
        kept = {row[0] for row in db.execute("SELECT key FROM vectors")}
        waiting = db.execute("SELECT path, name, text FROM chunks WHERE state = 0").fetchall()
        (embedder,) = db.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
    finally:
        db.close()

    keys = [vector_key(embedder, embedding_text(SimpleNamespace(path=path, name=name, text=text)))
            for path, name, text in waiting]
    return sum(key in kept for key in keys)


def _assert_consistent(root: Path) -> int:
    """No duplicate chunk, every file's row counts its chunks, no posting of a chunk that is gone;
    the number of chunks."""
    db = sqlite3.connect(_manifest(root))
    try:
        count, distinct = db.execute("SELECT COUNT(*), COUNT(DISTINCT id) FROM chunks").fetchone()
        assert count == distinct, "a chunk was written twice"
        rows = dict(db.execute("SELECT path, COUNT(*) FROM chunks GROUP BY path").fetchall())
        files = dict(db.execute("SELECT path, chunks FROM files WHERE chunks > 0").fetchall())
        assert rows == files, "a file's row must count exactly the chunks the index holds for it"
        orphans = db.execute("SELECT COUNT(*) FROM postings WHERE n NOT IN (SELECT n FROM chunks)").fetchone()[0]
        assert orphans == 0, f"{orphans} postings of chunks that are gone"
    finally:
        db.close()
    return count


def _wait(what: str, ready: Callable[[], bool], proc: subprocess.Popen | None = None, seconds: float = 300,
          every: float = 0.02) -> None:
    deadline = time.time() + seconds
    while not ready():
        if proc is not None and proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"the run ended (rc={proc.returncode}) before {what}\nstdout:\n{out}\nstderr:\n{err}")
        if time.time() > deadline:
            pytest.fail(f"{what}: not within {seconds} s")
        time.sleep(every)


def _embedded(root: Path, path: str) -> bool:
    """Whether every chunk of `path` has its vector."""
    db = sqlite3.connect(_manifest(root), timeout=10)
    try:
        return not db.execute("SELECT COUNT(*) FROM chunks WHERE path = ? AND state != 1", (path,)).fetchone()[0]
    finally:
        db.close()


def _partly_embedded(root: Path) -> bool:
    counts = _db_counts(root)
    return counts is not None and 0 < counts["embedded"] < counts["total"]


@pytest.fixture
def spawn():
    """Start the CLI in the background; whatever is still running at the end is woken and killed."""
    started: list[subprocess.Popen] = []

    def start(*args: str, env: dict | None = None, **kwargs) -> subprocess.Popen:
        proc = subprocess.Popen([*CLI, *args], env={**os.environ, **(env or {})}, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, **kwargs)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.send_signal(signal.SIGCONT)
            proc.kill()
            proc.communicate(timeout=60)


def _search(root: Path, env: dict | None = None) -> tuple[list[str], str]:
    """The CLI's search for QUERY: the paths it ranks, and what it said on stderr."""
    proc = run_cli("search", QUERY, "--json", "--no-llm", "-k", "5", "-C", str(root), env=env)
    return [hit["path"] for hit in json.loads(proc.stdout)], proc.stderr


# -- 1. a search while embedding is under way, then after ---------------------------------------


@pytest.mark.slow
def test_a_search_while_embedding_answers_from_what_is_written_and_says_how_much(make_repo, spawn):
    root = _embedding_repo(make_repo)
    indexing = spawn("index", str(root), "--json", env=GROUPS)
    _wait("some but not all chunks were embedded", lambda: _partly_embedded(root), indexing)
    indexing.send_signal(signal.SIGSTOP)
    try:
        held = _db_counts(root)  # read with the run stopped: what the search must see
        assert held is not None and 0 < held["embedded"] < held["total"], f"stopped too late: {held}"
        target_embedded = _embedded(root, TARGET)  # most likely not: the words alone must find it
        during, said = _search(root, env=GROUPS)
    finally:
        indexing.send_signal(signal.SIGCONT)
    print(f"\nstopped at {held['embedded']} of {held['total']} embedded ({TARGET} embedded: {target_embedded}); "
          f"ranking while embedding: {during}")
    assert during and during[0] == TARGET, f"ranking while embedding: {during}\n{said}"
    assert f"not yet embedded: dense search covers {held['embedded']:,} of {held['total']:,} chunks" in said, said
    assert "the index is being updated by another run; searching it as it is" in said, said

    out, err = indexing.communicate(timeout=600)
    assert indexing.returncode == 0, err
    summary = json.loads(out)
    assert summary["dense"] == {"embedded": summary["chunks"], "total": summary["chunks"]}
    assert summary["chunks"] == held["total"]

    after, said = _search(root, env=GROUPS)
    print(f"ranking once embedded: {after}")
    assert "not yet embedded" not in said and "being updated" not in said, said
    assert after and after[0] == TARGET, f"ranking once embedded: {after} (while embedding: {during})\n{said}"
    assert _assert_consistent(root) == held["total"]


# -- 2. kill -9 while embedding: the next run resumes without embedding anything twice ------------


def _stop_in_flight(root: Path, proc: subprocess.Popen, seconds: float = 300) -> dict[str, int]:
    """Stop `proc` (SIGSTOP) once some chunks are embedded, preferably with a group in flight (its vectors
    kept by text, not yet marked embedded), else once over a third are embedded; what the manifest holds then."""
    deadline = time.time() + seconds
    while True:
        if proc.poll() is not None:
            pytest.fail(f"the run ended (rc={proc.returncode}) before it could be killed while embedding")
        if time.time() > deadline:
            pytest.fail(f"no chunk embedded within {seconds} s")
        proc.send_signal(signal.SIGSTOP)
        counts = _db_counts(root)
        if counts and 0 < counts["embedded"] < counts["total"] and (
                counts["kept"] > counts["embedded"] or 3 * counts["embedded"] > counts["total"]):
            return counts
        proc.send_signal(signal.SIGCONT)
        time.sleep(0.01)


# The static model embeds about 2,000 chunks a second: smaller groups give it as many points to stop at.
EMBEDDERS = {"bundled": GROUPS, "static": {"CODEASST_INDEX__GROUP_CHUNKS": "8"}}


@pytest.mark.slow
@pytest.mark.parametrize("embedder", sorted(EMBEDDERS))
def test_kill_9_while_embedding_resumes_without_embedding_anything_twice(make_repo, spawn, embedder):
    root = _embedding_repo(make_repo)
    env = {**EMBEDDERS[embedder], "CODEASST_EMBEDDER__MODEL": embedder}
    indexing = spawn("index", str(root), "--json", env=env)
    held = _stop_in_flight(root, indexing)
    indexing.kill()
    indexing.communicate(timeout=60)
    assert indexing.returncode == -signal.SIGKILL
    before = held["embedded"]
    in_flight = _waiting_with_kept_vector(root)  # the group under way whose vectors were kept, if any
    print(f"\nkilled at {before} of {held['total']} embedded, {in_flight} vectors kept but not marked")

    status = run_json("status", "-C", str(root), env=env)
    assert status["dense"] == {"embedded": before, "total": held["total"]}
    if status["store_problem"] is not None:  # killed between storing a group's vectors and marking them
        assert f"the manifest counts {before:,} vectors but" in status["store_problem"], status["store_problem"]

    resumed = run_json("index", str(root), env=env)
    total = held["total"]
    assert resumed["dense"] == {"embedded": total, "total": total}
    assert resumed["chunks_written"] == 0, "the lexical phase had ended: nothing is chunked again"
    assert resumed["embedded"] + before == total, "each chunk is embedded once, those of the group in flight too"
    assert resumed["vectors_reused"] == in_flight, "the group in flight costs no model work: its vectors were kept"
    assert resumed["embedded"] - resumed["vectors_reused"] == total - before - in_flight
    if status["store_problem"] is not None:
        assert resumed["repaired"], "a store that disagreed with the manifest is mended, and said so"

    assert _assert_consistent(root) == total
    assert run_json("status", "-C", str(root), env=env)["store_problem"] is None
    try:
        store = build_services(root, {"embedder.model": embedder}).open_store()
        assert store.count() == total and len(set(store.ids())) == total, "no duplicate vector"
    finally:
        SharedSystemClient.clear_system_cache()


# -- 3. kill -9 in the lexical phase --------------------------------------------------------------

_KILLED_RUN = """
import json, os, signal, sys
from pathlib import Path
from codeasst.backends.fake import HashingEmbedder
from codeasst.index import chunkdb
from codeasst.index.indexer import Indexer
from codeasst.index.manifest import Manifest
from codeasst.services import build_services

root, where, log = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
committed = []  # the files of each group whose transaction committed

def die():
    log.write_text(json.dumps(committed))
    os.kill(os.getpid(), signal.SIGKILL)

write_files, chunk_file, add = Manifest.write_files, Indexer._chunk_file, chunkdb.ChunkTable.add

def writing(self, entries, chunks):
    dropped = write_files(self, entries, chunks)
    committed.append([e.path for e in entries])
    return dropped

after = 0  # files chunked since the second group was committed

def chunking(self, info, digest):
    global after
    if where == "between groups" and len(committed) >= 2:
        after += 1
        if after == 3:  # a few files into the next group, chunked but not written
            die()
    return chunk_file(self, info, digest)

def adding(self, chunks, embedded):
    add(self, chunks, embedded)
    if where == "inside a group's transaction" and len(committed) == 2:
        die()  # the third group's chunks and words inserted, not committed

Manifest.write_files, Indexer._chunk_file, chunkdb.ChunkTable.add = writing, chunking, adding
build_services(root, {"index.group_chunks": 16}, embedder=HashingEmbedder()).indexer().run(embed_limit=0)
"""


@pytest.mark.parametrize("where", ["between groups", "inside a group's transaction"])
def test_kill_9_in_the_lexical_phase_keeps_whole_groups_and_resumes_after_them(make_repo, tmp_path, where):
    # Files of 45 chunks, enough for three groups however many chunks a lexical group holds (at least
    # index.group_chunks, more where the indexer writes bigger transactions).
    group = max(16, getattr(indexer_module, "LEXICAL_GROUP", 0))
    files = {f"mod{i // 50}/file_{i:04}.py": "".join(
        f"def handler_{i}_{j}(request):\n    return request.reply({i}, {j})\n\n\n" for j in range(45))
        for i in range(max(300, 3 * group // 45 + 30))}
    root = make_repo(files)
    log = tmp_path / "committed.json"
    killed = subprocess.run([sys.executable, "-c", _KILLED_RUN, str(root), where, str(log)],
                            capture_output=True, text=True, timeout=300, check=False)
    assert killed.returncode == -signal.SIGKILL, (f"not killed (rc {killed.returncode}): the lexical phase never "
                                                  f"committed two groups?\n{killed.stderr}")
    committed = [path for group in json.loads(log.read_text()) for path in group]
    assert 0 < len(committed) < len(files)

    db = sqlite3.connect(_manifest(root))
    try:
        written = {row[0] for row in db.execute("SELECT path FROM files")}
    finally:
        db.close()
    assert written == set(committed), "the groups committed before the kill, wholly, and nothing of the next"
    chunks = _assert_consistent(root)
    assert chunks == 45 * len(committed) and _db_counts(root)["embedded"] == 0

    services = build_services(root, {"index.group_chunks": 16}, embedder=HashingEmbedder())
    summary = services.indexer().run(embed_limit=0)  # the lexical phase is the point: vectors would take seconds
    assert summary.unchanged == len(committed), "the files written before the kill are not chunked again"
    assert summary.added == len(files) - len(committed)
    assert summary.chunks_written == 45 * (len(files) - len(committed))
    assert summary.files == len(files) and summary.chunks == 45 * len(files)
    assert _assert_consistent(root) == 45 * len(files)


# -- 4. a file that changes while it is embedded --------------------------------------------------

OLD_BODY = "def settle(account):\n    return account.balance - account.overdraft_fee * penalty_rate\n"
NEW_BODY = "def settle(account):\n    return account.refund(deposit_receipt, currency_exchange)\n"


class RewritingEmbedder(HashingEmbedder):
    """Rewrites a file the first time it embeds: the file changes while its chunk is being embedded."""

    def __init__(self, path: Path, text: str) -> None:
        super().__init__()
        self.path, self.text, self.rewritten = path, text, False

    def embed(self, texts, progress=None):
        if not self.rewritten:
            self.path.write_text(self.text)
            self.rewritten = True
        return super().embed(texts, progress)


def test_a_file_changed_while_embedded_never_answers_with_its_old_vector(make_repo):
    root = make_repo({"app/ledger.py": OLD_BODY, **_filler(4, 3, prefix="lib")})
    embedder = RewritingEmbedder(root / "app/ledger.py", NEW_BODY)
    build_services(root, embedder=embedder).indexer().run()
    assert embedder.rewritten
    indexer = build_services(root, embedder=HashingEmbedder()).indexer()
    (old,) = indexer.reader().chunks_of(["app/ledger.py"])
    assert "overdraft_fee" in old.text, "the run read the file before it changed"
    assert indexer.status()["stale"]["modified"] == ["app/ledger.py"], "the change is seen by the next run"

    fake = HashingEmbedder()
    again = build_services(root, embedder=fake).indexer().run()
    assert again.changed == 1 and again.dense["embedded"] == again.dense["total"]
    services = build_services(root, embedder=fake)
    store = services.indexer().reader()
    (new,) = store.chunks_of(["app/ledger.py"])
    assert "refund" in new.text and new.id != old.id

    everything = store.count()
    for hit in store.query(fake._vector(embedding_text(old)), everything):
        assert hit.id != old.id, "a chunk the index no longer holds answered"
        assert hit.score < 0.999, f"the old text's vector answers for {hit.path} {hit.name}: {hit.text!r}"
        assert "overdraft_fee" not in hit.text
    (best,) = store.query(fake._vector(embedding_text(new)), 1)
    assert best.id == new.id and best.score > 0.999, "the new text has its own vector"
    assert set(services.open_store().ids()) == store.table.embedded_ids(), "the old vector left the store"


# -- 5. a query whose words are in tens of thousands of chunks ------------------------------------


@pytest.mark.slow  # 13-20 s on 2 cores: 40,000 chunks chunked, written and embedded (by the fake embedder)
def test_a_query_matching_tens_of_thousands_of_chunks_answers(make_repo, monkeypatch):
    # As where SQLite allows the fewest variables in a statement it ever has (999, its default before
    # 3.32; this build's may allow 250,000): a read not batched fails however big the build's limit.
    connect = sqlite3.connect

    def strict(*args, **kwargs):
        db = connect(*args, **kwargs)
        db.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 999)
        return db

    monkeypatch.setattr(sqlite3, "connect", strict)
    files = {f"lang{i % 40}/rule_{i}.py": "".join(
        f'def rule_{i}_{j}(node):\n    """Rule {j} of module {i}: how the grammar reads this statement."""\n'
        f"    return grammar.statement(node, {j})\n\n\n" for j in range(10)) for i in range(4000)}
    root = make_repo(files)
    # Small vectors and big groups: the fake embedder's cost is Chroma's, which grows with both.
    services = build_services(root, {"index.group_chunks": 2000}, embedder=HashingEmbedder(8))
    summary = services.indexer().run()
    assert summary.chunks >= 40_000 and summary.dense == {"embedded": summary.chunks, "total": summary.chunks}

    result = find(services, "how does the grammar handle a statement", 10, use_llm=False, update_index=False)
    assert len(result.hits) == 10
    assert all("grammar" in f.hit.text for f in result.hits)
    assert len(result.rankings["bm25-chunks"]) > 0 and len(result.rankings["dense"]) > 0, "both retrievers answer"
    assert not result.notes


# -- 6. a disk that fills ---------------------------------------------------------------------------

FILE_LIMIT = 1 << 20  # bytes a process may write to any one file: the manifest's log outgrows it


def _a_full_disk() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG) instead of killing
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_LIMIT, FILE_LIMIT))


@pytest.mark.slow
def test_a_disk_that_fills_ends_the_run_with_one_line_and_the_index_still_answers(make_repo):
    root = make_repo(REPO)
    built = run_json("index", str(root))
    search = ("search", "database table of users", "--json", "--no-llm", "-k", "3", "-C", str(root))
    lexical = {"CODEASST_INDEX__SEARCH_EMBED_LIMIT": "0"}  # a search that leaves the vectors to later

    # Chunks and words of about 2 MB: the lexical phase cannot write them under the limit.
    write_tree(root, {path: text * 2 for path, text in _filler(40, 60, prefix="more").items()})
    full = subprocess.run([*CLI, "index", str(root), "--json"], capture_output=True, text=True, timeout=600,
                          preexec_fn=_a_full_disk, check=False)
    print(f"\nthe lexical phase on a full disk: rc {full.returncode}, {full.stderr.strip()}")
    assert_one_line_error(full, 3, "the index could not be written")
    assert full.stdout == ""
    assert _db_counts(root)["embedded"] == built["chunks"]
    _assert_consistent(root)

    # The limit gone, a search answers from what was written, and writes the other files' chunks.
    assert json.loads(run_cli(*search, env=lexical).stdout)[0]["path"] == "db/schema.sql"
    waiting = _db_counts(root)
    assert waiting["pending"] > 0 and _assert_consistent(root) == waiting["total"]

    # The dense phase on a full disk: its vectors (kept in the manifest, stored in Chroma) cannot be written.
    full = subprocess.run([*CLI, "index", str(root), "--json"], capture_output=True, text=True, timeout=600,
                          preexec_fn=_a_full_disk, check=False, env={**os.environ, **GROUPS})
    print(f"the dense phase on a full disk: rc {full.returncode}, {full.stderr.strip()}")
    assert full.returncode in (3, 4), full.stderr
    assert_one_line_error(full, full.returncode, "the index could not be written" if full.returncode == 3
                          else "Chroma failed to store vectors")

    # The limit gone, the index still answers, and says how much dense search covers.
    proc = run_cli(*search, env=lexical)
    assert json.loads(proc.stdout)[0]["path"] == "db/schema.sql", proc.stderr
    assert "not yet embedded: dense search covers" in proc.stderr, proc.stderr
    status = run_json("status", "-C", str(root))
    assert status["store_problem"] is None, status["store_problem"]
    counts = _db_counts(root)
    assert status["dense"] == {"embedded": counts["embedded"], "total": counts["total"]}
    assert counts["embedded"] >= built["chunks"], "the vectors embedded before are all there"
    _assert_consistent(root)


# -- 7. two index runs at once ---------------------------------------------------------------------


@pytest.mark.slow
def test_a_second_index_run_is_refused_while_one_runs_and_succeeds_after(make_repo, spawn):
    root = make_repo(REPO)
    lock = index_dir(root) / "lock"
    first = spawn("index", str(root), "--json")
    _wait("the first run took the lock",
          lambda: lock.exists() and lock.read_text().strip() == f"pid {first.pid}", first, every=0.01)
    first.send_signal(signal.SIGSTOP)
    try:
        second = run_cli("index", str(root), "--json", check_rc=None)
    finally:
        first.send_signal(signal.SIGCONT)
    assert_one_line_error(second, 75, f"the index is being updated by pid {first.pid}")
    assert second.stdout == ""

    out, err = first.communicate(timeout=600)
    assert first.returncode == 0, err
    assert json.loads(out)["added"] == len(REPO)
    again = run_json("index", str(root))
    assert (again["unchanged"], again["chunks_written"]) == (len(REPO), 0)
