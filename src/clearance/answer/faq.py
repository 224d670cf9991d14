"""Stage 5 of the request path: the FAQ short-circuit (docs/design.md §1, §5).

A FAQ entry is a vetted question with a fixed answer and citations. It carries its **own**
ACL and sensitivity, because its answer is served as written, without retrieval and before
the egress guard. That position is why matching is conservative: an entry is served only
when every one of these holds (:meth:`FaqMatcher.match`), else the question goes down the
normal, guarded path:

* the question is not empty and equals the entry's question or one of its aliases after
  :func:`normalise_question` (exact, never fuzzy);
* the scope gate found no out-of-scope entity (``out_of_scope``);
* the question carries no metric / entity / period slot (``has_slots``): numbers come
  from the fact table, never from a canned answer;
* ``now`` lies in ``[valid_from, valid_until)``;
* the entry's ACL intersects the caller's principal set (an empty ACL admits nobody);
* the entry is not RESTRICTED (never served, whatever the ceiling) and is not above the
  assistant's sensitivity ceiling.

A miss is silent: :meth:`FaqMatcher.match` returns ``None`` and says nothing about whether
an entry the caller may not see exists (docs/design.md §6).

Entries live in the SQLite file in their own table, ``faq_entries``
(:class:`FaqRepository`). Imports are validated completely before anything is written and
are written in one transaction: a file with one bad line changes nothing.
"""

from __future__ import annotations

import builtins
import json
import re
import threading
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import ConfigDict, PlainValidator

from clearance.answer.result import Citation
from clearance.errors import ConfigError, MetadataError
from clearance.model import Sensitivity, parse_principal
from clearance.store.side_tables import create_table
from clearance.validation import Invalid, Wording, non_empty, quoted_key, validate

if TYPE_CHECKING:
    from clearance.store.base import SqlConnection, Store

__all__ = [
    "FAQ_KEYS",
    "FaqEntry",
    "FaqImportReport",
    "FaqMatcher",
    "FaqRepository",
    "citation_from_dict",
    "normalise_question",
    "parse_datetime",
]

FAQ_KEYS: Mapping[str, str] = {
    "id": "required; a stable identifier without whitespace",
    "question": "required; the vetted question",
    "aliases": "list of other phrasings matched exactly like the question",
    "answer": "required; the vetted answer, served as written",
    "citations": "list of {doc_id, title, locator, uri}",
    "acl": "list of principals allowed to receive the answer ('user:<id>', 'group:<id>', 'everyone'); empty = nobody",
    "sensitivity": "PUBLIC / INTERNAL / CONFIDENTIAL / RESTRICTED (default INTERNAL; RESTRICTED is never served)",
    "valid_from": "ISO 8601; not served before (naive times are UTC)",
    "valid_until": "ISO 8601; not served from this instant on (naive times are UTC)",
}
_CITATION_KEYS = ("doc_id", "title", "locator", "uri")
_TRAILING = "?？.。!！ \t\r\n"
_WHITESPACE = re.compile(r"\s+")
_ID = re.compile(r"^\S+$")
#: How an FAQ line names its problems: ``key 'acl': …``, ``unknown key 'colour'``.
_RECORD = Wording(
    key=quoted_key,
    unknown="{table}: unknown key {name!r}",
    missing="{table}: missing key {name!r}",
    table="expected a JSON object",
)

_COLUMNS = "id, question, aliases, answer, citations, acl, sensitivity, valid_from, valid_until"


