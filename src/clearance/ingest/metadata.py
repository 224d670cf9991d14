"""Document metadata from folders, sidecars and manifests — a public contract.

Three sources, in increasing precedence:

1. ``_meta.json`` in a folder applies to every file below it (nearer folders override
   farther ones, like folder permissions) — but only folders at or below the root being
   ingested contribute: a ``_meta.json`` above it (``/tmp/_meta.json``) is never read;
2. ``<file>.meta.json`` next to a file;
3. one line of a JSONL manifest passed with ``--manifest``.

All three use the same keys (:data:`KEYS`). ``path``/``text`` only make sense in a manifest,
and ``doc_id``/``deleted`` never in a folder file (they would apply to many documents).
An unknown key is an error naming the key and the file: a misspelt ``acl`` must never
silently leave a document with another audience; so is a key given twice in one object
(``{"acl": [...], "acl": [...]}``), which JSON would otherwise resolve as "last wins".
A bad manifest line fails that line only: the other lines are still ingested.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

from pydantic import ConfigDict, PlainValidator, with_config
from typing_extensions import TypedDict

from clearance import jsonio
from clearance.errors import ConfigError, MetadataError
from clearance.model import Sensitivity, parse_principal
from clearance.validation import Invalid, Wording, non_empty, quoted_key, validate

__all__ = [
    "FOLDER_META",
    "KEYS",
    "ManifestEntry",
    "Metadata",
    "folder_metadata",
    "parse_manifest",
    "parse_metadata",
    "read_manifest",
    "sidecar_path",
]

FOLDER_META = "_meta.json"
SIDECAR_SUFFIX = ".meta.json"

#: Every key the three metadata sources accept, with what it holds.
KEYS: Mapping[str, str] = {
    "path": "file path, relative to the manifest (manifest only)",
    "text": "inline document text instead of a file (manifest only)",
    "doc_id": "stable id 'source_system:native_id'",
    "title": "human title",
    "uri": "link back to the source",
    "source_system": "the system the document comes from (sharepoint, gdrive, …)",
    "corpus": "the corpus the document belongs to",
    "owner": "owner's user id",
    "acl": "list of principals: 'user:<id>', 'group:<id>', 'everyone'; empty/missing = nobody",
    "sensitivity": "PUBLIC / INTERNAL / CONFIDENTIAL / RESTRICTED (a source label)",
    "created_at": "ISO 8601 timestamp",
    "updated_at": "ISO 8601 timestamp",
    "review_at": "ISO 8601 timestamp after which the content may be outdated",
    "expires_at": "ISO 8601 timestamp after which the document is never served",
    "ai_allowed": "boolean; false = stored but never retrievable for answers (default true)",
    "personal_data": "boolean; the document contains personal data (default false)",
    "origin": "system / human / consolidation / external_platform / external_web / email / unknown",
    "origin_chain": "list of origins the text was derived through",
    "deleted": "boolean; true purges the document (manifest only)",
}

_FOLDER_FORBIDDEN = frozenset({"path", "text", "doc_id", "deleted"})
_SIDECAR_FORBIDDEN = frozenset({"path", "text", "deleted"})

Metadata = dict[str, Any]

#: How a metadata object names its problems: ``m.jsonl:2: key 'acl': …``.
_RECORD = Wording(
    key=quoted_key,
    unknown="{table}: unknown key {name!r}",
    table="expected a JSON object",
)


def _text(value: object) -> str:
    """Inline text, exactly as given."""
    if not isinstance(value, str):
        raise Invalid("expected a non-empty string")
    return value


def _flag(value: object) -> bool:
    if not isinstance(value, bool):
        raise Invalid(f"expected true or false, got {value!r}")
    return value


def _date(value: object) -> datetime:
    if not isinstance(value, str):
        raise Invalid(f"expected an ISO 8601 string, got {value!r}")
    try:
        parsed = datetime.fromisoformat(value)
        return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
    except ValueError:
        raise Invalid(f"not an ISO 8601 date: {value!r}") from None
    except OverflowError:  # 9999-12-31T23:59:59-14:00 is past the last representable instant
        raise Invalid(f"date out of range: {value!r}") from None


def _sensitivity(value: object) -> Sensitivity:
    try:
        return Sensitivity.parse(value)
    except ValueError as exc:
        raise Invalid(str(exc)) from None


def _acl(value: object) -> frozenset[str]:
    if not isinstance(value, list):
        raise Invalid("expected a list of principals")
    try:
        return frozenset(parse_principal(p) for p in value)
    except ValueError as exc:
        raise Invalid(str(exc)) from None


def _doc_id(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise Invalid("expected a non-empty string")
    doc_id = value.strip()
    if ":" not in doc_id:
        raise Invalid("key 'doc_id' must look like 'source_system:native_id'", keyed=True)
    return doc_id


def _origins(value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise Invalid("expected a list of origin names")
    return tuple(v.strip() for v in value)


_Name = Annotated[str, non_empty(strip=True)]
_Flag = Annotated[bool, PlainValidator(_flag)]
_Date = Annotated[datetime, PlainValidator(_date)]


@with_config(ConfigDict(extra="forbid"))
class _Keys(TypedDict, total=False):
    """The schema of :data:`KEYS`: every key optional, none other allowed."""

    path: _Name
    text: Annotated[str, PlainValidator(_text)]
    doc_id: Annotated[str, PlainValidator(_doc_id)]
    title: _Name
    uri: _Name
    source_system: _Name
    corpus: _Name
    owner: _Name
    acl: Annotated[frozenset[str], PlainValidator(_acl)]
    sensitivity: Annotated[Sensitivity, PlainValidator(_sensitivity)]
    created_at: _Date
    updated_at: _Date
    review_at: _Date
    expires_at: _Date
    ai_allowed: _Flag
    personal_data: _Flag
    origin: _Name
    origin_chain: Annotated[tuple[str, ...], PlainValidator(_origins)]
    deleted: _Flag


def parse_metadata(raw: object, source: str, forbidden: frozenset[str] = frozenset()) -> Metadata:
    """Validate one metadata object into typed values; errors name the key and ``source``,
    the first as the message and every one in ``problems``."""
    given = raw if isinstance(raw, dict) else {}
    found = [f"{source}: key {k!r} is not allowed here" for k in given if k in forbidden]
    if found:
        raise MetadataError(found[0], problems=found)
    try:
        metadata: Metadata = dict(validate(_Keys, raw, wording=_RECORD, unwritten=forbidden))
    except ConfigError as exc:
        found = [f"{source}: {p}" for p in exc.problems]
        raise MetadataError(found[0], problems=found) from None
    return metadata


def _read_json(path: Path) -> object:
    try:
        return jsonio.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise MetadataError(f"{path}: cannot read: {exc}") from None
    except jsonio.JSONInputError as exc:
        raise MetadataError(f"{path}: {exc}") from None


def folder_metadata(
    directory: Path, root: Path, cache: dict[Path, Metadata] | None = None
) -> Metadata:
    """The merged ``_meta.json`` of ``directory`` and its ancestors up to and including
    ``root``, nearest winning. A folder above ``root`` never contributes; a ``directory``
    outside ``root`` gets nothing (callers refuse such files before asking)."""
    directory, root = directory.resolve(), root.resolve()
    if not directory.is_relative_to(root):
        return {}
    chain = [directory, *(p for p in directory.parents if p.is_relative_to(root))]
    layers = {} if cache is None else cache
    merged: Metadata = {}
    for folder in reversed(chain):
        if folder not in layers:
            meta_file = folder / FOLDER_META
            layers[folder] = (
                parse_metadata(_read_json(meta_file), str(meta_file), _FOLDER_FORBIDDEN)
                if meta_file.is_file()
                else {}
            )
        merged.update(layers[folder])
    return merged


def sidecar_path(path: Path) -> Path:
    return path.with_name(path.name + SIDECAR_SUFFIX)


def sidecar_metadata(path: Path) -> Metadata:
    side = sidecar_path(path)
    if not side.is_file():
        return {}
    return parse_metadata(_read_json(side), str(side), _SIDECAR_FORBIDDEN)


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    """One manifest line: a file, inline text, or a deletion — or the line's error.

    ``path`` is the file's path joined to the manifest's folder and normalised
    lexically (``./docs/../docs/one.md`` → ``docs/one.md``); ``metadata["path"]`` is the
    same, relative to the manifest's folder when it lies inside it. Whether the file may be
    read (inside a root, not through a symlink) is the ingest planner's decision."""

    line: int
    path: Path | None
    metadata: Metadata
    error: str | None = None


