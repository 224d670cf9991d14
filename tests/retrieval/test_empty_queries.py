"""A query without anything to search for finds nothing, and a question without one is
refused the ordinary no-source way.

The vector side embeds any string — a lone emoji or a zero-width space included — and
nearest neighbours always exist, so such a query used to return arbitrary hits. The rule
lives in one place, ``HybridSearcher.search`` (``retrieval.analysis.searchable``), which both
``Clearance.search`` and the answer path's retrieval go through. The tests run a real SQLite
index with an embedder switched on: the hashing seam fake everywhere, the bundled MiniLM
model under the ``embeddings`` marker. The reverse proofs put the old rule (``query.strip()``)
back and check that the same assertions fail.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clearance.analysis import searchable
from clearance.answer.result import Route, Status
from clearance.app import Clearance
from clearance.config import Settings
from clearance.llm.embedding import HashingEmbedder, Vectors
from clearance.llm.mock import MockProvider
from clearance.retrieval import hybrid
from clearance.store.sqlite import SQLiteStore

DOCS = {
    "hotel.md": "Hotels may cost up to 200 EUR per night on business trips.",
    "garden.md": "The tulips in the courtyard bloom in April.",
    "tokyo.md": "東京本社の売上高は前年比で増加しました。",
}

#: Queries with no letter and no digit: nothing to search for.
EMPTY = [
    "😀",
    "👍🏽",  # with a skin-tone modifier
    "👨‍👩‍👧",  # joined by zero-width joiners
    "🇯🇵",  # regional indicators
    "\u200b",  # zero-width space
    "\u200b\u200c\u200d\u2060\ufeff",  # every common zero-width character
    "\u00ad",  # soft hyphen
    "?!…",
    "・「」。、",  # CJK punctuation
    "___",
    "\u0301\u0308",  # combining marks on nothing
    " \t\n\u3000",  # whitespace, ideographic space included
    "😀 \u200b ?! 🎉",
]

KEY = b"empty-query-test-key-0123456789"


class CountingEmbedder:
    """The hashing seam fake, counting the texts it is asked to embed."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder()
        self.name, self.dim = self.inner.name, self.inner.dim
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.texts.extend(texts)
        return self.inner.embed(texts)


def ingest(app: Clearance, root: Path, write_directory: Callable[..., Path]) -> None:
    corpus = root / "corpus"
    corpus.mkdir()
    for name, text in DOCS.items():
        (corpus / name).write_text(text, encoding="utf-8")
    (corpus / "_meta.json").write_text(json.dumps({"acl": ["everyone"]}), encoding="utf-8")
    assert app.ingest([corpus]).failed == []
    app.sync_directory(write_directory(root / "directory.json", {"ann": []}))


@pytest.fixture
def embedder() -> CountingEmbedder:
    return CountingEmbedder()


@pytest.fixture
def provider() -> MockProvider:
    return MockProvider()


@pytest.fixture
def app(
    tmp_path: Path,
    settings: Settings,
    store: SQLiteStore,
    write_directory: Callable[..., Path],
    embedder: CountingEmbedder,
    provider: MockProvider,
) -> Clearance:
    """Three documents everyone may read, vectors on (hashing fake), a scripted model."""
    clearance = Clearance(settings, store, embedder=embedder, provider=provider, trace_key=KEY)
    ingest(clearance, tmp_path, write_directory)
    embedder.texts.clear()
    return clearance