def normalise_question(text: str) -> str:
    """The form FAQ matching compares: NFKC, casefold, invisible format characters removed,
    runs of whitespace collapsed to one space, and trailing ``? ？ . 。 ! ！`` stripped.

    ``"  What is  the VPN？ "`` and ``"what is the vpn"`` compare equal; anything else in
    the wording (a different word, an extra comma) makes them different."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    visible = "".join(ch for ch in folded if unicodedata.category(ch) != "Cf")
    return _WHITESPACE.sub(" ", visible).strip().rstrip(_TRAILING)


def _moment(value: object) -> datetime | None:
    """ISO 8601 → an aware datetime; a naive time is taken as UTC; null is none."""
    if value is None or isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip())
        except ValueError:
            raise Invalid(f"not an ISO 8601 date/time: {value!r}") from None
    else:
        raise Invalid(f"expected an ISO 8601 string, got {value!r}")
    if parsed is None or parsed.tzinfo is not None:
        return parsed
    return parsed.replace(tzinfo=UTC)


def parse_datetime(value: object, where: str) -> datetime:
    """ISO 8601 → an aware datetime; a naive time is taken as UTC. Errors name ``where``."""
    try:
        moment = _moment(value)
    except Invalid as exc:
        raise MetadataError(f"{where}: {exc.message}") from None
    if moment is None:
        raise MetadataError(f"{where}: expected an ISO 8601 string, got None")
    return moment


def _listed(value: object, expected: str) -> list[Any]:
    """An optional list value: absent or null is empty, anything else must be a list."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise Invalid(f"expected {expected}, got {value!r}")
    return value


def _aliases(value: object) -> tuple[str, ...]:
    aliases = _listed(value, "a list of strings")
    if not all(isinstance(a, str) for a in aliases):
        raise Invalid("expected a list of strings")
    return tuple(aliases)


def _citation(raw: object) -> Citation:
    """``{"doc_id", "title", "locator", "uri"}`` → :class:`Citation`."""
    if not isinstance(raw, dict):
        raise Invalid("expected an object with doc_id, title, locator, uri")
    for key, value in raw.items():
        if key not in _CITATION_KEYS:
            raise Invalid(f"unknown key {key!r}")
        if not isinstance(value, str):
            raise Invalid(f"key {key!r}: expected a string")
    doc_id = raw.get("doc_id", "").strip()
    if not doc_id:
        raise Invalid("key 'doc_id' is required")
    return Citation(doc_id, raw.get("title", ""), raw.get("locator", ""), raw.get("uri", ""))


def _citations(value: object) -> tuple[Citation, ...]:
    out = []
    for i, raw in enumerate(_listed(value, "a list of objects")):
        try:
            out.append(_citation(raw))
        except Invalid as exc:
            raise Invalid(exc.message, at=f"[{i}]") from None
    return tuple(out)


def _principals(value: object) -> frozenset[str]:
    try:
        return frozenset(parse_principal(p) for p in _listed(value, "a list of principals"))
    except ValueError as exc:
        raise Invalid(str(exc)) from None


def _sensitivity(value: object) -> Sensitivity:
    try:
        return Sensitivity.parse(value)
    except ValueError as exc:
        raise Invalid(str(exc)) from None


_Moment = Annotated[datetime | None, PlainValidator(_moment)]


