"""The organisation's vocabulary (``[retrieval.synonyms]``): which phrases a question holds,
what the lexical search adds, what the relevance judgement counts, and the config errors."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from clearance.answer.relevance import RelevanceGate
from clearance.config import RelevanceSettings, settings_from_dict
from clearance.errors import ConfigError
from clearance.llm.base import Snippet
from clearance.model import Sensitivity
from clearance.retrieval.hybrid import HybridSearcher
from clearance.retrieval.synonyms import NO_SYNONYMS, Synonyms
from clearance.store.base import SearchFilter, TermStatistics
from clearance.store.sqlite import SQLiteStore
from factories import chunk, document

LEGAL = Synonyms([("litigation hold", "legal hold", "preserve all records")])
EVERYONE = SearchFilter(principals=frozenset({"everyone"}))


@pytest.mark.parametrize(
    "question",
    [
        "What does the litigation hold require?",
        "Which LITIGATION HOLDS are open?",  # case and plural: index forms
        "litigation hold",
        "What must we preserve all records about?",  # any phrase of the group
    ],
)
def test_a_question_holds_a_phrase_of_the_group(question: str) -> None:
    assert [u.phrase for u in LEGAL.used(question)] != []


@pytest.mark.parametrize(
    "question",
    [
        "Is the hold music changed?",  # one word of the phrase is not the phrase
        "litigation on hold",  # nor are its words apart
        "holdings in litigation",
    ],
)
def test_words_apart_are_not_the_phrase(question: str) -> None:
    assert LEGAL.used(question) == []


def test_cjk_phrases_match_inside_longer_runs() -> None:
    synonyms = Synonyms([("訴訟ホールド", "記録の保全")])
    [used] = synonyms.used("訴訟ホールドの通知は何を求めていますか")
    assert used.texts == ("記録の保全",)
    assert synonyms.used("ホールドの通知") == []


def test_expand_adds_the_equivalents_once_and_keeps_a_plain_query() -> None:
    expanded = LEGAL.expand("litigation hold on the litigation hold")
    assert expanded.splitlines() == [
        "litigation hold on the litigation hold",
        "legal hold",
        "preserve all records",
    ]
    assert LEGAL.expand("travel policy") == "travel policy"
    assert NO_SYNONYMS.expand("litigation hold") == "litigation hold"


# ------------------------------------------------------------------ relevance judgement

QUESTION = "What does the litigation hold notice about the battery incident require?"
ANSWER = Snippet(
    ref="S1",
    doc_id="crm:globex",
    chunk_id="crm:globex#1",
    title="Customer record: Globex",
    locator="section=Situation",
    text=(
        "Gateways went offline because of a battery issue. Globex's legal department has "
        "asked ACME to preserve all records about the incident."
    ),
    uri="",
    sensitivity=Sensitivity.INTERNAL,
    corpus="c",
    origin="human",
    trust="trusted",
)
NEAR_MISS = Snippet(
    ref="S2",
    doc_id="kb:battery",
    chunk_id="kb:battery#1",
    title="Battery incident FAQ",
    locator="section=Incident",
    text="The battery incident affected firmware 2.3.1; replacement batteries ship free.",
    uri="",
    sensitivity=Sensitivity.INTERNAL,
    corpus="c",
    origin="human",
    trust="trusted",
)


def _stats(terms: object) -> TermStatistics:
    # 200 readable chunks; "litig", "hold" and "notic" in none (the notice is hidden).
    df = {"batteri": 6, "incid": 4, "requir": 10, "record": 8, "preserv": 2, "all": 60}
    return TermStatistics(200, df)


def _relevant(gate: RelevanceGate, *snippets: Snippet) -> set[str]:
    return {j.snippet.doc_id for j in gate.judge(QUESTION, snippets, _stats) if j.relevant}


def test_a_passage_stating_an_equivalent_holds_the_phrase() -> None:
    gate = RelevanceGate(RelevanceSettings(), LEGAL)
    assert _relevant(gate, ANSWER, NEAR_MISS) == {"crm:globex"}


def test_without_the_vocabulary_the_same_passage_is_judged_irrelevant() -> None:
    """Reverse proof: the gain is the synonym's, not a looser gate's."""
    assert _relevant(RelevanceGate(RelevanceSettings()), ANSWER, NEAR_MISS) == set()


def test_a_partial_equivalent_does_not_count() -> None:
    """ "records" alone is not "preserve all records"."""
    partial = replace(ANSWER, text=ANSWER.text.replace("preserve all ", ""))
    assert _relevant(RelevanceGate(RelevanceSettings(), LEGAL), partial) == set()


# ------------------------------------------------------------------ lexical search


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    db = SQLiteStore(tmp_path / "index.db")
    for doc_id, text in {
        "files:crm": "Globex asked us to preserve all records about the incident.",
        "files:music": "Hold music for the support line changes in May.",
    }.items():
        doc = document(doc_id, corpus="c", uri=f"file:{doc_id}", content_hash=doc_id)
        db.upsert(doc, [chunk(doc, text, locator="lines=1-1")])
    with db:
        yield db


def test_the_lexical_search_finds_a_passage_in_the_equivalent_words(store: SQLiteStore) -> None:
    hits = HybridSearcher(store, None, synonyms=LEGAL).search("litigation hold", EVERYONE, 5)
    assert hits and hits[0].document.doc_id == "files:crm"


def test_without_the_vocabulary_the_search_misses_it(store: SQLiteStore) -> None:
    hits = HybridSearcher(store, None).search("litigation hold", EVERYONE, 5)
    assert "files:crm" not in [h.document.doc_id for h in hits]


def test_the_expansion_stays_inside_the_filter(store: SQLiteStore) -> None:
    """The equivalents widen what is searched for, never what may be searched."""
    only_music = SearchFilter(principals=EVERYONE.principals, doc_ids=frozenset({"files:music"}))
    hits = HybridSearcher(store, None, synonyms=LEGAL).search("litigation hold", only_music, 5)
    assert [h.document.doc_id for h in hits] == ["files:music"]


# ------------------------------------------------------------------ configuration


def test_the_config_gives_groups_with_the_phrase_first() -> None:
    settings = settings_from_dict(
        {"retrieval": {"synonyms": {"PTO": ["paid time off", "annual leave"]}}}
    )
    assert settings.retrieval.synonyms == (("PTO", "paid time off", "annual leave"),)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"PTO": []}, "retrieval.synonyms.PTO: name at least one equivalent phrase"),
        ({"PTO": ["the"]}, "'the' holds no word to search for"),
        ({"PTO": ["…"]}, "holds no word to search for"),
        ({"PTO": "paid time off"}, "retrieval.synonyms.PTO: expected list"),
        ({"PTO": [3]}, "retrieval.synonyms.PTO: expected a list of strings"),
    ],
)
def test_bad_synonyms_are_refused_in_one_line(table: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as refused:
        settings_from_dict({"retrieval": {"synonyms": table}})
    assert message in str(refused.value)
    assert "\n" not in str(refused.value)
