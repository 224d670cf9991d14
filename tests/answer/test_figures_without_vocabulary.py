"""Figure questions over published tables with **no** ``[facts]`` vocabulary configured: an
annual report's segment tables with bare-year columns, a national budget with an "Actual,
Oct–Jun FY2023" column, a Japanese results deck (2024年3月期, 上半期) and a Chinese interim
report (上半年). Every case is one a person rejected in issue 22:

* a partial period sold as the full one ("receipts in FY2023" answered from Oct–Jun);
* a qualifier dropped ("iPhone net sales", "Services net sales" answered with the total);
* an unasked comparison ("Greater China segment" answered with the company total beside);
* a needless clarification (only one entity holds "net interest"), and a wrong one
  ("Microsoft's revenue" over Apple's documents offered Apple's entities);
* a workbook whose columns are bare years gave no fact and no warning.

Every number an answer states must be a stored fact's value, and an entity found only in a
document the caller cannot read is neither offered nor named (with a reverse proof).
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from clearance.answer.result import AnswerResult, Route, Status
from clearance.app import Clearance
from clearance.config import Settings
from clearance.ingest.facts import format_number
from clearance.llm.mock import MockProvider
from clearance.store.sqlite import SQLiteStore

APPLE_TITLE = "Apple Inc. — Form 10-K 2024"
BUDGET_TITLE = "United States Federal Budget — Mid-Session Review FY2024"


def write_xlsx(path: Path, sheets: dict[str, list[list[Any]]]) -> Path:
    book = openpyxl.Workbook()
    book.remove(book.active)
    for name, rows in sheets.items():
        sheet = book.create_sheet(name)
        for row in rows:
            sheet.append(row)
    book.save(str(path))
    return path


def folder(root: Path, name: str, acl: list[str]) -> Path:
    path = root / name
    path.mkdir(parents=True)
    (path / "_meta.json").write_text(json.dumps({"acl": acl}), encoding="utf-8")
    return path


def write_corpus(root: Path) -> dict[str, str]:
    """The published tables, each with its title; returns file name → title."""
    reports = folder(root, "reports", ["group:finance"])
    write_xlsx(
        reports / "apple-10k-2024.xlsx",
        {
            # Annual reports head their columns with bare years.
            "Net sales by category": [
                ["Net sales by category ($ in millions)", None, None, None],
                [None, 2024, 2023, 2022],
                ["iPhone", 201183, 200583, 205489],
                ["Mac", 29984, 29357, 40177],
                ["iPad", 26694, 28300, 29292],
                ["Total net sales", 391035, 383285, 394328],
            ],
            "Net sales by segment": [
                ["Net sales by reportable segment ($ in millions)", None, None],
                [None, 2024, 2023],
                ["Americas", 167045, 162560],
                ["Europe", 101328, 94294],
                ["Greater China", 66952, 72559],
            ],
        },
    )
    budget = folder(root, "budget", ["group:finance"])
    with (budget / "budget-totals.csv").open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(
            [
                ["(USD bn)", "Actual FY2022", "Actual, Oct–Jun FY2023", "Estimate FY2024"],
                ["Receipts", "4,897", "3,413", "5,010"],
                ["Outlays", "6,272", "4,700", "6,900"],
                ["Net interest", "475", "496", "745"],
            ]
        )
    decks = folder(root, "decks", ["group:finance"])
    write_xlsx(
        decks / "acme-kessan.xlsx",
        {
            "連結業績": [
                ["2025年3月期 決算概要", None, None],
                ["(単位：百万円)", "上半期", "通期"],
                ["売上高", 1200, 2600],
                ["営業利益", 150, 320],
            ]
        },
    )
    cn = folder(root, "cn", ["group:finance"])
    write_xlsx(
        cn / "interim-2024.xlsx",
        {
            "主要数据": [
                ["项目", "2024年上半年", "2023年上半年"],
                ["营业收入", 5120, 4870],
            ]
        },
    )
    board = folder(root, "board", ["group:board"])
    with (board / "initech-forecast.csv").open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([["Revenue (USD m)", "2024", "2025"], ["Initech", "900", "950"]])
    return {
        "apple-10k-2024.xlsx": APPLE_TITLE,
        "budget-totals.csv": BUDGET_TITLE,
        "acme-kessan.xlsx": "ACME Japan 2025年3月期 決算説明資料",
        "interim-2024.xlsx": "华星科技有限公司 2024年半年度报告",
        "initech-forecast.csv": "Initech Corp — board forecast",
    }


@pytest.fixture
def corpus_app(
    tmp_path: Path,
    settings_factory: Callable[..., Settings],
    store: SQLiteStore,
    write_directory: Callable[..., Path],
) -> Iterator[tuple[Clearance, list[Any]]]:
    titles = write_corpus(tmp_path / "corpus")
    manifest = tmp_path / "manifest.jsonl"
    manifest.write_text(
        "".join(
            json.dumps({"path": str(p), "title": titles[p.name]}) + "\n"
            for p in sorted((tmp_path / "corpus").rglob("*"))
            if p.name in titles
        ),
        encoding="utf-8",
    )
    # No [facts] vocabulary at all: the defaults a new user starts with.
    app = Clearance(settings_factory({}), store, provider=MockProvider())
    report = app.ingest([], manifest=manifest)
    assert report.failed == []
    app.sync_directory(
        write_directory(
            tmp_path / "directory.json", {"fay": ["finance"], "bo": ["finance", "board"]}
        )
    )
    yield app, list(report.results)


def ask(app: Clearance, question: str, user: str = "fay") -> AnswerResult:
    return app.ask(question, user)


def stored_values(app: Clearance) -> set[str]:
    return {format_number(f.value) for f in app.store.list_facts()}


def assert_numbers_are_facts(app: Clearance, result: AnswerResult, question: str) -> None:
    """Every number in the answer is a stored fact's value, or a year the answer's periods
    name: nothing is made up."""
    text = re.sub(r"\[S\d+\]", " ", result.answer)
    for citation in result.citations:
        text = text.replace(citation.locator, " ").replace(citation.title, " ")
    allowed = stored_values(app)
    for number in re.findall(r"\d[\d,]*(?:\.\d+)?", text):
        if re.fullmatch(r"(?:19|20)\d{2}", number) or number in question:
            continue
        assert number in allowed, (number, result.answer)


# --------------------------------------------------------------------------- ingest


def test_bare_year_columns_give_facts_and_nothing_is_lost_silently(
    corpus_app: tuple[Clearance, list[Any]],
) -> None:
    app, results = corpus_app
    facts = app.store.list_facts()
    by = {(f.entity, f.period, f.metric, f.channel): f.value for f in facts}
    assert by[("Apple Inc.", "FY2022", "net sales", "iPhone")] == 205489
    assert by[("Apple Inc.", "FY2024", "net sales", "total")] == 391035
    assert by[("Apple Inc.", "FY2024", "net sales", "Greater China")] == 66952
    assert by[("ACME Japan", "H1 2025", "売上高", "total")] == 1200
    assert by[("ACME Japan", "FY2025", "売上高", "total")] == 2600
    assert by[("华星科技有限公司", "H1 2024", "营业收入", "total")] == 5120
    # the partial column is its own period, never FY2023
    assert by[("United States Federal Budget", "Oct–Jun FY2023", "receipts", "total")] == 3413
    assert not [f for f in facts if f.period == "FY2023" and f.metric == "receipts"]
    assert {f.unit for f in facts if f.metric == "receipts"} == {"USD bn"}
    # every result of a table whose figures were all taken carries no fact warning
    assert all(not w.startswith("facts:") for r in results for w in r.warnings), [
        r.warnings for r in results
    ]


def test_a_table_without_facts_and_an_unread_header_are_warned_per_table(
    tmp_path: Path, settings_factory: Callable[..., Settings], store: SQLiteStore
) -> None:
    corpus = folder(tmp_path / "c", "x", ["everyone"])
    with (corpus / "odd.csv").open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([["Office", "Desks"], ["Tokyo", "40"]])
    with (corpus / "years.csv").open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([["", "FY2023", "FY20245"], ["Revenue", "10", "12"]])
    app = Clearance(settings_factory({}), store, provider=MockProvider())
    report = app.ingest([corpus])
    warnings = {Path(r.source).name: r.warnings for r in report.results}
    assert any(
        "no header, row label or title reads as a period" in w for w in warnings["odd.csv"]
    ), warnings
    assert any("header 'FY20245' is not read as a period" in w for w in warnings["years.csv"]), (
        warnings
    )


# --------------------------------------------------------------------------- wrong figures


def test_a_partial_period_never_answers_the_whole_year(
    corpus_app: tuple[Clearance, list[Any]],
) -> None:
    app, _ = corpus_app
    whole = ask(app, "Federal receipts in FY2023?")
    assert whole.status is Status.NOT_FOUND, whole.answer
    first, _, rest = whole.answer.partition("\n")
    assert first.endswith("No figure found for receipts of United States Federal Budget in FY2023.")
    # The part that is reported is given as that part, never as the year.
    assert "3,413" not in first
    assert "Oct–Jun FY2023 (part of FY2023 only; headed Actual Oct–Jun FY2023)" in rest, rest
    assert "parts_of_period" in whole.flags

    part = ask(app, "Federal receipts Oct–Jun FY2023?")
    assert part.status is Status.ANSWERED, part.answer
    assert "USD 3,413 bn" in part.answer
    assert "Oct–Jun FY2023 (part of FY2023 only)" in part.answer
    assert_numbers_are_facts(app, part, "Federal receipts Oct–Jun FY2023?")

    # a full year of the same table is still answered
    full = ask(app, "Federal receipts in FY2022?")
    assert full.status is Status.ANSWERED and "USD 4,897 bn" in full.answer


def test_a_half_year_column_is_the_half_not_the_year(
    corpus_app: tuple[Clearance, list[Any]],
) -> None:
    app, _ = corpus_app
    half = ask(app, "ACME Japanの2025年3月期上半期の売上高は？")
    assert half.status is Status.ANSWERED, half.answer
    assert "1,200" in half.answer and "2,600" not in half.answer
    year = ask(app, "ACME Japanの2025年3月期の売上高は？")
    assert year.status is Status.ANSWERED, year.answer
    assert "2,600" in year.answer and "1,200" not in year.answer
    cn = ask(app, "华星科技2024年上半年营业收入多少？")
    assert cn.status is Status.ANSWERED, cn.answer
    assert "5,120" in cn.answer and "4,870" not in cn.answer
    cn_year = ask(app, "华星科技2024年营业收入多少？")
    assert cn_year.status is Status.NOT_FOUND, cn_year.answer
    first, _, rest = cn_year.answer.partition("\n")
    assert "5,120" not in first and "H1 2024" in rest and "5,120" in rest


def test_a_qualified_metric_is_that_line_or_not_found_never_the_total(
    corpus_app: tuple[Clearance, list[Any]],
) -> None:
    app, _ = corpus_app
    iphone = ask(app, "Apple's iPhone net sales in 2022?")
    assert iphone.status is Status.ANSWERED, iphone.answer
    assert "205,489" in iphone.answer and "394,328" not in iphone.answer
    assert_numbers_are_facts(app, iphone, "Apple's iPhone net sales in 2022?")

    services = ask(app, "Apple's Services net sales in 2022?")
    assert services.status is Status.NOT_FOUND, services.answer
    assert "Services net sales" in services.answer
    assert "394,328" not in services.answer and services.citations == ()

    total = ask(app, "Apple's net sales in 2022?")
    assert total.status is Status.ANSWERED and "394,328" in total.answer


def test_no_comparison_unless_asked(corpus_app: tuple[Clearance, list[Any]]) -> None:
    app, _ = corpus_app
    segment = ask(app, "Net sales in the Greater China segment in 2024?")
    assert segment.status is Status.ANSWERED, segment.answer
    assert "66,952" in segment.answer
    assert "391,035" not in segment.answer and " vs " not in segment.answer
    assert "%" not in segment.answer

    # two periods the question names are set side by side, and only those two
    both = ask(app, "Apple's iPhone net sales in 2023 and 2024?")
    assert both.route is Route.MULTI
    assert "FY2024 vs FY2023: up $600 million" in both.answer, both.answer
    assert "391,035" not in both.answer


def test_one_entity_with_the_figure_is_assumed_and_said(
    corpus_app: tuple[Clearance, list[Any]],
) -> None:
    app, _ = corpus_app
    result = ask(app, "How much was net interest in FY2022?")
    assert result.status is Status.ANSWERED, result.answer
    assert result.assumptions == (
        "entity: United States Federal Budget (the only one with this figure)",
    )
    assert result.answer.startswith("Assuming United States Federal Budget: ")
    assert "USD 475 bn" in result.answer
    # FY2024 has only an estimate: never answered as what happened
    estimate = ask(app, "How much was net interest in FY2024?")
    assert "745" not in estimate.answer


def test_an_entity_not_in_the_corpus_is_not_found_and_no_other_is_offered(
    corpus_app: tuple[Clearance, list[Any]],
) -> None:
    app, _ = corpus_app
    result = ask(app, "Microsoft's net sales in fiscal 2024?")
    assert result.status is Status.NOT_FOUND, result.answer
    assert "Microsoft" in result.answer
    assert result.options == () and "Apple" not in result.answer
    assert result.citations == ()


def test_an_entity_only_in_an_unreadable_document_is_never_offered_or_named(
    corpus_app: tuple[Clearance, list[Any]],
) -> None:
    """Initech's figures are in the board's forecast only. For fay (finance) Initech does
    not exist: not recognised, not offered, not named beyond the question's own words.
    Reverse proof: bo, who reads the board folder, gets Initech's figure."""
    app, _ = corpus_app
    clarify = ask(app, "Revenue in 2025, how much?")
    assert "Initech" not in clarify.answer and "Initech Corp" not in clarify.options
    refused = ask(app, "Initech revenue in 2025?")
    assert refused.status is not Status.ANSWERED
    assert "950" not in refused.answer and "Initech Corp" not in refused.answer
    assert refused.citations == ()

    board = ask(app, "Initech revenue in 2025?", user="bo")
    assert board.status is Status.ANSWERED, board.answer
    assert "950" in board.answer and "Initech Corp" in board.answer


def test_another_company_reporting_part_of_the_year_asked_means_asking_which(
    corpus_app: tuple[Clearance, list[Any]],
) -> None:
    """ "Revenue in 2024?" where Apple reports the whole of 2024 and 华星 the first half of
    it: the question is about either, so it asks which, instead of assuming the company
    with the whole year. Reverse proof: for 2022, which only Apple reports (in whole or in
    part), Apple is assumed and said."""
    app, _ = corpus_app
    both = ask(app, "What was revenue in 2024?")
    assert both.status is Status.CLARIFY, both.answer
    assert both.assumptions == () and "201,183" not in both.answer
    apple = ask(app, "What was revenue in 2022?")
    assert apple.status is Status.ANSWERED, apple.answer
    assert "Assuming Apple Inc.: " in apple.answer and "394,328" in apple.answer
