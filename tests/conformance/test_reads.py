"""Reads: documents listed in id order (optionally one corpus), chunks in ordinal order,
``hits`` in the order asked (unknown ids skipped), corpora, stats and metadata."""

from __future__ import annotations

from clearance.model import Sensitivity
from clearance.store.base import Store
from conformance.common import TEXTS, make_doc, vectors
from factories import chunks as make_chunks


def test_get_list_and_unknown_ids(store: Store) -> None:
    b = make_doc("files:b", corpus="hr")
    a = make_doc("files:a", corpus="wiki")
    c = make_doc("files:c", corpus="wiki")
    for doc in (b, a, c):
        store.upsert(doc, make_chunks(doc, ["text"]))

    assert [d.doc_id for d in store.list_documents()] == ["files:a", "files:b", "files:c"]
    assert [d.doc_id for d in store.list_documents("wiki")] == ["files:a", "files:c"]
    assert store.list_documents("none") == []
    assert store.get_document("files:zzz") is None
    assert store.get_chunks("files:zzz") == []
    assert store.content_hash("files:zzz") is None  # type: ignore[attr-defined]
    assert store.corpora() == ["hr", "wiki"]  # type: ignore[attr-defined]


def test_corpora_are_listed_once_each_in_code_point_order(store: Store) -> None:
    """Whatever the database's collation: names differing in case, accents and script, each
    held by several documents, and a corpus whose last document went."""
    names = ["wiki", "Wiki", "ärger", "arger", "b", "日本", "z-1", "z_1", "Z"]
    for i, name in enumerate(names * 3):
        doc = make_doc(f"files:{i:03d}", corpus=name)
        store.upsert(doc, make_chunks(doc, ["text"]))
    gone = make_doc("files:gone", corpus="emptied")
    store.upsert(gone, make_chunks(gone, ["text"]))
    store.delete(gone.doc_id)
    assert store.corpora() == sorted(set(names))  # type: ignore[attr-defined]


def test_list_documents_carries_every_documents_acl(store: Store) -> None:
    a = make_doc("files:a", acl=frozenset({"user:ann", "group:x"}))
    b = make_doc("files:b", acl=frozenset())
    for doc in (a, b):
        store.upsert(doc, make_chunks(doc, ["text"]))

    assert store.list_documents() == [a, b]


def test_chunks_come_in_ordinal_order_whatever_the_order_given(store: Store) -> None:
    doc = make_doc()
    chunks = make_chunks(doc, TEXTS)
    store.upsert(doc, [chunks[2], chunks[0], chunks[1]])

    assert store.get_chunks(doc.doc_id) == chunks


def test_hits_returns_chunks_with_documents_in_the_order_asked(store: Store) -> None:
    a, b = make_doc("files:a"), make_doc("files:b", title="Other")
    store.upsert(a, make_chunks(a, ["one", "two"]))
    store.upsert(b, make_chunks(b, ["three"]))

    rows = store.hits(["files:b#0", "files:nope#0", "files:a#1", "files:a#0"])

    assert [(c.chunk_id, d.doc_id, d.title) for c, d in rows] == [
        ("files:b#0", "files:b", "Other"),
        ("files:a#1", "files:a", "Quarterly report"),
        ("files:a#0", "files:a", "Quarterly report"),
    ]
    assert rows[1][0] == make_chunks(a, ["one", "two"])[1]
    assert rows[1][1] == a
    assert store.hits([]) == []


def test_stats_counts_everything(store: Store) -> None:
    empty = store.stats()
    assert (empty.documents, empty.chunks, empty.vectors) == (0, 0, 0)
    assert empty.by_corpus == {} and empty.by_sensitivity == {}

    a = make_doc("files:a", corpus="wiki", sensitivity=Sensitivity.PUBLIC)
    b = make_doc("files:b", corpus="wiki", sensitivity=Sensitivity.RESTRICTED)
    c = make_doc("files:c", corpus="hr", sensitivity=Sensitivity.PUBLIC)
    store.upsert(a, make_chunks(a, TEXTS), vectors(TEXTS))
    store.upsert(b, make_chunks(b, ["b1", "b2"]), [None, None])
    store.upsert(c, make_chunks(c, ["c1"]))

    stats = store.stats()

    assert (stats.documents, stats.chunks, stats.vectors) == (3, 6, 3)
    assert stats.by_corpus == {"wiki": 2, "hr": 1}
    assert stats.by_sensitivity == {"PUBLIC": 2, "RESTRICTED": 1}
    assert stats.size_bytes > 0


def test_meta_round_trips_json_values(store: Store) -> None:
    assert store.get_meta("missing") is None
    store.set_meta("directory", {"version": 2, "users": ["a"]})
    store.set_meta("directory", {"version": 3, "users": []})
    store.set_meta("list", [1, "two", None, 2.5])
    store.set_meta("unicode", "東京 ✓")

    assert store.get_meta("directory") == {"version": 3, "users": []}
    assert store.get_meta("list") == [1, "two", None, 2.5]
    assert store.get_meta("unicode") == "東京 ✓"
