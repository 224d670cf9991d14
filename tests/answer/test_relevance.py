"""The narrative relevance gate (clearance.answer.relevance) on the demo corpus plus the
notes of ``data/relevance_pairs.json`` (a phishing incident report, Chinese notes), in a
lexical-only index of its own so the shared demo index stays as it is.

The labelled pairs also hold the golden narrative questions: a relevant document is
answered with a citation of it, an off-topic question or one whose answer the user may not
read is refused.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from clearance.answer.narrative import relevant_snippets
from clearance.answer.relevance import (
    OPTIONS,
    RelevanceGate,
    asked_clauses,
    option_terms,
    question_weights,
)
from clearance.answer.result import Status
from clearance.answer.routes.restricted import RESTRICTED_FLAG
from clearance.config import RelevanceSettings, settings_from_dict
from clearance.errors import ConfigError
from clearance.llm.base import Snippet
from clearance.model import is_restricted
from clearance.retrieval.link_exit import to_snippets
from clearance.store.base import TermStatistics

from .conftest import ACME, AcmeIndex, build_index, clean_env

DATA: dict[str, Any] = json.loads(
    (Path(__file__).parent / "data" / "relevance_pairs.json").read_text(encoding="utf-8")
)


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AcmeIndex]:
    with clean_env():
        index = build_index(tmp_path_factory.mktemp("relevance"), ACME / "manifest.jsonl")
        try:
            for note in DATA["notes"]:
                index.app.add_note(
                    note["text"],
                    origin="human",
                    corpus=note["corpus"],
                    acl=note["acl"],
                    title=note["title"],
                    doc_id=note["doc_id"],
                )
            yield index
        finally:
            index.app.close()


Gate = Callable[[str, Sequence[Snippet], Callable[[Sequence[str]], TermStatistics]], set[str]]


def _new_gate(question: str, snippets: Sequence[Snippet], stats: Any) -> set[str]:
    judged = RelevanceGate(RelevanceSettings()).judge(question, snippets, stats)
    return {j.snippet.doc_id for j in judged if j.relevant}


def _term_overlap_gate(question: str, snippets: Sequence[Snippet], stats: Any) -> set[str]:
    return {s.doc_id for s in relevant_snippets(question, snippets)}


def _precision_recall(index: AcmeIndex, gate: Gate) -> tuple[float, float]:
    app = index.app
    access = app.access()
    tp = fp = fn = 0
    for q in DATA["questions"]:
        flt = access.search_filter(access.principal(q["user"]), None, app.store.corpora())
        snippets = to_snippets(app.search(q["user"], q["question"]).hits)
        passed = gate(q["question"], snippets, lambda t, f=flt: app.store.term_statistics(t, f))
        tp += len(passed & set(q["relevant"]))
        fn += len(set(q["relevant"]) - passed)
        fp += len(passed & set(q["irrelevant"]))
    return tp / (tp + fp), tp / (tp + fn)


def test_the_gate_beats_term_overlap_on_the_labelled_pairs(indexed: AcmeIndex) -> None:
    """Lexical-only figures of benchmarks/RESULTS.md (0.97 / 0.89), held as floors; the
    term-overlap gate it replaced is the reverse proof: it lets near misses through."""
    precision, recall = _precision_recall(indexed, _new_gate)
    assert precision >= 0.95 and recall >= 0.85, (precision, recall)
    old_precision, _ = _precision_recall(indexed, _term_overlap_gate)
    assert old_precision < 0.95, old_precision


GOLDEN = [
    (
        "grace",
        "What do our documents say about the phishing campaign entry point?",
        "note:sec-ir-2026-1104",
    ),
    ("alice", "上海办事处的地址在哪里？", "note:zh-shanghai-office"),
    ("alice", "差旅费用要在多少天内报销？", "note:zh-travel-expenses"),
    ("alice", "東京本社の社員食堂の営業時間は？", "confluence:OPS-1201"),
    ("alice", "What is the hotel limit per night in London?", "confluence:OPS-1001"),
]


@pytest.mark.parametrize(("user", "question", "doc_id"), GOLDEN)
def test_relevant_narrative_questions_are_answered_with_their_source(
    indexed: AcmeIndex, user: str, question: str, doc_id: str
) -> None:
    result = indexed.app.ask(question, user)
    assert result.status is Status.ANSWERED, result.to_dict()
    assert doc_id in {c.doc_id for c in result.citations}


REFUSED = [
    ("alice", "What is the weather forecast for Paris tomorrow?"),
    ("alice", "今天北京的天气怎么样？"),
    ("alice", "今日の東京の天気は？"),
    ("dave", "What are the production release freeze windows?"),
    ("jun", "What did the board approve for the FY2025 budget in the March 2025 minutes?"),
]


@pytest.mark.parametrize(("user", "question"), REFUSED)
def test_irrelevant_narrative_questions_are_refused(
    indexed: AcmeIndex, user: str, question: str
) -> None:
    result = indexed.app.ask(question, user)
    if RESTRICTED_FLAG in result.flags:
        # jun may be named the RESTRICTED minutes; the readable near miss is still not used.
        assert all(is_restricted(indexed.document(c.doc_id).sensitivity) for c in result.citations)
        return
    assert result.status is Status.NO_AUTHORIZED_SOURCE, result.to_dict()
    assert result.citations == ()


def test_statistics_come_from_what_the_caller_may_read(indexed: AcmeIndex) -> None:
    """The phishing report is readable by IT administrators only: alice's statistics do
    not know its words, so nothing about it can move her judgement. Reverse proof: the
    statistics of an unfiltered view do know them."""
    app = indexed.app
    access = app.access()
    terms = ["phish", "campaign"]
    alice = access.search_filter(access.principal("alice"), None, app.store.corpora())
    grace = access.search_filter(access.principal("grace"), None, app.store.corpora())
    assert app.store.term_statistics(terms, alice).df == {}
    assert app.store.term_statistics(terms, grace).df.get("phish", 0) > 0


def test_frame_words_and_unseen_cjk_pairs_carry_no_weight() -> None:
    stats = TermStatistics(100, {"上海": 3, "地址": 2, "phish": 1})
    question = "上海的地址在哪里？ What do our documents say about phishing?"
    weights = question_weights(question, lambda terms: stats)
    # "海的", "的地", "址在", "在哪", "哪里" are held by no chunk: judged as their characters,
    # of which 海, 地 and 址 are not function characters.
    assert set(weights) == {"上海", "地址", "海", "地", "址", "phish"}
    assert weights["phish"] > weights["上海"]


def test_relevance_settings_are_read_and_checked() -> None:
    def relevance(table: dict[str, Any]) -> RelevanceSettings:
        return settings_from_dict({"answer": {"relevance": table}}).answer.relevance

    chosen = relevance({"min_coverage": 0.5, "cosine_weight": 2, "min_score": 1.1})
    default = RelevanceSettings()
    assert chosen == RelevanceSettings(0.5, 2.0, 1.1, default.min_coverage_with_cosine)
    with pytest.raises(ConfigError, match="min_coverage"):
        relevance({"min_coverage": 1.5})
    with pytest.raises(ConfigError, match="min_score"):
        relevance({"min_score": -1})
    with pytest.raises(ConfigError, match="unknown setting"):
        relevance({"min_cosine": 0.5})


@pytest.mark.parametrize(
    ("question", "framing", "topical"),
    [
        ("How does the sabbatical work?", {"work"}, {"sabbat"}),
        ("What happens on my first day?", {"happen"}, {"first", "day"}),
        ("How does remote work affect pay?", set(), {"remot", "work", "affect", "pay"}),
        # Function words name nothing: a passage without "if", "am" or "don't" lacks no
        # evidence (held-out handbook case, where they held over half the weight).
        (
            "What happens if I am off sick and don't tell my supervisor?",
            {"if", "am", "don't"},
            {"off", "sick", "supervisor"},
        ),
        # The word after "how" names the answer's form (a duration), as "much" does; "long"
        # elsewhere is a topic word (TTS handbook case).
        (
            "How long must I keep working after paid parental leave ends?",
            {"long", "after"},
            {"keep", "work", "paid", "parent", "leav", "end"},
        ),
        ("How far in advance do I request leave?", {"far"}, {"advanc", "request", "leav"}),
        ("What is long-term disability?", set(), {"long", "term", "disabl"}),
        # "even" and "got" hold the sentence together and name nothing (Sourcegraph handbook
        # trial: "even" carried a quarter of the weight and the countries page was refused).
        (
            "Which countries can't I work from, even temporarily while travelling?",
            {"even"},
            {"countri", "work", "temporarili", "travel"},
        ),
        ("I got married, how do I update my surname?", {"got"}, {"marri", "updat", "surnam"}),
        # "How far back does it go" asks for a point in time, and "i.e." restates: "go",
        # "back" and the letters of "i.e." held over half the weight (GitLab set, probe
        # split: the README's data-start dates were refused).
        (
            "How far back does the actuals file go, i.e. for other categories?",
            {"far", "back", "go", "e"},
            {"actual", "file", "categori"},
        ),
        # Every negated auxiliary is a function word: "haven't" held 31 % of the weight
        # (37signals handbook trial: the payout of unused vacation was refused).
        (
            "Do I get paid for vacation days I haven't used when I leave?",
            {"haven't"},
            {"paid", "vacat", "day", "use", "leav"},
        ),
        # "Am I supposed to" asks what one should do, as "should" does: "supposed" held a
        # third of the weight (Mattermost handbook trial: the notice period was refused).
        (
            "I'm handing in my resignation. How much notice am I supposed to give?",
            {"suppos", "much", "give"},
            {"hand", "resign", "notic"},
        ),
        ("Ought I to tell my manager first?", {"ought", "tell"}, {"manag", "first"}),
        # "Done" and "anyway" hold a question together, "the whole thing for each
        # component" names only the component, and "after" and "before" in no chunk say
        # nothing; a plural written in capitals is its singular (GitLab set, second probe
        # file: each of these was a word of no chunk that weighed as much as a topic word
        # and sank the README).
        (
            "After the environment is built, how do I switch into it before running "
            "anything, and how do I get out when I'm done?",
            {"after", "befor", "anyth", "done"},
            {"environ", "built", "switch", "run", "out"},
        ),
        (
            "If I run the whole thing for each component, how many CSVs should I expect?",
            {"whole", "thing", "csvs"},
            {"run", "compon", "csv", "expect"},
        ),
        ("How can I get the code onto my machine anyway?", {"anyway"}, {"code", "machin"}),
        # The word after "what" naming the form of the answer, as after "how".
        ("What units are the input numbers in?", {"unit"}, {"input", "number"}),
        ("What format must the receipts be in?", {"format"}, {"receipt"}),
        # "which units" may ask about business units
        ("Which units were restructured?", set(), {"unit", "restructur"}),
        # "give" frames a question; so do its irregular forms, which the stemmer leaves as
        # they are: "given" held a fifth of the weight (GitLab set, probe split: the
        # projection years of the error files were refused).
        (
            "Up to which projection year are errors given?",
            {"given"},
            {"up", "project", "year", "error"},
        ),
        ("What notice was I gave?", {"gave"}, {"notic"}),
        # "actually" and "quite" are no function words: their index forms are words that
        # name something (Sourcegraph handbook trial: "quit" weighed nothing).
        (
            "What happens to my health insurance after I quit?",
            {"happen", "my", "after"},
            {"health", "insur", "quit"},
        ),
        # 何 asks what or how many, as 什么 and 几 do; 週 and 間 are what is counted (GitLab
        # handbook case: "何週間休めますか" gave 何 a fifth of the weight). No pair is held
        # here, so each is weighed as its characters.
        ("産休は何週間ですか？", {"何"}, {"産", "休", "週", "間"}),
    ],
)
def test_words_that_frame_a_question_weigh_nothing(
    question: str, framing: set[str], topical: set[str]
) -> None:
    weights = question_weights(question, lambda terms: TermStatistics(100, {}))
    assert set(weights) == topical
    assert not framing & set(weights)


def test_who_may_alter_a_status_is_answered_by_who_has_the_authority_to_alter_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ "Who has the authority to change someone's at-will status?" against the policy
    saying only the CEO has "the authority to alter your at-will status": "someone" names
    nothing (it weighed most, held by no passage), and altering is changing. Reverse
    proof: with either rule taken out, the policy is refused."""
    from clearance.answer import relevance

    question = "Who has the authority to change someone's at-will status?"
    passage = _passage(
        "At-Will Employment Policy",
        "No one in the company other than the CEO has the authority to alter your at-will "
        "status. Only the CEO may do so, and only in a written agreement.",
    )

    def stats(terms: Sequence[str]) -> TermStatistics:
        return TermStatistics(100, {t: 5 for t in terms if t != "someon"})

    def relevant() -> bool:
        return RelevanceGate(RelevanceSettings()).judge(question, [passage], stats)[0].relevant

    assert relevant()
    words = relevance._FUNCTION_WORDS
    monkeypatch.setattr(relevance, "_FUNCTION_WORDS", words - {"someon"})
    assert not relevant()
    monkeypatch.setattr(relevance, "_FUNCTION_WORDS", words)
    monkeypatch.setattr(relevance, "_CHANGE_TERMS", relevance._CHANGE_TERMS - {"alter"})
    assert not relevant()


