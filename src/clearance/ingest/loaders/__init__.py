"""File loaders: one file in, its text as located :class:`~clearance.model.Section` s out.

:func:`extract` is the only entry point the pipeline needs. It guarantees that

* the file's suffix picks the loader (:data:`SUPPORTED`, and :data:`TEMPLATED` for
  templated pages such as ``.html.md.erb``); anything else is a
  :class:`~clearance.errors.LoaderError` naming the suffix;
* every exception a parsing library raises is translated into a ``LoaderError`` that names
  the file, so callers only ever catch :class:`~clearance.errors.ClearanceError`;
* a file that yields no text at all is a ``LoaderError`` ("empty document"), never an empty
  result the pipeline would index as a document nobody can find; an encrypted file is a
  ``LoaderError`` saying so (a password-protected Office file is an OLE container, told
  apart by its signature), any other unparsable file one saying it is corrupt or unreadable;
* every section carries a locator built with :func:`~clearance.ingest.locator.format_locator`
  (the per-format shapes are documented in each loader module);
* the limits of ``[ingest]`` hold (:mod:`clearance.ingest.limits`): a file too large on disk,
  a DOCX/PPTX/XLSX whose parts inflate past ``max_uncompressed_mb``, a table with more than
  ``max_rows`` rows and a file that takes longer than ``file_time_budget`` are each refused
  with a one-line ``LoaderError`` naming the setting — never kept as a silent prefix;
* no text is dropped silently: what a parser cannot structure is kept as plain text, or the
  file is refused with a message.

The format modules are imported lazily, so reading a Markdown file never imports
python-pptx. The helpers below (:class:`Outline`, :class:`SheetPacker`, …) are shared by the
format modules; they are not part of the pipeline's API.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from clearance.config import IngestSettings
from clearance.errors import EmptyDocumentError, LoaderError
from clearance.ingest.limits import FileBudget, Progress, check_package, check_size
from clearance.ingest.loaders.common import collapse
from clearance.model import Section

__all__ = [
    "SUPPORTED",
    "TEMPLATED",
    "Extracted",
    "extract",
    "extract_text",
    "file_format",
    "file_stem",
]

#: File suffix (lowercase, with the dot) → format name. Also the list of what ``ingest`` reads.
SUPPORTED: dict[str, str] = {
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

#: Format name → the module of this package that loads it, and the format's name in messages.
_FORMATS: dict[str, tuple[str, str]] = {
    "md": ("markdown", "Markdown"),
    "txt": ("text", "text"),
    "html": ("html", "HTML"),
    "pdf": ("pdf", "PDF"),
    "docx": ("docx", "DOCX"),
    "pptx": ("pptx", "PPTX"),
    "xlsx": ("xlsx", "XLSX"),
    "csv": ("csv", "CSV"),
}

#: Endings of pages a site generator fills in before it renders them: Markdown with ERB
#: tags (Middleman, Rails: ``code-freezes.html.md.erb``), read as Markdown.
TEMPLATED: dict[str, str] = {".md.erb": "md", ".markdown.erb": "md"}


def _templated(path: Path) -> str | None:
    """The :data:`TEMPLATED` ending of a file's name, if it has one."""
    name = path.name.lower()
    return next((ending for ending in TEMPLATED if name.endswith(ending)), None)


def file_format(path: Path) -> str | None:
    """The format name of a file by its ending (:data:`SUPPORTED`, :data:`TEMPLATED`), or
    ``None`` for a file no loader reads."""
    ending = _templated(path)
    return TEMPLATED[ending] if ending else SUPPORTED.get(path.suffix.lower())


def file_stem(path: Path) -> str:
    """A file's name without its endings: ``code-freezes`` of ``code-freezes.html.md.erb``,
    ``notes`` of ``notes.md``."""
    ending = _templated(path)
    if ending is None:
        return path.stem
    stem = path.name[: -len(ending)]
    return stem[: -len(".html")] if stem.lower().endswith(".html") else stem


Loader = Callable[[BinaryIO, int, FileBudget], tuple[str | None, list[Section]]]
"""``load(handle, max_chars, budget)``: the open file, the block size for packed rows and
lines, and the file's budget (its name for messages, ``tick`` per unit of work)."""


@dataclass(frozen=True, slots=True)
class Extracted:
    """What a loader found in one file: its format name, title (if any) and sections."""

    format: str
    title: str | None
    sections: tuple[Section, ...]


def _loader(fmt: str) -> Loader:
    """Import the module of one format on first use (the libraries are heavy)."""
    module = importlib.import_module(f"{__name__}.{_FORMATS[fmt][0]}")
    load: Loader = module.load
    return load


