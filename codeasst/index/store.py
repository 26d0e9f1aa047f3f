"""The vector store. This is the only module that imports chromadb."""

from __future__ import annotations

import getpass
import shutil
import socket
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from codeasst.backends.base import Vector
from codeasst.errors import IndexCorrupt, StoreError
from codeasst.paths import repo_key


@dataclass(frozen=True)
class Hit:
    id: str
    path: str
    start_line: int
    end_line: int
    kind: str
    name: str
    language: str
    text: str
    score: float  # cosine similarity, higher is closer
    role: str = "implementation"  # the file's role (codeasst.index.roles), filled in by retrieval


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


def _hit(id_: str, document: str, meta: dict[str, Any], score: float) -> Hit:
    return Hit(id=id_, path=meta["path"], start_line=meta["start_line"], end_line=meta["end_line"],
               kind=meta["kind"], name=meta["name"], language=meta["language"], text=document, score=score)


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


def collection_name(root: Path, identity: str) -> str:
    # Chroma allows 3-512 characters of [A-Za-z0-9._-], starting and ending with a letter or digit.
    return f"codeasst-{repo_key(root)[:40].strip('-_.')}-{identity[:16]}"


def location_of(chroma_url: str | None) -> str:
    """Where the vectors live, as the index fingerprint records it."""
    return chroma_url.rstrip("/") if chroma_url else "embedded"


class ChunkStore:
    """One repository's collection. It is created on the first write, so that reading
    an index whose collection is gone says so instead of answering from an empty one."""

    def __init__(self, client: Any, root: Path, location: str, identity: str) -> None:
        self.client = client
        self.root = root
        self.location = location
        self.name = collection_name(root, identity)
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
                    metadata={"root": str(self.root), "user": getpass.getuser(), "host": socket.gethostname()},
                )
        return self.collection

    @classmethod
    def open(cls, root: Path, index_dir: Path, chroma_url: str | None = None) -> ChunkStore:
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
            return cls(client, root, chroma_url, store_identity(index_dir))
        location = index_dir / "chroma"
        with _chroma_errors(f"open {location}"):
            client = chromadb.PersistentClient(path=str(location), settings=chroma_settings)
        return cls(client, root, str(location), store_identity(index_dir))

    @staticmethod
    def destroy_local(index_dir: Path) -> None:
        """Delete an embedded store's files, whatever state they are in."""
        from chromadb.api.client import SharedSystemClient

        # Chroma caches one client per path; a cached one would keep writing to deleted files.
        SharedSystemClient.clear_system_cache()
        shutil.rmtree(index_dir / "chroma", ignore_errors=True)

    def count(self) -> int:
        if self.collection is None:
            return 0
        with _chroma_errors("count chunks"):
            return self.collection.count()

    def replace(self, paths: Sequence[str], ids: Sequence[str], vectors: Sequence[Vector],
                documents: Sequence[str], metadatas: Sequence[dict[str, Any]]) -> None:
        """Drop every chunk of `paths`, then store the given chunks (which belong to them)."""
        self.delete_paths(paths)
        if ids:
            with _chroma_errors("store chunks"):
                self._writable().upsert(
                    ids=list(ids), embeddings=[list(v) for v in vectors],
                    documents=list(documents), metadatas=list(metadatas),
                )

    def delete_paths(self, paths: Sequence[str]) -> None:
        if paths and self.collection is not None:
            with _chroma_errors("delete chunks"):
                self.collection.delete(where={"path": {"$in": list(paths)}})

    def ids_for(self, path: str) -> list[str]:
        if self.collection is None:
            return []
        with _chroma_errors("read chunk ids"):
            return self.collection.get(where={"path": path}, include=[])["ids"]

    def query(self, vector: Vector, k: int) -> list[Hit]:
        if self.collection is None:
            return []
        with _chroma_errors("search"):
            result = self.collection.query(
                query_embeddings=[list(vector)], n_results=k,
                include=["documents", "metadatas", "distances"],
            )
        return [_hit(id_, doc, meta, 1.0 - dist) for id_, doc, meta, dist in
                zip(result["ids"][0], result["documents"][0], result["metadatas"][0], result["distances"][0],
                    strict=True)]

    def ids(self) -> list[str]:
        """Every chunk's id (ids are content hashes: codeasst.index.indexer.chunk_id)."""
        if self.collection is None:
            return []
        with _chroma_errors("read chunk ids"):
            return self.collection.get(include=[])["ids"]

    def chunks_by_id(self, ids: Sequence[str]) -> list[Hit]:
        """The chunks with these ids, in their order, with score 0; ids the store lacks are left out."""
        if not ids or self.collection is None:
            return []
        with _chroma_errors("read chunks"):
            result = self.collection.get(ids=list(ids), include=["documents", "metadatas"])
        found = {id_: _hit(id_, doc, meta, 0.0)
                 for id_, doc, meta in zip(result["ids"], result["documents"], result["metadatas"], strict=True)}
        return [found[id_] for id_ in ids if id_ in found]

    def chunks_of(self, paths: Sequence[str]) -> list[Hit]:
        """Every chunk of the given files, with score 0."""
        if not paths or self.collection is None:
            return []
        with _chroma_errors("read chunks"):
            result = self.collection.get(where={"path": {"$in": list(paths)}}, include=["documents", "metadatas"])
        return [_hit(id_, doc, meta, 0.0)
                for id_, doc, meta in zip(result["ids"], result["documents"], result["metadatas"], strict=True)]

    def drop(self) -> None:
        """Delete this index's own collection (and nobody else's); the next write makes a new one."""
        if self.collection is None:
            return
        with _chroma_errors("delete the collection"):
            self.client.delete_collection(self.name)
        self.collection = None