def _passage(title: str, text: str, corpus: str = "hr") -> Snippet:
    """An INTERNAL, human-written snippet of document ``d1``, chunk ``c1``."""
    from clearance.model import Sensitivity

    return Snippet("S1", "c1", "d1", title, "p", "", text, Sensitivity.INTERNAL, corpus, "human")


def test_function_words_no_longer_outweigh_the_topic(monkeypatch: pytest.MonkeyPatch) -> None:
    """A passage holding every topic word of the question is relevant; reverse proof: with
    "if", "am" and "don't" weighed as topic words (the gate before), the same passage
    falls below the coverage bar and the same assertion fails."""
    from clearance.answer import relevance

    question = "What happens if I am off sick and don't tell my supervisor?"
    passage = _passage("Leave", "An employee off sick must tell the supervisor.")

    def stats(terms: Sequence[str]) -> TermStatistics:
        return TermStatistics(100, {})  # every term equally rare

    def relevant() -> bool:
        return RelevanceGate(RelevanceSettings()).judge(question, [passage], stats)[0].relevant

    assert relevant()
    monkeypatch.setattr(relevance, "_FUNCTION_WORDS", frozenset())
    assert not relevant()


def test_a_document_holding_every_asked_word_is_not_refused_for_a_low_cosine() -> None:
    """ "How much did outlays grow?" against budget reviews holding "outlays" and a word of
    change: coverage 1.0, cosine 0.16 (a two-word question against a long passage). The
    cosine used to sink it below min_score; a document holding every weighed word is
    judged on its coverage. One word short, the cosine still decides."""
    gate = RelevanceGate(RelevanceSettings())
    assert gate.decide(1.0, 0.163)
    assert not gate.decide(0.9, 0.163)
    assert gate.decide(0.9, 0.4)


