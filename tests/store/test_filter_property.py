"""The filter-inside-search property (DESIGN §1 stage 7, §9; store/base.py).

For random documents and random filters, the store must return exactly what a brute-force
search over the *allowed* chunks returns: the top-k of the allowed set, never a filtered
top-k of everything. ``SearchFilter.admits`` is the reference semantics.

Lexical search has two independent oracles: a second store holding only the admitted
documents and chunks (a filtered search must equal its admit-all search bit for bit: a
document the caller cannot read cannot move their results), and a plain-Python BM25 over
the admitted chunks. Vector search is checked against a numpy brute force.

The reverse proofs at the end run the same checks against deliberately wrong searches (one
over-fetches and drops, one ranks inside the filter but with statistics over every chunk)
and show the checks reject them.
"""

from __future__ import annotations

import itertools
import math
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import factories
from clearance.model import Chunk, Document, Sensitivity
from clearance.retrieval.analysis import document_terms, search_terms
from clearance.retrieval.embedding import HashingEmbedder
from clearance.store import sqlite as sqlite_module
from clearance.store.base import SearchFilter, Vector
from clearance.store.memory import BoolArray, ContentIndex, bm25_top_k
from clearance.store.sqlite import SQLiteStore

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
CORPORA = ("public", "ops", "hr")
PRINCIPALS = ("everyone", "user:ann", "user:bo", "group:sales", "group:legal")
VOCAB = ("revenue", "margin", "tokyo", "milano", "forecast", "東京", "売上", "the", "report")
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
LEVELS = tuple(Sensitivity)
DESCENDING = tuple(reversed(LEVELS))
EMBEDDER = HashingEmbedder(dim=16)

# (store, query text or vector, filter, k) → (chunk_id, score) best first
Search = Callable[[SQLiteStore, Any, SearchFilter, int], list[tuple[str, float]]]


@dataclass(frozen=True)
class Corpus:
    """What was stored: documents with their chunks, in insertion order."""

    docs: list[tuple[Document, list[Chunk]]]

    def chunks(self) -> list[tuple[Document, Chunk]]:
        return [(d, c) for d, cs in self.docs for c in cs]


texts = st.lists(st.sampled_from(VOCAB), min_size=1, max_size=6).map(" ".join)


@st.composite
def documents(draw: st.DrawFn) -> Corpus:
    docs: list[tuple[Document, list[Chunk]]] = []
    for n in range(draw(st.integers(2, 9))):
        doc_id = f"src:{n}"
        # empty ACL: visible to nobody, whatever the filter
        acl: frozenset[str] = frozenset()
        if draw(st.integers(0, 5)) < 5:
            acl = draw(st.frozensets(st.sampled_from(PRINCIPALS), min_size=1, max_size=3))
        sensitivity = draw(st.sampled_from(LEVELS))
        doc = factories.document(
            doc_id,
            corpus=draw(st.sampled_from(CORPORA)),
            title=draw(st.sampled_from(("", "report", "tokyo forecast"))),
            uri=f"https://example.test/{n}",
            acl=acl,
            sensitivity=sensitivity,
            expires_at=draw(st.sampled_from(EXPIRIES)),
            ai_allowed=draw(st.sampled_from([True, True, True, False])),
            content_hash=f"h{n}",
        )
        chunks = [
            factories.chunk(
                doc,
                draw(texts),
                ordinal=i,
                locator=f"section={i}",
                sensitivity=draw(st.sampled_from([s for s in LEVELS if s >= sensitivity])),
            )
            for i in range(draw(st.integers(1, 3)))
        ]
        docs.append((doc, chunks))
    return Corpus(docs)


@st.composite
def filters(draw: st.DrawFn, corpus: Corpus) -> SearchFilter:
    """Every field varies. Hypothesis favours the first options, so the permissive ones
    come first: most examples admit something (a filter that admits nothing proves little)."""
    ids = [d.doc_id for d, _ in corpus.docs] + ["src:unknown"]
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
        principals |= draw(st.sampled_from([d.acl for d, _ in corpus.docs]))
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


# An admit-everything filter: every principal in use, every corpus, every level, a time
# before every expiry, AI use not required. Documents with an empty ACL stay out, which is
# right: no filter may ever admit them.
ADMIT_ALL = SearchFilter(
    principals=frozenset(PRINCIPALS),
    corpora=None,
    max_sensitivity=Sensitivity.RESTRICTED,
    now=datetime(2000, 1, 1, tzinfo=UTC),
    require_ai_allowed=False,
)


