"""Worlds of documents for the conformance suite, the reference answers computed from them
in plain Python (``SearchFilter.admits`` is the reference semantics), and the checks that
compare a store with those answers.

Every check takes the store as a parameter, so a reverse proof runs the very same check
against a deliberately leaky store (:mod:`conformance.leaks`) and expects it to fail.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import strategies as st

import factories
from clearance.analysis import document_terms, search_terms
from clearance.llm.embedding import HashingEmbedder
from clearance.model import Chunk, Document, Fact, Sensitivity
from clearance.store.base import SearchFilter, Store, Vector

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
CORPORA = ("public", "ops", "hr")
PRINCIPALS = ("everyone", "user:ann", "user:bo", "group:sales", "group:legal")
VOCAB = ("revenue", "margin", "tokyo", "milano", "forecast", "東京", "売上", "the", "report")
LEVELS = tuple(Sensitivity)
DESCENDING = tuple(reversed(LEVELS))
EMBEDDER = HashingEmbedder(dim=16)
# never, later, a second from now, exactly now (already excluded), a day ago
EXPIRIES = (
    None,
    None,
    None,
    NOW + timedelta(days=9),
    NOW + timedelta(seconds=1),
    NOW,
    NOW - timedelta(days=1),
)

# An admit-everything filter over the principals of these worlds: every corpus, every
# level, a time before every expiry, AI use not required. Documents with an empty ACL stay
# out, which is right: no filter may ever admit them.
ADMIT_ALL = SearchFilter(
    principals=frozenset(PRINCIPALS),
    corpora=None,
    max_sensitivity=Sensitivity.RESTRICTED,
    now=datetime(2000, 1, 1, tzinfo=UTC),
    require_ai_allowed=False,
)


@dataclass(frozen=True)
class Entry:
    """One stored document: its chunks, a vector (or ``None``) per chunk, its facts."""

    document: Document
    chunks: list[Chunk]
    vectors: list[Vector | None]
    facts: list[Fact] = field(default_factory=list)


@dataclass(frozen=True)
class World:
    """What was stored, in insertion order."""

    entries: list[Entry]

    def chunks(self) -> list[tuple[Document, Chunk, Vector | None]]:
        return [
            (e.document, c, v)
            for e in self.entries
            for c, v in zip(e.chunks, e.vectors, strict=True)
        ]

    def admitted_chunks(self, flt: SearchFilter) -> list[tuple[Document, Chunk, Vector | None]]:
        return [(d, c, v) for d, c, v in self.chunks() if flt.admits(d, c)]

    def admitted_only(self, flt: SearchFilter) -> World:
        """The admitted documents with only their admitted chunks, in the same order."""
        kept = []
        for e in self.entries:
            if flt.admits(e.document):
                pairs = [
                    (c, v)
                    for c, v in zip(e.chunks, e.vectors, strict=True)
                    if flt.admits(e.document, c)
                ]
                kept.append(
                    Entry(e.document, [c for c, _ in pairs], [v for _, v in pairs], e.facts)
                )
        return World(kept)


def fill(store: Store, world: World) -> None:
    for e in world.entries:
        store.upsert(e.document, e.chunks, e.vectors, facts=e.facts)


def embedded(doc: Document, chunks: list[Chunk]) -> Entry:
    """An entry whose chunks carry their text's hashing embedding."""
    return Entry(doc, chunks, list(EMBEDDER.embed([c.text for c in chunks])))


# --------------------------------------------------------------------------- strategies

texts = st.lists(st.sampled_from(VOCAB), min_size=1, max_size=6).map(" ".join)


@st.composite
def worlds(draw: st.DrawFn, min_size: int = 2, max_size: int = 9) -> World:
    """Random documents: every field the filter reads varies, chunk sensitivities too,
    some ACLs are empty and some chunks have no vector."""
    entries = []
    for n in range(draw(st.integers(min_size, max_size))):
        acl: frozenset[str] = frozenset()
        if draw(st.integers(0, 5)) < 5:
            acl = draw(st.frozensets(st.sampled_from(PRINCIPALS), min_size=1, max_size=3))
        sensitivity = draw(st.sampled_from(LEVELS))
        doc = factories.document(
            f"src:{n}",
            corpus=draw(st.sampled_from(CORPORA)),
            title=draw(st.sampled_from(("", "report", "tokyo forecast"))),
            acl=acl,
            sensitivity=sensitivity,
            expires_at=draw(st.sampled_from(EXPIRIES)),
            ai_allowed=draw(st.sampled_from([True, True, True, False])),
        )
        chunks = [
            factories.chunk(
                doc,
                draw(texts),
                ordinal=i,
                sensitivity=draw(st.sampled_from([s for s in LEVELS if s >= sensitivity])),
            )
            for i in range(draw(st.integers(1, 3)))
        ]
        vectors: list[Vector | None] = list(EMBEDDER.embed([c.text for c in chunks]))
        if draw(st.integers(0, 7)) == 0:
            vectors[-1] = None
        facts = [
            Fact(
                entity=draw(st.sampled_from(("North Co", "South Co"))),
                period=draw(st.sampled_from(("FY2024", "FY2025"))),
                metric=draw(st.sampled_from(("revenue", "headcount"))),
                channel="total",
                value=float(i),
                unit="",
                doc_id=doc.doc_id,
                locator=f"row={i}",
            )
            for i in range(draw(st.integers(0, 2)))
        ]
        entries.append(Entry(doc, chunks, vectors, facts))
    return World(entries)