def test_the_asked_words_together_in_one_sentence_outweigh_a_diluted_cosine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ "Can I claim the cost of mailing my travel voucher?" against a list of a dozen
    incidental expenses, one of which is "C. Mailing cost associated with filing travel
    vouchers": coverage 0.74, but the chunk's cosine (0.31) is diluted by the other items
    and sank it below min_score. The question's words standing together in one item are
    judged on coverage. Reverse proof: the same words spread over three items of the list
    are judged with the cosine and refused, and so is the case with the rule taken out."""
    from clearance.answer import relevance
    from clearance.model import Sensitivity

    question = "Can I claim the cost of mailing my travel voucher?"
    weights = {"claim": 4.62, "cost": 3.02, "mail": 3.53, "travel": 3.02, "voucher": 3.53}

    def stats(terms: Sequence[str]) -> TermStatistics:
        return TermStatistics(100, {})

    def judged(text: str) -> bool:
        snippet = Snippet(
            "S1", "c1", "d1", "Incidental expenses", "p", "", text,
            Sensitivity.INTERNAL, "hr", "human",
        )  # fmt: skip
        gate = RelevanceGate(RelevanceSettings())
        return gate.judge(question, [snippet], stats, cosines={"c1": 0.31})[0].relevant

    monkeypatch.setattr(relevance, "question_weights", lambda q, s: dict(weights))
    together = (
        "A. Fees and tips given to porters and baggage carriers.\n"
        "C. Mailing cost associated with filing travel vouchers and payment of charge card "
        "billings.\n"
        "D. Laundry and dry cleaning while on official travel."
    )
    spread = (
        "A. Mailing of forms to the payroll office.\n"
        "C. The cost of hotel tips abroad.\n"
        "D. Travel vouchers are filed within five days."
    )
    assert judged(together)
    assert not judged(spread)
    monkeypatch.setattr(relevance, "_in_one_sentence", lambda *args: False)
    assert not judged(together)


def test_the_grammar_of_a_japanese_question_weighs_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ "会社の健康診断って、費用はいくらまで会社が出してくれるんですか?" asked as a person
    would: its particles and endings ("って", "んですか", "の健") are character pairs that
    no passage about health checks holds, and with their weight the page answering it fell
    under the coverage bar. A pair holding a hiragana counts as its other character at most,
    and not where another pair holds that already. Reverse proof: with every pair weighed,
    the same passage is refused."""
    from clearance import analysis
    from clearance.answer import relevance
    from clearance.model import Sensitivity

    question = "会社の健康診断って、費用はいくらまで会社が出してくれるんですか?"
    assert analysis.kana_free(analysis.search_terms(question)) == [
        "会社", "健康", "康診", "診断", "費用", "出",
    ]  # fmt: skip
    passage = Snippet(
        "S1", "c1", "d1", "福利厚生", "section=年次健康診断", "",
        "会社の年次健康診断の費用は、年間最大 ¥15,000 を払い戻します。",
        Sensitivity.INTERNAL, "hr", "human",
    )  # fmt: skip

    def stats(terms: Sequence[str]) -> TermStatistics:
        return TermStatistics(100, dict.fromkeys(terms, 5))  # every term in some chunk

    def relevant() -> bool:
        return RelevanceGate(RelevanceSettings()).judge(question, [passage], stats)[0].relevant

    assert relevant()
    monkeypatch.setattr(relevance, "kana_free", lambda terms: list(terms))
    assert not relevant()


