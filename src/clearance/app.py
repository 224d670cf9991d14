"""The Clearance service: one object that wires settings, store, directory and access.

The CLI and the Python API both go through :class:`Clearance`, so every retrieval path
resolves a principal and searches inside the filter compiled from it. There is no method
that searches without a user.
"""

from __future__ import annotations

import json
import secrets
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clearance.access.directory import (
    Directory,
    DirectoryDoc,
    parse_directory,
    unknown_principal_warning,
)
from clearance.access.policy import AccessControl, Action, Decision, Principal, Reason
from clearance.access.realtime import (
    PermissionChecker,
    RealtimeResult,
    checker_for_corpus,
    filter_allowed,
)
from clearance.access.sync import AclSyncReport, parse_read_at, sync_acl_data, sync_acls
from clearance.answer.bounds import check_question
from clearance.answer.orchestrator import Orchestrator
from clearance.answer.result import AnswerResult
from clearance.config import Settings, trace_key
from clearance.errors import (
    DirectoryError,
    EmbeddingError,
    LoaderError,
    MetadataError,
    NotFoundError,
)
from clearance.ingest.metadata import parse_metadata
from clearance.ingest.pipeline import FileResult, Ingestor, IngestReport, Job
from clearance.lifecycle import Closing
from clearance.llm.base import Provider
from clearance.llm.registry import make_provider, make_rerank_provider
from clearance.model import SearchHit
from clearance.retrieval.embedding import Embedder, get_embedder
from clearance.retrieval.hybrid import HybridSearcher
from clearance.retrieval.synonyms import Synonyms
from clearance.sources.ownership import BLOCKED_KEY, check_owner, owner_of
from clearance.sources.service import source_summary
from clearance.store.backends import AnyStore, open_store
from clearance.trace.actions import AdminActions
from clearance.trace.log import TraceLog
from clearance.trace.record import TraceRecord, TraceWriter, pseudonymise

if TYPE_CHECKING:
    from clearance.access.scim import ScimState, ScimWrite

__all__ = ["NOTE_SOURCE", "Clearance", "SearchResult"]

#: The source system of notes (derived knowledge added with :meth:`Clearance.add_note`).
NOTE_SOURCE = "note"

_DIRECTORY_KEY = "directory"
_SCIM_KEY = "scim"


def _meta_json(value: Any) -> Any:
    """A meta value as stored: JSON text (SQLite) or already decoded (PostgreSQL json)."""
    return json.loads(value) if isinstance(value, str | bytes) else value


_EMBEDDING_KEY = "embedding_model"
# How often a search is re-run to refill results after real-time checks dropped some.
_REALTIME_REFILLS = 3


@dataclass(frozen=True, slots=True)
class SearchResult:
    """Hits for one user, plus what real-time checks dropped (for the trace, never shown)."""

    user_id: str
    hits: list[SearchHit]
    realtime_dropped: dict[str, RealtimeResult] = field(default_factory=dict)
    refused: str | None = None  # "account_disabled" / "unknown_user" when nothing was searched

    def to_dict(self, query: str) -> dict[str, Any]:
        """The JSON of a search — the one place its shape is built: ``clearance search
        --json``, ``POST /v1/search`` and the MCP ``search`` tool all return it."""
        rows = [
            {
                "rank": i,
                "doc_id": h.document.doc_id,
                "title": h.document.title,
                "locator": h.chunk.locator,
                "uri": h.document.uri,
                "corpus": h.document.corpus,
                "sensitivity": h.chunk.sensitivity.name,
                "score": round(h.score, 6),
                "lexical_rank": h.lexical_rank,
                "vector_rank": h.vector_rank,
                "text": h.chunk.text,
            }
            for i, h in enumerate(self.hits, start=1)
        ]
        return {"user": self.user_id, "query": query, "refused": self.refused, "results": rows}


