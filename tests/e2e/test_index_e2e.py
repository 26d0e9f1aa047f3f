"""`codeasst index`, `status` and `search` end to end: real tree-sitter, embedder and Chroma."""

from __future__ import annotations

import json
import shutil
import signal
import sqlite3
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest

from codeasst.config import IndexSettings
from codeasst.index import chunker
from codeasst.index.indexer import chunk_id
from codeasst.paths import index_dir
from tests.conftest import write_tree
from tests.e2e.conftest import run_cli, run_json

PROJECT_ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow

REPO = {
    "billing/invoice.py": (
        "from decimal import Decimal\n\nTAX_RATE = Decimal('0.2')\n\n\n"
        "class Invoice:\n    def __init__(self, lines):\n        self.lines = lines\n\n"
        "    def total(self):\n        subtotal = sum(l.price * l.qty for l in self.lines)\n"
        "        return subtotal * (1 + TAX_RATE)\n"
    ),
    "auth/login.ts": (
        "export async function login(user: string, password: string): Promise<string> {\n"
        "  const hash = await hashPassword(password);\n  return issueToken(user, hash);\n}\n"
    ),
    "db/schema.sql": "CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT NOT NULL);\n",
    "docs/deploy.md": "# Deploying\n\nBuild the docker image, then push it to the registry.\n",
    "server/router.go": (
        "package server\n\nfunc RegisterRoutes(mux *Mux) {\n\tmux.Handle(\"/health\", health)\n}\n"
    ),
}


def test_index_search_status_and_incremental_updates(make_repo, tmp_path):
    root = make_repo(REPO)
    first = run_json("index", str(root))
    assert (first["added"], first["files"], first["deleted"]) == (5, 5, 0)
    assert first["chunks"] == first["chunks_written"] >= 5

    hits = run_json("search", "compute the invoice total with tax", "-k", "3", cwd=root / "docs")
    assert hits[0]["path"] == "billing/invoice.py"
    assert {"path", "start_line", "end_line", "symbol", "score", "sources"} <= set(hits[0])
    hits = run_json("search", "user password authentication token", "-k", "1", cwd=root)
    assert hits[0]["path"] == "auth/login.ts" and hits[0]["symbol"] == "auth.login"

    status = run_json("status", "-C", str(root))
    assert status["files"] == 5 and not any(status["stale"].values())

    (root / "docs/deploy.md").write_text("# Deploying\n\nUse the helm chart in deploy/.\n")
    (root / "db/schema.sql").unlink()
    write_tree(root, {"api/health.py": "def health():\n    return 'ok'\n"})
    status = run_json("status", "-C", str(root))
    assert status["stale"] == {"added": ["api/health.py"], "modified": ["docs/deploy.md"],
                               "deleted": ["db/schema.sql"]}
    again = run_json("index", str(root))
    assert (again["added"], again["changed"], again["deleted"], again["unchanged"]) == (1, 1, 1, 3)
    noop = run_json("index", str(root))
    assert (noop["chunks_written"], noop["unchanged"]) == (0, 5)

    text = run_cli("index", str(root)).stdout
    assert text.startswith("Indexed 5 files, ")


def test_static_first_then_minilm_and_switching_keeps_each_ones_vectors(make_repo):
    root = make_repo(REPO)
    first = run_json("index", str(root))  # the default: static vectors first, then MiniLM's
    chunks = first["chunks"]
    assert first["embedded"] == first["final_embedded"] == chunks and first["embedder_changed"] is None
    status = run_json("status", "-C", str(root))
    assert status["embedder"] == "sentence-transformers:all-MiniLM-L6-v2" and status["first_phase"] is None
    assert status["dense"] == {"embedded": chunks, "total": chunks}

    static = {"CODEASST_EMBEDDER__MODEL": "static"}
    status = run_json("status", "-C", str(root), env=static)
    assert status["embedder_changed"] == {"from": "sentence-transformers:all-MiniLM-L6-v2",
                                          "to": status["embedder"]}
    to_static = run_json("index", str(root), env=static)  # its first-phase vectors were kept: nothing to embed
    assert to_static["embedded"] == 0 and to_static["chunks_written"] == 0 and to_static["rebuilt"] is None
    assert f"{chunks:,} vectors kept" in to_static["embedder_changed"]
    hits = run_json("search", "user password authentication token", "-k", "1", "--no-llm", "-C", str(root), env=static)
    assert hits[0]["path"] == "auth/login.ts" and "dense" in hits[0]["sources"]

    # Back to the default through a search: MiniLM's vectors were kept too; none is embedded again.
    search = run_cli("search", "compute the invoice total with tax", "-k", "3", "--json", "--no-llm", "-C", str(root))
    assert json.loads(search.stdout)[0]["path"] == "billing/invoice.py"
    assert "vectors are" not in search.stderr and "static vectors" not in search.stderr, search.stderr
    back = run_json("index", str(root))
    assert back["embedded"] == back["final_embedded"] == 0 and back["embedder_changed"] is None
    assert run_json("status", "-C", str(root))["dense"] == {"embedded": chunks, "total": chunks}