def test_a_question_mostly_in_cjk_needs_the_cjk_coverage() -> None:
    """A mostly-CJK question has no cosine and is judged on character pairs, which match by
    chance more often than words: a sales meeting's minutes mentioning the board meeting
    hold 0.65 of "取締役会の議事録の内容を教えてください" and are not its answer; the
    labelled pairs' relevant JA and ZH documents hold 0.71 and more. Reverse proof: the
    same coverage in an English question, and with ``min_coverage_cjk`` at 0.6, passes."""
    gate = RelevanceGate(RelevanceSettings())
    assert not gate.decide(0.65, None, cjk=True)
    assert gate.decide(0.71, None, cjk=True)
    assert gate.decide(0.65, None)
    lower = RelevanceGate(RelevanceSettings(min_coverage_cjk=0.6))
    assert lower.decide(0.65, None, cjk=True)


def test_a_passage_is_not_refused_for_lacking_given() -> None:
    """The README line answering "How many years ahead do the projection error files go,
    i.e. up to which projection year are errors given?" holds every topic word but "ahead"
    and "up" (coverage 0.51 with a cosine of 0.735). Reverse proof: with "given" weighed
    as a topic word, as before, the same passage falls below the coverage bar (0.40)."""
    from clearance.answer import relevance

    question = (
        "How many years ahead do the projection error files go, i.e. up to which projection "
        "year are errors given?"
    )
    passage = _passage(
        "README",
        "These output files contain the projection errors for each budget component "
        "projection for each projection year (1st to 11th) and for each year.",
        "finance",
    )

    def stats(terms: Sequence[str]) -> TermStatistics:
        # the held-out GitLab index's frequencies: "ahead" and "given" in no chunk
        return TermStatistics(400, {"year": 80, "project": 20, "error": 4, "file": 10, "up": 1})

    def relevant() -> bool:
        # the embedder's cosine of question and passage in that index; judged on coverage
        # and cosine weighed together (a cosine this near alone needs less coverage)
        gate = RelevanceGate(RelevanceSettings(near_cosine=1.0))
        return gate.judge(question, [passage], stats, {"c1": 0.735})[0].relevant

    assert relevant()
    words = relevance._FUNCTION_WORDS
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(relevance, "_FUNCTION_WORDS", words - {"given", "gave"})
        assert not relevant()


