"""Questions worded as people ask them, in English, over a handbook that answers them in one
sentence of a longer passage (37signals handbook trial): "Am I allowed to move to another
country and keep working for the company?" was refused although the passage says "You can
work from anywhere, but please be sure to inform your People Ops team when you move". The
chunk's cosine (0.45) was diluted by the paragraph around the sentence; the sentence's own is
0.58. Where no snippet passes, the gate now reads the sentences of those that hold the
question's terms and fall short on the cosine alone.

Pinned here, each with its reverse proof:

* a snippet whose best sentence is near the question passes; judged on the chunk's cosine
  alone, the same snippet is refused;
* the sentences of other snippets are only read against a refusal: where a snippet
  passes, they are not;
* a sentence holding most of the question's words is judged on its own cosine: one that
  merely shares the words is refused, where coverage alone let it pass;
* RESTRICTED text is never embedded: a variant of the gate that forgets the check is caught
  by the same assertion;
* an embedder that cannot run leaves the refusal standing;
* through the answer path with the bundled MiniLM embedder, the paraphrase is answered from
  the sentence, and a question the handbook does not answer is still refused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

import clearance.answer.relevance as relevance_module
from clearance.answer.relevance import RelevanceGate
from clearance.answer.result import Status
from clearance.config import RelevanceSettings, Settings
from clearance.errors import EmbeddingError
from clearance.llm.base import Snippet
from clearance.model import Sensitivity
from clearance.store.base import TermStatistics
from clearance.store.sqlite import SQLiteStore

from .conftest import staff_handbook

QUESTION = "Am I allowed to move to another country and keep working for the company?"
REMOTELY = (
    "We are a fully distributed company: our team works from all over the world, across five "
    "continents, and we care about the work rather than where it is done. You can work from "
    "anywhere, but please be sure to inform your People Ops team when you move, especially "
    "across state or country borders. It may affect your taxes and the company's."
)


def snippet(
    ref: str, text: str, sensitivity: Sensitivity = Sensitivity.INTERNAL, title: str = "Remotely"
) -> Snippet:
    return Snippet(
        ref, f"c-{ref}", f"doc-{ref}", title, "section=Remotely", f"files:{ref}.md",
        text, sensitivity, "handbook", "human",
    )  # fmt: skip


def statistics(terms: Sequence[str]) -> TermStatistics:
    # "move", "countri", "work", "compani" held by the passage; "allow" by no chunk
    return TermStatistics(200, {t: 10 for t in terms if t != "allow"})


class Sentences:
    """The embedder as the gate sees it: the sentence saying where one may work is near the
    question, every other sentence far. It records what it is shown."""

    def __init__(self) -> None:
        self.shown: list[str] = []

    def similarity(self, question: str, passages: Sequence[str]) -> list[float]:
        self.shown.extend(passages)
        return [0.58 if "work from anywhere" in p else 0.2 for p in passages]


def judge(
    gate: RelevanceGate, snippets: list[Snippet], sentences: Sentences | None
) -> list[relevance_module.Judgement]:
    cosines = {s.chunk_id: 0.45 for s in snippets}  # the whole chunk's, diluted
    return gate.judge(QUESTION, snippets, statistics, cosines, None, sentences)


def test_the_sentence_near_the_question_stands_for_its_diluted_chunk() -> None:
    gate = RelevanceGate(RelevanceSettings())
    judged = judge(gate, [snippet("S1", REMOTELY)], Sentences())
    assert judged[0].relevant and judged[0].cosine == pytest.approx(0.58)
    # Reverse proof: on the chunk's cosine alone, the same snippet is refused.
    assert not judge(gate, [snippet("S1", REMOTELY)], None)[0].relevant


def test_the_sentences_are_not_read_where_a_snippet_passes() -> None:
    sentences = Sentences()
    whole = snippet(
        "S2", "You may move to another country and keep working for the company: allowed."
    )
    judged = judge(RelevanceGate(RelevanceSettings()), [whole, snippet("S1", REMOTELY)], sentences)
    assert judged[0].relevant
    assert not [p for p in sentences.shown if "distributed" in p or "anywhere" in p]


README = (
    "Please note that this company handbook may be updated at any time, and it's up to you to keep "
    "abreast of those updates. If you're new to the company, welcome!"
)


class Far:
    """The embedder: the handbook's note on its own updates is far from a question about
    keeping the company updated on one's work."""

    def __init__(self) -> None:
        self.shown: list[str] = []

    def similarity(self, question: str, passages: Sequence[str]) -> list[float]:
        self.shown.extend(passages)
        return [0.1] * len(passages)


