"""Permission-only ACL sync: a JSONL file of ``{"doc_id": …, "acl": […]}`` per document.

A *snapshot* states the complete ACLs of one corpus: a document of that corpus missing from
it is left visible to nobody until it reappears. A *delta* only changes the documents it
names. Either way content and vectors are untouched, the whole file applies in one
transaction or not at all, and only a successful sync records the corpus's sync time.

Every principal must follow the principal grammar (:func:`clearance.model.parse_principal`);
one malformed principal fails the whole file. A well-formed principal the directory does not
know is applied — it matches nobody until the directory learns it — and reported
(``group:employes is not in the directory``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from clearance import jsonio
from clearance.access.directory import Directory, unknown_principal_warning
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
    # principals the file names that the directory does not know (they match nobody)
    unknown_principals: list[str] = field(default_factory=list)

    @property
    def warnings(self) -> list[str]:
        """One line per thing the operator should look at; the sync itself succeeded."""
        return [unknown_principal_warning(p) for p in self.unknown_principals]

    def to_dict(self) -> dict[str, object]:
        return {
            "corpus": self.corpus,
            "mode": self.mode,
            "changed": self.changed,
            "unchanged": self.unchanged,
            "revoked": self.revoked,
            "unknown": self.unknown,
            "unknown_principals": self.unknown_principals,
            "warnings": self.warnings,
            "synced_at": self.synced_at,
        }


def parse_acl_file(path: Path) -> dict[str, frozenset[str]]:
    """Read and validate the whole file first; any bad line fails the sync before writing.

    Every error is one :class:`DirectoryError` naming ``file:line`` and the key (``acl[2]``).
    Lines are JSON read strictly (:func:`clearance.jsonio.loads`): a repeated key or nesting
    too deep is an error, not "last wins" or a traceback. Lines end at ``\\n`` only, so line
    numbers are the ones an editor shows even when a string holds U+2028 or a form feed.
    """
    return {doc_id: acl for doc_id, (acl, _) in _parse_acl_lines(path).items()}


def _parse_acl_lines(path: Path) -> dict[str, tuple[frozenset[str], int]]:
    """doc_id → (ACL, line number) for every line of ``path``; see :func:`parse_acl_file`."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DirectoryError(f"{path}: cannot read: {exc.strerror or exc}") from None
    acls: dict[str, tuple[frozenset[str], int]] = {}
    for number, line, undecodable in jsonio.lines(data):
        where = f"{path.name}:{number}"
        if undecodable is not None:
            raise DirectoryError(f"{where}: {undecodable}")
        assert line is not None
        if not line.strip():
            continue
        try:
            raw = jsonio.loads(line)
        except jsonio.JSONInputError as exc:
            raise DirectoryError(f"{where}: {exc}") from None
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
        principals: set[str] = set()
        for i, principal in enumerate(acl):
            try:
                principals.add(parse_principal(principal))
            except ValueError as exc:
                raise DirectoryError(f"{where}: acl[{i}]: {exc}") from None
        if doc_id in acls:
            raise DirectoryError(f"{where}: {doc_id!r} appears twice")
        acls[doc_id] = (frozenset(principals), number)
    return acls


def sync_acls(
    store: SQLiteStore,
    path: Path,
    corpus: str,
    *,
    delta: bool,
    now: datetime,
    directory: Directory | None = None,
) -> AclSyncReport:
    """Apply ``path`` to ``corpus`` in one transaction (see the module docstring).

    With ``directory``, the report lists the principals the file names that it does not
    know: they are applied (they match nobody until the directory learns them) and reported.
    """
    lines = _parse_acl_lines(path)
    acls = {doc_id: acl for doc_id, (acl, _) in lines.items()}
    documents = {d.doc_id: d for d in store.list_documents()}
    for doc_id, (_, number) in lines.items():
        doc = documents.get(doc_id)
        if doc is not None and doc.corpus != corpus:
            raise DirectoryError(
                f"{path.name}:{number}: doc_id {doc_id!r} belongs to corpus {doc.corpus!r}, "
                f"not {corpus!r}"
            )
    in_corpus = {d for d, doc in documents.items() if doc.corpus == corpus}
    updates = {d: a for d, a in acls.items() if d in documents and documents[d].acl != a}
    revoked: list[str] = []
    if not delta:
        revoked = sorted(d for d in in_corpus - set(acls) if documents[d].acl)
        updates.update({d: frozenset() for d in revoked})
    store.set_acls(updates, synced=(corpus, now))
    named = {p for acl in acls.values() for p in acl}
    return AclSyncReport(
        corpus=corpus,
        mode="delta" if delta else "snapshot",
        changed=len(updates),
        unchanged=len([d for d in acls if d in documents]) - len(set(acls) & set(updates)),
        revoked=revoked,
        unknown=sorted(d for d in acls if d not in documents),
        synced_at=now.isoformat(),
        unknown_principals=[] if directory is None else directory.unknown_principals(named),
    )
