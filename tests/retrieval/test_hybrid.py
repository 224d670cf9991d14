"""Hybrid search: one permission mask for both retrievers, and the vector list's weight
for queries in CJK script (the default embedder is English-only)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from clearance.analysis import cjk_share
from clearance.llm.embedding import HashingEmbedder, Vectors
from clearance.model import Chunk, Document
from clearance.retrieval.hybrid import HybridSearcher
from clearance.store.base import SearchFilter
from clearance.store.sqlite import SQLiteStore
from factories import chunk, document

EVERYONE = SearchFilter(principals=frozenset({"everyone"}))


class CountingEmbedder:
    """The hashing fake, counting the texts it was asked to embed."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder(dim=32)
        self.name, self.dim = self.inner.name, self.inner.dim
        self.calls: list[str] = []

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls.extend(texts)
        return self.inner.embed(texts)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    db = SQLiteStore(tmp_path / "index.db")
    texts = {
        "files:ja-sales": "東京の売上高は前年より増えた",
        "files:ja-hr": "人事の規程と休暇の申請",
        "files:en-sales": "Tokyo revenue grew over the prior year",
        "files:en-hr": "Leave requests and HR rules",
    }
    embedder = HashingEmbedder(dim=32)
    for doc_id, text in texts.items():
        doc = document(
            doc_id, corpus="c", uri=f"file:{doc_id}", origin="files", content_hash=doc_id
        )
        db.upsert(doc, [chunk(doc, text, locator="lines=1-1")], list(embedder.embed([text])))
    with db:
        yield db


@pytest.mark.parametrize(
    ("text", "share"),
    [
        ("東京の売上高", 1.0),
        ("Tokyo revenue", 0.0),
        ("FY2024の売上", 3 / 9),
        ("売上 FY24", 2 / 6),
        ("？！ …", 0.0),
        ("", 0.0),
        ("한국어", 1.0),
    ],
)
def test_cjk_share_counts_letters_and_digits(text: str, share: float) -> None:
    assert cjk_share(text) == pytest.approx(share)


def test_a_cjk_query_at_weight_zero_is_lexical_only_and_never_embedded(store: SQLiteStore) -> None:
    embedder = CountingEmbedder()
    searcher = HybridSearcher(store, embedder, cjk_vector_weight=0.0)

    hits = searcher.search("東京の売上高", EVERYONE, 4)

    assert embedder.calls == []
    assert hits[0].chunk.chunk_id == "files:ja-sales#0"
    assert all(h.vector_rank is None for h in hits)
    lexical = store.lexical_search("東京の売上高", EVERYONE, 4)
    assert [h.chunk.chunk_id for h in hits] == [c for c, _ in lexical]


def test_a_latin_query_keeps_the_vector_list_whatever_the_cjk_weight(store: SQLiteStore) -> None:
    embedder = CountingEmbedder()
    searcher = HybridSearcher(store, embedder, cjk_vector_weight=0.0)

    hits = searcher.search("revenue Tokyo", EVERYONE, 4)

    assert embedder.calls == ["revenue Tokyo"]
    assert any(h.vector_rank is not None for h in hits)


def test_weight_one_fuses_a_cjk_query_like_any_other(store: SQLiteStore) -> None:
    embedder = CountingEmbedder()
    weighted = HybridSearcher(store, embedder, cjk_vector_weight=1.0).search(
        "東京の売上", EVERYONE, 4
    )
    vector = store.vector_search(embedder.inner.embed(["東京の売上"])[0], EVERYONE, 50)
    lexical = store.lexical_search("東京の売上", EVERYONE, 50)

    assert embedder.calls == ["東京の売上"]
    ranks = {h.chunk.chunk_id: (h.lexical_rank, h.vector_rank) for h in weighted}
    for cid, (lex, vec) in ranks.items():
        assert lex == next((i for i, (c, _) in enumerate(lexical, 1) if c == cid), None)
        assert vec == next((i for i, (c, _) in enumerate(vector, 1) if c == cid), None)
    assert any(vec is not None for _, vec in ranks.values())


def test_both_retrievers_see_one_mask(store: SQLiteStore) -> None:
    only = SearchFilter(principals=frozenset({"everyone"}), doc_ids=frozenset({"files:en-hr"}))
    embedder = CountingEmbedder()
    hits = HybridSearcher(store, embedder).search("revenue Tokyo leave", only, 4)
    assert [h.document.doc_id for h in hits] == ["files:en-hr"]
    assert np.isfinite([h.score for h in hits]).all()


