"""Questions across languages (clearance.bilingual, answer/routes/crosslingual.py).

A Japanese or Chinese question over English pages shares no word with them: asked in
Japanese how many hours of annual leave carry over, Clearance refused, though the handbook
the asker may read says 240. The question is now read in English from JMdict and CC-CEDICT
where nothing answers it as asked, each word as the caller's own pages put it, and the
answer quotes the English passage.

What must hold besides:
* the words are chosen from the caller's statistics only: a store with hidden pages gives
  the same reading and the same answer as a store holding only the caller's (reverse
  proof: the same choice over every page differs);
* a question about something the pages never speak of stays refused, in every direction
  ("What is Project Tamarind?" over Japanese pages is not "project" alone);
* RESTRICTED pages are never read for it, and the refusal is the fixed text;
* ``[answer] across_languages = false`` turns it off.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from clearance import Clearance
from clearance.access.policy import Action
from clearance.answer.result import Status
from clearance.answer.routes.crosslingual import ACROSS_LANGUAGES, read_across
from clearance.bilingual import Reading, Word, available, readings
from clearance.store.base import SearchFilter
from clearance.store.sqlite import SQLiteStore

pytestmark = pytest.mark.skipif(not available(), reason="the dictionaries are not installed")

# The TTS handbook's leave page, as published (public domain), abridged.
LEAVE = """# Leave

## Annual leave

You earn annual leave every pay period. You can carry over a maximum of 240 annual leave
hours, from one leave year to the next.

## Paid Parental Leave

You are entitled to 12 weeks of paid time off for the birth, adoption or placement of a new
child.

## Sick leave

You earn 4 hours of sick leave each pay period. You can use sick leave for medical
appointments.
"""

TRAVEL = """# Travel

Book flights through the travel system at least 14 days before departure.
"""

# Hidden from the asker: words that the dictionary offers for 休暇 (furlough) and 繰り越す
# (transfer), so that a choice made over every page would read the question otherwise.
HIDDEN = """# Furlough notes

During a furlough, staff may not work, and furlough days are unpaid.
"""

# A Japanese page sharing 年次 with the question and answering nothing of it: the question
# as asked retrieves it, its English reading does not.
NOTICE_JA = """# 年次総会

年次総会は毎年 6 月に開かれます。
"""

RESTRICTED_BOARD = """# Board minutes

Annual leave for executives carries over without limit: 900 hours.
"""

# Japanese pages (GitLab's handbook in Japanese, abridged), for English questions.
JAPANESE = """# 休暇

## 祝日

祝日は翌年に繰り越すことはできません。

## 健康診断

