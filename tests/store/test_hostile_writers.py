"""Writers that bypass the store must never make a search serve what the file does not say.

The file is shared: an operator's ``sqlite3`` shell (foreign keys off by default), another
process, a second ``SQLiteStore``, a thread of this one. Each section below is one way such
a writer could once make a search serve a row the file no longer holds, admit a document
nobody granted, or raise on every search; each test states what the store must do instead,
mostly as "the long-lived store answers like a store freshly opened on the same file" and
"nothing outside the filter's reference semantics is ever served". Where a mechanism
(a trigger, a check) is what keeps the behaviour, a reverse proof takes it away and shows the
same check then fails.

Changes that the next search must see (ACL rows, sensitivities, expiry, …) are covered in
``test_freshness.py``; only what it does not cover is here.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from clearance.analysis import document_terms
from clearance.errors import StoreError
from clearance.llm.embedding import HashingEmbedder
from clearance.model import Fact, Sensitivity
from clearance.retrieval.hybrid import HybridSearcher
from clearance.store import memory as memory_module
from clearance.store import sqlite as sqlite_module
from clearance.store.base import SearchFilter
from clearance.store.memory import AccessIndex, ContentIndex, top_k
from clearance.store.sqlite import SQLiteStore
from factories import chunks, document
from store.rawsql import index_by_hand, raw

from .test_migration import FINANCE, write_schema_1

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
EMBEDDER = HashingEmbedder(dim=16)
PUBLIC, INTERNAL, RESTRICTED = Sensitivity.PUBLIC, Sensitivity.INTERNAL, Sensitivity.RESTRICTED
SEARCHES = ("lexical", "vector", "retrieve")


def reader(
    *principals: str,
    ceiling: Sensitivity = RESTRICTED,
    corpora: dict[str, Sensitivity] | None = None,
) -> SearchFilter:
    return SearchFilter(
        principals=frozenset(principals), corpora=corpora, max_sensitivity=ceiling, now=NOW
    )


def fact(doc_id: str, value: float = 1.0) -> Fact:
    return Fact(
        entity="acme",
        period="2025",
        metric="price",
        channel="all",
        value=value,
        unit="EUR",
        doc_id=doc_id,
        locator="table=1",
        raw=str(value),
    )


def put(
    store: SQLiteStore,
    doc_id: str,
    texts: Sequence[str],
    *,
    acl: frozenset[str],
    sensitivity: Sensitivity = INTERNAL,
    facts: Sequence[Fact] = (),
) -> None:
    doc = document(doc_id, acl=acl, sensitivity=sensitivity)
    store.upsert(doc, chunks(doc, texts), list(EMBEDDER.embed(list(texts))), facts=facts)


def blob(values: Sequence[int]) -> bytes:
    return np.asarray(values, dtype="<i4").tobytes()


def index_chunk(db: sqlite3.Connection, key: int, text: str) -> None:
    """Term rows and a vector for chunk ``key``, as the store writes them (replacing any)."""
    index_by_hand(db, key, text, EMBEDDER.embed([text])[0])


def chunk_key(db: sqlite3.Connection, chunk_id: str) -> int:
    return int(db.execute("SELECT id FROM chunks WHERE chunk_id = ?", (chunk_id,)).fetchone()[0])


def doc_key(db: sqlite3.Connection, doc_id: str) -> int:
    return int(db.execute("SELECT key FROM documents WHERE doc_id = ?", (doc_id,)).fetchone()[0])


def search(store: SQLiteStore, how: str, query: str, flt: SearchFilter, k: int = 10) -> Any:
    """One search, exactly as returned (ids, scores, order)."""
    vector = EMBEDDER.embed([query])[0]
    if how == "lexical":
        return store.lexical_search(query, flt, k)
    if how == "vector":
        return store.vector_search(vector, flt, k)
    return store.retrieve(query, vector, flt, k)


def found(store: SQLiteStore, how: str, query: str, flt: SearchFilter, k: int = 10) -> set[str]:
    """The chunk ids one search returns (both lists, for ``retrieve``)."""
    result = search(store, how, query, flt, k)
    if how == "retrieve":
        return {c for c, _ in result.lexical} | {c for c, _ in result.vector}
    return {c for c, _ in result}


def assert_answers_like_a_fresh_store(
    store: SQLiteStore, queries: Sequence[str], filters: dict[str, SearchFilter]
) -> None:
    """Every search of the grid equals the same search on a store opened afresh on the file:
    the long-lived store's in-memory copies hold exactly what the file holds."""
    with SQLiteStore(store.path) as fresh:
        for name, flt in filters.items():
            for query in queries:
                for how in SEARCHES:
                    got, want = search(store, how, query, flt), search(fresh, how, query, flt)
                    assert got == want, (name, query, how)


# ========================================================================= R1: REPLACE ghosts
#
# A REPLACE conflict deletes the old chunk row without firing its delete trigger (unless
# the writer turned recursive_triggers on), so nothing logged that row; a patched copy kept
# it live with its OLD document and OLD sensitivity, serving its chunk id, which `hits` then
# resolved to the NEW row: a PUBLIC reader got the RESTRICTED text.

ANN_PUBLIC = reader("user:ann", ceiling=PUBLIC)
R1_FILTERS = {
    "ann, public ceiling": ANN_PUBLIC,
    "ann": reader("user:ann"),
    "boss": reader("user:boss"),
    "ann and boss": reader("user:ann", "user:boss"),
}
REPLACED_TEXT = "merger with acme lunch"


def replace_by_chunk_id(db: sqlite3.Connection) -> None:
    db.execute(
        "INSERT OR REPLACE INTO chunks (chunk_id, doc_key, ordinal, text, locator, sensitivity, "
        "origin) SELECT 'w:pub#0', key, 0, ?, 'x', 3, 'human' FROM documents "
        "WHERE doc_id = 'w:sec'",
        (REPLACED_TEXT,),
    )


def replace_by_chunk_id_and_key(db: sqlite3.Connection) -> None:
    db.execute(
        "REPLACE INTO chunks (id, chunk_id, doc_key, ordinal, text, locator, sensitivity, "
        "origin) SELECT c.id, 'w:pub#0', d.key, 0, ?, 'x', 3, 'human' "
        "FROM chunks c, documents d WHERE c.chunk_id = 'w:pub#0' AND d.doc_id = 'w:sec'",
        (REPLACED_TEXT,),
    )


def update_onto_the_chunk_id(db: sqlite3.Connection) -> None:
    """The secret chunk takes over the public chunk's id; REPLACE deletes the public row."""
    db.execute(
        "UPDATE OR REPLACE chunks SET chunk_id = 'w:pub#0', text = ? WHERE chunk_id = 'w:sec#0'",
        (REPLACED_TEXT,),
    )


REPLACEMENTS: dict[str, Callable[[sqlite3.Connection], None]] = {
    "INSERT OR REPLACE by chunk id": replace_by_chunk_id,
    "REPLACE by chunk id and key": replace_by_chunk_id_and_key,
    "UPDATE OR REPLACE onto the chunk id": update_onto_the_chunk_id,
}


