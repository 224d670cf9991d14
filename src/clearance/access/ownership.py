"""One owner per document: a document that came from a source changes only through it.

The owner is recorded in the document's ``extra`` (``source``), written by the same
transaction as the document itself, so a document and its owner can never disagree. Every
other writer — folder and manifest ingest, ``acl sync``, ``remove``, another source —
checks it first and is refused with :class:`~clearance.errors.OwnershipError` naming the
owner: otherwise the stored ACL and the source's ACL could silently disagree until the next
sync, or a removed document would silently come back.
"""

from __future__ import annotations

from clearance.errors import OwnershipError
from clearance.model import Document

__all__ = ["BLOCKED_KEY", "SOURCE_KEY", "VERSION_KEY", "check_owner", "owner_of"]

#: ``extra`` keys a source writes: its name, the item's version, why the ACL is empty.
SOURCE_KEY = "source"
VERSION_KEY = "source_version"
BLOCKED_KEY = "acl_blocked"


def owner_of(document: Document | None) -> str | None:
    """The source that owns ``document``, or ``None`` (ingested by hand, or absent)."""
    if document is None:
        return None
    owner = document.extra.get(SOURCE_KEY)
    return owner if isinstance(owner, str) else None


def check_owner(document: Document | None, writer: str | None, action: str) -> None:
    """Raise unless ``writer`` (a source name, ``None`` for a manual change) may change
    ``document``; ``action`` says what was refused (``ingest of docs/a.md``)."""
    owner = owner_of(document)
    if owner is None or owner == writer:
        return
    assert document is not None
    raise OwnershipError(
        f"{action} refused: document {document.doc_id!r} belongs to source {owner!r}, and "
        f"only that source changes it (change it at the source, then run "
        f"'clearance source sync {owner}')"
    )
