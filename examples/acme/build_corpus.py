"""Generate the binary documents of the ACME demo corpus (pdf, docx, pptx, xlsx).

Run from anywhere: ``python examples/acme/build_corpus.py``. Files are written next to this
script, into the corpus folders. Text formats (md, txt, html, csv, json) and every metadata
file (``_meta.json``, ``*.meta.json``, ``manifest.jsonl``) are written by hand and are not
touched here.

The output is byte-for-byte reproducible: every timestamp the libraries would take from the
clock is fixed, and each OOXML package is rewritten with fixed zip entry dates in its original
entry order. Re-running the script must not change any sha256 (``--check`` verifies that).

Needs python-docx, python-pptx, openpyxl and fpdf2 (``pip install -e '.[dev]'``). PDFs use
the core Helvetica font, so they are English only (latin-1 text).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import re
import sys
import zipfile
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from docx import Document as new_document
from docx.document import Document as DocxDocument
from docx.shared import Pt
from fpdf import FPDF
from openpyxl import Workbook
from openpyxl.styles import Font
from pptx import Presentation as new_presentation
from pptx.chart.data import CategoryChartData
from pptx.enum.chart import XL_CHART_TYPE
from pptx.presentation import Presentation
from pptx.util import Inches
from pptx.util import Pt as PptPt

ROOT = Path(__file__).resolve().parent

# --------------------------------------------------------------------------- shared figures
# Fiscal year N runs from 1 April N to 31 March N+1 (FY2025 = 2025年度). The same figures
# appear in the public CSV, the public PDF and decks, the ops report and workbook, and the
# Japanese results deck: every table must agree with every other.

YEARS = ("FY2023", "FY2024", "FY2025")
YEARS_JA = ("2023年度", "2024年度", "2025年度")
REGIONS = (("Japan", "日本"), ("US", "米国"), ("EU", "欧州"))
METRICS = (
    # key, English label, Japanese label, unit, Japanese unit
    ("Revenue", "Revenue", "売上高", "USD m", "USD m"),
    ("Operating profit", "Operating profit", "営業利益", "USD m", "USD m"),
    ("Headcount", "Headcount", "従業員数", "people", "人"),
)
FIGURES: dict[str, dict[str, tuple[float, float, float]]] = {
    "Japan": {
        "Revenue": (412.5, 448.2, 486.9),
        "Operating profit": (48.1, 55.6, 61.2),
        "Headcount": (1240, 1305, 1362),
    },
    "US": {
        "Revenue": (615.0, 672.4, 731.8),
        "Operating profit": (71.9, 84.3, 95.0),
        "Headcount": (1870, 1955, 2041),
    },
    "EU": {
        "Revenue": (298.7, 321.5, 352.3),
        "Operating profit": (22.4, 27.8, 33.1),
        "Headcount": (860, 902, 948),
    },
}
# FY2026 budget (board pack) = FY2026 outlook (public): group revenue 1,690.0, OP 208.5.
BUDGET_FY2026: dict[str, dict[str, float]] = {
    "Japan": {"Revenue": 522.0, "Operating profit": 66.0, "Headcount": 1410},
    "US": {"Revenue": 790.5, "Operating profit": 104.5, "Headcount": 2110},
    "EU": {"Revenue": 377.5, "Operating profit": 38.0, "Headcount": 995},
}


# FY2025 by quarter (Q1 FY2025 = April-June 2025): each year's four quarters add up to the
# FY2025 column above; headcount is at the end of each quarter, Q4 being 31 March 2026.
QUARTERS = ("Q1 FY2025", "Q2 FY2025", "Q3 FY2025", "Q4 FY2025")
QUARTERLY: dict[str, dict[str, tuple[float, float, float, float]]] = {
    "Japan": {
        "Revenue": (114.8, 119.6, 121.3, 131.2),
        "Operating profit": (13.9, 14.8, 15.2, 17.3),
        "Headcount": (1318, 1331, 1347, 1362),
    },
    "US": {
        "Revenue": (172.4, 180.1, 183.6, 195.7),
        "Operating profit": (21.8, 23.1, 24.0, 26.1),
        "Headcount": (1968, 1990, 2015, 2041),
    },
    "EU": {
        "Revenue": (82.6, 85.9, 88.4, 95.4),
        "Operating profit": (7.4, 8.0, 8.3, 9.4),
        "Headcount": (915, 924, 937, 948),
    },
}
# Joiners and leavers per quarter: headcount moves from FY2024's year end by their difference.
MOVERS: dict[str, tuple[tuple[int, int], ...]] = {
    "Japan": ((41, 28), (37, 24), (44, 28), (39, 24)),
    "US": ((62, 49), (70, 48), (71, 46), (68, 42)),
    "EU": ((33, 20), (29, 20), (34, 21), (30, 19)),
}
for _region, _metrics in QUARTERLY.items():
    for _key in ("Revenue", "Operating profit"):
        assert round(sum(_metrics[_key]), 1) == FIGURES[_region][_key][2], (_region, _key)
    assert _metrics["Headcount"][3] == FIGURES[_region]["Headcount"][2], _region
    _count = FIGURES[_region]["Headcount"][1]
    for _quarter, (_joiners, _leavers) in enumerate(MOVERS[_region]):
        _count += _joiners - _leavers
        assert _count == _metrics["Headcount"][_quarter], (_region, _quarter)
# Q1 FY2026 flash figures (April-June 2026). EU operating profit is not in the flash: the
# Frankfurt entity closes with the half year, so its cell is "—", never 0.
FLASH_Q1_FY2026: dict[str, dict[str, str]] = {
    "Japan": {"Revenue": "124.6*", "Operating profit": "15.1", "Headcount": "1,371"},
    "US": {"Revenue": "189.7", "Operating profit": "24.9", "Headcount": "2,052"},
    "EU": {"Revenue": "90.8", "Operating profit": "—", "Headcount": "955"},
}


def fmt(metric: str, value: float) -> str:
    """Headcount as an integer with a thousands separator, money with one decimal."""
    if metric == "Headcount":
        return f"{int(value):,}"
    return f"{value:,.1f}"


def stamp(text: str) -> datetime:
    """A fixed, timezone-naive UTC datetime (what the OOXML libraries expect)."""
    return datetime.fromisoformat(text).replace(tzinfo=None)


# --------------------------------------------------------------------------- determinism


def normalise_ooxml(data: bytes, when: datetime) -> bytes:
    """Rewrite an OOXML zip: same entries, same order, fixed dates and core properties.
    Embedded packages (the workbook behind a native chart) are rewritten the same way."""
    iso = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            body = src.read(info.filename)
            if info.filename.endswith((".xlsx", ".docx", ".pptx")):
                body = normalise_ooxml(body, when)
            if info.filename == "docProps/core.xml":
                text = body.decode("utf-8")
                for tag in ("dcterms:created", "dcterms:modified"):
                    text = re.sub(rf"(<{tag}[^>]*>)[^<]*(</{tag}>)", rf"\g<1>{iso}\g<2>", text)
                body = text.encode("utf-8")
            fixed = zipfile.ZipInfo(info.filename, date_time=when.timetuple()[:6])
            fixed.compress_type = zipfile.ZIP_DEFLATED
            fixed.external_attr = 0o644 << 16
            fixed.create_system = 0
            dst.writestr(fixed, body, compresslevel=9)
    return out.getvalue()


def write(rel: str, data: bytes) -> None:
    path = ROOT / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


# --------------------------------------------------------------------------- PDF (fpdf2)


class Pdf:
    """A thin builder over fpdf2 with fixed metadata; latin-1 text only (core fonts)."""

    def __init__(self, title: str, author: str, when: datetime) -> None:
        self.pdf = FPDF(format="A4")
        self.pdf.set_creation_date(when.replace(tzinfo=UTC))
        self.pdf.set_title(title)
        self.pdf.set_author(author)
        self.pdf.set_creator("ACME build_corpus.py")
        self.pdf.set_producer("ACME build_corpus.py")
        self.pdf.set_auto_page_break(auto=True, margin=18)
        self.pdf.set_margins(20, 20, 20)
        self.page()

    def page(self) -> None:
        self.pdf.add_page()

    @staticmethod
    def _check(text: str) -> str:
        text.encode("latin-1")  # fail loudly rather than emit a broken glyph
        return text

    def heading(self, text: str, size: int = 15) -> None:
        self.pdf.set_font("Helvetica", "B", size)
        self.pdf.multi_cell(0, size * 0.55, self._check(text), new_x="LMARGIN", new_y="NEXT")
        self.pdf.ln(2)

    def para(self, text: str) -> None:
        self.pdf.set_font("Helvetica", "", 10.5)
        self.pdf.multi_cell(0, 5.4, self._check(text), new_x="LMARGIN", new_y="NEXT")
        self.pdf.ln(2.5)

    def table(self, rows: Sequence[Sequence[str]], widths: Sequence[float] | None = None) -> None:
        self.pdf.set_font("Helvetica", "", 9.5)
        with self.pdf.table(col_widths=widths, line_height=6, text_align="LEFT") as table:
            for row in rows:
                cells = table.row()
                for cell in row:
                    cells.cell(self._check(cell))
        self.pdf.ln(3)

    def bytes(self) -> bytes:
        return bytes(self.pdf.output())


def pdf_results_press_release() -> bytes:
    when = stamp("2026-05-14T06:00:00")
    p = Pdf("ACME Corp reports FY2025 results", "ACME Corp Investor Relations", when)
    p.heading("ACME Corp reports FY2025 results: revenue up 8.9%, operating profit up 12.9%")
    p.para(
        "TOKYO, 14 May 2026 - ACME Corp today reported results for the fiscal year ended "
        "31 March 2026 (FY2025). Group revenue rose 8.9% to USD 1,571.0 million and "
        "operating profit rose 12.9% to USD 189.3 million. The group employed 4,351 people "
        "at the end of the year."
    )
    p.para(
        "Japan grew revenue 8.6% to USD 486.9 million, helped by Fleetboard Enterprise "
        "renewals and the first two quarters of the Osaka sales office. The United States "
        "remained the largest region with revenue of USD 731.8 million; operating profit "
        "there reached USD 95.0 million as the Columbus repair centre cut warranty costs. "
        "Europe grew fastest, by 9.6% to USD 352.3 million, after the Frankfurt data region "
        "opened in April 2025."
    )
    p.para(
        '"We sold more Sentinel S4 gateways in FY2025 than in the two previous years '
        'together, and four out of five of them now report into Fleetboard," said Akiko '
        "Mori, President and CEO."
    )
    p.para("Regional figures for the last three fiscal years are set out on page 2.")
    p.page()
    p.heading("Results by region", 13)
    rows = [["Region", "Metric", "Unit", *YEARS]]
    for region, _ in REGIONS:
        for key, label, _ja, unit, _ju in METRICS:
            rows.append([region, label, unit, *(fmt(key, v) for v in FIGURES[region][key])])
    p.table(rows, widths=(18, 30, 16, 18, 18, 18))
    p.heading("Outlook for FY2026", 13)
    p.para(
        "For the fiscal year ending 31 March 2027 (FY2026), ACME expects group revenue of "
        "USD 1,690.0 million and operating profit of USD 208.5 million. The outlook assumes "
        "an exchange rate of JPY 148 to the US dollar."
    )
    p.para("Contact: ir@acme-corp.example")
    return p.bytes()


def pdf_manager_guide() -> bytes:
    when = stamp("2026-09-01T00:00:00")
    p = Pdf("Manager Guide: Performance Reviews FY2026", "Human Resources", when)
    p.heading("Manager Guide: Performance Reviews FY2026")
    p.para(
        "This guide is for people managers. It explains the FY2026 review cycle, the rating "
        "scale and the merit budget. Employees receive their own, shorter guide."
    )
    p.heading("Timeline", 12)
    p.table(
        [
            ["Step", "Dates"],
            ["Mid-year check-in (conversation only, no rating)", "1 - 31 October 2026"],
            ["Self-assessment in Workday", "1 - 15 February 2027"],
            ["Regional calibration sessions", "16 February - 12 March 2027"],
            ["Ratings and merit letters shared with employees", "by 31 March 2027"],
            ["Merit increases effective", "1 April 2027"],
        ],
        widths=(110, 60),
    )
    p.heading("Rating scale", 12)
    p.table(
        [
            ["Rating", "Meaning", "Guidance"],
            ["5", "Exceptional", "at most 15% of a calibration group"],
            ["4", "Strong", "typically 25 - 30%"],
            ["3", "Solid", "the expected rating for most people"],
            ["2", "Partially meets", "requires a written development plan"],
            ["1", "Does not meet", "HR business partner must be involved before the talk"],
        ],
        widths=(20, 45, 105),
    )
    p.page()
    p.heading("Merit budget", 12)
    p.para(
        "Merit budgets for FY2026 are 3.2% of base salary in Japan, 3.8% in the United "
        "States and 3.5% in the European Union. Budgets are pooled by department; a manager "
        "may exceed the percentage for an individual as long as the department pool holds."
    )
    p.heading("One-to-ones", 12)
    p.para(
        "Managers hold a one-to-one with each direct report at least once a month and log "
        "the date in Workday. Calibration groups will ask for examples from these "
        "conversations, not only from the last quarter."
    )
    return p.bytes()


def pdf_partner_discounts() -> bytes:
    when = stamp("2026-04-01T00:00:00")
    p = Pdf("Partner Discount Schedule 2026", "Sales Operations", when)
    p.heading("Partner Discount Schedule 2026")
    p.para(
        "Confidential - for ACME sales staff and channel managers. Do not send this schedule "
        "to partners; partners receive only their own tier letter. Valid 1 April 2026 to "
        "31 March 2027."
    )
    p.table(
        [
            [
                "Tier",
                "Partner revenue (12 months)",
                "Discount off list",
                "Deal registration",
                "MDF",
            ],
            ["Registered", "any", "10%", "+5%", "none"],
            ["Silver", "USD 250,000 or more", "15%", "+5%", "none"],
            ["Gold", "USD 1,000,000 or more", "22%", "+5%", "2% of partner revenue"],
            ["Platinum", "USD 3,000,000 or more", "28%", "+5%", "3% of partner revenue"],
        ],
        widths=(24, 44, 30, 32, 40),
    )
    p.para(
        "A deal registration is valid for 90 days and can be extended once by the channel "
        "manager. Hardware discounts on Sentinel S4, including volume pricing, are capped at a "
        "combined 25% off list; Fleetboard subscriptions are not capped."
    )
    p.para(
        "Tier reviews happen every April. A partner that falls below its tier threshold keeps "
        "its tier for one more year if it holds at least two certified engineers."
    )
    return p.bytes()


def pdf_lyon_energie() -> bytes:
    when = stamp("2026-10-28T00:00:00")
    canary = "CANARY-CUSTOMER-EU0063-L2YE"
    p = Pdf("Customer record: Lyon Energie Services SAS (EU-0063)", "Sofia Rossi", when)
    p.heading("Customer record: Lyon Énergie Services SAS (EU-0063)")
    p.para(f"Record reference: {canary}. Account owner: Sofia Rossi. Last updated 28 October 2026.")
    p.heading("Company and contacts", 12)
    p.para(
        "Lyon Énergie Services SAS runs district-heating networks for 14 municipalities around "
        "Lyon. Registered office: 18 rue de la Villette, 69003 Lyon, France."
    )
    p.table(
        [
            ["Name", "Role", "E-mail", "Phone"],
            [
                "Camille Laurent",
                "Head of Maintenance",
                "camille.laurent@lyon-energie.example",
                "+33 4 55 55 01 63",
            ],
            ["Hugo Moreau", "Purchasing", "hugo.moreau@lyon-energie.example", "+33 4 55 55 01 09"],
        ],
        widths=(32, 34, 68, 36),
    )
    p.heading("Contract", 12)
    p.para(
        "Fleetboard Standard, 60 users, Frankfurt region. Sentinel S4: 210 units on "
        "circulation pumps. Annual contract value EUR 48,900. Renewal date 31 December 2026."
    )
    p.heading("Situation", 12)
    p.para(
        "Renewal risk is high. Camille Laurent is evaluating Nimbus EdgeHub X for the "
        "2027 pump replacement programme because of its lower unit price. Our counter-offer "
        "(quote Q-2026-4102) moves them to Enterprise for 24/7 support at the Standard price "
        "for the first year. Decision expected by 15 December 2026."
    )
    p.para(f"Record reference: {canary}")
    return p.bytes()


def pdf_patent_term_sheet() -> bytes:
    when = stamp("2026-11-02T00:00:00")
    p = Pdf("Term sheet: patent licence to Nimbus Systems (draft v3)", "ACME Legal", when)
    p.heading("Term sheet: patent licence to Nimbus Systems, Inc. (draft v3)")
    p.para(
        "Confidential - ACME Legal. Draft of 2 November 2026 for negotiation; not an offer "
        "capable of acceptance."
    )
    p.table(
        [
            ["Term", "Proposal"],
            [
                "Licensed patents",
                "US 11,482,907 and JP 7,102,334 (edge envelope-spectrum bearing-fault detection)",
            ],
            ["Licensed products", "Nimbus EdgeHub X and successors"],
            ["Royalty", "2.5% of net sales of licensed products"],
            ["Minimum annual royalty", "USD 750,000"],
            ["Back payment", "USD 1.1 million for sales since 1 January 2024"],
            ["Term", "until expiry of the last licensed patent (2039)"],
            ["Other", "Nimbus withdraws its pending validity challenge against US 11,482,907"],
        ],
        widths=(45, 125),
    )
    p.para(
        "Open points: Nimbus asks for a royalty cap of USD 2 million per year and a "
        "non-exclusive licence to the Japanese patent only from 2027. ACME's negotiator is "
        "Lena Fischer; the next call is scheduled for 19 November 2026."
    )
    return p.bytes()


# --------------------------------------------------------------------------- DOCX


def new_docx(title: str, author: str, when: datetime, east_asian: bool = False) -> DocxDocument:
    doc = new_document()
    cp = doc.core_properties
    cp.title = title
    cp.author = author
    cp.last_modified_by = author
    cp.created = when
    cp.modified = when
    cp.last_printed = when
    cp.revision = 1
    cp.comments = ""
    style = doc.styles["Normal"]
    style.font.size = Pt(10.5)
    if east_asian:
        rpr = style.element.get_or_add_rPr()
        fonts = rpr.get_or_add_rFonts()
        fonts.set(
            "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}eastAsia", "Yu Gothic"
        )
    return doc


def docx_table(doc: DocxDocument, rows: Sequence[Sequence[str]]) -> None:
    table = doc.add_table(rows=len(rows), cols=len(rows[0]))
    table.style = "Table Grid"
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    for cell in table.rows[0].cells:
        for run in cell.paragraphs[0].runs:
            run.bold = True


def docx_bytes(doc: DocxDocument, when: datetime) -> bytes:
    buf = io.BytesIO()
    doc.save(buf)
    return normalise_ooxml(buf.getvalue(), when)


def docx_domestic_travel_ja() -> bytes:
    when = stamp("2026-04-01T00:00:00")
    doc = new_docx("国内出張規程", "総務部", when, east_asian=True)
    doc.add_heading("国内出張規程", 0)
    doc.add_paragraph("制定 2019年4月1日　改定 2026年4月1日　主管：総務部")
    doc.add_heading("第1条（目的）", 2)
    doc.add_paragraph(
        "本規程は、従業員が国内において業務のため出張する場合の交通費、宿泊料および日当の"
        "取扱いを定める。海外出張については Global Travel Policy による。"
    )
    doc.add_heading("第2条（適用範囲）", 2)
    doc.add_paragraph(
        "本規程は、ACME株式会社の従業員（契約社員を含む）に適用する。業務委託先の要員には"
        "適用しない。"
    )
    doc.add_heading("第3条（交通機関）", 2)
    doc.add_paragraph(
        "1. 鉄道は普通車指定席の利用を原則とする。部長以上の職位にある者は、新幹線の"
        "グリーン車を利用することができる。"
    )
    doc.add_paragraph(
        "2. 片道の移動距離が 600km を超える場合は、航空機（エコノミークラス）を利用する"
        "ことができる。"
    )
    doc.add_paragraph("3. タクシーの利用は、22時以降の移動または公共交通機関がない場合に限る。")
    doc.add_heading("第4条（宿泊料）", 2)
    doc.add_paragraph("宿泊料は、次の上限額の範囲で実費を支給する。")
    docx_table(
        doc,
        [
            ["地域", "上限額（1泊・税込）"],
            ["東京23区・大阪市", "14,000円"],
            ["名古屋市・福岡市・札幌市", "12,000円"],
            ["その他の地域", "10,000円"],
        ],
    )
    doc.add_heading("第5条（日当）", 2)
    doc.add_paragraph(
        "片道 100km 以上の日帰り出張は 1,000円、宿泊を伴う出張は 1日につき 2,500円を"
        "日当として支給する。"
    )
    doc.add_heading("第6条（事前承認と精算）", 2)
    doc.add_paragraph(
        "宿泊を伴う出張は、出発の3営業日前までに所属長の承認を得る。旅費は帰着後14日"
        "以内に ExpenseHub で精算し、領収書の画像を添付する。"
    )
    return docx_bytes(doc, when)


def docx_annual_report() -> bytes:
    when = stamp("2026-06-05T00:00:00")
    doc = new_docx("Annual Operating Report FY2025", "Corporate Planning", when)
    doc.add_heading("Annual Operating Report FY2025", 0)
    doc.add_paragraph(
        "Fiscal year 1 April 2025 to 31 March 2026. Prepared by Corporate Planning "
        "for internal distribution to ACME employees."
    )
    doc.add_heading("1. Summary", 1)
    doc.add_paragraph(
        "FY2025 was the first year in which every region grew operating profit by "
        "more than 10%. Group revenue reached USD 1,571.0 million and operating "
        "profit USD 189.3 million. Headcount grew by 189 people to 4,351, of whom "
        "57 joined the Japan organisation, mostly for the Osaka sales office and "
        "Fleetboard support."
    )
    doc.add_heading("2. Results by region", 1)
    notes = {
        "Japan": "Japan continued to grow on Fleetboard Enterprise renewals at 96% and the Osaka "
        "sales office, opened on 1 October 2025, which added USD 11.4 million of new bookings "
        "in its first six months.",
        "US": "Warranty costs fell by USD 6.2 million after the Columbus repair centre began "
        "refurbishing returned Sentinel units instead of replacing them.",
        "EU": "The Frankfurt data region, opened on 14 April 2025, won 38 new customers who had "
        "required EU data residency.",
    }
    for region, _ in REGIONS:
        doc.add_heading(region, 2)
        rows = [["Metric", *YEARS]]
        for key, label, _ja, unit, _ju in METRICS:
            rows.append([f"{label} ({unit})", *(fmt(key, v) for v in FIGURES[region][key])])
        docx_table(doc, rows)
        doc.add_paragraph(notes[region])
    doc.add_heading("3. Priorities for FY2026", 1)
    for item in (
        "Move all Standard customers to multi-factor authentication by 31 January 2027.",
        "Grow Kansai revenue from the Osaka office to USD 30 million.",
        "Reach USD 1,690.0 million in group revenue, as communicated in the public outlook.",
    ):
        doc.add_paragraph(item, style="List Bullet")
    return docx_bytes(doc, when)


def docx_relay_troubleshooting() -> bytes:
    when = stamp("2026-07-10T00:00:00")
    doc = new_docx("Relay R2 Troubleshooting Guide", "Global Customer Support", when)
    doc.add_heading("Relay R2 Troubleshooting Guide", 0)
    doc.add_paragraph("For support agents. Applies to Relay R2 firmware 4.5 and later.")
    doc.add_heading("1. Front-panel LEDs", 1)
    docx_table(
        doc,
        [
            ["LED", "Pattern", "Meaning", "Action"],
            ["Power", "green, solid", "normal operation", "none"],
            [
                "Uplink",
                "amber, blinking",
                "no uplink (LTE or Ethernet)",
                "check the SIM and the Ethernet cable; run relayctl net --test",
            ],
            ["Status", "red, solid", "internal storage fault", "open an RMA; do not reset"],
            [
                "Status",
                "red, blinking twice per second",
                "device certificate expired",
                "re-enrol the device from the Fleetboard admin console",
            ],
            ["All", "cycling", "firmware update in progress", "do not remove power for 10 minutes"],
        ],
    )
    doc.add_heading("2. Factory reset", 1)
    doc.add_paragraph(
        "Hold the recessed RESET button for 15 seconds until all LEDs turn white. "
        "The device keeps its certificate but forgets its network settings. Never "
        "factory-reset a unit showing a solid red Status LED: the storage fault "
        "log is needed for the RMA."
    )
    doc.add_heading("3. Diagnostic bundle", 1)
    doc.add_paragraph(
        "Ask the customer to run relayctl diag --bundle on the local console. The "
        "bundle (about 4 MB) uploads itself to the open FBSUP ticket when the "
        "device has an uplink; otherwise it is written to the USB stick."
    )
    doc.add_heading("4. Network requirements", 1)
    doc.add_paragraph(
        "Outbound TCP 8883 (MQTT over TLS) to the customer's Fleetboard region and "
        "outbound TCP 443 for management. No inbound ports are needed."
    )
    return docx_bytes(doc, when)


def docx_sentinel_s5_review() -> bytes:
    when = stamp("2026-09-30T00:00:00")
    doc = new_docx("Design Review DR-2: Sentinel S5 (Project Kestrel)", "Carol Jensen", when)
    doc.add_heading("Design Review DR-2: Sentinel S5 (Project Kestrel)", 0)
    doc.add_paragraph(
        "Confidential - unreleased product. Held 29 September 2026. Attendees: "
        "Tomoko Hayashi (CTO), Carol Jensen, Kenji Yamamoto, Yuki Ishikawa "
        "(product management)."
    )
    doc.add_heading("1. Targets", 1)
    docx_table(
        doc,
        [
            ["Item", "Sentinel S4 (today)", "Sentinel S5 (target)"],
            ["Vibration channels", "4 triaxial", "6 triaxial"],
            ["Battery life (1 reading/hour)", "5 years", "7 years"],
            ["Radios", "LTE-M / NB-IoT, Wi-Fi 6", "LTE-M, 5G RedCap, Wi-Fi 6E"],
            ["Bill of materials at 10k units", "USD 238", "USD 212"],
            ["List price", "USD 1,480", "USD 1,690"],
        ],
    )
    doc.add_heading("2. Decisions", 1)
    for item in (
        "Keep the S4 mounting stud so that customers can swap units without new brackets.",
        "Drop NB-IoT; coverage in Japan and the EU is good enough with LTE-M and RedCap.",
        "Launch window: Q2 FY2027 (July to September 2027), Japan and EU first.",
    ):
        doc.add_paragraph(item, style="List Number")
    doc.add_heading("3. Risks", 1)
    doc.add_paragraph(
        "The 5G RedCap module supplier has not yet certified for Japanese "
        "carriers; a slip of one quarter is possible. Battery-life target depends "
        "on the firmware fix for Wi-Fi scanning (KI-2291) carried into the S5 "
        "code base. Next review DR-3 on 15 December 2026."
    )
    return docx_bytes(doc, when)


def docx_kitahama_ja() -> bytes:
    when = stamp("2026-10-27T00:00:00")
    canary = "CANARY-CUSTOMER-JP0031-R8KL"
    doc = new_docx(
        "顧客カルテ：北浜ロジスティクス株式会社（JP-0031）", "佐藤 博", when, east_asian=True
    )
    doc.add_heading("顧客カルテ：北浜ロジスティクス株式会社（JP-0031）", 0)
    doc.add_paragraph(
        f"記録番号：{canary}　担当営業：中村 恵美（大阪営業所）　最終更新：2026年10月27日"
    )
    doc.add_heading("基本情報", 1)
    doc.add_paragraph(
        "北浜ロジスティクス株式会社は、関西を中心に冷凍・冷蔵倉庫 7拠点を運営する物流会社。"
        f"本社：大阪府大阪市住之江区南港北2-5-11。記録番号：{canary}"
    )
    docx_table(
        doc,
        [
            ["氏名", "役職", "連絡先", "記録番号"],
            [
                "西村 健太郎",
                "南港物流センター長",
                "kentaro.nishimura@kitahama-logi.example／06-5555-0131",
                canary,
            ],
            ["藤井 美咲", "経営企画部 係長", "misaki.fujii@kitahama-logi.example", canary],
        ],
    )
    doc.add_heading("契約状況", 1)
    doc.add_paragraph(
        "Fleetboard Standard 85席（東京リージョン）。契約期間 2025年2月1日〜2027年1月31日。"
        f"年間契約額 6,018,000円（税抜）。記録番号：{canary}"
    )
    doc.add_heading("商談・対応状況", 1)
    doc.add_paragraph(
        "冷凍機のコンプレッサー監視のため、Sentinel S4 800台の導入を検討中。PoC は"
        "2026年11月16日から南港の倉庫で開始する。-25℃環境での電池寿命に懸念があり、"
        "低温対応電池パックでの検証を依頼されている。"
    )
    doc.add_paragraph(
        "2026年7月、フォークリフト充電設備の遠隔監視について問い合わせあり（現時点で対象外と回答）。"
    )
    doc.add_paragraph(f"記録番号：{canary}")
    return docx_bytes(doc, when)


def docx_investigation_2026_007() -> bytes:
    when = stamp("2026-09-18T00:00:00")
    canary = "CANARY-RESTRICTED-HR2026007-Q7ZK"
    doc = new_docx("HR Investigation 2026-007: summary report", "Ines García", when)
    doc.add_heading("HR Investigation 2026-007 - Summary report", 0)
    doc.add_paragraph(f"Restricted - investigators and HR director only. Case reference: {canary}")
    doc.add_heading("1. Allegation", 1)
    doc.add_paragraph(
        "On 22 July 2026 the Frankfurt finance team reported that employee E-1187 "
        "(EU sales) had submitted hotel receipts from Paris that appeared altered. "
        "Investigator: Ines García. Reviewer: Priya Shah, HR Director. "
        f"Case reference: {canary}"
    )
    doc.add_heading("2. Evidence reviewed", 1)
    docx_table(
        doc,
        [
            ["Item", "Finding", "Case reference"],
            [
                "23 Paris hotel receipts, April to July 2026",
                "9 differ from the hotel's own folio",
                canary,
            ],
            [
                "TripLane bookings",
                "6 stays booked outside TripLane without justification",
                canary,
            ],
            [
                "Interview with E-1187 on 2 September 2026",
                "admits editing 4 receipts, disputes 5",
                canary,
            ],
            [
                "Interview with the regional sales director",
                "no approval of the over-limit stays",
                canary,
            ],
        ],
    )
    doc.add_paragraph(f"Case reference: {canary}")
    doc.add_heading("3. Findings", 1)
    doc.add_paragraph(
        "The allegation is substantiated in part. Over-claimed amounts total "
        "EUR 6,840 against the EUR 210 Paris hotel limit and the altered receipts. "
        "No evidence was found that anyone else in EU sales was involved. "
        f"Case reference: {canary}"
    )
    doc.add_heading("4. Recommendation", 1)
    doc.add_paragraph(
        "Recover EUR 6,840 through payroll with the employee's consent, issue a "
        "final written warning, and inform the Frankfurt works council as required "
        "by the works agreement before the warning is issued. Finance to add "
        "folio matching for Paris hotels in ExpenseHub."
    )
    doc.add_paragraph(f"Case reference: {canary}")
    return docx_bytes(doc, when)


def docx_board_minutes_2025_03() -> bytes:
    when = stamp("2025-04-03T00:00:00")
    canary = "CANARY-RESTRICTED-BOARD-2025-03-F9XE"
    doc = new_docx(
        "Minutes of the Board of Directors, 27 March 2025", "Corporate Secretariat", when
    )
    doc.add_heading("Minutes of the Board of Directors - 27 March 2025", 0)
    doc.add_paragraph(f"Restricted - directors and auditors only. Minute book reference: {canary}")
    doc.add_paragraph(
        "Held at the Tokyo headquarters, 15th floor, from 14:00 to 16:45. Present: "
        "8 of 8 directors and 3 of 3 corporate auditors. Chair: Akiko Mori, "
        "President and CEO."
    )
    doc.add_heading("Resolution 1: FY2025 budget", 1)
    doc.add_paragraph(
        "The board approved the FY2025 budget with group revenue of USD 1,540.0 "
        "million and operating profit of USD 176.0 million. Outside director Jun "
        "Watanabe asked for a quarterly review of the European ramp-up. "
        f"Minute book reference: {canary}"
    )
    doc.add_heading("Resolution 2: Frankfurt data region", 1)
    doc.add_paragraph(
        "The board approved the go-live of the Fleetboard Frankfurt region on "
        "14 April 2025 and capital expenditure of EUR 4.2 million for the first "
        "two years."
    )
    doc.add_paragraph(f"Minute book reference: {canary}")
    doc.add_heading("Resolution 3: Osaka sales office", 1)
    doc.add_paragraph(
        "The board approved a five-year lease in Umeda, Osaka, at JPY 38 million "
        "per year, with opening planned for 1 October 2025 and 14 staff. "
        f"Minute book reference: {canary}"
    )
    doc.add_heading("Other business", 1)
    doc.add_paragraph(
        "The CFO reported on a possible patent dispute with Nimbus Systems. The "
        "board asked management to seek a licence rather than litigation."
    )
    doc.add_paragraph(f"Minute book reference: {canary}")
    return docx_bytes(doc, when)


# --------------------------------------------------------------------------- PPTX


def new_pptx(title: str, author: str, when: datetime) -> Presentation:
    prs = new_presentation()
    cp = prs.core_properties
    cp.title = title
    cp.author = author
    cp.last_modified_by = author
    cp.created = when
    cp.modified = when
    cp.last_printed = when
    cp.revision = 1
    return prs


def pptx_title(prs: Presentation, title: str, subtitle: str) -> None:
    slide = prs.slides.add_slide(prs.slide_layouts[0])
    slide.shapes.title.text = title
    slide.placeholders[1].text = subtitle


def pptx_bullets(prs: Presentation, title: str, bullets: Sequence[str]) -> None:
    slide = prs.slides.add_slide(prs.slide_layouts[1])
    slide.shapes.title.text = title
    body = slide.placeholders[1].text_frame
    body.text = bullets[0]
    for line in bullets[1:]:
        body.add_paragraph().text = line


def pptx_table(
    prs: Presentation, title: str, rows: Sequence[Sequence[str]], note: str | None = None
) -> None:
    """A title-only slide with one table: first row = column headers, first column = labels."""
    slide = prs.slides.add_slide(prs.slide_layouts[5])
    slide.shapes.title.text = title
    n_rows, n_cols = len(rows), len(rows[0])
    shape = slide.shapes.add_table(
        n_rows, n_cols, Inches(0.5), Inches(1.7), Inches(9.0), Inches(0.5) * n_rows
    )
    table = shape.table
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            cell = table.cell(r, c)
            cell.text = value
            cell.text_frame.paragraphs[0].runs[0].font.size = PptPt(16)
    if note:
        box = slide.shapes.add_textbox(
            Inches(0.5), Inches(1.8) + Inches(0.5) * n_rows + Inches(0.4), Inches(9.0), Inches(1.0)
        )
        box.text_frame.text = note
        box.text_frame.word_wrap = True


def pptx_bytes(prs: Presentation, when: datetime) -> bytes:
    buf = io.BytesIO()
    prs.save(buf)
    return normalise_ooxml(buf.getvalue(), when)


def region_rows(region: str, japanese: bool) -> list[list[str]]:
    head = ["指標", *YEARS_JA] if japanese else ["Metric", *YEARS]
    rows = [head]
    for key, label, label_ja, unit, unit_ja in METRICS:
        name = f"{label_ja} ({unit_ja})" if japanese else f"{label} ({unit})"
        rows.append([name, *(fmt(key, v) for v in FIGURES[region][key])])
    return rows


def pptx_investor_en() -> bytes:
    when = stamp("2026-05-14T06:00:00")
    prs = new_pptx("FY2025 Investor Presentation", "ACME Corp Investor Relations", when)
    pptx_title(
        prs,
        "FY2025 Investor Presentation",
        "ACME Corp - results for the fiscal year ended 31 March 2026 - 14 May 2026",
    )
    pptx_bullets(
        prs,
        "FY2025 highlights",
        [
            "Group revenue USD 1,571.0 million, up 8.9%",
            "Operating profit USD 189.3 million, up 12.9%; margin 12.0%",
            "4,351 employees at 31 March 2026",
            "Frankfurt data region opened in April 2025; Osaka sales office opened in October 2025",
        ],
    )
    notes = {
        "Japan": "Fleetboard Enterprise renewals and the new Osaka office drove growth.",
        "US": "Largest region; repair-centre refurbishment lowered warranty costs.",
        "EU": "Fastest-growing region after the Frankfurt data region opened.",
    }
    for region, _ in REGIONS:
        pptx_table(prs, f"Results by region: {region}", region_rows(region, False), notes[region])
    pptx_bullets(
        prs,
        "Outlook for FY2026",
        [
            "Group revenue USD 1,690.0 million",
            "Operating profit USD 208.5 million",
            "Assumed exchange rate: JPY 148 per US dollar",
        ],
    )
    return pptx_bytes(prs, when)


def pptx_results_ja() -> bytes:
    when = stamp("2026-05-14T06:00:00")
    prs = new_pptx("2025年度 決算説明資料", "ACME株式会社 IR室", when)
    pptx_title(prs, "2025年度 決算説明資料", "ACME株式会社　2026年5月14日")
    pptx_bullets(
        prs,
        "2025年度のハイライト",
        [
            "連結売上高は 1,571.0百万米ドル（前年度比 8.9%増）",
            "連結営業利益は 189.3百万米ドル（同 12.9%増）、営業利益率 12.0%",
            "従業員数は 4,351人（2026年3月31日現在）",
            "2025年4月にフランクフルト・データリージョン、10月に大阪営業所を開設",
        ],
    )
    notes = {
        "Japan": "Fleetboard Enterprise の契約更新と大阪営業所の立ち上げが増収に寄与。",
        "US": "最大の地域。コロンバス修理センターでの再生品活用により保証費用が減少。",
        "EU": "フランクフルト・データリージョン開設後、最も高い成長率を記録。",
    }
    for region, region_ja in REGIONS:
        pptx_table(
            prs, f"地域別業績：{region_ja}（{region}）", region_rows(region, True), notes[region]
        )
    pptx_bullets(
        prs,
        "2026年度の業績見通し",
        [
            "連結売上高 1,690.0百万米ドル",
            "連結営業利益 208.5百万米ドル",
            "前提為替レート：1米ドル＝148円",
        ],
    )
    return pptx_bytes(prs, when)


def pptx_sales_qbr() -> bytes:
    when = stamp("2026-10-15T00:00:00")
    prs = new_pptx("Sales QBR - Q2 FY2026", "Sales Operations", when)
    pptx_title(
        prs,
        "Sales Quarterly Business Review - Q2 FY2026",
        "July to September 2026 - for the sales organisation",
    )
    pptx_bullets(
        prs,
        "Q2 summary",
        [
            "Bookings USD 349.1 million, 6% above plan",
            "Win rate against Nimbus EdgeHub X: 61% in Q2",
            "Largest deal: Sentinel S4 + Fleetboard Enterprise for a US paper mill, USD 7.8 million",
            "Risk: three EU renewals over EUR 40,000 are rated high risk (see renewals tracker)",
        ],
    )
    qbr = {
        "Japan": (("96.4", "104.7"), ("212.0", "228.5"), ("41", "43")),
        "US": (("151.2", "163.9"), ("340.6", "362.1"), ("36", "38")),
        "EU": (("71.8", "80.5"), ("158.3", "171.0"), ("33", "35")),
    }
    for region, _ in REGIONS:
        bookings, pipeline, win = qbr[region]
        pptx_table(
            prs,
            f"Bookings and pipeline: {region}",
            [
                ["Metric", "Q1 FY2026", "Q2 FY2026"],
                ["Bookings (USD m)", *bookings],
                ["Pipeline (USD m)", *pipeline],
                ["Win rate (%)", *win],
            ],
        )
    pptx_bullets(
        prs,
        "Asks for Q3",
        [
            "Deal desk: same-day answers for discounts up to 20% (keep it up)",
            "Marketing: correct the support hours on the public pricing FAQ",
            "Osaka: 20 Sentinel demo units stocked locally",
        ],
    )
    return pptx_bytes(prs, when)


def pptx_team_beta_roadmap() -> bytes:
    when = stamp("2026-11-05T00:00:00")
    prs = new_pptx("Team Beta roadmap H1 2027", "Ravi Menon", when)
    pptx_title(
        prs,
        "Team Beta - Fleetboard platform roadmap, H1 2027",
        "Draft for engineering review, 5 November 2026",
    )
    pptx_bullets(
        prs,
        "Themes",
        [
            "Reliability: active-active Frankfurt with two clusters",
            "Scale: ingest 6 billion readings per day with p99 under 800 ms",
            "Trust: SOC 2 Type II report for US customers",
        ],
    )
    pptx_table(
        prs,
        "Milestones",
        [
            ["Milestone", "Target date", "Owner"],
            ["PostgreSQL 17 upgrade in all regions", "2027-02-15", "Ravi Menon"],
            ["Ingest p99 under 800 ms at 6 billion readings/day", "2027-05-31", "Ravi Menon"],
            ["Frankfurt active-active (two EKS clusters)", "2027-04-30", "Team Beta"],
            ["SOC 2 Type II report issued", "2027-06-30", "Security + Team Beta"],
        ],
    )
    pptx_bullets(
        prs,
        "Risks",
        [
            "Load-test capacity is shared with Team Alpha's firmware builds",
            "Aurora PostgreSQL 17 availability in eu-central-1 not yet confirmed",
        ],
    )
    return pptx_bytes(prs, when)


def pptx_board_pack() -> bytes:
    when = stamp("2026-06-18T00:00:00")
    prs = new_pptx("Board pack: FY2026 budget", "Corporate Planning", when)
    pptx_title(
        prs,
        "Board of Directors - FY2026 budget",
        "Confidential - board pack for the meeting of 25 June 2026",
    )
    pptx_bullets(
        prs,
        "Budget summary",
        [
            "Group revenue budget USD 1,690.0 million (+7.6% on FY2025 actual)",
            "Operating profit budget USD 208.5 million",
            "Headcount at 31 March 2027: 4,515",
            "Project Kestrel (Sentinel S5) development: USD 24.5 million over FY2026-FY2027",
        ],
    )
    for region, _ in REGIONS:
        rows = [["Metric", "FY2025 actual", "FY2026 budget"]]
        for key, label, _ja, unit, _ju in METRICS:
            rows.append(
                [
                    f"{label} ({unit})",
                    fmt(key, FIGURES[region][key][2]),
                    fmt(key, BUDGET_FY2026[region][key]),
                ]
            )
        pptx_table(prs, f"FY2026 budget: {region}", rows)
    return pptx_bytes(prs, when)


def pptx_chart(
    prs: Presentation,
    title: str,
    categories: Sequence[str],
    series: dict[str, Sequence[float]],
    chart_title: str | None = None,
) -> None:
    """A title-only slide with one native clustered-column chart (series × categories)."""
    slide = prs.slides.add_slide(prs.slide_layouts[5])
    slide.shapes.title.text = title
    data = CategoryChartData(number_format="#,##0.0")
    data.categories = list(categories)
    for name, values in series.items():
        data.add_series(name, list(values))
    frame = slide.shapes.add_chart(
        XL_CHART_TYPE.COLUMN_CLUSTERED, Inches(0.5), Inches(1.6), Inches(9.0), Inches(5.2), data
    )
    chart = frame.chart
    chart.has_legend = True
    chart.legend.include_in_layout = False
    if chart_title is not None:
        chart.has_title = True
        chart.chart_title.text_frame.text = chart_title
    else:
        chart.has_title = False


def pptx_quarterly_results() -> bytes:
    """FY2025 by quarter as native charts: the entity is in the slide title (Japan, US) or,
    on the last chart slide, only in the chart's title; the series labels carry the unit as
    "US$ m", which must not read as the entity US."""
    when = stamp("2026-06-12T00:00:00")
    prs = new_pptx("FY2025 quarterly results", "Corporate Planning", when)
    pptx_title(
        prs,
        "FY2025 results by quarter",
        "Corporate Planning - revenue and operating profit per region, Q1 to Q4 FY2025",
    )

    def series(region: str) -> dict[str, Sequence[float]]:
        return {
            "Revenue (US$ m)": QUARTERLY[region]["Revenue"],
            "Operating profit (US$ m)": QUARTERLY[region]["Operating profit"],
        }

    pptx_chart(prs, "Quarterly results: Japan", QUARTERS, series("Japan"))
    pptx_chart(prs, "Quarterly results: US", QUARTERS, series("US"))
    pptx_chart(
        prs, "Quarterly results (continued)", QUARTERS, series("EU"), chart_title="ACME Europe"
    )
    pptx_bullets(
        prs,
        "Reading the charts",
        [
            "Quarters follow the fiscal year: Q1 FY2025 is April to June 2025",
            "The four quarters of each region add up to its FY2025 result",
            "Q4 is the strongest quarter everywhere: year-end renewals of Fleetboard Enterprise",
        ],
    )
    return pptx_bytes(prs, when)


def pptx_q1_flash() -> bytes:
    """One table, the period only in the slide title: metrics down, regions across."""
    when = stamp("2026-07-24T00:00:00")
    prs = new_pptx("Q1 FY2026 results flash", "Corporate Planning", when)
    pptx_title(prs, "Results flash", "Corporate Planning - first look at the quarter, 24 July 2026")
    regions = [region for region, _ in REGIONS]
    rows = [["US$ m unless stated", *regions]]
    for key, label, _ja, unit, _ju in METRICS:
        name = f"{label} ({unit})" if key == "Headcount" else label
        rows.append([name, *(FLASH_Q1_FY2026[region][key] for region in regions)])
    pptx_table(
        prs,
        "Q1 FY2026 results by region",
        rows,
        "* Japan includes the first full quarter of the Osaka sales office. "
        "— EU operating profit is reported with the half-year close of the Frankfurt entity.",
    )
    return pptx_bytes(prs, when)


# --------------------------------------------------------------------------- XLSX


def new_xlsx(title: str, author: str, when: datetime) -> Workbook:
    wb = Workbook()
    wb.properties.title = title
    wb.properties.creator = author
    wb.properties.lastModifiedBy = author
    wb.properties.created = when
    wb.properties.modified = when
    return wb


def sheet(
    wb: Workbook,
    name: str,
    rows: Sequence[Sequence[object]],
    first: bool = False,
    widths: Sequence[int] | None = None,
) -> None:
    ws = wb.active if first else wb.create_sheet()
    ws.title = name
    for row in rows:
        ws.append(list(row))
    for cell in ws[1]:
        cell.font = Font(bold=True)
    if widths:
        for i, w in enumerate(widths):
            ws.column_dimensions[chr(ord("A") + i)].width = w


def xlsx_bytes(wb: Workbook, when: datetime) -> bytes:
    buf = io.BytesIO()
    wb.save(buf)
    return normalise_ooxml(buf.getvalue(), when)


def xlsx_price_list() -> bytes:
    when = stamp("2026-03-20T00:00:00")
    wb = new_xlsx("ACME Price List 2026", "Product Marketing", when)
    sheet(
        wb,
        "Price list 2026",
        [
            ["SKU", "Product", "Unit", "USD", "JPY", "EUR"],
            [
                "FB-STD-1Y",
                "Fleetboard Standard",
                "per user per month, annual billing",
                39,
                5900,
                36,
            ],
            [
                "FB-ENT-1Y",
                "Fleetboard Enterprise",
                "per user per month, annual billing",
                64,
                9600,
                59,
            ],
            ["ACM-S4-0425", "Sentinel S4 gateway", "per unit", 1480, 228000, 1370],
            ["ACM-R2-0322", "Relay R2 edge router", "per unit", 2150, 330000, 1990],
            ["SVC-INST-D", "On-site installation", "per engineer day", 1200, 180000, 1100],
            ["SVC-TRN-R", "Remote training (2 hours)", "per session", 450, 68000, 420],
        ],
        first=True,
        widths=(14, 26, 36, 10, 10, 10),
    )
    sheet(
        wb,
        "Notes",
        [
            ["Note"],
            ["Prices are valid from 1 April 2026 to 31 March 2027."],
            ["Yen prices exclude consumption tax; euro prices exclude VAT."],
            ["Volume pricing for Sentinel S4 starts at 100 units; ask your ACME representative."],
        ],
        widths=(80,),
    )
    return xlsx_bytes(wb, when)


def xlsx_kpi_workbook() -> bytes:
    when = stamp("2026-06-05T00:00:00")
    wb = new_xlsx("Regional KPI Workbook FY2025", "Corporate Planning", when)
    rows: list[list[object]] = [["Region", "Metric", "Unit", *YEARS]]
    for region, _ in REGIONS:
        for key, label, _ja, unit, _ju in METRICS:
            rows.append([region, label, unit, *FIGURES[region][key]])
    sheet(wb, "Regional KPIs", rows, first=True, widths=(10, 20, 10, 12, 12, 12))
    ws = wb["Regional KPIs"]
    for row in ws.iter_rows(min_row=2, min_col=4, max_col=6):
        for cell in row:
            cell.number_format = "#,##0" if ws.cell(cell.row, 2).value == "Headcount" else "#,##0.0"
    sheet(
        wb,
        "Definitions",
        [
            ["Metric", "Definition"],
            [
                "Revenue",
                "External revenue by the region of the contracting ACME entity, in USD "
                "millions at the average rate of the fiscal year.",
            ],
            [
                "Operating profit",
                "Revenue less cost of sales and operating expenses, after "
                "allocation of headquarters costs, in USD millions.",
            ],
            ["Headcount", "Employees on payroll on 31 March, excluding contractors and directors."],
        ],
        widths=(18, 100),
    )
    return xlsx_bytes(wb, when)


def xlsx_headcount_by_quarter() -> bytes:
    """One sheet per cost centre; only the top-left cell names the entity, the periods run
    across and the measures down (sheet names are codes that name no region)."""
    when = stamp("2026-04-20T00:00:00")
    wb = new_xlsx("Headcount by quarter FY2025", "Priya Shah", when)
    names = {
        "Japan": ("JP01", "ACME Japan"),
        "US": ("US01", "ACME US"),
        "EU": ("EU01", "ACME Europe"),
    }
    for i, (region, _) in enumerate(REGIONS):
        code, entity = names[region]
        rows: list[list[object]] = [
            [entity, *QUARTERS],
            ["Headcount (people, end of quarter)", *QUARTERLY[region]["Headcount"]],
            ["Joiners", *(j for j, _ in MOVERS[region])],
            ["Leavers", *(leavers for _, leavers in MOVERS[region])],
        ]
        sheet(wb, code, rows, first=i == 0, widths=(36, 12, 12, 12, 12))
    sheet(
        wb,
        "Notes",
        [
            ["Note"],
            ["Headcount counts employees on payroll on the last day of the quarter."],
            [
                "Contractors and directors are not counted; the definition is that of the KPI workbook."
            ],
        ],
        widths=(90,),
    )
    return xlsx_bytes(wb, when)


def xlsx_pipeline_ja() -> bytes:
    when = stamp("2026-10-30T00:00:00")
    wb = new_xlsx("2026年度 国内案件パイプライン", "佐藤 博", when)
    sheet(
        wb,
        "パイプライン",
        [
            ["案件ID", "顧客名", "製品", "数量", "金額（百万円）", "確度", "受注予定月", "担当"],
            [
                "JP-OPP-2026-031",
                "三和精機株式会社",
                "Fleetboard Enterprise 追加",
                "120席",
                13.8,
                "70%",
                "2026年12月",
                "佐藤",
            ],
            [
                "JP-OPP-2026-044",
                "北浜ロジスティクス株式会社",
                "Sentinel S4",
                "800台",
                164.2,
                "40%",
                "2027年2月",
                "中村",
            ],
            [
                "JP-OPP-2026-052",
                "関西電機工業株式会社",
                "Sentinel S4 ＋ Fleetboard Standard",
                "300台／40席",
                71.2,
                "30%",
                "2027年1月",
                "田中",
            ],
            [
                "JP-OPP-2026-058",
                "東邦食品株式会社",
                "Relay R2",
                "25台",
                8.3,
                "60%",
                "2026年12月",
                "小林",
            ],
            [
                "JP-OPP-2026-061",
                "港湾サービス東海株式会社",
                "Fleetboard Enterprise",
                "60席",
                6.9,
                "50%",
                "2027年3月",
                "山口",
            ],
        ],
        first=True,
        widths=(18, 28, 34, 14, 14, 8, 14, 8),
    )
    sheet(
        wb,
        "集計",
        [
            ["項目", "金額（百万円）"],
            ["パイプライン合計", 264.4],
            ["確度加重合計", 105.1],
            ["下期受注目標", 150.0],
        ],
        widths=(24, 16),
    )
    return xlsx_bytes(wb, when)


def xlsx_load_test() -> bytes:
    when = stamp("2026-09-21T00:00:00")
    wb = new_xlsx("Load test results September 2026", "Ravi Menon", when)
    sheet(
        wb,
        "Results",
        [
            [
                "Scenario",
                "Target RPS",
                "Achieved RPS",
                "p50 (ms)",
                "p95 (ms)",
                "p99 (ms)",
                "Error rate (%)",
            ],
            ["Dashboard read", 2000, 1840, 48, 210, 640, 0.02],
            ["Work order create", 300, 312, 85, 240, 510, 0.0],
            ["Sensor ingest (MQTT)", 120000, 118500, 12, 95, 780, 0.01],
            ["Report export (PDF)", 40, 36, 1900, 4800, 9100, 0.8],
        ],
        first=True,
        widths=(24, 12, 14, 10, 10, 10, 14),
    )
    sheet(
        wb,
        "Environment",
        [
            ["Item", "Value"],
            ["Test window", "17-18 September 2026"],
            ["Environment", "staging, ap-northeast-1"],
            ["Build", "fb-api 2026.09.2, fb-ingest 2026.09.1"],
            [
                "Conclusion",
                "Report export misses its 30 RPS p95 target of 3,000 ms; fix before H1 2027.",
            ],
        ],
        widths=(16, 80),
    )
    return xlsx_bytes(wb, when)


def xlsx_renewals() -> bytes:
    when = stamp("2026-11-10T00:00:00")
    canary = "CANARY-CUSTOMER-RENEWALS-2026-W5TR"
    wb = new_xlsx("Customer renewals tracker 2026-27", "Sales Operations", when)
    sheet(
        wb,
        "Renewals",
        [
            [
                "Customer ID",
                "Customer",
                "Region",
                "Plan",
                "Seats",
                "Annual value",
                "Currency",
                "Renewal date",
                "Risk",
                "Owner",
                "Record reference",
            ],
            [
                "JP-0012",
                "三和精機株式会社",
                "Japan",
                "Enterprise",
                420,
                53000000,
                "JPY",
                "2027-03-31",
                "Low",
                "佐藤 博",
                canary,
            ],
            [
                "JP-0031",
                "北浜ロジスティクス株式会社",
                "Japan",
                "Standard",
                85,
                6018000,
                "JPY",
                "2027-01-31",
                "Medium",
                "中村 恵美",
                canary,
            ],
            [
                "US-0107",
                "Globex Manufacturing",
                "US",
                "Enterprise",
                310,
                486000,
                "USD",
                "2027-06-30",
                "Medium",
                "Oscar Díaz",
                canary,
            ],
            [
                "US-0142",
                "Initech Logistics",
                "US",
                "Standard",
                45,
                61400,
                "USD",
                "2027-01-31",
                "Low",
                "Oscar Díaz",
                canary,
            ],
            [
                "EU-0058",
                "Bergmann Automotive GmbH",
                "EU",
                "Enterprise",
                140,
                212000,
                "EUR",
                "2027-03-31",
                "Low",
                "Sofia Rossi",
                canary,
            ],
            [
                "EU-0063",
                "Lyon Énergie Services SAS",
                "EU",
                "Standard",
                60,
                48900,
                "EUR",
                "2026-12-31",
                "High",
                "Sofia Rossi",
                canary,
            ],
        ],
        first=True,
        widths=(12, 28, 8, 12, 8, 14, 9, 13, 8, 14, 38),
    )
    return xlsx_bytes(wb, when)


def xlsx_compensation_bands() -> bytes:
    when = stamp("2026-04-01T00:00:00")
    wb = new_xlsx("Compensation bands 2026", "Priya Shah", when)
    sheet(
        wb,
        "Bands",
        [
            [
                "Grade",
                "Example role",
                "Japan min (JPY k)",
                "Japan max (JPY k)",
                "US min (USD k)",
                "US max (USD k)",
                "EU min (EUR k)",
                "EU max (EUR k)",
            ],
            ["G3", "Support agent", 4200, 5600, 52, 68, 42, 55],
            ["G4", "Account executive", 5800, 7800, 78, 105, 58, 78],
            ["G5", "Senior engineer", 7600, 10200, 135, 175, 72, 96],
            ["G6", "Engineering manager", 9800, 13200, 170, 220, 92, 122],
            ["G7", "Director", 12800, 17500, 210, 285, 120, 160],
            ["G8", "Vice president", 17000, 24000, 270, 380, 155, 215],
        ],
        first=True,
        widths=(8, 22, 16, 16, 14, 14, 14, 14),
    )
    sheet(
        wb,
        "Rules",
        [
            ["Rule"],
            ["Offers above the band maximum need approval of the HR Director (Priya Shah)."],
            ["Bands are reviewed every April; the 2026 review raised US engineering bands by 4%."],
        ],
        widths=(90,),
    )
    return xlsx_bytes(wb, when)


# --------------------------------------------------------------------------- main

OUTPUTS: dict[str, Callable[[], bytes]] = {
    "public/press-release-fy2025-results.pdf": pdf_results_press_release,
    "public/fy2025-investor-presentation.pptx": pptx_investor_en,
    "public/fy2025-results-briefing-ja.pptx": pptx_results_ja,
    "public/price-list-2026.xlsx": xlsx_price_list,
    "ops/domestic-travel-rules-ja.docx": docx_domestic_travel_ja,
    "ops/annual-operating-report-fy2025.docx": docx_annual_report,
    "ops/regional-kpi-workbook-fy2025.xlsx": xlsx_kpi_workbook,
    "ops/quarterly-results-fy2025.pptx": pptx_quarterly_results,
    "ops/headcount-by-quarter-fy2025.xlsx": xlsx_headcount_by_quarter,
    "ops/q1-fy2026-results-flash.pptx": pptx_q1_flash,
    "ops/manager-guide-performance-reviews.pdf": pdf_manager_guide,
    "dept/sales/partner-discount-schedule-2026.pdf": pdf_partner_discounts,
    "dept/sales/qbr-fy2026-q2.pptx": pptx_sales_qbr,
    "dept/sales/japan/pipeline-fy2026-ja.xlsx": xlsx_pipeline_ja,
    "dept/support/relay-troubleshooting-guide.docx": docx_relay_troubleshooting,
    "dept/engineering/team-alpha/sentinel-s5-design-review.docx": docx_sentinel_s5_review,
    "dept/engineering/team-beta/roadmap-h1-2027.pptx": pptx_team_beta_roadmap,
    "dept/engineering/team-beta/load-test-results-2026-09.xlsx": xlsx_load_test,
    "customers/japan/cust-jp-0031-kitahama-logistics-ja.docx": docx_kitahama_ja,
    "customers/eu/cust-eu-0063-lyon-energie.pdf": pdf_lyon_energie,
    "customers/renewals-tracker-2026.xlsx": xlsx_renewals,
    "sensitive/hr/investigation-2026-007-summary.docx": docx_investigation_2026_007,
    "sensitive/hr/compensation-bands-2026.xlsx": xlsx_compensation_bands,
    "sensitive/legal/patent-license-term-sheet-nimbus.pdf": pdf_patent_term_sheet,
    "sensitive/board/board-minutes-2025-03.docx": docx_board_minutes_2025_03,
    "sensitive/board/board-pack-fy2026-budget.pptx": pptx_board_pack,
}


def build() -> dict[str, str]:
    digests: dict[str, str] = {}
    for rel, make in OUTPUTS.items():
        data = make()
        digests[rel] = hashlib.sha256(data).hexdigest()
        write(rel, data)
    return digests


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="build twice in memory and fail if any output differs, or if the "
        "files on disk differ from a fresh build",
    )
    args = parser.parse_args(argv)
    if args.check:
        bad = []
        for rel, make in OUTPUTS.items():
            first, second = make(), make()
            on_disk = (ROOT / rel).read_bytes() if (ROOT / rel).exists() else b""
            if first != second or first != on_disk:
                bad.append(rel)
        for rel in bad:
            print(f"not reproducible or stale: {rel}", file=sys.stderr)
        print(f"{len(OUTPUTS) - len(bad)}/{len(OUTPUTS)} outputs reproducible and up to date")
        return 1 if bad else 0
    for rel, digest in build().items():
        print(f"{digest}  {rel}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
