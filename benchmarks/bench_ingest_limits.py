"""Ingestion limits benchmark: large files, files at the limits and zip bombs, one child each.

Not a test: it prints figures (and PASS/MISS next to the two targets) and never asserts.

Every case is ingested by ``Clearance.ingest`` into a fresh SQLite index with embeddings off
(``[embedding] provider = "none"``: embedding is a separate cost, measured in
``bench_store.py``) and the default ``[ingest]`` limits unless the case says otherwise, in
its own child process, so the peak RSS reported (``VmHWM`` of the child, read from ``/proc``
before it exits, or by the parent just before it kills a child that ran out of time) belongs
to that file alone. The child's interpreter with Clearance imported is measured the same way,
as a baseline. "extract" is the time ``extract`` took inside the ingest (loader only).

Cases (generated once into ``--work``, seeded, reused on the next run):

* ``csv-1MB`` / ``csv-10MB`` / ``csv-100MB``: sales rows of ~120 bytes (9 columns), i.e.
  ~8,000 / ~80,000 / ~800,000 rows; the "100 MB" file is 99.9 MB, just under
  ``max_file_mb``, and has more rows than ``max_rows`` (100,000): it is read up to the cap;
* ``pdf-5000p``: 5,000 pages of ~1,500 characters (fpdf2);
* the review's bombs, same shapes and sizes: a PPTX carrying an unreferenced 3 GiB part, a
  DOCX whose ``document.xml`` expands to 1.5 GiB, an XLSX with a 1.5 GiB sheet, each a few MB
  on disk; and ``docx-lying-header``, that DOCX with its zip headers patched to declare 10 kB;
* files just inside the default limits, built to be as hard on memory as the limits allow:
  ``docx-xml-at-limit`` (31 MB of empty Word paragraphs, the most tree per byte of XML, under
  the 32 MB of XML), ``pptx-parts-at-limit`` (a 250 MB unreferenced part, under the 256 MB),
  ``xlsx-100k-rows`` (100,000 rows × 10 columns), ``md-99MB`` (Markdown under the 100 MB);
* ``--extra`` adds ``html-99MB``, ``txt-99MB`` and ``csv-100MB max_rows=1M`` (the 100 MB CSV
  ingested whole, outside the defaults).

Targets: peak RSS ≤ 1 GB for every case under the default limits; every bomb refused within
5 s. ``--cap-gb`` sets an address-space limit on each child and ``--timeout`` a wall-time
limit, so a run on code without limits cannot take the machine down.

Usage::

    .venv/bin/python benchmarks/bench_ingest_limits.py [--work DIR] [--only NAME ...] [--extra]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import struct
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

MB = 1_000_000
GIB = 1 << 30
RSS_TARGET = 1_000_000_000
BOMB_SECONDS = 5.0


# --------------------------------------------------------------------------- inputs


def _csv(path: Path, size: int) -> None:
    rng = random.Random(size)
    regions = ["EMEA", "APAC", "AMER", "LATAM", "Nordics", "DACH"]
    products = ["Widget", "Gadget", "Sprocket", "Flange", "Bracket", "Gasket", "Valve"]
    with path.open("w", encoding="utf-8", newline="") as out:
        out.write("id,date,region,product,customer,quantity,unit_price,amount,note\r\n")
        written, row = 0, 0
        while written < size:
            row += 1
            qty = rng.randint(1, 500)
            price = rng.randint(100, 99_999) / 100
            line = (
                f"{row},2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d},"
                f"{rng.choice(regions)},{rng.choice(products)},"
                f"Customer {rng.randint(1, 50_000):05d},{qty},{price:.2f},{qty * price:.2f},"
                f"order {rng.randint(10**7, 10**8)} shipped on time from warehouse "
                f"{rng.choice(regions)}-{rng.randint(1, 99)}\r\n"
            )
            out.write(line)
            written += len(line)


def _pdf(path: Path, pages: int) -> None:
    from fpdf import FPDF

    rng = random.Random(pages)
    words = [
        "revenue", "margin", "policy", "travel", "contract", "region", "quarter", "forecast",
        "supplier", "invoice", "approval", "budget", "Tokyo", "Berlin", "compliance", "audit",
    ]  # fmt: skip
    pdf = FPDF()
    pdf.set_font("Helvetica", size=10)
    pdf.set_auto_page_break(False)
    for number in range(1, pages + 1):
        pdf.add_page()
        text = " ".join(rng.choice(words) for _ in range(190))
        pdf.multi_cell(0, 5, text=f"Page {number}. {text}")
    pdf.output(str(path))


def _template(fmt: str, work: Path) -> Path:
    """A small real OOXML file of ``fmt``, written by the library users' tools write it with."""
    path = work / f"template.{fmt}"
    if fmt == "docx":
        import docx

        document = docx.Document()
        document.add_paragraph("Template")
        document.save(str(path))
    elif fmt == "pptx":
        from pptx import Presentation

        deck = Presentation()
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = "Quarterly review"
        deck.save(str(path))
    else:
        import openpyxl

        book = openpyxl.Workbook()
        book.active.append(["region", "revenue"])
        book.save(str(path))
    return path


