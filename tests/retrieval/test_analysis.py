"""Text analysis shared by indexing and querying: CJK n-grams, normalisation, stopwords, and
the index terms (folded, stemmed) the lexical index stores and matches."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clearance.analysis import (
    document_terms,
    index_terms,
    query_terms,
    search_terms,
    unseen_pairs_as_characters,
)
from clearance.model import Sensitivity
from clearance.store.base import SearchFilter
from clearance.store.sqlite import SQLiteStore
from factories import chunks, document

EVERYONE = SearchFilter(frozenset({"everyone"}))


def add(store: SQLiteStore, doc_id: str, *texts: str) -> None:
    doc = document(doc_id, corpus="c", uri="", sensitivity=Sensitivity.PUBLIC)
    store.upsert(doc, chunks(doc, texts, locator="lines={n}"))


def found(store: SQLiteStore, query: str, k: int = 10) -> list[str]:
    return [chunk_id for chunk_id, _ in store.lexical_search(query, EVERYONE, k)]


# --------------------------------------------------------------------------- CJK


def test_cjk_runs_are_indexed_as_unigrams_and_bigrams() -> None:
    assert index_terms("売上高") == "売 上 高 売上 上高"
    assert index_terms("東京タワー") == "東 京 タ ワ ー 東京 京タ タワ ワー"


@pytest.mark.parametrize(
    ("terms", "df", "searched"),
    [
        # 育休 is 育児休業 shortened: no chunk holds the pair, every chunk of the leave
        # section holds its characters
        (
            ["日本", "育休", "給料"],
            {"日本": 4, "給料": 2, "育": 3, "休": 5},
            ["日本", "育", "休", "給料"],
        ),
        # a pair some chunk holds is searched as it is
        (["育休"], {"育休": 1, "育": 3, "休": 5}, ["育休"]),
        # Kyoto is not Tokyo: 都 is held by no chunk, so 京都 stays a pair (and finds nothing)
        (["京都"], {"京": 2}, ["京都"]),
        # kana only spell a sound; hiragana and Chinese particles frame the question
        (
            ["カイ", "で育", "在哪"],
            {"カ": 1, "イ": 9, "育": 3, "在": 4, "哪": 1},
            ["カイ", "育", "在哪"],
        ),
        # a character given twice is searched once; Latin terms pass through
        (["育休", "休業", "leav"], {"育": 1, "休": 2, "休業": 2}, ["育", "休", "休業", "leav"]),
    ],
)
def test_a_cjk_pair_no_chunk_holds_is_searched_as_its_han_characters(
    terms: list[str], df: dict[str, int], searched: list[str]
) -> None:
    assert unseen_pairs_as_characters(terms, df) == searched


def test_the_store_searches_an_unseen_pair_by_its_characters(store: SQLiteStore) -> None:
    add(store, "s:leave", "育児休業の給付は給与の 67% です。")
    add(store, "s:pay", "給料は毎月 25 日に支払われます。")
    add(store, "s:tokyo", "東京本社の所在地。")
    assert found(store, "育休") == ["s:leave#0"]
    assert found(store, "京都") == []  # 都 is in no chunk: the pair is kept, and finds nothing


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


def test_query_terms_are_distinct_in_order_of_first_appearance() -> None:
    assert query_terms("beta alpha beta gamma alpha") == ["beta", "alpha", "gamma"]


@settings(max_examples=100, deadline=None)
@given(st.text(st.characters(codec="utf-8"), max_size=30))
def test_query_terms_of_a_text_are_among_its_index_terms(text: str) -> None:
    assert set(query_terms(text)) <= set(index_terms(text).split())


# --------------------------------------------------------------------------- index terms: stemming


def test_inflections_of_a_word_share_one_index_term() -> None:
    assert search_terms("Revenues") == search_terms("revenue") == ["revenu"]
    assert search_terms("operating") == search_terms("operations") == ["oper"]
    assert search_terms("company's") == search_terms("companies") == ["compani"]
    # stemming, not lemmatisation: irregular forms stay apart
    assert search_terms("ran") != search_terms("running") == ["run"]


def test_document_terms_keep_every_occurrence_and_stopword() -> None:
    """Term frequency and document length count every word, so nothing is deduplicated or
    dropped on the document side."""
    assert document_terms("Revenue revenues REVENUE") == ["revenu", "revenu", "revenu"]
    assert document_terms("What was the revenue?") == ["what", "was", "the", "revenu"]
    assert document_terms("") == []
    assert document_terms("?!… \n") == []


def test_stopwords_are_removed_before_stemming() -> None:
    """Stopwords are matched on the surface word: "does" is dropped although its stem
    "doe" is no stopword, and "was" does not come back as a stem."""
    assert search_terms("What was the revenue? How does it work?") == ["revenu", "work"]
    assert search_terms("does") == []
    assert "doe" in document_terms("How does it work?")  # documents keep it, stemmed
    # a word that is not a stopword keeps its stem, even if another word shares it
    assert search_terms("John Doe") == ["john", "doe"]


def test_queries_without_index_terms_are_empty() -> None:
    for query in ("", "  \n\t ", "?!…", "what is the", "WHAT IS THE", "Ｔｈｅ", "il lo la della"):
        assert search_terms(query) == [], query


def test_search_terms_are_distinct_in_order_of_first_appearance() -> None:
    assert search_terms("revenues beta Revenue alpha BETA revenue") == ["revenu", "beta", "alpha"]
    assert search_terms("売上 revenues 売上高 revenue") == ["売上", "revenu", "上高"]


def test_full_width_latin_is_stemmed_like_ascii() -> None:
    assert search_terms("ＲＥＶＥＮＵＥＳ") == search_terms("revenues") == ["revenu"]
    assert document_terms("Ｏｐｅｒａｔｉｎｇ ｃｏｓｔｓ") == document_terms("operating costs")
    assert document_terms("operating costs") == ["oper", "cost"]


def test_apostrophes_in_index_terms() -> None:
    assert search_terms("don’t") == search_terms("don't") == ["don't"]
    assert search_terms("l’azienda") == ["l'azienda"]
    assert document_terms("the company’s plan") == ["the", "compani", "plan"]


def test_numbers_and_codes_are_not_stemmed() -> None:
    assert document_terms("FY2024 Q3 H1 2026-007 10k") == [
        "fy2024",
        "q3",
        "h1",
        "2026",
        "007",
        "10k",
    ]
    assert search_terms("fy2024 revenue") == ["fy2024", "revenu"]


# --------------------------------------------------------------------------- index terms: folding


@pytest.mark.parametrize(
    ("accented", "plain", "term"),
    [
        # Italian
        ("città", "citta", "citta"),
        ("Società", "societa", "societa"),
        # French: folded, then stemmed as English ("résumé" and "resume" both → "resum")
        ("résumé", "resume", "resum"),
        ("garçon", "garcon", "garcon"),
        ("Café", "cafe", "cafe"),
        # German: an umlaut folds to its base letter (not to the "ue" transliteration),
        # and casefolding turns ß into ss
        ("Müller", "Muller", "muller"),
        ("Köln", "Koln", "koln"),
        ("Straße", "Strasse", "strass"),
        # Spanish, Vietnamese (stacked marks)
        ("ñandú", "nandu", "nandu"),
        ("Việt", "Viet", "viet"),
    ],
)
def test_latin_diacritics_are_folded_before_stemming(accented: str, plain: str, term: str) -> None:
    assert search_terms(accented) == search_terms(plain) == [term]
    assert document_terms(accented) == document_terms(plain) == [term]


def test_folding_does_not_transliterate() -> None:
    assert search_terms("Mueller") == ["mueller"] != search_terms("Müller")
    # only combining marks go: letters that are no base letter plus a mark stay
    assert search_terms("Łódź") == ["łodz"]
    assert search_terms("øre") == ["øre"]


def test_surface_terms_keep_their_diacritics() -> None:
    """The extractive answerer compares surface terms: folding and stemming are for the
    index only."""
    assert query_terms("La società operating") == ["società", "operating"]
    assert index_terms("città revenues") == "città revenues"


# --------------------------------------------------------------------------- index terms: CJK


def test_japanese_voicing_marks_are_never_folded() -> None:
    """NFD would split が into か + a combining mark; CJK terms are left exactly as the
    surface analysis gives them."""
    assert search_terms("が") == ["が"]
    assert search_terms("か") == ["か"]
    assert search_terms("パスワード") == ["パス", "スワ", "ワー", "ード"]
    assert "ハス" not in search_terms("パスワード")
    assert document_terms("がんばる") == ["が", "ん", "ば", "る", "がん", "んば", "ばる"]
    assert search_terms("ｶﾞｲﾄﾞ") == search_terms("ガイド") == ["ガイ", "イド"]  # half-width


@pytest.mark.parametrize(
    "text",
    ["がんばる", "コーヒー データー", "ガイドブック", "東京都の売上高", "한국어 매출", "々〆"],
)
def test_cjk_index_terms_are_the_surface_terms(text: str) -> None:
    assert document_terms(text) == index_terms(text).split()
    assert search_terms(text) == query_terms(text)


def test_mixed_text_stems_only_the_latin_terms() -> None:
    assert document_terms("Revenues売上がり") == [
        "revenu",
        "売",
        "上",
        "が",
        "り",
        "売上",
        "上が",
        "がり",
    ]
    assert search_terms("データ operations の件") == ["デー", "ータ", "oper", "の件"]


KANA = st.text(
    st.sampled_from(list("かがきぎぱはばカガキギパハバーンゔヴ々한국어東京")), max_size=12
)


@settings(max_examples=100, deadline=None)
@given(KANA)
def test_cjk_text_is_never_folded_or_stemmed(text: str) -> None:
    assert document_terms(text) == index_terms(text).split()
    assert search_terms(text) == query_terms(text)


# --------------------------------------------------------------------------- index terms: properties


@settings(max_examples=150, deadline=None)
@given(st.text(st.characters(codec="utf-8"), max_size=30))
def test_search_terms_of_a_text_are_distinct_and_among_its_document_terms(text: str) -> None:
    terms = search_terms(text)
    assert len(terms) == len(set(terms))
    assert set(terms) <= set(document_terms(text))
    assert not terms or query_terms(text)  # stemming may turn a term into a stopword, not back
    assert all(t and not any(c.isspace() for c in t) for t in document_terms(text))


SYNTAX = st.sampled_from(
    [
        '"',
        '""',
        "'",
        "’",
        "*",
        "NEAR",
        "NEAR(",
        "OR",
        "AND",
        "NOT",
        "(",
        ")",
        "^",
        ":",
        "{",
        "}",
        "-",
        "+",
        "%",
        "\\",
        ";",
        "--",
        "/*",
        "\x00",
        "\x1f",
        "\x7f",
        "\u200b",
        "\ufeff",
        "\u3099",
        "\u0301",
        " ",
        "\n",
        "revenue",
        "città",
        "売上",
    ]
)
NASTY = st.lists(st.one_of(SYNTAX, st.text(st.characters(codec="utf-8"), max_size=6)), max_size=12)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SQLiteStore]:
    """A small multilingual store on a real file, shared by the read-only tests below."""
    store = SQLiteStore(tmp_path_factory.mktemp("analysis") / "clearance.db")
    try:
        add(store, "s:en", "Quarterly revenue grew in Europe.", "Operating costs fell.")
        add(store, "s:it", "La città di Milano ospita la sede.")
        add(store, "s:ja", "東京本社の売上高は増加した。", "データベースのガイドを参照。")
        add(store, "s:ko", "한국 매출 보고서")
        add(store, "s:near", "Revenue NEAR Tokyo")
        yield store
    finally:
        store.close()


@settings(max_examples=150, deadline=None)
@given(NASTY.map("".join))
def test_arbitrary_text_never_makes_analysis_or_search_raise(
    corpus: SQLiteStore, text: str
) -> None:
    """Query syntax of any search engine, control characters and stray combining marks are
    just text: analysis returns terms, and the store returns a well-formed ranking."""
    document_terms(text)
    terms = search_terms(text)
    hits = corpus.lexical_search(text, EVERYONE, 5)
    if not terms:
        assert hits == []
    chunk_ids = [c for c, _ in hits]
    assert len(chunk_ids) == len(set(chunk_ids)) <= 5
    assert all(c.split("#")[0] in {"s:en", "s:it", "s:ja", "s:ko", "s:near"} for c in chunk_ids)
    scores = [s for _, s in hits]
    assert all(math.isfinite(s) and s > 0 for s in scores)
    assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize(
    ("query", "chunks"),
    [
        ('say "revenue"', {"s:en#0", "s:near#0"}),
        ('"', set()),
        ('""""', set()),
        ("revenue AND costs", {"s:en#0", "s:en#1", "s:near#0"}),
        ("NOT costs", {"s:en#1"}),
        ("NEAR(tokyo)", {"s:near#0"}),
        ("costs*", {"s:en#1"}),
        ("^costs", {"s:en#1"}),
        ("-costs +tokyo", {"s:en#1", "s:near#0"}),
        ("terms:costs", {"s:en#1"}),
        ("(costs", {"s:en#1"}),
        ("{terms}: costs", {"s:en#1"}),
        ("'; DROP TABLE chunks; --", set()),
    ],
)
def test_query_syntax_characters_are_plain_text(
    corpus: SQLiteStore, query: str, chunks: set[str]
) -> None:
    assert set(found(corpus, query)) == chunks
    assert found(corpus, "revenue")  # the store survived every query


