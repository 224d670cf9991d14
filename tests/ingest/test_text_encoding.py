"""UTF-16 without a byte-order mark is read, or refused — never indexed with NULs (issue 15).

The review's case: a UTF-16 text file without a BOM is valid UTF-8 when its text is mostly
Latin (every other byte is NUL), so it was indexed with NULs between the letters and nobody
could find a word of it. The invariant: what a text loader returns is the file's text, with
no NUL in it, or the file is refused with a message. The reverse proof runs the same
assertion with the old encoding guess (UTF-8 unless there is a BOM) and no NUL check.
"""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest

from clearance.errors import LoaderError
from clearance.ingest.loaders import encoding, extract

TEXT = "Revenue grew in Japan and the EU.\nMargins held at 12 %.\n"
CSV = "region,revenue\nJapan,120\nEU,80\n"


def assert_read_as_text(path: Path, words: list[str]) -> str:
    """``path`` reads as text: no NUL, every word of ``words`` findable."""
    text = "\n".join(s.text for s in extract(path, max_chars=800).sections)
    assert "\0" not in text, f"NULs indexed: {text[:40]!r}"
    assert all(word in text for word in words), text
    return text


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
@pytest.mark.parametrize(
    ("suffix", "content"), [(".txt", TEXT), (".md", "# Report\n\n" + TEXT), (".csv", CSV)]
)
def test_utf16_without_bom_is_read(tmp_path: Path, codec: str, suffix: str, content: str) -> None:
    path = tmp_path / f"doc{suffix}"
    path.write_bytes(content.encode(codec))
    assert_read_as_text(path, ["Japan", "EU"])


def test_utf16_csv_with_japanese_names_and_no_bom_is_read(tmp_path: Path) -> None:
    path = tmp_path / "sales.csv"
    path.write_bytes("名前,金額\n田中,1200\n鈴木,800\n".encode("utf-16-le"))
    text = assert_read_as_text(path, ["田中", "1200"])
    assert text.startswith("名前 | 金額")


def test_reverse_proof_guessing_utf8_indexes_nuls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def old_guess(sample: bytes) -> str:
        bom = sample.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))
        return "utf-16" if bom else "utf-8-sig"

    def no_nul_check(data: bytes, name: str, label: str) -> str:
        return data.decode(old_guess(data))

    monkeypatch.setattr(encoding, "detect", old_guess)
    monkeypatch.setattr("clearance.ingest.loaders.common.decode", no_nul_check)
    path = tmp_path / "doc.txt"
    path.write_bytes(TEXT.encode("utf-16-le"))
    with pytest.raises(AssertionError, match="NULs indexed"):
        assert_read_as_text(path, ["Japan"])


@pytest.mark.parametrize("suffix", [".txt", ".md", ".csv"])
def test_text_with_nul_bytes_is_refused(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"blob{suffix}"
    path.write_bytes(b"header\nsome text\x00\x00\x00 and more\x00 text\n")
    with pytest.raises(LoaderError) as info:
        extract(path, max_chars=800)
    label = {".txt": "text", ".md": "text", ".csv": "CSV"}[suffix]
    assert info.value.message == (
        f"blob{suffix}: {label} contains NUL characters (binary data, or UTF-16 that could "
        "not be recognised); re-save the file as UTF-8"
    )


def test_utf16_without_bom_and_without_latin_text_is_refused(tmp_path: Path) -> None:
    """Mostly-CJK UTF-16 has no NUL bytes to recognise it by: refused, not garbled."""
    path = tmp_path / "jp.txt"
    path.write_bytes("日本語のテキストです。売上は増加しました。".encode("utf-16-le"))
    with pytest.raises(LoaderError, match=r"^jp\.txt: not valid UTF-8 text \(undecodable byte"):
        extract(path, max_chars=800)


def test_a_bad_byte_deep_in_a_csv_is_located(tmp_path: Path) -> None:
    """The CSV is decoded as it streams; the error still gives the byte's file offset."""
    head = "id,note\n" + "".join(f"{i},row number {i}\n" for i in range(100_000))
    path = tmp_path / "data.csv"
    path.write_bytes(head.encode() + b"1,caf\xe9\n")
    offset = len(head.encode()) + 5
    assert offset > 2 * 1024 * 1024  # past the first read of the stream
    with pytest.raises(LoaderError) as info:
        extract(path, max_chars=800)
    assert info.value.message == (
        f"data.csv: not valid UTF-8 CSV (undecodable byte at offset {offset}); "
        "re-save the file as UTF-8"
    )


@pytest.mark.parametrize(
    ("sample", "codec"),
    [
        (b"", "utf-8-sig"),
        (TEXT.encode("utf-8"), "utf-8-sig"),
        (codecs.BOM_UTF8 + TEXT.encode("utf-8"), "utf-8-sig"),
        (codecs.BOM_UTF16_LE + TEXT.encode("utf-16-le"), "utf-16"),
        (codecs.BOM_UTF16_BE + TEXT.encode("utf-16-be"), "utf-16"),
        (TEXT.encode("utf-16-le"), "utf-16-le"),
        (TEXT.encode("utf-16-be"), "utf-16-be"),
        (b"a\x00", "utf-16-le"),
        (b"ab\x00\x00cd", "utf-8-sig"),  # NULs on both sides: binary, not UTF-16
    ],
)
def test_detect(sample: bytes, codec: str) -> None:
    assert encoding.detect(sample) == codec