def test_where_something_comes_from_is_asked_by_its_source_not_by_come() -> None:
    """ "Where do the gold prices before 1960 come from?" over a data file's README saying
    "Historical data (1833–1959) is sourced from records compiled by Timothy Green": "come
    from" asks for a source, as "where" does, and no README says "come". Weighed as a topic
    word (a rare one), it sank the README below the bar (coverage 0.41, cosine 0.70).
    Reverse proof: with "come" (and "before") topic words again, the same passage is
    refused."""
    from clearance.answer import relevance

    question = "Where do the gold prices before 1960 come from?"
    passage = _passage(
        "gold-prices-readme",
        "Monthly gold prices in USD since 1833. Historical data (1833–1959) is sourced from "
        "records compiled by Timothy Green; data from 1960 to the present is sourced from "
        "the World Bank.",
        "data",
    )

    def stats(terms: Sequence[str]) -> TermStatistics:
        # the trial index's frequencies: "before" and "come" in no chunk
        return TermStatistics(320, {"gold": 60, "price": 90, "1960": 3})

    def relevant() -> bool:
        gate = RelevanceGate(RelevanceSettings())
        return gate.judge(question, [passage], stats, {"c1": 0.699})[0].relevant

    assert "come" not in question_weights(question, stats)
    assert relevant()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(relevance, "_FRAME_WORDS", relevance._FRAME_WORDS - {"come"})
        patch.setattr(relevance, "_WHEN_WORDS", frozenset())
        assert not relevant()


