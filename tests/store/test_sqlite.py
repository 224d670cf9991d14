"""The embedded store on a real SQLite file: round-trips, purges, atomic replace, reopening,
and lexical analysis end to end (stemming, Japanese, Italian accents)."""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from clearance.errors import StoreError
from clearance.model import Chunk, Document, Sensitivity
from clearance.retrieval.embedding import HashingEmbedder
from clearance.store.base import SearchFilter, Store
from clearance.store.sqlite import Retrieved, SQLiteStore
from factories import chunks as make_chunks

JST = timezone(timedelta(hours=9))
EVERYONE = frozenset({"everyone"})
embedder = HashingEmbedder(dim=32)


def make_doc(doc_id: str = "files:a.md", **changes: object) -> Document:
    doc = Document(
        doc_id=doc_id,
        source_system="files",
        corpus="wiki",
        title="Quarterly report",
        uri="https://example.test/a",
        owner="alice",
        acl=frozenset({"group:finance", "user:bob"}),
        sensitivity=Sensitivity.INTERNAL,
        created_at=datetime(2024, 1, 2, 9, 30, tzinfo=JST),
        updated_at=datetime(2024, 3, 4, 5, 6, 7, 123456, tzinfo=UTC),
        review_at=datetime(2025, 1, 1, tzinfo=UTC),
        expires_at=datetime(2099, 12, 31, 23, 59, tzinfo=UTC),
        ai_allowed=True,
        personal_data=True,
        origin="human",
        origin_chain=("email", "human"),
        content_hash="hash-1",
        version=3,
        path="/docs/a.md",
        format="md",
        extra={"meta_hash": "m1", "nested": {"n": [1, 2]}},
    )
    return dataclasses.replace(doc, **changes)  # type: ignore[arg-type]


def vectors(texts: list[str]) -> list[np.ndarray]:
    return list(embedder.embed(texts))


def everyone_filter(**changes: object) -> SearchFilter:
    flt = SearchFilter(
        principals=frozenset({"everyone", "group:finance", "user:bob"}),
        max_sensitivity=Sensitivity.RESTRICTED,
        require_ai_allowed=False,
    )
    return dataclasses.replace(flt, **changes)  # type: ignore[arg-type]


@contextmanager
def connect(path: Path) -> Iterator[sqlite3.Connection]:
    """A second, independent connection to the file (autocommit), closed afterwards."""
    with closing(sqlite3.connect(path, isolation_level=None)) as db:
        yield db


def table_counts(path: Path) -> dict[str, int]:
    """Row counts read through a second, independent connection to the file."""
    with connect(path) as db:
        return {
            t: db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
            for t in ("documents", "doc_acl", "chunks", "chunk_terms", "vectors")
        }


def term_dictionary(path: Path) -> dict[str, int]:
    with connect(path) as db:
        return dict(db.execute("SELECT term, id FROM terms").fetchall())


def unindexed(path: Path) -> list[tuple[str, int]]:
    """Chunks without a term row, and term rows without a chunk: both must never exist."""
    with connect(path) as db:
        return db.execute(
            "SELECT 'chunk', id FROM chunks WHERE id NOT IN (SELECT chunk FROM chunk_terms) "
            "UNION ALL "
            "SELECT 'chunk_terms', chunk FROM chunk_terms WHERE chunk NOT IN (SELECT id FROM chunks)"
        ).fetchall()


TEXTS = ["Revenue grew in the third quarter.", "Costs fell in Tokyo.", "東京の売上高"]


def test_sqlite_store_satisfies_the_store_protocol(store: SQLiteStore) -> None:
    assert isinstance(store, Store)


