"""Ingestion: files and manifest lines → documents with metadata, chunks and vectors.

Guarantees:

* one transaction per document — a file that fails leaves nothing half-written and the
  rest of the batch continues;
* an unchanged document (same content hash and same metadata) is not touched;
  a metadata-only change rewrites the rows but reuses the stored vectors;
* a document with no ACL is stored visible to nobody, and reported;
* RESTRICTED chunks get no vector unless ``[embedding] persist_restricted = true``;
* a document's origin comes from its metadata, else from ``[trust.source_origins]`` for its
  source system, else :data:`FILES_ORIGIN` for a file under a path the operator named (of
  the default source system: the operator's folder is the organisation's, as a filesystem
  source's files are) and ``unknown`` for anything else, a manifest's lines included —
  trust itself is never stored.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from clearance.access.directory import Directory, unknown_principal_warning
from clearance.access.ownership import SOURCE_KEY, check_owner
from clearance.config import Settings
from clearance.errors import (
    ClearanceError,
    EmptyDocumentError,
    LoaderError,
    MetadataError,
    OwnershipError,
)
from clearance.ingest.chunking import CJK_WEIGHT, chunk_sections
from clearance.ingest.classify import Classifier
from clearance.ingest.facts import (
    ENTITY_NAMES_KEY,
    YEAR_ENDS_KEY,
    extract_facts,
    vocab_fingerprint,
)
from clearance.ingest.limits import check_size
from clearance.ingest.loaders import Extracted, extract, extract_text, file_format, file_stem
from clearance.ingest.loaders.common import SECTIONING
from clearance.ingest.metadata import (
    FOLDER_META,
    SIDECAR_SUFFIX,
    ManifestEntry,
    Metadata,
    folder_metadata,
    parse_manifest,
    read_manifest,
    sidecar_metadata,
    sidecar_path,
)
from clearance.llm.embedding import Embedder
from clearance.model import Chunk, Document, Fact, Section, Sensitivity

if TYPE_CHECKING:
    from clearance.store.base import Store

__all__ = ["FILES_ORIGIN", "FileResult", "IngestReport", "Ingestor", "Job"]

#: The origin of a local file whose metadata and ``[trust.source_origins]`` name none:
#: written by the organisation's own people.
FILES_ORIGIN = "human"

#: Chunks embedded per call, so a long document reports progress between calls.
_EMBED_STEP = 256
_PROGRESS_INTERVAL_S = 1.0

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
    root: Path | None = None  # the folder the file must stay inside when it is read
    label: str | None = None  # the path the classifier's filename patterns see
    extra: Mapping[str, Any] | None = None  # kept in the document's extra (a source's notes)
    local: bool = False  # a file under a path the operator named (not a manifest line)

    @property
    def doc_id(self) -> str | None:
        return self.metadata.get("doc_id") or self.default_doc_id


# A TOML bare key: what ``[corpora.<name>]`` may hold unquoted.
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True, slots=True)
class FileResult:
    source: str
    status: Status
    doc_id: str | None = None
    chunks: int = 0
    error: str | None = None
    warnings: tuple[str, ...] = ()
    code: str | None = None  # the error's code (``metadata_error``: the operator's input)

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

    @property
    def exit_code(self) -> int:
        """0 when nothing failed; 2 when some input (metadata, manifest, paths) was bad;
        else 1 (a file could not be read or stored)."""
        if not self.failed:
            return 0
        bad_input = (MetadataError.code, OwnershipError.code)
        return 2 if any(r.code in bad_input for r in self.failed) else 1

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

    def __init__(
        self,
        settings: Settings,
        store: Store,
        embedder: Embedder | None,
        directory: Directory | None = None,
        *,
        source: str | None = None,
    ) -> None:
        """``directory``: when given (and not empty), ACL principals it does not know are
        reported per document — they match nobody, and are usually a typo. ``source``: the
        source writing (a sync); ``None`` for a manual ingest, which may not touch a
        document a source owns (:mod:`clearance.access.ownership`)."""
        self.settings = settings
        self.source = source
        self.store = store
        self.embedder = embedder
        self.directory = directory if directory is not None and directory.users else None
        self._folder_cache: dict[Path, Metadata] = {}
        self.classifier = Classifier(settings.sensitivity)
        self._progress: Callable[[str], None] | None = None  # the current job's reporter
        # Documents this run stored without readers, and without an origin by source system:
        # each file warns, and the run ends with one line on how to fix them all.
        self._no_acl = 0
        self._no_origin: Counter[str] = Counter()

    # ------------------------------------------------------------------ planning

    def plan(
        self,
        paths: Sequence[Path],
        manifest: Path | None = None,
        corpus: str | None = None,
        *,
        manifest_data: tuple[str, bytes] | None = None,
    ) -> list[Job]:
        """Expand paths and manifest lines into jobs. Every refusal — a bad metadata file or
        line, a file outside the roots, a symlink, an unconfigured corpus, a duplicate —
        becomes a failed or skipped job naming the reason; the other jobs are unaffected.
        A ``corpus`` that is not configured raises: it would apply to every file.

        ``manifest_data`` is ``(name, JSONL)`` of a manifest without a file (an HTTP body):
        having no folder of its own, it may only name files inside the configured
        ``[ingest] roots`` (relative paths start at the first root), and without roots it is
        refused as a whole."""
        if manifest_data is not None and not self.settings.ingest.roots:
            raise MetadataError(
                f"{manifest_data[0]}: a manifest without a file of its own may only name files "
                "inside the configured [ingest] roots, and none are configured; set "
                "[ingest] roots in the configuration"
            )
        if corpus is not None:
            problem = self.corpus_problem(corpus)
            if problem is not None:
                raise MetadataError(f"--corpus: {problem}")
        jobs: list[Job] = []
        skip = {Path(os.path.realpath(manifest))} if manifest is not None else set()
        for given in paths:
            jobs.extend(self._plan_path(given, corpus, skip))
        configured = self.settings.ingest.roots
        if manifest is not None:
            roots = configured or (Path(os.path.abspath(manifest.parent)),)
            entries = list(read_manifest(manifest))
            jobs = self._plan_entries(entries, manifest.name, roots, corpus, jobs)
        if manifest_data is not None:
            name, data = manifest_data
            entries = list(parse_manifest(data, source=name, base=configured[0]))
            jobs = self._plan_entries(entries, name, configured, corpus, jobs)
        return _refuse_duplicates(jobs)

    def _roots_for(self, folder: Path) -> tuple[Path, ...] | None:
        """The roots that confine files found under ``folder`` (a real path): the
        configured roots containing it, else the folder itself; ``None`` when roots are
        configured and none contains it."""
        configured = self.settings.ingest.roots
        if not configured:
            return (folder,)
        inside = tuple(r for r in configured if folder.is_relative_to(Path(os.path.realpath(r))))
        return inside or None

    def _plan_path(self, given: Path, corpus: str | None, skip: set[Path]) -> list[Job]:
        """One command-line path: a folder walked (without following links), or a file.
        The operator named ``given`` itself, so a link *there* is resolved; nothing found
        inside it is read through a link unless ``[ingest] follow_symlinks``."""
        if not given.exists():
            return [Job(str(given), None, {}, error="no such file or directory")]
        real = Path(os.path.realpath(given))
        folder = real if real.is_dir() else real.parent
        roots = self._roots_for(folder)
        if roots is None:
            return [
                Job(str(given), None, {}, error=f"outside the configured [ingest] roots: {real}")
            ]
        if real.is_file():
            return [self._file_job(real, real.name, {}, corpus, root=roots[0], label=real.name)]
        jobs: list[Job] = []
        for rel, file, refusal in _walk(real):
            if file in skip or _is_metadata_file(file):
                continue
            label = f"{real.name}/{rel}"
            if refusal is not None:
                jobs.append(Job(rel, None, {}, error=f"skipped: {refusal}"))
                continue
            if file.is_symlink():
                target, problem = self._follow(file, roots)
                if problem is not None:
                    jobs.append(Job(rel, None, {}, error=f"skipped: {problem}"))
                    continue
                assert target is not None
                file = target
            if file_format(file) is None:
                jobs.append(Job(rel, None, {}, error="skipped: unsupported file type"))
                continue
            jobs.append(self._file_job(file, rel, {}, corpus, root=roots[0], label=label))
        return jobs

    def _follow(self, link: Path, roots: Sequence[Path]) -> tuple[Path | None, str | None]:
        """A file symlink → (its target, None) if it may be read, else (None, why not)."""
        if not self.settings.ingest.follow_symlinks:
            return None, (
                "symbolic link, not followed (set [ingest] follow_symlinks = true "
                "to follow links inside the ingested root)"
            )
        target = Path(os.path.realpath(link))
        if not any(target.is_relative_to(r) for r in roots):
            return None, "symbolic link to a file outside the ingested root, not followed"
        return target, None

    def _plan_entries(
        self,
        entries: list[ManifestEntry],
        name: str,
        roots: Sequence[Path],
        corpus: str | None,
        walked: list[Job],
    ) -> list[Job]:
        """Manifest ``entries`` (of the manifest called ``name``) as jobs confined to
        ``roots``. A file both found by a folder walk (``walked``) and listed in the manifest
        is ingested once, with the manifest's metadata (the highest precedence)."""
        listed = {Path(os.path.realpath(e.path)) for e in entries if e.path is not None}
        jobs = [j for j in walked if j.path is None or j.path not in listed]
        for entry in entries:
            source = f"{name}:{entry.line}"
            if entry.error is not None:
                jobs.append(Job(source, None, {}, error=entry.error))
            elif entry.path is not None:
                rel = entry.metadata["path"]
                real, root, problem = self._confine(entry.path, roots)
                if problem is not None:
                    jobs.append(Job(source, None, {}, error=problem))
                    continue
                assert real is not None and root is not None
                jobs.append(
                    self._file_job(real, rel, entry.metadata, corpus, source, root=root, label=rel)
                )
            else:
                meta = dict(entry.metadata)
                if corpus and "corpus" not in meta:
                    meta["corpus"] = corpus
                jobs.append(self._checked(Job(source, None, meta)))
        return jobs

    def _confine(
        self, path: Path, roots: Sequence[Path]
    ) -> tuple[Path | None, Path | None, str | None]:
        """A manifest path (absolute, normalised) → (real path, its root, None) when it may
        be read, else (None, None, why not). It must lie inside a root both as written and
        once links are resolved; without ``follow_symlinks`` no part of it below the root
        may be a link."""
        real = Path(os.path.realpath(path))
        for root in roots:
            root_real = Path(os.path.realpath(root))
            if not real.is_relative_to(root_real):
                continue
            if not self.settings.ingest.follow_symlinks and (
                not path.is_relative_to(root)
                or path.relative_to(root) != real.relative_to(root_real)
            ):
                return (
                    None,
                    None,
                    (
                        f"{path} goes through a symbolic link; not followed "
                        "(set [ingest] follow_symlinks = true for links inside the root)"
                    ),
                )
            return real, root_real, None
        where = (
            "the configured [ingest] roots"
            if self.settings.ingest.roots
            else "the manifest's folder"
        )
        return None, None, f"{path} is outside {where}; refused"

    def corpus_problem(self, name: str) -> str | None:
        """Why documents may not be put into corpus ``name``, or ``None``. Names are
        compared exactly; a near miss of a configured corpus is named."""
        settings = self.settings
        if name in settings.corpora or name == settings.ingest.default_corpus:
            return None
        folded = name.strip().casefold()
        near = [c for c in settings.corpora if c.strip().casefold() == folded]
        if near:
            return (
                f"corpus {name!r} is not configured; did you mean {near[0]!r}? "
                "(corpus names are compared exactly)"
            )
        if settings.ingest.allow_unconfigured_corpora:
            return None
        known = ", ".join(repr(c) for c in sorted(settings.corpora)) or "none"
        # The table to add, as TOML spells the key: bare when it can be, else a quoted
        # string with escapes (a control character must not break the one-line message).
        key = name if _BARE_KEY.fullmatch(name) else json.dumps(name)
        return (
            f"corpus {name!r} is not configured (configured: {known}); add [corpora.{key}] "
            "or set [ingest] allow_unconfigured_corpora = true"
        )

    def _checked(self, job: Job, named_in: str | None = None) -> Job:
        """``job`` failed if its corpus may not receive documents; ``named_in`` is the
        metadata file that set the corpus, so the operator knows what to fix."""
        if job.error is not None:
            return job
        name = job.metadata.get("corpus", self.settings.ingest.default_corpus)
        problem = self.corpus_problem(name)
        if problem is None:
            return job
        return dataclasses.replace(
            job, error=f"{named_in}: {problem}" if named_in is not None else problem
        )

    def _file_job(
        self,
        path: Path,
        rel: str,
        line_meta: Metadata,
        corpus: str | None,
        source: str | None = None,
        *,
        root: Path,
        label: str,
    ) -> Job:
        try:
            meta: Metadata = {}
            if corpus:
                meta["corpus"] = corpus
            meta.update(folder_metadata(path.parent, root, self._folder_cache))
            sidecar = sidecar_metadata(path)
            meta.update(sidecar)
            meta.update(line_meta)
        except MetadataError as exc:
            return Job(source or rel, path, {}, error=exc.message)
        system = meta.get("source_system", self.settings.ingest.default_source_system)
        job = Job(
            source or rel,
            path,
            meta,
            default_doc_id=f"{system}:{rel}",
            root=root,
            label=label,
            local=source is None,
        )
        if "corpus" in line_meta:
            named_in = None  # the manifest line: the job's source already names it
        elif "corpus" in sidecar:
            named_in = str(sidecar_path(path))
        else:
            named_in = self._folder_file_setting(path.parent, root, "corpus")
        return self._checked(job, named_in)

    def _folder_file_setting(self, folder: Path, root: Path, key: str) -> str | None:
        """The ``_meta.json`` nearest to ``folder`` (up to ``root``) that sets ``key``;
        the layers were read (and cached) by :func:`folder_metadata` already."""
        folder, root = folder.resolve(), root.resolve()
        for current in [folder, *folder.parents]:
            if not current.is_relative_to(root):
                break
            if key in self._folder_cache.get(current, {}):
                return str(current / FOLDER_META)
        return None

    # ------------------------------------------------------------------ running

    def run(
        self,
        jobs: Iterable[Job],
        on_result: Callable[[FileResult], None] | None = None,
        on_progress: Callable[[str, str], None] | None = None,
    ) -> IngestReport:
        """Run ``jobs`` one by one. ``on_result`` gets each file's result as it is done;
        ``on_progress(source, where)`` is told, about once a second, how far a long file has
        got (``"page 1200/5000"``, ``"embedding 3000/20000 chunks"``)."""
        report = IngestReport()
        self._no_acl, self._no_origin = 0, Counter()
        for job in jobs:
            self._progress = None
            if on_progress is not None:
                self._progress = functools.partial(on_progress, job.source)
            try:
                result = self._run_one(job)
            except ClearanceError as exc:
                result = FileResult(job.source, "failed", error=exc.message, code=exc.code)
            report.results.append(result)
            if on_result is not None:
                on_result(result)
        report.warnings.extend(self.classifier.unmatched())
        report.warnings.extend(self._fixes())
        return report

    def _fixes(self) -> list[str]:
        """How to fix what many files of the run share, once (see docs/metadata.md)."""
        out = []
        if self._no_acl:
            out.append(
                f"{self._no_acl} document(s) have no ACL and are visible to nobody: name who "
                'may read them with "acl" in a _meta.json beside them, a <file>.meta.json '
                "sidecar or the manifest (docs/metadata.md)"
            )
        for system, n in sorted(self._no_origin.items()):
            out.append(
                f"{n} document(s) from source system {system!r} name no origin and count as "
                "untrusted (marked so in citations, kept apart in prompts): if they are your "
                'organisation\'s own, set "origin": "human" in their metadata or '
                f'[trust.source_origins] {system} = "human"'
            )
        return out

    def _run_one(self, job: Job) -> FileResult:
        if job.error is not None:
            if job.error.startswith("skipped:"):
                return FileResult(job.source, "skipped", error=job.error.removeprefix("skipped: "))
            raise MetadataError(job.error)
        meta = job.metadata
        doc_id = meta.get("doc_id") or job.default_doc_id
        if doc_id is None:
            raise MetadataError(f"{job.source}: no doc_id")
        what = f"{'deletion' if meta.get('deleted') else 'ingest'} of {job.source}"
        held = self.store.get_document(doc_id)
        check_owner(held, self.source, what)
        if (
            held is not None
            and held.path
            and job.path is not None
            and not meta.get("doc_id")
            and _another_file(held.path, job.path)
        ):
            # Two folders with a file at the same place (gdp/README.md, co2/README.md)
            # derive one doc_id: the second, ingested on its own, replaced the first.
            raise MetadataError(
                f"doc_id {doc_id!r} is already the document read from "
                f"{held.path}, which still exists; not replaced. Ingest the folders' common "
                f"parent folder, or give one of them a doc_id in its {job.path.name}.meta.json"
            )
        if meta.get("deleted"):
            return FileResult(
                job.source, "deleted" if self.store.delete(doc_id) else "absent", doc_id
            )

        max_chars = self.settings.ingest.chunk_size
        try:
            if job.path is not None:
                self._recheck(job)
                content_hash = self._file_hash(job)
                extracted = extract(
                    job.path,
                    max_chars=max_chars,
                    limits=self.settings.ingest,
                    on_progress=self._progress,
                )
            else:
                content_hash = _sha256(meta["text"].encode("utf-8"))
                extracted = extract_text(meta["text"], max_chars=max_chars)
            return self._store(job, doc_id, meta, content_hash, extracted)
        except EmptyDocumentError as exc:
            # Nothing to index (a page of front matter only, a scan without OCR): skipped,
            # so its corpus still syncs; a version indexed before holds text the file no
            # longer has, and is removed with its chunks.
            why = exc.message
            if held is not None and self.store.delete(doc_id):
                why += "; the version indexed before was removed"
            return FileResult(job.source, "skipped", error=why)

    def _file_hash(self, job: Job) -> str:
        """SHA-256 of the file, read in blocks after its size passed ``max_file_mb``: a
        huge file is refused before it is read, and never held in memory whole."""
        assert job.path is not None
        digest = hashlib.sha256()
        try:
            with job.path.open("rb") as handle:
                check_size(job.path.name, os.fstat(handle.fileno()).st_size, self.settings.ingest)
                while block := handle.read(1 << 20):
                    digest.update(block)
        except OSError as exc:
            raise LoaderError(f"{job.source}: cannot read: {exc.strerror or exc}") from exc
        return digest.hexdigest()

    def _recheck(self, job: Job) -> None:
        """The file is still where planning allowed it: a link swapped in since then (or
        a folder above it replaced by one) must not lead outside its root."""
        assert job.path is not None
        if job.root is None:
            return
        real = Path(os.path.realpath(job.path))
        moved = real != job.path and not self.settings.ingest.follow_symlinks
        if moved or not real.is_relative_to(job.root):
            raise MetadataError(f"{job.source}: became a symbolic link after planning; refused")

    def _store(
        self, job: Job, doc_id: str, meta: Metadata, content_hash: str, extracted: Extracted
    ) -> FileResult:
        settings = self.settings
        full_text = "\n".join(s.text for s in extracted.sections)
        sensitivity = self.classifier.classify(
            label=meta.get("sensitivity"),
            path=job.label or (job.path.name if job.path is not None else None),
            text=full_text,
        )
        pieces = chunk_sections(
            extracted.sections, settings.ingest.chunk_size, settings.ingest.chunk_overlap
        )
        if not pieces:
            raise EmptyDocumentError(f"{job.source}: empty document (no extractable text)")
        acl: frozenset[str] = meta.get("acl", frozenset())
        source_system = meta.get("source_system", settings.ingest.default_source_system)
        # Metadata names the origin; else [trust.source_origins] for the source system; else
        # a local file is the organisation's own (as a filesystem source's are) and anything
        # else "unknown" (untrusted). Only the origin is stored: trust is derived when read.
        system = source_system.strip().lower()
        own = job.local and system == settings.ingest.default_source_system.strip().lower()
        origin = meta.get("origin") or settings.trust.source_origins.get(
            system, FILES_ORIGIN if own else "unknown"
        )
        fields: dict[str, Any] = {
            "source_system": source_system,
            "corpus": meta.get("corpus", settings.ingest.default_corpus),
            "title": meta.get("title")
            or extracted.title
            or (file_stem(job.path) if job.path else doc_id),
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
            # how chunks are cut: a chunker counting CJK anew, or loaders cutting sections
            # anew, re-chunk what they cut before
            "chunking": [
                settings.ingest.chunk_size,
                settings.ingest.chunk_overlap,
                CJK_WEIGHT,
                SECTIONING,
            ],
            "facts_vocab": vocab_fingerprint(settings.facts),  # a new vocabulary re-extracts
            "extra": dict(job.extra or {}),
        }
        meta_hash = _fingerprint(fields)
        existing = self.store.get_document(doc_id)
        if (
            existing is not None
            and existing.content_hash == content_hash
            and existing.extra.get("meta_hash") == meta_hash
            and existing.acl == acl  # an ACL changed since (acl sync) is put back
        ):
            return FileResult(job.source, "unchanged", doc_id, chunks=len(pieces))
        content_changed = existing is None or existing.content_hash != content_hash
        version = 1 if existing is None else existing.version + int(content_changed)
        del fields["chunking"]
        del fields["facts_vocab"]
        extra = fields.pop("extra")
        if self.source is not None:
            extra[SOURCE_KEY] = self.source
        document = Document(
            doc_id=doc_id,
            content_hash=content_hash,
            version=version,
            path=str(job.path) if job.path is not None else None,
            extra={**extra, "meta_hash": meta_hash},
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
        facts, fact_warnings, read = self._facts(doc_id, document.title, extracted.sections)
        if read:  # fiscal year ends, other names of companies: what answers read them by
            document = replace(document, extra={**document.extra, **read})
        self.store.upsert(document, chunks, vectors, facts=facts)
        warnings: tuple[str, ...] = () if acl else ("no ACL: the document is visible to nobody",)
        ceiling = self.settings.corpus(document.corpus).max_sensitivity
        if sensitivity > ceiling:
            # Decided by the access policy's ceiling rule: served, named and viewed to nobody.
            warnings += (
                f"{sensitivity.name} is above corpus {document.corpus}'s max_sensitivity "
                f"{ceiling.name}: the document is visible to nobody",
            )
        self._no_acl += not acl
        if origin == "unknown" and not meta.get("origin"):
            self._no_origin[source_system] += 1
        if self.directory is not None:
            warnings += tuple(
                unknown_principal_warning(p) for p in self.directory.unknown_principals(acl)
            )
        warnings += fact_warnings
        if existing is None:
            status: Status = "added"
        else:
            status = "updated" if content_changed else "metadata"
        return FileResult(job.source, status, doc_id, chunks=len(chunks), warnings=warnings)

    def _facts(
        self, doc_id: str, title: str, sections: Sequence[Section]
    ) -> tuple[list[Fact], tuple[str, ...], dict[str, Any]]:
        """Facts from the document's tables, a warning per table whose values were skipped
        although it names a metric (no entity or period, an ambiguous label, an unknown
        unit; the warning gives the table's locator), and what the document's ``extra``
        keeps of them: the month each entity's fiscal years end in where its tables say so
        (``YEAR_ENDS_KEY``), other names of the companies they name (``ENTITY_NAMES_KEY``).
        Extraction skips bad cells itself; should it fail outright, the document is still
        stored, without facts, and the result says so."""
        warnings: list[str] = []
        year_ends: dict[str, int] = {}
        names: dict[str, list[str]] = {}
        try:
            facts = extract_facts(
                sections,
                doc_id=doc_id,
                title=title,
                vocab=self.settings.facts,
                warn=warnings.append,
                year_ends=year_ends,
                names=names,
            )
        except Exception as exc:
            return [], (f"facts not extracted ({type(exc).__name__}: {exc})",), {}
        read: dict[str, Any] = {}
        if year_ends:
            read[YEAR_ENDS_KEY] = year_ends
        if names:
            read[ENTITY_NAMES_KEY] = names
        return facts, tuple(warnings), read

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
        todo = list(
            dict.fromkeys(
                c.text for c, k in zip(chunks, keep, strict=True) if k and c.text not in known
            )
        )
        fresh: dict[str, Any] = {}
        last = time.monotonic()
        for start in range(0, len(todo), _EMBED_STEP):
            batch = todo[start : start + _EMBED_STEP]
            fresh.update(zip(batch, self.embedder.embed(batch), strict=True))
            if self._progress is not None and time.monotonic() - last >= _PROGRESS_INTERVAL_S:
                self._progress(f"embedding {start + len(batch)}/{len(todo)} chunks")
                last = time.monotonic()
        return [
            (known.get(c.text) if c.text in known else fresh.get(c.text)) if k else None
            for c, k in zip(chunks, keep, strict=True)
        ]


def _walk(folder: Path) -> Iterator[tuple[str, Path, str | None]]:
    """Files below ``folder`` as (relative path, path, refusal), sorted, hidden entries
    left out. Links to folders are reported, never entered."""
    found: list[tuple[str, Path, str | None]] = []
    for current, dirs, files in os.walk(folder, followlinks=False):
        base = Path(current)
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in list(dirs):
            if (base / name).is_symlink():
                dirs.remove(name)
                rel = (base / name).relative_to(folder).as_posix()
                found.append((rel, base / name, "symbolic link to a folder, not followed"))
        for name in files:
            if not name.startswith("."):
                path = base / name
                found.append((path.relative_to(folder).as_posix(), path, None))
    yield from sorted(found, key=lambda item: item[0])


def _another_file(stored: str, path: Path) -> bool:
    """Whether ``stored`` (a document's path) is a file other than ``path`` that still
    exists: a file moved away is the same document, a file beside it another one."""
    old = Path(stored)
    try:
        return old.is_file() and old.resolve() != path.resolve()
    except OSError:
        return False


def _refuse_duplicates(jobs: list[Job]) -> list[Job]:
    """Two jobs that would write the same document, or read the same file, are ambiguous —
    which ACL is meant? — so both fail, naming each other, and neither is written."""
    by_key: dict[tuple[str, str], list[int]] = {}
    for i, job in enumerate(jobs):
        if job.error is not None:
            continue
        if job.doc_id is not None:
            by_key.setdefault(("doc_id", job.doc_id), []).append(i)
        if job.path is not None:
            by_key.setdefault(("file", str(job.path)), []).append(i)
    out = list(jobs)
    for (kind, key), indices in by_key.items():
        if len(indices) < 2:
            continue
        for i in indices:
            # Two folders' README.md are both "README.md" to the run: named by their paths.
            same = [j for j in indices if j != i and jobs[j].source == jobs[i].source]
            others = ", ".join(
                str(jobs[j].path) if j in same and jobs[j].path is not None else jobs[j].source
                for j in indices
                if j != i
            )
            what = f"doc_id {key!r}" if kind == "doc_id" else f"the same file ({key})"
            hint = (
                " (ingest the folders' common parent folder, or give one a doc_id in its"
                " <file>.meta.json)"
                if kind == "doc_id" and same
                else ""
            )
            if out[i].error is None:
                out[i] = dataclasses.replace(
                    out[i], error=f"{what} also comes from {others}; refused{hint}"
                )
    return out
