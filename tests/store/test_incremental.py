"""A reader patches its in-memory content copy from the change log instead of rebuilding it.

When the content generation moved, :meth:`SQLiteStore._current_content` reads the chunk ids
the triggers logged since the copy's ``log_seq``, marks their old positions dead and appends
their current rows (and vectors, if loaded). It rebuilds instead when there is no copy, the
log was pruned past it, or too much was touched or would be dead.

Rankings break ties by chunk key and every score comes from integers and per-chunk values,
so a patched copy must rank *exactly* like a fresh one: same ids, same float scores, same
order. The property drives a long-lived store through random writes (its own upserts,
deletes and ACL changes, and raw SQL from a second connection) and compares every search
with a store freshly opened on the same file. The targeted tests pin down when a copy is
patched and when it is rebuilt, and the reverse proofs run the same comparison against
deliberately wrong patches and show it rejects them.
"""

from __future__ import annotations

import sqlite3
import tempfile
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import factories
from clearance.llm.embedding import HashingEmbedder
from clearance.model import Document, Sensitivity
from clearance.store import memory as memory_module
from clearance.store import sqlite as sqlite_module
from clearance.store.base import SearchFilter
from clearance.store.memory import ContentIndex
from clearance.store.sqlite import SQLiteStore
from store.rawsql import raw

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
EMBEDDER = HashingEmbedder(dim=16)
EVERYONE = frozenset({"everyone"})
PRINCIPALS = ("everyone", "user:ann", "user:bo", "group:legal")
LEVELS = tuple(Sensitivity)
# A small vocabulary, so texts repeat and scores tie (ties are where order bugs hide).
VOCAB = ("revenue", "forecast", "margin", "tokyo", "report", "the", "東京", "売上", "会議")
QUERIES = ("revenue forecast", "東京 売上", "margin report tokyo")
QUERY_VECTORS = tuple(EMBEDDER.embed(list(QUERIES)))
FILTERS = (
    SearchFilter(principals=frozenset({"everyone", "user:ann"}), now=NOW),
    SearchFilter(
        principals=frozenset({"user:bo", "group:legal"}),
        max_sensitivity=Sensitivity.RESTRICTED,
        now=NOW,
    ),
    SearchFilter(principals=EVERYONE, max_sensitivity=Sensitivity.PUBLIC, now=NOW),
)
ALL = SearchFilter(
    principals=frozenset(PRINCIPALS), max_sensitivity=Sensitivity.RESTRICTED, now=NOW
)
KS = (3, 50)  # a cut inside the ties, and everything
HOWS = ("lexical", "vector", "retrieve")


# --------------------------------------------------------------------------- documents


def document(
    doc_id: str,
    acl: frozenset[str] = EVERYONE,
    sensitivity: Sensitivity = Sensitivity.PUBLIC,
    title: str = "",
) -> Document:
    return factories.document(
        doc_id,
        source_system="wiki",
        corpus="wiki",
        title=title,
        acl=acl,
        sensitivity=sensitivity,
        content_hash=doc_id,
    )


def put(
    store: SQLiteStore,
    doc_id: str,
    texts: Sequence[str],
    *,
    acl: frozenset[str] = EVERYONE,
    vectors: bool = True,
) -> None:
    doc = document(doc_id, acl)
    chunks = factories.chunks(doc, texts, locator="section={i}")
    store.upsert(doc, chunks, list(EMBEDDER.embed(list(texts))) if vectors else None)


def chunk_keys(path: Path) -> list[int]:
    with raw(path) as db:
        return [int(r[0]) for r in db.execute("SELECT id FROM chunks ORDER BY id")]


# --------------------------------------------------------------------------- the check