日本のチームメンバーは、年間最大 ¥15,000 の健康診断費用の払い戻しを受けられます。
"""

ANNUAL_JA = "年次休暇は最大何時間まで繰り越せますか？"
PARENTAL_ZH = "带薪育儿假有几周？"


Build = Callable[..., Clearance]


@pytest.fixture
def build(
    tmp_path: Path,
    settings_factory: Callable[..., Any],
    write_directory: Callable[..., Path],
) -> Build:
    """``build(staff_pages, hidden_pages=..., settings=...)``: an engine over ``staff_pages``
    (group ``staff``, which ana is in) and ``hidden_pages`` (group ``execs``, which she is
    not), each folder with its ``_meta.json``."""
    made: list[Clearance] = []
    count = 0

    def make(
        staff: Mapping[str, str],
        hidden: Mapping[str, str] | None = None,
        *,
        hidden_meta: Mapping[str, Any] | None = None,
        settings: Mapping[str, Any] | None = None,
    ) -> Clearance:
        nonlocal count
        count += 1
        root = tmp_path / f"corpus{count}"
        folders = []
        for name, pages, meta in (
            ("handbook", staff, {"acl": ["group:staff"]}),
            ("private", hidden or {}, hidden_meta or {"acl": ["group:execs"]}),
        ):
            if not pages:
                continue
            folder = root / name
            folder.mkdir(parents=True)
            (folder / "_meta.json").write_text(json.dumps(meta), encoding="utf-8")
            for page, text in pages.items():
                (folder / page).write_text(text, encoding="utf-8")
            folders.append(folder)
        store = SQLiteStore(root / "index" / "clearance.db")
        engine = Clearance(settings_factory(dict(settings or {})), store)
        made.append(engine)
        assert engine.ingest(folders).failed == []
        users = {"ana": ["staff"], "eve": ["staff", "execs"]}
        engine.sync_directory(write_directory(root / "directory.json", users))
        return engine

    yield make  # type: ignore[misc]
    for engine in made:
        engine.close()


def _filter(engine: Clearance, user: str = "ana") -> SearchFilter:
    return engine.caller(user, None).filter(Action.RETRIEVE, engine.store.corpora())


# ------------------------------------------------------------------------ readings


def test_a_japanese_question_is_read_in_english() -> None:
    (reading,) = readings(ANNUAL_JA)
    assert reading.language == "en"
    sources = {w.source: w.renderings for w in reading.words}
    assert "annual" in sources["年次"]
    assert "maximum" in sources["最大"]
    # the potential form 繰り越せる is looked up as the verb 繰り越す
    assert "carry forward" in sources["繰り越す"]
    # 何時間 asks; it is no word of the reading
    assert not any(s.startswith("何") for s in sources)
    assert reading.text.endswith("?")


def test_a_chinese_question_is_read_in_english_with_the_senses_words_use() -> None:
    (reading,) = readings(PARENTAL_ZH)
    sources = {w.source: w.renderings for w in reading.words}
    assert "paid" in sources["带薪"]
    # 周 alone is "to make a circuit … week": the two-character words holding it say week
    assert sources["周"][0] in ("week", "weekly")
    assert "vacation" in sources["假"]
    assert "几" not in sources  # it asks
    # traditional characters are read as the simplified
    (traditional,) = readings("帶薪育兒假有幾週？")
    assert [w.source for w in traditional.words] == [w.source for w in reading.words]


def test_the_story_a_question_tells_stays_apart_from_what_it_asks() -> None:
    (reading,) = readings("祖母が亡くなりました。病気休暇は何日まで使えますか？")
    story, ask = reading.text.split(". ")
    assert "grandmother" in story
    assert "sick leave" in ask and ask.endswith("?")


def test_an_english_question_is_read_in_japanese_and_chinese() -> None:
    languages = {r.language: r for r in readings("How long is the probation period?")}
    assert set(languages) == {"ja", "zh"}
    japanese = {w.source: w.renderings for w in languages["ja"].words}
    assert "試用期間" in japanese["probation period"]


def test_a_question_in_no_script_the_dictionaries_read_has_no_reading() -> None:
    assert readings("연차 휴가는 며칠인가요?") == []  # Korean: no dictionary here reads it
    assert readings("   ") == []
    assert readings("!!! ???") == []


def test_numbers_and_words_no_dictionary_knows_stand_for_themselves() -> None:
    """A reading never drops what it cannot render: "2019年的预算赤字" is no question about
    any year's deficit, and 山田さん's number is no helpdesk's."""
    (chinese,) = readings("2019年的预算赤字是多少？")
    assert "2019" in chinese.text.split()
    (japanese,) = readings("山田さんの電話番号は何ですか？")
    assert "山田" in [w.source for w in japanese.words]
    (days,) = readings("3営業日を超えて休む場合は？")
    assert days.text.startswith("3 ")
    # a number in kanji is left out: an English page writes 12, never 十二
    (weeks,) = readings("育児休業は十二週間ありますか？")
    assert "十二" not in weeks.text
    # English words in a Japanese question stay English
    (named,) = readings(
        "選挙の投票に行くのに、公用休暇（Administrative Leave）は何時間もらえますか？"
    )
    assert "administrative leave" in named.text