@pytest.fixture
def old_rule(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The behaviour before the fix: only a blank query was skipped."""
    monkeypatch.setattr(hybrid, "searchable", lambda query: bool(query.strip()))
    yield


# --------------------------------------------------------------------------- search


def assert_finds_nothing(app: Clearance, query: str) -> None:
    result = app.search("ann", query)
    assert result.refused is None
    assert result.hits == [], [h.document.doc_id for h in result.hits]


@pytest.mark.parametrize("query", EMPTY)
def test_a_query_without_letters_or_digits_finds_nothing(
    app: Clearance, embedder: CountingEmbedder, query: str
) -> None:
    assert_finds_nothing(app, query)
    assert embedder.texts == []  # nothing to embed either


@pytest.mark.parametrize(
    ("query", "doc_id"),
    [
        ("🏨 hotel?", "files:hotel.md"),
        ("\u200bhotel\u200b", "files:hotel.md"),
        ("tulips 🌷🌷", "files:garden.md"),
        ("売上高！", "files:tokyo.md"),
        ("200 €", "files:hotel.md"),
    ],
)
def test_one_term_among_emoji_and_invisibles_is_searched(
    app: Clearance, query: str, doc_id: str
) -> None:
    hits = app.search("ann", query).hits
    assert hits and hits[0].document.doc_id == doc_id


def test_reverse_proof_the_old_rule_returned_arbitrary_hits(app: Clearance, old_rule: None) -> None:
    for query in ("😀", "\u200b", "?!…"):
        with pytest.raises(AssertionError):
            assert_finds_nothing(app, query)


# --------------------------------------------------------------------------- ask


def last_trace(app: Clearance) -> dict[str, Any]:
    records = app.trace_log().entries(limit=1)
    assert records, "no trace was written"
    return records[0]


def assert_refused_without_source(app: Clearance, provider: MockProvider, question: str) -> None:
    """The ordinary no-source refusal: the fixed text, no citation, no model call, and a
    trace that retrieved nothing."""
    result = app.ask(question, "ann")
    assert (result.status, result.route) == (Status.NO_AUTHORIZED_SOURCE, Route.NARRATIVE)
    assert result.answer == app.settings.answer.no_source_message
    assert result.citations == () and result.flags == ()
    assert provider.calls == 0
    trace = last_trace(app)
    assert trace["trace_id"] == result.trace_id
    assert (trace["reason"], trace["retrieved"]) == ("no_authorized_source", [])


@pytest.mark.parametrize("question", EMPTY)
def test_ask_without_letters_or_digits_is_the_ordinary_no_source_refusal(
    app: Clearance, provider: MockProvider, embedder: CountingEmbedder, question: str
) -> None:
    assert_refused_without_source(app, provider, question)
    assert embedder.texts == []


def test_the_refusal_is_the_one_a_question_about_nothing_gets(app: Clearance) -> None:
    empty = app.ask("😀", "ann").to_dict()
    nothing = app.ask("qwzx vbnm", "ann").to_dict()
    del empty["trace_id"], nothing["trace_id"]
    assert empty == nothing


def test_reverse_proof_the_old_rule_retrieved_for_an_emoji(
    app: Clearance, provider: MockProvider, old_rule: None
) -> None:
    with pytest.raises(AssertionError):
        assert_refused_without_source(app, provider, "😀")


# --------------------------------------------------------------------------- the rule


@pytest.mark.parametrize("query", EMPTY)
def test_nothing_to_search_for(query: str) -> None:
    assert not searchable(query)


@pytest.mark.parametrize(
    "query",
    ["a", "IT", "who are you", "2024", "²", "Ⅻ", "１", "東", "ー", "々", "한", "ß", "1️⃣", "x😀"],
)
def test_a_letter_or_digit_is_something_to_search_for(query: str) -> None:
    """Stopwords count: the vector side can still use them ("IT")."""
    assert searchable(query)


def _no_letter_or_digit(ch: str) -> bool:
    # NFKC and case folding turn some symbols and marks into letters or digits ("№" → "No",
    # "㍱" → "hPa", U+0345 → "ι"); those are searchable, as the index folds them alike.
    return not any(c.isalnum() for c in unicodedata.normalize("NFKC", ch).casefold())


NOT_A_WORD = st.characters(
    categories=("So", "Sk", "Sm", "Sc", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Mn")
).filter(_no_letter_or_digit) | st.sampled_from(
    [" ", "\t", "\n", "\u3000", "\u200b", "\u200d", "\u2060", "\ufeff", "\ufe0f", "\u00ad"]
)


@given(st.text(NOT_A_WORD, max_size=30), st.text(NOT_A_WORD, max_size=30))
def test_symbols_punctuation_and_invisibles_never_become_searchable(
    before: str, after: str
) -> None:
    assert not searchable(before + after)
    assert searchable(before + "a" + after)
    assert searchable(before + "7" + after)


# --------------------------------------------------------------------------- the real model


@pytest.mark.embeddings
def test_minilm_finds_nothing_for_an_emoji(
    tmp_path: Path,
    settings_factory: Callable[..., Settings],
    store: SQLiteStore,
    write_directory: Callable[..., Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = settings_factory({"embedding": {"provider": "minilm"}})
    app = Clearance(settings, store, provider=MockProvider(), trace_key=KEY)
    ingest(app, tmp_path, write_directory)
    assert app.store.stats().vectors == len(DOCS)

    for query in ("😀", "\u200b\u200d", "?!"):
        assert_finds_nothing(app, query)
    assert app.search("ann", "accommodation budget when travelling for work").hits

    with monkeypatch.context() as patched:  # reverse proof with the real model
        patched.setattr(hybrid, "searchable", lambda query: bool(query.strip()))
        with pytest.raises(AssertionError):
            assert_finds_nothing(app, "😀")