def test_a_passage_the_embedder_places_near_needs_less_coverage() -> None:
    """ "Do I keep earning holiday while I'm on unpaid leave?" over a handbook that says "you
    will continue to accrue holiday": coverage 0.37 ("earning" and "keep" are in no chunk),
    cosine 0.72. It was refused on the coverage floor of the weighed signals (0.45); a
    cosine of ``near_cosine`` needs only ``min_coverage_near``. Reverse proofs: with
    ``near_cosine`` out of reach the same passage is refused, and a passage as near sharing
    less than ``min_coverage_near`` is refused too."""

    question = "Do I keep earning holiday while I'm on unpaid leave?"
    passage = _passage(
        "Sabbatical and unpaid leave",
        "Whilst on a period of unpaid leave or sabbatical, you will continue to accrue "
        "holiday, and this will be at the dxw rate detailed above.",
    )

    def stats(terms: Sequence[str]) -> TermStatistics:
        # the trial handbook's 60 chunks: "keep" in 3, "earn" in none
        return TermStatistics(60, {"keep": 3, "holiday": 5, "unpaid": 12, "leav": 30})

    def relevant(settings: RelevanceSettings, cosine: float = 0.721) -> bool:
        gate = RelevanceGate(settings)
        return gate.judge(question, [passage], stats, {"c1": cosine})[0].relevant

    assert relevant(RelevanceSettings())
    assert not relevant(RelevanceSettings(near_cosine=1.0))
    assert not relevant(RelevanceSettings(min_coverage_near=0.5))
    assert not relevant(RelevanceSettings(), cosine=0.55)


