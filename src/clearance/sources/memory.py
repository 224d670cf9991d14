"""An in-memory connector: the fake of the ``Connector`` seam, for tests and examples.

It holds items, their access and the source's groups in dictionaries a test edits between
syncs, and lists them as snapshots (no cursor). ``fail`` makes every call raise
:class:`~clearance.errors.SourceError`, as a source that stopped answering; ``fetched``
counts :meth:`MemoryConnector.fetch` calls, so a test can prove what was not re-read.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from clearance.errors import SourceError
from clearance.sources.base import (
    Access,
    ContentPage,
    GroupSnapshot,
    ItemRef,
    PermissionChange,
    PermissionPage,
    SourceDocument,
)

__all__ = ["MemoryConnector"]


class MemoryConnector:
    def __init__(self, name: str = "memory") -> None:
        self.name = name
        self.documents: dict[str, SourceDocument] = {}
        self.access: dict[str, Access] = {}
        self.group_members: dict[str, frozenset[str]] | None = None
        self.fail = False
        self.fetched = 0

    def put(self, document: SourceDocument) -> None:
        """Add or replace an item; its access is the document's until :attr:`access` says
        otherwise."""
        self.documents[document.doc_id] = document
        self.access[document.doc_id] = document.access

    def _check(self) -> None:
        if self.fail:
            raise SourceError(f"source {self.name!r}: not answering")

    def content_changes(self, cursor: str | None) -> Iterator[ContentPage]:
        self._check()
        items = [ItemRef(d.doc_id, d.version) for d in self.documents.values()]
        yield ContentPage(items, cursor=None, snapshot=True)

    def fetch(self, item: ItemRef) -> SourceDocument:
        self._check()
        self.fetched += 1
        document = self.documents.get(item.doc_id)
        if document is None:
            raise SourceError(f"source {self.name!r}: {item.doc_id} is gone")
        return replace(document, access=self.access[item.doc_id])

    def permission_changes(self, cursor: str | None) -> Iterator[PermissionPage]:
        self._check()
        changes = [PermissionChange(d, a) for d, a in self.access.items() if d in self.documents]
        yield PermissionPage(changes, cursor=None, snapshot=True)

    def groups(self) -> GroupSnapshot | None:
        self._check()
        return None if self.group_members is None else GroupSnapshot(dict(self.group_members))

    def close(self) -> None:
        return None