def searches(store: SQLiteStore, hows: Sequence[str] = HOWS) -> dict[tuple[Any, ...], Any]:
    """Every search of the fixed grid: (how, filter, query, k) → results."""
    out: dict[tuple[Any, ...], Any] = {}
    for f, flt in enumerate(FILTERS):
        for query, vector in zip(QUERIES, QUERY_VECTORS, strict=True):
            for k in KS:
                if "lexical" in hows:
                    out["lexical", f, query, k] = store.lexical_search(query, flt, k)
                if "vector" in hows:
                    out["vector", f, query, k] = store.vector_search(vector, flt, k)
                if "retrieve" in hows:
                    out["retrieve", f, query, k] = tuple(store.retrieve(query, vector, flt, k))
    return out


def assert_ranks_like_a_fresh_store(store: SQLiteStore, hows: Sequence[str] = HOWS) -> None:
    """``store``'s searches equal, exactly (ids, float scores, order), those of a store
    opened afresh on the same file, which builds its copies from scratch."""
    got = searches(store, hows)
    with SQLiteStore(store.path) as fresh:
        expected = searches(fresh, hows)
    assert got.keys() == expected.keys()
    for key, results in expected.items():
        assert got[key] == results, key


# --------------------------------------------------------------------------- operations


@dataclass(frozen=True)
class Upsert:
    doc: int
    title: str
    acl: frozenset[str]
    sensitivity: Sensitivity
    chunks: tuple[tuple[str, Sensitivity, bool], ...]  # text, sensitivity, has a vector


@dataclass(frozen=True)
class Delete:
    doc: int


@dataclass(frozen=True)
class SetAcl:
    doc: int
    acl: frozenset[str]


@dataclass(frozen=True)
class Raw:
    """One statement through a second connection, on the ``pick``-th chunk (or document)."""

    what: str
    pick: int
    value: Any = None


@dataclass(frozen=True)
class Search:
    """The lazy reader (a second store that only reads) searches, catching up at once on
    everything written since its last search."""

    hows: tuple[str, ...]


Op = Upsert | Delete | SetAcl | Raw | Search

RAW_SQL = {
    "chunk sensitivity": "UPDATE chunks SET sensitivity = ? WHERE id = ?",
    "delete chunk": "DELETE FROM chunks WHERE id = ?",
    "delete terms": "DELETE FROM chunk_terms WHERE chunk = ?",
    "delete vector": "DELETE FROM vectors WHERE chunk = ?",
    "acl": "UPDATE OR IGNORE doc_acl SET principal = ? WHERE doc_key = ?",
}


def upsert(store: SQLiteStore, op: Upsert) -> None:
    doc_id = f"doc:{op.doc}"
    doc = document(doc_id, op.acl, op.sensitivity, op.title)
    chunks = [
        factories.chunk(doc, text, ordinal=i, locator=f"section={i}", sensitivity=level)
        for i, (text, level, _) in enumerate(op.chunks)
    ]
    vectors = [
        EMBEDDER.embed([text])[0] if has_vector else None for text, _, has_vector in op.chunks
    ]
    store.upsert(doc, chunks, vectors)


def apply(store: SQLiteStore, db: sqlite3.Connection, op: Op) -> None:
    if isinstance(op, Upsert):
        upsert(store, op)
    elif isinstance(op, Delete):
        store.delete(f"doc:{op.doc}")
    elif isinstance(op, SetAcl):
        store.set_acl(f"doc:{op.doc}", op.acl)
    elif isinstance(op, Raw):
        table = "documents ORDER BY key" if op.what == "acl" else "chunks ORDER BY id"
        keys = [r[0] for r in db.execute(f"SELECT rowid FROM {table}")]
        if keys:
            args = (keys[op.pick % len(keys)],)
            db.execute(RAW_SQL[op.what], args if op.value is None else (op.value, *args))


@dataclass
class Tally:
    """How the long-lived store's content copy was replaced after each write."""

    patched: int = 0
    rebuilt: int = 0


@contextmanager
def watching_patches() -> Iterator[weakref.WeakSet[ContentIndex]]:
    """Every copy :meth:`ContentIndex.changed` returns (whatever ``changed`` is now)."""
    made: weakref.WeakSet[ContentIndex] = weakref.WeakSet()
    original = ContentIndex.changed

    def spy(self: ContentIndex, *args: Any) -> ContentIndex:
        result = original(self, *args)
        made.add(result)
        return result

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ContentIndex, "changed", spy)
        yield made


