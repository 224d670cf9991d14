"""Figure questions over tables laid out as companies publish them, with **no** ``[facts]``
vocabulary, each shaped as a case from issue 22's held-out trial:

* a 10-Q's columns headed "Three Months Ended December 31, 2023": the span ending in that
  month, never "the quarter of FY2023" (which, for a company whose year ends in June, is
  another quarter);
* rows written "Revenue: Intelligent Cloud" and "Operating Income: Total", asked as
  "Intelligent Cloud revenue", "cost of revenue for Intelligent Cloud" and "total operating
  income";
* files named ``<company>-<what>-<period>`` with no title: the company is the entity, and
  two files of one company are one entity;
* a Chinese quarterly report's columns 本报告期 / 年初至报告期末 under a title naming the
  quarter, with change columns (比上年同期增减) that are not figures;
* a full-year question where only parts of the year are reported: not the year's figure,
  each part under its own label and its source heading.

Every number an answer states is a stored fact's value.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import Any

import pytest

import clearance.answer.routes.figures as figures_module
import clearance.answer.structured as structured_module
from clearance.answer.result import Citation, Route, Status
from clearance.answer.structured import written_amount
from clearance.app import Clearance
from clearance.config import Settings
from clearance.ingest.facts import YEAR_ENDS_KEY, document_entity, format_number, measure_name
from clearance.llm.mock import MockProvider
from clearance.store.sqlite import SQLiteStore

Q2 = [
    [
        "(In millions) (Unaudited)",
        "Three Months Ended December 31, 2023",
        "Three Months Ended December 31, 2022",
        "Six Months Ended December 31, 2023",
        "Six Months Ended December 31, 2022",
    ],
    ["Revenue: Intelligent Cloud", "25,880", "21,508", "50,139", "41,833"],
    ["Revenue: Total", "62,020", "52,747", "118,537", "102,869"],
    ["Operating Income: Total", "27,032", "20,399", "53,927", "41,917"],
]
ANNUAL = [
    ["(In millions) Year Ended June 30,", "2024", "2023"],
    ["Intelligent Cloud Revenue", "87,464", "72,944"],
    ["Intelligent Cloud Cost of revenue", "29,611", "24,109"],
    ["Total Revenue", "245,122", "211,915"],
    ["Total Cost of revenue", "74,114", "65,863"],
]
QUARTERLY_ZH = [
    [
        "比亚迪股份有限公司 2023年第三季度报告 主要会计数据和财务指标",
        "本报告期",
        "本报告期比上年同期增减",
        "年初至报告期末",
        "年初至报告期末比上年同期增减",
    ],
    ["营业收入（元）", "162,150,695,000.00", "38.49%", "422,274,838,000.00", "57.75%"],
    ["基本每股收益（元/股）", "3.58", "81.73%", "7.35", "129.69%"],
]
PROFIT_ZH = [
    QUARTERLY_ZH[0],
    [
        "归属于上市公司股东的净利润（元）",
        "10,412,751,000.00",
        "82.16%",
        "21,366,896,000.00",
        "129.47%",
    ],
    [
        "归属于上市公司股东的扣除非经常性损益的净利润（元）",
        "9,653,906,000.00",
        "80.95%",
        "19,348,761,000.00",
        "131.32%",
    ],
]

BALANCE_ZH = [
    ["比亚迪股份有限公司 2023年第三季度报告", "本报告期末", "上年度末", "本报告期末比上年度末增减"],
    ["总资产（元）", "623,283,496,000.00", "493,860,646,000.00", "26.21%"],
    ["归属于上市公司股东的所有者权益（元）", "129,855,730,000.00", "111,029,299,000.00", "16.96%"],
]


def write_csv(path: Path, rows: list[list[str]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows)


@pytest.fixture
def app(
    tmp_path: Path,
    settings_factory: Callable[..., Settings],
    store: SQLiteStore,
    write_directory: Callable[..., Path],
) -> Iterator[Clearance]:
    corpus = tmp_path / "finance"
    corpus.mkdir()
    (corpus / "_meta.json").write_text(json.dumps({"acl": ["group:finance"]}), encoding="utf-8")
    write_csv(corpus / "microsoft-fy24-q2-segment-revenue-and-operating-income.csv", Q2)
    write_csv(corpus / "microsoft-segment-results-fy2025-10k.csv", ANNUAL)
    write_csv(corpus / "byd-2023-q3-key-figures.csv", QUARTERLY_ZH)
    write_csv(corpus / "byd-2023-q3-balance.csv", BALANCE_ZH)
    write_csv(corpus / "byd-2023-q3-net-profit.csv", PROFIT_ZH)
    engine = Clearance(settings_factory({}), store, provider=MockProvider())
    report = engine.ingest([corpus])
    assert report.failed == []
    engine.sync_directory(write_directory(tmp_path / "directory.json", {"fay": ["finance"]}))
    yield engine


@pytest.fixture
def ir_engine(
    tmp_path: Path,
    settings_factory: Callable[..., Settings],
    store: SQLiteStore,
    write_directory: Callable[..., Path],
) -> Callable[..., Clearance]:
    """An engine over an investor-relations folder kenji may read: Konica Minolta's 決算短信
    table of ``rows`` and the prose ``documents`` (file name → text), with the default
    extractive provider, as a new user runs it."""

    def build(rows: list[list[str]], documents: dict[str, str] | None = None) -> Clearance:
        corpus = tmp_path / "ir"
        corpus.mkdir(exist_ok=True)
        (corpus / "_meta.json").write_text(json.dumps({"acl": ["group:ir"]}), encoding="utf-8")
        write_csv(corpus / "konica-minolta-2024-q2-tanshin.csv", rows)
        for name, text in (documents or {}).items():
            (corpus / name).write_text(text, encoding="utf-8")
        engine = Clearance(settings_factory({}), store)
        assert engine.ingest([corpus]).failed == []
        engine.sync_directory(write_directory(tmp_path / "directory.json", {"kenji": ["ir"]}))
        return engine

    return build


def numbers_are_facts(engine: Clearance, answer: str, question: str) -> None:
    allowed = {format_number(f.value) for f in engine.store.list_facts()}
    text = re.sub(r"\[S\d+\]", " ", answer)
    for number in re.findall(r"\d[\d,]*(?:\.\d+)?", text):
        if re.fullmatch(r"(?:19|20)\d{2}|[1-9]", number) or number in question:
            continue
        assert number in allowed, (number, answer)


def ask(engine: Clearance, question: str) -> str:
    result = engine.ask(question, "fay")
    assert result.status is Status.ANSWERED, (question, result.status, result.answer)
    numbers_are_facts(engine, result.answer, question)
    return result.answer


# --------------------------------------------------------------------------- ingest


def test_file_names_name_the_company_and_headed_rows_name_the_line(app: Clearance) -> None:
    by = {(f.entity, f.period, f.metric): f.value for f in app.store.list_facts()}
    assert by[("Microsoft", "3M ended Dec 2023", "intelligent cloud revenue")] == 25880
    assert by[("Microsoft", "6M ended Dec 2022", "revenue")] == 102869
    assert by[("Microsoft", "3M ended Dec 2022", "operating income")] == 20399
    assert by[("Microsoft", "FY2024", "intelligent cloud cost of revenue")] == 29611
    # Never read as a part of a fiscal year that the table does not name.
    assert not [p for (_, p, _) in by if re.fullmatch(r"\dM FY\d{4}", p)]
    assert document_entity("konica-minolta-2024-q2-tanshin") == "Konica Minolta"
    assert document_entity("Apple Inc. — Form 10-K 2024") == "Apple Inc."
    assert measure_name("Revenue: Intelligent Cloud") == "Intelligent Cloud Revenue"
    assert measure_name("Operating Income: Total") == "Operating Income"


def test_a_chinese_quarterly_reports_columns_are_the_quarter_and_the_year_to_date(
    app: Clearance,
) -> None:
    facts = [f for f in app.store.list_facts() if f.doc_id.endswith("byd-2023-q3-key-figures.csv")]
    by = {(f.entity, f.period, f.metric): f.value for f in facts if f.unit != "%"}
    assert by[("比亚迪", "Q3 2023", "营业收入")] == 162150695000
    assert by[("比亚迪", "Q1–Q3 FY2023", "营业收入")] == 422274838000
    assert by[("比亚迪", "Q3 2023", "基本每股收益")] == 3.58
    # The change columns (38.49 %, 81.73 % …) are rates of the same line and period, which
    # only a question asking for a rate gets, labelled with their heading.
    rates = {(f.period, f.metric): f.value for f in facts if f.unit == "%"}
    assert rates == {
        ("Q3 2023", "营业收入"): 38.49,
        ("Q1–Q3 FY2023", "营业收入"): 57.75,
        ("Q3 2023", "基本每股收益"): 81.73,
        ("Q1–Q3 FY2023", "基本每股收益"): 129.69,
    }
    assert {f.value for f in facts if f.unit != "%"} == {162150695000, 422274838000, 3.58, 7.35}
    level = ask(app, "比亚迪2023年前三季度营业收入是多少?")
    assert "422,274,838,000" in level and "57.75" not in level, level
    change = ask(app, "比亚迪2023年前三季度营业收入同比增长多少?")
    assert "57.75%" in change and "年初至报告期末比上年同期增减" in change, change
    assert "422,274,838,000" not in change, change


def test_a_balance_at_the_end_of_the_quarter_is_the_quarters_and_at_the_years_end_the_years(
    app: Clearance,
) -> None:
    """本报告期末 (the end of the report's quarter) and 上年度末 (the end of the year
    before), as Chinese quarterly balance sheets head them: the balance of Q3 2023 and of
    FY2022. The change column is no figure."""
    facts = [f for f in app.store.list_facts() if f.doc_id.endswith("byd-2023-q3-balance.csv")]
    by = {(f.period, f.metric): f.value for f in facts if f.unit != "%"}
    assert by == {
        ("Q3 2023", "总资产"): 623283496000,
        ("FY2022", "总资产"): 493860646000,
        ("Q3 2023", "归属于上市公司股东的所有者权益"): 129855730000,
        ("FY2022", "归属于上市公司股东的所有者权益"): 111029299000,
    }
    answer = ask(app, "比亚迪2023年第三季度末总资产是多少?")
    assert "623,283,496,000" in answer and "493,860,646,000" not in answer, answer
    answer = ask(app, "比亚迪2022年末归属于上市公司股东的所有者权益是多少?")
    assert "111,029,299,000" in answer and "129,855,730,000" not in answer, answer


def test_a_relative_period_written_as_the_table_heads_it_is_that_columns(
    app: Clearance, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "比亚迪上年度末归属于上市公司股东的所有者权益是多少?" quotes the column heading of the
    report's balance (上年度末: the end of the year before the report, FY2022); counted back
    from today it was a year no table holds, and not found (federal set, probe split). A
    relative period the question writes as a readable table heads a column of the figure is
    that column's period, and the answer says which. Reverse proof: read from today again,
    it is not found."""
    question = "比亚迪上年度末归属于上市公司股东的所有者权益是多少?"
    answer = ask(app, question)
    assert answer.startswith("(上年度末 = FY2022)"), answer
    assert "111,029,299,000" in answer and "129,855,730,000" not in answer, answer
    monkeypatch.setattr(
        figures_module.FiguresRoute,
        "_as_the_table_heads",
        lambda self, request, parts, resolved: (list(parts), resolved),
    )
    assert "111,029,299,000" not in app.ask(question, "fay").answer