def test_round_trip_keeps_every_metadata_field_with_datetimes_in_utc(store: SQLiteStore) -> None:
    doc = make_doc()
    chunks = make_chunks(doc, TEXTS)
    store.upsert(doc, chunks, vectors(TEXTS))

    got = store.get_document(doc.doc_id)

    assert got == doc  # datetimes compare as instants
    assert got is not None
    for name in ("created_at", "updated_at", "review_at", "expires_at"):
        value = getattr(got, name)
        assert value.tzinfo == UTC, name
    assert got.created_at == datetime(2024, 1, 2, 0, 30, tzinfo=UTC)
    assert got.updated_at is not None and got.updated_at.microsecond == 123456
    assert got.acl == frozenset({"group:finance", "user:bob"})
    assert got.extra == {"meta_hash": "m1", "nested": {"n": [1, 2]}}
    assert store.get_chunks(doc.doc_id) == chunks
    assert store.content_hash(doc.doc_id) == "hash-1"


def test_optional_fields_round_trip_as_none(store: SQLiteStore) -> None:
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


def test_get_list_and_unknown_ids(store: SQLiteStore) -> None:
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
    assert store.content_hash("files:zzz") is None
    assert store.corpora() == ["hr", "wiki"]


def test_hits_returns_chunks_with_documents_in_the_order_asked(store: SQLiteStore) -> None:
    a, b = make_doc("files:a"), make_doc("files:b", title="Other")
    store.upsert(a, make_chunks(a, ["one", "two"]))
    store.upsert(b, make_chunks(b, ["three"]))

    rows = store.hits(["files:b#0", "files:nope#0", "files:a#1", "files:a#0"])

    assert [(c.chunk_id, d.doc_id, d.title) for c, d in rows] == [
        ("files:b#0", "files:b", "Other"),
        ("files:a#1", "files:a", "Quarterly report"),
        ("files:a#0", "files:a", "Quarterly report"),
    ]
    assert store.hits([]) == []


def test_delete_purges_chunks_term_rows_acl_and_vectors(store: SQLiteStore) -> None:
    keep, gone = make_doc("files:keep"), make_doc("files:gone")
    store.upsert(keep, make_chunks(keep, ["kept text"]), vectors(["kept text"]))
    store.upsert(gone, make_chunks(gone, TEXTS), vectors(TEXTS))
    assert table_counts(store.path) == {
        "documents": 2,
        "doc_acl": 4,
        "chunks": 4,
        "chunk_terms": 4,
        "vectors": 4,
    }
    dictionary = term_dictionary(store.path)
    assert {"revenu", "tokyo", "東京", "売上"} <= set(dictionary)

    assert store.delete("files:gone") is True

    assert table_counts(store.path) == {
        "documents": 1,
        "doc_acl": 2,
        "chunks": 1,
        "chunk_terms": 1,
        "vectors": 1,
    }
    assert unindexed(store.path) == []
    assert term_dictionary(store.path) == dictionary  # term ids are never reused
    assert store.get_document("files:gone") is None
    assert store.get_chunks("files:gone") == []
    assert store.lexical_search("revenue Tokyo", everyone_filter(), 10) == []
    hits = store.vector_search(embedder.embed(["Costs fell in Tokyo."])[0], everyone_filter(), 10)
    assert [cid for cid, _ in hits] == ["files:keep#0"]
    assert store.delete("files:gone") is False


def test_upsert_replaces_the_previous_version_completely(store: SQLiteStore) -> None:
    doc = make_doc()
    store.upsert(doc, make_chunks(doc, TEXTS), vectors(TEXTS))
    new = make_doc(content_hash="hash-2", version=4, acl=EVERYONE)
    store.upsert(new, make_chunks(new, ["Only one chunk now about margins"]), [None])

    assert store.get_document(doc.doc_id) == new
    assert [c.text for c in store.get_chunks(doc.doc_id)] == ["Only one chunk now about margins"]
    assert table_counts(store.path) == {
        "documents": 1,
        "doc_acl": 1,
        "chunks": 1,
        "chunk_terms": 1,
        "vectors": 0,
    }
    assert store.lexical_search("revenue", everyone_filter(), 5) == []
    assert [c for c, _ in store.lexical_search("margins", everyone_filter(), 5)] == ["files:a.md#0"]


