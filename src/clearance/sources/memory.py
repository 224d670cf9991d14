"""An in-memory connector: the fake of the ``Connector`` seam, for tests and examples.

It holds items, their access and the source's groups in dictionaries a test edits between
syncs, and lists them as snapshots (no cursor). ``fail`` makes every call raise
:class:`~clearance.errors.SourceError`, as a source that stopped answering; ``fetched``
counts :meth:`MemoryConnector.fetch` calls, so a test can prove what was not re-read.

It also has both optional capabilities of the notification seam: ``permissions_of`` (each
call's items are appended to ``item_reads``) and ``notification``, which takes a notification
only with the shared ``secret`` in :data:`TOKEN_HEADER` (compared in constant time; without a
secret every notification is refused). The body is JSON: ``{"changed": ["doc-id", …]}``, or
``{"changed": null}`` for "something changed", with ``"content": true`` when content changed
too. A ``validationToken`` query parameter is a subscription handshake, echoed as text.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace

from clearance.errors import SourceError
from clearance.secrets import Secret
from clearance.sources.base import (
    Access,
    ContentPage,
    GroupSnapshot,
    ItemRef,
    Notice,
    PermissionChange,
    PermissionPage,
    SourceDocument,
)

__all__ = ["TOKEN_HEADER", "MemoryConnector"]

#: The header that carries the shared secret of a notification.
TOKEN_HEADER = "x-clearance-token"
_MAX_HANDSHAKE_CHARS = 1024


class MemoryConnector:
    def __init__(self, name: str = "memory", *, secret: Secret | None = None) -> None:
        self.name = name
        self.secret = secret
        self.documents: dict[str, SourceDocument] = {}
        self.access: dict[str, Access] = {}
        self.group_members: dict[str, frozenset[str]] | None = None
        self.fail = False
        self.fetched = 0
        self.item_reads: list[list[str]] = []

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

    def permissions_of(self, doc_ids: Sequence[str]) -> Iterator[PermissionChange]:
        self._check()
        self.item_reads.append(list(doc_ids))
        for doc_id in doc_ids:
            if doc_id in self.documents:
                yield PermissionChange(doc_id, self.access[doc_id])

    def notification(
        self, headers: Mapping[str, str], query: Mapping[str, str], body: bytes
    ) -> Notice:
        handshake = query.get("validationToken")
        if handshake is not None:
            if not 0 < len(handshake) <= _MAX_HANDSHAKE_CHARS:
                return Notice.refuse(400, "the validation token is not valid")
            return Notice.reply(handshake)
        if not self._authentic(headers.get(TOKEN_HEADER, "")):
            return Notice.refuse(401, "the notification is not authenticated")
        try:
            message = json.loads(body)
        except ValueError:
            return Notice.refuse(400, "the notification is not valid JSON")
        if not isinstance(message, dict) or "changed" not in message:
            return Notice.refuse(400, "the notification names no change")
        changed, content = message["changed"], message.get("content", False)
        if not isinstance(content, bool):
            return Notice.refuse(400, "the notification's content flag is not true or false")
        if changed is None:
            return Notice.unknown_changes(content=content)
        if not isinstance(changed, list) or not all(isinstance(d, str) for d in changed):
            return Notice.refuse(400, "the notification's changed items are not a list of ids")
        return Notice.changed(changed, content=content)

    def _authentic(self, presented: str) -> bool:
        if self.secret is None or not presented:
            return False
        return hmac.compare_digest(presented.encode(), self.secret.reveal().encode())

    def groups(self) -> GroupSnapshot | None:
        self._check()
        return None if self.group_members is None else GroupSnapshot(dict(self.group_members))

    def close(self) -> None:
        return None