@pytest.fixture
def lunch(store: SQLiteStore, monkeypatch: pytest.MonkeyPatch) -> SQLiteStore:
    """ann may read a PUBLIC lunch menu; only boss may read a RESTRICTED document. Every
    search of the grid has run once, so the copies (vectors included) are warm. A store
    this small would soon be over the dead share and rebuild: it patches regardless."""
    monkeypatch.setattr(sqlite_module, "_PATCH_DEAD", 100.0)
    put(store, "w:pub", ["harmless lunch menu"], acl=frozenset({"user:ann"}), sensitivity=PUBLIC)
    put(store, "w:sec", ["placeholder"], acl=frozenset({"user:boss"}), sensitivity=RESTRICTED)
    assert found(store, "retrieve", "lunch", ANN_PUBLIC) == {"w:pub#0"}
    for flt in R1_FILTERS.values():
        for how in SEARCHES:
            search(store, how, "lunch", flt)
    return store


def replace_the_public_chunk(path: Path, name: str, *, foreign_keys: bool, reindex: bool) -> None:
    """The public chunk's id now names a RESTRICTED chunk of the secret document."""
    with raw(path, foreign_keys=foreign_keys) as db:
        REPLACEMENTS[name](db)
        if reindex:  # a careful writer also writes the term rows and the vector
            index_chunk(db, chunk_key(db, "w:pub#0"), REPLACED_TEXT)
        owner, level = db.execute(
            "SELECT d.doc_id, c.sensitivity FROM chunks c JOIN documents d ON d.key = c.doc_key "
            "WHERE c.chunk_id = 'w:pub#0'"
        ).fetchone()
        assert (owner, level) == ("w:sec", 3)


def public_hits(store: SQLiteStore) -> list[tuple[str, str, Sensitivity]]:
    """What the store hands ann under a PUBLIC ceiling: the ids both searches return, read
    back with ``hits`` (which resolves an id to the row that holds it *now*)."""
    both = store.retrieve("lunch", EMBEDDER.embed(["lunch"])[0], ANN_PUBLIC, 10)
    ids = list(dict.fromkeys(c for c, _ in [*both.lexical, *both.vector]))
    return [(c.chunk_id, d.doc_id, c.sensitivity) for c, d in store.hits(ids)]


def searched_hits(store: SQLiteStore) -> list[tuple[str, str, Sensitivity]]:
    """What the application's searcher hands ann under a PUBLIC ceiling."""
    hits = HybridSearcher(store, EMBEDDER).search("lunch", ANN_PUBLIC, 10)
    return [(h.chunk.chunk_id, h.document.doc_id, h.chunk.sensitivity) for h in hits]


def assert_no_ghost(store: SQLiteStore) -> None:
    assert public_hits(store) == []
    assert searched_hits(store) == []
    assert_answers_like_a_fresh_store(store, ["lunch", "placeholder"], R1_FILTERS)


@pytest.mark.parametrize("reindex", [False, True], ids=["bare row", "reindexed"])
@pytest.mark.parametrize("foreign_keys", [False, True], ids=["fk off", "fk on"])
@pytest.mark.parametrize("name", REPLACEMENTS)
def test_a_chunk_replaced_by_a_raw_writer_is_never_served_as_its_old_self(
    lunch: SQLiteStore, name: str, foreign_keys: bool, reindex: bool
) -> None:
    replace_the_public_chunk(lunch.path, name, foreign_keys=foreign_keys, reindex=reindex)

    assert_no_ghost(lunch)
    if reindex:  # the replacement itself is served, to whoever may read it
        assert found(lunch, "lexical", "lunch", R1_FILTERS["boss"]) == {"w:pub#0"}


def delete_triggers(path: Path) -> list[str]:
    """The DELETE triggers on documents and chunks other than the generation triggers."""
    with raw(path, foreign_keys=True) as db:
        names = [
            r[0]
            for r in db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'trigger' "
                "AND tbl_name IN ('documents', 'chunks') AND name NOT LIKE '%bumps%' "
                "AND sql LIKE '%DELETE ON%' ORDER BY name"
            )
        ]
    assert names, "no delete trigger to drop"
    return names


def drop_triggers(path: Path, names: Sequence[str]) -> None:
    with raw(path, foreign_keys=True) as db:
        for name in names:
            db.execute(f"DROP TRIGGER {name}")


def drop_the_replace_triggers(path: Path) -> None:
    """The BEFORE triggers on chunks that log a row a REPLACE is about to delete."""
    with raw(path, foreign_keys=True) as db:
        names = [
            r[0]
            for r in db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'chunks' "
                "AND sql LIKE '%BEFORE%'"
            )
        ]
    assert names, "no BEFORE trigger on chunks to drop"
    drop_triggers(path, names)


