"""Figure questions over long-format tables with no ``[facts]`` vocabulary: a budget's
actuals published one row per component, category and fiscal year (``component | category
| subcategory | fiscal_year | actual_value``), as statistical agencies and data repositories
publish them, with a second file giving each year's share of GDP. Every case is one the
held-out set over such files found:

* the rows gave no fact, and figure questions were answered by quoting table rows;
* a data file's name ("actuals") is no one's name, and must not be stated as the entity;
* "total federal revenues": "federal" names whose budget it is, not a line of revenue,
  while in a tax table with a "U.S. federal" line it does narrow the metric;
* "outlays" asked for a line the table calls "outlay";
* "the deficit as a percentage of GDP": the share is asked, never the amount, and "GDP"
  is no entity;
* the same figure printed to fewer places in a second file is no disagreement;
* "excise tax revenues" asked for the line ``Excise Taxes``;
* "outlays for Fannie Mae and Freddie Mac", a line no fact carries, was answered with the
  total outlays: a wrong figure.

Each answer's numbers must be stored fact values (nothing made up), with reverse proofs.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import clearance.answer.intent as intent_module
import clearance.answer.routes.figures as figures_module
import clearance.answer.structured as structured_module
from clearance.answer.intent import MetricQuery
from clearance.answer.result import AnswerResult, Route, Status
from clearance.answer.structured import ToolResult, _number_forms
from clearance.app import Clearance
from clearance.cli.facts_cmds import suggest
from clearance.config import FactSettings, Settings
from clearance.llm.mock import MockProvider
from clearance.model import Document, Fact
from clearance.store.sqlite import SQLiteStore
from factories import document

HEADER = ["component", "category", "subcategory", "fiscal_year", "actual_value"]
ACTUALS = [
    ["revenue", "Total", "Total", "2009", "2104.989"],
    ["revenue", "Total", "Total", "2010", "2162.706"],
    ["revenue", "Excise Taxes", "Excise Taxes", "2010", "66.909"],
    ["outlay", "Total", "Total", "2015", "3688.383"],
    ["outlay", "Mandatory", "Medicare", "2015", "539.873"],
    ["outlay", "Mandatory", "Total Mandatory", "2015", "2299.866"],
    ["deficit", "Total", "Total", "2009", "-1412.686"],
    ["debt", "Total", "Total", "1990", "2411.558"],
    ["debt", "Total", "Total", "2020", "21016.7"],
]
SHARES = [
    ["deficit", "Total", "Total", "2009", "-1412.7", "14467.3", "-9.8"],
    ["deficit", "Total", "Total", "2010", "-1294.4", "14837.4", "-8.7"],
]


def write_csv(path: Path, rows: list[list[str]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows)


def write_corpus(root: Path) -> None:
    data = root / "budget"
    data.mkdir(parents=True)
    (data / "_meta.json").write_text(json.dumps({"acl": ["group:finance"]}), encoding="utf-8")
    write_csv(data / "actuals.csv", [HEADER, *ACTUALS])
    write_csv(
        data / "deficit_actuals_pct_GDP.csv",
        [[*HEADER, "GDP", "actuals_pct_GDP"], *SHARES],
    )
    world = root / "world"
    world.mkdir()
    (world / "_meta.json").write_text(json.dumps({"acl": ["group:tax"]}), encoding="utf-8")
    write_csv(
        world / "gdp.csv",
        [
            ["Country Name", "Country Code", "Year", "Value"],
            ["Japan", "JPN", "2015", "4444930651964.18"],
            ["Japan", "JPN", "2020", "5055587093501.588"],
            ["Germany", "DEU", "2020", "3940142541354.1"],
        ],
    )
    tax = root / "tax"
    tax.mkdir()
    (tax / "_meta.json").write_text(json.dumps({"acl": ["group:tax"]}), encoding="utf-8")
    write_csv(
        tax / "initrode-income-tax.csv",
        [
            ["Income tax provision ($ in millions)", "2024", "2023"],
            ["U.S. federal", "100", "90"],
            ["State", "20", "18"],
            ["Total income tax provision", "120", "108"],
        ],
    )
    write_csv(
        tax / "globex-results.csv",
        [["Year", "Revenue (USD m)", "Operating profit (USD m)"], ["2023", "800", "95"]],
    )


@pytest.fixture
def app(
    tmp_path: Path,
    settings_factory: Callable[..., Settings],
    store: SQLiteStore,
    write_directory: Callable[..., Path],
) -> Iterator[Clearance]:
    write_corpus(tmp_path / "corpus")
    # No [facts] vocabulary at all: the defaults a new user starts with.
    engine = Clearance(settings_factory({}), store, provider=MockProvider())
    report = engine.ingest([tmp_path / "corpus" / n for n in ("budget", "tax", "world")])
    assert report.failed == []
    engine.sync_directory(
        write_directory(
            tmp_path / "directory.json", {"fay": ["finance"], "tom": ["finance", "tax"]}
        )
    )
    engine.warnings = [w for r in report.results for w in r.warnings]  # type: ignore[attr-defined]
    yield engine


def ask(app: Clearance, question: str, user: str = "fay") -> AnswerResult:
    return app.ask(question, user)


def facts_by(app: Clearance, doc: str) -> dict[tuple[str, str, str, str, str], float]:
    return {
        (f.entity, f.period, f.metric, f.channel, f.unit): f.value
        for f in app.store.list_facts(f"files:{doc}")
    }


def test_a_long_format_table_gives_one_fact_per_row_and_value_column(app: Clearance) -> None:
    actuals = facts_by(app, "actuals.csv")
    # the period from the year column, what is measured from the first label, the line
    # from the most specific label that is no total; a data file's name is no entity
    assert actuals[("", "FY2009", "revenue", "total", "")] == 2104.989
    assert actuals[("", "FY2010", "revenue", "Excise Taxes", "")] == 66.909
    assert actuals[("", "FY2015", "outlay", "Medicare", "")] == 539.873
    assert actuals[("", "FY2015", "outlay", "Mandatory", "")] == 2299.866  # Total Mandatory
    assert len(actuals) == len(ACTUALS)
    shares = facts_by(app, "deficit_actuals_pct_GDP.csv")
    assert shares[("", "FY2009", "deficit", "total", "%")] == -9.8
    assert shares[("", "FY2009", "deficit", "total", "")] == -1412.7
    # a column headed by what it measures is that measure, broken down by the lines only
    # (the component names what actual_value measures, not GDP)
    assert shares[("", "FY2009", "GDP", "total", "")] == 14467.3
    assert not [w for w in app.warnings if "deficit_actuals_pct_GDP" in w], app.warnings  # type: ignore[attr-defined]
    locator = next(
        f.locator for f in app.store.list_facts("files:actuals.csv") if f.value == 66.909
    )
    assert "row=revenue / Excise Taxes / Excise Taxes / 2010" in locator
    assert "col=actual_value" in locator
    # an unnamed entity has no name to propose for the vocabulary
    assert "" not in suggest(app.store.list_facts(), FactSettings())["entities"]
    # a column of years beside columns headed by what they measure is read as before
    globex = facts_by(app, "globex-results.csv")
    assert globex[("Globex", "FY2023", "revenue", "total", "USD m")] == 800


def test_a_long_format_table_without_a_year_column_gives_no_fact_and_says_so(
    tmp_path: Path, settings_factory: Callable[..., Settings], store: SQLiteStore
) -> None:
    """Reverse proof of the first test: the same rows with the year column headed as a
    note are no long-format table; nothing is guessed, and the operator hears why."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "_meta.json").write_text(json.dumps({"acl": ["everyone"]}), encoding="utf-8")
    write_csv(folder / "actuals.csv", [[*HEADER[:3], "note", HEADER[4]], *ACTUALS])
    engine = Clearance(settings_factory({}), store, provider=MockProvider())
    report = engine.ingest([folder])
    assert store.list_facts("files:actuals.csv") == []
    warnings = [w for r in report.results for w in r.warnings]
    assert any("reads as a period" in w for w in warnings), warnings


