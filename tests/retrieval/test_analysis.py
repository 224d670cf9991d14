"""Text analysis shared by indexing and querying: CJK n-grams, normalisation, safe FTS queries."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clearance.model import Chunk, Document, Sensitivity
from clearance.retrieval.analysis import fts_query, index_terms, query_terms
from clearance.store.base import SearchFilter
from clearance.store.sqlite import SQLiteStore

# --------------------------------------------------------------------------- CJK


def test_cjk_runs_are_indexed_as_unigrams_and_bigrams() -> None:
    assert index_terms("売上高") == "売 上 高 売上 上高"
    assert index_terms("東京タワー") == "東 京 タ ワ ー 東京 京タ タワ ワー"


def test_cjk_queries_use_bigrams_and_fall_back_to_the_unigram_of_a_single_character() -> None:
    assert query_terms("売上高") == ["売上", "上高"]
    assert query_terms("東") == ["東"]
    assert query_terms("東 京都") == ["東", "京都"]


def test_mixed_scripts_split_at_script_boundaries() -> None:
    assert index_terms("FY2024売上") == "fy2024 売 上 売上"
    assert query_terms("Tokyo東京の売上") == ["tokyo", "東京", "京の", "の売", "売上"]
    assert index_terms("한국어") == "한 국 어 한국 국어"


def test_cjk_punctuation_separates_runs() -> None:
    assert query_terms("営業利益。売上、原価") == ["営業", "業利", "利益", "売上", "原価"]


# --------------------------------------------------------------------------- normalisation


def test_nfkc_folds_full_width_and_half_width_forms() -> None:
    assert index_terms("ＡＢＣ　１２３") == "abc 123"
    assert query_terms("Ｔｏｋｙｏ") == ["tokyo"]
    assert index_terms("ｶﾀｶﾅ") == index_terms("カタカナ")
    assert index_terms("ﬁnance") == "finance"  # ligature


def test_casefold_goes_beyond_lower() -> None:
    assert index_terms("STRASSE Straße") == "strasse strasse"
    assert query_terms("REVENUE Revenue revenue") == ["revenue"]


def test_apostrophes_keep_words_together_and_are_unified() -> None:
    assert query_terms("don’t") == ["don't"]
    assert query_terms("l'azienda") == ["l'azienda"]


def test_punctuation_and_underscores_split_words() -> None:
    assert index_terms("snake_case, q3-report!") == "snake case q3 report"


# --------------------------------------------------------------------------- stopwords


def test_stopwords_are_removed_from_queries_only() -> None:
    text = "What is the revenue of the company in Milano? Il fatturato della società"
    assert query_terms(text) == ["revenue", "company", "milano", "fatturato", "società"]
    indexed = index_terms(text).split()
    for stopword in ("what", "is", "the", "of", "in", "il", "della"):
        assert stopword in indexed


def test_a_query_of_only_stopwords_has_no_terms() -> None:
    assert query_terms("what is the") == []
    assert fts_query("what is the") is None
    assert fts_query("  \n ") is None
    assert fts_query("?!…") is None


def test_query_terms_are_distinct_in_order_of_first_appearance() -> None:
    assert query_terms("beta alpha beta gamma alpha") == ["beta", "alpha", "gamma"]


# --------------------------------------------------------------------------- fts_query quoting


def test_fts_query_ors_quoted_terms() -> None:
    assert fts_query("revenue 東京") == '"revenue" OR "東京"'


@pytest.fixture
def fts() -> Iterator[sqlite3.Connection]:
    """An FTS5 table with the store's tokenizer, holding two analysed documents."""
    db = sqlite3.connect(":memory:")
    db.execute(
        "CREATE VIRTUAL TABLE t USING fts5 (terms, tokenize = 'porter unicode61 remove_diacritics 2')"
    )
    db.execute("INSERT INTO t (rowid, terms) VALUES (1, ?)", (index_terms("Revenue NEAR Tokyo"),))
    db.execute("INSERT INTO t (rowid, terms) VALUES (2, ?)", (index_terms("売上高 and costs"),))
    yield db
    db.close()


@pytest.mark.parametrize(
    ("query", "rows"),
    [
        ('say "revenue"', {1}),
        ('"', set()),
        ('""""', set()),
        ("revenue AND costs", {1, 2}),
        ("revenue OR", {1}),
        ("NOT costs", {2}),
        ("NEAR(revenue tokyo)", {1}),
        ("revenue*", {1}),
        ("^revenue", {1}),
        ("-costs +tokyo", {1, 2}),
        ("terms:revenue", {1}),
        ("(revenue", {1}),
        ("{terms}: costs", {2}),
        ("売上", {2}),
    ],
)
def test_fts_query_is_safe_against_fts5_syntax(
    fts: sqlite3.Connection, query: str, rows: set[int]
) -> None:
    match = fts_query(query)
    found: set[int] = set()
    if match is not None:
        found = {r[0] for r in fts.execute("SELECT rowid FROM t WHERE t MATCH ?", (match,))}
    assert found == rows


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=40))
def test_any_text_gives_a_query_fts5_accepts(text: str) -> None:
    match = fts_query(text)
    if match is None:
        assert query_terms(text) == []
        return
    db = sqlite3.connect(":memory:")
    try:
        db.execute("CREATE VIRTUAL TABLE t USING fts5 (terms, tokenize = 'unicode61')")
        db.execute("SELECT rowid FROM t WHERE t MATCH ?", (match,)).fetchall()
    finally:
        db.close()


@settings(max_examples=100, deadline=None)
@given(st.text(st.characters(codec="utf-8"), max_size=30))
def test_query_terms_of_a_text_are_among_its_index_terms(text: str) -> None:
    assert set(query_terms(text)) <= set(index_terms(text).split())


ALPHABET = st.sampled_from(list("abcXYZ éß'’_-.東京売上カナ한국ＡＢ１2 \n"))


@settings(max_examples=60, deadline=None)
@given(st.text(ALPHABET, min_size=1, max_size=25))
def test_a_document_is_found_by_its_own_text(text: str) -> None:
    """Index and query analysis agree: searching a document's text finds that document."""
    doc = Document(
        doc_id="s:1",
        source_system="s",
        corpus="c",
        title="",
        uri="",
        owner=None,
        acl=frozenset({"everyone"}),
        sensitivity=Sensitivity.PUBLIC,
        created_at=None,
        updated_at=None,
        review_at=None,
        expires_at=None,
        ai_allowed=True,
        personal_data=False,
        origin="human",
        origin_chain=(),
        content_hash="h",
    )
    with SQLiteStore(":memory:") as store:
        store.upsert(doc, [Chunk("s:1#0", "s:1", 0, text, "lines=1", doc.sensitivity, "human")])
        hits = store.lexical_search(text, SearchFilter(frozenset({"everyone"})), 5)
    assert [cid for cid, _ in hits] == (["s:1#0"] if query_terms(text) else [])
