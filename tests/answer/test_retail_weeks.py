"""Figure questions over a retailer's quarterly press release as it is published in HTML,
with **no** ``[facts]`` vocabulary (a new user's trial on a 52–53-week fiscal year):

* columns are counted in weeks over a second header row of dates ("Thirteen Weeks Ended"
  over "November 2, 2024"): thirteen weeks ended November 2, 2024 are the three months
  ended October 2024, thirty-nine weeks the nine months; a count of weeks never names a
  whole year;
* the statement is headed by lines of one block ("THE BUCKLE, INC." / "CONSOLIDATED
  STATEMENTS OF INCOME" / "(Amounts in Thousands Except Per Share Amounts)"): the company
  and the scale come from them, and per-share rows take no scale;
* labels written in capitals ("SALES, Net of returns and allowances", "NET INCOME") are
  asked in ordinary words ("net sales", "net income");
* "the third quarter of fiscal 2024" of a company whose fiscal year end no readable
  document states: the quarter spans the tables hold are offered, never assumed.

Every number an answer states is a stored fact's value.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from clearance.answer.result import Status
from clearance.app import Clearance
from clearance.config import Settings, settings_from_dict
from clearance.ingest.facts import extract_facts
from clearance.ingest.loaders import extract
from clearance.store.sqlite import SQLiteStore

from .test_filing_tables import ask

RELEASE = """<html><head><title>Buckle Reports Third Quarter Net Income</title></head><body>
<h1>BUCKLE REPORTS THIRD QUARTER NET INCOME</h1>
<p>KEARNEY, Neb., Nov. 22, 2024 -- The Buckle, Inc. today reported net income for its fiscal
quarter ended November 2, 2024 of $44.2 million, or $0.88 per share on a diluted basis.</p>
<p>THE BUCKLE, INC.<br>CONSOLIDATED STATEMENTS OF INCOME<br>
(Amounts in Thousands Except Per Share Amounts)<br>(Unaudited)</p>
<table>
<tr><td></td><td colspan="2">Thirteen Weeks Ended</td><td colspan="2">Thirty-Nine Weeks Ended</td></tr>
<tr><td></td><td>November 2, 2024</td><td>November 4, 2023</td><td>November 2, 2024</td>
<td>November 4, 2023</td></tr>
<tr><td>SALES, Net of returns and allowances</td><td>$ 293,618</td><td>$ 322,729</td>
<td>$ 838,490</td><td>$ 906,829</td></tr>
<tr><td>COST OF SALES (Including buying, distribution, and occupancy costs)</td><td>152,234</td>
<td>163,212</td><td>438,223</td><td>464,002</td></tr>
<tr><td>NET INCOME</td><td>$ 44,164</td><td>$ 54,083</td><td>$ 118,270</td><td>$ 148,224</td></tr>
<tr><td>EARNINGS PER SHARE:</td><td></td><td></td><td></td><td></td></tr>
<tr><td>Basic</td><td>$ 0.89</td><td>$ 1.10</td><td>$ 2.38</td><td>$ 3.01</td></tr>
<tr><td>Diluted</td><td>$ 0.88</td><td>$ 1.09</td><td>$ 2.37</td><td>$ 3.00</td></tr>
</table>
</body></html>
"""


@pytest.fixture
def release(tmp_path: Path) -> Path:
    path = tmp_path / "finance" / "buckle-q3-2024-release.html"
    path.parent.mkdir()
    path.write_text(RELEASE, encoding="utf-8")
    return path


@pytest.fixture
def app(
    release: Path,
    tmp_path: Path,
    settings_factory: Callable[..., Settings],
    store: SQLiteStore,
    write_directory: Callable[..., Path],
) -> Iterator[Clearance]:
    corpus = release.parent
    (corpus / "_meta.json").write_text(json.dumps({"acl": ["group:finance"]}), encoding="utf-8")
    engine = Clearance(settings_factory({}), store)
    assert engine.ingest([corpus]).failed == []
    engine.sync_directory(write_directory(tmp_path / "directory.json", {"fay": ["finance"]}))
    yield engine


def facts_of(path: Path) -> dict[tuple[str, str, str], tuple[float, str]]:
    extracted = extract(path, max_chars=1500)
    facts = extract_facts(
        extracted.sections,
        doc_id="files:release",
        title=extracted.title or path.stem,
        vocab=settings_from_dict({}).facts,
    )
    return {(f.entity, f.metric, f.period): (f.value, f.unit) for f in facts}


# --------------------------------------------------------------------------- ingest


def test_weeks_are_the_months_they_end_in_with_the_statement_s_company_and_scale(
    release: Path,
) -> None:
    facts = facts_of(release)
    assert facts[("Buckle", "net sales", "3M ended Oct 2024")] == (293618, "$ in thousands")
    assert facts[("Buckle", "net sales", "9M ended Oct 2024")] == (838490, "$ in thousands")
    assert facts[("Buckle", "net sales", "3M ended Oct 2023")] == (322729, "$ in thousands")
    assert facts[("Buckle", "cost of sales", "3M ended Oct 2024")] == (152234, "in thousands")
    assert facts[("Buckle", "net income", "9M ended Oct 2024")] == (118270, "$ in thousands")
    # per-share figures are excepted from the scale
    assert facts[("Buckle", "diluted earnings per share", "3M ended Oct 2024")] == (0.88, "$")
    # no count of weeks is a year
    assert not any(period.startswith("FY") for _, _, period in facts)


def test_reverse_proof_weeks_without_the_day_they_end_give_no_fact(tmp_path: Path) -> None:
    """A column headed "Thirteen Weeks 2024" says neither when its weeks end nor that they
    are the year: it gives no fact, never FY2024's."""
    path = tmp_path / "weeks.html"
    path.write_text(
        RELEASE.replace("Thirteen Weeks Ended", "Thirteen Weeks")
        .replace("Thirty-Nine Weeks Ended", "Thirty-Nine Weeks")
        .replace("November 2, 2024", "2024")
        .replace("November 4, 2023", "2023"),
        encoding="utf-8",
    )
    facts = facts_of(path)
    assert not any(period.startswith("FY") for _, _, period in facts), facts


