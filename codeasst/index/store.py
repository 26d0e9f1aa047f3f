"""The vector store. This is the only module that imports chromadb."""

from __future__ import annotations

import shutil
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


def collection_name(root: Path) -> str:
    return "codeasst-" + repo_key(root)[-12:]


class ChunkStore:
    def __init__(self, client: Any, root: Path, location: str) -> None:
        self.client = client
        self.root = root
        self.location = location
        self.name = collection_name(root)
        with _chroma_errors("open the collection"):
            self.collection = client.get_or_create_collection(
                self.name,
                embedding_function=None,  # we always pass vectors; never fetch Chroma's default model
                configuration={"hnsw": {"space": "cosine"}},
                metadata={"root": str(root)},
            )

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
            return cls(client, root, chroma_url)
        location = index_dir / "chroma"
        with _chroma_errors(f"open {location}"):
            client = chromadb.PersistentClient(path=str(location), settings=chroma_settings)
        return cls(client, root, str(location))

    @staticmethod
    def destroy_local(index_dir: Path) -> None:
        """Delete an embedded store's files, whatever state they are in."""
        from chromadb.api.client import SharedSystemClient

        # Chroma caches one client per path; a cached one would keep writing to deleted files.
        SharedSystemClient.clear_system_cache()
        shutil.rmtree(index_dir / "chroma", ignore_errors=True)

    def count(self) -> int:
        with _chroma_errors("count chunks"):
            return self.collection.count()

    def replace(self, paths: Sequence[str], ids: Sequence[str], vectors: Sequence[Vector],
                documents: Sequence[str], metadatas: Sequence[dict[str, Any]]) -> None:
        """Drop every chunk of `paths`, then store the given chunks (which belong to them)."""
        self.delete_paths(paths)
        if ids:
            with _chroma_errors("store chunks"):
                self.collection.upsert(
                    ids=list(ids), embeddings=[list(v) for v in vectors],
                    documents=list(documents), metadatas=list(metadatas),
                )

    def delete_paths(self, paths: Sequence[str]) -> None:
        if paths:
            with _chroma_errors("delete chunks"):
                self.collection.delete(where={"path": {"$in": list(paths)}})

    def ids_for(self, path: str) -> list[str]:
        with _chroma_errors("read chunk ids"):
            return self.collection.get(where={"path": path}, include=[])["ids"]

    def query(self, vector: Vector, k: int) -> list[Hit]:
        with _chroma_errors("search"):
            result = self.collection.query(
                query_embeddings=[list(vector)], n_results=k,
                include=["documents", "metadatas", "distances"],
            )
        return [_hit(id_, doc, meta, 1.0 - dist) for id_, doc, meta, dist in
                zip(result["ids"][0], result["documents"][0], result["metadatas"][0], result["distances"][0],
                    strict=True)]

    def chunks_of(self, paths: Sequence[str]) -> list[Hit]:
        """Every chunk of the given files, with score 0."""
        if not paths:
            return []
        with _chroma_errors("read chunks"):
            result = self.collection.get(where={"path": {"$in": list(paths)}}, include=["documents", "metadatas"])
        return [_hit(id_, doc, meta, 0.0)
                for id_, doc, meta in zip(result["ids"], result["documents"], result["metadatas"], strict=True)]

    def drop(self) -> None:
        """Delete this repository's collection and start an empty one."""
        with _chroma_errors("delete the collection"):
            self.client.delete_collection(self.name)
        self.__init__(self.client, self.root, self.location)