@st.composite
def filters(draw: st.DrawFn, world: World) -> SearchFilter:
    """Every field varies. Hypothesis favours the first options, so the permissive ones
    come first: most examples admit something (a filter that admits nothing proves little)."""
    ids = [e.document.doc_id for e in world.entries] + ["src:unknown"]
    corpora: dict[str, Sensitivity] | None = None
    if draw(st.booleans()):
        corpora = {}
        for name in [*CORPORA, "elsewhere"]:
            ceiling = draw(st.sampled_from([*DESCENDING, None]))
            if ceiling is not None:
                corpora[name] = ceiling
    principals = draw(
        st.sampled_from(
            [
                frozenset(PRINCIPALS),
                frozenset({"everyone", "user:ann", "group:sales"}),
                frozenset({"user:bo", "group:legal"}),
                frozenset(),
            ]
        )
        | st.frozensets(st.sampled_from(PRINCIPALS))
    )
    if draw(st.sampled_from([True, True, False])):  # a reader of one random document
        principals |= draw(st.sampled_from([e.document.acl for e in world.entries]))
    doc_ids = None
    mode = draw(st.sampled_from(["any", "any", "any", "all but a few", "only a few"]))
    if mode != "any":
        some = draw(st.frozensets(st.sampled_from(ids), max_size=3))
        doc_ids = some if mode == "only a few" else frozenset(ids) - some
    return SearchFilter(
        principals=principals,
        corpora=corpora,
        max_sensitivity=draw(st.sampled_from(DESCENDING)),
        doc_ids=doc_ids,
        exclude_doc_ids=draw(st.frozensets(st.sampled_from(ids), max_size=2)),
        now=NOW,
        require_ai_allowed=draw(st.booleans()),
    )


# --------------------------------------------------------------------------- references

K1, B = 1.2, 0.75  # Okapi BM25, as the store documents them


def reference_bm25(world: World, query: str, flt: SearchFilter) -> dict[str, float]:
    """BM25 in plain Python over the admitted chunks alone (title and text indexed
    together): N, the average length and every document frequency count admitted chunks
    only. Every chunk holding at least one query term gets a (positive) score."""
    rows = [
        (c.chunk_id, Counter(document_terms(f"{d.title}\n{c.text}")))
        for d, c, _ in world.admitted_chunks(flt)
    ]
    if not rows:
        return {}
    n = len(rows)
    length = {cid: sum(tf.values()) for cid, tf in rows}
    average = sum(length.values()) / n or 1.0
    scores: dict[str, float] = {}
    for term in dict.fromkeys(search_terms(query)):
        df = sum(1 for _, tf in rows if term in tf)
        if df == 0:
            continue
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        for cid, tf in rows:
            if term in tf:
                f = tf[term]
                norm = K1 * (1 - B + B * length[cid] / average)
                scores[cid] = scores.get(cid, 0.0) + idf * f * (K1 + 1) / (f + norm)
    return scores


def reference_cosines(world: World, query: Vector, flt: SearchFilter) -> dict[str, float]:
    """Brute force in numpy: the cosine of every admitted chunk that has a vector."""
    q = np.asarray(query, dtype=np.float64)
    return {
        c.chunk_id: float(np.asarray(v, dtype=np.float64) @ q)
        for _, c, v in world.admitted_chunks(flt)
        if v is not None
    }


def reference_df(
    world: World, terms: Sequence[str], flt: SearchFilter
) -> tuple[int, dict[str, int]]:
    """Allowed-chunk count and, per index term held by any, how many allowed chunks hold it."""
    rows = [set(document_terms(f"{d.title}\n{c.text}")) for d, c, _ in world.admitted_chunks(flt)]
    df = {t: sum(1 for r in rows if t in r) for t in dict.fromkeys(terms)}
    return len(rows), {t: n for t, n in df.items() if n}


# --------------------------------------------------------------------------- checks

SCORE_GAP = 1e-9  # reference and store add the same terms in different float orders
TOLERANCE = 1e-5  # float32 dot products of different texts may differ only in rounding