def _repeat(head: bytes, unit: bytes, tail: bytes, size: int) -> Iterator[bytes]:
    yield head
    block = unit * max(1, (1 << 20) // len(unit))
    for _ in range(size // len(block)):
        yield block
    yield tail


def _bomb(path: Path, template: Path, member: str, chunks: Iterator[bytes], size: int) -> None:
    """Copy ``template`` with ``member`` replaced (or added) by the streamed ``chunks``."""
    with zipfile.ZipFile(template) as src, zipfile.ZipFile(path, "w") as out:
        for info in src.infolist():
            if info.filename != member:
                out.writestr(info, src.read(info), compress_type=zipfile.ZIP_DEFLATED)
        target = zipfile.ZipInfo(member)
        target.compress_type = zipfile.ZIP_DEFLATED
        with out.open(target, "w", force_zip64=size >= 2 * GIB) as handle:
            for chunk in chunks:
                handle.write(chunk)


def _lie(path: Path, member: str, declared: int) -> None:
    """Patch ``member``'s local and central headers to declare ``declared`` bytes."""
    data = bytearray(path.read_bytes())
    name = member.encode()
    entries, _, start = struct.unpack_from("<HII", data, len(data) - 12)  # EOCD, no comment
    for _ in range(entries):
        name_len, extra_len, comment_len = struct.unpack_from("<HHH", data, start + 28)
        if data[start + 46 : start + 46 + name_len] == name:
            struct.pack_into("<I", data, start + 24, declared)
            local = struct.unpack_from("<I", data, start + 42)[0]
            struct.pack_into("<I", data, local + 22, declared)
            path.write_bytes(bytes(data))
            return
        start += 46 + name_len + extra_len + comment_len
    raise RuntimeError(f"{member} not found in {path}")


_W = b'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
_S = b'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'


def _docx_bomb(path: Path, work: Path, size: int) -> None:
    head = b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document ' + _W
    head += b"><w:body>"
    unit = b"<w:p><w:r><w:t>All work and no play makes a dull boy.</w:t></w:r></w:p>"
    _bomb(
        path,
        _template("docx", work),
        "word/document.xml",
        _repeat(head, unit, b"</w:body></w:document>", size),
        size,
    )


def _xlsx_bomb(path: Path, work: Path, size: int) -> None:
    head = b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><worksheet ' + _S
    head += b"><sheetData>"
    unit = b'<row><c t="inlineStr"><is><t>bomb</t></is></c><c><v>1</v></c></row>'
    _bomb(
        path,
        _template("xlsx", work),
        "xl/worksheets/sheet1.xml",
        _repeat(head, unit, b"</sheetData></worksheet>", size),
        size,
    )


def _pptx_bomb(path: Path, work: Path, size: int) -> None:
    _bomb(
        path,
        _template("pptx", work),
        "ppt/media/unused.bin",
        _repeat(b"", b"\0" * 4096, b"", size),
        size,
    )


def _lying_docx(path: Path, work: Path, size: int) -> None:
    _docx_bomb(path, work, size)
    _lie(path, "word/document.xml", 10_000)


def _docx_xml_at_limit(path: Path, work: Path) -> None:
    """31 MB of empty paragraphs (plus the template's 0.8 MB of XML) and one with text."""
    head = b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document ' + _W
    head += b"><w:body>"
    tail = b"<w:p><w:r><w:t>The end.</w:t></w:r></w:p></w:body></w:document>"
    chunks = _repeat(head, b"<w:p/>", tail, 31 * MB)
    _bomb(path, _template("docx", work), "word/document.xml", chunks, 31 * MB)


def _xlsx_rows(path: Path, rows: int) -> None:
    import openpyxl

    rng = random.Random(rows)
    book = openpyxl.Workbook(write_only=True)
    sheet = book.create_sheet("Sales")
    sheet.append(["id", "date", "region", "product", "customer", "qty", "price", "amount",
                  "margin", "note"])  # fmt: skip
    for i in range(1, rows + 1):
        qty, price = rng.randint(1, 500), rng.randint(100, 99_999) / 100
        sheet.append([i, f"2024-{rng.randint(1, 12):02d}-01", rng.choice(["EMEA", "APAC"]),
                      f"P{rng.randint(1, 999)}", f"C{rng.randint(1, 50_000)}", qty, price,
                      round(qty * price, 2), rng.random(), "shipped"])  # fmt: skip
    book.save(str(path))


def _text(path: Path, size: int, kind: str) -> None:
    rng = random.Random(size)
    words = ["revenue", "margin", "policy", "travel", "contract", "region", "quarter",
             "forecast", "supplier", "invoice", "approval", "budget", "Tokyo", "Berlin"]  # fmt: skip
    with path.open("w", encoding="utf-8") as out:
        written = section = 0
        while written < size:
            sentence = " ".join(rng.choice(words) for _ in range(rng.randint(6, 16))) + "."
            if rng.random() < 0.02:
                section += 1
                block = {"md": f"## Section {section}\n\n", "html": f"<h2>Section {section}</h2>\n"}
                line = block.get(kind, f"Section {section}\n\n")
            elif kind == "md":
                line = rng.choice(
                    [f"{sentence}\n\n", f"- {sentence}\n", f"| {section} | {sentence} |\n"]
                )
            elif kind == "html":
                line = rng.choice([f"<p>{sentence}</p>\n", f"<li>{sentence}</li>\n"])
            else:
                line = f"{sentence}\n\n"
            out.write(line)
            written += len(line.encode())


Case = tuple[str, Callable[[Path, Path], None], dict[str, int]]
CASES: dict[str, Case] = {
    "csv-1MB": ("data-1MB.csv", lambda p, w: _csv(p, 1 * MB), {}),
    "csv-10MB": ("data-10MB.csv", lambda p, w: _csv(p, 10 * MB), {}),
    "csv-100MB": ("data-100MB.csv", lambda p, w: _csv(p, 99_900_000), {}),
    "pdf-5000p": ("report-5000p.pdf", lambda p, w: _pdf(p, 5000), {}),
    "pptx-bomb-3GiB": ("deck-bomb.pptx", lambda p, w: _pptx_bomb(p, w, 3 * GIB), {}),
    "docx-bomb-1.5GiB": ("doc-bomb.docx", lambda p, w: _docx_bomb(p, w, 3 * GIB // 2), {}),
    "xlsx-bomb-1.5GiB": ("book-bomb.xlsx", lambda p, w: _xlsx_bomb(p, w, 3 * GIB // 2), {}),
    "docx-lying-header": ("doc-lying.docx", lambda p, w: _lying_docx(p, w, 3 * GIB // 2), {}),
    "docx-xml-at-limit": ("doc-xml-31MB.docx", _docx_xml_at_limit, {}),
    "pptx-parts-at-limit": ("deck-250MB.pptx", lambda p, w: _pptx_bomb(p, w, 250 * MB), {}),
    "xlsx-100k-rows": ("book-100k.xlsx", lambda p, w: _xlsx_rows(p, 100_000), {}),
    "md-99MB": ("notes-99MB.md", lambda p, w: _text(p, 99 * MB, "md"), {}),
}
EXTRA: dict[str, Case] = {
    "html-99MB": ("page-99MB.html", lambda p, w: _text(p, 99 * MB, "html"), {}),
    "txt-99MB": ("notes-99MB.txt", lambda p, w: _text(p, 99 * MB, "txt"), {}),
    "csv-100MB max_rows=1M": ("data-100MB.csv", lambda p, w: _csv(p, 99_900_000),
                              {"max_rows": 1_000_000}),
}  # fmt: skip
BOMBS = frozenset(name for name in CASES if "bomb" in name or "lying" in name)


# --------------------------------------------------------------------------- child


def _hwm(pid: int | str = "self") -> int:
    """Peak resident set size of a process, in bytes (``VmHWM``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def _child(path: str, max_rows: int) -> None:
    from clearance.app import Clearance
    from clearance.config import settings_from_dict
    from clearance.ingest import pipeline
    from clearance.store.sqlite import SQLiteStore

    result: dict[str, object] = {}
    if path:
        extract = pipeline.extract
        timed: dict[str, float] = {"extract": 0.0, "extract_hwm": 0.0}

        def timed_extract(*args: object, **kwargs: object) -> object:
            started = time.perf_counter()
            try:
                return extract(*args, **kwargs)
            finally:
                timed["extract"] += time.perf_counter() - started
                timed["extract_hwm"] = _hwm()

        pipeline.extract = timed_extract
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            data: dict[str, object] = {"embedding": {"provider": "none"}}
            if max_rows:
                data["ingest"] = {"max_rows": max_rows}
            settings = settings_from_dict(data, root=root)
            store = SQLiteStore(root / "index.db")
            started = time.perf_counter()
            with Clearance(settings, store, embedder=None) as app:
                report = app.ingest([Path(path)])
            result["seconds"] = time.perf_counter() - started
            outcome = report.results[0]
            result["status"] = outcome.status
            result["error"] = outcome.error
            result["chunks"] = report.chunks_written
        result.update(timed)
    result["hwm"] = _hwm()
    print(json.dumps(result))


# --------------------------------------------------------------------------- parent


def _run(path: str, max_rows: int, cap: int, timeout: float) -> dict[str, object]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    cmd = [sys.executable, __file__, "--child", path, "--max-rows", str(max_rows)]
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, preexec_fn=limit)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        hwm = _hwm(proc.pid)
        proc.kill()
        proc.communicate()
        return {"status": f"killed after {timeout:.0f}s", "hwm": hwm, "seconds": timeout}
    wall = time.perf_counter() - started
    lines = out.strip().splitlines()
    if proc.returncode != 0 or not lines:
        return {"status": f"crashed (exit {proc.returncode})", "hwm": 0, "seconds": wall}
    return dict(json.loads(lines[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "bench-limits")
    parser.add_argument("--only", nargs="*", default=None, help="case names (default: all)")
    parser.add_argument("--extra", action="store_true", help="also the extra cases")
    parser.add_argument("--cap-gb", type=float, default=4.0, help="address-space cap per child")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per case")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--max-rows", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        _child(args.child, args.max_rows)
        return

    args.work.mkdir(parents=True, exist_ok=True)
    cap = int(args.cap_gb * GIB)
    cases = {**CASES, **EXTRA}
    names = args.only or [*CASES, *(EXTRA if args.extra else ())]
    baseline = _run("", 0, cap, args.timeout)
    print(f"child interpreter with clearance imported: peak RSS {baseline['hwm'] / MB:.0f} MB")
    print(
        f"{'case':22} {'on disk':>9} {'status':8} {'ingest s':>8} {'extract s':>9} "
        f"{'extract RSS':>11} {'peak RSS':>9}  targets"
    )
    for name in names:
        filename, make, overrides = cases[name]
        path = args.work / filename
        if not path.exists():
            make(path, args.work)
        size = os.path.getsize(path)
        result = _run(str(path), overrides.get("max_rows", 0), cap, args.timeout)
        rss = int(str(result["hwm"]))
        seconds = float(str(result["seconds"]))
        extract_s = float(str(result.get("extract", "nan")))
        extract_rss = float(str(result.get("extract_hwm", "nan")))
        verdicts = []
        if not overrides:
            verdicts.append("RSS " + ("PASS" if 0 < rss <= RSS_TARGET else "MISS"))
        if name in BOMBS:
            refused = result["status"] == "failed" and seconds <= BOMB_SECONDS
            verdicts.append("≤5 s refusal " + ("PASS" if refused else "MISS"))
        print(
            f"{name:22} {size / MB:>7.1f}MB {result['status']!s:8} {seconds:>8.2f} "
            f"{extract_s:>9.2f} {extract_rss / MB:>9.0f}MB {rss / MB:>7.0f}MB  "
            f"{', '.join(verdicts)}"
        )
        if result.get("error"):
            print(f"{'':22}   error: {result['error']}")
        if result.get("chunks"):
            print(f"{'':22}   chunks written: {result['chunks']}")


if __name__ == "__main__":
    main()