def run(path: Path, ops: Sequence[Op]) -> Tally:
    """Apply ``ops`` to a long-lived store and check it against a fresh one after each;
    the lazy reader is checked at each :class:`Search` and at the end."""
    tally = Tally()
    with (
        watching_patches() as patched,
        SQLiteStore(path) as store,
        SQLiteStore(path) as reader,
        raw(path) as db,
    ):
        previous = None
        for op in ops:
            if isinstance(op, Search):
                assert_ranks_like_a_fresh_store(reader, op.hows)
            else:
                apply(store, db, op)
            assert_ranks_like_a_fresh_store(store)
            current = store._content
            if current is not previous:
                if current in patched:
                    tally.patched += 1
                else:
                    tally.rebuilt += 1
            previous = current
        assert_ranks_like_a_fresh_store(reader)
    return tally


# --------------------------------------------------------------------------- the property

texts = st.lists(st.sampled_from(VOCAB), min_size=1, max_size=5).map(" ".join)
acls = st.frozensets(st.sampled_from(PRINCIPALS), max_size=3)
docs = st.integers(0, 4)


@st.composite
def upserts(draw: st.DrawFn) -> Upsert:
    sensitivity = draw(st.sampled_from(LEVELS[:3]))
    # some chunks more sensitive than their document
    levels = st.sampled_from([level for level in LEVELS if level >= sensitivity])
    chunks = draw(st.lists(st.tuples(texts, levels, st.booleans()), min_size=1, max_size=3))
    return Upsert(
        doc=draw(docs),
        title=draw(st.sampled_from(["", "report", "東京 forecast"])),
        acl=draw(acls),
        sensitivity=sensitivity,
        chunks=tuple(chunks),
    )


raw_ops = st.one_of(
    st.builds(Raw, st.just("chunk sensitivity"), st.integers(0, 20), st.sampled_from(LEVELS)),
    st.builds(
        Raw, st.sampled_from(["delete chunk", "delete terms", "delete vector"]), st.integers(0, 20)
    ),
    st.builds(Raw, st.just("acl"), st.integers(0, 20), st.sampled_from(PRINCIPALS)),
)
operations = st.one_of(
    upserts(),
    upserts(),  # the most common write, and the one that re-upserts existing documents
    st.builds(Delete, docs),
    st.builds(SetAcl, docs, acls),
    raw_ops,
    st.builds(Search, st.sampled_from([("lexical",), ("vector",), HOWS])),
)
# (_PATCH_TOUCHED, _PATCH_DEAD, _LOG_KEPT): never rebuilt for dead positions (they pile
# up); the defaults; the log pruned to a few entries; touching more than 2 chunks rebuilds.
GENEROUS = (0.2, 100.0, 300_000)
LIMITS = (GENEROUS, (0.2, 0.25, 300_000), (0.2, 100.0, 4), (0.002, 0.25, 300_000))


@settings(max_examples=60, deadline=None, derandomize=True)
@given(limits=st.sampled_from(LIMITS), ops=st.lists(operations, min_size=2, max_size=15))
def test_a_long_lived_store_ranks_exactly_like_a_freshly_opened_one(
    limits: tuple[float, float, int], ops: list[Op]
) -> None:
    touched, dead, kept = limits
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        mp.setattr(sqlite_module, "_PATCH_TOUCHED", touched)
        mp.setattr(sqlite_module, "_PATCH_DEAD", dead)
        mp.setattr(sqlite_module, "_LOG_KEPT", kept)
        tally = run(Path(tmp) / "index.db", ops)
    event(f"limits {limits}: patched {'>0' if tally.patched else '0'}")
    if limits == GENEROUS:
        # Every content write is logged, the log is never pruned and nothing is too much:
        # after its first build, the store only ever patches.
        assert tally.rebuilt == 1