def test_the_sentence_holding_the_question_is_judged_on_its_own_cosine() -> None:
    """ "How do I keep the company updated on what I'm working on?" (37signals trial): one
    sentence of the handbook's README holds "keep", "updated" and "company", and a sentence
    holding most of the question's weight was judged on coverage alone. It is now judged on
    that sentence's cosine, and a sentence merely sharing the words is refused. Reverse
    proof: without the embedder, coverage alone lets it pass, as before."""
    question = "How do I keep the company updated on what I'm working on?"
    readme = snippet("S1", README, title="README")

    def stats(terms: Sequence[str]) -> TermStatistics:
        return TermStatistics(200, dict.fromkeys(terms, 10))

    gate = RelevanceGate(RelevanceSettings())
    far = Far()
    judged = gate.judge(question, [readme], stats, {"c-S1": 0.1}, None, far)
    assert far.shown and not judged[0].relevant
    assert gate.judge(question, [readme], stats, {"c-S1": 0.1}, None, None)[0].relevant


def shown_restricted(gate: RelevanceGate) -> list[str]:
    """What the gate shows the embedder of a RESTRICTED snippet beside an internal one."""
    sentences = Sentences()
    board = snippet(
        "S9",
        "The board noted that moving the company to another country is under review by counsel.",
        Sensitivity.RESTRICTED,
    )
    judged = judge(gate, [board, snippet("S1", REMOTELY)], sentences)
    assert any("work from anywhere" in p for p in sentences.shown), "the internal one is read"
    assert judged[1].relevant
    return [p for p in sentences.shown if "board" in p]


def test_restricted_text_is_never_embedded_by_the_gate(monkeypatch: pytest.MonkeyPatch) -> None:
    gate = RelevanceGate(RelevanceSettings())
    assert shown_restricted(gate) == []
    # Reverse proof: a gate that forgets the sensitivity check embeds it.
    monkeypatch.setattr(relevance_module, "is_restricted", lambda label: False)
    assert shown_restricted(gate) != []


class Broken:
    def similarity(self, question: str, passages: Sequence[str]) -> list[float]:
        raise EmbeddingError("embedder: cannot load")


def test_an_embedder_that_cannot_run_leaves_the_refusal_standing() -> None:
    gate = RelevanceGate(RelevanceSettings())
    judged = gate.judge(
        QUESTION, [snippet("S1", REMOTELY)], statistics, {"c-S1": 0.45}, None, Broken()
    )
    assert not judged[0].relevant


HANDBOOK = {
    "how-we-work.md": "# How We Work\n\n## Remotely\n\n" + REMOTELY + "\n",
    "time-off.md": (
        "# Time off\n\nWe offer 20 days of vacation and personal days plus 11 local holidays "
        "every year. Vacation time rolls over year to year with a maximum bank of 27 days.\n"
    ),
    "equipment.md": (
        "# Equipment\n\nEvery employee gets a laptop, replaced every three years. Keep the "
        "operating system up to date and the disk encrypted.\n"
    ),
}


def test_through_the_answer_path_the_paraphrase_is_answered(
    tmp_path: Path,
    settings_factory: Callable[..., Settings],
    store: SQLiteStore,
    write_directory: Callable[..., Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = settings_factory({"embedding": {"provider": "minilm"}})
    directory = write_directory(tmp_path / "directory.json", {"ana": ["staff"]})
    app = staff_handbook(tmp_path / "corpus", HANDBOOK, settings, store, directory)
    result = app.ask(QUESTION, "ana")
    assert result.status is Status.ANSWERED, result.answer
    assert "work from anywhere" in result.answer
    refused = app.ask("Does the company pay for my gym membership?", "ana")
    assert refused.status is Status.NO_AUTHORIZED_SOURCE, refused.answer
    # Reverse proof: a gate that reads no sentences refuses the paraphrase.
    monkeypatch.setattr(RelevanceGate, "_read_sentences", lambda self, q, judged, *a: judged)
    assert app.ask(QUESTION, "ana").status is Status.NO_AUTHORIZED_SOURCE


def test_a_restricted_sentence_holding_the_question_is_never_embedded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The sentence holding most of a question's words is embedded to judge it, except in a
    RESTRICTED snippet, which keeps the coverage judgement. Reverse proof: a gate that
    forgets the sensitivity check embeds the board's sentence."""
    question = "How do I keep the company updated on what I'm working on?"
    board = snippet(
        "S9",
        "The board asks how to keep the company updated on the work of the Tamarind review.",
        Sensitivity.RESTRICTED,
        title="Board minutes",
    )

    def stats(terms: Sequence[str]) -> TermStatistics:
        return TermStatistics(200, dict.fromkeys(terms, 10))

    def shown() -> list[str]:
        far = Far()
        RelevanceGate(RelevanceSettings()).judge(question, [board], stats, {"c-S9": 0.1}, None, far)
        return far.shown

    assert shown() == []
    monkeypatch.setattr(relevance_module, "is_restricted", lambda label: False)
    assert [p for p in shown() if "Tamarind" in p]
