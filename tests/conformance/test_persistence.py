"""A store keeps everything across close and reopen, and a second handle on the same data
(another process, another API server) sees every committed write at once."""

from __future__ import annotations

from datetime import UTC, datetime

from clearance.store.base import Store
from conformance.backends import Stores
from conformance.common import TEXTS, everyone_filter, fact, make_doc, vector, vectors
from factories import chunks as make_chunks


def test_reopening_keeps_everything(stores: Stores) -> None:
    first = stores.new()
    doc, other = make_doc(), make_doc("files:b", corpus="hr", acl=frozenset())
    chunks = make_chunks(doc, TEXTS)
    at = datetime(2025, 1, 1, tzinfo=UTC)
    first.upsert(doc, chunks, vectors(TEXTS), facts=[fact(doc.doc_id)])
    first.upsert(other, make_chunks(other, ["hidden"]))
    first.set_meta("k", [1, "two"])
    first.record_acl_sync("wiki", at)  # type: ignore[attr-defined]
    lexical = first.lexical_search("tokyo", everyone_filter(), 5)
    found = first.vector_search(vector("Costs fell"), everyone_filter(), 5)
    stats = first.stats()
    first.close()

    again = stores.reopen(first)

    assert again.get_document(doc.doc_id) == doc
    assert again.get_chunks(doc.doc_id) == chunks
    assert again.list_documents() == [doc, other]
    assert again.get_meta("k") == [1, "two"]
    assert again.last_acl_syncs() == {"wiki": at}  # type: ignore[attr-defined]
    assert again.list_facts() == [fact(doc.doc_id)]  # type: ignore[attr-defined]
    assert again.lexical_search("tokyo", everyone_filter(), 5) == lexical
    assert again.vector_search(vector("Costs fell"), everyone_filter(), 5) == found
    assert lexical[0][0] == "files:a.md#1"
    reopened = again.stats()
    assert (reopened.documents, reopened.chunks, reopened.vectors) == (2, 4, 3)
    assert (reopened.by_corpus, reopened.by_sensitivity) == (stats.by_corpus, stats.by_sensitivity)


def test_a_second_handle_sees_every_write_at_once(stores: Stores) -> None:
    writer = stores.new()
    reader = stores.reopen(writer)
    probe = vector("x")
    assert reader.vector_search(probe, everyone_filter(), 3) == []
    assert reader.lexical_search("revenue", everyone_filter(), 3) == []

    doc = make_doc()
    writer.upsert(doc, make_chunks(doc, TEXTS), vectors(TEXTS))
    assert len(reader.vector_search(probe, everyone_filter(), 3)) == 3
    assert len(reader.lexical_search("revenue", everyone_filter(), 3)) == 1

    writer.set_acl(doc.doc_id, frozenset({"user:zed"}))  # a revocation is never served stale
    assert reader.vector_search(probe, everyone_filter(), 3) == []
    assert reader.lexical_search("revenue", everyone_filter(), 3) == []

    writer.set_acl(doc.doc_id, frozenset({"user:bob"}))
    writer.set_meta("k", 1)
    assert len(reader.lexical_search("revenue", everyone_filter(), 3)) == 1
    assert reader.get_meta("k") == 1

    writer.delete(doc.doc_id)
    assert reader.vector_search(probe, everyone_filter(), 3) == []
    assert reader.get_document(doc.doc_id) is None


def test_a_closed_empty_store_reopens_empty(stores: Stores) -> None:
    store: Store = stores.new()
    store.close()
    again = stores.reopen(store)
    assert again.list_documents() == []
    assert again.stats().documents == 0
