"""The Clearance service: one object that wires settings, store, directory and access.

The CLI and the Python API both go through :class:`Clearance`, so every retrieval path
resolves a principal and searches inside the filter compiled from it. There is no method
that searches without a user.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clearance.access.directory import Directory, unknown_principal_warning
from clearance.access.ownership import BLOCKED_KEY, check_owner, owner_of
from clearance.access.policy import Action, Decision
from clearance.access.realtime import PermissionChecker
from clearance.bounds import check_question
from clearance.config import Settings, trace_key
from clearance.errors import LoaderError, MetadataError, NotFoundError
from clearance.runtime import DIRECTORY_KEY, Runtime, meta_json
from clearance.store.backends import open_store
from clearance.store.base import Store

if TYPE_CHECKING:
    # Each loads where it is used (ACL files, notes, answers), not with every command.
    from clearance.access.scim import ScimState, ScimWrite
    from clearance.access.sync import AclSyncReport
    from clearance.answer.orchestrator import Orchestrator
    from clearance.answer.result import AnswerResult
    from clearance.ingest.pipeline import FileResult, IngestReport, Job
    from clearance.llm.base import Provider
    from clearance.llm.embedding import Embedder
    from clearance.retrieval.retriever import SearchResult

__all__ = ["NOTE_SOURCE", "Clearance", "SearchResult", "directory_sync_summary"]

#: The source system of notes (derived knowledge added with :meth:`Clearance.add_note`).
NOTE_SOURCE = "note"


def __getattr__(name: str) -> Any:
    # SearchResult is the public API's name for a search's result; retrieval loads with
    # the first search, not with every command that opens the index.
    if name == "SearchResult":
        from clearance.retrieval.retriever import SearchResult

        return SearchResult
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


_SCIM_KEY = "scim"


class Clearance(Runtime):
    """Open with :meth:`open`; close with :meth:`close` or use as a context manager."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        *,
        embedder: Embedder | str | None = "auto",
        checkers: dict[str, PermissionChecker] | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        provider: Provider | None = None,
        trace_key: bytes | None = None,
    ) -> None:
        super().__init__(
            settings, store, embedder=embedder, checkers=checkers, clock=clock, trace_key=trace_key
        )
        self._provider = provider
        self._orchestrator: Orchestrator | None = None

    @classmethod
    def open(cls, settings: Settings, **kwargs: Any) -> Clearance:
        kwargs.setdefault("trace_key", trace_key(settings))
        store = open_store(settings)
        return cls(settings, store, **kwargs)

    def close(self) -> None:
        """Close what this instance opened: the providers it built, checkers, the store."""
        if self._orchestrator is not None and self._provider is None:
            for provider in self._orchestrator.providers():
                close = getattr(provider, "close", None)
                if callable(close):
                    close()
        super().close()

    def warm(self) -> None:
        """Read the directory, load the embedding model and build the in-memory search
        copies now, so that the first request after a start does not wait for them."""
        _ = self.directory
        self.store.warm(vectors=self.embedder is not None)

    # ------------------------------------------------------------------ ingestion

    def ingest(
        self,
        paths: Sequence[Path],
        *,
        manifest: Path | None = None,
        corpus: str | None = None,
        manifest_data: tuple[str, bytes] | None = None,
        on_plan: Callable[[int], None] | None = None,
        on_result: Callable[[FileResult], None] | None = None,
        on_progress: Callable[[str, str], None] | None = None,
    ) -> IngestReport:
        """Ingest files and manifest lines (see :class:`Ingestor`).

        The metadata just read is the source's current ACL for the documents it covers, so
        a run that covered **every** document of a corpus is a complete permission sync of
        that corpus and advances its sync time. A partial run (some of the corpus's
        documents not covered, or a file that failed) advances nothing: it must never make
        a corpus past its revocation SLA serve documents whose ACLs were not re-read.

        ``manifest_data`` is ``(name, JSONL)`` of a manifest that has no file (an HTTP body):
        it may name files inside the configured ``[ingest] roots`` only (see
        :meth:`Ingestor.plan`)."""
        from clearance.ingest.pipeline import Ingestor

        ingestor = Ingestor(self.settings, self.store, self.embedder, self.directory)
        jobs = ingestor.plan(paths, manifest, corpus, manifest_data=manifest_data)
        if on_plan is not None:
            on_plan(len(jobs))
        report = ingestor.run(jobs, on_result, on_progress)
        covered = {
            r.doc_id
            for r in report.results
            if r.doc_id and r.status in ("added", "updated", "metadata", "unchanged")
        }
        touched = {
            doc.corpus
            for doc_id in covered
            for doc in [self.store.get_document(doc_id)]
            if doc is not None
        }
        failed_corpora = {
            corpus
            for job, result in zip(jobs, report.results, strict=True)
            if result.status == "failed"
            for corpus in self._held_back(job, result)
        }
        now = self.clock()
        for name in sorted(touched):
            stored = {d.doc_id for d in self.store.list_documents(name)}
            missing = stored - covered
            if None in failed_corpora or name in failed_corpora:
                report.warnings.append(
                    f"corpus {name!r}: permission sync time not advanced, because a file "
                    "failed in this run (fix it and ingest again, or run 'clearance acl sync')"
                )
            elif missing:
                report.warnings.append(
                    f"corpus {name!r}: permission sync time not advanced, because this run "
                    f"covered {len(stored) - len(missing)} of its {len(stored)} documents "
                    "(ingest its whole folder or manifest, or run 'clearance acl sync')"
                )
            else:
                self.store.record_acl_sync(name, now)
        return report

    def _held_back(self, job: Job, result: FileResult) -> set[str | None]:
        """The corpora a failed job keeps from a complete permission sync: those where a
        version of its document stays indexed under an ACL this run did not re-read. A job
        whose metadata did not parse may belong to any corpus (``None``: all of them); a
        new file that failed left nothing behind to go stale, so it holds nothing back."""
        if not job.metadata or result.code == "metadata_error" or job.doc_id is None:
            return {None}
        stored = self.store.get_document(job.doc_id)
        if stored is None:
            return set()
        return {stored.corpus, job.metadata.get("corpus", self.settings.ingest.default_corpus)}

    def remove(self, doc_id: str) -> bool:
        """Purge a document; one a source owns is refused (it would come back with the
        source's next sync): delete it at the source instead."""
        check_owner(self.store.get_document(doc_id), None, f"remove {doc_id!r}")
        return self.store.delete(doc_id)

    def add_note(
        self,
        text: str,
        *,
        origin: str,
        origin_chain: Iterable[str] = (),
        corpus: str,
        acl: Iterable[str],
        title: str | None = None,
        doc_id: str | None = None,
    ) -> str:
        """Store derived knowledge (a meeting summary, a chat excerpt) as an inline-text
        document and return its ``doc_id`` (``note:<uuid>`` unless given).

        ``origin`` is where the text came from and ``origin_chain`` every origin it was
        derived through: trust is their minimum, resolved when read — a ``consolidation``
        of a chat export stays untrusted."""
        result = self.add_note_result(
            text,
            origin=origin,
            origin_chain=origin_chain,
            corpus=corpus,
            acl=acl,
            title=title,
            doc_id=doc_id,
        )
        assert result.doc_id is not None
        return result.doc_id

    def add_note_result(
        self,
        text: str,
        *,
        origin: str,
        origin_chain: Iterable[str] = (),
        corpus: str,
        acl: Iterable[str],
        title: str | None = None,
        doc_id: str | None = None,
    ) -> FileResult:
        """:meth:`add_note`, returning the ingestion result (status, chunks, warnings).

        When every document of ``corpus`` is a note, the notes *are* the corpus's ACL
        state, so adding one records an ACL sync; a corpus that also holds documents from a
        source system is kept fresh only by syncing from that system."""
        if not isinstance(text, str) or not text.strip():
            raise MetadataError("note: the text is empty")
        raw: dict[str, Any] = {
            "text": text,
            "doc_id": doc_id if doc_id is not None else f"{NOTE_SOURCE}:{uuid.uuid4()}",
            "source_system": NOTE_SOURCE,
            "origin": origin,
            "origin_chain": list(origin_chain),
            "corpus": corpus,
            "acl": list(acl),
        }
        if title is not None:
            raw["title"] = title
        from clearance.ingest.metadata import parse_metadata
        from clearance.ingest.pipeline import Ingestor, Job

        meta = parse_metadata(raw, "note")

        ingestor = Ingestor(self.settings, self.store, self.embedder)
        job = Job(meta["doc_id"], None, meta, default_doc_id=meta["doc_id"])
        result = ingestor.run([job]).results[0]
        if result.status == "failed":
            raise LoaderError(result.error or f"{meta['doc_id']}: the note was not stored")
        documents = self.store.list_documents(meta["corpus"])
        if documents and all(d.source_system == NOTE_SOURCE for d in documents):
            self.store.record_acl_sync(meta["corpus"], self.clock())
        return result

    # ------------------------------------------------------------------ directory and ACLs

    def provision(self, write: Callable[[Directory, ScimState], ScimWrite]) -> ScimWrite:
        """Apply one SCIM write (:mod:`clearance.access.scim`): the directory and the SCIM
        resources are read, changed and written in one transaction, one writer at a time
        (SQLite's write lock; a transaction-scoped advisory lock in PostgreSQL), so two
        provisioning requests never lose each other's change, and the new directory
        version is what the very next request reads."""
        with self.store.transaction() as db:
            if self.store.dialect == "postgres":
                db.execute("SELECT pg_advisory_xact_lock(hashtext('clearance.scim'))")
            rows = dict(
                db.execute(
                    "SELECT key, value FROM meta WHERE key IN (?, ?)", (DIRECTORY_KEY, _SCIM_KEY)
                ).fetchall()
            )
            raw_directory = meta_json(rows.get(DIRECTORY_KEY))
            directory = (
                Directory.empty() if raw_directory is None else Directory.from_json(raw_directory)
            )
            from clearance.access.scim import ScimState  # SCIM's models load only for SCIM

            result = write(directory, ScimState.from_json(meta_json(rows.get(_SCIM_KEY))))
            for key, value in (
                (DIRECTORY_KEY, result.directory.to_json()),
                (_SCIM_KEY, result.state.to_json()),
            ):
                db.execute(
                    "INSERT INTO meta (key, value) VALUES (?, ?) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (key, json.dumps(value)),
                )
        return result

    def scim_view(self) -> tuple[Directory, ScimState]:
        """The directory and the SCIM resources, for reads of ``/scim/v2``."""
        from clearance.access.scim import ScimState

        return self.directory, ScimState.from_json(self.store.get_meta(_SCIM_KEY))

    def sync_acls(
        self, path: Path, corpus: str, *, delta: bool = False, read_at: str | None = None
    ) -> AclSyncReport:
        """Apply an ACL file; ``read_at`` (ISO 8601) is when the exporter began reading the
        source, from which the revocation SLA counts (default: the file's modification
        time)."""
        from clearance.access.sync import parse_read_at, sync_acls

        now = self.clock()
        moment = None if read_at is None else parse_read_at(read_at, now, "--read-at")
        return sync_acls(
            self.store,
            path,
            corpus,
            delta=delta,
            now=now,
            directory=self.directory,
            read_at=moment,
        )

    def sync_acl_data(
        self,
        data: bytes,
        source: str,
        corpus: str,
        *,
        delta: bool = False,
        read_at: str | None = None,
    ) -> AclSyncReport:
        """:meth:`sync_acls` of JSONL (or a JSON array) already read; ``source`` names it in
        errors (``request body:3``). Without ``read_at`` the data counts as read now."""
        from clearance.access.sync import parse_read_at, sync_acl_data

        now = self.clock()
        moment = None if read_at is None else parse_read_at(read_at, now)
        return sync_acl_data(
            self.store,
            data,
            source,
            corpus,
            delta=delta,
            now=now,
            directory=self.directory,
            read_at=moment,
        )

    # ------------------------------------------------------------------ decisions and answers

    def explain(self, user_id: str, doc_id: str, *, assistant: str | None = None) -> dict[str, Any]:
        """Operator view of one decision: why may (or may not) this user see this document?
        ``user_id`` may be any of the user's names (UPN, mail, object id …): the answer says
        which directory user it resolved to and by which alias."""
        access = self.access()
        document = self.store.get_document(doc_id)
        if document is None:
            raise NotFoundError(f"no document {doc_id!r} in the index")
        asked = user_id
        match = self.directory.resolve(user_id)
        if match is not None:
            user_id = match.user_id
        principal = access.principal(user_id)
        assistant_settings = access.assistant(assistant)
        decisions: dict[str, Decision] = {
            action.value: access.decide(principal, action, document, assistant_settings)
            for action in (Action.RETRIEVE, Action.VIEW)
        }
        unknown = self.directory.unknown_principals(document.acl)
        # A source that could not state this document's access safely says why it is empty.
        blocked = document.extra.get(BLOCKED_KEY)
        paths = {
            p: self.directory.why(user_id, p.removeprefix("group:"))
            for p in sorted(document.acl & principal.principals)
            if p.startswith("group:")
        }
        return {
            "user": user_id,
            "asked_as": asked,
            "matched": None if match is None else match.matched,
            "doc_id": doc_id,
            "assistant": assistant,
            "principal": {
                "directory_failing_closed": self.directory_failing_closed(),
                "known": principal.known,
                "active": principal.active,
                "principals": sorted(principal.principals),
            },
            "document": {
                "corpus": document.corpus,
                "sensitivity": document.sensitivity.name,
                "acl": sorted(document.acl),
                "unknown_principals": unknown,
                "ai_allowed": document.ai_allowed,
                "expires_at": document.expires_at.isoformat() if document.expires_at else None,
                "source": owner_of(document),
                "visible_to_nobody_because": blocked,
            },
            "matched_via": {p: path for p, path in paths.items() if path},
            "decisions": {a: d.to_dict() for a, d in decisions.items()},
            "warnings": [unknown_principal_warning(p) for p in unknown]
            + ([f"visible to nobody: {blocked}"] if blocked else []),
        }

    def orchestrator(self) -> Orchestrator:
        """The answer engine over this instance, with the configured providers."""
        if self._orchestrator is None:
            # The answer engine and the providers load with the first answer, not with
            # every command that opens the index.
            from clearance.answer.orchestrator import Orchestrator
            from clearance.llm.registry import make_provider, make_rerank_provider

            provider = self._provider or make_provider(self.settings.llm)
            if self.settings.rerank.provider == "":
                # The answering model judges too; the extractive provider does not (its word
                # counts would undo the fused order, see make_rerank_provider).
                judge: Provider | None = None if provider.name == "extractive" else provider
            else:
                judge = make_rerank_provider(self.settings.llm, self.settings.rerank)
            self._orchestrator = Orchestrator(self, provider=provider, judge=judge)
        return self._orchestrator

    def ask(
        self,
        question: str,
        user_id: str,
        *,
        assistant: str | None = None,
        today: date | None = None,
    ) -> AnswerResult:
        """Answer a question for one user (docs/design.md §1); see :class:`AnswerResult`.

        ``today`` is the date relative periods ("last year", 去年) are read against; by
        default the clock's date (UTC). A question longer than ``[answer]
        max_question_chars`` raises :class:`~clearance.errors.QuestionError` before anything
        else runs (not even the providers are built)."""
        check_question(question, self.settings.answer.max_question_chars)
        return self.orchestrator().ask(question, user_id, assistant, today=today)

    # ------------------------------------------------------------------ status

    def status(self) -> dict[str, Any]:
        """Counts, index size, directory, per-corpus freshness and per-source sync health:
        the JSON of ``clearance status --json`` and ``GET /v1/status``, built here only."""
        stats = self.store.stats()
        directory = self.directory
        return {
            "index": self.store.location,
            "documents": stats.documents,
            "chunks": stats.chunks,
            "vectors": stats.vectors,
            "size_bytes": stats.size_bytes,
            "by_sensitivity": dict(stats.by_sensitivity),
            "directory": {
                "version": directory.version,
                "users": len(directory.users),
                "groups": len(directory.groups),
                "failing_closed": self.directory_failing_closed(),
            },
            "corpora": self.corpus_status(),
            "sources": _source_summary(self),
            "embedding": self.embedding_status(),
        }

    def embedding_status(self) -> dict[str, Any]:
        """The embedder: its provider, the ``[embedding] device`` asked for, the installed
        onnxruntime build that can use a GPU (None: the CPU build), and the execution
        provider the model runs on where this process has loaded it (None: not yet). Read
        without loading the model or onnxruntime."""
        loaded = self._embedder if not isinstance(self._embedder, str) else None
        return {
            "provider": self.settings.embedding.provider,
            "device": self.settings.embedding.device,
            "gpu_runtime": _gpu_runtime(),
            "running_on": getattr(loaded, "execution_provider", None),
        }

    def corpus_status(self) -> list[dict[str, Any]]:
        now = self.clock()
        access = self.access()
        names = sorted(set(self.settings.corpora) | set(self.store.corpora()))
        counts = self.store.stats().by_corpus
        out = []
        for name in names:
            fresh = access.freshness(name)
            out.append(
                {
                    "corpus": name,
                    "configured": name in self.settings.corpora,
                    "documents": counts.get(name, 0),
                    "last_acl_sync": fresh.last_sync.isoformat() if fresh.last_sync else None,
                    "revocation_sla_seconds": fresh.sla_seconds,
                    "failing_closed": fresh.stale(now),
                    "realtime_check": self.settings.corpus(name).realtime_check,
                }
            )
        return out