# A fixed history touching every kind of write; the patch path must be taken.
SCENARIO: list[Op] = [
    Upsert(0, "", EVERYONE, Sensitivity.PUBLIC, (("revenue forecast", Sensitivity.PUBLIC, True), ("東京 売上", Sensitivity.INTERNAL, True))),
    Upsert(1, "report", frozenset({"user:ann", "user:bo"}), Sensitivity.INTERNAL, (("margin report", Sensitivity.INTERNAL, True),)),
    Upsert(2, "", frozenset({"group:legal", "everyone"}), Sensitivity.PUBLIC, (("revenue forecast", Sensitivity.PUBLIC, True), ("tokyo margin", Sensitivity.RESTRICTED, False))),
    Upsert(3, "", EVERYONE, Sensitivity.PUBLIC, (("revenue tokyo", Sensitivity.PUBLIC, True),)),
    Search(("lexical",)),
    # re-upsert with new text: the old chunks must disappear, the new ones appear
    Upsert(0, "", EVERYONE, Sensitivity.PUBLIC, (("margin the report", Sensitivity.PUBLIC, True), ("東京 会議", Sensitivity.PUBLIC, True), ("revenue", Sensitivity.PUBLIC, True))),
    Raw("chunk sensitivity", 3, Sensitivity.CONFIDENTIAL),
    Search(("vector",)),
    Raw("delete terms", 1),
    SetAcl(1, frozenset({"user:bo"})),
    Raw("delete vector", 4),
    Delete(2),
    Raw("delete chunk", 0),
    Raw("acl", 0, "user:bo"),
    Upsert(3, "東京 forecast", frozenset({"user:ann"}), Sensitivity.PUBLIC, (("revenue forecast", Sensitivity.PUBLIC, True),)),
]  # fmt: skip


def test_the_fixed_history_is_patched_and_ranks_like_a_fresh_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A store this small would soon be over the default dead share: patch regardless.
    monkeypatch.setattr(sqlite_module, "_PATCH_DEAD", 100.0)

    tally = run(tmp_path / "index.db", SCENARIO)

    writes = sum(not isinstance(op, Search | SetAcl) for op in SCENARIO)
    # The first write is followed by a build, every later one by a patch, except the raw
    # ACL write: like set_acl, it leaves the content copy alone.
    assert tally == Tally(patched=writes - 2, rebuilt=1)


EARLIER_TRIGGER = (
    "CREATE TRIGGER {table}_{event}_bumps_content_generation AFTER {event} ON {table} "
    "BEGIN UPDATE meta SET value = CAST(value AS INTEGER) + 1 "
    "WHERE key = 'content_generation'; END"
)


def test_an_index_with_earlier_trigger_definitions_gets_them_replaced(tmp_path: Path) -> None:
    """Triggers are part of the code, not of the schema version: opening a file whose
    triggers differ (written before writes were logged) replaces them."""
    path = tmp_path / "index.db"
    SQLiteStore(path).close()
    with raw(path) as db:  # the content triggers as an earlier version created them
        for table in ("chunks", "chunk_terms", "vectors"):
            for event in ("insert", "update", "delete"):
                db.execute(f"DROP TRIGGER {table}_{event}_bumps_content_generation")
                db.execute(EARLIER_TRIGGER.format(table=table, event=event))

    with SQLiteStore(path) as store, watching_patches() as patched:
        fill(store)
        assert_ranks_like_a_fresh_store(store)
        put(store, "doc:3", ["tokyo forecast", "revenue"])
        assert_ranks_like_a_fresh_store(store)  # right either way

        assert store._content in patched


# --------------------------------------------------------------------------- reverse proofs


def forgets_the_old_positions(
    self: ContentIndex, generation: int, log_seq: int, touched: Any, rows: Any, vectors: Any
) -> ContentIndex:
    """Appends the current rows but leaves the old ones live."""
    result = ContentIndex(generation, log_seq, rows, base=self)
    if self.vectors is not None and vectors is not None:
        result.vectors = self.vectors.extended(result, vectors)
    return result