# --------------------------------------------------------------------------- end to end


def test_store_matches_inflections_accents_and_cjk(store: SQLiteStore) -> None:
    add(store, "s:en", "Quarterly revenue grew in Europe.")
    add(store, "s:ops", "Operations of the warehouse.")
    add(store, "s:it", "La città di Milano ospita la sede.")
    add(store, "s:ja", "東京本社の売上高は増加した。", "データベースのガイドを参照。")
    add(store, "s:ko", "한국 매출 보고서")

    assert found(store, "Revenues") == ["s:en#0"]
    assert found(store, "ＲＥＶＥＮＵＥＳ") == ["s:en#0"]
    assert found(store, "operating") == ["s:ops#0"]
    assert found(store, "citta") == found(store, "Città") == ["s:it#0"]
    assert found(store, "売上高は？") == ["s:ja#0"]
    assert found(store, "ガイド") == found(store, "ｶﾞｲﾄﾞ") == ["s:ja#1"]
    assert found(store, "ガイ") == ["s:ja#1"]
    assert found(store, "カイ") == []  # カ is not ガ
    assert found(store, "매출") == ["s:ko#0"]
    # stopwords alone find nothing, although every English document holds some
    assert found(store, "What was the") == []


ALPHABET = st.sampled_from(list("abcXYZ éàüß'’_-.東京売上カナがガーｶﾞ한국ＡＢ１2 \n"))


