"""Lexical and vector search: the top-k *of the allowed set* (store/base.py).

For random worlds and random filters (every field varies), each search returns exactly
what a brute force over the chunks ``SearchFilter.admits`` returns: BM25 with statistics
over the admitted chunks, cosine over the admitted chunks with a vector, exact ties in
insertion order. A second world checks low selectivity: a caller who may read about 1 % of
the chunks, most of which are hidden and rank higher, still gets the true top-k.

Reverse proofs: searching everything and filtering afterwards (over-fetch and drop) fails
the same checks, on both retrievers.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import factories
from clearance.errors import StoreError
from clearance.store.base import SearchFilter, Store
from conformance.backends import Stores, examples
from conformance.common import (
    EVERYONE,
    TEXTS,
    everyone_filter,
    make_doc,
    unit,
    vector,
    vectors,
)
from conformance.leaks import over_fetch
from conformance.world import (
    EMBEDDER,
    NOW,
    Entry,
    World,
    check_lexical_top_k,
    check_vector_top_k,
    fill,
    filters,
    texts,
    worlds,
)
from factories import chunks as make_chunks

# --------------------------------------------------------------------------- the property


def test_search_returns_the_top_k_of_the_allowed_set(stores: Stores) -> None:
    @settings(max_examples=examples(stores, 40), deadline=None)
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        world = data.draw(worlds(), label="world")
        flt = data.draw(filters(world), label="filter")
        query = data.draw(texts, label="query")
        k = data.draw(st.sampled_from([3, 1, 2, 6]), label="k")
        with stores.scratch() as store:
            fill(store, world)
            lexical = check_lexical_top_k(store, world, query, flt, k)
            found = check_vector_top_k(store, world, EMBEDDER.embed([query])[0], flt, k)
        event(f"lexical hits: {min(len(lexical), 2)}{'+' if len(lexical) >= 2 else ''}")
        event(f"vector hits: {min(len(found), 2)}{'+' if len(found) >= 2 else ''}")

    check()


# --------------------------------------------------------------------------- low selectivity

RARE_READERS = 8  # user:rare0 … each may read 4 of the 400 documents (1 %)
SIZE = 400


def sparse_world() -> World:
    """400 one-chunk documents with random vectors; ``user:rare<i>`` may read documents
    ``i, i + 100, i + 200, i + 300`` and everyone else reads the rest through ``group:all``."""
    rng = np.random.default_rng(7)
    vocabulary = ["revenue", "margin", "tokyo", "forecast", "budget", "osaka", "report"]
    entries = []
    for n in range(SIZE):
        rare = n % 100
        acl = {f"user:rare{rare}"} if rare < RARE_READERS else {"group:all"}
        doc = factories.document(f"src:{n:03d}", acl=acl)
        words = rng.choice(vocabulary, size=int(rng.integers(2, 7)))
        chunk = factories.chunk(doc, " ".join(words))
        v = rng.normal(size=16).astype(np.float32)
        entries.append(Entry(doc, [chunk], [(v / np.linalg.norm(v)).astype(np.float32)]))
    return World(entries)


SPARSE = sparse_world()


@pytest.fixture(scope="module")
def sparse(module_stores: Stores) -> Store:
    store = module_stores.new()
    fill(store, SPARSE)
    return store


def rare(reader: int) -> SearchFilter:
    return SearchFilter(principals=frozenset({f"user:rare{reader}"}), now=NOW)


@settings(max_examples=40, deadline=None)
@given(
    reader=st.integers(0, RARE_READERS - 1),
    query=st.sampled_from(["revenue", "margin tokyo", "forecast budget osaka", "report"]),
    seed=st.integers(0, 2**32 - 1),
    k=st.sampled_from([1, 3, 4, 10]),
)
def test_a_selective_filter_still_gets_the_true_top_k(
    sparse: Store, reader: int, query: str, seed: int, k: int
) -> None:
    flt = rare(reader)
    probe = np.random.default_rng(seed).normal(size=16).astype(np.float32)
    assert len(check_vector_top_k(sparse, SPARSE, probe, flt, k)) == min(k, 4)
    check_lexical_top_k(sparse, SPARSE, query, flt, k)


def test_reverse_proof_over_fetch_and_drop_fails_at_low_selectivity(sparse: Store) -> None:
    flt = rare(3)
    probe = SPARSE.entries[3].vectors[0]
    assert probe is not None
    check_vector_top_k(sparse, SPARSE, probe, flt, 4)
    check_lexical_top_k(sparse, SPARSE, "revenue", flt, 4)
    leaky = over_fetch(sparse)
    with pytest.raises(AssertionError):
        check_vector_top_k(leaky, SPARSE, probe, flt, 4)  # type: ignore[arg-type]
    with pytest.raises(AssertionError):
        check_lexical_top_k(leaky, SPARSE, "revenue", flt, 4)  # type: ignore[arg-type]


def hidden_first_world() -> World:
    """Six documents the caller may not read rank first on both retrievers; the two after
    them are the caller's."""
    entries = []
    for n, text in enumerate(["revenue revenue revenue"] * 6 + ["revenue forecast milano"] * 2):
        readers = {"user:ann"} if n >= 6 else {"group:legal"}
        doc = factories.document(f"src:{n}", corpus="ops", acl=readers)
        chunk = factories.chunk(doc, text)
        entries.append(Entry(doc, [chunk], [EMBEDDER.embed(["revenue"] if n < 6 else [text])[0]]))
    return World(entries)