@dataclass(frozen=True, slots=True)
class FaqEntry:
    """One vetted question and answer. Construction validates everything, so an entry that
    exists is servable in principle: its id has no whitespace, question and aliases are not
    empty after normalisation, the ACL holds only valid principals, the validity times are
    timezone-aware and ``valid_from < valid_until``. Errors are :class:`MetadataError`."""

    __pydantic_config__ = ConfigDict(extra="forbid")

    id: Annotated[str, non_empty(strip=True)]
    question: Annotated[str, non_empty()]
    aliases: Annotated[tuple[str, ...], PlainValidator(_aliases)]
    answer: Annotated[str, non_empty()]
    citations: Annotated[tuple[Citation, ...], PlainValidator(_citations)] = ()
    acl: Annotated[frozenset[str], PlainValidator(_principals)] = frozenset()
    sensitivity: Annotated[Sensitivity, PlainValidator(_sensitivity)] = Sensitivity.INTERNAL
    valid_from: _Moment = None
    valid_until: _Moment = None

    def __post_init__(self) -> None:
        where = f"faq entry {self.id!r}"
        if not isinstance(self.id, str) or not _ID.match(self.id):
            raise MetadataError(f"{where}: 'id' must be a non-empty string without whitespace")
        if not isinstance(self.question, str) or not normalise_question(self.question):
            raise MetadataError(f"{where}: 'question' must be a non-empty question")
        if not isinstance(self.answer, str) or not self.answer.strip():
            raise MetadataError(f"{where}: 'answer' must be a non-empty string")
        for alias in self.aliases:
            if not isinstance(alias, str) or not normalise_question(alias):
                raise MetadataError(f"{where}: alias {alias!r} is empty after normalisation")
        for citation in self.citations:
            if not isinstance(citation, Citation) or not citation.doc_id.strip():
                raise MetadataError(f"{where}: every citation needs a doc_id")
        for principal in self.acl:
            try:
                parse_principal(principal)
            except ValueError as exc:
                raise MetadataError(f"{where}: 'acl': {exc}") from None
        if not isinstance(self.sensitivity, Sensitivity):
            raise MetadataError(f"{where}: 'sensitivity' must be a Sensitivity")
        for name in ("valid_from", "valid_until"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, datetime) or value.tzinfo is None):
                raise MetadataError(f"{where}: {name!r} must be a timezone-aware datetime")
        if (
            self.valid_from is not None
            and self.valid_until is not None
            and self.valid_from >= self.valid_until
        ):
            raise MetadataError(f"{where}: 'valid_from' must be before 'valid_until'")

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of an entry; :meth:`from_dict` reads it back (one import line)."""
        return {
            "id": self.id,
            "question": self.question,
            "aliases": list(self.aliases),
            "answer": self.answer,
            "citations": [{k: c.to_dict()[k] for k in _CITATION_KEYS} for c in self.citations],
            "acl": sorted(self.acl),
            "sensitivity": self.sensitivity.name,
            "valid_from": None if self.valid_from is None else self.valid_from.isoformat(),
            "valid_until": None if self.valid_until is None else self.valid_until.isoformat(),
        }

    @classmethod
    def from_dict(cls, raw: object, source: str) -> FaqEntry:
        """Validate one JSON object (see :data:`FAQ_KEYS`); errors name the key and
        ``source`` (e.g. ``faq.jsonl:3``). Unknown keys are errors, never ignored; the
        first problem is the message, every one is listed."""
        data = {"aliases": None, **raw} if isinstance(raw, dict) else raw
        try:
            entry: FaqEntry = validate(cls, data, wording=_RECORD)
        except ConfigError as exc:
            found = [f"{source}: {p}" for p in exc.problems]
            raise MetadataError(found[0], problems=found) from None
        except MetadataError as exc:
            raise MetadataError(f"{source}: {exc.message}") from None
        return entry


def citation_from_dict(raw: object, source: str) -> Citation:
    """``{"doc_id", "title", "locator", "uri"}`` → :class:`Citation`; only ``doc_id`` is
    required, unknown keys are errors. FAQ citations are vetted, hence trusted."""
    try:
        return _citation(raw)
    except Invalid as exc:
        raise MetadataError(f"{source}: {exc.message}") from None


# --------------------------------------------------------------------------- matching


def _build_index(entries: Iterable[FaqEntry]) -> dict[str, tuple[FaqEntry, ...]]:
    by_id = sorted(entries, key=lambda e: e.id)
    index: dict[str, list[FaqEntry]] = {}
    # Questions first, then aliases, each in id order: a deterministic preference when
    # several entries share a phrasing (e.g. one per audience).
    for entry in by_id:
        index.setdefault(normalise_question(entry.question), []).append(entry)
    for entry in by_id:
        for alias in entry.aliases:
            bucket = index.setdefault(normalise_question(alias), [])
            if entry not in bucket:
                bucket.append(entry)
    return {k: tuple(v) for k, v in index.items()}


class FaqMatcher:
    """Exact lookup of vetted entries with the conservative exclusions of the module
    docstring; :meth:`match` is thread-safe.

    Built from a fixed set of entries, or from a :class:`FaqRepository`: then it is *live*
    and reloads the entries whenever :meth:`FaqRepository.generation` changes, so removing an
    entry or narrowing its ACL takes effect on the next question, also for a long-lived
    matcher and for writes made by another process."""

    def __init__(self, source: Iterable[FaqEntry] | FaqRepository) -> None:
        self._lock = threading.Lock()
        self._repository: FaqRepository | None = None
        self._generation: int | None = None
        if isinstance(source, FaqRepository):
            self._repository = source
            self._index: dict[str, tuple[FaqEntry, ...]] = {}
            self._current()
        else:
            self._index = _build_index(source)

    def _current(self) -> dict[str, tuple[FaqEntry, ...]]:
        repository = self._repository
        if repository is None:
            return self._index
        with self._lock:
            generation = repository.generation()
            if generation != self._generation:
                self._index = _build_index(repository.list())
                self._generation = generation
            return self._index

    def match(
        self,
        question: str,
        principal_set: frozenset[str],
        now: datetime,
        *,
        out_of_scope: bool,
        has_slots: bool,
        ceiling: Sensitivity,
    ) -> FaqEntry | None:
        """The first entry (question matches before alias matches, then by id) whose
        phrasing equals ``question`` and which admits this caller now; else ``None``.

        ``ceiling`` is the assistant's sensitivity ceiling; it is required so that no
        caller can forget it. ``now`` must be timezone-aware (a naive time is a bug in the
        caller and raises ``ValueError`` rather than guessing)."""
        if now.tzinfo is None:
            raise ValueError("FaqMatcher.match: 'now' must be timezone-aware")
        if out_of_scope or has_slots or not question.strip():
            return None
        key = normalise_question(question)
        if not key:
            return None
        for entry in self._current().get(key, ()):
            if self._admits(entry, principal_set, now, ceiling) and self._database_admits(
                entry, principal_set, ceiling
            ):
                return entry
        return None

    def _database_admits(
        self, entry: FaqEntry, principal_set: frozenset[str], ceiling: Sensitivity
    ) -> bool:
        """A store with its own wall (PostgreSQL's row-level policy) must agree too."""
        repository = self._repository
        return repository is None or repository.store.database_admits_faq(
            entry.id, principal_set, ceiling
        )

    def _admits(
        self, entry: FaqEntry, principal_set: frozenset[str], now: datetime, ceiling: Sensitivity
    ) -> bool:
        return (
            self._in_window(entry, now)
            and self._acl_admits(entry, principal_set)
            and self._sensitivity_admits(entry, ceiling)
        )

    @staticmethod
    def _in_window(entry: FaqEntry, now: datetime) -> bool:
        if entry.valid_from is not None and now < entry.valid_from:
            return False
        return entry.valid_until is None or now < entry.valid_until

    @staticmethod
    def _acl_admits(entry: FaqEntry, principal_set: frozenset[str]) -> bool:
        """Deny by default: an empty ACL or an empty principal set (unknown or disabled
        user) admits nothing."""
        return not entry.acl.isdisjoint(principal_set)

    @staticmethod
    def _sensitivity_admits(entry: FaqEntry, ceiling: Sensitivity) -> bool:
        return entry.sensitivity < Sensitivity.RESTRICTED and entry.sensitivity <= ceiling


# --------------------------------------------------------------------------- storage


@dataclass(frozen=True, slots=True)
class FaqImportReport:
    """What an import did: ids new to the store and ids whose entry was replaced."""

    added: tuple[str, ...] = ()
    replaced: tuple[str, ...] = ()
    source: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "added": list(self.added), "replaced": list(self.replaced)}


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).isoformat()