def assert_first_version_intact(store: SQLiteStore, doc: Document, chunks: list[Chunk]) -> None:
    assert store.get_document(doc.doc_id) == doc
    assert store.get_chunks(doc.doc_id) == chunks
    assert set(store.vectors_by_text(doc.doc_id)) == set(TEXTS)
    assert [c for c, _ in store.lexical_search("revenue", everyone_filter(), 5)] == ["files:a.md#0"]
    assert table_counts(store.path) == {
        "documents": 1,
        "doc_acl": 2,
        "chunks": 3,
        "chunk_terms": 3,
        "vectors": 3,
    }
    assert unindexed(store.path) == []


def test_a_failed_replace_leaves_the_old_version_intact(store: SQLiteStore) -> None:
    doc = make_doc()
    chunks = make_chunks(doc, TEXTS)
    store.upsert(doc, chunks, vectors(TEXTS))
    new = make_doc(content_hash="hash-2", version=4)
    new_chunks = make_chunks(new, ["replacement one", "replacement two"])

    # vectors do not match chunks
    with pytest.raises(StoreError, match="2 chunks but 1 vectors"):
        store.upsert(new, new_chunks, vectors(["replacement one"]))
    assert_first_version_intact(store, doc, chunks)

    # a chunk less sensitive than its document
    secret = make_doc(sensitivity=Sensitivity.CONFIDENTIAL)
    with pytest.raises(StoreError, match="less sensitive than its document"):
        store.upsert(secret, make_chunks(secret, ["x"], sensitivity=Sensitivity.INTERNAL))
    assert_first_version_intact(store, doc, chunks)

    # a chunk of another document
    stray = make_chunks(make_doc("files:other"), ["x"])
    with pytest.raises(StoreError, match=r"does not belong to files:a\.md"):
        store.upsert(new, stray)
    assert_first_version_intact(store, doc, chunks)


def test_a_replace_failing_inside_the_transaction_rolls_back(store: SQLiteStore) -> None:
    """The old rows are deleted first inside the transaction; a later insert failing
    (a duplicate chunk id violates a UNIQUE constraint) must bring them all back."""
    doc = make_doc()
    chunks = make_chunks(doc, TEXTS)
    store.upsert(doc, chunks, vectors(TEXTS))
    new = make_doc(content_hash="hash-2", version=4)
    first, second = make_chunks(new, ["replacement one", "replacement two"])
    duplicate = dataclasses.replace(second, chunk_id=first.chunk_id)

    with pytest.raises(StoreError, match=r"write to .* failed: UNIQUE constraint"):
        store.upsert(new, [first, duplicate])

    assert_first_version_intact(store, doc, chunks)


def test_vectors_of_another_width_are_refused_not_stored(store: SQLiteStore) -> None:
    """Regression: one document embedded by another model used to break every later
    vector search with a raw numpy ValueError."""
    doc = make_doc()
    chunks = make_chunks(doc, TEXTS)
    store.upsert(doc, chunks, vectors(TEXTS))
    other = make_doc("files:other")
    wide = list(HashingEmbedder(dim=48).embed(["wide"]))

    with pytest.raises(StoreError, match="48-dimensional vectors, the index holds 32"):
        store.upsert(other, make_chunks(other, ["wide"]), wide)
    with pytest.raises(StoreError, match="different dimensions"):
        store.upsert(other, make_chunks(other, ["a", "b"]), [wide[0], vectors(["b"])[0]])

    assert store.get_document("files:other") is None
    hits = store.vector_search(vectors(["Costs fell in Tokyo."])[0], everyone_filter(), 1)
    assert hits[0][0] == "files:a.md#1"
    # replacing the only vectors with another width is a model change, and allowed
    store.upsert(doc, chunks[:1], wide)
    assert store.vector_search(wide[0], everyone_filter(), 1)[0][0] == "files:a.md#0"