def test_a_permission_revoked_between_ranking_and_reading_is_honoured(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ranking ran under the old ACL; the chunks are read after a revocation committed:
    the revoked document is not shown. Reverse proof: without the re-check it would be."""
    real_hits = store.hits

    def revoke_then_read(chunk_ids: Sequence[str]) -> list[tuple[Chunk, Document]]:
        store.set_acl("files:en-sales", frozenset({"user:someone-else"}))
        return real_hits(chunk_ids)

    monkeypatch.setattr(store, "hits", revoke_then_read)
    hits = HybridSearcher(store, None).search("revenue Tokyo", EVERYONE, 4)
    assert "files:en-sales" not in {h.document.doc_id for h in hits}

    store.set_acl("files:en-sales", frozenset({"everyone"}))
    monkeypatch.setattr(SearchFilter, "admits", lambda self, d, c=None: True)
    leaky = HybridSearcher(store, None).search("revenue Tokyo", EVERYONE, 4)
    assert "files:en-sales" in {h.document.doc_id for h in leaky}


def test_each_retrievers_first_hit_is_kept_among_the_fused() -> None:
    """RRF can push the chunk one retriever ranks first below chunks both rank middling:
    the README section answering "on which baselines are the projection errors
    calculated?" was the lexical first and sixth after fusion, so five hits missed it.
    Each list's first hit takes the place of the last fused one that is no list's first.
    Reverse proof: plain RRF leaves it out."""
    from clearance.retrieval.fusion import reciprocal_rank_fusion
    from clearance.retrieval.hybrid import _with_each_lists_first

    lexical = [("spring", 9.0), ("b", 8.0), ("c", 7.0), ("d", 6.0), ("e", 5.0), ("f", 4.0)]
    vector = [("b", 0.9), ("c", 0.8), ("d", 0.7), ("e", 0.6), ("f", 0.5), ("g", 0.4)]
    ranked = reciprocal_rank_fusion([[c for c, _ in lexical], [c for c, _ in vector]])
    assert "spring" not in [c for c, _ in ranked[:5]]  # what plain fusion does
    top = [c for c, _ in _with_each_lists_first(ranked, [lexical, vector], 5)]
    assert top == ["b", "c", "d", "e", "spring"]
    # a list's first already among the fused, an empty list, k=1: left as fused
    assert _with_each_lists_first(ranked, [vector, []], 5) == ranked[:5]
    assert [c for c, _ in _with_each_lists_first(ranked, [lexical, vector], 1)] == ["b"]


def test_a_hit_below_the_vector_list_carries_its_lowest_cosine(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lexical first kept among the hits although the vector search did not rank it
    carried no cosine, so the relevance gate judged it by words alone: "Is there a fitness
    benefit?" was answered with a designers' table row that shares only the stem "fit".
    Below a full vector list, its cosine is at most the list's lowest, which it carries.
    Reverse proof: with a vector list shorter than the pool (every embedded chunk in it), a
    chunk missing from it has no vector, and no cosine is given."""
    real = store.retrieve

    def without_the_lexical_first(query: str, vector: Any, flt: Any, k: int) -> Any:
        found = real(query, vector, flt, k + 1)  # a full list of k without it
        first = found.lexical[0][0]
        return type(found)(found.lexical[:k], [h for h in found.vector if h[0] != first][:k])

    monkeypatch.setattr(store, "retrieve", without_the_lexical_first)
    query = "Leave requests and HR rules"
    hits = HybridSearcher(store, CountingEmbedder(), candidates=2).search(query, EVERYONE, 2)
    outside = [h for h in hits if h.vector_rank is None]
    ranked = [h for h in hits if h.vector_rank is not None]
    assert len(outside) == 1 and ranked, hits
    vector = real(query, CountingEmbedder().inner.embed([query])[0], EVERYONE, 3).vector
    lowest = min([s for c, s in vector if c != outside[0].chunk.chunk_id][:2])
    assert outside[0].cosine == lowest
    assert all(h.cosine is not None and h.cosine >= lowest for h in ranked)

    short = HybridSearcher(store, CountingEmbedder(), candidates=50).search(query, EVERYONE, 2)
    assert [h.cosine for h in short if h.vector_rank is None] in ([], [None])
