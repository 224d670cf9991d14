"""Ingestion: files and manifest lines → documents with metadata, chunks and vectors.

Guarantees:

* one transaction per document — a file that fails leaves nothing half-written and the
  rest of the batch continues;
* an unchanged document (same content hash and same metadata) is not touched;
  a metadata-only change rewrites the rows but reuses the stored vectors;
* a document with no ACL is stored visible to nobody, and reported;
* RESTRICTED chunks get no vector unless ``[embedding] persist_restricted = true``;
* a document's origin comes from its metadata, else from ``[trust.source_origins]`` for its
  source system, else ``unknown`` — trust itself is never stored.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from clearance.config import Settings
from clearance.errors import ClearanceError, LoaderError, MetadataError
from clearance.ingest.chunking import chunk_sections
from clearance.ingest.classify import classify
from clearance.ingest.facts import extract_facts, vocab_fingerprint
from clearance.ingest.loaders import SUPPORTED, Extracted, extract, extract_text
from clearance.ingest.metadata import (
    FOLDER_META,
    SIDECAR_SUFFIX,
    Metadata,
    folder_metadata,
    read_manifest,
    sidecar_metadata,
)
from clearance.model import Chunk, Document, Fact, Section, Sensitivity
from clearance.retrieval.embedding import Embedder
from clearance.store.sqlite import SQLiteStore

__all__ = ["FileResult", "IngestReport", "Ingestor", "Job"]

Status = Literal[
    "added", "updated", "metadata", "unchanged", "deleted", "absent", "skipped", "failed"
]


@dataclass(frozen=True, slots=True)
class Job:
    """One unit of ingestion work: a file, an inline text, or a deletion."""

    source: str  # what the operator recognises: a relative path or "manifest.jsonl:7"
    path: Path | None
    metadata: Metadata
    default_doc_id: str | None = None
    error: str | None = None  # set when planning already knows this job fails


@dataclass(frozen=True, slots=True)
class FileResult:
    source: str
    status: Status
    doc_id: str | None = None
    chunks: int = 0
    error: str | None = None
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "status": self.status,
            "doc_id": self.doc_id,
            "chunks": self.chunks,
            "error": self.error,
            "warnings": list(self.warnings),
        }


@dataclass(slots=True)
class IngestReport:
    results: list[FileResult] = field(default_factory=list)
    #: Run-level warnings, not about one file (e.g. a classifier pattern that matched nothing).
    warnings: list[str] = field(default_factory=list)

    @property
    def chunks_written(self) -> int:
        """Chunks stored by this run: unchanged documents are not counted."""
        return sum(r.chunks for r in self.results if r.status in ("added", "updated", "metadata"))

    @property
    def counts(self) -> dict[str, int]:
        return dict(Counter(r.status for r in self.results))

    @property
    def failed(self) -> list[FileResult]:
        return [r for r in self.results if r.status == "failed"]

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": not self.failed,
            "counts": self.counts,
            "chunks": self.chunks_written,
            "results": [r.to_dict() for r in self.results],
            "warnings": list(self.warnings),
        }


def _is_metadata_file(path: Path) -> bool:
    return path.name == FOLDER_META or path.name.endswith(SIDECAR_SUFFIX)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _fingerprint(values: dict[str, Any]) -> str:
    def default(value: object) -> object:
        if isinstance(value, datetime):
            return value.isoformat()
        if isinstance(value, frozenset | set):
            return sorted(value)
        if isinstance(value, Sensitivity):
            return value.name
        raise TypeError(type(value).__name__)

    return _sha256(json.dumps(values, sort_keys=True, default=default).encode())


class Ingestor:
    """Plans and runs ingestion into a store, with an optional embedder."""

    def __init__(self, settings: Settings, store: SQLiteStore, embedder: Embedder | None) -> None:
        self.settings = settings
        self.store = store
        self.embedder = embedder
        self._folder_cache: dict[Path, Metadata] = {}

    # ------------------------------------------------------------------ planning

    def plan(
        self, paths: Sequence[Path], manifest: Path | None = None, corpus: str | None = None
    ) -> list[Job]:
        """Expand paths and manifest lines into jobs. Metadata errors become failed jobs."""
        jobs: list[Job] = []
        for root in paths:
            if root.is_dir():
                files = sorted(
                    p
                    for p in root.rglob("*")
                    if p.is_file()
                    and not _is_metadata_file(p)
                    and not any(part.startswith(".") for part in p.relative_to(root).parts)
                )
                for file in files:
                    rel = file.relative_to(root).as_posix()
                    if file.suffix.lower() not in SUPPORTED:
                        jobs.append(Job(rel, file, {}, error="skipped: unsupported file type"))
                        continue
                    jobs.append(self._file_job(file, rel, {}, corpus))
            elif root.is_file():
                jobs.append(self._file_job(root, root.name, {}, corpus))
            else:
                jobs.append(Job(str(root), None, {}, error="no such file or directory"))
        if manifest is not None:
            entries = list(read_manifest(manifest))
            # A file both found by a folder walk and listed in the manifest is ingested once,
            # with the manifest's metadata (the highest precedence).
            listed = {e.path.resolve() for e in entries if e.path is not None}
            jobs = [j for j in jobs if j.path is None or j.path.resolve() not in listed]
            for entry in entries:
                source = f"{manifest.name}:{entry.line}"
                if entry.path is not None:
                    rel = entry.metadata["path"]
                    jobs.append(self._file_job(entry.path, rel, entry.metadata, corpus, source))
                else:
                    meta = dict(entry.metadata)
                    if corpus and "corpus" not in meta:
                        meta["corpus"] = corpus
                    jobs.append(Job(source, None, meta))
        return jobs

    def _file_job(
        self,
        path: Path,
        rel: str,
        line_meta: Metadata,
        corpus: str | None,
        source: str | None = None,
    ) -> Job:
        try:
            meta: Metadata = {}
            if corpus:
                meta["corpus"] = corpus
            meta.update(folder_metadata(path.parent, self._folder_cache))
            meta.update(sidecar_metadata(path))
            meta.update(line_meta)
        except MetadataError as exc:
            return Job(source or rel, path, {}, error=exc.message)
        system = meta.get("source_system", self.settings.ingest.default_source_system)
        return Job(source or rel, path, meta, default_doc_id=f"{system}:{rel}")

    # ------------------------------------------------------------------ running

    def run(
        self, jobs: Iterable[Job], on_result: Callable[[FileResult], None] | None = None
    ) -> IngestReport:
        report = IngestReport()
        for job in jobs:
            try:
                result = self._run_one(job)
            except ClearanceError as exc:
                result = FileResult(job.source, "failed", error=exc.message)
            report.results.append(result)
            if on_result is not None:
                on_result(result)
        return report

    def _run_one(self, job: Job) -> FileResult:
        if job.error is not None:
            status: Status = "skipped" if job.error.startswith("skipped:") else "failed"
            return FileResult(job.source, status, error=job.error.removeprefix("skipped: "))
        meta = job.metadata
        doc_id = meta.get("doc_id") or job.default_doc_id
        if doc_id is None:
            raise MetadataError(f"{job.source}: no doc_id")
        if meta.get("deleted"):
            return FileResult(
                job.source, "deleted" if self.store.delete(doc_id) else "absent", doc_id
            )

        max_chars = self.settings.ingest.chunk_size
        if job.path is not None:
            try:
                raw = job.path.read_bytes()
            except OSError as exc:
                raise LoaderError(f"{job.source}: cannot read: {exc.strerror}") from exc
            extracted = extract(job.path, max_chars=max_chars, limits=self.settings.ingest)
        else:
            raw = meta["text"].encode("utf-8")
            extracted = extract_text(meta["text"], max_chars=max_chars)
        return self._store(job, doc_id, meta, raw, extracted)

    def _store(
        self, job: Job, doc_id: str, meta: Metadata, raw: bytes, extracted: Extracted
    ) -> FileResult:
        settings = self.settings
        full_text = "\n".join(s.text for s in extracted.sections)
        sensitivity = classify(
            settings.sensitivity,
            label=meta.get("sensitivity"),
            filename=job.path.name if job.path is not None else None,
            text=full_text,
        )
        pieces = chunk_sections(
            extracted.sections, settings.ingest.chunk_size, settings.ingest.chunk_overlap
        )
        if not pieces:
            raise LoaderError(f"{job.source}: empty document (no extractable text)")
        content_hash = _sha256(raw)
        acl: frozenset[str] = meta.get("acl", frozenset())
        source_system = meta.get("source_system", settings.ingest.default_source_system)
        # Metadata names the origin; else [trust.source_origins] for the source system; else
        # "unknown" (untrusted). Only the origin is stored: trust is derived when read.
        origin = meta.get("origin") or settings.trust.source_origins.get(
            source_system.strip().lower(), "unknown"
        )
        fields: dict[str, Any] = {
            "source_system": source_system,
            "corpus": meta.get("corpus", settings.ingest.default_corpus),
            "title": meta.get("title")
            or extracted.title
            or (job.path.stem if job.path else doc_id),
            "uri": meta.get("uri") or (meta.get("path") or job.source),
            "owner": meta.get("owner"),
            "acl": acl,
            "sensitivity": sensitivity,
            "created_at": meta.get("created_at"),
            "updated_at": meta.get("updated_at"),
            "review_at": meta.get("review_at"),
            "expires_at": meta.get("expires_at"),
            "ai_allowed": meta.get("ai_allowed", True),
            "personal_data": meta.get("personal_data", False),
            "origin": origin,
            "origin_chain": meta.get("origin_chain", ()),
            "format": extracted.format,
            "chunking": [settings.ingest.chunk_size, settings.ingest.chunk_overlap],
            "facts_vocab": vocab_fingerprint(settings.facts),  # a new vocabulary re-extracts
        }
        meta_hash = _fingerprint(fields)
        existing = self.store.get_document(doc_id)
        if (
            existing is not None
            and existing.content_hash == content_hash
            and existing.extra.get("meta_hash") == meta_hash
        ):
            return FileResult(job.source, "unchanged", doc_id, chunks=len(pieces))
        content_changed = existing is None or existing.content_hash != content_hash
        version = 1 if existing is None else existing.version + int(content_changed)
        del fields["chunking"]
        del fields["facts_vocab"]
        document = Document(
            doc_id=doc_id,
            content_hash=content_hash,
            version=version,
            path=str(job.path) if job.path is not None else None,
            extra={"meta_hash": meta_hash},
            **fields,
        )
        chunks = [
            Chunk(
                chunk_id=f"{doc_id}#{i}",
                doc_id=doc_id,
                ordinal=i,
                text=text,
                locator=locator,
                sensitivity=sensitivity,
                origin=origin,
            )
            for i, (text, locator) in enumerate(pieces)
        ]
        vectors = self._vectors(doc_id, document, chunks, reuse=not content_changed)
        facts, fact_warnings = self._facts(doc_id, document.title, extracted.sections)
        self.store.upsert(document, chunks, vectors, facts=facts)
        warnings: tuple[str, ...] = () if acl else ("no ACL: the document is visible to nobody",)
        warnings += fact_warnings
        if existing is None:
            status: Status = "added"
        else:
            status = "updated" if content_changed else "metadata"
        return FileResult(job.source, status, doc_id, chunks=len(chunks), warnings=warnings)

    def _facts(
        self, doc_id: str, title: str, sections: Sequence[Section]
    ) -> tuple[list[Fact], tuple[str, ...]]:
        """Facts from the document's tables. Extraction skips bad cells itself; should it
        fail outright, the document is still stored, without facts, and the result says so."""
        try:
            facts = extract_facts(sections, doc_id=doc_id, title=title, vocab=self.settings.facts)
        except Exception as exc:
            return [], (f"facts not extracted ({type(exc).__name__}: {exc})",)
        return facts, ()

    def _vectors(
        self, doc_id: str, document: Document, chunks: list[Chunk], *, reuse: bool
    ) -> list[Any] | None:
        if self.embedder is None:
            return None
        keep = [
            c.sensitivity < Sensitivity.RESTRICTED or self.settings.embedding.persist_restricted
            for c in chunks
        ]
        known = self.store.vectors_by_text(doc_id) if reuse else {}
        todo = [c.text for c, k in zip(chunks, keep, strict=True) if k and c.text not in known]
        fresh = dict(zip(todo, self.embedder.embed(todo), strict=True)) if todo else {}
        return [
            (known.get(c.text) if c.text in known else fresh.get(c.text)) if k else None
            for c, k in zip(chunks, keep, strict=True)
        ]


def now_utc() -> datetime:
    return datetime.now(UTC)