@settings(max_examples=60, deadline=None)
@given(st.text(ALPHABET, min_size=1, max_size=25))
def test_a_document_is_found_by_its_own_text(text: str) -> None:
    """Index and query analysis agree: searching a document's text finds that document."""
    with SQLiteStore(":memory:") as store:
        add(store, "s:1", text)
        hits = store.lexical_search(text, EVERYONE, 5)
    assert [cid for cid, _ in hits] == (["s:1#0"] if search_terms(text) else [])


def test_stopwords_that_appear_only_after_stemming_are_dropped() -> None:
    assert search_terms("What's the revenue? It's late, that's all") == ["revenu", "late", "all"]
    assert "it" in document_terms("It's late")  # documents keep them


@pytest.mark.parametrize(
    ("text", "term"),
    [
        ("İstanbul", "istanbul"),  # casefold leaves a combining dot inside the word
        ("हिन्दी", "हिन्दी"),  # Devanagari vowel signs and virama belong to the word
        ("שָׁלוֹם", "שָׁלוֹם"),  # Hebrew points too; only Latin/Greek/Cyrillic accents fold
        ("Ελλάδα", "ελλαδα"),
    ],
)
def test_combining_marks_stay_inside_their_word(text: str, term: str) -> None:
    assert document_terms(text) == [term]
    assert search_terms(text) == [term]