def test_each_word_is_read_as_the_pages_put_it() -> None:
    reading = Reading(
        "en",
        (
            Word("带薪", ("receive one's regular salary", "paid", "on full pay")),
            Word("育儿", ("raise a child",)),
            Word("宠物", ("pet",), ends="?"),
        ),
    )
    chosen = reading.in_words_used({"paid", "child", "week"})
    # the used rendering of fewest words first; a rendering cut to its used words
    assert chosen.words[0].renderings[0] == "paid"
    assert chosen.words[1].renderings == ("child", "raise a child")  # whole among equivalents
    # a word the pages never use keeps its rendering, to weigh against an answer
    assert chosen.words[2].renderings == ("pet",)
    assert chosen.text == "paid child pet?"


def test_a_reading_out_of_english_is_taken_whole_or_not_at_all() -> None:
    reading = Reading(
        "ja", (Word("project", ("企画", "project")), Word("tamarind", ("タマリンド",)))
    )
    assert reading.in_words_used({"企画"}).words == ()
    assert not reading.in_words_used({"企画"}).crosses()
    whole = reading.in_words_used({"企画", "タマ", "マリ", "リン", "ンド"})
    assert whole.crosses()
    # a reading whose every word stays English crosses into nothing
    english = Reading("ja", (Word("pto", ("pto",)),)).in_words_used({"pto"})
    assert not english.crosses()


# ------------------------------------------------------------------------ answers


def test_a_japanese_question_is_answered_from_the_english_page(build: Build) -> None:
    engine = build({"leave.md": LEAVE, "travel.md": TRAVEL})
    result = engine.ask(ANNUAL_JA, "ana")
    assert result.status is Status.ANSWERED, result.answer
    assert "240" in result.answer
    assert "carry over" in result.answer  # quoted in the page's own language
    assert ACROSS_LANGUAGES in result.flags
    assert [c.doc_id for c in result.citations] == ["files:leave.md"]


def test_a_chinese_question_is_answered_from_the_english_page(build: Build) -> None:
    engine = build({"leave.md": LEAVE, "travel.md": TRAVEL})
    result = engine.ask(PARENTAL_ZH, "ana")
    assert result.status is Status.ANSWERED, result.answer
    assert "12 weeks" in result.answer
    assert ACROSS_LANGUAGES in result.flags


def test_turned_off_the_question_is_refused_as_before(build: Build) -> None:
    engine = build({"leave.md": LEAVE}, settings={"answer": {"across_languages": False}})
    result = engine.ask(ANNUAL_JA, "ana")
    assert result.status is Status.NO_AUTHORIZED_SOURCE
    assert ACROSS_LANGUAGES not in result.flags


def test_a_question_answered_as_asked_is_not_read_again(build: Build) -> None:
    engine = build({"leave.md": LEAVE})
    result = engine.ask("How many annual leave hours can I carry over?", "ana")
    assert result.status is Status.ANSWERED
    assert ACROSS_LANGUAGES not in result.flags


def test_what_the_pages_never_speak_of_stays_refused(build: Build) -> None:
    engine = build({"leave.md": LEAVE, "kyuka.md": JAPANESE})
    for question in (
        "What is Project Tamarind?",
        "ペット保険はありますか？",  # pet insurance: no page speaks of it
        "宠物保险有吗？",
    ):
        result = engine.ask(question, "ana")
        assert result.status is Status.NO_AUTHORIZED_SOURCE, (question, result.answer)
        assert result.answer == engine.settings.answer.no_source_message


def test_an_english_question_is_answered_from_the_japanese_page(build: Build) -> None:
    engine = build({"kyuka.md": JAPANESE})
    result = engine.ask("Can public holidays be carried forward?", "ana")
    assert result.status is Status.ANSWERED, result.answer
    assert "繰り越す" in result.answer


# ------------------------------------------------------------------------ non-interference


def _reading_and_answer(engine: Clearance, question: str) -> tuple[list[str], str, str]:
    readings_ = read_across(engine.store, _filter(engine), question)
    result = engine.ask(question, "ana")
    return [r.text for r in readings_], result.status.value, result.answer