CLICK_FILES = ("utils.py", "decorators.py", "exceptions.py", "parser.py", "formatting.py")  # about 170 chunks


def _click_subset(dest: Path) -> Path:
    src = Path(sysconfig.get_paths()["purelib"]) / "click"
    dest.mkdir()
    subprocess.run(["git", "init", "-q", str(dest)], check=True)
    for name in CLICK_FILES:
        shutil.copy(src / name, dest / name)
    return dest


def _expected_ids(root: Path) -> set[str]:
    ids = set()
    cfg = IndexSettings()
    for path in sorted(root.glob("*.py")):
        ids |= {chunk_id(c) for c in chunker.chunk_file(path.name, path.read_text(), cfg.chunk_chars,
                                                           cfg.overlap_lines)}
    return ids


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_an_interrupted_run_resumes_with_no_duplicate_and_no_loss(tmp_path, sig):
    root = _click_subset(tmp_path / "click")
    env = {"CODEASST_INDEX__GROUP_CHUNKS": "16"}
    # SIGINT as a terminal's Ctrl-C meets it, however the suite was started (tests/sigint_default.py).
    proc = subprocess.Popen([sys.executable, "-m", "tests.sigint_default", "codeasst.cli", "index", str(root)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**__import__("os").environ, "PYTHONPATH": str(PROJECT_ROOT), **env})
    manifest = index_dir(root) / "manifest.sqlite"
    deadline = time.time() + 300
    recorded = 0
    while time.time() < deadline and proc.poll() is None:
        if manifest.exists():
            try:  # interrupted while embedding: the lexical phase is done and some vectors are stored
                with sqlite3.connect(manifest) as db:
                    recorded = db.execute("SELECT count(*) FROM chunks WHERE state = 1").fetchone()[0]
            except sqlite3.OperationalError:
                recorded = 0
            if recorded:
                break
        time.sleep(0.2)
    assert proc.poll() is None, "the run finished before it could be interrupted"
    proc.send_signal(sig)
    _out, err = proc.communicate(timeout=60)
    if sig == signal.SIGINT:
        assert proc.returncode == 130, err
        assert "interrupted; the index is consistent" in err and "Traceback" not in err
    else:
        assert proc.returncode == -signal.SIGKILL

    resumed = run_json("index", str(root), env=env)
    assert resumed["added"] + resumed["unchanged"] == len(CLICK_FILES)
    assert resumed["unchanged"] == len(CLICK_FILES), "every file was written before embedding began: none is redone"
    assert resumed["embedded"] < resumed["chunks"], "the vectors stored before the interruption are not redone"

    from chromadb import PersistentClient
    from chromadb.config import Settings

    client = PersistentClient(str(index_dir(root) / "chroma"), Settings(anonymized_telemetry=False))
    collections = client.list_collections()  # the static first phase's vectors and MiniLM's
    assert {c.metadata["embedder"].split(":")[0] for c in collections} == {"static", "sentence-transformers"}
    for collection in collections:
        ids = collection.get(include=[])["ids"]
        assert len(ids) == len(set(ids)) == resumed["chunks"], collection.metadata["embedder"]
        assert set(ids) == _expected_ids(root)
