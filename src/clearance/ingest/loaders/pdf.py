"""PDF, read with pypdf.

One section per page that has text, locator ``page=N`` (1-based physical page number, so it
matches what a viewer shows as the page index). Sections are not atomic. Title: the
document information ``/Title``, if set.

Refused with a :class:`LoaderError`: an encrypted PDF (even one that opens without a
password: its owner asked for restricted use, and decrypting would need optional crypto
code), a PDF pypdf cannot parse (corrupt / unreadable), and a PDF in which no page has
extractable text (a scan without OCR → empty document).
"""

from __future__ import annotations

import warnings
from typing import BinaryIO

from pypdf import PdfReader
from pypdf.errors import PdfReadWarning

from clearance.errors import LoaderError
from clearance.ingest.limits import FileBudget
from clearance.ingest.loaders.common import clean_block
from clearance.ingest.locator import format_locator
from clearance.model import Section

__all__ = ["load"]


def load(handle: BinaryIO, max_chars: int, budget: FileBudget) -> tuple[str | None, list[Section]]:
    """Title and per-page sections (``max_chars`` is unused: pages are chunked later)."""
    del max_chars
    with warnings.catch_warnings():
        # pypdf reports recoverable oddities of real-world files (bad xref offsets, …) as
        # PdfReadWarning and carries on; they say nothing about the text we get.
        warnings.simplefilter("ignore", PdfReadWarning)
        reader = PdfReader(handle)  # reads objects from the file as pages need them
        if reader.is_encrypted:
            raise LoaderError(
                f"{budget.name}: encrypted PDF (password-protected); decrypt it before ingesting"
            )
        sections: list[Section] = []
        total = len(reader.pages)
        for number, page in enumerate(reader.pages, start=1):
            budget.tick("page", number, total)
            text = clean_block(page.extract_text())
            if text:
                sections.append(Section(text, format_locator(("page", number))))
        metadata = reader.metadata
        title = metadata.title if metadata is not None else None
    return (title if isinstance(title, str) else None), sections
