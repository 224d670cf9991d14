"""Writes: a document round-trips with every field; ``upsert`` replaces a document whole
and atomically (a refused or failing replace leaves the old version exactly as it was);
``delete`` purges chunks, vectors, facts and the ACL. The reverse proof: a delete that only
hides the document (empties its ACL) fails the purge check."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import numpy as np
import pytest

from clearance.errors import StoreError
from clearance.llm.embedding import HashingEmbedder
from clearance.model import Chunk, Document, Sensitivity
from clearance.store.base import Store
from conformance.common import (
    EVERYONE,
    TEXTS,
    everyone_filter,
    fact,
    make_doc,
    vector,
    vectors,
)
from conformance.leaks import SoftDelete
from factories import chunks as make_chunks


def test_round_trip_keeps_every_field_with_datetimes_in_utc(store: Store) -> None:
    doc = make_doc()
    chunks = make_chunks(doc, TEXTS)
    store.upsert(doc, chunks, vectors(TEXTS))

    got = store.get_document(doc.doc_id)

    assert got == doc  # datetimes compare as instants
    assert got is not None
    for name in ("created_at", "updated_at", "review_at", "expires_at"):
        assert getattr(got, name).tzinfo == UTC, name
    assert got.created_at == datetime(2024, 1, 2, 0, 30, tzinfo=UTC)
    assert got.updated_at is not None and got.updated_at.microsecond == 123456
    assert got.extra == {"meta_hash": "m1", "nested": {"n": [1, 2]}}
    assert store.get_chunks(doc.doc_id) == chunks
    assert store.content_hash(doc.doc_id) == "hash-1"  # type: ignore[attr-defined]


def test_optional_fields_round_trip_as_none(store: Store) -> None:
    doc = make_doc(
        owner=None,
        created_at=None,
        updated_at=None,
        review_at=None,
        expires_at=None,
        path=None,
        acl=frozenset(),
        origin_chain=(),
        extra={},
    )
    store.upsert(doc, make_chunks(doc, ["x"]))

    assert store.get_document(doc.doc_id) == doc


def test_chunks_keep_their_own_sensitivity_locator_and_origin(store: Store) -> None:
    doc = make_doc()
    chunks = [
        Chunk("files:a.md#0", doc.doc_id, 0, "open", "page=1", Sensitivity.INTERNAL, "human"),
        Chunk("files:a.md#1", doc.doc_id, 1, "table", "sheet=S!A1", Sensitivity.RESTRICTED, "ai"),
    ]
    store.upsert(doc, chunks)

    assert store.get_chunks(doc.doc_id) == chunks


def test_vectors_by_text_returns_stored_vectors_and_skips_chunks_without_one(
    store: Store,
) -> None:
    doc = make_doc()
    vecs = vectors(TEXTS)
    store.upsert(doc, make_chunks(doc, TEXTS), [vecs[0], None, vecs[2]])

    got = store.vectors_by_text(doc.doc_id)  # type: ignore[attr-defined]

    assert set(got) == {TEXTS[0], TEXTS[2]}
    np.testing.assert_array_equal(got[TEXTS[0]], vecs[0])
    np.testing.assert_array_equal(got[TEXTS[2]], vecs[2])
    assert got[TEXTS[0]].dtype == np.float32
    assert store.vectors_by_text("files:unknown") == {}  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- replace


def test_upsert_replaces_the_previous_version_completely(store: Store) -> None:
    doc = make_doc()
    store.upsert(doc, make_chunks(doc, TEXTS), vectors(TEXTS), facts=[fact(doc.doc_id)])
    new = make_doc(content_hash="hash-2", version=4, acl=EVERYONE)
    store.upsert(new, make_chunks(new, ["Only one chunk now about margins"]), [None])

    assert store.get_document(doc.doc_id) == new
    assert [c.text for c in store.get_chunks(doc.doc_id)] == ["Only one chunk now about margins"]
    assert store.vectors_by_text(doc.doc_id) == {}  # type: ignore[attr-defined]
    assert store.list_facts(doc.doc_id) == []  # type: ignore[attr-defined]
    assert store.lexical_search("revenue", everyone_filter(), 5) == []
    assert store.vector_search(vector(TEXTS[0]), everyone_filter(), 5) == []
    assert [c for c, _ in store.lexical_search("margins", everyone_filter(), 5)] == ["files:a.md#0"]
    # the old ACL went with the old version: bob and finance no longer read it
    bob = everyone_filter(principals=frozenset({"user:bob", "group:finance"}))
    assert store.lexical_search("margins", bob, 5) == []
    stats = store.stats()
    assert (stats.documents, stats.chunks, stats.vectors) == (1, 1, 0)


def assert_first_version_intact(store: Store, doc: Document, chunks: list[Chunk]) -> None:
    assert store.get_document(doc.doc_id) == doc
    assert store.get_chunks(doc.doc_id) == chunks
    assert set(store.vectors_by_text(doc.doc_id)) == set(TEXTS)  # type: ignore[attr-defined]
    assert store.list_facts(doc.doc_id) == [fact(doc.doc_id)]  # type: ignore[attr-defined]
    assert [c for c, _ in store.lexical_search("revenue", everyone_filter(), 5)] == ["files:a.md#0"]
    assert len(store.vector_search(vector("x"), everyone_filter(), 5)) == 3
    stats = store.stats()
    assert (stats.documents, stats.chunks, stats.vectors) == (1, 3, 3)


@pytest.fixture
def first_version(store: Store) -> tuple[Document, list[Chunk]]:
    doc = make_doc()
    chunks = make_chunks(doc, TEXTS)
    store.upsert(doc, chunks, vectors(TEXTS), facts=[fact(doc.doc_id)])
    return doc, chunks


def test_a_refused_replace_leaves_the_old_version_intact(
    store: Store, first_version: tuple[Document, list[Chunk]]
) -> None:
    doc, chunks = first_version
    new = make_doc(content_hash="hash-2", version=4)
    new_chunks = make_chunks(new, ["replacement one", "replacement two"])

    with pytest.raises(StoreError, match="2 chunks but 1 vectors"):
        store.upsert(new, new_chunks, vectors(["replacement one"]))
    assert_first_version_intact(store, doc, chunks)

    secret = make_doc(sensitivity=Sensitivity.CONFIDENTIAL)
    with pytest.raises(StoreError, match="less sensitive than its document"):
        store.upsert(secret, make_chunks(secret, ["x"], sensitivity=Sensitivity.INTERNAL))
    assert_first_version_intact(store, doc, chunks)

    stray = make_chunks(make_doc("files:other"), ["x"])
    with pytest.raises(StoreError, match=r"does not belong to files:a\.md"):
        store.upsert(new, stray)
    assert_first_version_intact(store, doc, chunks)

    with pytest.raises(StoreError, match="does not belong"):
        store.upsert(new, new_chunks, facts=[fact("files:other")])
    assert_first_version_intact(store, doc, chunks)

    nan = np.full(32, np.nan, dtype=np.float32)
    with pytest.raises(StoreError, match="not finite"):
        store.upsert(new, new_chunks[:1], [nan])
    assert_first_version_intact(store, doc, chunks)


def test_a_replace_failing_inside_the_write_rolls_back(
    store: Store, first_version: tuple[Document, list[Chunk]]
) -> None:
    """Two chunks with one id pass every check made before writing and fail on the
    unique chunk id, after the old rows are gone inside the write: all of them come back."""
    doc, chunks = first_version
    new = make_doc(content_hash="hash-2", version=4)
    first, second = make_chunks(new, ["replacement one", "replacement two"])
    duplicate = dataclasses.replace(second, chunk_id=first.chunk_id)

    with pytest.raises(StoreError):
        store.upsert(new, [first, duplicate], facts=[fact(doc.doc_id, 9.0)])

    assert_first_version_intact(store, doc, chunks)


def test_a_chunk_id_taken_by_another_document_is_refused(store: Store) -> None:
    a, b = make_doc("files:a"), make_doc("files:b")
    store.upsert(a, make_chunks(a, ["alpha"]))
    taken = dataclasses.replace(make_chunks(b, ["beta"])[0], chunk_id="files:a#0")

    with pytest.raises(StoreError):
        store.upsert(b, [taken])

    assert store.get_document("files:b") is None
    assert [c.text for c in store.get_chunks("files:a")] == ["alpha"]


def test_vectors_of_another_width_are_refused_not_stored(store: Store) -> None:
    doc = make_doc()
    chunks = make_chunks(doc, TEXTS)
    store.upsert(doc, chunks, vectors(TEXTS))
    other = make_doc("files:other")
    wide = list(HashingEmbedder(dim=48).embed(["wide"]))

    with pytest.raises(StoreError, match="48-dimensional vectors, the index holds 32"):
        store.upsert(other, make_chunks(other, ["wide"]), wide)
    with pytest.raises(StoreError, match="different dimensions"):
        store.upsert(other, make_chunks(other, ["a", "b"]), [wide[0], vector("b")])

    assert store.get_document("files:other") is None
    hits = store.vector_search(vector("Costs fell in Tokyo."), everyone_filter(), 1)
    assert hits[0][0] == "files:a.md#1"
    # replacing the only vectors with another width is a model change, and allowed
    store.upsert(doc, chunks[:1], wide)
    assert store.vector_search(wide[0], everyone_filter(), 1)[0][0] == "files:a.md#0"


# --------------------------------------------------------------------------- delete


def check_purged(store: Store, doc_id: str, *, acl: frozenset[str]) -> None:
    """Nothing of ``doc_id`` is left: no row, no chunk, vector or fact, in no read and no
    count; and a new document under the same id does not inherit the old ACL."""
    assert store.get_document(doc_id) is None
    assert store.get_chunks(doc_id) == []
    assert store.hits([f"{doc_id}#0"]) == []
    assert doc_id not in {d.doc_id for d in store.list_documents()}
    assert store.vectors_by_text(doc_id) == {}  # type: ignore[attr-defined]
    assert store.list_facts(doc_id) == []  # type: ignore[attr-defined]
    assert store.content_hash(doc_id) is None  # type: ignore[attr-defined]
    stats = store.stats()
    assert (stats.documents, stats.chunks, stats.vectors) == (1, 1, 1)
    reborn = make_doc(doc_id, acl=frozenset({"user:zed"}))
    store.upsert(reborn, make_chunks(reborn, ["reborn revenue"]))
    old_readers = everyone_filter(principals=acl)
    assert store.lexical_search("revenue", old_readers, 5) == []
    assert store.get_document(doc_id) == reborn


def test_delete_purges_chunks_vectors_facts_and_acl(store: Store) -> None:
    keep, gone = make_doc("files:keep"), make_doc("files:gone")
    store.upsert(keep, make_chunks(keep, ["kept text"]), vectors(["kept text"]))
    store.upsert(gone, make_chunks(gone, TEXTS), vectors(TEXTS), facts=[fact("files:gone")])

    assert store.delete("files:gone") is True

    assert store.lexical_search("revenue Tokyo", everyone_filter(), 10) == []
    hits = store.vector_search(vector("Costs fell in Tokyo."), everyone_filter(), 10)
    assert [cid for cid, _ in hits] == ["files:keep#0"]
    assert store.query_facts(everyone_filter()) == []  # type: ignore[attr-defined]
    assert store.delete("files:gone") is False
    check_purged(store, "files:gone", acl=gone.acl)


def test_reverse_proof_a_delete_that_only_hides_fails_the_purge_check(store: Store) -> None:
    leaky = SoftDelete(store)
    keep, gone = make_doc("files:keep"), make_doc("files:gone")
    leaky.upsert(keep, make_chunks(keep, ["kept text"]), vectors(["kept text"]))
    leaky.upsert(gone, make_chunks(gone, TEXTS), vectors(TEXTS), facts=[fact("files:gone")])

    assert leaky.delete("files:gone") is True
    assert leaky.lexical_search("revenue Tokyo", everyone_filter(), 10) == []  # looks gone
    with pytest.raises(AssertionError):
        check_purged(leaky, "files:gone", acl=gone.acl)  # type: ignore[arg-type]


def test_deleting_an_unknown_document_changes_nothing(store: Store) -> None:
    doc = make_doc()
    store.upsert(doc, make_chunks(doc, TEXTS))

    assert store.delete("files:unknown") is False
    assert store.get_document(doc.doc_id) == doc
    assert store.stats().chunks == 3


def test_an_upsert_without_chunks_stores_the_document_alone(store: Store) -> None:
    doc = make_doc()
    store.upsert(doc, [])

    assert store.get_document(doc.doc_id) == doc
    assert store.get_chunks(doc.doc_id) == []
    assert store.lexical_search("quarterly", everyone_filter(), 5) == []
    assert store.delete(doc.doc_id) is True