def disable_the_count_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the check of a patched copy against the chunks table (count and sum of the live
    keys) always agree, so a patch is served as it is."""
    monkeypatch.setattr(SQLiteStore, "_holds_the_same_chunks", staticmethod(lambda db, c: True))


# The replacements the new triggers exist for (with foreign keys on, the cascade to the
# old row's term rows and vector fires their delete triggers, which log it anyway).
UNLOGGED = ["INSERT OR REPLACE by chunk id", "UPDATE OR REPLACE onto the chunk id"]


@pytest.mark.parametrize("name", UNLOGGED)
def test_without_the_replace_triggers_the_count_check_still_rebuilds(
    lunch: SQLiteStore, name: str
) -> None:
    """Second line of defence: the patched copy's live chunks are checked against the chunks
    table (count and sum of keys); a ghost makes them differ and the copy is rebuilt."""
    drop_the_replace_triggers(lunch.path)

    replace_the_public_chunk(lunch.path, name, foreign_keys=False, reindex=False)

    assert_no_ghost(lunch)


@pytest.mark.parametrize("name", UNLOGGED)
def test_with_the_count_check_disabled_the_triggers_alone_keep_the_ghost_out(
    lunch: SQLiteStore, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    disable_the_count_check(monkeypatch)

    replace_the_public_chunk(lunch.path, name, foreign_keys=False, reindex=False)

    assert_no_ghost(lunch)


@pytest.mark.parametrize("name", UNLOGGED)
def test_reverse_proof_without_triggers_or_count_check_the_ghost_is_served(
    lunch: SQLiteStore, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    drop_the_replace_triggers(lunch.path)
    disable_the_count_check(monkeypatch)

    replace_the_public_chunk(lunch.path, name, foreign_keys=False, reindex=False)

    # the old row, still live in the copy, resolved by `hits` to the new RESTRICTED row
    assert public_hits(lunch) == [("w:pub#0", "w:sec", RESTRICTED)]
    assert searched_hits(lunch) == []  # (the searcher's own re-check drops it)
    with pytest.raises(AssertionError):
        assert_no_ghost(lunch)


# ========================================================================= R2: negative keys
#
# An INTEGER PRIMARY KEY may be negative. Arrays indexed by doc key read a negative key as
# counted from the end: the ACL of key -1 granted the document with the highest key.

SALARIES = {"w:0": "user:a", "w:1": "user:b", "w:2": "user:boss"}
R2_PRINCIPALS = ("user:a", "user:b", "user:boss", "user:mallory")


@pytest.fixture
def salaries(store: SQLiteStore) -> SQLiteStore:
    for doc_id, principal in SALARIES.items():
        put(store, doc_id, [f"quarterly salaries of {doc_id}"], acl=frozenset({principal}))
    with raw(store.path, foreign_keys=True) as db:
        assert [doc_key(db, d) for d in SALARIES] == [1, 2, 3]
    assert found(store, "retrieve", "salaries", reader("user:mallory")) == set()
    return store


def insert_document(db: sqlite3.Connection, key: int, doc_id: str, principal: str) -> None:
    db.execute(
        "INSERT INTO documents (key, doc_id, source_system, corpus, title, uri, sensitivity, "
        "ai_allowed, personal_data, origin, origin_chain, content_hash, version, format, extra, "
        "ingested_at) VALUES (?, ?, 'w', 'default', '', 'u', 1, 1, 0, 'human', '[]', 'h', 1, "
        "'txt', '{}', 0)",
        (key, doc_id),
    )
    db.execute("INSERT INTO doc_acl (doc_key, principal) VALUES (?, ?)", (key, principal))


def insert_chunk(db: sqlite3.Connection, key: int, chunk_id: str, text: str) -> None:
    cur = db.execute(
        "INSERT INTO chunks (chunk_id, doc_key, ordinal, text, locator, sensitivity, origin) "
        "VALUES (?, ?, 0, ?, 'x', 1, 'human')",
        (chunk_id, key, text),
    )
    index_chunk(db, int(cur.lastrowid or 0), text)


def assert_results_follow_the_sql_reference(store: SQLiteStore) -> None:
    """Each reader's search returns a chunk of every document the SQL reference admits that
    has one, and of no other."""
    with raw(store.path, foreign_keys=True) as db:
        with_chunks = {
            str(r[0])
            for r in db.execute(
                "SELECT DISTINCT d.doc_id FROM documents d JOIN chunks c ON c.doc_key = d.key"
            )
        }
    for principal in R2_PRINCIPALS:
        flt = reader(principal)
        expected = store.allowed_doc_ids(flt) & with_chunks
        for how in SEARCHES:
            docs = {c.partition("#")[0] for c in found(store, how, "salaries", flt)}
            assert docs == expected, (principal, how)


@pytest.mark.parametrize("key", [-1, -3])
def test_a_document_with_a_negative_key_never_makes_another_visible(
    salaries: SQLiteStore, key: int
) -> None:
    with raw(salaries.path, foreign_keys=True) as db:
        db.execute("BEGIN")
        insert_document(db, key, "w:mallory", "user:mallory")
        db.execute("COMMIT")

    mallory = reader("user:mallory")
    for how in SEARCHES:
        assert found(salaries, how, "salaries", mallory) == set(), how
    assert salaries.query_facts(mallory) == []
    assert_results_follow_the_sql_reference(salaries)


def who_reads_a_negative_key_chunk(store: SQLiteStore, key: int) -> set[str]:
    """Adds a document at ``key`` with a chunk; returns the principals any of whose
    searches then returns that chunk."""
    with raw(store.path, foreign_keys=True) as db:
        db.execute("BEGIN")
        insert_document(db, key, "w:mallory", "user:mallory")
        insert_chunk(db, key, "w:mallory#0", "salaries of the board")
        db.execute("COMMIT")
    return {
        principal
        for principal in R2_PRINCIPALS
        for how in SEARCHES
        if "w:mallory#0" in found(store, how, "salaries", reader(principal))
    }


@pytest.mark.parametrize("key", [-1, -3])
def test_the_chunks_of_a_negative_key_document_are_never_admitted(
    salaries: SQLiteStore, key: int
) -> None:
    """Neither to the principal on its ACL, nor to the readers of the document whose slot
    the negative key would alias."""
    assert who_reads_a_negative_key_chunk(salaries, key) == set()
    assert_results_follow_the_sql_reference(salaries)
    assert_answers_like_a_fresh_store(salaries, ["salaries"], {p: reader(p) for p in R2_PRINCIPALS})


def chunk_mask_as_it_was(
    self: AccessIndex, flt: SearchFilter, content: ContentIndex
) -> npt.NDArray[np.bool_]:
    """`AccessIndex.chunk_mask` as it was: any doc key below the size is "known"."""
    if not flt.principals or len(content) == 0:
        return np.zeros(len(content), dtype=np.bool_)
    ceilings = self.ceilings(flt)
    known = content.doc_keys < self.size
    doc_ceiling = np.full(len(content), -1, dtype=np.int8)
    doc_ceiling[known] = ceilings[content.doc_keys[known]]
    mask: npt.NDArray[np.bool_] = (content.sensitivity <= doc_ceiling) & content.live
    return mask


@pytest.mark.parametrize(("key", "aliased"), [(-1, "user:boss"), (-3, "user:a")])
def test_reverse_proof_a_mask_reading_negative_keys_from_the_end_leaks_the_chunk(
    salaries: SQLiteStore, monkeypatch: pytest.MonkeyPatch, key: int, aliased: str
) -> None:
    monkeypatch.setattr(AccessIndex, "chunk_mask", chunk_mask_as_it_was)

    # the readers of the document whose slot the key aliases (key -1: the highest key)
    assert who_reads_a_negative_key_chunk(salaries, key) == {aliased}


def access_index_as_it_was(
    self: AccessIndex,
    generation: int,
    documents: Sequence[tuple[int, str, str, int, float | None, int]],
    acl: Sequence[tuple[str, int]],
) -> None:
    """`AccessIndex.__init__` as it was: every key, negative ones included, is an index."""
    self.generation = generation
    size = max((d[0] for d in documents), default=0) + 1
    self.size = size
    self.sensitivity = np.full(size, np.iinfo(np.int8).max, dtype=np.int8)
    self.exists = np.zeros(size, dtype=np.bool_)
    self.expires = np.full(size, np.inf, dtype=np.float64)
    self.ai_allowed = np.zeros(size, dtype=np.bool_)
    self.corpus = np.full(size, -1, dtype=np.int32)
    self.corpus_codes = {}
    self.keys_by_doc_id = {}
    for key, doc_id, corpus, sensitivity, expires_at, ai_allowed in documents:
        self.exists[key] = True
        self.sensitivity[key] = sensitivity
        if expires_at is not None:
            self.expires[key] = expires_at
        self.ai_allowed[key] = bool(ai_allowed)
        self.corpus[key] = self.corpus_codes.setdefault(corpus, len(self.corpus_codes))
        self.keys_by_doc_id[doc_id] = key
    grouped: dict[str, list[int]] = {}
    for principal, key in acl:
        if key < size and self.exists[key]:
            grouped.setdefault(principal, []).append(key)
    self.readers = {p: np.asarray(keys, dtype=np.int64) for p, keys in grouped.items()}


def test_reverse_proof_an_access_index_taking_negative_keys_as_indexes_grants_another(
    salaries: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(AccessIndex, "__init__", access_index_as_it_was)
    with raw(salaries.path, foreign_keys=True) as db:
        db.execute("BEGIN")
        insert_document(db, -1, "w:mallory", "user:mallory")
        db.execute("COMMIT")

    # mallory's ACL row of key -1 grants the document with the highest key
    assert found(salaries, "lexical", "salaries", reader("user:mallory")) == {"w:2#0"}
    with pytest.raises(AssertionError):
        assert_results_follow_the_sql_reference(salaries)


@pytest.mark.parametrize("key", [-1, -3])
def test_a_negative_key_acl_row_or_chunk_without_a_document_grants_nothing(
    salaries: SQLiteStore, key: int
) -> None:
    """Written with foreign keys off: no documents row at all for the negative key."""
    with raw(salaries.path, foreign_keys=False) as db:
        db.execute("BEGIN")
        db.execute("INSERT INTO doc_acl (doc_key, principal) VALUES (?, 'user:mallory')", (key,))
        insert_chunk(db, key, "w:orphan#0", "salaries of nobody's document")
        db.execute("COMMIT")

    for principal in R2_PRINCIPALS:
        for how in SEARCHES:
            got = found(salaries, how, "salaries", reader(principal))
            assert got == {f"{d}#0" for d, p in SALARIES.items() if p == principal}, how
    assert_results_follow_the_sql_reference(salaries)


def test_the_sql_reference_does_not_admit_a_negative_key_document_either(
    salaries: SQLiteStore,
) -> None:
    """Interpretation of "never admitted": the SQL filter (``allowed_doc_ids``, facts)
    agrees with the search, so the document and its facts are not admitted there either."""
    with raw(salaries.path, foreign_keys=True) as db:
        db.execute("BEGIN")
        insert_document(db, -1, "w:mallory", "user:mallory")
        db.execute(
            "INSERT INTO facts (doc_key, entity, period, metric, channel, value, unit, raw, "
            "locator) VALUES (-1, 'acme', '2025', 'price', 'all', 1.0, 'EUR', '1', 'x')"
        )
        db.execute("COMMIT")

    mallory = reader("user:mallory")
    assert salaries.allowed_doc_ids(mallory) == set()
    assert salaries.query_facts(mallory) == []


# ========================================================================= R3: SQLite rolled back
#
# SQLite rolls the whole transaction back by itself on SQLITE_FULL, I/O errors, interrupts
# and RAISE(ROLLBACK). `transaction()` then found no transaction to roll back: its ROLLBACK
# raised "no transaction is active" before the caches and the vocabulary were reset.

ANN_ONLY = frozenset({"user:ann"})
ANN = reader("user:ann")
EVE = reader("user:eve")


def make_statements_fail(path: Path, table: str, message: str) -> None:
    """Every insert into ``table`` makes SQLite roll the whole transaction back."""
    with raw(path, foreign_keys=True) as db:
        db.execute(
            f"CREATE TRIGGER fail_{table} BEFORE INSERT ON {table} "
            f"BEGIN SELECT RAISE(ROLLBACK, '{message}'); END"
        )


def let_statements_pass(path: Path, table: str) -> None:
    with raw(path, foreign_keys=True) as db:
        db.execute(f"DROP TRIGGER fail_{table}")


def assert_names_the_original_error(error: BaseException | None, message: str) -> None:
    assert isinstance(error, StoreError), repr(error)
    assert message in str(error)
    assert "no transaction is active" not in str(error)


def test_a_transaction_sqlite_rolled_back_itself_raises_the_original_error(
    store: SQLiteStore,
) -> None:
    put(store, "w:base", ["alpha"], acl=ANN_ONLY)
    make_statements_fail(store.path, "corpus_sync", "I/O error")

    with pytest.raises(StoreError) as caught, store.transaction() as db:
        db.execute("INSERT INTO corpus_sync VALUES ('wiki', 0)")

    assert_names_the_original_error(caught.value, "I/O error")
    let_statements_pass(store.path, "corpus_sync")
    store.record_acl_sync("wiki", NOW)  # the store is still usable
    assert store.last_acl_syncs() == {"wiki": NOW}


def vocabulary_after_sqlite_rolled_back(
    store: SQLiteStore,
) -> tuple[BaseException | None, dict[str, set[str]]]:
    """An upsert adds the term "zebra", then SQLite rolls back; "apple" and "zebra" are
    written next. Returns the upsert's error and what each word then finds."""
    put(store, "w:base", ["alpha"], acl=ANN_ONLY)
    make_statements_fail(store.path, "facts", "disk gone")
    error: BaseException | None = None
    try:
        put(store, "w:zebra", ["zebra"], acl=ANN_ONLY, facts=[fact("w:zebra")])
    except Exception as exc:
        error = exc
    let_statements_pass(store.path, "facts")
    put(store, "w:apple", ["apple"], acl=ANN_ONLY)  # SQLite hands it zebra's rolled-back id
    put(store, "w:z2", ["zebra"], acl=ANN_ONLY)
    return error, {q: found(store, "lexical", q, ANN) for q in ("apple", "zebra")}