# --------------------------------------------------------------------------- answers


@pytest.mark.parametrize(
    ("question", "value", "wrong"),
    [
        (
            "What was Intelligent Cloud revenue for the three months ended December 31, 2023?",
            "25,880",
            ("21,508", "50,139"),
        ),
        (
            "What was total operating income for the three months ended December 31, 2022?",
            "20,399",
            ("27,032", "41,917"),
        ),
        ("What was total revenue for the six months ended December 31, 2022?", "102,869", ()),
        ("What was the cost of revenue for Intelligent Cloud in 2024?", "29,611", ("74,114",)),
        ("比亚迪2023年第三季度基本每股收益是多少?", "3.58", ("7.35",)),
    ],
)
def test_a_figure_is_found_under_the_label_its_table_gives_it(
    app: Clearance, question: str, value: str, wrong: tuple[str, ...]
) -> None:
    answer = ask(app, question)
    assert value in answer
    for other in wrong:
        assert other not in answer, answer
    assert "row=" not in answer and "col=" not in answer


def test_a_span_ended_in_a_month_is_said_as_the_source_says_it(app: Clearance) -> None:
    answer = ask(
        app, "What was Intelligent Cloud revenue for the three months ended December 31, 2023?"
    )
    assert "the three months ended December 2023" in answer
    assert "25,880 million" in answer  # "(In millions)" is a scale, not a word after it
    assert written_amount("87,464", "In millions") == "87,464 million"
    # "(In billion yen)" above a Japanese company's table, as a new user's file had it:
    # "8,458 In billion yen" read the label, not the amount
    assert written_amount("8,458", "In billion yen") == "8,458 billion yen"
    assert written_amount("8,458", "in millions of dollars") == "8,458 million dollars"
    assert written_amount("8,458", "people") == "8,458 people"  # reverse: another unit as is


def test_a_full_year_only_reported_in_parts_is_not_found_and_each_part_is_labelled(
    app: Clearance,
) -> None:
    result = app.ask("比亚迪2023年全年营业收入是多少?", "fay")
    assert result.status is Status.NOT_FOUND and "parts_of_period" in result.flags
    first, *rest = result.answer.splitlines()
    assert first == "No figure found for 营业收入 of 比亚迪 in FY2023."
    assert "part of that year only" in rest[0]
    parts = "\n".join(rest[1:])
    assert "Q1–Q3 FY2023 (part of FY2023 only; headed 年初至报告期末)" in parts
    assert "422,274,838,000" in parts and "162,150,695,000" in parts
    numbers_are_facts(app, result.answer, "2023")
    # A year with no part reported is plainly not found: no figure of another year.
    other = app.ask("比亚迪2022年全年的营业收入是多少?", "fay")
    assert other.status is Status.NOT_FOUND
    assert "162,150,695,000" not in other.answer and "422,274,838,000" not in other.answer


def test_a_part_is_never_given_as_the_whole_year(app: Clearance) -> None:
    """Reverse proof of the rule above: the answer's first sentence is the year's refusal,
    and no line gives a part's figure under the year's own label."""
    answer = app.ask("比亚迪2023年全年营业收入是多少?", "fay").answer
    assert not re.search(r"FY2023 营业收入: [\d,]+", answer.replace("Q1–Q3 FY2023", "")), answer
    leaky = answer.replace(" (part of FY2023 only; headed 年初至报告期末)", "").replace(
        "Q1–Q3 FY2023", "FY2023"
    )
    assert re.search(r"FY2023 营业收入: [\d,]+", leaky)  # the same check catches a leaky label


def test_a_span_named_without_its_year_asks_which_year(app: Clearance) -> None:
    result = app.ask("What was revenue for the six months ended December 31?", "fay")
    assert result.status is Status.CLARIFY, result.answer
    assert result.missing == ("period",)
    assert result.options == ("6M ended Dec 2023", "6M ended Dec 2022")
    # No year is guessed: neither year's figure is in the question back to the asker.
    assert "118,537" not in result.answer and "102,869" not in result.answer
    # With the year, the figure is answered.
    assert "102,869" in ask(app, "What was revenue for the six months ended December 31, 2022?")