def _from_iso(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


class FaqRepository:
    """FAQ entries in the store (table ``faq_entries``: in SQLite created on first use, in
    PostgreSQL by the schema's migrations, under a row-level policy).

    Writes go through the store's ``transaction()``, so each call commits completely or
    not at all. Times are stored as UTC ISO 8601 text, which round-trips exactly (a float
    epoch would not, and validity boundaries are compared to the microsecond)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        if not store.has_tables("faq_entries", "faq_state"):
            with store.transaction() as db:
                create_table(db, "faq_entries")
                create_table(db, "faq_state")

    # ------------------------------------------------------------------ writes

    @staticmethod
    def _bump(db: SqlConnection) -> None:
        """Count a change to the entries, inside the writing transaction (see
        :meth:`generation`)."""
        db.execute(
            "INSERT INTO faq_state VALUES ('version', 1) ON CONFLICT (key) "
            "DO UPDATE SET value = faq_state.value + 1"
        )

    @staticmethod
    def _write(db: SqlConnection, entry: FaqEntry) -> None:
        data = entry.to_dict()
        db.execute(
            f"INSERT INTO faq_entries ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (id) DO UPDATE SET question = excluded.question, "
            "aliases = excluded.aliases, answer = excluded.answer, "
            "citations = excluded.citations, acl = excluded.acl, "
            "sensitivity = excluded.sensitivity, valid_from = excluded.valid_from, "
            "valid_until = excluded.valid_until",
            (
                entry.id,
                entry.question,
                json.dumps(data["aliases"], ensure_ascii=False),
                entry.answer,
                json.dumps(data["citations"], ensure_ascii=False),
                json.dumps(data["acl"]),
                int(entry.sensitivity),
                _iso(entry.valid_from),
                _iso(entry.valid_until),
            ),
        )

    @staticmethod
    def _exists(db: SqlConnection, entry_id: str) -> bool:
        row = db.execute("SELECT 1 FROM faq_entries WHERE id = ?", (entry_id,)).fetchone()
        return row is not None

    def add(self, entry: FaqEntry, *, replace: bool = False) -> bool:
        """Store ``entry``; return True if it replaced an entry with the same id. Without
        ``replace`` an existing id is a :class:`MetadataError` and nothing changes."""
        with self.store.transaction() as db:
            existed = self._exists(db, entry.id)
            if existed and not replace:
                raise MetadataError(f"faq entry {entry.id!r} already exists (remove it first)")
            self._write(db, entry)
            self._bump(db)
        return existed

    def remove(self, entry_id: str) -> bool:
        """Delete one entry; False if there was none."""
        with self.store.transaction() as db:
            removed = db.execute("DELETE FROM faq_entries WHERE id = ?", (entry_id,)).rowcount > 0
            if removed:
                self._bump(db)
        return removed

    def import_jsonl(self, path: Path) -> FaqImportReport:
        """Add or replace the entries of a JSONL file (one object per line, blank lines
        skipped; keys in :data:`FAQ_KEYS`). Every line is validated before anything is
        written and the writes are one transaction, so a bad file changes nothing. A
        ``MetadataError`` names the file, the line and the key."""
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise MetadataError(f"{path}: cannot read: {exc}") from None
        entries: list[FaqEntry] = []
        seen: dict[str, int] = {}
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            source = f"{path}:{number}"
            try:
                raw = json.loads(line)
            except json.JSONDecodeError as exc:
                raise MetadataError(f"{source}: not valid JSON: {exc.msg}") from None
            entry = FaqEntry.from_dict(raw, source)
            if entry.id in seen:
                raise MetadataError(
                    f"{source}: duplicate id {entry.id!r} (first on line {seen[entry.id]})"
                )
            seen[entry.id] = number
            entries.append(entry)
        added: list[str] = []
        replaced: list[str] = []
        with self.store.transaction() as db:
            for entry in entries:
                (replaced if self._exists(db, entry.id) else added).append(entry.id)
                self._write(db, entry)
            self._bump(db)
        return FaqImportReport(tuple(added), tuple(replaced), str(path))

    # ------------------------------------------------------------------ reads

    @staticmethod
    def _entry(row: tuple[Any, ...]) -> FaqEntry:
        return FaqEntry(
            id=row[0],
            question=row[1],
            aliases=tuple(json.loads(row[2])),
            answer=row[3],
            citations=tuple(Citation(**c) for c in json.loads(row[4])),
            acl=frozenset(json.loads(row[5])),
            sensitivity=Sensitivity(row[6]),
            valid_from=_from_iso(row[7]),
            valid_until=_from_iso(row[8]),
        )

    def get(self, entry_id: str) -> FaqEntry | None:
        with self.store.reading() as db:
            row = db.execute(
                f"SELECT {_COLUMNS} FROM faq_entries WHERE id = ?", (entry_id,)
            ).fetchone()
        return None if row is None else self._entry(row)

    def list(self) -> builtins.list[FaqEntry]:
        """Every entry, ordered by id."""
        with self.store.reading() as db:
            rows = db.execute(f"SELECT {_COLUMNS} FROM faq_entries ORDER BY id").fetchall()
        return [self._entry(row) for row in rows]

    def generation(self) -> int:
        """A counter that every committed change to the entries increases, in this process
        or another one (see :class:`FaqMatcher`)."""
        with self.store.reading() as db:
            row = db.execute("SELECT value FROM faq_state WHERE key = 'version'").fetchone()
        return 0 if row is None else int(row[0])

    def matcher(self) -> FaqMatcher:
        """A live :class:`FaqMatcher` over this repository."""
        return FaqMatcher(self)