def test_after_sqlite_rolled_back_the_writer_vocabulary_is_consistent(
    store: SQLiteStore,
) -> None:
    error, results = vocabulary_after_sqlite_rolled_back(store)

    assert_names_the_original_error(error, "disk gone")
    assert store.get_document("w:zebra") is None
    assert results == {"apple": {"w:apple#0"}, "zebra": {"w:z2#0"}}


def ghost_grant_after_sqlite_rolled_back(
    store: SQLiteStore,
) -> tuple[BaseException | None, set[str]]:
    """Inside a transaction eve is granted the secret and a search builds a copy from that
    uncommitted grant; then SQLite rolls back, and an unrelated ACL write commits (the
    access generation is back at the number the copy carries). Returns the transaction's
    error and what eve's next search finds."""
    put(store, "w:secret", ["acquisition target list"], acl=frozenset({"user:boss"}))
    assert found(store, "retrieve", "acquisition", EVE) == set()
    make_statements_fail(store.path, "corpus_sync", "I/O error")
    error: BaseException | None = None
    try:
        with store.transaction() as db:
            db.execute(
                "INSERT INTO doc_acl SELECT key, 'user:eve' FROM documents "
                "WHERE doc_id = 'w:secret'"
            )
            assert found(store, "retrieve", "acquisition", EVE) == {"w:secret#0"}
            db.execute("INSERT INTO corpus_sync VALUES ('wiki', 0)")
    except Exception as exc:
        error = exc
    let_statements_pass(store.path, "corpus_sync")
    with raw(store.path, foreign_keys=True) as db:
        assert (
            db.execute("SELECT count(*) FROM doc_acl WHERE principal = 'user:eve'").fetchone()[0]
            == 0
        )
        db.execute(
            "INSERT INTO doc_acl SELECT key, 'user:carol' FROM documents WHERE doc_id = 'w:secret'"
        )
    return error, found(store, "retrieve", "acquisition", EVE)


def test_a_copy_built_before_sqlite_rolled_back_is_never_served(store: SQLiteStore) -> None:
    error, eve_finds = ghost_grant_after_sqlite_rolled_back(store)

    assert_names_the_original_error(error, "I/O error")
    assert eve_finds == set()
    assert_answers_like_a_fresh_store(store, ["acquisition"], {"eve": EVE})


@contextmanager
def rolls_back_before_resetting(self: SQLiteStore) -> Iterator[sqlite3.Connection]:
    """`transaction()` as it was: ROLLBACK first, then reset the copies and vocabulary."""
    with self._lock:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            self._content = self._access = None
            self._vocabulary = None
            raise


