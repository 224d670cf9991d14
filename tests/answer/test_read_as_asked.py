"""A question that first tells the asker's situation is read as asked, not by its words alone.

A case of the Sourcegraph handbook trial (benchmarks/RESULTS.md): "I work in engineering. How
often can I get a new laptop?" The story's words ("work") and the question's frame ("can",
"get") made a sentence about interns' laptops hold more of the question's words than the
refresh schedule, and the answer opened with the interns. Given the embedder, the quoting
reader ranks the units of such a question by their share of the best unit's words plus their
cosine with the question (``clearance.llm.extractive``, "read as asked"); what may be quoted
is still decided by words. The page below is written for this test in the shape of the
handbook's section.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import clearance.llm.extractive as extractive
from clearance.answer.context import AnswerContext
from clearance.errors import EmbeddingError
from clearance.llm.base import ChatRequest, Snippet
from clearance.llm.extractive import ExtractiveProvider
from clearance.model import Sensitivity
from clearance.runtime import Runtime

from .conftest import staff_handbook

COMPUTERS = """# Spending company money

## Computers

### Interns

Fill out the device form and IT will get you a company laptop. We will do everything we can
to get you the specifications below, but availability depends on the devices in stock and on
the work you will be doing during your internship. Interns usually get an older model than
the ones we order new.

### Laptop refresh

Laptops are replaced on a schedule that depends on your department:

- Engineering and Product: 2.5yrs
- Technical Success: 3yrs
- All other departments: 4yrs
- Exceptions need finance and manager approval.

To order a new computer:

1. Open the IT help desk in Slack.
2. Pick the "New computer order" form.
3. IT will review the ticket and be in touch.

## Desk set-up

New teammates may spend up to $2,000 on their desk set-up. Every teammate works on a
company-managed laptop.
"""
STORY = "I work in engineering. How often can I get a new laptop?"
INTERNS = "We will do everything we can to get you the specifications below"


@pytest.fixture
def engine(tmp_path: Path, settings_factory: Any, store: Any, write_directory: Any) -> Any:
    root = tmp_path / "corpus"
    root.mkdir()
    directory = write_directory(root / "directory.json", {"ana": ["staff"]})
    settings = settings_factory({"embedding": {"provider": "minilm"}})
    return staff_handbook(root, {"computers.md": COMPUTERS}, settings, store, directory)


def test_a_question_telling_a_story_opens_with_what_it_asks(
    engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reverse proof: with the cosine weighing nothing (and "how often" read as any
    question, whose answer need state no duration), the same engine opens with the
    interns' sentence, as before."""
    result = engine.ask(STORY, "ana")
    first = result.answer.splitlines()[0]
    assert first.startswith("Laptops are replaced on a schedule"), result.answer
    assert "- Engineering and Product: 2.5yrs [S" in result.answer.splitlines()[1]
    assert INTERNS not in first

    monkeypatch.setattr(extractive, "_READ_WEIGHT", 0.0)
    monkeypatch.setattr(extractive, "_ASKS_DURATION", re.compile(r"(?!x)x"))
    monkeypatch.setattr(extractive, "_ASKS_DURATION_IN_WORDS", re.compile(r"(?!x)x"))
    assert engine.ask(STORY, "ana").answer.startswith(INTERNS)


def test_the_default_reader_gets_the_embedder_and_none_without_one(
    engine: Any, settings_factory: Any, store: Any
) -> None:
    """Both quoting readers (the answer provider when it is the built-in one, and the
    figures route's) read with the engine's embedder; an engine without one reads by words."""
    context = engine.orchestrator().ctx
    for guard in (context.guard, context.quoting_guard):
        assert isinstance(guard._provider, ExtractiveProvider)
        assert guard._provider.similarity is not None
    lexical = AnswerContext(
        Runtime(settings_factory(), store, embedder=None), provider=ExtractiveProvider()
    )
    for guard in (lexical.guard, lexical.quoting_guard):
        assert isinstance(guard._provider, ExtractiveProvider)
        assert guard._provider.similarity is None


# --------------------------------------------------------------------------- the reader alone


class Spy:
    """A sentence encoder that records what it was shown and scores by a table."""

    def __init__(self, scores: dict[str, float] | None = None, fail: bool = False) -> None:
        self.shown: list[str] = []
        self.scores = scores or {}
        self.fail = fail

    def similarity(self, question: str, passages: Sequence[str]) -> list[float]:
        self.shown.extend(passages)
        if self.fail:
            raise EmbeddingError("the encoder stopped")
        return [next((v for k, v in self.scores.items() if k in p), 0.0) for p in passages]


