"""The vector store: one vector per embedded chunk, by the chunk's id. This is the only module
that imports chromadb. The chunks themselves (text, place, words) live in the manifest's
database (codeasst.index.chunkdb); a vector whose id the manifest no longer holds never answers."""

from __future__ import annotations

import getpass
import hashlib
import shutil
import socket
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from codeasst.backends.base import Vector
from codeasst.errors import IndexCorrupt, StoreError
from codeasst.paths import repo_key

BATCH = 500  # ids per request: far under the SQLite variable limit of Chroma's own database


@contextmanager
def _chroma_errors(what: str, corrupt_means_index: bool = True) -> Iterator[None]:
    from chromadb.errors import ChromaError

    try:
        yield
    except ChromaError as exc:
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if corrupt_means_index and ("not a database" in text or "malformed" in text or "corrupt" in text):
            raise IndexCorrupt(f"the index is corrupted ({what}: {text})") from None
        raise StoreError(f"Chroma failed to {what}: {text}") from None
    except ValueError as exc:  # chromadb validates arguments with ValueError
        raise StoreError(f"Chroma failed to {what}: {exc}") from None


def store_identity(index_dir: Path) -> str:
    """A random id for this index, kept beside its manifest and made once.

    The collection is named by it, so two users' checkouts at the same path, sharing one
    Chroma server, never write to (or --rebuild) each other's collection."""
    path = index_dir / "store-id"
    try:
        return path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        pass
    index_dir.mkdir(parents=True, exist_ok=True)
    identity = uuid.uuid4().hex
    try:
        with path.open("x", encoding="ascii") as fh:  # a concurrent first run keeps the id that won
            fh.write(identity)
    except FileExistsError:
        return path.read_text(encoding="ascii").strip()
    return identity


def collection_prefix(root: Path, identity: str) -> str:
    """What the names of one index's collections (one per embedder) begin with."""
    # Chroma allows 3-512 characters of [A-Za-z0-9._-], starting and ending with a letter or digit.
    return f"codeasst-{repo_key(root)[:40].strip('-_.')}-{identity[:16]}-"


def collection_name(root: Path, identity: str, embedder: str) -> str:
    """The collection of one index's vectors from one embedder: each embedder keeps its own, so a change
    of embedder neither mixes vectors nor throws away the other's."""
    return collection_prefix(root, identity) + hashlib.sha256(embedder.encode()).hexdigest()[:12]


def location_of(chroma_url: str | None) -> str:
    """Where the vectors live, as the index fingerprint records it."""
    return chroma_url.rstrip("/") if chroma_url else "embedded"


_clients: dict[str, object] = {}  # embedded store folder -> its Chroma client, for this process
_clients_lock = threading.Lock()

