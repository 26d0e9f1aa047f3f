"""`codeasst search`: hybrid retrieval, no answer."""

from __future__ import annotations

from codeasst.retrieve.fuse import Fused
from codeasst.retrieve.pipeline import Retrieval, retrieve
from codeasst.services import Services


def search(services: Services, query: str, k: int | None = None, use_llm: bool = True) -> Retrieval:
    return retrieve(services, query, k, use_llm=use_llm)


def hits_json(hits: list[Fused]) -> list[dict]:
    return [
        {"path": f.hit.path, "start_line": f.hit.start_line, "end_line": f.hit.end_line, "symbol": f.hit.name,
         "kind": f.hit.kind, "score": round(f.score, 4), "sources": list(f.sources)}
        for f in hits
    ]