def drops_without_appending(
    self: ContentIndex, generation: int, log_seq: int, touched: Any, rows: Any, vectors: Any
) -> ContentIndex:
    """Marks the touched chunks dead and never appends their current rows."""
    dead = np.flatnonzero(np.isin(self.keys, touched) & self.live)
    result = ContentIndex(generation, log_seq, [], base=self, dead=dead)
    result.vectors = self.vectors
    return result


def keeps_the_old_vectors(
    self: ContentIndex, generation: int, log_seq: int, touched: Any, rows: Any, vectors: Any
) -> ContentIndex:
    """Patches the chunks but not the vectors: appended chunks have none."""
    dead = np.flatnonzero(np.isin(self.keys, touched) & self.live)
    result = ContentIndex(generation, log_seq, rows, base=self, dead=dead)
    result.vectors = self.vectors
    return result


WRONG_PATCHES: dict[str, Callable[..., ContentIndex]] = {
    "forgets the old positions": forgets_the_old_positions,
    "drops without appending": drops_without_appending,
    "keeps the old vectors": keeps_the_old_vectors,
}


@pytest.mark.parametrize("name", WRONG_PATCHES)
def test_reverse_proof_the_check_rejects_a_wrong_patch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setattr(ContentIndex, "changed", WRONG_PATCHES[name])
    without_safety_net(monkeypatch)

    with pytest.raises(AssertionError):
        run(tmp_path / "index.db", SCENARIO)


def without_safety_net(monkeypatch: pytest.MonkeyPatch) -> None:
    """Switch off the count/sum check that rebuilds a patched copy holding other chunks
    than the file, so a wrong patch is served as it is (reverse proofs only)."""
    monkeypatch.setattr(SQLiteStore, "_holds_the_same_chunks", staticmethod(lambda db, c: True))


@pytest.mark.parametrize("name", ["forgets the old positions", "drops without appending"])
def test_the_safety_net_rebuilds_a_patch_that_holds_other_chunks_than_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """Defence in depth: even a wrong patch (a bug, or a write the log cannot see) is never
    served, because the patched copy's live chunks are checked against the table."""
    monkeypatch.setattr(ContentIndex, "changed", WRONG_PATCHES[name])

    run(tmp_path / "index.db", SCENARIO)  # ranks like a fresh store after every step