def test_reverse_proof_over_fetch_and_drop_returns_nothing_the_caller_may_read(
    store: Store,
) -> None:
    world = hidden_first_world()
    fill(store, world)
    ann = SearchFilter(principals=frozenset({"user:ann"}), now=NOW)
    probe = EMBEDDER.embed(["revenue"])[0]

    assert [c for c, _ in check_lexical_top_k(store, world, "revenue", ann, 2)] == [
        "src:6#0",
        "src:7#0",
    ]
    assert [c for c, _ in check_vector_top_k(store, world, probe, ann, 2)] == [
        "src:6#0",
        "src:7#0",
    ]
    leaky = over_fetch(store)
    with pytest.raises(AssertionError):
        check_lexical_top_k(leaky, world, "revenue", ann, 2)  # type: ignore[arg-type]
    with pytest.raises(AssertionError):
        check_vector_top_k(leaky, world, probe, ann, 2)  # type: ignore[arg-type]
    # what the leak looks like: the caller may read two matches and is shown none
    assert leaky.lexical_search("revenue", ann, 2) == []


# --------------------------------------------------------------------------- lexical


def test_lexical_search_edge_cases(store: Store) -> None:
    doc = make_doc()
    store.upsert(doc, make_chunks(doc, TEXTS))

    assert store.lexical_search("revenue", everyone_filter(), 0) == []
    assert store.lexical_search("revenue", everyone_filter(principals=frozenset()), 5) == []
    assert store.lexical_search("the of and", everyone_filter(), 5) == []  # only stopwords
    assert store.lexical_search("   ", everyone_filter(), 5) == []
    assert store.lexical_search("", everyone_filter(), 5) == []
    hits = store.lexical_search("quarterly", everyone_filter(), 5)  # the title is indexed too
    assert {c for c, _ in hits} == {"files:a.md#0", "files:a.md#1", "files:a.md#2"}
    assert all(score > 0 for _, score in hits)


@pytest.mark.parametrize(
    "query",
    [
        '"',
        'say "hi"',
        "revenue AND",
        "NEAR(revenue costs)",
        "rev*",
        "-costs",
        "a:b",
        "()",
        "'; DROP TABLE chunks; --",
        "%_\\",
        "revenue & | ! <->",
    ],
)
def test_lexical_search_takes_any_text_as_words(store: Store, query: str) -> None:
    """No query syntax of any engine (FTS5, tsquery, LIKE) is interpreted, and nothing
    in a query reaches SQL as code."""
    doc = make_doc()
    store.upsert(doc, make_chunks(doc, TEXTS))

    result = store.lexical_search(query, everyone_filter(), 5)

    assert isinstance(result, list)
    assert store.stats().chunks == 3


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
    store: Store, query: str, expected: set[str]
) -> None:
    for doc_id, (title, text) in ANALYSED.items():
        doc = make_doc(doc_id, title=title)
        store.upsert(doc, make_chunks(doc, [text]))

    hits = store.lexical_search(query, everyone_filter(), 10)

    assert {c for c, _ in hits} == expected
    assert all(score > 0 for _, score in hits)


def test_lexical_ties_are_broken_by_insertion_order(store: Store) -> None:
    for name in ("z", "a", "m"):
        doc = make_doc(f"files:{name}", title="")
        store.upsert(doc, make_chunks(doc, ["same words here"]))

    got = store.lexical_search("words", everyone_filter(), 2)

    assert [c for c, _ in got] == ["files:z#0", "files:a#0"]
    assert got[0][1] == got[1][1]


# --------------------------------------------------------------------------- vector


def test_vector_search_edge_cases(store: Store) -> None:
    assert store.vector_search(vector("x"), everyone_filter(), 5) == []  # no vectors yet
    doc = make_doc()
    store.upsert(doc, make_chunks(doc, TEXTS), vectors(TEXTS))

    assert store.vector_search(vector("x"), everyone_filter(), 0) == []
    assert store.vector_search(vector("x"), everyone_filter(principals=frozenset()), 5) == []
    with pytest.raises(StoreError, match="query vector has 3 dimensions, index has 32"):
        store.vector_search(np.ones(3, dtype=np.float32), everyone_filter(), 5)
    top = store.vector_search(vector(TEXTS[2]), everyone_filter(), 5)
    assert top[0][0] == "files:a.md#2"
    assert top[0][1] == pytest.approx(1.0, abs=1e-5)
    assert [s for _, s in top] == sorted((s for _, s in top), reverse=True)