def extract(
    path: Path,
    *,
    max_chars: int,
    limits: IngestSettings | None = None,
    on_progress: Progress | None = None,
) -> Extracted:
    """Read one file into sections.

    ``max_chars`` bounds the blocks that loaders pack themselves (spreadsheet rows, text
    lines); pass the chunk size so such blocks are usually one chunk each. ``limits`` are
    the ``[ingest]`` settings whose limits apply (``None``: the defaults). ``on_progress``,
    if given, is called about once a second during a long extraction with where it is
    (``"page 1200/5000"``, ``"row 40000"``); it must not raise.

    Raises :class:`LoaderError` for an unsupported suffix, an unreadable, corrupt,
    encrypted or empty file and a file over a limit; never returns a result without at
    least one non-blank section.
    """
    if max_chars <= 0:
        raise ValueError(f"max_chars must be positive, got {max_chars}")
    fmt = file_format(path)
    if fmt is None:
        shown = path.suffix.lower() or "(none)"
        raise LoaderError(
            f"{path.name}: unsupported file type '{shown}' "
            f"(supported: {', '.join(sorted([*SUPPORTED, *TEMPLATED]))})"
        )
    settings = limits if limits is not None else IngestSettings()
    budget = FileBudget(path.name, settings, on_progress)
    empty = EmptyDocumentError(f"{path.name}: empty document (no extractable text)")
    try:
        # One handle for the checks and the parsing library: the file checked is the file read.
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size == 0:
                raise empty
            check_size(path.name, size, settings)
            if fmt in _OOXML:
                _refuse_ole(handle, path.name, fmt)
                check_package(handle, budget, streamed=_STREAMED_XML.get(fmt, frozenset()))
            title, sections = _loader(fmt)(handle, max_chars, budget)
    except LoaderError:
        raise
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise LoaderError(f"{path.name}: cannot read file: {reason}") from exc
    except (MemoryError, RecursionError) as exc:
        raise LoaderError(
            f"{path.name}: too large or too deeply nested to read ({type(exc).__name__})"
        ) from exc
    except Exception as exc:
        # Parsing libraries raise whatever their internals hit on malformed input
        # (KeyError, struct.error, zlib.error, lxml errors, …): translate them all here,
        # at the boundary, so no third-party exception ever reaches the pipeline.
        label = _FORMATS[fmt][1]
        raise LoaderError(
            f"{path.name}: corrupt or unreadable {label} file ({type(exc).__name__}: {exc})"
        ) from exc
    kept = tuple(s for s in sections if s.text.strip())
    if not kept:
        raise empty
    if title is not None:
        title = collapse(title) or None
    if title is not None and (_PLACEHOLDER_TITLE.match(title) or not _WORD.search(title)):
        title = None  # the file's name says more than the application's default
    return Extracted(format=fmt, title=title, sections=kept)


# Titles an application writes into a file's properties on its own: its default for a new
# file ("Word Document", "PowerPoint Presentation", "Untitled"), or the file it printed
# from ("Microsoft Word - policy.docx"). They name no document.
_PLACEHOLDER_TITLE = re.compile(
    r"(?i:^(?:(?:microsoft\s+)?(?:word|office\s+word|powerpoint|excel)\s+"
    r"(?:document|presentation|worksheet|workbook)|presentation\d*|document\d*|untitled"
    r"(?:\s+document)?|slide\s*\d+|title|new\s+document)$"
    r"|^microsoft\s+(?:word|powerpoint|excel)\s+-\s+)"
)


# A title holding no word of two letters or more is an identifier a publishing system wrote
# (an SEC accession number "0001018724-23-000018", a date "04.01.2023"), no name: taken
# for a title, it named the company of every table the document's own pages did not.
_WORD = re.compile(r"[^\W\d_]{2}")


_OOXML = frozenset({"docx", "pptx", "xlsx"})
_STREAMED_XML = {"xlsx": frozenset({"worksheet"})}  # openpyxl's read-only mode streams sheets
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def _refuse_ole(handle: BinaryIO, name: str, fmt: str) -> None:
    """Office writes a password-protected .docx/.pptx/.xlsx as an OLE compound file, not a
    zip; say so instead of "corrupt", so the owner knows what to fix."""
    magic = handle.read(len(_OLE_MAGIC))
    handle.seek(0)
    if magic == _OLE_MAGIC:
        raise LoaderError(
            f"{name}: encrypted (password-protected) or legacy binary Office file, "
            f"not a {_FORMATS[fmt][1]} package; save it unprotected as .{fmt}"
        )


def extract_text(text: str, *, max_chars: int, name: str = "inline text") -> Extracted:
    """Sections of text that arrives without a file (a manifest line's ``text``).

    It is read like a ``.txt`` file (``lines=<first>-<last>`` locators, format ``txt``, no
    title); ``name`` only labels errors. Whitespace-only text is a :class:`LoaderError`.
    """
    if max_chars <= 0:
        raise ValueError(f"max_chars must be positive, got {max_chars}")
    from clearance.ingest.loaders.text import text_sections

    sections = tuple(s for s in text_sections(text, max_chars) if s.text.strip())
    if not sections:
        raise EmptyDocumentError(f"{name}: empty document (no extractable text)")
    return Extracted(format="txt", title=None, sections=sections)


# --------------------------------------------------------------------------- shared helpers