def test_a_figure_of_a_table_naming_no_one_is_stated_without_an_entity(app: Clearance) -> None:
    question = "What were total federal revenues in fiscal year 2009?"
    found = ask(app, question)
    assert found.status is Status.ANSWERED, found.answer
    assert found.route is Route.STRUCTURED
    assert found.answer.startswith("Revenue in FY2009 was 2,104.989 [S1].")
    assert "'s" not in found.answer and "Assuming" not in found.answer
    assert [c.doc_id for c in found.citations] == ["files:actuals.csv"]

    missing = ask(app, "What was the deficit in fiscal year 1980?")
    assert missing.status is Status.NOT_FOUND
    assert missing.answer.endswith("No figure found for deficit in FY1980."), missing.answer

    # a line no row carries is still not found, never the total
    iphone = ask(app, "What were iPhone revenues in 2009?")
    assert iphone.status is Status.NOT_FOUND and "2,104.989" not in iphone.answer


def test_federal_narrows_nothing_unless_a_line_is_called_so(
    app: Clearance, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "federal" names whose budget it is ("total federal revenues"), but for a reader of
    a tax table with a "U.S. federal" line, "the federal income tax provision" is that
    line's, and the total (120) never answers it; for that reader "federal" narrows the
    budget's revenue too (not found, never a guess). Decided from what the caller may
    read only. Reverse proof: with "federal" never narrowing, the total is given."""
    assert ask(app, "What were total federal revenues in fiscal year 2009?").status is (
        Status.ANSWERED
    )
    question = "What was Initrode's federal income tax provision in 2024?"
    narrowed = ask(app, question, "tom")
    assert "120" not in narrowed.answer, narrowed.answer
    assert ask(app, "What were total federal revenues in fiscal year 2009?", "tom").status is (
        Status.NOT_FOUND
    )
    monkeypatch.setattr(
        intent_module.RuleIntentParser,
        "__init__",
        _issuer_everywhere(intent_module.RuleIntentParser.__init__),
    )
    leaky = ask(app, question, "tom")
    assert "120" in leaky.answer, leaky.answer


def _issuer_everywhere(init: Callable[..., None]) -> Callable[..., None]:
    def patched(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self._issuer_words = frozenset({"federal"})  # whatever the lines are called

    return patched


def test_a_line_asked_for_in_the_plural_is_found(app: Clearance) -> None:
    medicare = ask(app, "What were Medicare outlays in 2015?")
    assert medicare.status is Status.ANSWERED and medicare.route is Route.STRUCTURED
    assert "539.873" in medicare.answer and "3,688.383" not in medicare.answer
    assert _number_forms("outlay") == ("outlays",)
    assert _number_forms("revenues") == ("revenue",)
    assert _number_forms("Customs Duties") == ("Customs Duty",)
    assert _number_forms("liability") == ("liabilities",)
    assert _number_forms("EBITDA") == () and _number_forms("売上高") == ()


def test_a_line_is_read_in_either_number(app: Clearance, monkeypatch: pytest.MonkeyPatch) -> None:
    """ "What were excise tax revenues in fiscal year 2000?" was not found beside the line
    ``Excise Taxes`` (GitLab set, third probe file): a line was read only as the table
    writes it, where a metric is read in either number. Reverse proof: with lines read only
    as written, the same question finds no figure."""
    excise = ask(app, "What were excise tax revenues in fiscal year 2010?")  # 2000 there
    assert excise.status is Status.ANSWERED, excise.answer
    assert "66.909" in excise.answer and "2,162.706" not in excise.answer
    real = structured_module._number_forms
    # the table's lines are written in Title Case, its measures in lower case
    monkeypatch.setattr(
        structured_module, "_number_forms", lambda n: () if n[:1].isupper() else real(n)
    )
    assert "66.909" not in ask(app, "What were excise tax revenues in fiscal year 2010?").answer


def test_a_name_no_fact_carries_is_never_answered_with_the_total(
    app: Clearance, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "What were outlays for Fannie Mae and Freddie Mac in fiscal year 2010?" was answered
    with the year's total outlays (GitLab set, third probe file): the table names no one and
    no slot was missing, so the name the question gives the figure was ignored. A wrong
    figure. It is not found, and the not-found names it. Reverse proof: with the name
    ignored, the total is given."""
    question = "What were outlays for Fannie Mae and Freddie Mac in fiscal year 2015?"
    result = ask(app, question)
    assert result.status is Status.NOT_FOUND, result.answer
    assert "3,688.383" not in result.answer and "Fannie Mae" in result.answer, result.answer
    total = ask(app, "What were total outlays in fiscal year 2015?")
    assert total.status is Status.ANSWERED and "3,688.383" in total.answer, total.answer
    # whose count it is, or in what, is no name the figure is of
    for asked in (
        "What were outlays according to CBO in fiscal year 2015?",
        "What were outlays in fiscal year 2015, in USD?",
    ):
        said = ask(app, asked)
        assert said.status is Status.ANSWERED and "3,688.383" in said.answer, said.answer
    monkeypatch.setattr(figures_module, "_unnamed", lambda question, intent, parts: False)
    assert "3,688.383" in ask(app, question).answer


def test_a_share_asked_for_is_the_percentage_never_the_amount(app: Clearance) -> None:
    share = ask(app, "What was the deficit as a percentage of GDP in fiscal year 2009?")
    assert share.status is Status.ANSWERED, share.answer
    assert "-9.8%" in share.answer and "1,412" not in share.answer
    amount = ask(app, "What was the deficit in fiscal year 2009?")
    assert "-1,412.686" in amount.answer and "%" not in amount.answer
    # no table gives debt as a share: the figure route does not give the amount for it
    debt = ask(app, "What was debt as a share of GDP in fiscal year 2020?")
    assert "was 21,016.7" not in debt.answer, debt.answer


def test_relative_to_gdp_is_a_share(app: Clearance, monkeypatch: pytest.MonkeyPatch) -> None:
    """ "How big was the deficit in 2009 relative to GDP?" got the deficit and GDP in
    dollars (a new variant of the GitLab set's figures): "relative to" asks for the
    share. Reverse proof: without reading "relative to", the amount is given."""
    question = "How big was the deficit in 2009 relative to GDP?"
    share = ask(app, question)
    assert "-9.8%" in share.answer and "1,412" not in share.answer, share.answer
    pattern = intent_module.SHARE_OF.pattern.replace(r"|\b(?:relative|in\s+relation)\s+to", "")
    assert pattern != intent_module.SHARE_OF.pattern
    monkeypatch.setattr(intent_module, "SHARE_OF", re.compile(pattern))
    monkeypatch.setattr(figures_module, "SHARE_OF", intent_module.SHARE_OF)
    assert "-9.8%" not in ask(app, question).answer


def test_receipts_are_a_budgets_revenue(app: Clearance, monkeypatch: pytest.MonkeyPatch) -> None:
    """ "What were total receipts in FY 2025?" (GitLab probe) was refused: a budget's data
    file calls the line revenue, and budget documents call it receipts. Receipts are a weak
    name of revenue (``statement-lines.toml``): a name of it only for tables naming no one,
    and only where no table has a line called so. Reverse proof: without weak names, the
    figure is not given."""
    question = "What were total federal receipts in fiscal year 2010?"
    assert "2,162.706" in ask(app, question).answer
    monkeypatch.setattr(structured_module, "_weak_names", lambda metric, metrics, unnamed: ())
    assert "2,162.706" not in ask(app, question).answer


def _fact(value: float, raw: str, doc: str) -> tuple[Fact, Document]:
    fact = Fact("", "FY1990", "debt", "total", value, "", f"files:{doc}", "row=1", raw)
    return fact, document(f"files:{doc}", corpus="budget", title=doc)


def test_a_figure_printed_to_fewer_places_elsewhere_is_no_disagreement(app: Clearance) -> None:
    debt = ask(app, "What was the debt in 1990?")
    assert debt.answer.count("2,411.558") == 1 and "Another source" not in debt.answer
    query = MetricQuery("debt", "", "FY1990")
    rounded = ToolResult(
        "found", query, (_fact(2411.558, "2411.558", "a.csv"), _fact(2411.6, "2411.6", "b.csv"))
    )
    assert rounded.disagreements == ()
    # reverse proof: a value that is not the other rounded is a disagreement
    other = ToolResult(
        "found", query, (_fact(2411.558, "2411.558", "a.csv"), _fact(2411.7, "2411.7", "b.csv"))
    )
    assert [f.value for f, _ in other.disagreements] == [2411.7]
    whole = ToolResult(
        "found", query, (_fact(2411.558, "2411.558", "a.csv"), _fact(2412, "2,412", "b.csv"))
    )
    assert whole.disagreements == ()
    # cells as written not kept: only equal values agree
    unwritten = ToolResult(
        "found", query, (_fact(2411.558, "", "a.csv"), _fact(2411.6, "", "b.csv"))
    )
    assert [f.value for f, _ in unwritten.disagreements] == [2411.6]


def test_a_budget_line_is_asked_by_its_names_in_english_and_japanese(app: Clearance) -> None:
    """ "2009会計年度の米国連邦政府の財政赤字": 会計年度 is the fiscal year, 財政赤字 the deficit
    (src/clearance/data/statement-lines.toml), and 米国連邦政府 whose budget it is, which
    narrows nothing, as "federal" does not; "the budget deficit" is the deficit, where a
    budget channel ("budget revenue") stays a plan. Reverse proof: a government's line
    that no row carries (歳出 of Medicare, written メディケア) is not the total."""
    for question in (
        "2009会計年度の米国連邦政府の財政赤字はいくらでしたか?",
        "2009会計年度の財政赤字はいくらでしたか?",
        "What was the budget deficit in fiscal year 2009?",
        "What was the federal budget deficit in fiscal year 2009?",
    ):
        answer = ask(app, question)
        assert answer.status is Status.ANSWERED, (question, answer.answer)
        assert "-1,412.686" in answer.answer, answer.answer
    assert ask(app, "2010年度の歳入はいくらでしたか?").answer.startswith(
        "Revenue in FY2010 was 2,162.706"
    )
    assert "Medicare" in ask(app, "What was Medicare spending in fiscal year 2015?").answer
    medicare = ask(app, "2015会計年度のメディケアの歳出はいくらでしたか?")
    assert "3,688.383" not in medicare.answer and medicare.status is not Status.ANSWERED
    assert ask(app, "What was budget revenue in fiscal year 2009?").status is Status.NOT_FOUND
    federal_iphone = ask(app, "What was federal iPhone revenue in fiscal year 2009?")
    assert federal_iphone.status is Status.NOT_FOUND, federal_iphone.answer
    assert "iPhone revenue" in federal_iphone.answer


def test_no_entity_is_asked_for_when_no_table_the_caller_reads_names_one(app: Clearance) -> None:
    """fay reads only the budget's files, which name no one: a question naming no figure is
    asked which figure, never which entity (there is none to name). tom also reads a
    company's tax table: for him the entity is asked too."""
    fay = ask(app, "What was the total for fiscal year 2009?")
    assert fay.status is Status.CLARIFY
    assert "which figure you mean" in fay.answer and "entity" not in fay.answer
    tom = ask(app, "What was the total for fiscal year 2024?", "tom")
    assert tom.status is Status.CLARIFY and "entity" in tom.answer, tom.answer


def test_a_line_asked_without_its_measure_is_of_the_one_measure_holding_it(
    app: Clearance,
) -> None:
    """ "How much did the government spend on Medicare?", "What did excise taxes raise?":
    a verb, or nothing at all, says what is measured, and only one measure the caller may
    read holds the line (outlays hold Medicare, revenue holds excise taxes). The figure is
    given with the measure assumed and said, never a question back. Reverse proofs: a line
    two measures hold for the year asked ("the total": revenue and the deficit in 2009)
    is still asked about, and a year the line has no figure for is not found, never
    answered by another year's figure."""
    spend = ask(app, "How much did the federal government spend on Medicare in fiscal year 2015?")
    assert spend.status is Status.ANSWERED, spend.answer
    assert "539.873" in spend.answer and "Assuming outlay" in spend.answer
    assert spend.assumptions == ("metric: outlay (the only one with this line)",)
    for question in (
        "What did excise taxes raise in fiscal year 2010?",
        "What were excise taxes in fiscal year 2010?",
    ):
        raised = ask(app, question)
        assert raised.status is Status.ANSWERED, (question, raised.answer)
        assert "66.909" in raised.answer and "Assuming revenue" in raised.answer
    # metric, line and year named, and no table fay reads names anyone: nothing is missing
    brought = ask(app, "How much revenue did excise taxes bring in during fiscal year 2010?")
    assert brought.route is Route.STRUCTURED and "66.909" in brought.answer, brought.answer
    assert "Assuming" not in brought.answer

    total = ask(app, "What was the total for fiscal year 2009?")
    assert total.status is Status.CLARIFY and set(total.options) >= {"revenue", "deficit"}
    elsewhere = ask(
        app, "How much did the federal government spend on Medicare in fiscal year 2010?"
    )
    assert elsewhere.status is Status.NOT_FOUND, elsewhere.answer
    assert "No figure found for outlay (Medicare) in FY2010." in elsewhere.answer


def test_whom_the_rows_name_is_the_entity_and_the_file_names_the_measure(app: Clearance) -> None:
    """``Country Name | Country Code | Year | Value``, as the World Bank's GDP series is
    published (gdp.csv): the rows name whom (the entity), its code is another name of it,
    and the values measure what the file is; tom also reads the budget's ``GDP`` column,
    the same measure in capitals, and "Japan's GDP" finds both. Reverse proof: the same rows under headers
    that say nothing of their roles are read as the budget's (the first label is what is
    measured), and "Japan's GDP" is then no figure."""
    gdp = facts_by(app, "gdp.csv")
    assert gdp[("Japan", "FY2020", "gdp", "total", "")] == 5055587093501.588
    japan = ask(app, "What was Japan's GDP in 2020?", "tom")
    assert japan.status is Status.ANSWERED and "5,055,587,093,501.588" in japan.answer
    assert ask(app, "What was the GDP of JPN in 2015?", "tom").answer.startswith(
        "(2015 = FY2015) Japan's gdp in FY2015 was 4,444,930,651,964.18"
    )
    germany = ask(app, "What was Germany's GDP in 2020?", "tom")
    assert "3,940,142,541,354.1" in germany.answer and "5,055" not in germany.answer


def test_label_columns_without_roles_are_read_as_lines(
    tmp_path: Path, settings_factory: Callable[..., Settings], store: SQLiteStore
) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "_meta.json").write_text(json.dumps({"acl": ["everyone"]}), encoding="utf-8")
    write_csv(
        folder / "gdp.csv",
        [["Label", "Abbreviation", "Year", "Value"], ["Japan", "JPN", "2020", "5055587093501.588"]],
    )
    engine = Clearance(settings_factory({}), store, provider=MockProvider())
    assert engine.ingest([folder]).failed == []
    (fact,) = store.list_facts("files:gdp.csv")
    assert (fact.entity, fact.metric, fact.channel) == ("", "japan", "JPN")