def check_lexical_top_k(
    store: Store, world: World, query: str, flt: SearchFilter, k: int
) -> list[tuple[str, float]]:
    """The top-k of the admitted chunks by the plain-Python BM25: only admitted matching
    chunks, each with its reference score, a clearly better one never after a worse one,
    and nothing clearly better left out."""
    got = store.lexical_search(query, flt, k)
    expected = reference_bm25(world, query, flt)
    ids = [cid for cid, _ in got]

    assert len(ids) == min(k, len(expected)), (got, expected)
    assert len(set(ids)) == len(ids)
    for cid, score in got:
        assert cid in expected
        assert score == pytest.approx(expected[cid], rel=1e-9, abs=1e-12)
    for first, then in itertools.pairwise(ids):
        assert expected[first] >= expected[then] - SCORE_GAP
    if got:
        floor = expected[ids[-1]]
        assert all(s <= floor + SCORE_GAP for cid, s in expected.items() if cid not in ids)
    return got


def check_vector_top_k(
    store: Store, world: World, query: Vector, flt: SearchFilter, k: int
) -> list[tuple[str, float]]:
    """The top-k of the admitted chunks with a vector, by cosine. Cosines that differ only
    by float rounding may come in either order; bitwise identical vectors (an exact tie)
    must come in insertion order, also across the cut at k."""
    got = store.vector_search(query, flt, k)
    expected = reference_cosines(world, query, flt)
    ids = [cid for cid, _ in got]

    assert len(ids) == min(k, len(expected)), (got, expected)
    assert len(set(ids)) == len(ids)
    for cid, score in got:  # only admitted chunks, with their true score, best first
        assert cid in expected
        assert score == pytest.approx(expected[cid], abs=TOLERANCE)
    assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)
    if got:  # nothing better was left out
        floor = got[-1][1]
        assert all(s <= floor + TOLERANCE for cid, s in expected.items() if cid not in ids)
    rows = world.chunks()
    position = {c.chunk_id: i for i, (_, c, _) in enumerate(rows)}
    vector = {c.chunk_id: v for _, c, v in rows}
    for later in ids:  # exact ties: an earlier identical chunk is returned, and first
        for earlier in expected:
            same = np.array_equal(np.asarray(vector[earlier]), np.asarray(vector[later]))
            if same and position[earlier] < position[later]:
                assert earlier in ids and ids.index(earlier) < ids.index(later)
    return got


def check_non_interference(
    store: Store, alone: Store, query: str, flt: SearchFilter, k: int
) -> list[tuple[str, float]]:
    """``alone`` holds only what ``flt`` admits (same insertion order): the filtered search
    must equal its admit-all search bit for bit, tie order included, so nothing the caller
    may not read can move their results."""
    got = store.lexical_search(query, flt, k)
    assert got == alone.lexical_search(query, ADMIT_ALL, k)
    return got


def check_term_statistics(
    store: Store, world: World, terms: Sequence[str], flt: SearchFilter
) -> None:
    stats = store.term_statistics(terms, flt)
    chunks, df = reference_df(world, terms, flt)
    assert stats.chunks == chunks
    assert dict(stats.df) == df


def fact_rows(store: Store, flt: SearchFilter, **slots: str | None) -> list[tuple[str, str]]:
    rows = store.query_facts(flt, **slots)  # type: ignore[attr-defined]
    assert all(f.doc_id == d.doc_id for f, d in rows)
    return [(f.doc_id, f.locator) for f, _ in rows]


def check_facts(store: Store, world: World, flt: SearchFilter, **slots: str | None) -> None:
    """Facts matching every given slot whose document the filter admits, in storage order."""
    expected = [
        (f.doc_id, f.locator)
        for e in world.entries
        if flt.admits(e.document)
        for f in e.facts
        if all(v is None or getattr(f, k) == v for k, v in slots.items())
    ]
    assert fact_rows(store, flt, **slots) == expected


def check_visible_set(store: Store, world: World, flt: SearchFilter) -> None:
    """Through every filtered read, exactly the chunks (and facts) the reference admits:
    a lexical search for a term every chunk holds, a vector search asking for everything,
    the term statistics and the fact query."""
    total = len(world.chunks())
    expected = {c.chunk_id for _, c, _ in world.admitted_chunks(flt)}
    with_vector = {c.chunk_id for _, c, v in world.admitted_chunks(flt) if v is not None}
    lexical = {cid for cid, _ in store.lexical_search(EVERY_CHUNK, flt, total + 1)}
    assert lexical == expected
    probe = np.ones(EMBEDDER.dim, dtype=np.float32) / np.sqrt(EMBEDDER.dim)
    vector = {cid for cid, _ in store.vector_search(probe, flt, total + 1)}
    assert vector == with_vector
    assert store.term_statistics([EVERY_CHUNK], flt).chunks == len(expected)
    check_facts(store, world, flt)


EVERY_CHUNK = "common"  # a word check_visible_set's worlds put in every chunk