def test_reverse_proof_rolling_back_before_resetting_serves_the_ghost_grant(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(SQLiteStore, "transaction", rolls_back_before_resetting)

    error, eve_finds = ghost_grant_after_sqlite_rolled_back(store)

    assert eve_finds == {"w:secret#0"}
    with pytest.raises(AssertionError):
        assert_names_the_original_error(error, "I/O error")


def test_reverse_proof_rolling_back_before_resetting_mixes_up_terms(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(SQLiteStore, "transaction", rolls_back_before_resetting)

    _, results = vocabulary_after_sqlite_rolled_back(store)

    assert results["apple"] == {"w:apple#0", "w:z2#0"}  # "zebra" filed under apple's id


# ========================================================================= R4: no live chunk


def orphan_vector(path: Path) -> None:
    """A vectors row whose chunk does not exist (foreign keys off)."""
    with raw(path, foreign_keys=False) as db:
        db.execute(
            "INSERT INTO vectors (chunk, vec) VALUES (999, ?)",
            (EMBEDDER.embed(["alpha"])[0].astype(np.float32).tobytes(),),
        )


@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
def test_vector_search_with_no_live_chunk_but_an_orphan_vector_finds_nothing(
    store: SQLiteStore, warm: bool
) -> None:
    put(store, "w:a", ["alpha"], acl=ANN_ONLY)
    if warm:
        assert found(store, "retrieve", "alpha", ANN) == {"w:a#0"}
    with raw(store.path, foreign_keys=False) as db:
        db.execute("DELETE FROM chunks")
    orphan_vector(store.path)

    for how in SEARCHES:
        assert found(store, how, "alpha", ANN) == set(), how
    assert_answers_like_a_fresh_store(store, ["alpha"], {"ann": ANN})


def test_an_empty_store_with_an_orphan_vector_finds_nothing(store: SQLiteStore) -> None:
    orphan_vector(store.path)

    assert store.vector_search(EMBEDDER.embed(["alpha"])[0], ANN, 5) == []


def test_positions_of_in_a_copy_without_live_chunks_are_all_missing() -> None:
    empty = ContentIndex.build(1, 0, [])
    assert empty.positions_of(np.array([7], dtype=np.int64)).tolist() == [-1]

    one = ContentIndex.build(1, 0, [(7, 1, 1, "w:a#0", 1, blob([1]), blob([1]))])
    gone = one.changed(2, 1, np.array([7], dtype=np.int64), [], None)
    assert gone.positions_of(np.array([7, 8], dtype=np.int64)).tolist() == [-1, -1]


# ========================================================================= R5: NaN vectors
#
# One NaN score made the top-k cut NaN, and every comparison with NaN is false: a bad row in
# any document the caller may read emptied the caller's whole vector list.


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf], ids=["nan", "inf", "-inf"])
def test_upsert_refuses_a_vector_that_is_not_finite(store: SQLiteStore, bad: float) -> None:
    put(store, "w:ok", ["alpha"], acl=ANN_ONLY)
    doc = document("w:bad", acl=ANN_ONLY)
    vector = np.ones(16, dtype=np.float32)
    vector[3] = bad

    with pytest.raises(StoreError, match="w:bad"):
        store.upsert(doc, chunks(doc, ["alpha", "beta"]), [np.ones(16, np.float32), vector])

    assert store.get_document("w:bad") is None
    assert found(store, "vector", "alpha", ANN) == {"w:ok#0"}


NAN_SCALES = {"w:0": 1.0, "w:1": 0.75, "w:2": 0.5, "w:3": 0.25}


def nan_index(store: SQLiteStore, *, warm: bool) -> np.ndarray:
    """Four documents everyone may read, vectors ``scale * q``; w:1's is then overwritten
    with NaN by a raw writer. Returns ``q``."""
    q = EMBEDDER.embed(["alpha"])[0]
    for doc_id, scale in NAN_SCALES.items():
        doc = document(doc_id, acl=frozenset({"everyone"}))
        store.upsert(doc, chunks(doc, ["alpha"]), [q * np.float32(scale)])
    everyone = reader("everyone")
    if warm:
        assert len(store.vector_search(q, everyone, 10)) == 4
    with raw(store.path, foreign_keys=True) as db:
        db.execute(
            "UPDATE vectors SET vec = ? WHERE chunk = ?",
            (np.full(16, np.nan, np.float32).tobytes(), chunk_key(db, "w:1#0")),
        )
    return q


@pytest.mark.parametrize("k", [1, 2, 3, 4, 10])
@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
def test_a_nan_vector_written_by_sql_never_empties_anyones_results(
    store: SQLiteStore, warm: bool, k: int
) -> None:
    q = nan_index(store, warm=warm)
    expected = ["w:0#0", "w:2#0", "w:3#0"][:k]

    for flt in (reader("everyone"), reader("user:ann", "everyone", ceiling=INTERNAL)):
        got = store.vector_search(q, flt, k)
        assert [c for c, _ in got] == expected
        assert all(np.isfinite(score) for _, score in got)
        assert [c for c, _ in store.retrieve("alpha", q, flt, k).vector] == expected


def ranks_every_score(
    self: SQLiteStore,
    content: ContentIndex,
    access: object,
    vector: np.ndarray,
    mask: npt.NDArray[np.bool_],
    k: int,
) -> list[tuple[str, float]]:
    """`SQLiteStore._vector` as it was: NaN scores go into the top-k cut."""
    rows = content.vectors
    if rows is None or rows.positions.size == 0:
        return []
    query = np.asarray(vector, dtype=np.float32).reshape(-1)
    candidates = np.flatnonzero(mask[rows.positions])
    if candidates.size == 0:
        return []
    scores = np.einsum("ij,j->i", rows.matrix, query)
    best = top_k(scores, candidates, content.keys[rows.positions[candidates]], k)
    return [(content.chunk_ids[rows.positions[r]], float(scores[r])) for r in best]


