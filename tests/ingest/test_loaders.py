"""Loaders on real files, built here with the same libraries users' tools write them with."""

from __future__ import annotations

import dataclasses
import datetime as dt
import random
import zipfile
from pathlib import Path

import docx
import openpyxl
import pytest
from fpdf import FPDF
from fpdf.enums import AccessPermission, EncryptionMethod
from pptx import Presentation
from pptx.util import Inches
from pypdf import PdfReader

from clearance.errors import ClearanceError, LoaderError
from clearance.ingest.loaders import SUPPORTED, Extracted, extract, extract_text
from clearance.model import Section

# --------------------------------------------------------------------------- helpers


def _pdf(path: Path, pages: list[str], *, title: str | None = None) -> Path:
    pdf = FPDF()
    if title:
        pdf.set_title(title)
    pdf.set_font("Helvetica", size=12)
    for text in pages:
        pdf.add_page()
        if text:
            pdf.multi_cell(0, 10, text=text)
    pdf.output(str(path))
    return path


def _write(path: Path, text: str, encoding: str = "utf-8") -> Path:
    path.write_bytes(text.encode(encoding))
    return path


def _texts(extracted: Extracted) -> list[tuple[str, str]]:
    return [(s.locator, s.text) for s in extracted.sections]


# --------------------------------------------------------------------------- registry / errors


def test_supported_suffixes() -> None:
    assert SUPPORTED == {
        ".md": "md",
        ".markdown": "md",
        ".txt": "txt",
        ".text": "txt",
        ".html": "html",
        ".htm": "html",
        ".pdf": "pdf",
        ".docx": "docx",
        ".pptx": "pptx",
        ".xlsx": "xlsx",
        ".csv": "csv",
    }


def test_unsupported_suffix(tmp_path: Path) -> None:
    path = _write(tmp_path / "notes.xyz", "hello")
    with pytest.raises(LoaderError, match=r"unsupported file type '\.xyz'"):
        extract(path, max_chars=100)


def test_suffix_is_case_insensitive(tmp_path: Path) -> None:
    path = _write(tmp_path / "README.MD", "# Hello\n\nWorld")
    assert extract(path, max_chars=100).format == "md"


