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
from typing import Any

from clearance import jsonio
from clearance.errors import MetadataError
from clearance.model import Sensitivity, parse_principal

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
_DATES = ("created_at", "updated_at", "review_at", "expires_at")
_STRINGS = ("doc_id", "title", "uri", "source_system", "corpus", "owner", "origin", "path", "text")
_BOOLS = ("ai_allowed", "personal_data", "deleted")

Metadata = dict[str, Any]


def _parse_date(value: object, where: str) -> datetime:
    if not isinstance(value, str):
        raise MetadataError(f"{where}: expected an ISO 8601 string, got {value!r}")
    try:
        parsed = datetime.fromisoformat(value)
        return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
    except ValueError:
        raise MetadataError(f"{where}: not an ISO 8601 date: {value!r}") from None
    except OverflowError:  # 9999-12-31T23:59:59-14:00 is past the last representable instant
        raise MetadataError(f"{where}: date out of range: {value!r}") from None


def parse_metadata(raw: object, source: str, forbidden: frozenset[str] = frozenset()) -> Metadata:
    """Validate one metadata object into typed values; errors name the key and ``source``."""
    if not isinstance(raw, dict):
        raise MetadataError(f"{source}: expected a JSON object")
    out: Metadata = {}
    for key, value in raw.items():
        where = f"{source}: key {key!r}"
        if key not in KEYS:
            raise MetadataError(f"{source}: unknown key {key!r}")
        if key in forbidden:
            raise MetadataError(f"{where} is not allowed here")
        if key in _STRINGS:
            if not isinstance(value, str) or (key != "text" and not value.strip()):
                raise MetadataError(f"{where}: expected a non-empty string")
            out[key] = value if key == "text" else value.strip()
        elif key in _BOOLS:
            if not isinstance(value, bool):
                raise MetadataError(f"{where}: expected true or false, got {value!r}")
            out[key] = value
        elif key in _DATES:
            out[key] = _parse_date(value, where)
        elif key == "sensitivity":
            try:
                out[key] = Sensitivity.parse(value)
            except ValueError as exc:
                raise MetadataError(f"{where}: {exc}") from None
        elif key == "acl":
            if not isinstance(value, list):
                raise MetadataError(f"{where}: expected a list of principals")
            try:
                out[key] = frozenset(parse_principal(p) for p in value)
            except ValueError as exc:
                raise MetadataError(f"{where}: {exc}") from None
        elif key == "origin_chain":
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                raise MetadataError(f"{where}: expected a list of origin names")
            out[key] = tuple(v.strip() for v in value)
    if "doc_id" in out and ":" not in out["doc_id"]:
        raise MetadataError(f"{source}: key 'doc_id' must look like 'source_system:native_id'")
    return out


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
    merged: Metadata = {}
    for folder in reversed(chain):
        if cache is not None and folder in cache:
            layer = cache[folder]
        else:
            meta_file = folder / FOLDER_META
            layer = (
                parse_metadata(_read_json(meta_file), str(meta_file), _FOLDER_FORBIDDEN)
                if meta_file.is_file()
                else {}
            )
            if cache is not None:
                cache[folder] = layer
        merged.update(layer)
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


def normalise_manifest_path(manifest: Path, written: str) -> tuple[Path, str]:
    """``written`` (as on a manifest line) → (absolute normalised path, display path)."""
    return _normalise(Path(os.path.abspath(manifest.parent)), written)


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