@pytest.mark.parametrize("question", [ANNUAL_JA, PARENTAL_ZH, "祝日は繰り越せますか？"])
def test_hidden_pages_choose_no_word(build: Build, question: str) -> None:
    """The reading and the answer over a store with pages the caller may not read equal
    those over a store holding only the caller's pages."""
    alone = build({"leave.md": LEAVE, "travel.md": TRAVEL})
    beside = build({"leave.md": LEAVE, "travel.md": TRAVEL}, {"furlough.md": HIDDEN})
    assert _reading_and_answer(beside, question) == _reading_and_answer(alone, question)


def test_reverse_proof_a_choice_over_every_page_lets_hidden_pages_choose(build: Build) -> None:
    """The same comparison, with the words chosen over every page (a filter admitting all):
    the hidden page's "furlough" becomes the reading of 休暇."""
    alone = build({"leave.md": LEAVE, "travel.md": TRAVEL})
    beside = build({"leave.md": LEAVE, "travel.md": TRAVEL}, {"furlough.md": HIDDEN})
    everything = _filter(beside, "eve")  # eve reads the hidden folder too
    leaky = [r.text for r in read_across(beside.store, everything, ANNUAL_JA)]
    honest = [r.text for r in read_across(alone.store, _filter(alone), ANNUAL_JA)]
    assert leaky != honest
    assert "furlough" in leaky[0]


def _readings_the_route_asks(
    engine: Clearance, question: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[str], str]:
    """The readings the cross-lingual route itself passes to the narrative route, and the
    answer: captured where the route hands them on, not recomputed."""
    from clearance.answer.routes.narrative import NarrativeRoute

    asked: list[str] = []
    real = NarrativeRoute.answer

    def answer(self: NarrativeRoute, request: Any) -> Any:
        if request.renderings:
            asked.append(request.masked)
        return real(self, request)

    monkeypatch.setattr(NarrativeRoute, "answer", answer)
    try:
        return asked, engine.ask(question, "ana").answer
    finally:
        monkeypatch.setattr(NarrativeRoute, "answer", real)