def directory_sync_summary(directory: Directory, *, delta: bool) -> dict[str, Any]:
    """What a directory sync reports, ``clearance directory sync --json`` and ``POST
    /v1/directory/sync`` alike: mode, version, counts, and a warning when nobody is active."""
    active = sum(1 for u in directory.users.values() if u.active)
    return {
        "mode": "delta" if delta else "snapshot",
        "version": directory.version,
        "users": len(directory.users),
        "active_users": active,
        "groups": len(directory.groups),
        "warnings": [] if active else ["no active users: every account gets nothing"],
    }


def _gpu_runtime() -> str | None:
    """The installed onnxruntime build that can use a GPU ("onnxruntime-gpu 1.20.1"), from
    the installed distributions' metadata; None where only the CPU build is."""
    from importlib import metadata

    for name in ("onnxruntime-gpu", "onnxruntime-directml", "onnxruntime-rocm"):
        try:
            return f"{name} {metadata.version(name)}"
        except metadata.PackageNotFoundError:
            continue
    return None


def _source_summary(app: Clearance) -> list[dict[str, Any]]:
    """Per-source sync health for :meth:`Clearance.status`; the connectors load only here,
    and with no source configured (nothing to report) not at all."""
    if not app.settings.sources:
        return []
    from clearance.sources.service import source_summary

    return source_summary(app)