def test_chunks_without_a_vector_are_not_vector_candidates(store: Store) -> None:
    doc = make_doc()
    store.upsert(doc, make_chunks(doc, TEXTS), [vector(TEXTS[0]), None, None])

    assert [c for c, _ in store.vector_search(vector(TEXTS[2]), everyone_filter(), 5)] == [
        "files:a.md#0"
    ]
    assert len(store.lexical_search("tokyo", everyone_filter(), 5)) == 1  # still searchable


def test_vector_ties_are_broken_by_insertion_order(store: Store) -> None:
    for name in ("z", "a", "m"):
        doc = make_doc(f"files:{name}")
        store.upsert(doc, make_chunks(doc, ["same"]), [unit(1, 0, 0, 0)])
    other = make_doc("files:b")
    store.upsert(other, make_chunks(other, ["other"]), [unit(0, 1, 0, 0)])

    assert store.vector_search(unit(1, 0, 0, 0), everyone_filter(), 2) == [
        ("files:z#0", 1.0),
        ("files:a#0", 1.0),
    ]
    assert [c for c, _ in store.vector_search(unit(1, 0, 0, 0), everyone_filter(), 10)] == [
        "files:z#0",
        "files:a#0",
        "files:m#0",
        "files:b#0",
    ]


def test_vector_ties_at_the_cut_keep_the_earliest_chunks(store: Store) -> None:
    for i in range(10):
        doc = make_doc(f"files:w{i:02d}")
        store.upsert(doc, make_chunks(doc, ["weak"]), [unit(1, 1, 0, 0)])
    for i in range(3):
        doc = make_doc(f"files:s{i}")
        store.upsert(doc, make_chunks(doc, ["strong"]), [unit(1, 0, 0, 0)])

    got = [c for c, _ in store.vector_search(unit(1, 0, 0, 0), everyone_filter(), 5)]

    assert got == ["files:s0#0", "files:s1#0", "files:s2#0", "files:w00#0", "files:w01#0"]


def test_identical_vectors_are_an_exact_tie_ranked_in_insertion_order(store: Store) -> None:
    positions = np.arange(24)
    same = np.sin(positions + 1.0).astype(np.float32)
    query = np.cos(3.0 * positions).astype(np.float32)
    for n in range(5):
        doc = make_doc(f"files:{n}")
        store.upsert(doc, make_chunks(doc, ["same text"]), [same])

    got = store.vector_search(query, everyone_filter(), 5)

    assert len({score for _, score in got}) == 1
    assert [c for c, _ in got] == [f"files:{n}#0" for n in range(5)]


def test_a_replaced_document_ranks_after_older_ties(store: Store) -> None:
    """Insertion order means the order of the latest write: a re-upserted document's
    chunks are new rows and come after every chunk written before it."""
    for name in ("a", "b"):
        doc = make_doc(f"files:{name}")
        store.upsert(doc, make_chunks(doc, ["same"]), [unit(1, 0, 0, 0)])
    again = make_doc("files:a")
    store.upsert(again, make_chunks(again, ["same"]), [unit(1, 0, 0, 0)])

    assert [c for c, _ in store.vector_search(unit(1, 0, 0, 0), everyone_filter(), 2)] == [
        "files:b#0",
        "files:a#0",
    ]


# --------------------------------------------------------------------------- both at once


def test_retrieve_returns_what_the_separate_searches_return(store: Store) -> None:
    finance, hidden = make_doc("files:finance"), make_doc("files:hidden", acl=EVERYONE)
    other = make_doc("files:other", title="Tokyo office")
    store.upsert(finance, make_chunks(finance, TEXTS), vectors(TEXTS))
    store.upsert(hidden, make_chunks(hidden, ["Revenue in Tokyo"]), vectors(["Revenue in Tokyo"]))
    store.upsert(other, make_chunks(other, ["Revenue", "no vector"]), [vector("x"), None])
    bob = everyone_filter(principals=frozenset({"user:bob"}))
    retrieve = store.retrieve  # type: ignore[attr-defined]

    for query, k in (("revenue Tokyo", 3), ("quarter costs 東京", 10), ("the of", 4)):
        probe = vector(query)
        got = retrieve(query, probe, bob, k)
        assert (got.lexical, got.vector) == (
            store.lexical_search(query, bob, k),
            store.vector_search(probe, bob, k),
        )
        assert len(got.vector) == min(k, 4)  # every visible chunk with a vector qualifies
        assert not {c for c, _ in [*got.lexical, *got.vector]} & {"files:hidden#0"}
        alone = retrieve(query, None, bob, k)
        assert (alone.lexical, alone.vector) == (got.lexical, [])
    assert len(retrieve("revenue Tokyo", None, bob, 10).lexical) == 4
    empty = retrieve("the of", None, bob, 5)  # only stopwords
    assert (empty.lexical, empty.vector) == ([], [])
    probe = vector("revenue")
    assert tuple(retrieve("revenue", probe, bob, 0)) == ([], [])
    nobody = everyone_filter(principals=frozenset())
    assert tuple(retrieve("revenue", probe, nobody, 5)) == ([], [])
    with pytest.raises(StoreError, match="query vector has 3 dimensions"):
        retrieve("revenue", np.ones(3, dtype=np.float32), bob, 5)