def test_reverse_proof_the_note_above_the_table_gives_the_scale(tmp_path: Path) -> None:
    path = tmp_path / "unnoted.html"
    path.write_text(
        RELEASE.replace("(Amounts in Thousands Except Per Share Amounts)<br>", ""),
        encoding="utf-8",
    )
    assert facts_of(path)[("Buckle", "net sales", "3M ended Oct 2024")] == (293618, "$")


# --------------------------------------------------------------------------- answers


def test_weeks_asked_as_the_release_writes_them_are_answered(app: Clearance) -> None:
    quarter = ask(app, "What was Buckle's net income in the thirteen weeks ended November 2, 2024?")
    assert "$44,164 thousand" in quarter and "three months ended October 2024" in quarter
    nine = ask(app, "What were Buckle's net sales for the 39 weeks ended November 2, 2024?")
    assert "$838,490 thousand" in nine
    eps = ask(app, "What was Buckle's diluted EPS for the 13 weeks ended November 2, 2024?")
    assert "$0.88" in eps and "thousand" not in eps


def test_a_fiscal_quarter_is_offered_as_the_spans_the_tables_hold(app: Clearance) -> None:
    """Nothing says when Buckle's fiscal year ends: its third quarter of fiscal 2024 is the
    three months ended October 2024 if it names years by their start, October 2023 if by
    their end. Both are offered, the later first; no figure is given."""
    result = app.ask("What were Buckle's net sales for the third quarter of fiscal 2024?", "fay")
    assert result.status is Status.CLARIFY, result.answer
    assert result.options == ("3M ended Oct 2024", "3M ended Oct 2023")
    assert "293,618" not in result.answer and "fiscal year ends" in result.answer
    # the option, asked back, is answered
    assert "$293,618 thousand" in ask(app, "What were Buckle's net sales in 3M ended Oct 2024?")