@pytest.mark.parametrize("suffix", sorted(SUPPORTED))
def test_zero_byte_file_is_empty_document(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"empty{suffix}"
    path.write_bytes(b"")
    with pytest.raises(LoaderError, match=r"empty\S* empty document \(no extractable text\)"):
        extract(path, max_chars=100)


@pytest.mark.parametrize("suffix", [".md", ".txt", ".html", ".csv"])
def test_whitespace_only_text_is_empty_document(tmp_path: Path, suffix: str) -> None:
    path = _write(tmp_path / f"blank{suffix}", " \n\n\t \n")
    with pytest.raises(LoaderError, match="empty document"):
        extract(path, max_chars=100)


def test_missing_file_is_loader_error(tmp_path: Path) -> None:
    with pytest.raises(LoaderError, match=r"gone\.txt: cannot read file"):
        extract(tmp_path / "gone.txt", max_chars=100)


def test_loader_error_is_a_clearance_error() -> None:
    assert issubclass(LoaderError, ClearanceError)


def test_max_chars_must_be_positive(tmp_path: Path) -> None:
    path = _write(tmp_path / "a.txt", "x")
    with pytest.raises(ValueError, match="max_chars"):
        extract(path, max_chars=0)


def test_extracted_is_frozen(tmp_path: Path) -> None:
    extracted = extract(_write(tmp_path / "a.txt", "hello"), max_chars=100)
    with pytest.raises(dataclasses.FrozenInstanceError):
        extracted.title = "x"  # type: ignore[misc]


@pytest.mark.parametrize("suffix", [".docx", ".pptx", ".xlsx"])
def test_corrupt_office_file(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"broken{suffix}"
    path.write_bytes(random.Random(7).randbytes(2048))
    with pytest.raises(LoaderError, match=rf"broken\{suffix}: corrupt or unreadable") as info:
        extract(path, max_chars=100)
    assert info.value.__cause__ is not None


@pytest.mark.parametrize("suffix", [".docx", ".pptx", ".xlsx"])
def test_zip_that_is_not_an_office_file(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"other{suffix}"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("hello.txt", "not an office document")
    with pytest.raises(LoaderError, match="corrupt or unreadable"):
        extract(path, max_chars=100)


@pytest.mark.parametrize("suffix", [".docx", ".pptx", ".xlsx"])
def test_password_protected_office_file(tmp_path: Path, suffix: str) -> None:
    # Office stores an encrypted OOXML package inside an OLE compound file.
    path = tmp_path / f"locked{suffix}"
    path.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504))
    with pytest.raises(LoaderError, match=rf"locked\{suffix}: encrypted \(password-protected\)"):
        extract(path, max_chars=100)


# --------------------------------------------------------------------------- markdown


MARKDOWN = """\
Preamble before any heading.

# Annual Report

Revenue grew in *all* regions.
A second line.

## Results

- first item
- second item

1. ordered

| Region | Revenue | Note |
|--------|---------|------|
| Japan  | 120     |      |
| EU, West | 80    | est. |

After the table.

### Japan

```
code   block
```

## 日本

売上は増加しました。利益も増えました。
"""


def test_markdown_sections_tables_and_title(tmp_path: Path) -> None:
    extracted = extract(_write(tmp_path / "report.md", MARKDOWN), max_chars=100)
    assert extracted.format == "md"
    assert extracted.title == "Annual Report"
    assert _texts(extracted) == [
        ("section=(top)", "Preamble before any heading."),
        ("section=Annual Report", "Annual Report\nRevenue grew in all regions.\nA second line."),
        (
            "section=Annual Report > Results",
            "Results\n- first item\n- second item\n1. ordered",
        ),
        (
            "section=Annual Report > Results,table=1,row=Japan",
            "Region: Japan | Revenue: 120",
        ),
        (
            "section=Annual Report > Results,table=1,row=EU West",
            "Region: EU, West | Revenue: 80 | Note: est.",
        ),
        ("section=Annual Report > Results", "After the table."),
        ("section=Annual Report > Results > Japan", "Japan\ncode   block"),
        ("section=Annual Report > 日本", "日本\n売上は増加しました。利益も増えました。"),
    ]
    rows = [s for s in extracted.sections if s.atomic]
    assert [s.table for s in rows] == [
        (("Region", "Revenue", "Note"), ("Japan", "120", "")),
        (("Region", "Revenue", "Note"), ("EU, West", "80", "est.")),
    ]
    assert all(s.table is None and not s.atomic for s in extracted.sections if s not in rows)


def test_markdown_tables_are_numbered_per_document(tmp_path: Path) -> None:
    text = "# A\n\n| k | v |\n|---|---|\n| x | 1 |\n\n# B\n\n| k | v |\n|---|---|\n| y | 2 |\n"
    extracted = extract(_write(tmp_path / "t.markdown", text), max_chars=100)
    assert [s.locator for s in extracted.sections] == [
        "section=A,table=1,row=x",
        "section=B,table=2,row=y",
    ]


def test_a_nested_list_item_keeps_its_depth(tmp_path: Path) -> None:
    """ "   1." under "2." is a sub-step, not a second first step (TTS handbook trial):
    a nested item's line opens with its depth. Reverse proof: the outer items do not."""
    text = (
        "# Checklist\n\nBefore taking leave:\n\n1. Submit a request.\n2. Mark your calendar.\n"
        "   1. Google Calendar has an OOO setting.\n3. Decline meetings.\n"
    )
    body = "\n".join(
        s.text for s in extract(_write(tmp_path / "c.md", text), max_chars=100).sections
    )
    lines = body.splitlines()
    assert "   1. Google Calendar has an OOO setting." in lines, lines
    assert "2. Mark your calendar." in lines and "3. Decline meetings." in lines, lines


def test_markdown_without_h1_has_no_title(tmp_path: Path) -> None:
    extracted = extract(_write(tmp_path / "n.md", "## Sub\n\ntext\n"), max_chars=100)
    assert extracted.title is None
    assert _texts(extracted) == [("section=Sub", "Sub\ntext")]


def test_markdown_of_only_headings_keeps_them(tmp_path: Path) -> None:
    extracted = extract(_write(tmp_path / "h.md", "# One\n\n## Two\n"), max_chars=100)
    assert _texts(extracted) == [("section=One", "One"), ("section=One > Two", "Two")]


def test_markdown_html_block_keeps_only_text(tmp_path: Path) -> None:
    text = "# T\n\n<div>Hello <b>there</b><script>alert(1)</script></div>\n"
    extracted = extract(_write(tmp_path / "h.md", text), max_chars=100)
    assert _texts(extracted) == [("section=T", "T\nHello there")]  # inline tags are words


def test_markdown_not_utf8(tmp_path: Path) -> None:
    path = _write(tmp_path / "sjis.md", "# 日本語\n", encoding="shift_jis")
    with pytest.raises(LoaderError, match=r"sjis\.md: not valid UTF-8 text"):
        extract(path, max_chars=100)


# --------------------------------------------------------------------------- html


HTML = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Quarterly  Review</title>
<style>p { color: red }</style><script>var secret = "never";</script></head>
<body>
<p>Intro paragraph.</p>
<h1>Results</h1>
<p>Revenue <b>grew</b>.<!-- hidden comment --></p>
<ul><li>one</li><li>two</li></ul>
<h2>Japan</h2>
<table>
  <thead><tr><th>Region</th><th colspan="2">Sales</th></tr></thead>
  <tbody>
    <tr><td>Tokyo</td><td>1</td><td>2</td></tr>
    <tr><td></td><td></td><td></td></tr>
    <tr><td>Osaka</td><td>3</td><td>4</td></tr>
  </tbody>
</table>
<pre>keep
  lines</pre>
<noscript>enable js</noscript>
</body></html>
"""


def test_html_sections_tables_and_title(tmp_path: Path) -> None:
    extracted = extract(_write(tmp_path / "review.html", HTML), max_chars=100)
    assert extracted.format == "html"
    assert extracted.title == "Quarterly Review"
    assert _texts(extracted) == [
        ("section=(top)", "Intro paragraph."),
        ("section=Results", "Results\nRevenue grew.\none\ntwo"),
        ("section=Results > Japan,table=1,row=Tokyo", "Region: Tokyo | Sales: 1 | Sales: 2"),
        ("section=Results > Japan,table=1,row=Osaka", "Region: Osaka | Sales: 3 | Sales: 4"),
        ("section=Results > Japan", "Japan\nkeep\nlines"),
    ]
    tokyo = extracted.sections[2]
    assert tokyo.atomic
    assert tokyo.table == (("Region", "Sales", "Sales"), ("Tokyo", "1", "2"))
    joined = " ".join(s.text for s in extracted.sections)
    assert "secret" not in joined
    assert "color" not in joined
    assert "hidden comment" not in joined
    assert "enable js" not in joined


def test_html_title_falls_back_to_h1_and_detects_declared_encoding(tmp_path: Path) -> None:
    html = (
        '<html><head><meta charset="shift_jis"></head><body>'
        "<h1>報告書</h1><p><ruby>漢<rt>かん</rt></ruby>字の売上。</p></body></html>"
    )
    path = _write(tmp_path / "jp.htm", html, encoding="shift_jis")
    extracted = extract(path, max_chars=100)
    assert extracted.title == "報告書"
    assert _texts(extracted) == [("section=報告書", "報告書\n漢字の売上。")]


def test_html_that_looks_like_a_filename_does_not_warn(tmp_path: Path) -> None:
    extracted = extract(_write(tmp_path / "odd.html", "index.html"), max_chars=100)
    assert _texts(extracted) == [("section=(top)", "index.html")]


# --------------------------------------------------------------------------- text


def test_text_packs_paragraphs_into_blocks(tmp_path: Path) -> None:
    text = "alpha one\nalpha two\n\nbeta\n\n\ngamma gamma gamma gamma\n"
    extracted = extract(_write(tmp_path / "notes.txt", text), max_chars=25)
    assert extracted.format == "txt"
    assert extracted.title is None
    assert _texts(extracted) == [
        ("lines=1-4", "alpha one\nalpha two\n\nbeta"),
        ("lines=7-7", "gamma gamma gamma gamma"),
    ]
    assert not any(s.atomic for s in extracted.sections)


def test_text_long_paragraph_is_packed_by_lines_and_long_line_alone(tmp_path: Path) -> None:
    long_line = "x" * 40
    text = f"aaaa\nbbbb\ncccc\ndddd\n{long_line}\neeee\n"
    extracted = extract(_write(tmp_path / "p.text", text), max_chars=10)
    assert _texts(extracted) == [
        ("lines=1-2", "aaaa\nbbbb"),
        ("lines=3-4", "cccc\ndddd"),
        ("lines=5-5", long_line),
        ("lines=6-6", "eeee"),
    ]


def test_text_japanese_crlf_and_bom(tmp_path: Path) -> None:
    path = tmp_path / "jp.txt"
    path.write_bytes("\ufeff売上は増加しました。\r\n\r\n利益も増えました。\r\n".encode())
    extracted = extract(path, max_chars=12)
    assert _texts(extracted) == [
        ("lines=1-1", "売上は増加しました。"),
        ("lines=3-3", "利益も増えました。"),
    ]


def test_text_utf16_with_bom(tmp_path: Path) -> None:
    path = _write(tmp_path / "u16.txt", "\ufeffhello 世界\n", encoding="utf-16-le")
    assert _texts(extract(path, max_chars=100)) == [("lines=1-1", "hello 世界")]


def test_text_undecodable(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(b"ok\n\xff\xfe\xfa broken")
    with pytest.raises(LoaderError, match=r"bad\.txt: not valid UTF-8 text \(undecodable byte"):
        extract(path, max_chars=100)


def test_extract_text_for_inline_text() -> None:
    extracted = extract_text("one\n\ntwo", max_chars=100)
    assert extracted == Extracted("txt", None, (Section("one\n\ntwo", "lines=1-3"),))
    with pytest.raises(LoaderError, match="manifest: empty document"):
        extract_text("  \n", max_chars=100, name="manifest")


# --------------------------------------------------------------------------- csv


def test_csv_sniffs_dialect_and_packs_rows(tmp_path: Path) -> None:
    text = (
        "\ufeffRegion;Revenue;Note\n"
        "Japan;120;\n"
        "EU;80,5;est.\n"
        "\n"
        'US;"1 000";"multi\nline"\n'
        "China;9;\n"
    )
    extracted = extract(_write(tmp_path / "sales.csv", text), max_chars=60)
    assert extracted.format == "csv"
    assert extracted.title is None
    assert _texts(extracted) == [
        ("rows=2-3", "Region | Revenue | Note\nJapan | 120\nEU | 80,5 | est."),
        ("rows=5-7", "Region | Revenue | Note\nUS | 1 000 | multi line\nChina | 9"),
    ]
    assert all(s.atomic for s in extracted.sections)
    assert extracted.sections[0].table == (
        ("Region", "Revenue", "Note"),
        ("Japan", "120", ""),
        ("EU", "80,5", "est."),
    )
    assert extracted.sections[1].table == (
        ("Region", "Revenue", "Note"),
        ("US", "1 000", "multi line"),
        ("China", "9", ""),
    )


def test_csv_row_longer_than_max_chars_is_its_own_block(tmp_path: Path) -> None:
    text = "k,v\na,1\nb," + "z" * 50 + "\nc,3\n"
    extracted = extract(_write(tmp_path / "wide.csv", text), max_chars=20)
    assert [s.locator for s in extracted.sections] == ["rows=2-2", "rows=3-3", "rows=4-4"]
    assert extracted.sections[1].text == "k | v\nb | " + "z" * 50


def test_csv_header_only(tmp_path: Path) -> None:
    extracted = extract(_write(tmp_path / "h.csv", "a,b,c\n"), max_chars=100)
    assert _texts(extracted) == [("rows=1-1", "a | b | c")]
    assert extracted.sections[0].table == (("a", "b", "c"),)


def test_csv_ragged_rows_are_padded_in_table(tmp_path: Path) -> None:
    extracted = extract(_write(tmp_path / "r.csv", "a,b\n1\n2,3,4\n"), max_chars=100)
    assert _texts(extracted) == [("rows=2-3", "a | b\n1\n2 | 3 | 4")]
    assert extracted.sections[0].table == (("a", "b", ""), ("1", "", ""), ("2", "3", "4"))


def test_csv_undecodable(tmp_path: Path) -> None:
    path = _write(tmp_path / "latin.csv", "name,city\nRené,Zürich\n", encoding="latin-1")
    with pytest.raises(LoaderError, match=r"latin\.csv: not valid UTF-8 CSV"):
        extract(path, max_chars=100)


# --------------------------------------------------------------------------- xlsx


def test_xlsx_blocks_ranges_and_values(tmp_path: Path) -> None:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.title = "P&L"
    sheet.append([])  # row 1 empty: the header is the first *non-empty* row
    sheet["B2"], sheet["C2"], sheet["D2"] = "Region", "Revenue", "Date"
    sheet["B3"], sheet["C3"], sheet["D3"] = "Japan", 120.0, dt.datetime(2024, 3, 31)
    sheet["B4"], sheet["C4"] = "EU", 0.1 + 0.2
    sheet["B6"], sheet["C6"], sheet["E6"] = "US", 7, True
    workbook.create_sheet("Empty")
    second = workbook.create_sheet("Notes, 2024")
    second.append(["Only", "header"])
    workbook.properties.title = "Plan"
    path = tmp_path / "plan.xlsx"
    workbook.save(path)

    extracted = extract(path, max_chars=60)
    assert extracted.format == "xlsx"
    assert extracted.title == "Plan"
    assert _texts(extracted) == [
        (
            "sheet=P&L,range=B2:D4",
            "Region | Revenue | Date\nJapan | 120 | 2024-03-31\nEU | 0.3",
        ),
        ("sheet=P&L,range=B6:E6", "Region | Revenue | Date\nUS | 7 |  | TRUE"),
        ("sheet=Notes 2024,range=A1:B1", "Only | header"),
    ]
    assert all(s.atomic for s in extracted.sections)
    assert extracted.sections[0].table == (
        ("Region", "Revenue", "Date", ""),
        ("Japan", "120", "2024-03-31", ""),
        ("EU", "0.3", "", ""),
    )
    assert extracted.sections[1].table == (
        ("Region", "Revenue", "Date", ""),
        ("US", "7", "", "TRUE"),
    )


def test_xlsx_each_block_fits_max_chars(tmp_path: Path) -> None:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.title = "Data"
    sheet.append(["id", "value"])
    for i in range(1, 31):
        sheet.append([i, i * 1.5])
    path = tmp_path / "data.xlsx"
    workbook.save(path)
    extracted = extract(path, max_chars=50)
    assert all(len(s.text) <= 50 for s in extracted.sections)
    assert all(s.text.startswith("id | value\n") for s in extracted.sections)
    assert extracted.sections[0].locator.startswith("sheet=Data,range=A1:B")
    assert extracted.sections[-1].locator.endswith(":B31")
    rows = [line for s in extracted.sections for line in s.text.split("\n")[1:]]
    assert rows == [f"{i} | {i * 1.5:g}" for i in range(1, 31)]


def test_xlsx_merged_cells_fill_the_cells_they_cover(tmp_path: Path) -> None:
    """A merged range's value heads every column it spans and labels every row it spans;
    a number merged across cells stays one figure in its first cell; a title merged across
    the table stays a one-cell title row."""
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.title = "Segments"
    sheet.append(["ACME — segment results"])
    sheet.append([None, "Three Months Ended March 31", None, "Nine Months Ended March 31"])
    sheet.append(["Segment", "Net sales", "EBT", "Net sales", "EBT"])
    sheet.append(["Beauty", 3490, 684, 11231, 2746])
    sheet.append([None, 3550, 753, 11496, 3114])
    sheet.append(["Corporate", 198, None, 520, -961])
    for cells in ("A1:E1", "B2:C2", "D2:E2", "A4:A5", "B6:C6"):
        sheet.merge_cells(cells)
    path = tmp_path / "segments.xlsx"
    workbook.save(path)

    (section,) = extract(path, max_chars=1000).sections
    assert section.titles == ("ACME — segment results",)
    assert section.locator == "sheet=Segments,range=A1:E6"
    three, nine = "Three Months Ended March 31", "Nine Months Ended March 31"
    assert section.table == (
        ("Segment", f"{three} — Net sales", f"{three} — EBT", f"{nine} — Net sales",
         f"{nine} — EBT"),
        ("Beauty", "3490", "684", "11231", "2746"),
        ("Beauty", "3550", "753", "11496", "3114"),
        ("Corporate", "198", "", "520", "-961"),
    )  # fmt: skip
    assert section.text.split("\n")[0] == "ACME — segment results"


def test_two_header_rows_are_one_header_per_column(tmp_path: Path) -> None:
    """A period written once over the measures it covers, the cells after it left blank
    (as a CSV export of merged cells writes it): each column is headed by both rows. A
    table of text whose first row is all labels keeps that row as data."""
    text = (
        ",Three Months Ended March 31,,Nine Months Ended March 31,\n"
        "Segment,Net sales,EBT,Net sales,EBT\n"
        "Beauty,3490,684,11231,2746\n"
    )
    (section,) = extract(_write(tmp_path / "segments.csv", text), max_chars=1000).sections
    three, nine = "Three Months Ended March 31", "Nine Months Ended March 31"
    header = ("Segment", f"{three} — Net sales", f"{three} — EBT", f"{nine} — Net sales",
              f"{nine} — EBT")  # fmt: skip
    assert section.table == (header, ("Beauty", "3490", "684", "11231", "2746"))
    assert section.text == " | ".join(header) + "\nBeauty | 3490 | 684 | 11231 | 2746"

    people = "Name,Role,\nAnn,Dev,on leave\nBo,QA,\n"
    (section,) = extract(_write(tmp_path / "people.csv", people), max_chars=1000).sections
    assert section.table == (
        ("Name", "Role", ""), ("Ann", "Dev", "on leave"), ("Bo", "QA", "")
    )  # fmt: skip


def test_a_continuation_row_takes_its_first_label_from_the_row_above(tmp_path: Path) -> None:
    """``Beauty | 2025 | …`` then `` | 2024 | …``: the second row is Beauty's too, in the
    block's text and table. A row of text with a blank first cell is left alone."""
    text = "Segment,Year,Net sales\nBeauty,2025,3490\n,2024,3550\nGrooming,2025,1505\n,unaudited,\n"
    (section,) = extract(_write(tmp_path / "segments.csv", text), max_chars=1000).sections
    assert section.table == (
        ("Segment", "Year", "Net sales"),
        ("Beauty", "2025", "3490"),
        ("Beauty", "2024", "3550"),
        ("Grooming", "2025", "1505"),
        ("", "unaudited", ""),
    )
    assert "\nBeauty | 2024 | 3550\n" in section.text


def test_xlsx_empty_workbook(tmp_path: Path) -> None:
    path = tmp_path / "empty.xlsx"
    openpyxl.Workbook().save(path)
    with pytest.raises(LoaderError, match=r"empty\.xlsx: empty document"):
        extract(path, max_chars=100)


# --------------------------------------------------------------------------- pdf


def test_pdf_two_pages(tmp_path: Path) -> None:
    path = _pdf(
        tmp_path / "two.pdf",
        ["Revenue grew 12% in Japan.", "", "Costs fell."],
        title="Quarterly",
    )
    extracted = extract(path, max_chars=100)
    assert extracted.format == "pdf"
    assert extracted.title == "Quarterly"
    assert _texts(extracted) == [
        ("page=1", "Revenue grew 12% in Japan."),
        ("page=3", "Costs fell."),
    ]
    assert not any(s.atomic for s in extracted.sections)


def test_pdf_without_title(tmp_path: Path) -> None:
    extracted = extract(_pdf(tmp_path / "n.pdf", ["Hello"]), max_chars=100)
    assert extracted.title is None


def _locked_pdf(
    path: Path,
    *,
    user_password: str,
    permissions: int = AccessPermission.all(),
    method: EncryptionMethod = EncryptionMethod.RC4,
) -> Path:
    pdf = FPDF()
    pdf.set_encryption(
        owner_password="owner",
        user_password=user_password,
        encryption_method=method,
        permissions=permissions,
    )
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    pdf.cell(text="Net sales were 81,797 in the quarter.")
    pdf.output(str(path))
    return path


@pytest.mark.parametrize(
    "method", [EncryptionMethod.RC4, EncryptionMethod.AES_128, EncryptionMethod.AES_256]
)
def test_a_pdf_encrypted_only_against_editing_is_read(
    tmp_path: Path, method: EncryptionMethod
) -> None:
    """Publishers encrypt filings with an empty password to restrict editing: every viewer
    opens them, and so does ingest, whatever the cipher."""
    path = _locked_pdf(tmp_path / "10-q.pdf", user_password="", method=method)
    assert PdfReader(path).is_encrypted
    extracted = extract(path, max_chars=100)
    assert _texts(extracted) == [("page=1", "Net sales were 81,797 in the quarter.")]


def test_a_pdf_that_needs_a_password_is_refused(tmp_path: Path) -> None:
    path = _locked_pdf(tmp_path / "locked.pdf", user_password="secret")
    with pytest.raises(LoaderError, match=r"locked\.pdf: encrypted PDF that needs a password"):
        extract(path, max_chars=100)


def test_a_pdf_whose_permissions_forbid_extracting_text_is_refused(tmp_path: Path) -> None:
    """Opening with the empty password is no licence to read what the owner forbade copying;
    leave to print (or to extract for accessibility tools alone) is not leave to index."""
    only_print = AccessPermission.PRINT_LOW_RES | AccessPermission.COPY_FOR_ACCESSIBILITY
    path = _locked_pdf(tmp_path / "locked.pdf", user_password="", permissions=only_print)
    with pytest.raises(LoaderError, match=r"locked\.pdf: encrypted PDF whose permissions forbid"):
        extract(path, max_chars=100)


def _pdf_with_long_array(path: Path, elements: int) -> Path:
    """A one-page PDF written object by object whose page carries an array of
    ``elements`` numbers, as a filing's PDF carries long arrays (a 10-Q's held 100,000+)."""
    text = b"BT /F1 12 Tf 72 712 Td (Net sales were 81,797 in the quarter.) Tj ET"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> /Marks ["
        + b" ".join(b"0" for _ in range(elements))
        + b"] >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(text), text),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    path.write_bytes(bytes(out))
    return path


def test_a_pdf_with_arrays_longer_than_pypdf_s_default_is_read(tmp_path: Path) -> None:
    """pypdf refuses arrays of more than 100,000 elements by default, which refused a
    published 10-Q as corrupt; the loader reads up to ten times that, and still refuses
    beyond it."""
    path = _pdf_with_long_array(tmp_path / "10-q.pdf", 150_000)
    assert _texts(extract(path, max_chars=100)) == [
        ("page=1", "Net sales were 81,797 in the quarter.")
    ]
    beyond = _pdf_with_long_array(tmp_path / "crafted.pdf", 1_000_001)
    with pytest.raises(LoaderError, match=r"crafted\.pdf: corrupt or unreadable PDF"):
        extract(beyond, max_chars=100)


def test_pdf_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "noise.pdf"
    path.write_bytes(random.Random(1).randbytes(1000))
    with pytest.raises(LoaderError, match=r"noise\.pdf: corrupt or unreadable PDF") as info:
        extract(path, max_chars=100)
    assert info.value.__cause__ is not None


def test_pdf_truncated(tmp_path: Path) -> None:
    whole = _pdf(tmp_path / "whole.pdf", ["Some text"]).read_bytes()
    path = tmp_path / "cut.pdf"
    path.write_bytes(whole[: len(whole) // 3])
    with pytest.raises(LoaderError, match=r"cut\.pdf: (corrupt|empty)"):
        extract(path, max_chars=100)


def test_pdf_without_text(tmp_path: Path) -> None:
    path = _pdf(tmp_path / "scan.pdf", ["", ""])
    with pytest.raises(LoaderError, match=r"scan\.pdf: empty document \(no extractable text\)"):
        extract(path, max_chars=100)


# --------------------------------------------------------------------------- docx


def _report_docx(path: Path, *, core_title: str = "") -> Path:
    document = docx.Document()
    document.core_properties.title = core_title
    document.add_paragraph("Draft — for review")
    document.add_heading("Annual Report", 0)
    document.add_paragraph("Overview text.")
    document.add_heading("Results", 1)
    document.add_paragraph("Revenue grew.")
    document.add_paragraph("")
    table = document.add_table(rows=3, cols=3)
    cells = [["Region", "FY2023", "FY2024"], ["Japan", "100", "120"], ["EU", "", "80"]]
    for r, row in enumerate(cells):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    document.add_paragraph("After the table.")
    document.add_heading("日本", 2)
    document.add_paragraph("売上は増加しました。")
    document.add_heading("Appendix", 1)
    small = document.add_table(rows=2, cols=2)
    small.cell(0, 0).text, small.cell(0, 1).text = "Key", "Value"
    small.cell(1, 0).text, small.cell(1, 1).text = "Owner", "Finance"
    document.save(str(path))
    return path


def test_docx_sections_and_tables(tmp_path: Path) -> None:
    extracted = extract(_report_docx(tmp_path / "report.docx"), max_chars=100)
    assert extracted.format == "docx"
    assert extracted.title == "Annual Report"
    assert _texts(extracted) == [
        ("section=(top)", "Draft — for review"),
        ("section=Annual Report", "Annual Report\nOverview text."),
        ("section=Annual Report > Results", "Results\nRevenue grew."),
        (
            "section=Annual Report > Results,table=1,row=Japan",
            "Region: Japan | FY2023: 100 | FY2024: 120",
        ),
        ("section=Annual Report > Results,table=1,row=EU", "Region: EU | FY2024: 80"),
        ("section=Annual Report > Results", "After the table."),
        ("section=Annual Report > Results > 日本", "日本\n売上は増加しました。"),
        ("section=Annual Report > Appendix,table=2,row=Owner", "Key: Owner | Value: Finance"),
    ]
    japan = extracted.sections[3]
    assert japan.atomic
    assert japan.table == (("Region", "FY2023", "FY2024"), ("Japan", "100", "120"))
    assert extracted.sections[4].table == (("Region", "FY2023", "FY2024"), ("EU", "", "80"))


@pytest.mark.parametrize(
    ("core_title", "kept"),
    [
        ("Word Document", None),
        ("Microsoft Word - policy v3.docx", None),
        ("PowerPoint Presentation", None),
        ("Untitled", None),
        ("0001018724-23-000018", None),  # an SEC accession number, as filings' PDFs carry
        ("04.01.2023", None),
        ("Data Retention Policy", "Data Retention Policy"),
        ("Q3 FY24", "Q3 FY24"),
        ("Word processing guidelines", "Word processing guidelines"),
    ],
)
def test_an_application_s_default_title_names_no_document(
    tmp_path: Path, core_title: str, kept: str | None
) -> None:
    """A title the application wrote on its own, or an identifier with no word in it, is
    dropped, so the file's name (or its first heading) names the document in citations
    instead of "Word Document" or a filing's accession number."""
    document = docx.Document()
    document.core_properties.title = core_title
    document.add_paragraph("Keep records for seven years.")
    path = tmp_path / "policy.docx"
    document.save(str(path))
    assert extract(path, max_chars=100).title == kept


def test_docx_core_title_wins(tmp_path: Path) -> None:
    extracted = extract(_report_docx(tmp_path / "r.docx", core_title="FY Report"), max_chars=10)
    assert extracted.title == "FY Report"


def test_docx_merged_cells_line_up_with_header(tmp_path: Path) -> None:
    document = docx.Document()
    table = document.add_table(rows=2, cols=3)
    for c, value in enumerate(["Item", "H1", "H2"]):
        table.cell(0, c).text = value
    table.cell(1, 0).text = "Total"
    merged = table.cell(1, 1).merge(table.cell(1, 2))
    merged.text = "9"
    path = tmp_path / "merged.docx"
    document.save(str(path))
    extracted = extract(path, max_chars=100)
    assert _texts(extracted) == [
        ("section=(top),table=1,row=Total", "Item: Total | H1: 9 | H2: 9"),
    ]


def test_docx_empty(tmp_path: Path) -> None:
    path = tmp_path / "empty.docx"
    docx.Document().save(str(path))
    with pytest.raises(LoaderError, match=r"empty\.docx: empty document \(no extractable text\)"):
        extract(path, max_chars=100)


# --------------------------------------------------------------------------- pptx


def _deck(path: Path) -> Path:
    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])  # title only
    title = slide.shapes.title
    assert title is not None
    title.text = "Revenue by region"
    box = slide.shapes.add_textbox(Inches(1), Inches(1.5), Inches(4), Inches(1))
    box.text_frame.text = "Growth was strong."
    box.text_frame.add_paragraph().text = "Japan led."
    frame = slide.shapes.add_table(3, 3, Inches(1), Inches(3), Inches(6), Inches(1.5))
    values = [["Region", "FY2023", "FY2024"], ["Japan", "100", "120"], ["EU", "", "80"]]
    for r, row in enumerate(values):
        for c, value in enumerate(row):
            frame.table.cell(r, c).text = value
    group = slide.shapes.add_group_shape()
    inner = group.shapes.add_textbox(Inches(1), Inches(5), Inches(2), Inches(0.5))
    inner.text_frame.text = "Grouped caption"
    nested = group.shapes.add_group_shape()
    deep = nested.shapes.add_textbox(Inches(4), Inches(5), Inches(2), Inches(0.5))
    deep.text_frame.text = "Nested group text"
    notes = slide.notes_slide.notes_text_frame
    assert notes is not None
    notes.text = "Mention the EU estimate."

    second = deck.slides.add_slide(deck.slide_layouts[6])  # blank: no title
    one_row = second.shapes.add_table(1, 2, Inches(1), Inches(1), Inches(4), Inches(0.5))
    one_row.table.cell(0, 0).text = "Only"
    one_row.table.cell(0, 1).text = "row"
    grid = second.shapes.add_table(2, 2, Inches(1), Inches(3), Inches(4), Inches(1))
    for r, row in enumerate([["", "Q1"], ["Cost", "5"]]):
        for c, value in enumerate(row):
            grid.table.cell(r, c).text = value
    deck.save(str(path))
    return path


def test_pptx_slides_tables_notes_and_groups(tmp_path: Path) -> None:
    extracted = extract(_deck(tmp_path / "deck.pptx"), max_chars=100)
    assert extracted.format == "pptx"
    assert extracted.title == "Revenue by region"
    assert _texts(extracted) == [
        (
            "slide=1",
            "Revenue by region\nGrowth was strong.\nJapan led.\nGrouped caption\nNested group text",
        ),
        ("slide=1,table=1,row=Japan,col=FY2023", "Revenue by region — Japan, FY2023: 100"),
        ("slide=1,table=1,row=Japan,col=FY2024", "Revenue by region — Japan, FY2024: 120"),
        ("slide=1,table=1,row=EU,col=FY2024", "Revenue by region — EU, FY2024: 80"),
        ("slide=1,notes=1", "Mention the EU estimate."),
        ("slide=2", "Only | row"),
        ("slide=2,table=2,row=Cost,col=Q1", "Cost, Q1: 5"),
    ]
    cell = extracted.sections[1]
    assert cell.atomic
    assert cell.table == (("Region", "FY2023"), ("Japan", "100"))
    assert cell.titles == ("Revenue by region",)
    assert not extracted.sections[0].atomic
    assert not extracted.sections[4].atomic


def test_pptx_without_text(tmp_path: Path) -> None:
    deck = Presentation()
    deck.slides.add_slide(deck.slide_layouts[6])
    path = tmp_path / "blank.pptx"
    deck.save(str(path))
    with pytest.raises(LoaderError, match=r"blank\.pptx: empty document"):
        extract(path, max_chars=100)


def test_an_html_table_of_two_header_rows_heads_each_column_with_both(tmp_path: Path) -> None:
    """A period over the dates it spans ("Thirteen Weeks Ended" over "November 2, 2024"),
    as a release prints its statement, heads each column with both rows; the lines of one
    block right above it are its notes (the scale) and titles (the company), and a row
    heading ("EARNINGS PER SHARE:") names the rows under it."""
    path = tmp_path / "release.html"
    path.write_text(
        "<p>Net sales fell.</p><p>THE BUCKLE, INC.<br>CONSOLIDATED STATEMENTS OF INCOME<br>"
        "(Amounts in Thousands Except Per Share Amounts)<br>(Unaudited)</p><table>"
        "<tr><td></td><td colspan=2>Thirteen Weeks Ended</td></tr>"
        "<tr><td></td><td>November 2, 2024</td><td>November 4, 2023</td></tr>"
        "<tr><td>NET INCOME</td><td>$ 44,164</td><td>$ 54,083</td></tr>"
        "<tr><td>EARNINGS PER SHARE:</td><td></td><td></td></tr>"
        "<tr><td>Diluted</td><td>$ 0.88</td><td>$ 1.09</td></tr></table>",
        encoding="utf-8",
    )
    rows = [s for s in extract(path, max_chars=2000).sections if s.table]
    header = (
        "",
        "Thirteen Weeks Ended November 2, 2024",
        "Thirteen Weeks Ended November 4, 2023",
    )
    assert [s.table for s in rows] == [
        (header, ("NET INCOME", "$ 44,164", "$ 54,083")),
        (header, ("EARNINGS PER SHARE:", "", "")),
        (header, ("EARNINGS PER SHARE: Diluted", "$ 0.88", "$ 1.09")),
    ]
    assert rows[0].captions == ("(Unaudited)", "(Amounts in Thousands Except Per Share Amounts)")
    assert rows[0].titles == ("CONSOLIDATED STATEMENTS OF INCOME", "THE BUCKLE, INC.")


def test_a_table_whose_second_row_is_data_keeps_one_header_row(tmp_path: Path) -> None:
    """Reverse proof: a table of text whose first rows are all labels is not given a
    second header row."""
    path = tmp_path / "people.html"
    path.write_text(
        "<table><tr><td>Name</td><td>Role</td></tr><tr><td>Ann</td><td>Lead</td></tr>"
        "<tr><td>Bo</td><td>Engineer</td></tr></table>",
        encoding="utf-8",
    )
    rows = [s.table for s in extract(path, max_chars=2000).sections if s.table]
    assert rows == [(("Name", "Role"), ("Ann", "Lead")), (("Name", "Role"), ("Bo", "Engineer"))]


def test_an_html_cell_spanning_rows_stands_in_each_of_them(tmp_path: Path) -> None:
    """A corner cell over two header rows (``rowspan="2"``) keeps the second row's cells
    under their own columns; a label spanning two data rows labels both."""
    path = tmp_path / "spans.html"
    path.write_text(
        "<table><tr><th rowspan=2>Corner</th><th colspan=2>3 Months Ended</th></tr>"
        "<tr><th>Nov. 02, 2019</th><th>Nov. 03, 2018</th></tr>"
        "<tr><td rowspan=2>Revenue</td><td>1,443</td><td>1,536</td></tr>"
        "<tr><td>1,480</td><td>1,558</td></tr></table>",
        encoding="utf-8",
    )
    rows = [s.table for s in extract(path, max_chars=2000).sections if s.table]
    header = ("Corner", "3 Months Ended Nov. 02, 2019", "3 Months Ended Nov. 03, 2018")
    assert rows == [
        (header, ("Revenue", "1,443", "1,536")),
        (header, ("Revenue", "1,480", "1,558")),
    ]


def test_a_markdown_definition_list_reads_as_terms_with_their_definitions(
    tmp_path: Path,
) -> None:
    """A checklist written as a definition list ("Does it work as intended?" over ": Ensuring
    that code works …") was read as the term's paragraph and one opening with a colon, so a
    quoted definition lost its term. Reverse proof: the same lines in fenced code stay as
    written."""
    path = tmp_path / "reviews.md"
    path.write_text(
        "# Code reviews\n\nDoes it work as intended?\n: Ensuring that code works is crucial.\n\n"
        "Is it tested?\n: Make sure current tests pass.\n: Suggest automation.\n\n"
        "```\nterm\n: kept as written\n```\n",
        encoding="utf-8",
    )
    (section,) = extract(path, max_chars=2000).sections
    assert section.text.splitlines()[1:4] == [
        "- Does it work as intended? — Ensuring that code works is crucial.",
        "- Is it tested? — Make sure current tests pass.",
        "- Suggest automation.",
    ]
    assert "term\n: kept as written" in section.text
