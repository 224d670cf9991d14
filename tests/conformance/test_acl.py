"""ACL changes: ``set_acl`` and ``set_acls`` change who may read a document and nothing
else (content, vectors, facts, metadata and ranking stay as they were); the ACL-sync times
per corpus round-trip. The reverse proof: an ACL change that rewrites the document from
its chunks loses its vectors and facts, and the same check catches it."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from clearance.store.base import Store
from conformance.common import (
    EVERYONE,
    JST,
    TEXTS,
    everyone_filter,
    fact,
    make_doc,
    vector,
    vectors,
)
from conformance.leaks import SetAclRewrites
from factories import chunks as make_chunks

BOB = everyone_filter(principals=frozenset({"user:bob"}))
CAROL = everyone_filter(principals=frozenset({"user:carol"}))


def check_acl_change_touches_only_the_acl(store: Store) -> None:
    """Move a document from bob to carol: carol now reads exactly what bob read, with the
    same scores, vectors and facts; bob reads nothing."""
    doc = make_doc(acl=frozenset({"user:bob"}))
    chunks = make_chunks(doc, TEXTS)
    store.upsert(doc, chunks, vectors(TEXTS), facts=[fact(doc.doc_id)])
    probe = vector("Costs fell in Tokyo")
    before = (
        store.lexical_search("revenue tokyo", BOB, 5),
        store.vector_search(probe, BOB, 5),
        store.query_facts(BOB),  # type: ignore[attr-defined]
        store.vectors_by_text(doc.doc_id),  # type: ignore[attr-defined]
    )
    assert len(before[0]) == 2 and len(before[1]) == 3 and len(before[2]) == 1

    assert store.set_acl(doc.doc_id, frozenset({"user:carol", "group:x"})) is True

    assert store.get_document(doc.doc_id) == dataclasses.replace(
        doc, acl=frozenset({"user:carol", "group:x"})
    )
    assert store.get_chunks(doc.doc_id) == chunks
    assert store.lexical_search("revenue tokyo", BOB, 5) == []
    assert store.vector_search(probe, BOB, 5) == []
    assert store.query_facts(BOB) == []  # type: ignore[attr-defined]
    after = (
        store.lexical_search("revenue tokyo", CAROL, 5),
        store.vector_search(probe, CAROL, 5),
        store.query_facts(CAROL),  # type: ignore[attr-defined]
        store.vectors_by_text(doc.doc_id),  # type: ignore[attr-defined]
    )
    assert after[:2] == before[:2]
    assert [(f, d.doc_id) for f, d in after[2]] == [(f, d.doc_id) for f, d in before[2]]
    assert after[3].keys() == before[3].keys()
    for text, v in before[3].items():
        np.testing.assert_array_equal(after[3][text], v)
    stats = store.stats()
    assert (stats.documents, stats.chunks, stats.vectors) == (1, 3, 3)


def test_set_acl_changes_only_the_acl(store: Store) -> None:
    check_acl_change_touches_only_the_acl(store)
    assert store.set_acl("files:unknown", EVERYONE) is False
    assert store.get_document("files:unknown") is None


def test_reverse_proof_an_acl_change_that_rewrites_the_document_is_caught(store: Store) -> None:
    with pytest.raises(AssertionError):
        check_acl_change_touches_only_the_acl(SetAclRewrites(store))  # type: ignore[arg-type]


def test_set_acl_to_empty_hides_the_document_from_everyone(store: Store) -> None:
    doc = make_doc(acl=EVERYONE)
    store.upsert(doc, make_chunks(doc, TEXTS), vectors(TEXTS))

    store.set_acl(doc.doc_id, frozenset())

    widest = everyone_filter(principals=frozenset({"everyone", "user:bob", "group:finance"}))
    assert store.lexical_search("revenue", widest, 5) == []
    assert store.vector_search(vector("revenue"), widest, 5) == []
    assert store.term_statistics(["revenu"], widest).chunks == 0
    assert store.get_document(doc.doc_id).acl == frozenset()  # type: ignore[union-attr]


def test_set_acls_reports_unknown_ids_and_records_the_sync(store: Store) -> None:
    doc = make_doc()
    store.upsert(doc, make_chunks(doc, ["x"]))
    at = datetime(2025, 6, 1, 12, 0, tzinfo=JST)

    missing = store.set_acls(  # type: ignore[attr-defined]
        {doc.doc_id: EVERYONE, "files:nope": EVERYONE}, synced=("wiki", at)
    )

    assert missing == ["files:nope"]
    assert store.get_document(doc.doc_id).acl == EVERYONE  # type: ignore[union-attr]
    assert store.last_acl_syncs() == {"wiki": at}  # type: ignore[attr-defined]
    assert store.last_acl_syncs()["wiki"].tzinfo == UTC  # type: ignore[attr-defined]
    later = at + timedelta(hours=1)
    store.record_acl_sync("wiki", later)  # type: ignore[attr-defined]
    assert store.last_acl_syncs() == {"wiki": later}  # type: ignore[attr-defined]


def test_set_acls_merges_extra_keys_in_the_same_write(store: Store) -> None:
    doc = make_doc(extra={"meta_hash": "m1", "note": "old"})
    store.upsert(doc, make_chunks(doc, ["x"]))

    store.set_acls(  # type: ignore[attr-defined]
        {doc.doc_id: frozenset()}, extra={doc.doc_id: {"note": None, "why": "unmappable"}}
    )

    got = store.get_document(doc.doc_id)
    assert got is not None
    assert got.acl == frozenset()
    assert got.extra == {"meta_hash": "m1", "why": "unmappable"}