def test_a_full_fiscal_year_is_not_found_never_the_nine_months(app: Clearance) -> None:
    answer = ask(app, "What were Buckle's net sales for fiscal 2024?", Status.NOT_FOUND)
    assert "838,490" not in answer and "293,618" not in answer


FOURTH_QUARTER = (
    RELEASE.replace("Thirty-Nine Weeks Ended", "Fifty-Two Weeks Ended")
    .replace("November 2, 2024", "February 1, 2025")
    .replace("November 4, 2023", "February 3, 2024")
    .replace("THIRD QUARTER", "FOURTH QUARTER AND FISCAL 2024")
)


def test_a_retailer_s_fiscal_year_is_never_the_year_before_s(
    tmp_path: Path,
    settings_factory: Callable[..., Settings],
    write_directory: Callable[..., Path],
) -> None:
    """Buckle's "fiscal 2024" is its fifty-two weeks ended February 1, 2025: answered with
    the year before's ($906,829, its weeks ended February 3, 2024), it is a wrong figure
    stated without a word of doubt."""
    corpus = tmp_path / "finance"
    corpus.mkdir()
    (corpus / "buckle-q4-2024-release.html").write_text(FOURTH_QUARTER, encoding="utf-8")
    (corpus / "_meta.json").write_text(json.dumps({"acl": ["group:finance"]}), encoding="utf-8")
    engine = Clearance(settings_factory({}), SQLiteStore(tmp_path / "q4.db"))
    assert engine.ingest([corpus]).failed == []
    engine.sync_directory(write_directory(tmp_path / "directory.json", {"fay": ["finance"]}))
    year = engine.ask("What were Buckle's net sales for fiscal 2024?", "fay")
    assert "906,829" not in year.answer, year.answer
    # both readings offered, the later first: the year starting in 2024, then the one
    # ending in it
    assert (year.status, year.options) == (
        Status.CLARIFY,
        ("12M ended Jan 2025", "12M ended Jan 2024"),
    ), year.answer
    quarter = engine.ask(
        "What were Buckle's net sales in the fourth quarter of fiscal 2024?", "fay"
    )
    assert "322,729" not in quarter.answer, quarter.answer
    assert quarter.status is Status.CLARIFY, quarter.answer
    # the span asked back is answered, and said as the release says it
    answer = engine.ask("What were Buckle's net sales in 12M ended Jan 2025?", "fay").answer
    assert "the twelve months ended January 2025" in answer, answer


@pytest.mark.parametrize(
    "question",
    [
        "What were Spotify's Premium net sales in the thirteen weeks ended November 2, 2024?",
        "What were Spotify Premium net sales in the thirteen weeks ended November 2, 2024?",
        "What were Spotify's net sales in the third quarter of fiscal 2024?",
    ],
)
def test_a_company_no_readable_table_holds_is_never_replaced_by_the_one_that_does(
    app: Clearance, question: str
) -> None:
    """Only Buckle's figures are readable: a question naming Spotify (with a line of it,
    or its quarter) is not found for Spotify, never answered, offered or worded as
    Buckle's ("Assuming Buckle: …")."""
    result = app.ask(question, "fay")
    assert result.status is Status.NOT_FOUND, result.answer
    assert "Buckle" not in result.answer and "293,618" not in result.answer
    assert "Spotify" in result.answer


@pytest.mark.parametrize(
    "question",
    [
        "What were Buckle's Denim Division net sales in the thirteen weeks ended November 2, 2024?",
        "What was the Denim Division net sales of Buckle in the thirteen weeks ended November 2, 2024?",
    ],
)
def test_a_division_named_with_a_capital_is_a_part_never_the_total(
    app: Clearance, question: str
) -> None:
    """ "Denim Division" written as a name: the part word was matched in lower case only,
    so the company's total was given as the division's."""
    result = app.ask(question, "fay")
    assert result.status is Status.NOT_FOUND, result.answer
    assert "293,618" not in result.answer
