"""Deterministic sensitivity classification (DESIGN §3), driven by ``[sensitivity]`` only.

Order: a label from the source system is kept; a filename matching
``restricted_filename_patterns`` ⇒ RESTRICTED; text containing a ``restricted_keywords``
entry ⇒ RESTRICTED; no source label and ``escalate_unknown_to_restricted`` ⇒ RESTRICTED;
else ``default_level``. Classification only ever raises a label, never lowers one.
"""

from __future__ import annotations

import fnmatch
import unicodedata

from clearance.config import SensitivitySettings
from clearance.model import Sensitivity

__all__ = ["classify"]


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def classify(
    settings: SensitivitySettings,
    *,
    label: Sensitivity | None,
    filename: str | None,
    text: str,
) -> Sensitivity:
    """The sensitivity of a document given its source label, file name and full text."""
    level = label if label is not None else settings.default_level
    if filename is not None:
        name = _fold(filename)
        if any(fnmatch.fnmatchcase(name, _fold(p)) for p in settings.restricted_filename_patterns):
            return Sensitivity.RESTRICTED
    folded = _fold(text)
    if any(_fold(k) in folded for k in settings.restricted_keywords if k.strip()):
        return Sensitivity.RESTRICTED
    if label is None and settings.escalate_unknown_to_restricted:
        return Sensitivity.RESTRICTED
    return level
