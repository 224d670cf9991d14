"""Permission-only ACL sync: a JSONL file of ``{"doc_id": …, "acl": […]}`` per document.

A *snapshot* states the complete ACLs of one corpus: a document of that corpus missing from
it is left visible to nobody until it reappears. A *delta* only changes the documents it
names. Either way content and vectors are untouched, the whole file applies in one
transaction or not at all, and only a successful sync records the corpus's sync time.

The recorded time is when the ACLs were *read* at the source, not when they were applied: the
revocation SLA counts from it, and a revocation made after the export read a document is
not in the file. An exporter states it as ``read_at`` (``clearance acl sync --read-at``);
without it, a file counts as read no later than its modification time, and a request body
as read when it arrived. A ``read_at`` in the future, or without a time zone, is refused.

A document that came from a source (:mod:`clearance.sources`) changes only through that
source: naming it here, or a snapshot of a corpus that holds one, is refused with an
:class:`~clearance.errors.OwnershipError` naming the source, and nothing is applied.

Every principal must follow the principal grammar (:func:`clearance.model.parse_principal`);
one malformed principal fails the whole file. A well-formed principal the directory does not
know is applied — it matches nobody until the directory learns it — and reported
(``group:employes is not in the directory``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from pydantic import ConfigDict, Field, PlainValidator

from clearance import jsonio
from clearance.access.directory import Directory, unknown_principal_warning
from clearance.access.ownership import check_owner
from clearance.errors import ConfigError, DirectoryError
from clearance.model import parse_principal
from clearance.validation import Invalid, Wording, validate

if TYPE_CHECKING:
    from clearance.store.base import Store

__all__ = [
    "AclSyncReport",
    "parse_acl_data",
    "parse_read_at",
    "sync_acl_data",
    "sync_acls",
]


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


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise DirectoryError(f"{path}: cannot read: {exc.strerror or exc}") from None


def parse_acl_data(data: bytes, source: str) -> dict[str, tuple[frozenset[str], str]]:
    """doc_id → (ACL, where it was given) for JSONL ``data`` (as in an ACL file) or one JSON
    array of the same objects, all validated before anything is written: any bad line fails
    the sync.

    Every error is one :class:`DirectoryError` naming the place (``source:3`` for a line,
    ``source[2]`` for an array item) and the key (``acl[2]``). Lines are JSON read strictly
    (:func:`clearance.jsonio.loads`): a repeated key or nesting too deep is an error, not
    "last wins" or a traceback. Lines end at ``\\n`` only, so line numbers are the ones an
    editor shows even when a string holds U+2028 or a form feed."""
    unmarked = data.removeprefix(b"\xef\xbb\xbf")
    if unmarked.lstrip().startswith(b"["):
        try:
            items = jsonio.loads(unmarked)
        except jsonio.JSONInputError as exc:
            raise DirectoryError(f"{source}: {exc}") from None
        if not isinstance(items, list):
            raise DirectoryError(f"{source}: expected a JSON array of objects or JSONL")
        records = [(f"{source}[{i}]", raw) for i, raw in enumerate(items)]
    else:
        records = []
        for number, line, undecodable in jsonio.lines(data):
            where = f"{source}:{number}"
            if undecodable is not None:
                raise DirectoryError(f"{where}: {undecodable}")
            assert line is not None
            if not line.strip():
                continue
            try:
                records.append((where, jsonio.loads(line)))
            except jsonio.JSONInputError as exc:
                raise DirectoryError(f"{where}: {exc}") from None
    acls: dict[str, tuple[frozenset[str], str]] = {}
    for where, raw in records:
        doc_id, acl = _acl_record(raw, where)
        if doc_id in acls:
            raise DirectoryError(f"{where}: {doc_id!r} appears twice")
        acls[doc_id] = (acl, where)
    return acls


def _doc_id(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise Invalid("'doc_id' must be a non-empty string", keyed=True)
    return value


def _principals(value: object) -> frozenset[str]:
    if not isinstance(value, list):
        raise Invalid("'acl' must be a list of principals", keyed=True)
    principals: set[str] = set()
    for i, principal in enumerate(value):
        try:
            principals.add(parse_principal(principal))
        except ValueError as exc:
            raise Invalid(str(exc), at=f"[{i}]") from None
    return frozenset(principals)


@dataclass(frozen=True, slots=True)
class _AclRecord:
    """One line of an ACL file: a document and who may read it; nothing else."""

    __pydantic_config__ = ConfigDict(extra="forbid")

    acl: Annotated[frozenset[str], PlainValidator(_principals)]
    doc_id: Annotated[str, PlainValidator(_doc_id), Field(validate_default=True)] = ""


_RECORD = Wording(
    unknown="unknown key {name!r}",
    missing="{name!r} must be a list of principals",
    table="expected an object with 'doc_id' and 'acl'",
)


def _acl_record(raw: object, where: str) -> tuple[str, frozenset[str]]:
    try:
        record: _AclRecord = validate(_AclRecord, raw, wording=_RECORD)
    except ConfigError as exc:
        found = [f"{where}: {p}" for p in exc.problems]
        raise DirectoryError(found[0], problems=found) from None
    return record.doc_id, record.acl


def parse_read_at(value: str, now: datetime, where: str = "read_at") -> datetime:
    """An exporter's ``read_at``: ISO 8601 with a time zone, not after ``now``."""
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise DirectoryError(
            f"{where}: {value!r} is not an ISO 8601 time (e.g. 2025-03-01T09:00:00Z)"
        ) from None
    if moment.tzinfo is None:
        raise DirectoryError(f"{where}: {value!r} has no time zone (add Z or +HH:MM)")
    if moment > now:
        raise DirectoryError(
            f"{where}: {value!r} is in the future: ACLs cannot be fresher than now"
        )
    return moment


