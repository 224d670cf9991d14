"""The in-memory search structures of the SQLite store, built directly from rows.

* ``AccessIndex.ceilings`` / ``chunk_mask`` must agree with ``SearchFilter.admits`` exactly,
  for every document and chunk, including chunks whose document the snapshot does not know;
* ``top_k`` breaks ties by position, also across the cut;
* ``bm25_top_k`` computes Okapi BM25 with statistics over the masked chunks only: checked
  against a hand-computed example, and against an index that holds only the masked chunks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import factories
from clearance.model import Chunk, Document, Sensitivity
from clearance.store.base import SearchFilter
from clearance.store.memory import AccessIndex, ContentIndex, bm25_top_k, top_k

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
CORPORA = ("public", "ops", "hr")
PRINCIPALS = ("everyone", "user:ann", "user:bo", "group:sales")
LEVELS = tuple(Sensitivity)
DESCENDING = tuple(reversed(LEVELS))
# never, later, a microsecond from now, exactly now (already excluded), a day ago
EXPIRIES = (
    None,
    None,
    None,
    NOW + timedelta(days=3),
    NOW + timedelta(microseconds=1),
    NOW,
    NOW - timedelta(days=1),
)


def pack(values: Sequence[int]) -> bytes:
    return np.asarray(values, dtype="<i4").tobytes()


def content_index(
    chunks: Sequence[tuple[int, int, int, Mapping[int, int]]], generation: int = 0
) -> ContentIndex:
    """``(chunk key, doc key, sensitivity, {term id: frequency})`` in key order."""
    rows = []
    for key, doc_key, sensitivity, tfs in chunks:
        ids = sorted(tfs)
        rows.append(
            (
                key,
                doc_key,
                sensitivity,
                f"c{key}",
                sum(tfs.values()),
                pack(ids),
                pack([tfs[i] for i in ids]),
            )
        )
    return ContentIndex.build(generation, 0, rows)


def document(key: int, **fields: Any) -> Document:
    """Document ``d<key>``: PUBLIC, in corpus ``ops``, unless ``fields`` say otherwise."""
    fields = {"corpus": "ops", "sensitivity": Sensitivity.PUBLIC, **fields}
    return factories.document(
        f"d{key}", source_system="src", uri="", content_hash=f"h{key}", **fields
    )


def access_index(documents: Mapping[int, Document], generation: int = 0) -> AccessIndex:
    """An ``AccessIndex`` from documents keyed by their row key, as the store reads them."""
    rows = [
        (
            key,
            d.doc_id,
            d.corpus,
            int(d.sensitivity),
            None if d.expires_at is None else d.expires_at.timestamp(),
            int(d.ai_allowed),
        )
        for key, d in documents.items()
    ]
    acl = [(p, key) for key, d in documents.items() for p in sorted(d.acl)]
    return AccessIndex(generation, rows, acl)


# --------------------------------------------------------------------------- the mask


@dataclass(frozen=True)
class Snapshot:
    documents: dict[int, Document]  # by row key, with gaps
    chunks: list[tuple[int, Chunk]]  # (doc key, chunk) in chunk key order


@st.composite
def snapshots(draw: st.DrawFn) -> Snapshot:
    keys = sorted(draw(st.sets(st.integers(1, 12), min_size=1, max_size=7)))
    documents: dict[int, Document] = {}
    for key in keys:
        acl: frozenset[str] = frozenset()  # sometimes empty: nobody may read the document
        if draw(st.integers(0, 5)) < 5:
            acl = draw(st.frozensets(st.sampled_from(PRINCIPALS), min_size=1, max_size=3))
        documents[key] = document(
            key,
            corpus=draw(st.sampled_from(CORPORA)),
            acl=acl,
            sensitivity=draw(st.sampled_from([Sensitivity.PUBLIC, *LEVELS])),
            expires_at=draw(st.sampled_from(EXPIRIES)),
            ai_allowed=draw(st.sampled_from([True, True, True, False])),
        )
    # chunks of stored documents, plus chunks whose document this snapshot does not know:
    # a gap below the largest key, and keys at or beyond the snapshot's size
    size = max(keys, default=0) + 1
    unknown = [k for k in range(size + 3) if k not in documents]
    chunks: list[tuple[int, Chunk]] = []
    known_or_not = st.sampled_from([keys, keys, keys, unknown]).flatmap(st.sampled_from)
    for doc_key in draw(st.lists(known_or_not, min_size=1, max_size=14)):
        known = documents.get(doc_key)
        floor = Sensitivity.PUBLIC if known is None else known.sensitivity
        sensitivity = draw(st.sampled_from([s for s in LEVELS if s >= floor]))
        doc_id = f"d{doc_key}"
        chunk = Chunk(f"c{len(chunks)}", doc_id, len(chunks), "", "", sensitivity, "human")
        chunks.append((doc_key, chunk))
    return Snapshot(documents, chunks)


@st.composite
def search_filters(draw: st.DrawFn, snapshot: Snapshot) -> SearchFilter:
    """Every field varies; the permissive options are drawn more often, so most examples
    admit something (a filter that admits nothing proves little)."""
    ids = [d.doc_id for d in snapshot.documents.values()] + ["d99"]
    corpora = None
    if draw(st.sampled_from([False, False, True])):  # some corpora, each its own ceiling
        names = draw(st.frozensets(st.sampled_from([*CORPORA, "elsewhere"])))
        corpora = {name: draw(st.sampled_from(DESCENDING)) for name in sorted(names)}
    doc_ids = None
    if draw(st.sampled_from([False, False, True])):
        doc_ids = draw(st.frozensets(st.sampled_from(ids), max_size=4))
    # "user:nobody" is in no ACL; the empty set admits nothing
    principals = draw(
        st.sampled_from(
            [
                frozenset(PRINCIPALS),
                frozenset(PRINCIPALS),
                frozenset({"everyone", "user:nobody"}),
                frozenset({"user:bo"}),
                frozenset({"user:nobody"}),
                frozenset(),
            ]
        )
    )
    if draw(st.sampled_from([True, True, False])):  # a reader of one random document
        principals |= draw(st.sampled_from([d.acl for d in snapshot.documents.values()]))
    return SearchFilter(
        principals=principals,
        corpora=corpora,
        max_sensitivity=draw(st.sampled_from([Sensitivity.RESTRICTED, *DESCENDING])),
        doc_ids=doc_ids,
        exclude_doc_ids=draw(st.frozensets(st.sampled_from(ids), max_size=1)),
        now=NOW,
        require_ai_allowed=draw(st.sampled_from([False, False, True])),
    )


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_ceilings_and_chunk_mask_agree_with_admits(data: st.DataObject) -> None:
    snapshot = data.draw(snapshots(), label="snapshot")
    # several filters per snapshot: one index answers many different callers
    flts = data.draw(st.lists(search_filters(snapshot), min_size=4, max_size=4), label="filters")
    access = access_index(snapshot.documents)
    content = content_index(
        [(i + 1, key, int(c.sensitivity), {}) for i, (key, c) in enumerate(snapshot.chunks)]
    )
    admitted_chunks = 0
    for flt in flts:
        expected_ceilings = []
        for key in range(access.size):
            doc = snapshot.documents.get(key)
            ceiling = flt.ceiling_for(doc.corpus) if doc is not None and flt.admits(doc) else None
            expected_ceilings.append(-1 if ceiling is None else int(ceiling))
        assert access.ceilings(flt).tolist() == expected_ceilings

        expected_mask = []
        for key, chunk in snapshot.chunks:
            doc = snapshot.documents.get(key)
            expected_mask.append(doc is not None and flt.admits(doc, chunk))
        mask = access.chunk_mask(flt, content)
        assert mask.dtype == np.bool_
        assert mask.tolist() == expected_mask
        admitted_chunks += sum(expected_mask)
    refused = len(flts) * len(snapshot.chunks) - admitted_chunks
    event(f"admitted chunks: {min(admitted_chunks, 2)}{'+' if admitted_chunks >= 2 else ''}")
    event(f"refused chunks: {min(refused, 2)}{'+' if refused >= 2 else ''}")


def test_expiry_exactly_at_now_is_excluded_and_a_microsecond_later_is_not() -> None:
    docs = {
        1: document(1, expires_at=NOW),
        2: document(2, expires_at=NOW + timedelta(microseconds=1)),
    }
    access = access_index(docs)
    flt = SearchFilter(principals=frozenset({"everyone"}), now=NOW)

    assert access.ceilings(flt).tolist() == [-1, -1, int(Sensitivity.CONFIDENTIAL)]
    assert [flt.admits(d) for d in docs.values()] == [False, True]


def test_a_chunk_above_its_documents_ceiling_is_masked_out() -> None:
    docs = {1: document(1, corpus="hr", sensitivity=Sensitivity.INTERNAL)}
    content = content_index(
        [(1, 1, int(level), {}) for level in (Sensitivity.INTERNAL, Sensitivity.CONFIDENTIAL)]
    )
    access = access_index(docs)
    everyone = frozenset({"everyone"})

    # the corpus ceiling (INTERNAL) is below the global one: the CONFIDENTIAL chunk is out
    flt = SearchFilter(principals=everyone, corpora={"hr": Sensitivity.INTERNAL}, now=NOW)
    assert access.chunk_mask(flt, content).tolist() == [True, False]
    # the global ceiling wins when it is the lower one
    flt = SearchFilter(
        principals=everyone,
        corpora={"hr": Sensitivity.RESTRICTED},
        max_sensitivity=Sensitivity.INTERNAL,
        now=NOW,
    )
    assert access.chunk_mask(flt, content).tolist() == [True, False]
    flt = SearchFilter(principals=everyone, corpora={"hr": Sensitivity.RESTRICTED}, now=NOW)
    assert access.chunk_mask(flt, content).tolist() == [True, True]


def test_no_principals_or_no_chunks_admit_nothing() -> None:
    access = access_index({1: document(1)})
    content = content_index([(1, 1, 0, {}), (2, 1, 0, {})])

    assert access.chunk_mask(SearchFilter(principals=frozenset(), now=NOW), content).tolist() == [
        False,
        False,
    ]
    everyone = SearchFilter(principals=frozenset({"everyone"}), now=NOW)
    assert access.chunk_mask(everyone, content).tolist() == [True, True]
    assert access.chunk_mask(everyone, content_index([])).tolist() == []
    assert access_index({}).chunk_mask(everyone, content).tolist() == [False, False]


def test_chunks_of_documents_beyond_the_snapshot_are_not_admitted() -> None:
    """A chunk newer than the access snapshot (its document key past the arrays' end, or a
    key in a gap) is never admitted, whatever the filter."""
    access = access_index({1: document(1), 3: document(3)})
    content = content_index(
        [(1, 1, 0, {}), (2, 2, 0, {}), (3, 3, 0, {}), (4, 4, 0, {}), (5, 90, 0, {})]
    )
    everyone = SearchFilter(principals=frozenset({"everyone"}), require_ai_allowed=False, now=NOW)

    assert access.size == 4
    assert access.chunk_mask(everyone, content).tolist() == [True, False, True, False, False]


# --------------------------------------------------------------------------- top_k


def test_top_k_breaks_ties_by_the_tie_key_also_across_the_cut() -> None:
    scores = np.array([1.0, 3.0, 2.0, 3.0, 3.0, 0.5, 3.0])
    everything = np.arange(scores.size, dtype=np.int64)

    assert top_k(scores, everything, everything, 1).tolist() == [1]
    assert top_k(scores, everything, everything, 2).tolist() == [1, 3]
    assert top_k(scores, everything, everything, 3).tolist() == [1, 3, 4]
    assert top_k(scores, everything, everything, 5).tolist() == [1, 3, 4, 6, 2]
    assert top_k(scores, everything, everything, 99).tolist() == [1, 3, 4, 6, 2, 0, 5]
    # only candidates are ranked; ties among them still come in tie-key order
    some = np.array([0, 4, 5, 6], dtype=np.int64)
    assert top_k(scores, some, some, 2).tolist() == [4, 6]
    assert top_k(scores, some, some, 3).tolist() == [4, 6, 0]
    assert top_k(scores, some, some, 0).tolist() == []
    # the tie key, not the position, orders equal scores (positions of a patched index
    # are not in chunk-key order)
    keys = np.array([70, 10, 60, 40, 30, 50, 20], dtype=np.int64)
    assert top_k(scores, everything, keys, 4).tolist() == [1, 6, 4, 3]
    assert top_k(scores, everything, keys, 2).tolist() == [1, 6]
    empty = np.empty(0, dtype=np.int64)
    assert top_k(scores, empty, empty, 3).tolist() == []


# --------------------------------------------------------------------------- BM25

K1, B = 1.2, 0.75
# term ids: 0 "revenue", 1 "tokyo", 2 "margin"; 3 is in the dictionary but in no chunk
HAND = [
    (10, 1, 0, {0: 2, 1: 1}),  # "revenue revenue tokyo": length 3
    (11, 1, 0, {1: 1}),  # "tokyo": length 1
    (12, 1, 0, {2: 4}),  # "margin margin margin margin": length 4
]


def bm25_term(tf: int, length: int, average: float, n: int, df: int) -> float:
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    return idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average))


def test_bm25_matches_a_hand_computed_example() -> None:
    index = content_index(HAND)
    everything = np.ones(3, dtype=np.bool_)

    got = bm25_top_k(index, [0, 1], everything, 10)

    # N = 3, average length 8/3. idf(revenue) = ln(1 + (3 - 1 + 0.5) / (1 + 0.5)) = ln(8/3),
    # idf(tokyo) = ln(1 + (3 - 2 + 0.5) / (2 + 0.5)) = ln(1.6). Length norms: k1 (1 - b + b
    # len / avg) = 1.2 (0.25 + 0.75 * 3 / (8/3)) = 1.3125 for length 3, 0.6375 for length 1.
    first = math.log(8 / 3) * 2 * 2.2 / (2 + 1.3125) + math.log(1.6) * 1 * 2.2 / (1 + 1.3125)
    second = math.log(1.6) * 1 * 2.2 / (1 + 0.6375)
    assert [p for p, _ in got] == [0, 1]
    assert [s for _, s in got] == pytest.approx([first, second], rel=1e-12)
    assert (first, second) == pytest.approx((1.7499759352, 0.6314552576), rel=1e-9)
    # a repeated query term counts once; k cuts
    assert bm25_top_k(index, [0, 1, 0], everything, 10) == got
    assert bm25_top_k(index, [0, 1], everything, 1) == got[:1]
    # "margin" alone: the one chunk holding it
    ((position, score),) = bm25_top_k(index, [2], everything, 10)
    assert position == 2
    assert score == pytest.approx(
        math.log(8 / 3) * 4 * 2.2 / (4 + 1.2 * (0.25 + 0.75 * 4 / (8 / 3))), rel=1e-12
    )


def test_bm25_statistics_come_from_the_masked_chunks_only() -> None:
    index = content_index(HAND)

    # without the long "margin" chunk: N = 2, average length 2, df unchanged
    got = bm25_top_k(index, [0, 1], np.array([True, True, False]), 10)
    first = bm25_term(2, 3, 2.0, n=2, df=1) + bm25_term(1, 3, 2.0, n=2, df=2)
    second = bm25_term(1, 1, 2.0, n=2, df=2)
    assert [p for p, _ in got] == [0, 1]
    assert [s for _, s in got] == pytest.approx([first, second], rel=1e-12)

    # without the first chunk: "revenue" has no allowed chunk, "tokyo" has df 1 of N = 2
    ((position, score),) = bm25_top_k(index, [0, 1], np.array([False, True, True]), 10)
    assert position == 1
    assert score == pytest.approx(bm25_term(1, 1, 2.5, n=2, df=1), rel=1e-12)

    assert bm25_top_k(index, [0, 1], np.zeros(3, dtype=np.bool_), 10) == []
    assert bm25_top_k(index, [0, 1], np.ones(3, dtype=np.bool_), 0) == []
    assert bm25_top_k(index, [], np.ones(3, dtype=np.bool_), 10) == []


def test_a_term_id_the_index_does_not_know_has_no_postings() -> None:
    index = content_index(HAND)
    everything = np.ones(3, dtype=np.bool_)

    for term_id in (3, 4, 10_000, -1):  # unused, just past the end, far past it, invalid
        chunks, frequencies = index.posting(term_id)
        assert chunks.size == 0 and frequencies.size == 0
        assert bm25_top_k(index, [term_id], everything, 10) == []
    # an unknown term next to a known one changes nothing
    assert bm25_top_k(index, [10_000, 1], everything, 10) == bm25_top_k(index, [1], everything, 10)
    empty = content_index([])
    assert empty.posting(0)[0].size == 0
    assert bm25_top_k(empty, [0], np.zeros(0, dtype=np.bool_), 10) == []
    chunks, frequencies = index.posting(1)
    assert chunks.tolist() == [0, 1] and frequencies.tolist() == [1.0, 1.0]


term_counts = st.dictionaries(st.integers(0, 5), st.integers(1, 4), max_size=4)


@settings(max_examples=150, deadline=None)
@given(
    chunks=st.lists(st.tuples(term_counts, st.booleans()), max_size=10),
    query=st.lists(st.integers(0, 7), min_size=1, max_size=4),
    k=st.integers(1, 6),
)
def test_bm25_under_a_mask_equals_bm25_of_an_index_of_the_masked_chunks_alone(
    chunks: list[tuple[dict[int, int], bool]], query: list[int], k: int
) -> None:
    """Non-interference at the index level: bit for bit, including the tie order."""
    index = content_index([(i, 1, 0, tfs) for i, (tfs, _) in enumerate(chunks)])
    mask = np.array([allowed for _, allowed in chunks], dtype=np.bool_)
    kept = [i for i, (_, allowed) in enumerate(chunks) if allowed]
    alone = content_index([(i, 1, 0, chunks[i][0]) for i in kept])

    got = bm25_top_k(index, query, mask, k)

    expected = bm25_top_k(alone, query, np.ones(len(kept), dtype=np.bool_), k)
    assert got == [(kept[p], s) for p, s in expected]
    assert all(mask[p] for p, _ in got)