def snippet(
    ref: str, text: str, sensitivity: Sensitivity = Sensitivity.INTERNAL, doc: str = ""
) -> Snippet:
    return Snippet(
        ref=ref,
        chunk_id=f"chunk-{ref}",
        doc_id=f"files:{doc or ref}.md",
        title=doc or ref,
        locator="section=Computers",
        uri=f"file:///docs/{ref}.md",
        text=text,
        sensitivity=sensitivity,
        corpus="handbook",
        origin="human",
        trust="trusted",
    )


PAGES = (
    snippet("S1", "Interns can get a laptop from IT when they start work."),
    snippet("S2", "Laptop refresh\nEngineering laptops are replaced every 2.5 years."),
)
# The cosine puts the refresh first; by words the interns' sentence leads.
NEAR = {"replaced every 2.5 years": 0.7, "Interns can get": 0.2}


def quoted(provider: ExtractiveProvider, question: str, *snippets: Snippet) -> list[str]:
    request = ChatRequest("answer", question, (), snippets)
    return [q.sentence for q in provider.quotes(request)]


def test_the_cosine_orders_a_story_question_and_nothing_else() -> None:
    """A story question is reordered by the cosine; a question of one sentence, which asks
    in its own words, is not shown to the encoder at all."""
    spy = Spy(NEAR)
    story = quoted(
        ExtractiveProvider(similarity=spy), "I'm an engineer. When can I get a new laptop?", *PAGES
    )
    assert story[0].startswith("Engineering laptops are replaced"), story
    assert spy.shown

    spy = Spy(NEAR)
    plain = "When can an engineer get a new laptop?"
    assert quoted(ExtractiveProvider(similarity=spy), plain, *PAGES) == quoted(
        ExtractiveProvider(), plain, *PAGES
    )
    assert spy.shown == []


def test_cjk_text_is_read_by_its_words() -> None:
    """The bundled encoder cannot read Japanese: a story question in Japanese, or one whose
    units are Japanese, keeps the order by words."""
    spy = Spy(NEAR)
    pages = (snippet("S1", "エンジニアのノートPCは2.5年ごとに交換されます。"),)
    quoted(
        ExtractiveProvider(similarity=spy),
        "私はエンジニアです。ノートPCはいつ交換できますか?",
        *pages,
    )
    quoted(
        ExtractiveProvider(similarity=spy),
        "I'm an engineer. When is the ノートPC replaced?",
        *pages,
    )
    assert spy.shown == []


def reads_no_restricted_text(provider: ExtractiveProvider, spy: Spy) -> None:
    board = snippet(
        "S3", "Board minutes: laptops for engineers are cut next year.", Sensitivity.RESTRICTED
    )
    quoted(provider, "I'm an engineer. When can I get a new laptop?", *PAGES, board)
    assert not any("Board minutes" in text for text in spy.shown), spy.shown


def test_restricted_text_is_never_shown_to_the_encoder(monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard keeps RESTRICTED snippets from every provider; the reader does not rely on
    it and embeds nothing when one is among its candidates. Reverse proof: a reader that
    does not look at the sensitivity shows the board minutes to the encoder."""
    spy = Spy(NEAR)
    reads_no_restricted_text(ExtractiveProvider(similarity=spy), spy)
    assert spy.shown == []

    monkeypatch.setattr(extractive, "is_restricted", lambda sensitivity: False)
    spy = Spy(NEAR)
    with pytest.raises(AssertionError):
        reads_no_restricted_text(ExtractiveProvider(similarity=spy), spy)


def test_an_encoder_failure_leaves_the_order_by_words(caplog: pytest.LogCaptureFixture) -> None:
    question = "I'm an engineer. When can I get a new laptop?"
    with caplog.at_level(logging.WARNING, logger="clearance.llm.extractive"):
        failing = quoted(ExtractiveProvider(similarity=Spy(fail=True)), question, *PAGES)
    assert failing == quoted(ExtractiveProvider(), question, *PAGES)
    assert "the encoder stopped" in caplog.text


def test_a_unit_quoted_already_takes_no_place() -> None:
    """A case of the Mattermost trial: a chunk starting mid-sentence ("on purchasing a new
    laptop …") is quoted as the whole sentence another chunk holds, which was quoted
    already. That choice quoted nothing, yet it took one of the places, and the sentence
    that answers was left out."""
    whole = snippet(
        "S1",
        "For guidance on buying a new laptop, read the spending policy. "
        "Staff who leave after one year keep the laptop at no cost.",
        doc="buy-back",
    )
    cut = snippet("S2", "on buying a new laptop, read the spending policy.", doc="buy-back")
    answer = quoted(
        ExtractiveProvider(max_sentences=2), "Can I buy a new laptop when I leave?", whole, cut
    )
    assert answer == [
        "For guidance on buying a new laptop, read the spending policy.",
        "Staff who leave after one year keep the laptop at no cost.",
    ]
