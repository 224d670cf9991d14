"""The runtime: what every request and sync runs on, and nothing more.

One :class:`Runtime` holds the settings, the store, the clock, the embedder, the synced
directory (cached by generation), the real-time checkers and the trace sink. It builds the
:class:`~clearance.access.caller.Caller` of each request and the
:class:`~clearance.retrieval.retriever.Retriever` that searches for it, so there is no way
to search without a user. The answer engine and the connectors take a runtime;
:class:`clearance.app.Clearance` is the composition root that adds ingestion, answers and
administration on top of it.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clearance.access.directory import Directory, DirectoryDoc, parse_directory
from clearance.access.directory_sla import failing_closed
from clearance.access.policy import AccessControl, Action, Principal
from clearance.access.realtime import PermissionChecker, checker_for_corpus
from clearance.bounds import check_question
from clearance.config import Settings
from clearance.errors import DirectoryError, EmbeddingError
from clearance.lifecycle import Closing
from clearance.store.base import Store

if TYPE_CHECKING:
    # The embedder loads with the first search or write, retrieval with the first search,
    # the trace modules with the first trace or log read: a command that only opens the
    # index loads none of them.
    from clearance.access.caller import Caller
    from clearance.llm.embedding import Embedder
    from clearance.retrieval.retriever import Retriever, SearchResult
    from clearance.retrieval.synonyms import Synonyms
    from clearance.trace.actions import AdminActions
    from clearance.trace.log import TraceLog
    from clearance.trace.record import TraceRecord, TraceWriter

__all__ = ["DIRECTORY_KEY", "Runtime", "meta_json"]

#: The meta key of the synced directory.
DIRECTORY_KEY = "directory"
_EMBEDDING_KEY = "embedding_model"


def meta_json(value: Any) -> Any:
    """A meta value as stored: JSON text (SQLite) or already decoded (PostgreSQL json)."""
    return json.loads(value) if isinstance(value, str | bytes) else value


class Runtime(Closing):
    """Open a store, wrap it: ``Runtime(settings, store)``; close with :meth:`close`."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        *,
        embedder: Embedder | str | None = "auto",
        checkers: dict[str, PermissionChecker] | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        trace_key: bytes | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.clock = clock
        self.trace_key = trace_key
        # Without a configured key, pseudonyms are per-process — but one key for the process,
        # so traces and the access log name a user alike.
        self._pseudonym_key = trace_key or secrets.token_bytes(32)
        #: Called with every answer's trace record (ids, codes, timings; no text), even when
        #: ``[trace] enabled`` is off: the seam service metrics observe stage timings through.
        self.trace_listeners: list[Callable[[TraceRecord], None]] = []
        self._traces: TraceWriter | None = None
        self._embedder = embedder
        self._checkers = checkers
        self._directory: tuple[int, Directory] | None = None

    def close(self) -> None:
        """Close the checkers this runtime built and the store."""
        for checker in (self._checkers or {}).values():
            close = getattr(checker, "close", None)
            if callable(close):
                close()
        self.store.close()

    # ------------------------------------------------------------------ components

    @cached_property
    def synonyms(self) -> Synonyms:
        """The organisation's own equivalences: the lexical search looks for them too."""
        from clearance.retrieval.synonyms import Synonyms

        return Synonyms(self.settings.retrieval.synonyms)

    @cached_property
    def equivalents(self) -> Synonyms:
        """The organisation's equivalences and the standard names of statement lines across
        languages ("operating profit" = 営業利益 = 营业利润): what judges whether a passage
        states what is asked. Not searched for: a dozen names of revenue in three scripts
        would outrank the two words of "London revenue". Built with the first answer, which
        is when the statement lines are read from the package's data."""
        from clearance import glossary
        from clearance.retrieval.synonyms import Synonyms

        return Synonyms((*self.settings.retrieval.synonyms, *glossary.lines()))

    @property
    def embedder(self) -> Embedder | None:
        """The configured embedder, checked against the model the index was built with:
        vectors of two models are never mixed in one index (same width or not)."""
        if isinstance(self._embedder, str):
            from clearance.llm.embedding import get_embedder  # the model loads with its first use

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
        from clearance.trace.actions import AdminActions

        return AdminActions(self.store, clock=self.clock)

    def resolve_user(self, name: str) -> str:
        """The directory user id a sign-in name (a claim's value: UPN, mail, object id …)
        names, through the users' aliases (:meth:`Directory.resolve`). A name that is no
        id and no alias of exactly one user stays as it is, so it signs in as nobody the
        directory knows: an alias two users share never picks one of them."""
        match = self.directory.resolve(name)
        return name if match is None else match.user_id

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

    # ------------------------------------------------------------------ directory

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
        self.store.set_meta(DIRECTORY_KEY, updated.to_json())
        return updated

    def replace_directory(self, doc: DirectoryDoc) -> Directory:
        """Apply a snapshot read from a directory source as one new directory version."""
        updated = self.directory.replace(doc)
        self.store.set_meta(DIRECTORY_KEY, updated.to_json())
        return updated

    def directory_failing_closed(self) -> str | None:
        """Why the configured directory source serves nobody now (past its SLA), or None."""
        if not self.settings.directories:
            return None
        return failing_closed(self.settings, self.store, self.clock())

    # ------------------------------------------------------------------ retrieval

    def caller(self, user_id: str, assistant: str | None = None) -> Caller:
        """The caller ``user_id`` through ``assistant``, under the policy as it is now: what
        every read on that person's behalf is decided by (:class:`Caller`)."""
        from clearance.access.caller import Caller

        return Caller.resolve(self.access(), user_id, assistant)

    def retriever(self) -> Retriever:
        """The retriever over this index, with the configured embedder and checkers."""
        from clearance.retrieval.retriever import Retriever

        return Retriever(
            self.store, self.embedder, self.settings.retrieval, self.synonyms, self.checkers
        )

    def principal(self, user_id: str) -> Principal:
        return self.access().principal(user_id)

    def search(
        self,
        user_id: str,
        query: str,
        *,
        assistant: str | None = None,
        k: int | None = None,
        renderings: Sequence[Sequence[str]] = (),
    ) -> SearchResult:
        """Hybrid search for one user: only inside what that user may retrieve right now.
        ``renderings``: groups of phrases equivalent to the query's, beside the configured
        ones, for a question read in another language (clearance.bilingual).

        A query longer than ``[answer] max_question_chars`` raises
        :class:`~clearance.errors.QuestionError`; one with no letter or digit finds nothing."""
        return self._search(user_id, query, assistant, k, Action.RETRIEVE, renderings)

    def search_viewable(
        self, user_id: str, query: str, *, assistant: str | None = None, k: int | None = None
    ) -> SearchResult:
        """Like :meth:`search`, inside what the user may *view*: RESTRICTED documents under
        the assistant's ceiling and documents closed to AI use included. For naming
        sources to their permitted readers only: these hits' text goes into no prompt and
        no answer (docs/design.md §3)."""
        return self._search(user_id, query, assistant, k, Action.VIEW)

    def _search(
        self,
        user_id: str,
        query: str,
        assistant: str | None,
        k: int | None,
        action: Action,
        renderings: Sequence[Sequence[str]] = (),
    ) -> SearchResult:
        check_question(query, self.settings.answer.max_question_chars, what="query")
        synonyms = self.synonyms.with_groups(renderings) if renderings else None
        return self.retriever().search(self.caller(user_id, assistant), query, k, action, synonyms)

    # ------------------------------------------------------------------ traces

    def pseudonym(self, user_id: str) -> str:
        """The user's pseudonym in this process's traces (a keyed hash; never the id)."""
        from clearance.trace.record import pseudonymise

        return pseudonymise(user_id, self._pseudonym_key)

    def write_trace(self, user_id: str, record: TraceRecord) -> None:
        record.user = self.pseudonym(user_id)
        for listener in self.trace_listeners:
            listener(record)
        if not self.settings.trace.enabled:
            return
        if self._traces is None:
            from clearance.trace.record import TraceWriter

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
        from clearance.trace.log import TraceLog

        return TraceLog(self.store, retention_s=self.settings.trace.retention_s, now=self.clock())