def test_set_acl_changes_only_the_acl(store: SQLiteStore) -> None:
    doc = make_doc(acl=frozenset({"user:bob"}))
    chunks = make_chunks(doc, TEXTS)
    store.upsert(doc, chunks, vectors(TEXTS))
    with connect(store.path) as db:
        before = db.execute("SELECT ingested_at FROM documents").fetchone()[0]
        vecs_before = db.execute("SELECT chunk, vec FROM vectors ORDER BY chunk").fetchall()
    bob = everyone_filter(principals=frozenset({"user:bob"}))
    carol = everyone_filter(principals=frozenset({"user:carol"}))
    assert len(store.lexical_search("revenue", bob, 5)) == 1
    assert store.lexical_search("revenue", carol, 5) == []

    assert store.set_acl(doc.doc_id, frozenset({"user:carol", "group:x"})) is True

    got = store.get_document(doc.doc_id)
    assert got == dataclasses.replace(doc, acl=frozenset({"user:carol", "group:x"}))
    assert store.get_chunks(doc.doc_id) == chunks
    with connect(store.path) as db:
        assert db.execute("SELECT ingested_at FROM documents").fetchone()[0] == before
        assert db.execute("SELECT chunk, vec FROM vectors ORDER BY chunk").fetchall() == vecs_before
    assert store.lexical_search("revenue", bob, 5) == []
    assert len(store.lexical_search("revenue", carol, 5)) == 1
    assert store.set_acl("files:unknown", EVERYONE) is False


def test_set_acls_reports_unknown_ids_and_records_the_sync(store: SQLiteStore) -> None:
    doc = make_doc()
    store.upsert(doc, make_chunks(doc, ["x"]))
    at = datetime(2025, 6, 1, 12, 0, tzinfo=JST)

    missing = store.set_acls({doc.doc_id: EVERYONE, "files:nope": EVERYONE}, synced=("wiki", at))

    assert missing == ["files:nope"]
    assert store.get_document(doc.doc_id).acl == EVERYONE  # type: ignore[union-attr]
    assert store.last_acl_syncs() == {"wiki": at}
    assert store.last_acl_syncs()["wiki"].tzinfo == UTC
    later = at + timedelta(hours=1)
    store.record_acl_sync("wiki", later)
    assert store.last_acl_syncs() == {"wiki": later}


def test_vectors_by_text_returns_stored_vectors_and_skips_chunks_without_one(
    store: SQLiteStore,
) -> None:
    doc = make_doc()
    vecs = vectors(TEXTS)
    store.upsert(doc, make_chunks(doc, TEXTS), [vecs[0], None, vecs[2]])

    got = store.vectors_by_text(doc.doc_id)

    assert set(got) == {TEXTS[0], TEXTS[2]}
    np.testing.assert_array_equal(got[TEXTS[0]], vecs[0])
    np.testing.assert_array_equal(got[TEXTS[2]], vecs[2])
    assert got[TEXTS[0]].dtype == np.float32
    assert store.vectors_by_text("files:unknown") == {}


def test_stats_counts_everything(store: SQLiteStore) -> None:
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


def test_meta_round_trips_json_values(store: SQLiteStore) -> None:
    assert store.get_meta("missing") is None
    store.set_meta("directory", {"version": 2, "users": ["a"]})
    store.set_meta("directory", {"version": 3, "users": []})
    assert store.get_meta("directory") == {"version": 3, "users": []}


