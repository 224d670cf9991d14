"""With the extractive provider (the default), answers keep the fused retrieval order: no
word-counting "judge" reorders the snippets. A section that mentions "work" once beside
"sabbatical" must not be quoted before the sabbatical section itself; nor may the "work" of
"How does … work?" count as what the question is about."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clearance.app import Clearance
from clearance.config import settings_from_dict
from clearance.store.sqlite import SQLiteStore

SCHEDULING = (
    "Scheduling time off. There is no formal request process. It is your responsibility to "
    "work with your manager and team to ensure coverage. Tell them early about longer "
    "absences like a sabbatical."
)
SABBATICAL = (
    "Sabbatical. Every three years employees may take a six-week paid sabbatical. Give your "
    "team a heads-up three months in advance."
)
QUESTION = "How does the sabbatical work?"
# "work" is everywhere in a handbook; "sabbatical" is not.
FILLER = [
    "Remote work. Everyone may work from anywhere in their time zone band.",
    "Work hours. A full work week is 40 hours; in summer it is 32.",
    "Work devices. Company laptops are managed and encrypted for work.",
    "Working with support. Programmers work on-call shifts with support.",
    "Side work. Moonlighting is fine if it does not affect your work here.",
]


def _app(tmp_path: Path, rerank: dict[str, Any]) -> Clearance:
    settings = settings_from_dict(
        {
            "embedding": {"provider": "none"},
            "ingest": {"allow_unconfigured_corpora": True},
            "rerank": rerank,
        },
        root=tmp_path,
    )
    app = Clearance(settings, SQLiteStore(tmp_path / "index.db"), embedder=None)
    directory = tmp_path / "directory.json"
    directory.write_text(
        json.dumps({"users": [{"id": "jane", "active": True}], "groups": []}), encoding="utf-8"
    )
    app.sync_directory(directory)
    notes = [
        ("handbook:scheduling", "Scheduling Time Off", SCHEDULING),
        ("handbook:sabbatical", "Sabbatical", SABBATICAL),
        *((f"handbook:filler-{i}", text.split(".")[0], text) for i, text in enumerate(FILLER)),
    ]
    for doc_id, title, text in notes:
        app.add_note(
            text, origin="human", corpus="handbook", acl=["everyone"], title=title, doc_id=doc_id
        )
    return app


@pytest.fixture
def default_app(tmp_path: Path) -> Iterator[Clearance]:
    app = _app(tmp_path, {})
    yield app
    app.close()


def test_search_ranks_the_sabbatical_section_first(default_app: Clearance) -> None:
    hits = default_app.search("jane", QUESTION).hits
    assert [h.document.doc_id for h in hits][:1] == ["handbook:sabbatical"]


def test_the_answer_keeps_that_order(default_app: Clearance) -> None:
    result = default_app.ask(QUESTION, "jane")
    assert result.citations and result.citations[0].doc_id == "handbook:sabbatical"
    answer = result.answer
    assert answer.index("Every three years") < answer.index("your responsibility to work")


def test_a_word_counting_judge_would_reorder_it(tmp_path: Path) -> None:
    """Reverse proof: naming the extractive judge explicitly puts the section with more of
    the question's words, however common, first."""
    app = _app(tmp_path, {"provider": "extractive"})
    try:
        result = app.ask(QUESTION, "jane")
        assert result.citations and result.citations[0].doc_id == "handbook:scheduling"
    finally:
        app.close()