def test_a_figure_question_with_nothing_to_offer_is_read_in_the_documents(
    ir_engine: Callable[..., Clearance],
) -> None:
    """ "今期の事業貢献利益の見通しは?" names a metric a table holds for another period, and a
    forecast the table doesn't: asking "which entity?" with nothing to offer helped nobody.
    The results briefing's prose states the forecast, and the answer quotes it."""
    engine = ir_engine(
        [
            ["2024年3月期第2四半期の連結業績", "事業貢献利益(百万円)"],
            ["2024年3月期第2四半期", "2,288"],
        ],
        {
            "briefing.md": "# 決算会見\n\n今期の売上高は横ばいの1兆1600億円とした。"
            "事業貢献利益は、前期比大幅増の400億円を見込む。\n"
        },
    )
    result = engine.ask("今期の事業貢献利益の見通しはいくらですか?", "kenji")
    assert result.status is Status.ANSWERED, result.answer
    assert "400億円" in result.answer and "2,288" not in result.answer
    assert result.route is Route.NARRATIVE


def test_an_amount_asked_without_a_period_over_several_years_asks_which(
    tmp_path: Path,
    settings_factory: Callable[..., Settings],
    store: SQLiteStore,
    write_directory: Callable[..., Path],
) -> None:
    """ "What was the deficit?" over budget reviews of two years: the amounts of both years
    side by side answer no one question; which period is asked, offering the years the
    caller's own sources state. A reader of one year's review only is answered, and never
    offered the year it may not read."""
    corpus = tmp_path / "budget"
    (corpus / "older").mkdir(parents=True)
    (corpus / "_meta.json").write_text(json.dumps({"acl": ["group:fin"]}), encoding="utf-8")
    (corpus / "older" / "_meta.json").write_text(
        json.dumps({"acl": ["group:archive"]}), encoding="utf-8"
    )
    (corpus / "review-2019.md").write_text(
        "# Monthly Budget Review, June 2019\n\nThe federal budget deficit was $738 billion for "
        "the first eight months of fiscal year 2019, the CBO estimates.\n",
        encoding="utf-8",
    )
    (corpus / "older" / "review-2008.md").write_text(
        "# Monthly Budget Review, August 2008\n\nCBO estimates that for the first 10 months of "
        "fiscal year 2008, the federal budget deficit was about $371 billion.\n",
        encoding="utf-8",
    )
    engine = Clearance(settings_factory({}), store)
    assert engine.ingest([corpus]).failed == []
    engine.sync_directory(
        write_directory(tmp_path / "directory.json", {"fay": ["fin", "archive"], "ann": ["fin"]})
    )
    result = engine.ask("What was the deficit?", "fay")
    assert result.status is Status.CLARIFY, result.answer
    assert {"2019", "2008"} <= set(result.options)
    assert "738" not in result.answer and "371" not in result.answer
    asked = engine.ask("What was the deficit in fiscal year 2019?", "fay")
    assert asked.status is Status.ANSWERED and "$738 billion" in asked.answer

    one_year = engine.ask("What was the deficit?", "ann")
    assert one_year.status is Status.ANSWERED, one_year.answer
    assert "$738 billion" in one_year.answer and "2008" not in one_year.answer


def test_a_line_named_anywhere_in_the_question_is_that_lines_figure(app: Clearance) -> None:
    """ "How much revenue did Productivity and Business Processes make …": the line and the
    measure apart, with ordinary words around them; the one company holding the figure is
    assumed and said."""
    question = (
        "How much revenue did Intelligent Cloud make in the six months ended December 31, 2023?"
    )
    answer = ask(app, question)
    assert "50,139" in answer and "118,537" not in answer
    assert answer.startswith("Assuming Microsoft:")


def test_an_unknown_name_beside_a_metric_is_not_found_and_reveals_nothing(
    tmp_path: Path, app: Clearance, write_directory: Callable[..., Path]
) -> None:
    """ "How much revenue did Globex make in 2024?" over Microsoft's tables: not found, naming
    Globex, never Microsoft's figure nor Microsoft offered in its place. The same answer,
    byte for byte, when a table about Globex exists that the asker may not read; its
    reader gets its figure (reverse proof that the name is read)."""
    question = "How much revenue did Globex make in 2024?"
    before = app.ask(question, "fay")
    assert before.status is Status.NOT_FOUND, before.answer
    assert "Globex" in before.answer and "Microsoft" not in before.answer
    assert before.options == () and "245,122" not in before.answer

    hidden = tmp_path / "board"
    hidden.mkdir()
    (hidden / "_meta.json").write_text(json.dumps({"acl": ["group:board"]}), encoding="utf-8")
    write_csv(hidden / "globex-results.csv", [["Revenue (USD m)", "2024"], ["Globex", "900"]])
    assert app.ingest([hidden]).failed == []
    app.sync_directory(
        write_directory(tmp_path / "directory2.json", {"fay": ["finance"], "bo": ["board"]})
    )
    after = app.ask(question, "fay")
    assert (after.status, after.answer, after.options) == (
        before.status,
        before.answer,
        before.options,
    )
    board = app.ask(question, "bo")
    assert board.status is Status.ANSWERED and "900" in board.answer