def test_reopening_the_file_keeps_everything(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "index.db"
    doc = make_doc()
    chunks = make_chunks(doc, TEXTS)
    at = datetime(2025, 1, 1, tzinfo=UTC)
    with SQLiteStore(path) as first:
        first.upsert(doc, chunks, vectors(TEXTS))
        first.set_meta("k", [1, "two"])
        first.record_acl_sync("wiki", at)
        lexical = first.lexical_search("tokyo", everyone_filter(), 5)
        vector = first.vector_search(vectors(["Costs fell"])[0], everyone_filter(), 5)

    with SQLiteStore(path) as again:
        assert again.get_document(doc.doc_id) == doc
        assert again.get_chunks(doc.doc_id) == chunks
        assert again.get_meta("k") == [1, "two"]
        assert again.get_meta("schema_version") == 2
        assert again.last_acl_syncs() == {"wiki": at}
        assert again.lexical_search("tokyo", everyone_filter(), 5) == lexical
        assert again.vector_search(vectors(["Costs fell"])[0], everyone_filter(), 5) == vector
        assert lexical[0][0] == "files:a.md#1"


def test_an_index_of_another_schema_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "index.db"
    SQLiteStore(path).close()
    with connect(path) as db:
        db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")

    with pytest.raises(StoreError, match=r"index schema 99 is not supported \(expected 2\)"):
        SQLiteStore(path)


def test_a_file_that_is_not_a_database_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "index.db"
    path.write_bytes(b"this is not sqlite" * 100)

    with pytest.raises(StoreError, match="cannot open index"):
        SQLiteStore(path)


def test_writes_are_visible_to_another_connection_immediately(tmp_path: Path) -> None:
    path = tmp_path / "index.db"
    with SQLiteStore(path) as writer, SQLiteStore(path) as reader:
        assert reader.vector_search(vectors(["x"])[0], everyone_filter(), 3) == []
        doc = make_doc()
        writer.upsert(doc, make_chunks(doc, TEXTS), vectors(TEXTS))
        # the reader's cached vector matrix is invalidated by the write generation
        assert len(reader.vector_search(vectors(["x"])[0], everyone_filter(), 3)) == 3
        writer.delete(doc.doc_id)
        assert reader.vector_search(vectors(["x"])[0], everyone_filter(), 3) == []


# --------------------------------------------------------------------------- search basics


def test_lexical_search_edge_cases(store: SQLiteStore) -> None:
    doc = make_doc()
    store.upsert(doc, make_chunks(doc, TEXTS))

    assert store.lexical_search("revenue", everyone_filter(), 0) == []
    assert store.lexical_search("revenue", everyone_filter(principals=frozenset()), 5) == []
    assert store.lexical_search("the of and", everyone_filter(), 5) == []  # only stopwords
    assert store.lexical_search("   ", everyone_filter(), 5) == []
    hits = store.lexical_search("quarterly", everyone_filter(), 5)  # the title is indexed too
    assert {c for c, _ in hits} == {"files:a.md#0", "files:a.md#1", "files:a.md#2"}
    assert all(score > 0 for _, score in hits)


@pytest.mark.parametrize(
    "query", ['"', 'say "hi"', "revenue AND", "NEAR(revenue costs)", "rev*", "-costs", "a:b", "()"]
)
def test_lexical_search_never_raises_on_fts_syntax(store: SQLiteStore, query: str) -> None:
    doc = make_doc()
    store.upsert(doc, make_chunks(doc, TEXTS))

    result = store.lexical_search(query, everyone_filter(), 5)

    assert isinstance(result, list)


def test_vector_search_edge_cases(store: SQLiteStore) -> None:
    assert store.vector_search(vectors(["x"])[0], everyone_filter(), 5) == []  # no vectors yet
    doc = make_doc()
    store.upsert(doc, make_chunks(doc, TEXTS), vectors(TEXTS))

    assert store.vector_search(vectors(["x"])[0], everyone_filter(), 0) == []
    assert store.vector_search(vectors(["x"])[0], everyone_filter(principals=frozenset()), 5) == []
    with pytest.raises(StoreError, match="query vector has 3 dimensions, index has 32"):
        store.vector_search(np.ones(3, dtype=np.float32), everyone_filter(), 5)
    top = store.vector_search(vectors([TEXTS[2]])[0], everyone_filter(), 5)
    assert top[0][0] == "files:a.md#2"
    assert top[0][1] == pytest.approx(1.0, abs=1e-5)
    assert [s for _, s in top] == sorted((s for _, s in top), reverse=True)


def test_vector_ties_are_broken_by_insertion_order(store: SQLiteStore) -> None:
    basis = np.eye(4, dtype=np.float32)
    docs = [make_doc(f"files:{name}") for name in ("z", "a", "m")]
    for doc in docs:
        store.upsert(doc, make_chunks(doc, ["same"]), [basis[0]])
    other = make_doc("files:b")
    store.upsert(other, make_chunks(other, ["other"]), [basis[1]])

    assert store.vector_search(basis[0], everyone_filter(), 2) == [
        ("files:z#0", 1.0),
        ("files:a#0", 1.0),
    ]
    assert [c for c, _ in store.vector_search(basis[0], everyone_filter(), 10)] == [
        "files:z#0",
        "files:a#0",
        "files:m#0",
        "files:b#0",
    ]


def test_vector_ties_at_the_cut_keep_the_earliest_chunks(store: SQLiteStore) -> None:
    """Regression: the top-k cut used argpartition, which picks arbitrarily among chunks
    tied at the k-th score (here it returned the 'm' chunk before the 'a' chunk)."""
    basis = np.eye(4, dtype=np.float32)
    weak = [make_doc(f"files:w{i:02d}") for i in range(10)]
    strong = [make_doc(f"files:s{i}") for i in range(3)]
    for doc in weak:
        store.upsert(doc, make_chunks(doc, ["weak"]), [(basis[0] + basis[1]) / np.sqrt(2)])
    for doc in strong:
        store.upsert(doc, make_chunks(doc, ["strong"]), [basis[0]])

    got = [c for c, _ in store.vector_search(basis[0], everyone_filter(), 5)]

    assert got == ["files:s0#0", "files:s1#0", "files:s2#0", "files:w00#0", "files:w01#0"]


def test_retrieve_returns_what_the_separate_searches_return(store: SQLiteStore) -> None:
    finance, hidden = make_doc("files:finance"), make_doc("files:hidden", acl=EVERYONE)
    other = make_doc("files:other", title="Tokyo office")
    store.upsert(finance, make_chunks(finance, TEXTS), vectors(TEXTS))
    store.upsert(hidden, make_chunks(hidden, ["Revenue in Tokyo"]), vectors(["Revenue in Tokyo"]))
    store.upsert(other, make_chunks(other, ["Revenue", "no vector"]), [*vectors(["x"]), None])
    bob = everyone_filter(principals=frozenset({"user:bob"}))

    for query, k in (("revenue Tokyo", 3), ("quarter costs 東京", 10), ("the of", 4)):
        vector = vectors([query])[0]
        got = store.retrieve(query, vector, bob, k)
        assert got == Retrieved(
            store.lexical_search(query, bob, k), store.vector_search(vector, bob, k)
        )
        assert len(got.vector) == min(k, 4)  # every visible chunk with a vector qualifies
        assert not {c for c, _ in [*got.lexical, *got.vector]} & {"files:hidden#0"}
        assert store.retrieve(query, None, bob, k) == Retrieved(got.lexical, [])
    assert len(store.retrieve("revenue Tokyo", None, bob, 10).lexical) == 4
    assert store.retrieve("the of", None, bob, 5) == Retrieved([], [])  # only stopwords
    vector = vectors(["revenue"])[0]
    assert store.retrieve("revenue", vector, bob, 0) == Retrieved([], [])
    nobody = everyone_filter(principals=frozenset())
    assert store.retrieve("revenue", vector, nobody, 5) == Retrieved([], [])
    with pytest.raises(StoreError, match="query vector has 3 dimensions"):
        store.retrieve("revenue", np.ones(3, dtype=np.float32), bob, 5)


ANALYSED = {
    "files:en": ("Planning", "The forecasts were revised twice."),
    "files:ja": ("東京支社", "東京の売上高は増加した。"),
    "files:it": ("Milano", "La città è più attiva e la società cresce."),
    "files:none": ("Misc", "Nothing relevant here."),
}


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("forecasting", {"files:en#0"}),  # English stems on both sides
        ("FORECAST revisions", {"files:en#0"}),
        ("ｆｏｒｅｃａｓｔｓ", {"files:en#0"}),  # full-width letters, NFKC
        ("売上高", {"files:ja#0"}),  # Japanese by character bigrams
        ("東京", {"files:ja#0"}),
        ("京", {"files:ja#0"}),  # a one-character query falls back to the unigram
        ("京都", set()),  # "Kyoto" shares a character, not a bigram
        ("citta", {"files:it#0"}),  # accent-free query, accented text
        ("città", {"files:it#0"}),
        ("CITTÀ società", {"files:it#0"}),
        ("milano", {"files:it#0"}),  # the title is indexed with every chunk
    ],
)
def test_lexical_search_analyses_english_japanese_and_italian(
    store: SQLiteStore, query: str, expected: set[str]
) -> None:
    for doc_id, (title, text) in ANALYSED.items():
        doc = make_doc(doc_id, title=title)
        store.upsert(doc, make_chunks(doc, [text]))

    hits = store.lexical_search(query, everyone_filter(), 10)

    assert {c for c, _ in hits} == expected
    assert all(score > 0 for _, score in hits)