def test_reverse_proof_a_patch_that_forgets_old_positions_leaks_and_duplicates(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the check above catches, spelled out. An operator raises a chunk's sensitivity;
    a patch that leaves the old position live still serves the chunk below its new level,
    and twice to whoever may read it."""
    put(store, "doc:a", ["revenue forecast"])
    put(store, "doc:b", ["margin report"])
    assert_ranks_like_a_fresh_store(store)  # builds, with the vectors loaded
    monkeypatch.setattr(ContentIndex, "changed", forgets_the_old_positions)
    without_safety_net(monkeypatch)

    with raw(store.path) as db:
        db.execute("UPDATE chunks SET sensitivity = 3 WHERE chunk_id = 'doc:a#0'")

    confidential = SearchFilter(principals=EVERYONE, now=NOW)
    assert [c for c, _ in store.lexical_search("forecast", confidential, 10)] == ["doc:a#0"]
    assert [c for c, _ in store.lexical_search("forecast", ALL, 10)] == ["doc:a#0", "doc:a#0"]
    vector = EMBEDDER.embed(["revenue forecast"])[0]
    assert [c for c, _ in store.vector_search(vector, ALL, 10)].count("doc:a#0") == 2
    with pytest.raises(AssertionError):
        assert_ranks_like_a_fresh_store(store)


# --------------------------------------------------------------------------- patched, not rebuilt


def test_a_single_reupsert_in_a_large_store_is_patched(store: SQLiteStore) -> None:
    for n in range(40):
        put(store, f"doc:{n}", [f"revenue tokyo {n}", "margin report", "東京 売上"])
    assert_ranks_like_a_fresh_store(store)  # builds, with the vectors loaded
    old = store._content
    assert old is not None and old.vectors is not None
    assert (len(old), old.dead) == (120, 0)
    old_keys = old.keys.copy()
    doc7 = old.doc_keys[old.chunk_ids.index("doc:7#0")]

    put(store, "doc:7", ["revenue forecast", "milano margin"])  # 3 chunks become 2
    assert_ranks_like_a_fresh_store(store)

    new = store._content
    assert new is not None and new is not old
    assert new.dead == 3  # the old chunks of doc:7
    assert len(new) == 120 + 2
    np.testing.assert_array_equal(new.keys[:120], old_keys)  # nothing else moved
    np.testing.assert_array_equal(new.live[:120], old.doc_keys != doc7)
    assert new.chunk_ids[120:] == ["doc:7#0", "doc:7#1"]
    assert new.vectors is not None and new.vectors.positions.size == 122  # extended
    assert [c for c, _ in store.lexical_search("forecast", ALL, 5)] == ["doc:7#0"]


# --------------------------------------------------------------------------- pruned log


def burn_log(store: SQLiteStore) -> None:
    """Two re-upserts (each prunes the log after deleting the old version)."""
    put(store, "doc:3", ["tokyo forecast", "revenue"])
    put(store, "doc:5", ["東京 会議", "margin margin"])


def fill(store: SQLiteStore, docs: int = 10) -> None:
    for n in range(docs):
        put(store, f"doc:{n}", [f"revenue {VOCAB[n % len(VOCAB)]}", "the margin report"])


@pytest.mark.parametrize("kept", [0, 1, 5])
def test_a_reader_behind_the_pruned_log_rebuilds(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch, kept: int
) -> None:
    monkeypatch.setattr(sqlite_module, "_LOG_KEPT", kept)
    fill(store)
    assert_ranks_like_a_fresh_store(store)
    old = store._content
    assert old is not None

    burn_log(store)
    with raw(store.path) as db:
        first, count = db.execute("SELECT min(seq), count(*) FROM chunk_log").fetchone()
    assert count <= kept + 2 * 3  # kept before doc:5's inserts, plus those inserts
    assert first is None or first > old.log_seq + 1  # the reader's next entry is gone

    with watching_patches() as patched:
        assert_ranks_like_a_fresh_store(store)
        new = store._content
        assert new is not None and new is not old and new not in patched
    assert new.dead == 0
    assert new.keys.tolist() == chunk_keys(store.path)  # a fresh copy, in key order


def test_a_reader_within_the_kept_log_patches(store: SQLiteStore) -> None:
    """The counterpart: with the default log, the same writes are patched."""
    fill(store)
    assert_ranks_like_a_fresh_store(store)
    old = store._content
    assert old is not None

    burn_log(store)
    assert_ranks_like_a_fresh_store(store)

    new = store._content
    assert new is not None and new.dead == 4
    assert len(new) == len(old) + 4


def test_a_reader_whose_next_entry_survived_pruning_patches(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pruning only entries the reader already applied does not force a rebuild."""
    fill(store)  # 20 chunks, 3 log entries each
    assert_ranks_like_a_fresh_store(store)
    old = store._content
    assert old is not None
    monkeypatch.setattr(sqlite_module, "_LOG_KEPT", 10)

    store.delete("doc:9")  # 6 entries, then all but the last 10 are pruned
    with raw(store.path) as db:
        first = db.execute("SELECT min(seq) FROM chunk_log").fetchone()[0]
    assert 1 < first <= old.log_seq + 1

    assert_ranks_like_a_fresh_store(store)

    new = store._content
    assert new is not None and new is not old
    assert (new.dead, len(new)) == (2, len(old))


# --------------------------------------------------------------------------- thresholds


def touched_since(store: SQLiteStore, log_seq: int) -> int:
    with raw(store.path) as db:
        row = db.execute(
            "SELECT count(DISTINCT chunk) FROM chunk_log WHERE seq > ?", (log_seq,)
        ).fetchone()
    return int(row[0])


@pytest.mark.parametrize("over", [False, True])
def test_touching_more_than_the_patch_share_rebuilds(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch, over: bool
) -> None:
    fill(store, 20)  # 40 chunks: the share is of at least 1000
    assert_ranks_like_a_fresh_store(store)
    old = store._content
    assert old is not None
    put(store, "doc:4", ["tokyo forecast", "revenue", "東京"])
    touched = touched_since(store, old.log_seq)
    assert touched == 2 + 3  # the old chunks and the new ones
    share = (touched - 0.5 if over else touched + 0.5) / 1000
    monkeypatch.setattr(sqlite_module, "_PATCH_TOUCHED", share)

    assert_ranks_like_a_fresh_store(store)

    new = store._content
    assert new is not None and new is not old
    if over:
        assert (new.dead, len(new)) == (0, 41)
    else:
        assert (new.dead, len(new)) == (2, 43)


@pytest.mark.parametrize("over", [False, True])
def test_more_dead_positions_than_the_dead_share_rebuilds(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch, over: bool
) -> None:
    fill(store, 20)
    assert_ranks_like_a_fresh_store(store)
    put(store, "doc:4", ["tokyo forecast", "revenue"])
    dead, size = 2, 42  # what the patch would have
    share = (dead - 0.5 if over else dead + 0.5) / size
    monkeypatch.setattr(sqlite_module, "_PATCH_DEAD", share)

    assert_ranks_like_a_fresh_store(store)

    new = store._content
    assert new is not None
    assert (new.dead, len(new)) == ((0, 40) if over else (2, 42))


def test_dead_positions_pile_up_until_the_copy_is_rebuilt(store: SQLiteStore) -> None:
    """Default share (a quarter): 8 documents of 2 chunks, one re-upserted per round."""
    fill(store, 8)
    assert_ranks_like_a_fresh_store(store)
    seen = []
    for n in range(4):
        put(store, f"doc:{n}", [f"round {n} revenue", "margin"])
        assert_ranks_like_a_fresh_store(store)
        content = store._content
        assert content is not None
        seen.append((content.dead, len(content)))

    # 2/18 and 4/20 dead are patched; 6/22 is over a quarter: rebuilt, then patched again
    assert seen == [(2, 18), (4, 20), (0, 16), (2, 18)]


# --------------------------------------------------------------------------- vectors


def test_loaded_vectors_are_extended_with_the_new_vector_of_a_reupserted_chunk(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_module, "_PATCH_DEAD", 1.0)  # a tiny store: patch anyway
    before, after = "revenue forecast tokyo", "margin report 東京"
    put(store, "doc:a", [before])
    put(store, "doc:b", ["the report"])
    put(store, "doc:c", ["会議 売上"])
    old_vector, new_vector = EMBEDDER.embed([before, after])
    ((top, score),) = store.vector_search(old_vector, ALL, 1)
    assert (top, score) == ("doc:a#0", pytest.approx(1.0))
    old = store._content
    assert old is not None and old.vectors is not None

    put(store, "doc:a", [after])
    by_old = store.vector_search(old_vector, ALL, 10)
    by_new = store.vector_search(new_vector, ALL, 10)

    new = store._content
    assert new is not None and new is not old and new.dead == 1
    assert new.vectors is not None
    assert new.vectors.positions.tolist() == [0, 1, 2, 3]  # the dead row stays, masked
    assert [c for c, _ in by_old].count("doc:a#0") == 1
    # scored with its new vector, never the old one (which would score 1.0)
    assert dict(by_old)["doc:a#0"] == pytest.approx(float(new_vector @ old_vector), abs=1e-6)
    assert dict(by_old)["doc:a#0"] < 0.9
    assert by_new[0][0] == "doc:a#0"
    assert by_new[0][1] == pytest.approx(1.0)
    assert_ranks_like_a_fresh_store(store)


def test_vectors_not_loaded_before_a_patch_are_loaded_for_live_positions_only(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_module, "_PATCH_DEAD", 1.0)  # a tiny store: patch anyway
    put(store, "doc:a", ["revenue forecast", "tokyo margin"])
    put(store, "doc:b", ["the report"])
    put(store, "doc:c", ["会議 売上"], vectors=False)
    assert_ranks_like_a_fresh_store(store, ("lexical",))
    assert store._content is not None and store._content.vectors is None

    put(store, "doc:a", ["margin report 東京", "tokyo margin"])
    assert_ranks_like_a_fresh_store(store, ("lexical",))
    patched = store._content
    assert patched is not None and patched.dead == 2 and patched.vectors is None

    assert_ranks_like_a_fresh_store(store)  # the vector searches load them

    assert store._content is patched
    vectors = patched.vectors
    assert vectors is not None
    assert patched.live[vectors.positions].all()
    assert sorted(patched.chunk_ids[p] for p in vectors.positions) == [
        "doc:a#0",
        "doc:a#1",
        "doc:b#0",
    ]


# --------------------------------------------------------------------------- ties


def tie_store(store: SQLiteStore) -> list[str]:
    """Five documents with the same text (equal BM25 scores, equal vectors) and noise."""
    tied = [f"tie:{n}" for n in range(5)]
    for doc_id in tied:
        put(store, doc_id, ["revenue forecast"])
        put(store, f"noise:{doc_id}", ["margin report"])
    return tied


def test_tied_chunks_rank_by_chunk_key_after_a_patch_moved_their_positions(
    store: SQLiteStore,
) -> None:
    tie_store(store)
    assert_ranks_like_a_fresh_store(store)
    with raw(store.path) as db:  # touched, so appended at the end, but the key stays
        db.execute("UPDATE chunks SET sensitivity = 0 WHERE chunk_id = 'tie:1#0'")
    put(store, "tie:3", ["revenue forecast"])  # a new key and the last position

    lexical = store.lexical_search("revenue forecast", ALL, 10)
    vector = store.vector_search(EMBEDDER.embed(["revenue forecast"])[0], ALL, 10)

    content = store._content
    assert content is not None and content.dead == 2
    live_keys = content.keys[content.live]
    assert (np.diff(live_keys) < 0).any()  # positions are out of key order
    expected = ["tie:0#0", "tie:1#0", "tie:2#0", "tie:4#0", "tie:3#0"]  # by key
    assert [c for c, _ in lexical] == expected
    assert len({s for _, s in lexical}) == 1
    assert [c for c, _ in vector[:5]] == expected
    assert len({s for _, s in vector[:5]}) == 1
    assert [c for c, _ in store.lexical_search("revenue forecast", ALL, 2)] == expected[:2]
    assert_ranks_like_a_fresh_store(store)


def test_reverse_proof_ties_broken_by_position_are_caught(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = memory_module.top_k

    def by_position(scores: Any, candidates: Any, ties: Any, k: int) -> Any:
        return original(scores, candidates, candidates, k)

    monkeypatch.setattr(memory_module, "top_k", by_position)
    tie_store(store)
    assert_ranks_like_a_fresh_store(store)  # built in key order: positions agree
    with raw(store.path) as db:
        db.execute("UPDATE chunks SET sensitivity = 0 WHERE chunk_id = 'tie:1#0'")

    with pytest.raises(AssertionError):
        assert_ranks_like_a_fresh_store(store)
    assert [c for c, _ in store.lexical_search("revenue forecast", ALL, 2)] == [
        "tie:0#0",
        "tie:2#0",
    ]


def test_a_store_that_only_ever_adds_documents_keeps_its_log_bounded(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_module, "_LOG_KEPT", 10)
    fill(store, docs=30)  # new documents only: nothing is ever replaced or deleted
    with raw(store.path) as db:
        (rows,) = db.execute("SELECT count(*) FROM chunk_log").fetchone()
    assert rows == 10  # every write ends by pruning to the last _LOG_KEPT entries
    assert_ranks_like_a_fresh_store(store)