def fill(store: SQLiteStore, corpus: Corpus) -> None:
    for doc, chunks in corpus.docs:
        store.upsert(doc, chunks, list(EMBEDDER.embed([c.text for c in chunks])))


def admitted(corpus: Corpus, flt: SearchFilter) -> set[str]:
    """Chunk ids the reference semantics admits."""
    return {c.chunk_id for d, c in corpus.chunks() if flt.admits(d, c)}


def admitted_only(corpus: Corpus, flt: SearchFilter) -> Corpus:
    """The admitted documents with only their admitted chunks, in the same order."""
    return Corpus(
        [(d, [c for c in chunks if flt.admits(d, c)]) for d, chunks in corpus.docs if flt.admits(d)]
    )


def expected_lexical(
    corpus: Corpus, query: str, flt: SearchFilter, k: int
) -> list[tuple[str, float]]:
    """Non-interference oracle: what a store holding *only* what the filter admits (same
    insertion order) returns to an admit-everything search. A filtered search must equal it
    bit for bit, so nothing the caller may not read can move their results."""
    with SQLiteStore(":memory:") as alone:
        for doc, chunks in admitted_only(corpus, flt).docs:
            alone.upsert(doc, chunks)
        return alone.lexical_search(query, ADMIT_ALL, k)


K1, B = 1.2, 0.75  # Okapi BM25, as the store documents them


def reference_bm25(corpus: Corpus, query: str, flt: SearchFilter) -> dict[str, float]:
    """Independent BM25 in plain Python over the admitted chunks alone: N, the average
    length and every document frequency count admitted chunks only. Every chunk holding at
    least one query term gets a (positive) score."""
    rows = [
        (c.chunk_id, Counter(document_terms(f"{d.title}\n{c.text}")))
        for d, c in corpus.chunks()
        if flt.admits(d, c)
    ]
    if not rows:
        return {}
    n = len(rows)
    length = {cid: sum(tf.values()) for cid, tf in rows}
    average = sum(length.values()) / n or 1.0
    scores: dict[str, float] = {}
    for term in search_terms(query):
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


TOLERANCE = 1e-5  # float32 dot products of different texts may differ only in rounding


def expected_vector(corpus: Corpus, query: Vector, flt: SearchFilter) -> dict[str, float]:
    """Brute force in numpy: the cosine of every admitted chunk that has a vector."""
    rows = [c for d, c in corpus.chunks() if flt.admits(d, c)]
    if not rows:
        return {}
    matrix = EMBEDDER.embed([c.text for c in rows]).astype(np.float64)
    scores = matrix @ np.asarray(query, dtype=np.float64)
    return {c.chunk_id: float(s) for c, s in zip(rows, scores, strict=True)}


SCORE_GAP = 1e-9  # reference and store add the same terms in different float orders


def check_non_interference(
    search: Search, store: SQLiteStore, corpus: Corpus, query: str, flt: SearchFilter, k: int
) -> list[tuple[str, float]]:
    got = search(store, query, flt, k)
    assert got == expected_lexical(corpus, query, flt, k)
    return got


def check_bm25_reference(
    search: Search, store: SQLiteStore, corpus: Corpus, query: str, flt: SearchFilter, k: int
) -> list[tuple[str, float]]:
    """The top-k of the admitted chunks by the plain-Python BM25: only admitted matching
    chunks, each with its reference score, a clearly better one never after a worse one,
    and nothing clearly better left out."""
    got = search(store, query, flt, k)
    expected = reference_bm25(corpus, query, flt)
    ids = [cid for cid, _ in got]

    assert len(ids) == min(k, len(expected))
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


def check_lexical(
    search: Search, store: SQLiteStore, corpus: Corpus, query: str, flt: SearchFilter, k: int
) -> list[tuple[str, float]]:
    check_bm25_reference(search, store, corpus, query, flt, k)
    return check_non_interference(search, store, corpus, query, flt, k)