def test_a_rolled_back_upsert_leaves_no_term_rows_and_resets_the_vocabulary(
    store: SQLiteStore,
) -> None:
    """The writer caches the term dictionary. A write that fails after adding terms takes
    them back, and SQLite hands their ids to the next new terms: a writer still holding the
    rolled-back ids would file "zebra" under the id of "quokka"."""
    doc = make_doc()
    store.upsert(doc, make_chunks(doc, TEXTS))
    dictionary = term_dictionary(store.path)
    with connect(store.path) as db:
        db.execute(
            "CREATE TRIGGER fail_term_rows BEFORE INSERT ON chunk_terms "
            "BEGIN SELECT RAISE(ABORT, 'disk on fire'); END"
        )
    zebra = make_doc("files:zebra")

    with pytest.raises(StoreError, match="disk on fire"):
        store.upsert(zebra, make_chunks(zebra, ["zebra crossings"]))

    assert term_dictionary(store.path) == dictionary  # the new terms went with the write
    assert unindexed(store.path) == []
    assert store.get_document("files:zebra") is None
    with connect(store.path) as db:
        db.execute("DROP TRIGGER fail_term_rows")
    quokka = make_doc("files:quokka")
    store.upsert(quokka, make_chunks(quokka, ["quokka sightings"]))
    store.upsert(zebra, make_chunks(zebra, ["zebra crossings"]))

    assert [c for c, _ in store.lexical_search("zebra", everyone_filter(), 5)] == ["files:zebra#0"]
    assert [c for c, _ in store.lexical_search("quokka", everyone_filter(), 5)] == [
        "files:quokka#0"
    ]
    assert [c for c, _ in store.lexical_search("crossing", everyone_filter(), 5)] == [
        "files:zebra#0"
    ]
    assert unindexed(store.path) == []
    assert set(term_dictionary(store.path)) == set(dictionary) | {
        "zebra",
        "cross",
        "quokka",
        "sight",
    }


def test_identical_vectors_are_an_exact_tie_ranked_in_insertion_order(store: SQLiteStore) -> None:
    positions = np.arange(24)
    same = np.sin(positions + 1.0).astype(np.float32)
    query = np.cos(3.0 * positions).astype(np.float32)
    for n in range(5):
        doc = make_doc(f"files:{n}")
        store.upsert(doc, make_chunks(doc, ["same text"]), [same])

    got = store.vector_search(query, everyone_filter(), 5)

    assert len({score for _, score in got}) == 1
    assert [c for c, _ in got] == [f"files:{n}#0" for n in range(5)]