def test_a_line_of_the_entitys_no_table_carries_is_not_found_never_the_total(
    tmp_path: Path,
    app: Clearance,
    write_directory: Callable[..., Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ "How much revenue did LinkedIn generate for Microsoft in fiscal 2024?" (federal
    probe): Microsoft is named, LinkedIn is a line of its that no table carries. It gave
    Microsoft's total revenue. Not found, naming LinkedIn, and the same answer when a
    hidden table carries LinkedIn; a name the tables hold as a line ("Intelligent Cloud")
    or a month ("closed on June 30") is no such name. Reverse proof: without the check,
    the total comes back."""
    question = "How much revenue did LinkedIn generate for Microsoft in fiscal 2024?"
    before = app.ask(question, "fay")
    assert before.status is Status.NOT_FOUND, before.answer
    assert "LinkedIn" in before.answer and "245,122" not in before.answer
    assert "87,464" in ask(
        app, "How much revenue did Intelligent Cloud make for Microsoft in fiscal 2024?"
    )
    assert "211,915" in ask(
        app, "For the fiscal year that closed on June 30, 2023, what was Microsoft's total revenue?"
    )
    # whose count it is ("as reported by the SEC") names no line
    assert "245,122" in ask(
        app, "What was Microsoft's total revenue for fiscal 2024 as reported by the SEC?"
    )
    # "take in fiscal 2024": the period's "in", not what was brought in
    took = app.ask("How many days did Microsoft take in fiscal 2024 to close its books?", "fay")
    assert "245,122" not in took.answer, took.answer
    hidden = tmp_path / "board"
    hidden.mkdir()
    (hidden / "_meta.json").write_text(json.dumps({"acl": ["group:board"]}), encoding="utf-8")
    write_csv(
        hidden / "microsoft-linkedin.csv",
        [["(In millions)", "2024"], ["LinkedIn Revenue", "16,372"]],
    )
    assert app.ingest([hidden]).failed == []
    app.sync_directory(
        write_directory(tmp_path / "directory2.json", {"fay": ["finance"], "bo": ["board"]})
    )
    after = app.ask(question, "fay")
    assert (after.status, after.answer) == (before.status, before.answer)
    monkeypatch.setattr(figures_module, "_alien_line", lambda *args: "")
    assert "245,122" in app.ask(question, "fay").answer


@pytest.mark.parametrize(
    ("question", "value"),
    [
        # "the quarter ended …" is the three months ended then
        ("What was Intelligent Cloud revenue for the quarter ended December 31, 2023?", "25,880"),
        # a period ruled out ("not year to date") is not a second period to compare
        (
            "Can you pull the Intelligent Cloud revenue for the three months ended December 31, "
            "2023? Just that quarter, not year to date.",
            "25,880",
        ),
        # what a line "brings in" is its revenue
        ("How much did Intelligent Cloud bring in for Microsoft in fiscal 2024?", "87,464"),
        # "more" in a question is a comparison, never a line narrowing the metric
        ("How much more revenue did Intelligent Cloud make in FY2024 than in FY2023?", "14,520"),
    ],
)
def test_figure_questions_worded_as_people_ask_them(
    app: Clearance, question: str, value: str
) -> None:
    """Cases of the federal set's second probe file, written by someone who had not run
    Clearance: each was refused, asked back or answered with a whole table row."""
    result = app.ask(question, "fay")  # (a comparison states its difference too)
    assert result.status is Status.ANSWERED and value in result.answer, result.answer


def test_what_a_question_says_was_brought_in_is_a_line_never_the_total(app: Clearance) -> None:
    """ "How much grant money from universities did The Carpentries take in during 2025?"
    was answered with the organisation's whole revenue: "take in" read as revenue, and what
    was taken in left out. What was brought in narrows the revenue to that line; no table
    has it here, so no figure is given. Money, cash and sales taken in name no line."""
    result = app.ask(
        "How much licensing money from partners did Microsoft take in during fiscal 2024?", "fay"
    )
    assert "245,122" not in result.answer, result.answer
    assert result.status is Status.NOT_FOUND, result.answer
    total = app.ask("How much money did Microsoft take in during fiscal 2024?", "fay")
    assert total.status is Status.ANSWERED and "245,122" in total.answer, total.answer


def test_a_quarter_named_without_its_year_that_no_table_reports_asks_which(
    app: Clearance, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "How much was revenue in Q2?" was read as this year's second quarter and answered
    "No figure found for revenue of Microsoft in Q2 2026": a year nobody named. It asks
    which period, offering those the tables hold. A quarter the tables do report, and a
    year named in words ("this year"), are answered as before. Reverse proof: without the
    rule, the not-found answer for the guessed year comes back."""
    asked = app.ask("How much was revenue in Q2?", "fay", today=date(2026, 12, 5))
    assert asked.status is Status.CLARIFY, asked.answer
    assert "3M ended Dec 2023" in asked.options and "2026" not in asked.answer, asked.answer
    this_year = app.ask("What was revenue this year?", "fay", today=date(2026, 12, 5))
    assert this_year.status is Status.NOT_FOUND, this_year.answer
    monkeypatch.setattr(figures_module, "_PART_WITHOUT_YEAR", re.compile(r"(?!x)x"))
    again = app.ask("How much was revenue in Q2?", "fay", today=date(2026, 12, 5))
    assert again.status is Status.NOT_FOUND and "Q2 2026" in again.answer, again.answer


def test_the_first_months_or_quarters_are_the_columns_to_the_quarter(
    app: Clearance, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Chinese report heads its cumulative column 年初至报告期末 (Q1–Q3 FY2023); "the first
    three quarters" or "the first nine months of 2023" is that span, as 前三季度 is, and
    "the first half" is Q1–Q2 (a Japanese 第2四半期累計). They were not found. Reverse
    proofs: without the form "first three quarters", and with the quarter-only reading of
    a span, not found again."""
    from clearance.ingest import facts as facts_module

    quarters = "What was BYD's revenue in the first three quarters of 2023?"
    months = "What was BYD's revenue in the first nine months of 2023?"
    assert facts_module.year_to_quarter("H1 2024") == "Q1–Q2 FY2024"
    assert facts_module.year_to_quarter("9M FY2023") == "Q1–Q3 FY2023"
    assert facts_module.year_to_quarter("H2 2024") is None
    assert "422,274,838,000" in ask(app, quarters)
    assert "422,274,838,000" in ask(app, months)
    quarter_only = facts_module.year_to_quarter
    monkeypatch.setattr(
        figures_module,
        "year_to_quarter",
        lambda period: quarter_only(period) if (period or "").startswith("Q") else None,
    )
    assert app.ask(months, "fay").status is Status.NOT_FOUND
    forms = [f for f in facts_module._PARTIAL_FORMS if "quarters" not in f[0].pattern]
    monkeypatch.setattr(facts_module, "_PARTIAL_FORMS", tuple(forms))
    assert app.ask(quarters, "fay").status is not Status.ANSWERED


def test_the_quarter_by_itself_is_no_line(app: Clearance, monkeypatch: pytest.MonkeyPatch) -> None:
    """ "比亚迪2023年第三季度单季的营业收入是多少?" (federal probe): 单季 says the quarter by
    itself, as against the year to date; it was read as a line of revenue no table carries
    ("No figure found for 单季 营业收入"). Reverse proof: read as a line again, not found."""
    from clearance.answer import intent as intent_module

    question = "比亚迪2023年第三季度单季的营业收入是多少?"
    assert "162,150,695,000" in ask(app, question)
    pattern = intent_module._NOT_QUALIFIERS_CJK.pattern.replace(
        "|单季度|单季|單季度|單季|当季|當季", ""
    )
    monkeypatch.setattr(intent_module, "_NOT_QUALIFIERS_CJK", re.compile(pattern))
    assert app.ask(question, "fay").status is Status.NOT_FOUND


def test_net_profit_is_the_plainest_line_ending_in_it_and_the_first_quarters_no_quarter(
    app: Clearance, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "比亚迪的净利润是多少?" (federal probe) quoted the whole table, both net profit lines
    and both periods, where the question named no period: no line is called 净利润, so no
    metric was read. A Chinese line's name ending in the measure after its last 的 is
    asked for by the measure when it is the plainest such line (归属于上市公司股东的净利润,
    not the one without non-recurring items, which 扣非净利润 names); 前三季度 is the
    first three quarters, no third quarter of this year. Reverse proofs: without the
    measure's name, no period is asked; with 前三季度 read as this year's Q3, the line is
    not found."""
    from clearance.answer import periods as periods_module

    result = app.ask("比亚迪的净利润是多少?", "fay")
    assert result.status is Status.CLARIFY and "period" in result.missing, result.answer
    quarter = ask(app, "比亚迪2023年第三季度的净利润是多少?")
    assert "10,412,751,000" in quarter and "归属于上市公司股东的净利润" in quarter, quarter
    assert "9,653,906,000" not in quarter
    # only a statement line's measure, only the plainest line of one company's, and only
    # where the others hold its qualifier
    byd = ["归属于上市公司股东的净利润", "归属于上市公司股东的扣除非经常性损益的净利润"]
    assert structured_module._head_name(byd[0], byd)[0] == "净利润"
    assert structured_module._head_name(byd[1], byd) == ()
    assert structured_module._head_name(byd[0], [*byd, "扣除非经常性损益的净利润"]) == ()
    assert (
        structured_module._head_name("经营活动产生的现金流量净额", ["经营活动产生的现金流量净额"])
        == ()
    )
    assert "19,348,761,000" in ask(app, "比亚迪2023年前三季度扣非净利润是多少?")
    yearless = app.ask("比亚迪前三季度扣非净利润是多少?", "fay")
    assert yearless.status is Status.CLARIFY and "Q1–Q3 FY2023" in yearless.options
    monkeypatch.setitem(
        periods_module._SUB_RE,
        "zh",
        re.compile(periods_module._SUB_RE["zh"].pattern.replace("(?<!前)", ""), re.I),
    )
    assert app.ask("比亚迪前三季度扣非净利润是多少?", "fay").status is Status.NOT_FOUND
    monkeypatch.undo()
    monkeypatch.setattr(structured_module, "_head_name", lambda metric, metrics: ())
    plain = app.ask("比亚迪的净利润是多少?", "fay")
    assert plain.status is not Status.CLARIFY and plain.route is not Route.STRUCTURED


def test_a_change_asked_over_one_period_sets_the_year_before_beside_it(
    app: Clearance, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "How much did Intelligent Cloud revenue grow in fiscal 2024?" (a new variant of the
    federal figures) was answered with the year's revenue alone, which says nothing of the
    growth; "How did … change between FY2023 and FY2024?" was refused as a request for an
    explanation; "How much revenue did … bring in during fiscal 2023?" quoted the whole
    table. A change asked over one period is the same span a year before, beside it, with
    the difference; "how did … change" asks for figures; "bring in" and "during" say
    nothing besides the slots. Reverse proofs: without the year before, the growth is not
    given; with "how did" read as an explanation, the change is refused."""
    from clearance.answer import intent as intent_module

    def answered(question: str) -> str:  # the difference is the figures', no fact
        result = app.ask(question, "fay")
        assert result.status is Status.ANSWERED, (question, result.answer)
        return result.answer

    grew = answered("How much did Intelligent Cloud revenue grow in fiscal 2024?")
    assert "72,944" in grew and "87,464" in grew and "14,520" in grew, grew
    between = answered("How did Intelligent Cloud revenue change between FY2023 and FY2024?")
    assert "14,520" in between, between
    brought = ask(app, "How much revenue did Intelligent Cloud bring in during fiscal 2023?")
    assert "72,944" in brought and "87,464" not in brought, brought
    monkeypatch.setattr(
        figures_module.FiguresRoute, "_with_the_year_before", lambda self, request, part: [part]
    )
    assert "14,520" not in answered("How much did Intelligent Cloud revenue grow in fiscal 2024?")
    monkeypatch.setattr(intent_module, "_HOW_IT_CHANGED", re.compile(r"(?!x)x"))
    result = app.ask("How did Intelligent Cloud revenue change between FY2023 and FY2024?", "fay")
    assert "14,520" not in result.answer
    monkeypatch.setattr(
        intent_module, "_SMALL_WORDS", intent_module._SMALL_WORDS - {"during", "bring"}
    )
    result = app.ask("How much revenue did Intelligent Cloud bring in during fiscal 2023?", "fay")
    assert result.route is not Route.STRUCTURED, result.answer


def test_a_span_no_table_reports_for_anyone_is_read_in_the_documents(
    app: Clearance, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "What were revenues in the first eight months of fiscal year 2019?" beside a
    company's annual and quarterly tables (a new variant of the federal figures): the
    company was assumed as the only one with revenue, and its eight months were "not
    found", though a budget review states them. When whose figure it is was assumed and
    no readable table reports such a count of months for anyone, the documents answer; a
    year, a half or a quarter stays not found. Reverse proof: taking the company's "not
    found", the review is not quoted."""
    (tmp_path / "finance" / "budget-reviews.md").write_text(
        "# Monthly Budget Review for May 2019\n\n"
        "Revenues were $2,255 billion in the first eight months of fiscal year 2019, CBO "
        "estimates.\n",
        encoding="utf-8",
    )
    assert app.ingest([tmp_path / "finance"]).failed == []
    question = "What were revenues in the first eight months of fiscal year 2019?"
    said = app.ask(question, "fay")
    assert said.status is Status.ANSWERED and "$2,255 billion" in said.answer, said.answer
    assert "Microsoft" not in said.answer
    assert app.ask("What were revenues in fiscal year 2019?", "fay").status is Status.NOT_FOUND
    monkeypatch.setattr(
        figures_module.FiguresRoute, "_reported_for", lambda self, request, period: True
    )
    assert app.ask(question, "fay").status is Status.NOT_FOUND


def test_a_companys_revenue_is_never_a_governments_receipts(
    app: Clearance, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Receipts are a weak name of revenue, for tables naming no one: a company's revenue is
    never given for "total receipts". Reverse proof: a weak name for any table's revenue
    gives the company's."""
    question = "What were total receipts in fiscal year 2024?"
    result = app.ask(question, "fay")
    assert "245,122" not in result.answer and "Microsoft" not in result.answer, result.answer
    weak = structured_module._weak_names
    monkeypatch.setattr(
        structured_module,
        "_weak_names",
        lambda metric, metrics, unnamed: weak(metric, metrics, True),
    )
    assert "245,122" in app.ask(question, "fay").answer


def test_two_names_of_one_span_are_one_look_up(
    app: Clearance, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "Q2 FY2024, the quarter ended December 31, 2023" names one span twice (a review's
    case): the figure is given once, not twice and compared with itself. Reverse proof:
    without merging the look-ups, it is given twice."""
    question = (
        "What was Intelligent Cloud revenue in Q2 FY2024, the quarter ended December 31, 2023?"
    )
    assert ask(app, question).count("25,880") == 1
    monkeypatch.setattr(figures_module, "_one_look_up_each", list)
    assert app.ask(question, "fay").answer.count("25,880") >= 2


def test_opex_is_operating_expenses_and_a_ruled_out_period_is_not_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The statement-lines glossary names "opex" (and "capex", 归母净利润) as the lines they
    abbreviate; "not year to date" rules that period out. Reverse proof: without the rule,
    two periods are read and set side by side."""
    from clearance import glossary
    from clearance.answer import intent as intent_module
    from clearance.config import FactSettings

    assert "operating expenses" in glossary.equivalents("opex")
    assert "营业收入" in glossary.equivalents("operating revenue")
    assert "归属于上市公司股东的净利润" in glossary.equivalents("归母净利润")
    question = "What was revenue in FY2024, not FY2023?"
    parsed = intent_module.parse_intent(question, FactSettings(metrics={"revenue": ["revenue"]}))
    assert [p.period for p in parsed.parts] == ["FY2024"] and not parsed.compare
    monkeypatch.setattr(intent_module, "_NOT_THIS", re.compile(r"(?!x)x"))
    parsed = intent_module.parse_intent(question, FactSettings(metrics={"revenue": ["revenue"]}))
    assert len(parsed.parts) == 2


def test_a_half_or_quarter_of_a_fiscal_year_is_the_span_the_companys_tables_make_it(
    app: Clearance,
) -> None:
    """A 10-K headed "Year Ended June 30" says Microsoft's fiscal years end in June, so the
    first half of fiscal 2024 is the six months ended December 2023, and its second quarter
    the three months ended then: answered from the 10-Q's columns, saying so."""
    annual = next(
        d for d in app.store.list_documents() if d.doc_id.endswith("results-fy2025-10k.csv")
    )
    assert annual.extra[YEAR_ENDS_KEY] == {"Microsoft": 6}
    half = ask(app, "What was Microsoft's revenue in the first half of fiscal year 2024?")
    assert "118,537" in half and "(H1 FY2024 = 6M ended Dec 2023)" in half, half
    quarter = ask(app, "What was Intelligent Cloud revenue in the second quarter of fiscal 2024?")
    assert "25,880" in quarter and "three months ended December 2023" in quarter, quarter


def test_without_a_readable_table_naming_the_year_end_no_span_is_assumed(
    tmp_path: Path,
    settings_factory: Callable[..., Settings],
    store: SQLiteStore,
    write_directory: Callable[..., Path],
) -> None:
    """Reverse proof: the same 10-Q, with the 10-K only where the asker may not read it.
    Nothing fay may read says when Microsoft's years end, so the first half of fiscal 2024
    is never answered with a span guessed for it: the six months the 10-Q holds are offered
    for her to choose, with no figure, and the hidden 10-K changes nothing."""
    for name, rows, group in (
        ("q2", Q2, "finance"),
        ("annual", ANNUAL, "board"),
    ):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "_meta.json").write_text(json.dumps({"acl": [f"group:{group}"]}), "utf-8")
        file = (
            "microsoft-fy24-q2-segment-revenue-and-operating-income.csv"
            if name == "q2"
            else "microsoft-segment-results-fy2025-10k.csv"
        )
        write_csv(folder / file, rows)
    engine = Clearance(settings_factory({}), store, provider=MockProvider())
    assert engine.ingest([tmp_path / "q2", tmp_path / "annual"]).failed == []
    engine.sync_directory(
        write_directory(
            tmp_path / "directory.json", {"fay": ["finance"], "bo": ["finance", "board"]}
        )
    )
    question = "What was Microsoft's revenue in the first half of fiscal year 2024?"
    offered = engine.ask(question, "fay")
    assert (offered.status, offered.options) == (Status.CLARIFY, ("6M ended Dec 2023",))
    assert "118,537" not in offered.answer and "fiscal year ends" in offered.answer
    alone = Clearance(
        settings_factory({}), SQLiteStore(tmp_path / "alone.db"), provider=MockProvider()
    )
    assert alone.ingest([tmp_path / "q2"]).failed == []
    alone.sync_directory(tmp_path / "directory.json")
    assert alone.ask(question, "fay").answer == offered.answer
    told = engine.ask(question, "bo")
    assert told.status is Status.ANSWERED and "118,537" in told.answer, told.answer


def test_a_figure_names_its_line_as_the_table_writes_it(app: Clearance) -> None:
    """A segment is a name: "Intelligent Cloud revenue", not "intelligent cloud revenue";
    the words of what is measured stay in ordinary case ("cost of revenue"), and a label
    that is nothing but a measure ("Total Revenue") reads "revenue". Reverse proof of the
    lookup: the canonical metric names stay lower case (they are what questions match)."""
    cloud = ask(
        app, "What was Intelligent Cloud revenue for the three months ended December 31, 2023?"
    )
    assert "Microsoft's Intelligent Cloud revenue in the three months" in cloud, cloud
    cost = ask(app, "What was the cost of revenue for Intelligent Cloud in 2024?")
    assert "Intelligent Cloud cost of revenue in FY2024" in cost, cost
    total = ask(app, "What was Microsoft's total revenue in fiscal 2024?")
    assert "Microsoft's revenue in FY2024" in total, total
    assert "intelligent cloud revenue" in {f.metric for f in app.store.list_facts()}


@pytest.fixture
def konica(
    tmp_path: Path,
    settings_factory: Callable[..., Settings],
    store: SQLiteStore,
    write_directory: Callable[..., Path],
) -> Clearance:
    """A results deck's table holding the second quarter only, and the year's overview
    stating the year's operating profit in prose (issue 22's held-out Japanese trial)."""
    corpus = tmp_path / "ir"
    corpus.mkdir()
    (corpus / "_meta.json").write_text(json.dumps({"acl": ["group:ir"]}), encoding="utf-8")
    write_csv(
        corpus / "konica-minolta-2024-q2-tanshin.csv",
        [
            [
                "2024年3月期第2四半期の連結業績(2023年4月1日~2023年9月30日)",
                "売上高(百万円)",
                "営業利益(百万円)",
            ],
            ["2024年3月期第2四半期", "552,763", "785"],
        ],
    )
    (corpus / "konica-minolta-overview.md").write_text(
        "# コニカミノルタ 2024年3月期 連結業績の概要\n\n"
        "## 当連結会計年度の総括\n\n"
        "当期の連結売上高は1兆1,599億円と、2003年のコニカとミノルタの経営統合以来最高の売上高となりました。\n\n"
        "## 決算会見\n\n"
        "営業利益は、大きな減損損失を計上した前期から大幅増の260億円となった。\n\n"
        "今期は、営業利益を400億円としている。\n",
        encoding="utf-8",
    )
    (corpus / "konica-minolta-2025-h1-overview.md").write_text(
        "# コニカミノルタ 2025年3月期 第2四半期の概要\n\n上半期の営業利益は120億円となった。\n\n"
        "## 2026年3月期の見通し\n\n2026年3月期の営業利益は300億円を見込む。\n",
        encoding="utf-8",
    )
    # Another company's year, in the same words.
    (corpus / "ricoh-fy2023-overview.md").write_text(
        "# リコー 2024年3月期 連結業績の概要\n\n営業利益は、前期から増加し500億円となった。\n",
        encoding="utf-8",
    )
    # The default extractive provider, as a new user runs it.
    engine = Clearance(settings_factory({}), store)
    assert engine.ingest([corpus]).failed == []
    engine.sync_directory(write_directory(tmp_path / "directory.json", {"kenji": ["ir"]}))
    return engine


def test_the_years_sentence_is_found_by_the_lines_other_name_and_the_reports_title(
    konica: Clearance, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "What was Konica Minolta's operating profit for the fiscal year ended March 2024?"
    beside another company's English table whose line is called "operating income" (a new
    variant of the federal figures): the question's line was that table's, and its
    overview was searched by "operating income" alone and never found, so the year was
    "not found". The overview is searched by every name the readable tables give the
    line (its 営業利益), and a sentence naming no year is of the year its report's title
    names, unless it names the year next to it. "The first half of the fiscal year ending
    March 2024" is the first half of FY2024. Reverse proof: without the line's other
    names, to search by and to match the sentence with, the year is not found."""
    write_csv(
        tmp_path / "ir" / "contoso-segment-results-fy2025-10k.csv",
        [["(In millions) Year Ended June 30,", "2024"], ["Total Operating income", "109,433"]],
    )
    assert konica.ingest([tmp_path / "ir"]).failed == []
    # "operating income" is the other table's own name of the line, not the overview's
    question = "What was Konica Minolta's operating income for the fiscal year ended March 2024?"
    english = konica.ask(question, "kenji")
    assert english.status is Status.ANSWERED and "260億円" in english.answer, english.answer
    no_part_as_the_year(english.answer)
    half = konica.ask(
        "What were Konica Minolta's net sales in the first half of the fiscal year ending "
        "March 2024?",
        "kenji",
    )
    assert "552,763" in half.answer and "Q1–Q2 FY2024" in half.answer, half.answer
    cited = Citation("d", "Annual report 2024", "section=Results", "file:///d.md")
    assert figures_module._of_the_year("2024", "Revenue rose 3 % since the 2003 merger.", cited)
    assert not figures_module._of_the_year("2024", "Revenue was $10 bn in 2023.", cited)
    monkeypatch.setattr(figures_module, "_line_names", lambda metric, vocab: [])
    assert konica.ask(question, "kenji").status is Status.NOT_FOUND


def no_part_as_the_year(result_answer: str) -> None:
    """No amount stated for part of a year (the half year's 120億円, the quarter's 785), for
    another company (500億円) or as a forecast (300億円) stands in an answer about a whole
    year."""
    assert "120億円" not in result_answer and "785" not in result_answer.split("\n")[0]
    assert "500億円" not in result_answer and "300億円" not in result_answer
    assert "400億円" not in result_answer  # this year's plan, in the same section


def test_a_whole_years_figure_no_table_reports_is_quoted_from_the_document_that_states_it(
    konica: Clearance,
) -> None:
    """ "2024年3月期の営業利益は?" when the tables hold only the second quarter: the year's
    overview states it, so the answer quotes that sentence (numbers from its source)
    instead of "No figure found". A year no sentence states, and a year whose only
    sentence states a half year's amount, stay not found."""
    result = konica.ask("2024年3月期の営業利益はいくらでしたか?", "kenji")
    assert result.status is Status.ANSWERED, result.answer
    assert "260億円" in result.answer and "stated_in_prose" in result.flags
    assert result.citations[0].doc_id.endswith("konica-minolta-overview.md")
    no_part_as_the_year(result.answer)
    # Named as the overview's title names the company: still the operating profit's
    # sentence, not the sales sentence that names the company more often.
    named = konica.ask("コニカミノルタの2024年3月期の営業利益はいくらでしたか?", "kenji")
    assert "260億円" in named.answer and "1兆1,599億円" not in named.answer, named.answer
    # Asked in English: operating profit is the table's 営業利益 (clearance.glossary), and
    # the overview's sentence is read although "the fiscal year ended March" is not how
    # a Japanese report writes its year (2024年3月期).
    english = konica.ask(
        "What was Konica Minolta's operating profit for the fiscal year ended March 2024?",
        "kenji",
    )
    assert english.status is Status.ANSWERED, english.answer
    assert "260億円" in english.answer, english.answer
    no_part_as_the_year(english.answer)
    for question in (
        "2023年3月期の営業利益はいくらでしたか?",
        "2025年3月期の営業利益はいくらでしたか?",
        "2026年3月期の営業利益はいくらでしたか?",
    ):
        other = konica.ask(question, "kenji")
        assert other.status is Status.NOT_FOUND, (question, other.answer)
        assert "260億円" not in other.answer
        no_part_as_the_year(other.answer)


def test_a_whole_years_figure_is_looked_for_by_its_name_alone_too(
    konica: Clearance, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "What was Konica Minolta's revenue for the fiscal year ended March 2024?" (federal
    probe): searched with the question's words, the briefing's forecast paragraph ("今期は、
    売上高は横ばいの1兆1600億円としている") was all that was quoted, which is no year's figure,
    and the answer was "not found" beside a half year's. The line is then looked for by its
    name alone, which finds the summary stating the year. Here the first search is made to
    quote the forecast only; reverse proof: the second made to as well, not found."""
    question = "What was Konica Minolta's revenue for the fiscal year ended March 2024?"
    forecast = "今期は、売上高は横ばいの1兆1600億円としている。 [S1]"
    real = figures_module.FiguresRoute._stated_in_prose
    searched: list[str] = []

    def stated(self: Any, request: Any, query: Any, *, alone: bool = True) -> Any:
        original = self.quote

        def quote(r: Any) -> Any:
            searched.append(r.masked)
            found = original(r)
            if r.masked != query.metric or not alone:
                return replace(found, answer=forecast)
            return found

        self.quote = quote
        try:
            return real(self, request, query)
        finally:
            self.quote = original

    monkeypatch.setattr(figures_module.FiguresRoute, "_stated_in_prose", stated)
    result = konica.ask(question, "kenji")
    assert result.status is Status.ANSWERED and "1兆1,599億円" in result.answer, result.answer
    assert searched[-1] == "売上高"  # the line's name as the table writes it
    monkeypatch.setattr(
        figures_module.FiguresRoute,
        "_stated_in_prose",
        lambda self, request, query: stated(self, request, query, alone=False),
    )
    assert konica.ask(question, "kenji").status is Status.NOT_FOUND


def test_a_part_a_forecast_or_another_companys_sentence_is_never_the_years(
    konica: Clearance, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reverse proofs: were a half year's or a forecast's sentence taken as a whole year's,
    or another company's sentence as this one's, the checks above would catch it."""
    import clearance.answer.routes.figures as figures

    monkeypatch.setattr(figures, "states_whole_year_amount", lambda sentence: "億円" in sentence)
    # and a quarter's deck read as stating its year (its title names the year's end only)
    monkeypatch.setattr(figures, "_PART_REPORT", re.compile(r"(?!)"))
    for year in ("2025", "2026"):
        leaky = konica.ask(f"{year}年3月期の営業利益はいくらでしたか?", "kenji")
        with pytest.raises(AssertionError):
            no_part_as_the_year(leaky.answer)
    monkeypatch.undo()
    monkeypatch.setattr(figures, "_names_entity", lambda *args: True)
    leaky = konica.ask("2024年3月期の営業利益はいくらでしたか?", "kenji")
    with pytest.raises(AssertionError):
        no_part_as_the_year(leaky.answer)


def test_the_company_a_reports_title_names_does_not_choose_the_sentence(
    tmp_path: Path,
    settings_factory: Callable[..., Settings],
    store: SQLiteStore,
    write_directory: Callable[..., Path],
) -> None:
    """No table, only the year's overview: "コニカミノルタの…営業利益は?" quotes the operating
    profit's sentence, not the sales sentence that names the company ("コニカとミノルタ")
    with more of the question's terms. The report's title names the company; the question
    naming it says whom it asks about, not what."""
    corpus = tmp_path / "ir"
    corpus.mkdir()
    (corpus / "_meta.json").write_text(json.dumps({"acl": ["group:ir"]}), encoding="utf-8")
    (corpus / "overview.md").write_text(
        "# コニカミノルタ 2024年3月期 連結業績の概要\n\n## 当連結会計年度の総括\n\n"
        "当期の連結売上高は1兆1,599億円と、2003年のコニカとミノルタの経営統合以来最高の売上高となりました。\n\n"
        "## 決算会見\n\n営業利益は、大きな減損損失を計上した前期から大幅増の260億円となった。\n",
        encoding="utf-8",
    )
    engine = Clearance(settings_factory({}), store)
    assert engine.ingest([corpus]).failed == []
    engine.sync_directory(write_directory(tmp_path / "directory.json", {"kenji": ["ir"]}))
    result = engine.ask("コニカミノルタの2024年3月期の営業利益はいくらでしたか?", "kenji")
    assert "260億円" in result.answer and "1兆1,599億円" not in result.answer, result.answer


def test_a_line_asked_in_another_language_is_the_tables_own_line(app: Clearance) -> None:
    """ "What was BYD's revenue in the third quarter of 2023?" over a Chinese quarterly
    report: revenue is its 营业收入 (a standard statement line, clearance.glossary), and
    BYD is the 比亚迪 its table names (the file is called byd-…). A line the table does not
    hold is not found, never another line's figure."""
    answer = ask(app, "What was BYD's revenue in the third quarter of 2023?")
    assert "162,150,695,000" in answer and "营业收入" in answer, answer
    assert "3.58" in ask(app, "What was BYD's basic earnings per share in Q3 2023?")
    missing = app.ask("What was BYD's operating profit in Q3 2023?", "fay")
    assert missing.status is Status.NOT_FOUND, missing.answer
    assert not re.search(r"\d{3},\d{3}", missing.answer), missing.answer


def test_the_one_company_reporting_the_period_asked_is_assumed(app: Clearance) -> None:
    """Revenue is Microsoft's and (as 营业收入) BYD's line, but only Microsoft reports
    fiscal 2024: the answer is Microsoft's, saying so, not "which entity?"."""
    result = app.ask("What was revenue in fiscal 2024?", "fay")
    assert result.status is Status.ANSWERED, result.answer
    assert "245,122" in result.answer and "Microsoft" in result.answer
    assert any("the only one" in a for a in result.assumptions), result.assumptions


def test_a_quarter_under_dates_from_the_years_start_is_the_year_to_that_quarter(
    tmp_path: Path,
    settings_factory: Callable[..., Settings],
    store: SQLiteStore,
    write_directory: Callable[..., Path],
) -> None:
    """A 決算短信's "第2四半期" figures under "(2023年4月1日~2023年9月30日)" cover six
    months: they are labelled Q1–Q2 FY2024 (part of the year), never "Q2 2024", and the
    question for the second quarter gets them under that label. Reverse proof: a table that
    gives no dates keeps its quarter."""
    corpus = tmp_path / "ir"
    corpus.mkdir()
    (corpus / "_meta.json").write_text(json.dumps({"acl": ["group:ir"]}), encoding="utf-8")
    write_csv(
        corpus / "konica-minolta-2024-q2-tanshin.csv",
        [
            ["2024年3月期第2四半期の連結業績(2023年4月1日~2023年9月30日)", "売上高(百万円)"],
            ["2024年3月期第2四半期", "552,763"],
            ["2023年3月期第2四半期", "530,743"],
        ],
    )
    write_csv(
        corpus / "acme-2024-q2.csv",
        [["ACME 2024年3月期第2四半期", "売上高(百万円)"], ["2024年3月期第2四半期", "1,000"]],
    )
    engine = Clearance(settings_factory({}), store)
    assert engine.ingest([corpus]).failed == []
    engine.sync_directory(write_directory(tmp_path / "directory.json", {"kenji": ["ir"]}))
    periods = {(f.entity, f.value): f.period for f in engine.store.list_facts()}
    assert periods[("Konica Minolta", 552763.0)] == "Q1–Q2 FY2024"
    assert periods[("Konica Minolta", 530743.0)] == "Q1–Q2 FY2023"
    assert periods[("Acme", 1000.0)] == "Q2 2024"
    result = engine.ask(
        "What was Konica Minolta's revenue in the second quarter of fiscal 2024?", "kenji"
    )
    assert result.status is Status.ANSWERED, result.answer
    assert "552,763" in result.answer and "Q1–Q2 FY2024" in result.answer, result.answer
    assert "Q2 2024" not in result.answer.replace("Q1–Q2 FY2024", "")


def test_a_company_written_in_katakana_is_the_tables_latin_named_company(
    konica: Clearance, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "コニカミノルタの2024年3月期の上期って、売上高どれくらいだった?" over a table whose
    company is named by its file, in Latin letters (Konica Minolta): コニカミノルタ was read
    as a word narrowing the line, a line no table has, and the question was refused
    (federal probe). The katakana is the company's name, and the half year's figure is
    answered under its own label. "連結" (consolidated) narrows nothing either: the
    consolidated sales are the company's. Reverse proof: without reading the katakana as
    the name, the half year's figure is not answered."""
    half = konica.ask("コニカミノルタの2024年3月期の上期って、売上高どれくらいだった?", "kenji")
    assert half.status is Status.ANSWERED, half.answer
    assert "Konica Minolta Q1–Q2 FY2024" in half.answer and "552,763" in half.answer
    assert "Assuming" not in half.answer  # named, not assumed
    year = konica.ask("コニカミノルタの2024年3月期の連結売上高は?", "kenji")
    assert year.status is Status.ANSWERED and "1兆1,599億円" in year.answer, year.answer
    import clearance.answer.orchestrator as orchestrator

    monkeypatch.setattr(orchestrator, "names_in_katakana", lambda question, entities: {})
    leaky = konica.ask("コニカミノルタの2024年3月期の上期って、売上高どれくらいだった?", "kenji")
    assert "552,763" not in leaky.answer, leaky.answer


def test_a_rate_no_table_reports_is_quoted_with_the_sentences_aside(
    ir_engine: Callable[..., Clearance], tmp_path: Path
) -> None:
    """ "コニカミノルタの2024年3月期の売上高は前期比何%増えましたか" when the table holds only
    the second quarter: the year's overview states the change in an aside
    ("1兆1,599億円(前期比2.6%増)"), quoted as written. 前期比 is what the figure is compared
    with, not a second year asked. Reverse proofs: an amount asked is quoted without the
    aside, and a sentence stating no percentage does not answer a rate."""
    quarter = [
        ["2024年3月期第2四半期の連結業績(2023年4月1日~2023年9月30日)", "売上高(百万円)"],
        ["2024年3月期第2四半期", "552,763"],
    ]
    title = "# コニカミノルタ 2024年3月期 連結業績の概要\n\n"
    engine = ir_engine(
        quarter,
        {
            "overview.md": title
            + "当期の連結売上高は、円安の進行もあり1兆1,599億円(前期比2.6%増)となりました。\n"
        },
    )
    rate = engine.ask("コニカミノルタの2024年3月期の売上高は前期比何%増えましたか", "kenji")
    assert rate.status is Status.ANSWERED and "2.6%" in rate.answer, rate.answer
    assert "FY2025" not in rate.answer and "FY2023" not in rate.answer  # no second year
    amount = engine.ask("コニカミノルタの2024年3月期の売上高は?", "kenji")
    assert "1兆1,599億円" in amount.answer and "2.6%" not in amount.answer, amount.answer
    (tmp_path / "ir" / "overview.md").write_text(
        title + "当期の連結売上高は1兆1,599億円となりました。\n", encoding="utf-8"
    )
    assert engine.ingest([tmp_path / "ir"]).failed == []
    plain = engine.ask("コニカミノルタの2024年3月期の売上高は前期比何%増えましたか", "kenji")
    assert plain.status is not Status.ANSWERED or "1兆1,599億円" not in plain.answer, plain.answer


def test_a_part_of_the_year_names_the_row_its_table_gives_it(
    ir_engine: Callable[..., Clearance],
) -> None:
    """A 決算短信 table's periods are its rows ("2024年3月期第2四半期") and its columns name
    the metric ("事業貢献利益(百万円)"): asked for the whole year, the second quarter's
    figure is given under the row's label, as the source writes it, not the column's,
    which only repeats the line (federal probe). Reverse proof: a table whose columns are
    the periods still gives the column's heading (BYD's 年初至报告期末, above)."""
    engine = ir_engine(
        [
            ["2024年3月期第2四半期の連結業績(2023年4月1日~2023年9月30日)", "事業貢献利益(百万円)"],
            ["2024年3月期第2四半期", "2,288"],
        ]
    )
    result = engine.ask("コニカミノルタの2024年3月期の事業貢献利益は通期でいくら?", "kenji")
    assert result.status is Status.NOT_FOUND and "parts_of_period" in result.flags
    assert "(part of FY2024 only; row 2024年3月期第2四半期)" in result.answer, result.answer
    assert "headed 事業貢献利益" not in result.answer


def test_the_plainest_line_ending_in_a_measure_is_asked_by_its_other_names_too(
    app: Clearance, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "What was BYD's net profit in Q3 2023?" and "How much was net income?" beside a
    Chinese report whose line is 归属于上市公司股东的净利润: 净利润 named it, but "net
    profit", the same measure in English (clearance.glossary), named nothing, and the
    question was refused. The measure's other names name the plainest line too, and the
    answer says the line as its table writes it. Reverse proof: with the Chinese name
    alone, the English question gets no figure."""
    answer = ask(app, "What was BYD's net profit in Q3 2023?")
    assert "10,412,751,000" in answer and "归属于上市公司股东的净利润" in answer, answer
    assert "9,653,906,000" not in answer
    unnamed = app.ask("How much was net income?", "fay")
    assert unnamed.status is Status.CLARIFY and "period" in unnamed.missing, unnamed.answer
    byd = ["归属于上市公司股东的净利润", "归属于上市公司股东的扣除非经常性损益的净利润"]
    assert "net profit" in structured_module._head_name(byd[0], byd)
    real = structured_module._head_name
    monkeypatch.setattr(
        structured_module, "_head_name", lambda metric, metrics: real(metric, metrics)[:1]
    )
    assert "10,412,751,000" not in app.ask("What was BYD's net profit in Q3 2023?", "fay").answer