class _Near:
    """An embedder placing every passage at ``cosine`` from any question."""

    def __init__(self, cosine: float) -> None:
        self.cosine = cosine
        self.asked: list[str] = []

    def similarity(self, question: str, passages: Sequence[str]) -> list[float]:
        self.asked.append(question)
        return [self.cosine] * len(passages)


def test_a_question_joining_two_asks_is_judged_on_each() -> None:
    """ "Why did they strip Fannie Mae and Freddie Mac out of the outlay numbers, and which
    series does that touch?" over the README's note on those outlays: the second ask's
    "series" and "touch", in no chunk, weighed as much as the first's names, and the note
    answering the why was refused (coverage 0.40, cosine 0.64). Each ask joined by "and"
    is judged on its own where the whole is refused, but for one pointing back at the first
    ("does that touch"), which alone would ask about something else. Reverse proof: with
    the asks not split, the same passage is refused."""
    from clearance.answer import relevance

    question = (
        "Why did they strip Fannie Mae and Freddie Mac out of the outlay numbers, and which "
        "series does that touch?"
    )
    note = _passage(
        "Fannie Mae and Freddie Mac Outlays",
        "For the purposes of these analyses, outlays for the housing entities Fannie Mae and "
        "Freddie Mac have been removed from CBO's projections, because CBO and the "
        "Administration account for those entities' transactions differently.",
        "finance",
    )

    def stats(terms: Sequence[str]) -> TermStatistics:
        # the held-out GitLab index: "strip", "numbers", "series", "touch" in no chunk
        return TermStatistics(
            40, {"fanni": 2, "mae": 1, "freddi": 2, "mac": 1, "out": 2, "outlay": 12}
        )

    def relevant() -> bool:
        gate = RelevanceGate(RelevanceSettings())
        judged = gate.judge(question, [note], stats, {"c1": 0.635}, None, _Near(0.635))
        return judged[0].relevant

    assert asked_clauses(question) == [
        "Why did they strip Fannie Mae and Freddie Mac out of the outlay numbers"
    ]
    assert asked_clauses("Who approves my leave, and how long does it take?") == [
        "Who approves my leave"
    ]
    assert asked_clauses("Is the laptop mine, and who pays the shipping?") == [
        "Is the laptop mine",
        "who pays the shipping?",
    ]
    assert asked_clauses("Who approves my leave?") == []
    # one ask with two verbs, no comma: not two questions
    assert asked_clauses("Which benefits are reimbursable and are taxed as income?") == []
    assert asked_clauses("Do Fannie Mae and Freddie Mac count?") == []
    assert relevant()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(relevance, "asked_clauses", lambda question: [])
        assert not relevant()


def test_a_plural_written_in_capitals_is_held_as_its_singular() -> None:
    """ "Which CSVs hold the projection errors?" over a README on "each CSV": the stemmer
    leaves "csvs" as it is, so the question's file type was a word of no chunk. Reverse
    proof: with plurals in capitals left as they are, the same passage is refused."""
    from clearance.answer import relevance

    question = "Which CSVs hold the projection errors?"
    passage = _passage("README", "Each CSV holds the projection errors by year.", "finance")

    def stats(terms: Sequence[str]) -> TermStatistics:
        return TermStatistics(60, {"csv": 6, "hold": 4, "project": 10, "error": 5})

    def relevant() -> bool:
        return RelevanceGate(RelevanceSettings()).judge(question, [passage], stats)[0].relevant

    assert "csv" in question_weights(question, stats)
    assert relevant()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(relevance, "_singular_capitals", lambda text: text)
        assert not relevant()