def check_vector(
    search: Search, store: SQLiteStore, corpus: Corpus, query: str, flt: SearchFilter, k: int
) -> list[tuple[str, float]]:
    """The top-k of the admitted chunks by cosine. Two different texts whose cosines differ
    only by float rounding may come in either order; identical texts (bitwise identical
    vectors, an exact tie) must come in insertion order, also across the cut at k."""
    vector = EMBEDDER.embed([query])[0]
    got = search(store, vector, flt, k)
    expected = expected_vector(corpus, vector, flt)
    ids = [cid for cid, _ in got]

    assert len(ids) == min(k, len(expected))
    assert len(set(ids)) == len(ids)
    for cid, score in got:  # only admitted chunks, with their true score, best first
        assert cid in expected
        assert score == pytest.approx(expected[cid], abs=TOLERANCE)
    assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)
    if got:  # nothing better was left out
        floor = got[-1][1]
        assert all(s <= floor + TOLERANCE for cid, s in expected.items() if cid not in ids)
    chunks = corpus.chunks()
    position = {c.chunk_id: i for i, (_, c) in enumerate(chunks)}
    text = {c.chunk_id: c.text for _, c in chunks}
    for later in ids:  # exact ties: an earlier identical chunk is returned, and first
        for earlier in expected:
            if text[earlier] == text[later] and position[earlier] < position[later]:
                assert earlier in ids and ids.index(earlier) < ids.index(later)
    return got


def mask_admits(store: SQLiteStore, flt: SearchFilter) -> set[str]:
    """Chunk ids the store's own permission mask admits (its current in-memory copies)."""
    content, access = store._indexes(vectors=False)
    mask = access.chunk_mask(flt, content)
    return {cid for cid, ok in zip(content.chunk_ids, mask.tolist(), strict=True) if ok}


def store_lexical(
    store: SQLiteStore, query: str, flt: SearchFilter, k: int
) -> list[tuple[str, float]]:
    return store.lexical_search(query, flt, k)


def store_vector(
    store: SQLiteStore, vector: Vector, flt: SearchFilter, k: int
) -> list[tuple[str, float]]:
    return store.vector_search(vector, flt, k)


# --------------------------------------------------------------------------- the property


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_search_returns_the_top_k_of_the_allowed_set(data: st.DataObject) -> None:
    corpus = data.draw(documents(), label="corpus")
    flt = data.draw(filters(corpus), label="filter")
    query = data.draw(texts, label="query")
    k = data.draw(st.sampled_from([3, 1, 2, 6]), label="k")
    # one file per example: function-scoped fixtures are not reset between examples
    with tempfile.TemporaryDirectory() as tmp, SQLiteStore(Path(tmp) / "index.db") as store:
        fill(store, corpus)

        # (a) the SQL filter agrees with the reference semantics, document by document,
        # and so does the in-memory mask both retrievers rank inside, chunk by chunk
        allowed = store.allowed_doc_ids(flt)
        assert allowed == {d.doc_id for d, _ in corpus.docs if flt.admits(d)}
        assert mask_admits(store, flt) == admitted(corpus, flt)
        # (b) lexical: the admitted-only store's answer, and the plain-Python BM25 top-k
        lexical = check_lexical(store_lexical, store, corpus, query, flt, k)
        # (c) vector: the same against a numpy brute force
        vector = check_vector(store_vector, store, corpus, query, flt, k)
        # (d) one request ranking both in one mask returns what the two searches return
        both = store.retrieve(query, EMBEDDER.embed([query])[0], flt, k)
        assert (both.lexical, both.vector) == (lexical, vector)
    # how much the examples exercised (pytest --hypothesis-show-statistics)
    event(f"allowed documents: {min(len(allowed), 3)}{'+' if len(allowed) >= 3 else ''}")
    event(f"lexical hits: {min(len(lexical), 2)}{'+' if len(lexical) >= 2 else ''}")
    event(f"vector hits: {min(len(vector), 2)}{'+' if len(vector) >= 2 else ''}")


# --------------------------------------------------------------------------- reverse proofs


def leaky(search: Search, over_fetch: int = 2) -> Search:
    """The forbidden shape: search everything, then drop what the user may not see."""

    def run(
        store: SQLiteStore, query: object, flt: SearchFilter, k: int
    ) -> list[tuple[str, float]]:
        rows = search(store, query, ADMIT_ALL, k * over_fetch)
        ids = {cid for cid, _ in rows}
        keep = {c.chunk_id for c, d in store.hits(sorted(ids)) if flt.admits(d, c)}
        return [(cid, s) for cid, s in rows if cid in keep][:k]

    return run