def _normalise(base: Path, written: str) -> tuple[Path, str]:
    full = Path(os.path.normpath(base / written))
    display = full.relative_to(base).as_posix() if full.is_relative_to(base) else str(full)
    return full, display


def read_manifest(manifest: Path) -> Iterator[ManifestEntry]:
    """Parse a JSONL manifest. A bad line yields an entry carrying its error (naming the
    file, line and key) and parsing goes on; only an unreadable manifest raises."""
    try:
        data = manifest.read_bytes()
    except OSError as exc:
        raise MetadataError(f"{manifest}: cannot read: {exc.strerror or exc}") from None
    return parse_manifest(data, source=str(manifest), base=manifest.parent)


def parse_manifest(data: bytes, *, source: str, base: Path) -> Iterator[ManifestEntry]:
    """:func:`read_manifest` of manifest text that has no file of its own (an HTTP body):
    ``source`` names it in errors (``request body:3``) and relative paths are joined to
    ``base`` instead of the manifest's folder."""
    base = Path(os.path.abspath(base))
    for number, line, undecodable in jsonio.lines(data):
        if undecodable is not None:
            error = f"{source}:{number}: {undecodable}"
            yield ManifestEntry(line=number, path=None, metadata={}, error=error)
            continue
        assert line is not None
        if not line.strip():
            continue
        try:
            yield _manifest_line(source, base, number, line)
        except MetadataError as exc:
            yield ManifestEntry(line=number, path=None, metadata={}, error=exc.message)


def _manifest_line(manifest: str, base: Path, number: int, line: str) -> ManifestEntry:
    source = f"{manifest}:{number}"
    try:
        raw = jsonio.loads(line)
    except jsonio.JSONInputError as exc:
        raise MetadataError(f"{source}: {exc}") from None
    meta = parse_metadata(raw, source)
    has_path, has_text = "path" in meta, "text" in meta
    if not meta.get("deleted"):
        if has_path == has_text:
            raise MetadataError(f"{source}: give exactly one of 'path' or 'text'")
        if has_text and "doc_id" not in meta:
            raise MetadataError(f"{source}: an inline 'text' document needs a 'doc_id'")
    elif not has_path and "doc_id" not in meta:
        raise MetadataError(f"{source}: a deleted entry needs a 'doc_id' or 'path'")
    path = None
    if has_path:
        path, meta["path"] = _normalise(base, meta["path"])
    return ManifestEntry(line=number, path=path, metadata=meta)