class Clearance(Closing):
    """Open with :meth:`open`; close with :meth:`close` or use as a context manager."""

    def __init__(
        self,
        settings: Settings,
        store: AnyStore,
        *,
        embedder: Embedder | str | None = "auto",
        checkers: dict[str, PermissionChecker] | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        provider: Provider | None = None,
        trace_key: bytes | None = None,
    ) -> None:
        self.settings = settings
        self.synonyms = Synonyms(settings.retrieval.synonyms)
        self._provider = provider
        self.trace_key = trace_key
        # Without a configured key, pseudonyms are per-process — but one key for the process,
        # so traces and the access log name a user alike.
        self._pseudonym_key = trace_key or secrets.token_bytes(32)
        #: Called with every answer's trace record (ids, codes, timings; no text), even when
        #: ``[trace] enabled`` is off: the seam service metrics observe stage timings through.
        self.trace_listeners: list[Callable[[TraceRecord], None]] = []
        self._orchestrator: Orchestrator | None = None
        self._traces: TraceWriter | None = None
        self.store = store
        self._embedder = embedder
        self.clock = clock
        self._checkers = checkers
        self._directory: tuple[int, Directory] | None = None

    @classmethod
    def open(cls, settings: Settings, **kwargs: Any) -> Clearance:
        kwargs.setdefault("trace_key", trace_key(settings))
        store = open_store(settings)
        return cls(settings, store, **kwargs)

    def close(self) -> None:
        """Close what this instance opened: checkers, the providers it built, the store."""
        owned: list[object] = list((self._checkers or {}).values())
        if self._orchestrator is not None and self._provider is None:
            owned.extend(self._orchestrator.providers())
        for resource in owned:
            close = getattr(resource, "close", None)
            if callable(close):
                close()
        self.store.close()

    # ------------------------------------------------------------------ components

    @property
    def embedder(self) -> Embedder | None:
        """The configured embedder, checked against the model the index was built with:
        vectors of two models are never mixed in one index (same width or not)."""
        if isinstance(self._embedder, str):
            embedder = get_embedder(self.settings.embedding)
            if embedder is not None:
                built_with = self.store.get_meta(_EMBEDDING_KEY)
                if built_with is None and self.store.stats().vectors == 0:
                    self.store.set_meta(_EMBEDDING_KEY, embedder.name)
                elif built_with is not None and built_with != embedder.name:
                    raise EmbeddingError(
                        f"the index holds vectors of {built_with!r} but the configured model "
                        f"is {embedder.name!r}: rebuild the index or set [embedding] provider"
                    )
            self._embedder = embedder
        return self._embedder

    @property
    def checkers(self) -> dict[str, PermissionChecker]:
        if self._checkers is None:
            self._checkers = {}
            for name, corpus in self.settings.corpora.items():
                checker = checker_for_corpus(corpus)
                if checker is not None:
                    self._checkers[name] = checker
        return self._checkers

    @property
    def directory(self) -> Directory:
        """The synced directory as the index holds it now. Re-read only when the index's
        directory generation moved (any writer, any process, bumps it), so the check before
        every request reads one small row, not the whole directory. The cache is one
        ``(generation, directory)`` pair, replaced whole: threads racing to refresh it can
        never pair a newer generation with an older directory."""
        cached = self._directory
        changed = self.store.directory_if_changed(None if cached is None else cached[0])
        if changed is None:
            assert cached is not None
            return cached[1]
        generation, raw = changed
        directory = Directory.empty() if raw is None else Directory.from_json(raw)
        self._directory = (generation, directory)
        return directory

    def actions(self) -> AdminActions:
        """The log of administrator actions in this index (:mod:`clearance.trace.actions`)."""
        return AdminActions(self.store, clock=self.clock)

    def resolve_user(self, name: str) -> str:
        """The directory user id a sign-in name (a claim's value: UPN, mail, object id …)
        names, through the users' aliases (:meth:`Directory.resolve`). A name that is no
        id and no alias of exactly one user stays as it is, so it signs in as nobody the
        directory knows: an alias two users share never picks one of them."""
        match = self.directory.resolve(name)
        return name if match is None else match.user_id

    def warm(self) -> None:
        """Read the directory, load the embedding model and build the in-memory search
        copies now, so that the first request after a start does not wait for them."""
        _ = self.directory
        self.store.warm(vectors=self.embedder is not None)

    def access(self) -> AccessControl:
        # A directory source past its SLA owns a directory nobody may be served from: every
        # user it provides resolves to the empty principal set until its next success.
        directory = Directory.empty() if self.directory_failing_closed() else self.directory
        return AccessControl(
            self.settings,
            directory,
            self.store.last_acl_syncs(),
            checkers=self.checkers,
            clock=self.clock,
        )

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
        default_corpus = self.settings.ingest.default_corpus
        # A failed job whose corpus is unknown (its metadata did not parse) may belong to any
        # corpus: none is complete then.
        failed_corpora = {
            job.metadata.get("corpus", default_corpus) if job.metadata else None
            for job, result in zip(jobs, report.results, strict=True)
            if result.status == "failed"
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

    def sync_directory(
        self, path: Path, *, delta: bool = False, allow_empty: bool = False
    ) -> Directory:
        """Apply a directory file (a snapshot, or a delta with ``delta=True``).

        A snapshot without any user would disable every account at once, which is far more
        often a failed export than an intent: it is refused unless ``allow_empty``.
        """
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise DirectoryError(f"{path}: cannot read: {exc}") from None
        return self.sync_directory_data(text, path.name, delta=delta, allow_empty=allow_empty)

    def sync_directory_data(
        self, data: str | bytes, source: str, *, delta: bool = False, allow_empty: bool = False
    ) -> Directory:
        """:meth:`sync_directory` of a document already read; ``source`` names it in errors
        (a file name, ``request body``)."""
        doc = parse_directory(data, source=source)
        if not delta and not doc.users and not allow_empty:
            raise DirectoryError(
                f"{source}: the snapshot has no users, so applying it would disable every "
                "account; nothing was changed (use --allow-empty, or allow_empty=true over "
                "HTTP, to apply it anyway)"
            )
        current = self.directory
        updated = current.apply_delta(doc) if delta else current.replace(doc)
        self.store.set_meta(_DIRECTORY_KEY, updated.to_json())
        return updated

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
                    "SELECT key, value FROM meta WHERE key IN (?, ?)", (_DIRECTORY_KEY, _SCIM_KEY)
                ).fetchall()
            )
            raw_directory = _meta_json(rows.get(_DIRECTORY_KEY))
            directory = (
                Directory.empty() if raw_directory is None else Directory.from_json(raw_directory)
            )
            from clearance.access.scim import ScimState  # SCIM's models load only for SCIM

            result = write(directory, ScimState.from_json(_meta_json(rows.get(_SCIM_KEY))))
            for key, value in (
                (_DIRECTORY_KEY, result.directory.to_json()),
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

    def replace_directory(self, doc: DirectoryDoc) -> Directory:
        """Apply a snapshot read from a directory source as one new directory version."""
        updated = self.directory.replace(doc)
        self.store.set_meta(_DIRECTORY_KEY, updated.to_json())
        return updated

    def directory_failing_closed(self) -> str | None:
        """Why the configured directory source serves nobody now (past its SLA), or None."""
        if not self.settings.directories:
            return None
        from clearance.sources.directory.service import failing_closed

        return failing_closed(self)

    def sync_acls(
        self, path: Path, corpus: str, *, delta: bool = False, read_at: str | None = None
    ) -> AclSyncReport:
        """Apply an ACL file; ``read_at`` (ISO 8601) is when the exporter began reading the
        source, from which the revocation SLA counts (default: the file's modification
        time)."""
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

    # ------------------------------------------------------------------ retrieval

    def principal(self, user_id: str) -> Principal:
        return self.access().principal(user_id)

    def search(
        self, user_id: str, query: str, *, assistant: str | None = None, k: int | None = None
    ) -> SearchResult:
        """Hybrid search for one user: only inside what that user may retrieve right now.

        A query longer than ``[answer] max_question_chars`` raises
        :class:`~clearance.errors.QuestionError`; one with no letter or digit finds nothing."""
        return self._search(user_id, query, assistant, k, Action.RETRIEVE)

    def search_viewable(
        self, user_id: str, query: str, *, assistant: str | None = None, k: int | None = None
    ) -> SearchResult:
        """Like :meth:`search`, inside what the user may *view*: RESTRICTED documents under
        the assistant's ceiling and documents closed to AI use included. For naming
        sources to their permitted readers only: these hits' text goes into no prompt and
        no answer (docs/design.md §3)."""
        return self._search(user_id, query, assistant, k, Action.VIEW)

    def _search(
        self, user_id: str, query: str, assistant: str | None, k: int | None, action: Action
    ) -> SearchResult:
        check_question(query, self.settings.answer.max_question_chars, what="query")
        access = self.access()
        principal = access.principal(user_id)
        assistant_settings = access.assistant(assistant)
        if not principal.known:
            return SearchResult(user_id, [], refused=Reason.UNKNOWN_USER.value)
        if not principal.active:
            return SearchResult(user_id, [], refused=Reason.ACCOUNT_DISABLED.value)
        k = k or self.settings.retrieval.k
        flt = access.search_filter(
            principal, assistant_settings, self.store.corpora(), action=action
        )
        searcher = HybridSearcher(
            self.store,
            self.embedder,
            self.settings.retrieval.candidates,
            self.settings.retrieval.rrf_k,
            self.settings.retrieval.cjk_vector_weight,
            self.synonyms,
        )
        dropped: dict[str, RealtimeResult] = {}
        hits: list[SearchHit] = []
        for _ in range(_REALTIME_REFILLS + 1):
            hits = searcher.search(query, flt, k)
            newly = self._realtime_drops(user_id, hits)
            if not newly:
                return SearchResult(user_id, hits, dropped)
            dropped.update(newly)
            # Re-run with the dropped documents excluded *inside* the filter, so the result
            # is still the top-k of what remains allowed.
            flt = replace(flt, exclude_doc_ids=flt.exclude_doc_ids | frozenset(newly))
        # Out of refills: keep only the hits whose documents this last round confirmed.
        return SearchResult(user_id, [h for h in hits if h.document.doc_id not in dropped], dropped)

    def _realtime_drops(self, user_id: str, hits: Sequence[SearchHit]) -> dict[str, RealtimeResult]:
        by_corpus: dict[str, list[str]] = {}
        for hit in hits:
            if hit.document.corpus in self.checkers:
                by_corpus.setdefault(hit.document.corpus, []).append(hit.document.doc_id)
        dropped: dict[str, RealtimeResult] = {}
        for corpus, doc_ids in by_corpus.items():
            _, drops = filter_allowed(self.checkers[corpus], user_id, doc_ids)
            dropped.update(drops)
        return dropped

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

    # ------------------------------------------------------------------ answers

    def orchestrator(self) -> Orchestrator:
        """The answer engine over this instance, with the configured providers."""
        if self._orchestrator is None:
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

    def pseudonym(self, user_id: str) -> str:
        """The user's pseudonym in this process's traces (a keyed hash; never the id)."""
        return pseudonymise(user_id, self._pseudonym_key)

    def write_trace(self, user_id: str, record: TraceRecord) -> None:
        record.user = self.pseudonym(user_id)
        for listener in self.trace_listeners:
            listener(record)
        if not self.settings.trace.enabled:
            return
        if self._traces is None:
            self._traces = TraceWriter(
                self.store,
                self._pseudonym_key,
                retention_s=self.settings.trace.retention_s,
                now=self.clock(),
                allow_question_text=bool(self.settings.trace.question_text_corpora),
            )
        self._traces.write(record.to_dict())

    def trace_log(self) -> TraceLog:
        """The trace log for operators (list, show, purge, audit, stats); opening it applies
        ``[trace] retention`` like the writer does."""
        return TraceLog(self.store, retention_s=self.settings.trace.retention_s, now=self.clock())

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
            "sources": source_summary(self),
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