def test_reverse_proof_ranking_nan_scores_empties_the_results(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(SQLiteStore, "_vector", ranks_every_score)

    q = nan_index(store, warm=False)

    assert store.vector_search(q, reader("everyone"), 10) == []


# ========================================================================= R6: odd values
#
# Values outside what the store writes: a sensitivity outside 0..3 (300 overflowed the int8
# arrays and every search raised; -1 and -5 fell below every ceiling, -1 even below the
# "no access" ceiling of unreadable documents), term-id blobs of the wrong length, negative
# term ids. The odd row is never admitted / matches no term, and no search raises.

ODD_READERS = {
    "a reader of the odd document": reader("user:boss", "everyone"),
    "a reader of the other document only": reader("user:eve", "everyone"),
}


@pytest.fixture
def odd(store: SQLiteStore) -> SQLiteStore:
    """w:odd only boss may read; w:ok everyone may read. Both say "alpha"."""
    put(store, "w:odd", ["alpha"], acl=frozenset({"user:boss"}))
    put(store, "w:ok", ["alpha beta"], acl=frozenset({"everyone"}))
    return store


SENSITIVITIES = {
    "chunk sensitivity 300": "UPDATE chunks SET sensitivity = 300 WHERE chunk_id = 'w:odd#0'",
    "chunk sensitivity 100": "UPDATE chunks SET sensitivity = 100 WHERE chunk_id = 'w:odd#0'",
    "chunk sensitivity -1": "UPDATE chunks SET sensitivity = -1 WHERE chunk_id = 'w:odd#0'",
    "chunk sensitivity -5": "UPDATE chunks SET sensitivity = -5 WHERE chunk_id = 'w:odd#0'",
    "document sensitivity 300": "UPDATE documents SET sensitivity = 300 WHERE doc_id = 'w:odd'",
    "document sensitivity -1": "UPDATE documents SET sensitivity = -1 WHERE doc_id = 'w:odd'",
    "document sensitivity -5": "UPDATE documents SET sensitivity = -5 WHERE doc_id = 'w:odd'",
}


@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
@pytest.mark.parametrize("name", SENSITIVITIES)
def test_a_sensitivity_outside_the_scale_is_never_admitted(
    odd: SQLiteStore, name: str, warm: bool
) -> None:
    if warm:
        for flt in ODD_READERS.values():
            for how in SEARCHES:
                search(odd, how, "alpha", flt)
    with raw(odd.path, foreign_keys=True) as db:
        db.execute(SENSITIVITIES[name])

    for reader_name, flt in ODD_READERS.items():
        for how in SEARCHES:
            assert found(odd, how, "alpha", flt) == {"w:ok#0"}, (reader_name, how)
        hits = HybridSearcher(odd, EMBEDDER).search("alpha", flt, 10)
        assert [h.chunk.chunk_id for h in hits] == ["w:ok#0"]
    assert_answers_like_a_fresh_store(odd, ["alpha"], ODD_READERS)


def test_reverse_proof_without_the_level_check_a_chunk_at_minus_1_is_served_to_anyone(
    odd: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """-1 is also the ceiling of a document the reader may not read: the chunk passes."""
    monkeypatch.setattr(memory_module, "_LEVELS", frozenset(range(-128, 128)))
    with raw(odd.path, foreign_keys=True) as db:
        db.execute(SENSITIVITIES["chunk sensitivity -1"])

    eve = ODD_READERS["a reader of the other document only"]
    for how in SEARCHES:
        assert found(odd, how, "alpha", eve) == {"w:odd#0", "w:ok#0"}


@pytest.mark.parametrize("level", [300, -1, -5])
def test_facts_of_a_document_with_a_sensitivity_outside_the_scale_are_never_served(
    store: SQLiteStore, level: int
) -> None:
    """Interpretation of "never admitted … no search raises" for the SQL side: the fact
    query (and ``allowed_doc_ids``) neither admits the document nor raises on its row."""
    put(store, "w:odd", ["alpha"], acl=frozenset({"everyone"}), facts=[fact("w:odd", 7.0)])
    put(store, "w:ok", ["alpha"], acl=frozenset({"everyone"}), facts=[fact("w:ok", 1.0)])
    with raw(store.path, foreign_keys=True) as db:
        db.execute("UPDATE documents SET sensitivity = ? WHERE doc_id = 'w:odd'", (level,))

    everyone = reader("everyone")
    assert store.allowed_doc_ids(everyone) == {"w:ok"}
    assert [(f.doc_id, f.value) for f, _ in store.query_facts(everyone)] == [("w:ok", 1.0)]


def alpha_id(db: sqlite3.Connection) -> int:
    (term,) = document_terms("alpha")
    return int(db.execute("SELECT id FROM terms WHERE term = ?", (term,)).fetchone()[0])


BLOBS: dict[str, Callable[[int], tuple[bytes, bytes]]] = {
    "term ids of 3 bytes": lambda a: (b"\x01\x00\x00", b"\x01\x00\x00"),
    "term ids of 5 bytes": lambda a: (blob([a]) + b"\x00", blob([1])),
    "frequencies of another length": lambda a: (blob([a]), blob([1, 1])),
    "a negative term id": lambda a: (blob([-1]), blob([1])),
    "a negative and a valid term id": lambda a: (blob([-1, a]), blob([1, 1])),
}


@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
@pytest.mark.parametrize("name", BLOBS)
def test_a_malformed_term_row_matches_no_term_and_breaks_no_search(
    odd: SQLiteStore, name: str, warm: bool
) -> None:
    boss = ODD_READERS["a reader of the odd document"]
    if warm:
        for how in SEARCHES:
            assert found(odd, how, "alpha", boss) == {"w:odd#0", "w:ok#0"}
    with raw(odd.path, foreign_keys=True) as db:
        term_ids, tfs = BLOBS[name](alpha_id(db))
        db.execute(
            "UPDATE chunk_terms SET term_ids = ?, tfs = ? WHERE chunk = ?",
            (term_ids, tfs, chunk_key(db, "w:odd#0")),
        )

    assert found(odd, "lexical", "alpha", boss) == {"w:ok#0"}
    assert found(odd, "lexical", "beta", boss) == {"w:ok#0"}
    vector = EMBEDDER.embed(["alpha"])[0]
    both = odd.retrieve("alpha", vector, boss, 10)
    assert {c for c, _ in both.lexical} == {"w:ok#0"}
    # it is still a chunk: its vector is served
    assert {c for c, _ in both.vector} == {"w:odd#0", "w:ok#0"}
    assert_answers_like_a_fresh_store(odd, ["alpha", "beta"], ODD_READERS)


# ========================================================================= R8: key reuse
#
# documents.key has no AUTOINCREMENT: SQLite reuses the highest key once it is deleted. A
# delete with foreign keys off left the ACL and chunks behind, and the next document took the
# key and inherited them.

HR = reader("user:hr")
CHILD_TABLES = {
    "doc_acl": "SELECT count(*) FROM doc_acl",
    "chunks": "SELECT count(*) FROM chunks",
    "chunk_terms": "SELECT count(*) FROM chunk_terms",
    "vectors": "SELECT count(*) FROM vectors",
    "facts": "SELECT count(*) FROM facts",
}


def rows_left(path: Path) -> dict[str, int]:
    with raw(path, foreign_keys=True) as db:
        return {t: int(db.execute(sql).fetchone()[0]) for t, sql in CHILD_TABLES.items()}


def purge_and_reuse_the_key(store: SQLiteStore) -> None:
    """w:hr (hr only) is purged by a writer without foreign keys; w:lunch (ann only) is
    then written and takes the freed key."""
    put(
        store,
        "w:hr",
        ["salary of every employee"],
        acl=frozenset({"user:hr"}),
        facts=[fact("w:hr", 9e6)],
    )
    with raw(store.path, foreign_keys=False) as db:
        old = doc_key(db, "w:hr")
        db.execute("DELETE FROM documents WHERE doc_id = 'w:hr'")
    put(store, "w:lunch", ["lunch menu"], acl=ANN_ONLY, facts=[fact("w:lunch", 12.0)])
    with raw(store.path, foreign_keys=True) as db:
        assert doc_key(db, "w:lunch") == old  # the key was reused


def assert_inherits_nothing(store: SQLiteStore) -> None:
    assert found(store, "lexical", "salary", ANN) == set()
    for how in SEARCHES:  # (a vector search returns every chunk the reader may read)
        assert found(store, how, "salary", ANN) <= {"w:lunch#0"}, how
        assert found(store, how, "lunch", ANN) == {"w:lunch#0"}, how
        assert found(store, how, "lunch", HR) == set(), how
    assert store.allowed_doc_ids(HR) == set()
    assert store.query_facts(HR) == []
    assert [(f.doc_id, f.value) for f, _ in store.query_facts(ANN)] == [("w:lunch", 12.0)]
    lunch = store.get_document("w:lunch")
    assert lunch is not None and lunch.acl == ANN_ONLY
    assert [c.text for c in store.get_chunks("w:lunch")] == ["lunch menu"]


def test_a_document_deleted_without_foreign_keys_leaves_no_rows_behind(
    store: SQLiteStore,
) -> None:
    put(
        store,
        "w:hr",
        ["salary of every employee"],
        acl=frozenset({"user:hr"}),
        facts=[fact("w:hr")],
    )
    with raw(store.path, foreign_keys=False) as db:
        db.execute("DELETE FROM documents WHERE doc_id = 'w:hr'")

    assert rows_left(store.path) == dict.fromkeys(CHILD_TABLES, 0)


def test_a_chunk_deleted_without_foreign_keys_leaves_no_rows_behind(store: SQLiteStore) -> None:
    put(store, "w:a", ["alpha", "beta"], acl=ANN_ONLY)
    with raw(store.path, foreign_keys=False) as db:
        db.execute("DELETE FROM chunks WHERE chunk_id = 'w:a#0'")

    assert rows_left(store.path) == {
        "doc_acl": 1,
        "chunks": 1,
        "chunk_terms": 1,
        "vectors": 1,
        "facts": 0,
    }


def test_a_document_reusing_a_purged_key_inherits_nothing(store: SQLiteStore) -> None:
    purge_and_reuse_the_key(store)

    assert_inherits_nothing(store)
    assert_answers_like_a_fresh_store(store, ["salary", "lunch"], {"ann": ANN, "hr": HR})


def test_reverse_proof_without_the_delete_triggers_the_reused_key_inherits(
    store: SQLiteStore,
) -> None:
    drop_triggers(store.path, delete_triggers(store.path))

    purge_and_reuse_the_key(store)

    assert found(store, "lexical", "salary", ANN) == {"w:hr#0"}  # hr's secret, read by ann
    assert found(store, "lexical", "lunch", HR) == {"w:lunch#0"}  # ann's document, read by hr
    with pytest.raises(AssertionError):
        assert_inherits_nothing(store)


# ========================================================================= R9: reads vs a write
#
# Threads share one connection. A read that does not wait for an open write transaction of
# another thread reads its uncommitted rows, including a grant that is then rolled back.

BOSS = reader("user:boss")


@pytest.fixture
def takeover(store: SQLiteStore) -> SQLiteStore:
    put(
        store,
        "w:secret",
        ["takeover price"],
        acl=frozenset({"user:boss"}),
        facts=[fact("w:secret", 9e6)],
    )
    return store


READS: dict[str, Callable[[SQLiteStore], Any]] = {
    "allowed_doc_ids": lambda s: (s.allowed_doc_ids(EVE), s.allowed_doc_ids(BOSS)),
    "query_facts": lambda s: (
        [(f.doc_id, f.value) for f, _ in s.query_facts(EVE)],
        [(f.doc_id, f.value) for f, _ in s.query_facts(BOSS)],
    ),
    "hits": lambda s: [
        (c.chunk_id, c.text, d.title, d.acl) for c, d in s.hits(["w:secret#0", "w:draft#0"])
    ],
    "get_document": lambda s: (s.get_document("w:secret"), s.get_document("w:draft")),
}


def write_uncommitted(db: sqlite3.Connection) -> None:
    """A grant, a new title and text, a new fact and a new document: never committed."""
    key = doc_key(db, "w:secret")
    db.execute("INSERT INTO doc_acl VALUES (?, 'user:eve')", (key,))
    db.execute("UPDATE documents SET title = 'Draft' WHERE key = ?", (key,))
    db.execute("UPDATE chunks SET text = 'uncommitted draft' WHERE doc_key = ?", (key,))
    db.execute(
        "INSERT INTO facts (doc_key, entity, period, metric, channel, value, unit, raw, "
        "locator) VALUES (?, 'acme', '2025', 'price', 'all', 1.0, 'EUR', '1', 'x')",
        (key,),
    )
    db.execute(
        "INSERT INTO documents (doc_id, source_system, corpus, title, uri, sensitivity, "
        "ai_allowed, personal_data, origin, origin_chain, content_hash, version, format, extra, "
        "ingested_at) SELECT 'w:draft', source_system, corpus, title, uri, sensitivity, "
        "ai_allowed, personal_data, origin, origin_chain, content_hash, version, format, extra, "
        "ingested_at FROM documents WHERE key = ?",
        (key,),
    )
    draft = doc_key(db, "w:draft")
    db.execute("INSERT INTO doc_acl VALUES (?, 'user:eve'), (?, 'user:boss')", (draft, draft))
    db.execute(
        "INSERT INTO chunks (chunk_id, doc_key, ordinal, text, locator, sensitivity, origin) "
        "VALUES ('w:draft#0', ?, 0, 'draft', 'x', 1, 'human')",
        (draft,),
    )


class AnnouncingLock:
    """The store's lock, setting ``asked`` when the reader thread asks for it: the reader
    then waits for the writer, which the test may now let finish."""

    def __init__(self, lock: Any, asked: threading.Event) -> None:
        self._lock = lock
        self.asked = asked
        self.reader: int | None = None

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if threading.get_ident() == self.reader:
            self.asked.set()
        return bool(self._lock.acquire(blocking, timeout))

    def release(self) -> None:
        self._lock.release()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def read_during_an_open_write(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch, read: Callable[[SQLiteStore], Any]
) -> Any:
    """``read`` run on another thread while a write transaction (rolled back in the end)
    holds uncommitted rows. The writer is let go once the reader has either read or
    started waiting for the store's lock."""
    either = threading.Event()
    lock = AnnouncingLock(store._lock, either)
    monkeypatch.setattr(store, "_lock", lock)
    inside, release = threading.Event(), threading.Event()
    outcome: dict[str, Any] = {}

    def writer() -> None:
        try:
            with store.transaction() as db:
                write_uncommitted(db)
                outcome["own view"] = db.execute(
                    "SELECT count(*) FROM doc_acl WHERE principal = 'user:eve'"
                ).fetchone()[0]
                inside.set()
                release.wait(10)
                raise RuntimeError("validation failed: roll back")
        except RuntimeError:
            pass

    def reading() -> None:
        lock.reader = threading.get_ident()
        try:
            outcome["read"] = read(store)
        except BaseException as exc:
            outcome["error"] = exc
        either.set()

    write = threading.Thread(target=writer)
    write.start()
    try:
        assert inside.wait(10)
        assert outcome["own view"] == 2  # the uncommitted rows are there to be seen
        reads = threading.Thread(target=reading)
        reads.start()
        assert either.wait(10)
    finally:
        release.set()
        write.join(10)
    reads.join(10)
    assert not write.is_alive() and not reads.is_alive()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["read"]


@pytest.mark.parametrize("name", READS)
def test_a_read_from_another_thread_never_sees_an_open_write(
    takeover: SQLiteStore, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    read = READS[name]
    committed = read(takeover)

    assert read_during_an_open_write(takeover, monkeypatch, read) == committed
    assert read(takeover) == committed


def unlocked_allowed_doc_ids(self: SQLiteStore, flt: SearchFilter) -> set[str]:
    """`allowed_doc_ids` as it was: straight on the shared connection."""
    sql, params = self._allowed(flt)
    rows = self._db.execute(
        f"SELECT doc_id FROM documents WHERE key IN (SELECT doc_key FROM ({sql}))", params
    ).fetchall()
    return {str(r[0]) for r in rows}


def test_reverse_proof_an_unlocked_read_sees_the_uncommitted_grant(
    takeover: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(SQLiteStore, "allowed_doc_ids", unlocked_allowed_doc_ids)
    read = READS["allowed_doc_ids"]
    committed = read(takeover)

    during = read_during_an_open_write(takeover, monkeypatch, read)

    assert during == ({"w:secret", "w:draft"}, {"w:secret", "w:draft"})
    assert during != committed


# ========================================================================= R10: opened twice
#
# Two processes opening the same file at once: both read the schema version before either
# migrates. The second migration re-inserted every term row (UNIQUE constraint) and the
# second open failed; on a new file the second insert of the schema version failed.


def schema_1_in_wal(path: Path) -> None:
    """A schema-1 index already in WAL mode, so that the only race left between two opens
    is the one over the schema (two connections switching the journal mode at the same
    instant are the business of the stress test below)."""
    write_schema_1(path)
    with raw(path, foreign_keys=True) as db:
        assert db.execute("PRAGMA journal_mode = WAL").fetchone() == ("wal",)


def open_twice_at_once(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Two threads open ``path``; neither goes on from its first read of the schema version
    until the other has made it too. Returns the versions they read and each outcome."""
    barrier = threading.Barrier(2)
    versions: dict[str, Any] = {}
    original = SQLiteStore._schema_version

    def both_read_first(self: SQLiteStore) -> Any:
        version = original(self)
        name = threading.current_thread().name
        if name not in versions:
            versions[name] = version
            barrier.wait(10)
        return version

    monkeypatch.setattr(SQLiteStore, "_schema_version", both_read_first)
    outcomes: dict[str, Any] = {}

    def open_store(name: str) -> None:
        try:
            SQLiteStore(path).close()
            outcomes[name] = "opened"
        except Exception as exc:
            outcomes[name] = exc
            barrier.abort()  # the other opener does not wait for one that is gone

    threads = [threading.Thread(target=open_store, args=(n,), name=f"opener-{n}") for n in "AB"]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    monkeypatch.undo()
    return versions, outcomes


def test_a_schema_1_file_opened_twice_at_once_is_migrated_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "index.db"
    schema_1_in_wal(path)

    versions, outcomes = open_twice_at_once(path, monkeypatch)

    assert outcomes == {"A": "opened", "B": "opened"}
    assert sorted(versions.values()) == [1, 1]  # both saw schema 1: the race was run
    with SQLiteStore(path) as store, raw(path, foreign_keys=True) as db:
        assert store.get_meta("schema_version") == 2
        assert db.execute("SELECT count(*) FROM chunk_terms").fetchone() == (5,)
        assert [c for c, _ in store.lexical_search("forecast", FINANCE, 5)] == [
            "wiki:report#0",
            "wiki:report#1",
        ]


def prepares_without_rechecking(self: SQLiteStore) -> None:
    """`_prepare` trusting the version read before it took the lock (schema 1 here) instead
    of reading it again once it holds the lock."""
    with self.transaction() as db:
        for statement in sqlite_module._SCHEMA_STATEMENTS:
            db.execute(statement)
        self._install_triggers(db)
        self._migrate_from_1(db)


def test_reverse_proof_a_migration_that_does_not_recheck_fails_the_second_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "index.db"
    schema_1_in_wal(path)
    monkeypatch.setattr(SQLiteStore, "_prepare", prepares_without_rechecking)

    versions, outcomes = open_twice_at_once(path, monkeypatch)

    assert sorted(versions.values()) == [1, 1]
    failed = [o for o in outcomes.values() if o != "opened"]
    assert len(failed) == 1
    assert isinstance(failed[0], StoreError) and "UNIQUE" in str(failed[0])


def test_a_new_file_opened_twice_at_once_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "index.db"

    versions, outcomes = open_twice_at_once(path, monkeypatch)

    assert outcomes == {"A": "opened", "B": "opened"}
    assert list(versions.values()) == [None, None]  # both saw a new file
    with SQLiteStore(path) as store:
        assert store.get_meta("schema_version") == 2
        put(store, "w:a", ["alpha"], acl=ANN_ONLY)
        assert found(store, "retrieve", "alpha", ANN) == {"w:a#0"}


@pytest.mark.parametrize(("kind", "rounds"), [("new", 100), ("schema 1", 100)])
def test_a_file_opened_by_two_threads_at_the_same_instant_always_opens(
    tmp_path: Path, kind: str, rounds: int
) -> None:
    """Nothing held back: both threads start opening together, many times over. Among
    other things both switch a file that is not yet in WAL mode to it, which SQLite may
    refuse at once ("database is locked") instead of waiting for the other connection.
    (A race: each round catches a wrong open only sometimes, so there are many.)"""
    failures: list[BaseException] = []
    for n in range(rounds):
        path = tmp_path / f"{n}.db"
        if kind == "schema 1":
            write_schema_1(path)
        start = threading.Barrier(2)

        def open_store(path: Path = path, start: threading.Barrier = start) -> None:
            start.wait(10)
            try:
                SQLiteStore(path).close()
            except Exception as exc:
                failures.append(exc)

        threads = [threading.Thread(target=open_store) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert failures == [], f"round {n}"
        with SQLiteStore(path) as store:
            assert store.get_meta("schema_version") == 2


# ========================================================================= sound checks
#
# Found sound by the review, kept as regression tests (what test_freshness.py does not
# already cover: the empty index, empty texts, and raw UPDATEs under a per-corpus filter
# together with their undo).


def test_an_empty_index_answers_every_search_with_nothing(store: SQLiteStore) -> None:
    for how in SEARCHES:
        assert found(store, how, "anything", ANN) == set(), how


FIN = reader("user:a", corpora={"fin": INTERNAL})


def test_empty_texts_and_titles_are_indexed_without_harm(store: SQLiteStore) -> None:
    doc = document("w:a", acl={"user:a"}, corpus="fin")
    store.upsert(doc, chunks(doc, ["budget", ""]), list(EMBEDDER.embed(["budget", ""])))
    empty = document("w:empty", acl={"user:a"}, corpus="fin", title="")
    store.upsert(empty, chunks(empty, [""]))

    assert [c for c, _ in store.lexical_search("budget", FIN, 5)] == ["w:a#0"]
    assert store.lexical_search("", FIN, 5) == []
    assert found(store, "vector", "budget", FIN) == {"w:a#0", "w:a#1"}
    assert [c.text for c, _ in store.hits(["w:empty#0"])] == [""]


ROUND_TRIPS = {
    "move the ACL row to another principal": (
        "UPDATE doc_acl SET principal = 'user:b'",
        "UPDATE doc_acl SET principal = 'user:a'",
    ),
    "move the document to another corpus": (
        "UPDATE documents SET corpus = 'hr'",
        "UPDATE documents SET corpus = 'fin'",
    ),
    "raise the document's sensitivity": (
        "UPDATE documents SET sensitivity = 2",
        "UPDATE documents SET sensitivity = 1",
    ),
    "let the document expire": (
        f"UPDATE documents SET expires_at = {NOW.timestamp() - 1}",
        "UPDATE documents SET expires_at = NULL",
    ),
    "withdraw AI use": (
        "UPDATE documents SET ai_allowed = 0",
        "UPDATE documents SET ai_allowed = 1",
    ),
    "raise the chunks' sensitivity": (
        "UPDATE chunks SET sensitivity = 2",
        "UPDATE chunks SET sensitivity = 1",
    ),
}


@pytest.mark.parametrize("name", ROUND_TRIPS)
def test_a_raw_update_and_its_undo_are_both_seen_under_a_per_corpus_filter(
    store: SQLiteStore, name: str
) -> None:
    doc = document("w:a", acl={"user:a"}, corpus="fin", sensitivity=INTERNAL)
    texts = ["budget", "budget review"]
    store.upsert(doc, chunks(doc, texts), list(EMBEDDER.embed(texts)))
    both = {"w:a#0", "w:a#1"}
    change, undo = ROUND_TRIPS[name]

    for sql, expected in ((None, both), (change, set()), (undo, both)):
        if sql is not None:
            with raw(store.path, foreign_keys=True) as db:
                db.execute(sql)
        for how in SEARCHES:
            assert found(store, how, "budget", FIN) == expected, (sql, how)
        assert_answers_like_a_fresh_store(store, ["budget"], {"fin": FIN})