def sync_acls(
    store: Store,
    path: Path,
    corpus: str,
    *,
    delta: bool,
    now: datetime,
    directory: Directory | None = None,
    read_at: datetime | None = None,
) -> AclSyncReport:
    """Apply ``path`` to ``corpus`` in one transaction (see the module docstring).

    With ``directory``, the report lists the principals the file names that it does not
    know: they are applied (they match nobody until the directory learns them) and reported.
    Without ``read_at``, the file counts as read at its modification time, or ``now`` if
    that is earlier (a file written "in the future" by a skewed clock gains nothing).
    """
    if read_at is None:
        try:
            written = datetime.fromtimestamp(path.stat().st_mtime, UTC)
        except OSError as exc:
            raise DirectoryError(f"{path}: cannot read: {exc.strerror or exc}") from None
        read_at = min(now, written)
    return sync_acl_data(
        store,
        _read(path),
        path.name,
        corpus,
        delta=delta,
        now=now,
        directory=directory,
        read_at=read_at,
    )


def sync_acl_data(
    store: Store,
    data: bytes,
    source: str,
    corpus: str,
    *,
    delta: bool,
    now: datetime,
    directory: Directory | None = None,
    read_at: datetime | None = None,
) -> AclSyncReport:
    """:func:`sync_acls` of ``data`` already read (see :func:`parse_acl_data`); ``source``
    names it in errors, e.g. ``request body:3``. The corpus is stamped ``read_at``
    (default ``now``), never later than ``now``."""
    synced_at = now if read_at is None else min(now, read_at)
    lines = parse_acl_data(data, source)
    acls = {doc_id: acl for doc_id, (acl, _) in lines.items()}
    documents = {d.doc_id: d for d in store.list_documents()}
    for doc_id, (_, where) in lines.items():
        doc = documents.get(doc_id)
        if doc is not None and doc.corpus != corpus:
            raise DirectoryError(
                f"{where}: doc_id {doc_id!r} belongs to corpus {doc.corpus!r}, not {corpus!r}"
            )
        check_owner(doc, None, f"{where}: acl sync")
    in_corpus = {d for d, doc in documents.items() if doc.corpus == corpus}
    updates = {d: a for d, a in acls.items() if d in documents and documents[d].acl != a}
    revoked: list[str] = []
    if not delta:
        # A snapshot would revoke every document it does not name, and those of a source
        # are named by that source alone.
        for doc_id in sorted(in_corpus):
            check_owner(
                documents[doc_id], None, f"{source}: acl sync snapshot of corpus {corpus!r}"
            )
        revoked = sorted(d for d in in_corpus - set(acls) if documents[d].acl)
        updates.update({d: frozenset() for d in revoked})
    store.set_acls(updates, synced=(corpus, synced_at))
    named = {p for acl in acls.values() for p in acl}
    return AclSyncReport(
        corpus=corpus,
        mode="delta" if delta else "snapshot",
        changed=len(updates),
        unchanged=len([d for d in acls if d in documents]) - len(set(acls) & set(updates)),
        revoked=revoked,
        unknown=sorted(d for d in acls if d not in documents),
        synced_at=synced_at.isoformat(),
        unknown_principals=[] if directory is None else directory.unknown_principals(named),
    )