def test_a_column_of_labels_beside_the_years_makes_each_measure_column_long(
    tmp_path: Path,
    settings_factory: Callable[..., Settings],
    store: SQLiteStore,
    write_directory: Callable[..., Path],
) -> None:
    """``year | fuel | emissions_mt`` (the Global Carbon Project's fuel breakdown): the
    rows are lines (fuels) and the one numeric column names what it measures. Beside it, a
    table of nothing but a year column and measure columns (``Year | Total | Gas Fuel``) is
    read as a wide table, and its corner ``Year`` names no measure (the ``Total`` column
    was read as a measure called "year")."""
    folder = tmp_path / "co2"
    folder.mkdir()
    (folder / "_meta.json").write_text(json.dumps({"acl": ["everyone"]}), encoding="utf-8")
    write_csv(
        folder / "fuel-breakdown.csv",
        [
            ["year", "fuel", "emissions_mt"],
            ["2023", "Solid Fuel", "15634.7"],
            ["2023", "Cement", "1540"],
            ["2023", "Gas Fuel", "7802.1"],
        ],
    )
    write_csv(
        folder / "global.csv",
        [["Year", "Total", "Gas Fuel", "Per Capita"], ["2023", "10389", "2128", "1.28"]],
    )
    engine = Clearance(settings_factory({}), store, provider=MockProvider())
    assert engine.ingest([folder]).failed == []
    fuel = {(f.metric, f.channel): f.value for f in store.list_facts("files:fuel-breakdown.csv")}
    assert fuel[("emissions mt", "Solid Fuel")] == 15634.7 and len(fuel) == 3
    wide = {(f.metric, f.channel): f.value for f in store.list_facts("files:global.csv")}
    assert wide[("gas fuel", "total")] == 2128 and ("year", "total") not in wide
    # "gas fuel" is global.csv's measure and fuel-breakdown's line: read as the measure
    engine.sync_directory(write_directory(tmp_path / "directory.json", {"ana": []}))
    gas = engine.ask("What were global gas fuel emissions in 2023?", "ana")
    assert gas.status is Status.ANSWERED and "2,128" in gas.answer, gas.answer
