"""``Clearance.search`` end to end: real files, a synced directory, a real SQLite index."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from clearance.app import Clearance
from clearance.config import Settings
from clearance.llm.embedding import HashingEmbedder
from clearance.store.memory import ContentIndex
from clearance.store.sqlite import SQLiteStore

DOCS = {
    "ja.md": "# 売上報告\n\n東京本社の売上高は前年比で十二パーセント増加しました。",
    "zh.md": "# 营业报告\n\n北京分公司的营业收入增长了百分之十，利润也提高了。",
    "it.md": "# Relazione\n\nIl fatturato della filiale di Milano è cresciuto nel trimestre.",
    "en.md": "# Report\n\nRevenue of the London office grew strongly this quarter.",
}


def ingest_corpus(
    root: Path, app: Clearance, write_directory: Callable[..., Path], extra: dict[str, Any]
) -> None:
    for name, text in DOCS.items():
        (root / name).write_text(text, encoding="utf-8")
    (root / "_meta.json").write_text(json.dumps({"acl": ["group:staff"]}), encoding="utf-8")
    for name, data in extra.items():
        (root / name).write_text(data["text"], encoding="utf-8")
        (root / f"{name}.meta.json").write_text(json.dumps(data["meta"]), encoding="utf-8")
    report = app.ingest([root])
    assert report.failed == []
    directory = write_directory(
        root.parent / "directory.json", {"ann": ["staff"], "bo": ["contractors"]}
    )
    app.sync_directory(directory)


EXTRA = {
    "hidden.md": {"text": "Revenue secrets of the London office.", "meta": {"ai_allowed": False}},
    "orphan.md": {"text": "Revenue of London, readable by nobody.", "meta": {"acl": []}},
    "old.md": {
        "text": "Revenue London expired memo.",
        "meta": {"expires_at": "2001-01-01T00:00:00Z"},
    },
    "board.md": {"text": "Revenue London board pack.", "meta": {"sensitivity": "RESTRICTED"}},
}


@pytest.fixture
def app(
    tmp_path: Path, settings: Settings, store: SQLiteStore, write_directory: Callable[..., Path]
) -> Clearance:
    """Lexical only (``provider = "none"``), four languages, and four documents nobody may
    retrieve for answers."""
    clearance = Clearance(settings, store, embedder=None)
    root = tmp_path / "corpus"
    root.mkdir()
    ingest_corpus(root, clearance, write_directory, EXTRA)
    return clearance


@pytest.mark.parametrize(
    ("query", "doc_id"),
    [
        ("売上高", "files:ja.md"),
        ("東京の売上", "files:ja.md"),
        ("营业收入", "files:zh.md"),
        ("北京利润", "files:zh.md"),
        ("fatturato Milano", "files:it.md"),
        ("Il fatturato della filiale", "files:it.md"),
        ("London revenue", "files:en.md"),
        ("How did the revenue grow?", "files:en.md"),
    ],
)
def test_each_language_finds_its_document(app: Clearance, query: str, doc_id: str) -> None:
    result = app.search("ann", query)

    assert result.refused is None
    assert result.hits, query
    assert result.hits[0].document.doc_id == doc_id
    assert result.hits[0].lexical_rank == 1
    assert result.hits[0].vector_rank is None  # no embedder configured


def test_search_never_returns_what_may_not_be_retrieved(app: Clearance) -> None:
    """ai_allowed = false, no ACL, expired and RESTRICTED documents are all stored …"""
    for doc_id in ("files:hidden.md", "files:orphan.md", "files:old.md", "files:board.md"):
        assert app.store.get_document(doc_id) is not None

    result = app.search("ann", "revenue London secrets nobody expired board", k=20)

    # … and never come back from search
    assert [h.document.doc_id for h in result.hits] == ["files:en.md"]


def test_a_user_outside_the_acl_finds_nothing(app: Clearance) -> None:
    assert app.search("bo", "London revenue").hits == []


def test_unknown_and_disabled_users_are_refused(
    app: Clearance, tmp_path: Path, write_directory: Callable[..., Path]
) -> None:
    unknown = app.search("mallory", "London revenue")
    assert (unknown.hits, unknown.refused) == ([], "unknown_user")

    app.sync_directory(write_directory(tmp_path / "d2.json", {"ann": ["staff"]}, active=False))
    disabled = app.search("ann", "London revenue")
    assert (disabled.hits, disabled.refused) == ([], "account_disabled")


def test_an_acl_change_applies_without_reingest(app: Clearance) -> None:
    assert app.search("bo", "London revenue").hits == []
    app.store.set_acl("files:en.md", frozenset({"group:contractors"}))

    assert [h.document.doc_id for h in app.search("bo", "London revenue").hits] == ["files:en.md"]
    assert app.search("ann", "London revenue").hits == []


def test_hybrid_search_ranks_with_both_retrievers(
    tmp_path: Path, settings: Settings, store: SQLiteStore, write_directory: Callable[..., Path]
) -> None:
    app = Clearance(settings, store, embedder=HashingEmbedder())
    root = tmp_path / "corpus"
    root.mkdir()
    ingest_corpus(root, app, write_directory, EXTRA)

    result = app.search("ann", "London revenue", k=2)

    top = result.hits[0]
    assert top.document.doc_id == "files:en.md"
    assert (top.lexical_rank, top.vector_rank) == (1, 1)
    assert top.score == pytest.approx(2 / 61)
    assert {h.document.doc_id for h in result.hits} <= {f"files:{n}" for n in DOCS}


@pytest.mark.embeddings
def test_minilm_end_to_end_finds_a_paraphrase(
    tmp_path: Path,
    settings_factory: Callable[..., Settings],
    store: SQLiteStore,
    write_directory: Callable[..., Path],
) -> None:
    """The real model: a question sharing no word with the document still finds it."""
    settings = settings_factory({"embedding": {"provider": "minilm"}})
    app = Clearance(settings, store)  # the embedder comes from the settings
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "hotel.md").write_text(
        "Hotels may cost up to 200 EUR per night on business trips.", encoding="utf-8"
    )
    (root / "garden.md").write_text("The tulips in the courtyard bloom in April.", encoding="utf-8")
    (root / "_meta.json").write_text(json.dumps({"acl": ["everyone"]}), encoding="utf-8")
    assert app.ingest([root]).failed == []
    app.sync_directory(write_directory(tmp_path / "dir.json", {"ann": []}))

    result = app.search("ann", "accommodation budget when travelling for work", k=1)

    assert app.store.stats().vectors == 2
    assert [h.document.doc_id for h in result.hits] == ["files:hotel.md"]
    assert result.hits[0].vector_rank == 1
    assert result.hits[0].lexical_rank is None


@pytest.mark.parametrize("warmed", [True, False], ids=["warm", "reverse-proof-cold"])
def test_warm_builds_the_search_copies_before_the_first_search(
    app: Clearance, monkeypatch: pytest.MonkeyPatch, warmed: bool
) -> None:
    """``clearance serve`` warms each process at start, so no request waits for the build."""
    if warmed:
        app.warm()
    built: list[int] = []
    original = ContentIndex.build

    def counting(*args: Any, **kwargs: Any) -> ContentIndex:
        built.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(ContentIndex, "build", counting)

    assert app.search("ann", "London revenue").hits
    assert (built == []) is warmed
