"""Permission-only ACL sync: a JSONL file of ``{"doc_id": …, "acl": […]}`` per document.

A *snapshot* states the complete ACLs of one corpus: a document of that corpus missing from
it is left visible to nobody until it reappears. A *delta* only changes the documents it
names. Either way content and vectors are untouched, the whole file applies in one
transaction or not at all, and only a successful sync records the corpus's sync time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from clearance.errors import DirectoryError
from clearance.model import parse_principal
from clearance.store.sqlite import SQLiteStore

__all__ = ["AclSyncReport", "parse_acl_file", "sync_acls"]


@dataclass(frozen=True, slots=True)
class AclSyncReport:
    corpus: str
    mode: str
    changed: int
    unchanged: int
    revoked: list[str] = field(default_factory=list)  # snapshot omissions → visible to nobody
    unknown: list[str] = field(default_factory=list)  # named but not in the index
    synced_at: str = ""

    def to_dict(self) -> dict[str, object]:
        return {
            "corpus": self.corpus,
            "mode": self.mode,
            "changed": self.changed,
            "unchanged": self.unchanged,
            "revoked": self.revoked,
            "unknown": self.unknown,
            "synced_at": self.synced_at,
        }


def parse_acl_file(path: Path) -> dict[str, frozenset[str]]:
    """Read and validate the whole file first; any bad line fails the sync before writing."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise DirectoryError(f"{path}: cannot read: {exc}") from None
    acls: dict[str, frozenset[str]] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path.name}:{number}"
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DirectoryError(f"{where}: not valid JSON: {exc.msg}") from None
        if not isinstance(raw, dict):
            raise DirectoryError(f"{where}: expected an object with 'doc_id' and 'acl'")
        extra = set(raw) - {"doc_id", "acl"}
        if extra:
            raise DirectoryError(f"{where}: unknown key {sorted(extra)[0]!r}")
        doc_id, acl = raw.get("doc_id"), raw.get("acl")
        if not isinstance(doc_id, str) or not doc_id:
            raise DirectoryError(f"{where}: 'doc_id' must be a non-empty string")
        if not isinstance(acl, list):
            raise DirectoryError(f"{where}: 'acl' must be a list of principals")
        try:
            principals = frozenset(parse_principal(p) for p in acl)
        except ValueError as exc:
            raise DirectoryError(f"{where}: {exc}") from None
        if doc_id in acls:
            raise DirectoryError(f"{where}: {doc_id!r} appears twice")
        acls[doc_id] = principals
    return acls


def sync_acls(
    store: SQLiteStore, path: Path, corpus: str, *, delta: bool, now: datetime
) -> AclSyncReport:
    acls = parse_acl_file(path)
    documents = {d.doc_id: d for d in store.list_documents()}
    for doc_id in acls:
        doc = documents.get(doc_id)
        if doc is not None and doc.corpus != corpus:
            raise DirectoryError(
                f"{path.name}: {doc_id!r} belongs to corpus {doc.corpus!r}, not {corpus!r}"
            )
    in_corpus = {d for d, doc in documents.items() if doc.corpus == corpus}
    updates = {d: a for d, a in acls.items() if d in documents and documents[d].acl != a}
    revoked: list[str] = []
    if not delta:
        revoked = sorted(d for d in in_corpus - set(acls) if documents[d].acl)
        updates.update({d: frozenset() for d in revoked})
    store.set_acls(updates, synced=(corpus, now))
    return AclSyncReport(
        corpus=corpus,
        mode="delta" if delta else "snapshot",
        changed=len(updates),
        unchanged=len([d for d in acls if d in documents]) - len(set(acls) & set(updates)),
        revoked=revoked,
        unknown=sorted(d for d in acls if d not in documents),
        synced_at=now.isoformat(),
    )