class VectorStore:
    """One repository's collection. It is created on the first write, so that reading
    an index whose collection is gone says so instead of answering from an empty one."""

    def __init__(self, client: Any, root: Path, location: str, identity: str, embedder: str) -> None:
        self.client = client
        self.root = root
        self.location = location
        self.embedder = embedder
        self.prefix = collection_prefix(root, identity)
        self.name = collection_name(root, identity, embedder)
        self.collection = None
        from chromadb.errors import NotFoundError

        with _chroma_errors("open the collection"):
            try:
                self.collection = client.get_collection(self.name, embedding_function=None)
            except NotFoundError:
                pass  # never written, or deleted: `exists` says so

    @property
    def exists(self) -> bool:
        return self.collection is not None

    def _writable(self) -> Any:
        if self.collection is None:
            with _chroma_errors("create the collection"):
                self.collection = self.client.get_or_create_collection(
                    self.name,
                    embedding_function=None,  # we always pass vectors; never fetch Chroma's default model
                    configuration={"hnsw": {"space": "cosine"}},
                    metadata={"root": str(self.root), "user": getpass.getuser(), "host": socket.gethostname(),
                              "embedder": self.embedder},
                )
        return self.collection

    @classmethod
    def open(cls, root: Path, index_dir: Path, embedder: str, chroma_url: str | None = None) -> VectorStore:
        """The collection of `embedder`'s vectors of the index in `index_dir`."""
        # Deferred: chromadb takes about two seconds to import.
        import chromadb
        from chromadb.config import Settings as ChromaSettings

        chroma_settings = ChromaSettings(anonymized_telemetry=False)
        if chroma_url:
            url = urlparse(chroma_url)
            if url.scheme not in ("http", "https") or not url.hostname:
                raise StoreError(f"store.chroma_url must look like http://host:port, got {chroma_url!r}")
            try:
                client = chromadb.HttpClient(
                    host=url.hostname, port=url.port or (443 if url.scheme == "https" else 8000),
                    ssl=url.scheme == "https", settings=chroma_settings,
                )
            except (ValueError, ConnectionError) as exc:
                raise StoreError(f"cannot reach the Chroma server at {chroma_url}: {exc}") from None
            return cls(client, root, chroma_url, store_identity(index_dir), embedder)
        location = index_dir / "chroma"
        # One client per folder per process, made under a lock: Chroma shares one system per folder
        # between its clients and is not safe to start from two threads at once (a client that fails
        # to start releases the shared system under the other: `codeasst serve` answering /v1/status
        # while it embeds in the background got a KeyError).
        with _clients_lock:
            client = _clients.get(str(location))
            if client is None:
                with _chroma_errors(f"open {location}"):
                    client = chromadb.PersistentClient(path=str(location), settings=chroma_settings)
                _clients[str(location)] = client
        return cls(client, root, str(location), store_identity(index_dir), embedder)

    @staticmethod
    def close_local(index_dir: Path) -> None:
        """Let go of this process's client of an embedded store, so the next open reads the files afresh:
        a long-lived process that writes between other processes' writes (the background embedder)
        must never serve or persist a vector index older than theirs."""
        from chromadb.api.client import SharedSystemClient

        with _clients_lock:
            if _clients.pop(str(index_dir / "chroma"), None) is not None:
                SharedSystemClient.clear_system_cache()

    @staticmethod
    def destroy_local(index_dir: Path) -> None:
        """Delete an embedded store's files, whatever state they are in."""
        from chromadb.api.client import SharedSystemClient

        # Chroma caches one client per path; a cached one would keep writing to deleted files.
        with _clients_lock:
            _clients.pop(str(index_dir / "chroma"), None)
            SharedSystemClient.clear_system_cache()
        shutil.rmtree(index_dir / "chroma", ignore_errors=True)

    def count(self) -> int:
        if self.collection is None:
            return 0
        with _chroma_errors("count chunks"):
            return self.collection.count()

    def upsert(self, ids: Sequence[str], vectors: Sequence[Vector], paths: Sequence[str]) -> None:
        if ids:
            with _chroma_errors("store vectors"):
                self._writable().upsert(ids=list(ids), embeddings=[list(v) for v in vectors],
                                        metadatas=[{"path": p} for p in paths])

    def delete_ids(self, ids: Sequence[str]) -> None:
        if not ids or self.collection is None:
            return
        with _chroma_errors("delete vectors"):
            for start in range(0, len(ids), BATCH):  # Chroma's SQLite caps the variables of one statement
                self.collection.delete(ids=list(ids[start : start + BATCH]))

    def query(self, vector: Vector, k: int) -> list[tuple[str, float]]:
        """The ids of the `k` nearest vectors with their cosine similarity, nearest first."""
        if self.collection is None or k <= 0:
            return []
        with _chroma_errors("search"):
            result = self.collection.query(query_embeddings=[list(vector)], n_results=k, include=["distances"])
        return [(id_, 1.0 - dist) for id_, dist in zip(result["ids"][0], result["distances"][0], strict=True)]

    def ids(self) -> list[str]:
        """Every stored vector's id (a chunk id: codeasst.index.fingerprint.chunk_id)."""
        if self.collection is None:
            return []
        with _chroma_errors("read vector ids"):
            return self.collection.get(include=[])["ids"]

    def drop(self) -> None:
        """Delete this index's own collections, one per embedder (and nobody else's); the next write
        makes a new one."""
        with _chroma_errors("delete the collections"):
            for collection in self.client.list_collections():
                if collection.name.startswith(self.prefix):
                    self.client.delete_collection(collection.name)
        self.collection = None