def global_statistics(
    store: SQLiteStore, query: str, flt: SearchFilter, k: int
) -> list[tuple[str, float]]:
    """The subtler forbidden shape: rank inside the filter, but with BM25 statistics (N,
    average length, document frequencies) over every chunk, the hidden ones included."""

    def statistics_over_everything(
        index: ContentIndex, term_ids: Sequence[int], mask: BoolArray, k: int
    ) -> list[tuple[int, float]]:
        ranked = bm25_top_k(index, term_ids, np.ones_like(mask), len(index))
        return [(p, s) for p, s in ranked if mask[p]][:k]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sqlite_module, "bm25_top_k", statistics_over_everything)
        return store.lexical_search(query, flt, k)


def constructed_corpus(*allowed_texts: str) -> Corpus:
    """Six forbidden documents, then the documents the user may read (by default two
    that the forbidden ones outrank)."""
    allowed_texts = allowed_texts or ("revenue forecast milano report",) * 2
    # forbidden chunks say "revenue" more often, so they rank first on both retrievers
    texts = ["revenue revenue revenue"] * 6 + list(allowed_texts)
    docs = []
    for n, text in enumerate(texts):
        allowed = n >= 6
        doc = factories.document(
            f"src:{n}",
            corpus="ops",
            uri="",
            acl=frozenset({"user:ann"} if allowed else {"group:legal"}),
            content_hash=f"h{n}",
        )
        chunk = factories.chunk(doc, text)
        docs.append((doc, [chunk]))
    return Corpus(docs)


ANN = SearchFilter(principals=frozenset({"user:ann", "everyone"}), now=NOW)
ANN_MAY_READ = ["src:6#0", "src:7#0"]
LEXICAL_ORACLES = (check_non_interference, check_bm25_reference)


def test_reverse_proof_lexical_over_fetch_and_drop_fails_the_property(tmp_path: Path) -> None:
    corpus = constructed_corpus()
    with SQLiteStore(tmp_path / "index.db") as store:
        fill(store, corpus)

        check_lexical(store_lexical, store, corpus, "revenue", ANN, 2)  # the real store passes
        assert [c for c, _ in store.lexical_search("revenue", ANN, 2)] == ANN_MAY_READ
        for check in LEXICAL_ORACLES:  # each oracle on its own rejects the leak
            with pytest.raises(AssertionError):
                check(leaky(store_lexical), store, corpus, "revenue", ANN, 2)
        # what the leak looks like: the user may read two matches and is shown none
        assert leaky(store_lexical)(store, "revenue", ANN, 2) == []


def test_reverse_proof_global_bm25_statistics_fail_non_interference(tmp_path: Path) -> None:
    """Ranking inside the filter is not enough: with statistics over every chunk, six
    hidden documents saying "revenue" make it a common word, and the caller's "margin"
    chunk jumps above their "revenue" chunk. The results reveal the hidden documents."""
    corpus = constructed_corpus("revenue forecast", "margin forecast")
    query = "revenue margin"
    with SQLiteStore(tmp_path / "index.db") as store:
        fill(store, corpus)

        check_lexical(store_lexical, store, corpus, query, ANN, 2)  # the real store passes
        got = store.lexical_search(query, ANN, 2)
        assert [c for c, _ in got] == ANN_MAY_READ  # an exact tie, in insertion order
        assert got[0][1] == got[1][1]
        for check in LEXICAL_ORACLES:  # each oracle on its own rejects the variant
            with pytest.raises(AssertionError):
                check(global_statistics, store, corpus, query, ANN, 2)
        # the variant returns the right chunks, so only the ranking gives it away
        assert [c for c, _ in global_statistics(store, query, ANN, 2)] == ANN_MAY_READ[::-1]


def test_reverse_proof_vector_over_fetch_and_drop_fails_the_property(tmp_path: Path) -> None:
    corpus = constructed_corpus()
    with SQLiteStore(tmp_path / "index.db") as store:
        fill(store, corpus)
        query = EMBEDDER.embed(["revenue"])[0]

        check_vector(store_vector, store, corpus, "revenue", ANN, 2)  # the real store passes
        assert [c for c, _ in store.vector_search(query, ANN, 2)] == ANN_MAY_READ
        with pytest.raises(AssertionError):
            check_vector(leaky(store_vector), store, corpus, "revenue", ANN, 2)
        assert leaky(store_vector)(store, query, ANN, 2) == []