def test_the_route_reads_with_the_caller_s_words_only(
    build: Build, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the route asks, over a store with hidden pages, equals what it asks over the
    caller's pages alone. Reverse proof: the route made to choose its words over every page
    (the caller's filter widened to the hidden group) asks otherwise, and the same
    comparison fails."""
    import clearance.answer.routes.crosslingual as route

    alone = build({"leave.md": LEAVE, "travel.md": TRAVEL})
    beside = build({"leave.md": LEAVE, "travel.md": TRAVEL}, {"furlough.md": HIDDEN})
    honest = _readings_the_route_asks(alone, ANNUAL_JA, monkeypatch)
    assert honest[0], "the route asked nothing"
    assert _readings_the_route_asks(beside, ANNUAL_JA, monkeypatch) == honest

    real = route.read_across

    def leaky(store: Any, flt: SearchFilter, question: str) -> Any:
        return real(store, replace(flt, principals=flt.principals | {"group:execs"}), question)

    monkeypatch.setattr(route, "read_across", leaky)
    widened = _readings_the_route_asks(beside, ANNUAL_JA, monkeypatch)
    assert widened != honest
    assert "furlough" in widened[0][0]


def test_the_trace_holds_what_every_pass_retrieved(build: Build) -> None:
    """The page only the question as asked retrieves (年次総会) and the page only its
    English reading retrieves (leave) are both in the trace."""
    engine = build({"leave.md": LEAVE, "notice.md": NOTICE_JA})
    records: list[Any] = []
    engine.trace_listeners.append(records.append)
    result = engine.ask(ANNUAL_JA, "ana")
    assert ACROSS_LANGUAGES in result.flags
    assert {"files:leave.md", "files:notice.md"} <= set(records[-1].retrieved)
    assert records[-1].denied_retrieved == 0


def test_the_passes_in_other_languages_are_one_stage_of_the_trace(build: Build) -> None:
    """The readings' time (the dictionaries' work included) is the trace's
    ``across_languages`` stage, and the pass as asked keeps its own stage times: a refusal
    whose stages summed to a fifth of its total hid where the time went."""
    engine = build({"leave.md": LEAVE, "notice.md": NOTICE_JA})
    records: list[Any] = []
    engine.trace_listeners.append(records.append)
    result = engine.ask(ANNUAL_JA, "ana")
    assert ACROSS_LANGUAGES in result.flags
    latency = records[-1].latency_ms
    assert {"across_languages", "retrieve", "total"} <= set(latency), latency
    assert latency["across_languages"] <= latency["total"]


def test_restricted_pages_are_never_read_for_it(build: Build) -> None:
    """A Japanese question only a RESTRICTED page answers is refused with the fixed text,
    as with no such page; the page's figure is in no answer."""
    restricted = {"acl": ["group:staff"], "sensitivity": "RESTRICTED"}
    beside = build({"travel.md": TRAVEL}, {"board.md": RESTRICTED_BOARD}, hidden_meta=restricted)
    alone = build({"travel.md": TRAVEL})
    asked = beside.ask(ANNUAL_JA, "ana")
    assert "900" not in asked.answer
    assert (asked.status, asked.answer) == (
        alone.ask(ANNUAL_JA, "ana").status,
        alone.ask(ANNUAL_JA, "ana").answer,
    )


# ------------------------------------------------------------------------ who is read across


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The questions the route reads in other languages (the dictionaries' work)."""
    from clearance.answer.routes import crosslingual

    asked: list[str] = []
    real = crosslingual.readings

    def counting(question: str) -> list[Reading]:
        asked.append(question)
        return real(question)

    monkeypatch.setattr(crosslingual, "readings", counting)
    return asked


def test_an_english_question_is_read_across_only_for_a_caller_with_cjk_pages(
    build: Build, counted: list[str]
) -> None:
    """Over English pages alone no reading can find anything, and building the Chinese
    dictionary's English index cost every refusal about a second."""
    english = build({"leave.md": LEAVE})
    assert english.ask("What is the dress code for the party?", "ana").status is not (
        Status.ANSWERED
    )
    assert counted == []
    japanese = build({"kyuka.md": JAPANESE})
    assert japanese.ask("Can public holidays be carried forward?", "ana").status is (
        Status.ANSWERED
    )
    assert counted == ["Can public holidays be carried forward?"]


def test_a_stray_glyph_on_an_english_page_is_no_page_to_read_across_for(
    build: Build, counted: list[str]
) -> None:
    """An English PDF whose bullets extract as half-width katakana ("ｲ Tax fraud") made
    every refusal over it read the question in Japanese and Chinese (seconds each)."""
    stray = build({"leave.md": LEAVE, "report.md": "ｲ Referrals rose.\nｲ Cases closed."})
    assert stray.ask("What is the dress code for the party?", "ana").status is not (Status.ANSWERED)
    assert counted == []


def test_a_chinese_table_or_a_traditional_list_is_a_page_to_read_across_for() -> None:
    """Pages with none of the particles of running text still hold a character of the
    probe: a travel-expense table, a list of leave types in traditional characters, a
    Japanese results table, katakana alone."""
    from clearance.analysis import document_terms
    from clearance.answer.routes.crosslingual import _CJK_PROBE, _PROBE_HELD

    for page in (
        "差旅费报销标准 职级 住宿（元/晚） 餐补（元/天） 经理 600 主管 450",
        "請假規定 特休 病假 婚假 喪假",
        "売上高（百万円） 2024年3月期 1,160,015",
        "コンプライアンス ポリシー",
    ):
        assert len(set(document_terms(page)) & set(_CJK_PROBE)) >= _PROBE_HELD, page


def test_hidden_cjk_pages_do_not_decide_whether_a_question_is_read_across(
    build: Build, counted: list[str]
) -> None:
    """A Japanese page ana may not read is not a reason to read her question in Japanese:
    the answer, and the work done, are those of a store without it. Reverse proof: the
    same check over every page reads it."""
    question = "Can public holidays be carried forward?"
    alone = build({"leave.md": LEAVE})
    beside = build({"leave.md": LEAVE}, {"kyuka.md": JAPANESE})
    assert _reading_and_answer(beside, question) == _reading_and_answer(alone, question)
    assert counted == []
    assert read_across(beside.store, _filter(beside, "eve"), question)  # eve reads kyuka.md
    assert counted == [question]