def test_after_and_before_weigh_only_where_a_readable_chunk_holds_them() -> None:
    """ "How long must I keep working after paid parental leave ends?" is answered by "at
    least 12 weeks after your final day on PPL": "after" narrows it (TTS handbook case,
    refused when "after" weighed nothing). "How do I switch into the environment before
    running anything?" over a README that never says "before" asks about switching and
    running (GitLab set, second probe file). Reverse proof: with "after" weighed as a word
    of grammar wherever it is, the parental leave passage is refused."""
    from clearance.answer import relevance

    question = "How long must I keep working after paid parental leave ends?"
    passage = _passage(
        "Paid parental leave",
        "You will need to sign an agreement, stating that you will return to work for at "
        "least 12 weeks after your final day on PPL.",
    )

    def stats(terms: Sequence[str]) -> TermStatistics:
        # the TTS handbook index's frequencies (coverage 0.52 with "after", 0.43 without)
        return TermStatistics(
            400,
            {"keep": 5, "work": 187, "after": 37, "paid": 68, "parent": 43, "leav": 200, "end": 20},
        )

    def relevant() -> bool:
        gate = RelevanceGate(RelevanceSettings())
        return gate.judge(question, [passage], stats, {"c1": 0.637})[0].relevant

    assert "after" in question_weights(question, stats)
    none = question_weights(
        "How do I switch into the environment before running anything?",
        lambda terms: TermStatistics(60, {"environ": 5, "run": 8}),
    )
    assert set(none) == {"switch", "environ", "run"}
    assert relevant()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(relevance, "_FUNCTION_WORDS", relevance._FUNCTION_WORDS | {"after"})
        assert not relevant()


def test_the_options_a_question_closes_with_are_held_by_a_passage_stating_one() -> None:
    """ "What units are the numbers in the input CSVs in — millions, billions, percent of
    GDP?" over the README's "For each of the four files, data are shown in billions of
    dollars": the asker's three guesses weighed as three topic words, two of them in no
    chunk, and the README was refused (coverage 0.29). The options are one term, held by a
    passage stating any of them. Reverse proof: with the options weighed one by one, the
    same passage is refused."""
    from clearance.answer import relevance

    question = (
        "What units are the numbers in the input CSVs in — millions, billions, percent of GDP?"
    )
    passage = _passage(
        "Input Data Descriptions",
        "These input CSV files hold the baselines and actuals of each component. For each of the "
        "four files, data are shown in billions of dollars.",
        "finance",
    )

    def stats(terms: Sequence[str]) -> TermStatistics:
        # the held-out GitLab index: "units", "numbers", "millions", "percent" in no chunk
        return TermStatistics(40, {"input": 3, "csv": 9, "billion": 2, "gdp": 11})

    def relevant() -> bool:
        gate = RelevanceGate(RelevanceSettings())
        return gate.judge(question, [passage], stats, {"c1": 0.567})[0].relevant

    assert option_terms(question) == {"million", "billion", "percent", "gdp"}
    assert OPTIONS in question_weights(question, stats)
    assert option_terms("Who approves travel - my manager?") == frozenset()
    # a question going on after a dash, or a number's minus, closes with no options
    assert option_terms("What is the 2023 - 2024 travel budget for Berlin, Paris or Rome?") == (
        frozenset()
    )
    assert option_terms("Was the deficit -1412.7 or -1294.4?") == frozenset()
    assert option_terms("Time off: is it paid, unpaid or partial?") == {"paid", "unpaid", "partial"}
    assert option_terms("Can I fly business class?") == frozenset()
    assert relevant()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(relevance, "option_terms", lambda question: frozenset())
        assert not relevant()
