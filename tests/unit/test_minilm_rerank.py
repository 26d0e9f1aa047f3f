"""Reranking the first fused hits by a stronger embedder (MiniLM over static vectors): the logic, with
a fake embedder whose similarity is known; the real MiniLM runs in the retrieval eval."""

from __future__ import annotations

from codeasst.backends.fake import HashingEmbedder
from codeasst.index.chunkdb import Hit
from codeasst.retrieve.fuse import Fused
from codeasst.retrieve.rerank import by_embedder


def _fused(name: str, text: str, rank: int) -> Fused:
    hit = Hit(id=name, path=f"{name}.py", start_line=1, end_line=2, kind="function", name=name, language="python",
              text=text, score=0.0)
    return Fused(hit, 1 / (10 + rank), ("bm25-chunks",))


CANDIDATES = [
    _fused("alpha", "def alpha(): return render_template(page)", 1),
    _fused("bravo", "def bravo(): return open_socket(host)", 2),
    _fused("charlie", "def charlie(): refund the invoice payment to the customer account", 3),
    _fused("delta", "def delta(): pass", 4),
]


def test_the_hit_the_embedder_finds_closest_moves_up_and_the_rest_keep_their_order_after():
    question = "refund the invoice payment to the customer"
    even = by_embedder(HashingEmbedder(), question, CANDIDATES, 3, k=10)
    assert [f.hit.name for f in even][:1] == ["alpha"], "weighed as fusion's order, third cannot pass first"
    out = by_embedder(HashingEmbedder(), question, CANDIDATES, 3, k=10, weight=2.0)
    assert [f.hit.name for f in out][:1] == ["charlie"], "closest by the embedder, weighed twice: first"
    assert [f.hit.name for f in out][3:] == ["delta"], "beyond the budget, order is kept"
    assert sorted(f.hit.name for f in out) == sorted(f.hit.name for f in CANDIDATES), "nothing lost or added"


def test_a_budget_of_one_or_nothing_to_rerank_changes_nothing():
    assert by_embedder(HashingEmbedder(), "anything", CANDIDATES, 1, k=10) == CANDIDATES
    assert by_embedder(HashingEmbedder(), "anything", [], 5, k=10) == []
