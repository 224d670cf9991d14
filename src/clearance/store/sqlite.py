"""The embedded default store: one SQLite file holds everything.

Documents, ACL rows, chunks, a full-text index (a term dictionary and each chunk's term
frequencies, from :mod:`clearance.analysis`), float32 vectors, metadata and sync
state live in one file opened in WAL mode.

Search runs over in-memory copies (:mod:`clearance.store.memory`): an inverted index for
BM25, the vector matrix, and the per-document access data. Triggers on the tables bump two
write generations in the file, ``content_generation`` (chunks, terms, vectors) and
``access_generation`` (documents, ACL rows); every search reads both and rebuilds a stale
copy first, so a change committed by any writer, in any process, is seen by the next search.

The permission filter becomes one boolean mask over the chunks, computed once per request;
BM25 (with statistics over the allowed chunks only) and the exact vector product both rank
*inside* it. Both return the top-k of the allowed set, never a filtered top-k of everything.
The same filter compiled to SQL (``_allowed``) selects facts and serves as the reference
the tests compare the mask with.
"""

from __future__ import annotations

import json
import logging
import re
import sqlite3
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from clearance.analysis import document_terms
from clearance.errors import StoreError
from clearance.model import Chunk, Document, Fact, Sensitivity
from clearance.store.base import Retrieved, SearchFilter, SqlConnection, TermStatistics, Vector
from clearance.store.rows import (
    CHUNK_COLUMNS,
    SqlStore,
    allowed_facts_sql,
    check_upsert,
    chunk_row,
    delete_document,
    insert_document,
    insert_facts,
    marks,
    refuse_other_width,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from clearance.store.classes import ClassIndexes, ClassPlan
    from clearance.store.memory import AccessIndex, ContentIndex
    from clearance.store.signs import SignCodes, SignPlan

__all__ = ["SQLiteStore"]

log = logging.getLogger(__name__)

SCHEMA_VERSION = 2

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS documents (
    key INTEGER PRIMARY KEY,
    doc_id TEXT NOT NULL UNIQUE,
    source_system TEXT NOT NULL,
    corpus TEXT NOT NULL,
    title TEXT NOT NULL,
    uri TEXT NOT NULL,
    owner TEXT,
    sensitivity INTEGER NOT NULL,
    created_at REAL,
    updated_at REAL,
    review_at REAL,
    expires_at REAL,
    ai_allowed INTEGER NOT NULL,
    personal_data INTEGER NOT NULL,
    origin TEXT NOT NULL,
    origin_chain TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    version INTEGER NOT NULL,
    path TEXT,
    format TEXT NOT NULL,
    extra TEXT NOT NULL,
    ingested_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS documents_corpus ON documents (corpus);
CREATE TABLE IF NOT EXISTS doc_acl (
    doc_key INTEGER NOT NULL REFERENCES documents (key) ON DELETE CASCADE,
    principal TEXT NOT NULL,
    PRIMARY KEY (doc_key, principal)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS doc_acl_principal ON doc_acl (principal, doc_key);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY,
    chunk_id TEXT NOT NULL UNIQUE,
    doc_key INTEGER NOT NULL REFERENCES documents (key) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL,
    text TEXT NOT NULL,
    locator TEXT NOT NULL,
    sensitivity INTEGER NOT NULL,
    origin TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks (doc_key);
-- the full-text index: a term dictionary (ids are never reused) and, per chunk, its length
-- in terms and its distinct term ids with their frequencies (little-endian int32 arrays)
CREATE TABLE IF NOT EXISTS terms (
    id INTEGER PRIMARY KEY,
    term TEXT NOT NULL UNIQUE
);
-- chunks touched by each write (filled by triggers): readers patch their in-memory copies
CREATE TABLE IF NOT EXISTS chunk_log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    chunk INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS chunk_terms (
    chunk INTEGER PRIMARY KEY REFERENCES chunks (id) ON DELETE CASCADE,
    length INTEGER NOT NULL,
    term_ids BLOB NOT NULL,
    tfs BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS vectors (
    chunk INTEGER PRIMARY KEY REFERENCES chunks (id) ON DELETE CASCADE,
    vec BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS corpus_sync (
    corpus TEXT PRIMARY KEY,
    last_acl_sync REAL NOT NULL
);
-- facts: numbers from tables (clearance.ingest.facts). A fact has no ACL or sensitivity of
-- its own: it is visible exactly where its document is (query_facts joins _allowed).
CREATE TABLE IF NOT EXISTS facts (
    id INTEGER PRIMARY KEY,
    doc_key INTEGER NOT NULL REFERENCES documents (key) ON DELETE CASCADE,
    entity TEXT NOT NULL,
    period TEXT NOT NULL,
    metric TEXT NOT NULL,
    channel TEXT NOT NULL,
    value REAL NOT NULL,
    unit TEXT NOT NULL,
    raw TEXT NOT NULL,
    locator TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS facts_lookup ON facts (metric, entity, period);
CREATE INDEX IF NOT EXISTS facts_doc ON facts (doc_key);
-- end facts
INSERT OR IGNORE INTO meta VALUES ('content_generation', '0'), ('access_generation', '0'),
    ('directory_generation', '0');
"""
# Run one by one inside the opening transaction (executescript would commit first).
_SCHEMA_STATEMENTS = [
    statement
    for statement in _SCHEMA.split(";\n")
    if any(line.strip() and not line.lstrip().startswith("--") for line in statement.splitlines())
]
# The tables and indexes of a current file: opening one that lacks any writes them again.
_SCHEMA_OBJECTS = re.findall(r"CREATE (?:TABLE|INDEX) IF NOT EXISTS (\w+)", _SCHEMA)
# How long a writer waits for another writer by default: ``[store] busy_timeout``.
DEFAULT_BUSY_TIMEOUT_S = 60.0

# Generation triggers: whoever writes (this class, another process, an operator's SQL shell),
# the in-memory copies of a reader are brought up to date before its next search. Cascaded
# deletes fire them too. Content triggers also log the chunk they touched, so a reader can
# apply just those chunks instead of rebuilding everything.
_GENERATIONS = {
    "content_generation": {"chunks": "id", "chunk_terms": "chunk", "vectors": "chunk"},
    "access_generation": {"documents": "", "doc_acl": ""},
}
#: The ``meta`` key of the synced directory (:attr:`clearance.app.Clearance.directory`).
_DIRECTORY_META = "directory"
_ROWS = {"INSERT": ("NEW",), "UPDATE": ("OLD", "NEW"), "DELETE": ("OLD",)}
_TRIGGERS = {
    f"{table}_{event.lower()}_bumps_{key}": (
        f"CREATE TRIGGER {table}_{event.lower()}_bumps_{key} AFTER {event} ON {table} "
        f"BEGIN UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = '{key}'; "
        + "".join(
            f"INSERT INTO chunk_log (chunk) VALUES ({row}.{column}); " for row in _ROWS[event]
        )
        * bool(column)
        + "END"
    )
    for key, tables in _GENERATIONS.items()
    for table, column in tables.items()
    for event in _ROWS
}
_TRIGGERS.update(
    {
        # The directory is one large JSON value in `meta`: readers compare this counter (one
        # small row) instead of reading and parsing that value before every request.
        f"meta_{event.lower()}_bumps_directory_generation": (
            f"CREATE TRIGGER meta_{event.lower()}_bumps_directory_generation AFTER {event} "
            f"ON meta WHEN {' OR '.join(f'{row}.key = {_DIRECTORY_META!r}' for row in rows)} "
            "BEGIN UPDATE meta SET value = CAST(value AS INTEGER) + 1 "
            "WHERE key = 'directory_generation'; END"
        )
        for event, rows in _ROWS.items()
    }
)
_TRIGGERS.update(
    {
        # A REPLACE conflict deletes the old row without firing its delete trigger (unless
        # recursive_triggers is on in the writer's connection): log it beforehand.
        "chunks_replace_logs_old_row": (
            "CREATE TRIGGER chunks_replace_logs_old_row BEFORE INSERT ON chunks "
            "BEGIN INSERT INTO chunk_log (chunk) SELECT id FROM chunks "
            "WHERE chunk_id = NEW.chunk_id OR id = NEW.id; END"
        ),
        "chunks_update_replace_logs_old_row": (
            "CREATE TRIGGER chunks_update_replace_logs_old_row BEFORE UPDATE ON chunks "
            "BEGIN INSERT INTO chunk_log (chunk) SELECT id FROM chunks "
            "WHERE (chunk_id = NEW.chunk_id OR id = NEW.id) AND id != OLD.id; END"
        ),
        # A writer with foreign keys off (the sqlite3 shell's default) would leave a deleted
        # document's rows behind, and a later document reusing its key would inherit them.
        "documents_delete_removes_children": (
            "CREATE TRIGGER documents_delete_removes_children AFTER DELETE ON documents "
            "BEGIN DELETE FROM doc_acl WHERE doc_key = OLD.key; "
            "DELETE FROM chunks WHERE doc_key = OLD.key; "
            "DELETE FROM facts WHERE doc_key = OLD.key; END"
        ),
        "chunks_delete_removes_children": (
            "CREATE TRIGGER chunks_delete_removes_children AFTER DELETE ON chunks "
            "BEGIN DELETE FROM chunk_terms WHERE chunk = OLD.id; "
            "DELETE FROM vectors WHERE chunk = OLD.id; END"
        ),
    }
)
# How many change-log entries writers keep. A reader further behind rebuilds its copy.
_LOG_KEPT = 300_000
# Beyond these shares of touched or dead chunks, a full rebuild is cheaper than patching.
_PATCH_TOUCHED = 0.2
_PATCH_DEAD = 0.25


class _Analysed(NamedTuple):
    """Texts analysed for the term index, before any transaction (analysis is most of the
    cost of indexing; only term ids need the write lock). Text ``i`` has ``lengths[i]``
    terms; its distinct ones are ``distinct[terms[j]]`` with frequency ``tfs[j]`` for ``j``
    in ``bounds[i]:bounds[i + 1]``."""

    distinct: list[str]
    lengths: list[int]
    bounds: npt.NDArray[np.int64]
    terms: npt.NDArray[np.int64]
    tfs: npt.NDArray[np.int32]

    def rows(self, ids: npt.NDArray[np.int64]) -> list[tuple[int, bytes, bytes]]:
        """``(length, term_ids, tfs)`` per text, given the id of each distinct term: ids
        ascending, both as little-endian int32 arrays."""
        import numpy as np

        term_ids = ids[self.terms]
        text = np.repeat(np.arange(len(self.lengths), dtype=np.int64), np.diff(self.bounds))
        # Each text's pairs stay in its place, ordered by id (ids fit in 32 bits: they
        # are stored as int32). One sort of one key: several times faster than lexsort.
        order = np.argsort((text << 32) | term_ids, kind="stable")
        packed_ids = term_ids[order].astype("<i4")
        tfs = self.tfs[order]
        edges = self.bounds.tolist()
        return [
            (length, packed_ids[a:b].tobytes(), tfs[a:b].tobytes())
            for length, a, b in zip(self.lengths, edges[:-1], edges[1:], strict=True)
        ]


def _analyse(texts: Iterable[str]) -> _Analysed:
    """Each text's index terms and their frequencies; needs neither the file nor a lock."""
    import numpy as np

    index: dict[str, int] = {}
    lengths: list[int] = []
    bounds = [0]
    terms: list[int] = []
    tfs: list[int] = []
    for text in texts:
        found = document_terms(text)
        lengths.append(len(found))
        for term, tf in Counter(found).items():
            terms.append(index.setdefault(term, len(index)))
            tfs.append(tf)
        bounds.append(len(terms))
    return _Analysed(
        list(index),
        lengths,
        np.asarray(bounds, dtype=np.int64),
        np.asarray(terms, dtype=np.int64),
        np.asarray(tfs, dtype="<i4"),
    )


def _is_busy(exc: sqlite3.Error) -> bool:
    """Whether SQLite gave up waiting for another connection's lock (SQLITE_BUSY)."""
    return getattr(exc, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_BUSY


def _switch_to_wal(db: sqlite3.Connection, patience_s: float) -> None:
    """WAL mode, waiting for a connection that is switching the same new file at the same
    moment: SQLite may refuse the switch at once ("database is locked") instead of waiting
    as its busy timeout would for other statements."""
    deadline = time.monotonic() + patience_s
    pause = 0.001
    while True:
        try:
            db.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + pause > deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.1)


class SQLiteStore(SqlStore):
    """The embedded :class:`~clearance.store.base.Store` implementation.

    Readers never wait for a writer: opening an index that is already current only reads
    it, and every read runs in a WAL snapshot. A writer waits up to ``busy_timeout_s`` (the
    ``[store] busy_timeout`` setting) for another writer's lock, then fails with a
    :class:`StoreError` saying the index is busy."""

    dialect = "sqlite"
    _COLLATE = ""
    _VECTOR_COUNT = "SELECT count(*) FROM vectors"
    _ACL_COLUMN = (
        "(SELECT json_group_array(principal) FROM doc_acl a WHERE a.doc_key = documents.key)"
    )
    _ROW_LOCK = ""

    def __init__(
        self,
        path: Path | str,
        *,
        busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
        vector_classes: ClassPlan | None = None,
        vector_signs: SignPlan | None = None,
        saved_copy: bool = False,
    ) -> None:
        """``vector_classes``: rank vectors approximately inside permission classes
        (:mod:`clearance.store.classes`); ``vector_signs``: approximately, from the nearest
        by sign codes (:mod:`clearance.store.signs`); with neither, every allowed vector is
        ranked exactly.
        ``saved_copy``: keep the in-memory search copy in ``<path>.saved/`` between
        processes (:mod:`clearance.store.saved`), so opening a large index does not
        rebuild it."""
        self.path = Path(path)
        self.busy_timeout_s = busy_timeout_s
        self._saved_copy = saved_copy and str(path) != ":memory:"
        self._classes: ClassIndexes | None = None
        if vector_classes is not None:
            from clearance.store.classes import ClassIndexes

            self._classes = ClassIndexes(vector_classes)
        self._signs: SignCodes | None = None
        if vector_signs is not None:
            from clearance.store.signs import SignCodes

            self._signs = SignCodes(vector_signs)
        try:
            if str(path) != ":memory:":
                self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(
                str(path), timeout=busy_timeout_s, isolation_level=None, check_same_thread=False
            )
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open index {self.path}: {exc}") from exc
        self._db = db
        self._lock = threading.RLock()
        self._content: ContentIndex | None = None
        self._access: AccessIndex | None = None
        self._vocabulary: dict[str, int] | None = None  # the writer's copy of `terms`
        self._corpora: tuple[int, tuple[str, ...]] | None = None  # per access generation
        try:
            db.execute("PRAGMA foreign_keys = ON")
            _switch_to_wal(db, busy_timeout_s)  # a no-op, and no lock, once the file is WAL
            db.execute("PRAGMA synchronous = NORMAL")
            with self._snapshot():
                current = self._is_current()
            if not current:
                self._prepare()
        except BaseException as exc:
            db.close()
            if isinstance(exc, sqlite3.Error):
                if _is_busy(exc):
                    raise self._busy() from exc
                raise StoreError(f"cannot open index {self.path}: {exc}") from exc
            raise

    def _is_current(self) -> bool:
        """Whether the file holds this release's schema, complete, with every trigger as
        this release defines it: then opening it writes nothing (and takes no lock).

        Raises for a schema this release does not know, before anything is written: an
        index written by a newer release is left exactly as it is."""
        if self._known_schema_version() != SCHEMA_VERSION:
            return False
        objects = dict(self._db.execute("SELECT name, sql FROM sqlite_master").fetchall())
        generations = self._db.execute(
            "SELECT count(*) FROM meta WHERE key IN "
            "('content_generation', 'access_generation', 'directory_generation')"
        ).fetchone()[0]
        return (
            all(name in objects for name in _SCHEMA_OBJECTS)
            and all(objects.get(name) == sql for name, sql in _TRIGGERS.items())
            and generations == 3
        )

    def _prepare(self) -> None:
        """Create what is missing, replace stale triggers and migrate an older schema, in
        one write transaction: no writer ever runs without the triggers, and a file is
        never left half-migrated. Every step is idempotent, and the file is checked again
        once the lock is held: another process may have prepared it meanwhile."""
        with self.transaction() as db:
            found = self._known_schema_version()
            for statement in _SCHEMA_STATEMENTS:
                db.execute(statement)
            self._install_triggers(db)
            db.execute(
                "INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)",
                (json.dumps(SCHEMA_VERSION),),
            )
            if found == 1:
                self._migrate_from_1(db)

    @staticmethod
    def _install_triggers(db: sqlite3.Connection) -> None:
        """Create the generation triggers, or replace any whose definition differs (an index
        written by an earlier release); call inside the opening transaction."""
        found = dict(
            db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'").fetchall()
        )
        for name, sql in _TRIGGERS.items():
            if found.get(name) != sql:
                db.execute(f"DROP TRIGGER IF EXISTS {name}")
                db.execute(sql)

    def _schema_version(self) -> Any:
        """The stored schema version, or ``None`` for a new (empty) file."""
        exists = self._db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
        ).fetchone()
        if exists is None:
            return None
        return self.get_meta("schema_version")

    def _known_schema_version(self) -> Any:
        """:meth:`_schema_version`, refused unless this release can open or migrate it."""
        found = self._schema_version()
        if found not in (None, 1, SCHEMA_VERSION):
            raise StoreError(
                f"{self.path}: index schema {found} is not supported (expected {SCHEMA_VERSION})"
            )
        return found

    def _busy(self) -> StoreError:
        return StoreError(
            f"the index {self.path} is busy: another writer held it for longer than "
            f"[store] busy_timeout ({self.busy_timeout_s:g} s)"
        )

    # ------------------------------------------------------------------ plumbing

    def close(self) -> None:
        try:
            self.save_copy()
        finally:
            self._db.close()

    def _store_id(self, *, create: bool = False) -> str | None:
        """The random id of this store (``meta``), which every write with ``saved_copy`` on
        makes sure of. With ``create``, a file without one (written before) gets one if no
        other writer holds the file at this moment: saving never waits for a writer."""
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
            if row is None and create and not self._db.in_transaction:
                self._db.execute("PRAGMA busy_timeout = 0")
                try:
                    self._db.execute("BEGIN IMMEDIATE")
                    self._db.execute(
                        "INSERT OR IGNORE INTO meta VALUES ('store_id', ?)", (uuid.uuid4().hex,)
                    )
                    self._db.execute("COMMIT")
                except sqlite3.Error:
                    if self._db.in_transaction:
                        self._db.execute("ROLLBACK")
                    return None
                finally:
                    self._db.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_s * 1000)}")
                row = self._db.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
            return None if row is None else str(row[0])

    def save_copy(self) -> None:
        """Save the in-memory search copy beside the file when it is newer than the saved
        one (``saved_copy`` on; a no-op otherwise). A copy that cannot be written is
        skipped with a warning: it is a cache, and the next opening rebuilds."""
        content = self._content
        if not self._saved_copy or content is None:
            return  # (before importing numpy: `clearance status` builds no copy)
        from clearance.store.saved import save_copy, saved_generation

        try:
            store_id = self._store_id(create=True)
            if store_id is None:
                return
            saved = saved_generation(self.path, store_id)
            if saved == (content.generation, content.log_seq, content.vectors is not None):
                return
            if saved is not None and content.vectors is None and saved[2]:
                return  # a copy without vectors never replaces one with them
            save_copy(content, self.path, store_id)
        except (OSError, sqlite3.Error, StoreError) as exc:
            log.warning("index: the search copy was not saved beside %s: %s", self.path, exc)

    def _saved(self, db: sqlite3.Connection) -> ContentIndex | None:
        """The saved search copy of this file, when there is one and it holds the file's
        chunks as of its change-log position (else ``None``: rebuilt from the file)."""
        from clearance.store.saved import load_copy

        if not self._saved_copy:
            return None
        store_id = self._store_id()
        if store_id is None:
            return None
        content = load_copy(self.path, store_id)
        if content is None:
            return None
        seq = int(db.execute("SELECT coalesce(max(seq), 0) FROM chunk_log").fetchone()[0])
        if seq == content.log_seq and not self._holds_the_same_chunks(db, content):
            return None  # same position, other chunks: not this file's history
        return content

    def _migrate_from_1(self, db: sqlite3.Connection) -> None:
        """Schema 1 kept an FTS5 table; schema 2 keeps term frequencies. Re-analyse every
        chunk's stored text once, inside the opening transaction, and drop the FTS5 table."""
        rows = db.execute(
            "SELECT c.id, d.title, c.text FROM chunks c JOIN documents d ON d.key = c.doc_key"
        ).fetchall()
        analysed = _analyse(f"{title}\n{text}" for _, title, text in rows)
        self._write_terms(db, [key for key, _, _ in rows], analysed)
        db.execute("DROP TABLE IF EXISTS chunks_fts")
        db.execute("DELETE FROM meta WHERE key = 'generation'")
        db.execute(
            "UPDATE meta SET value = ? WHERE key = 'schema_version'", (json.dumps(SCHEMA_VERSION),)
        )

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; everything inside commits together or not at all.

        Writers need not tell readers what they changed: triggers bump the write
        generations, and readers rebuild their in-memory copies from them."""
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")  # waits up to the busy timeout
            except sqlite3.Error as exc:
                if _is_busy(exc):
                    raise self._busy() from exc
                raise StoreError(f"cannot write to {self.path}: {exc}") from exc
            try:
                yield self._db
                if self._saved_copy:  # the id a saved copy names its store by
                    self._db.execute(
                        "INSERT OR IGNORE INTO meta VALUES ('store_id', ?)", (uuid.uuid4().hex,)
                    )
                self._db.execute("COMMIT")
            except BaseException as exc:
                # Copies built inside the transaction saw writes that never happened, and the
                # rollback also rewinds the generations they are labelled with. Reset first:
                # SQLite may already have rolled back by itself (I/O error, RAISE(ROLLBACK)).
                self._content = self._access = None
                self._corpora = None
                self._vocabulary = None  # it may hold ids the rollback took back
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise StoreError(f"write to {self.path} failed: {exc}") from exc
                raise

    @contextmanager
    def _snapshot(self) -> Iterator[sqlite3.Connection]:
        """A consistent read of several tables (WAL: one snapshot until the end), under the
        store's lock: the connection is shared, and without the lock a read could see
        another thread's uncommitted write."""
        with self._lock:
            if self._db.in_transaction:
                yield self._db
                return
            self._db.execute("BEGIN")
            try:
                yield self._db
            finally:
                self._db.execute("COMMIT")

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """The connection for read-only queries on tables other modules own (e.g. the FAQ).

        Unlike :meth:`transaction` it takes no write lock on the file and never touches the
        write generation. Write through :meth:`transaction` only."""
        with self._lock:
            yield self._db

    @property
    def location(self) -> str:
        """Where the index is, for people: the file's path."""
        return str(self.path)

    @property
    def identity(self) -> str:
        """Names this index uniquely within the process."""
        return str(self.path.resolve()) if str(self.path) != ":memory:" else f"memory:{id(self)}"

    def has_tables(self, *names: str) -> bool:
        """Whether every named table or index exists (other modules create theirs on first
        use, through :meth:`transaction`)."""
        with self.reading() as db:
            found = db.execute(
                f"SELECT count(*) FROM sqlite_master WHERE {self._in('name')}",
                (self._list(sorted(set(names))),),
            ).fetchone()[0]
        return int(found) == len(set(names))

    def database_admits_faq(
        self, entry_id: str, principals: frozenset[str], ceiling: Sensitivity
    ) -> bool:
        """There is no second wall in one file: the application's check is the only one."""
        return True

    def directory_if_changed(self, generation: int | None) -> tuple[int, Any] | None:
        """``(generation, value)`` of the stored directory (value ``None`` when there is
        none), or ``None`` when its generation is still ``generation``. A trigger bumps the
        generation on every write of the directory, by any writer, so an unchanged
        generation means an unchanged value; both are read in one snapshot."""
        with self._snapshot() as db:
            row = db.execute(
                "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'directory_generation'"
            ).fetchone()
            current = int(row[0])
            if current == generation:
                return None
            return current, self.get_meta(_DIRECTORY_META)

    def _generations(self) -> tuple[int, int]:
        found = dict(
            self._db.execute(
                "SELECT key, CAST(value AS INTEGER) FROM meta "
                "WHERE key IN ('content_generation', 'access_generation')"
            ).fetchall()
        )
        return int(found["content_generation"]), int(found["access_generation"])

    def _load_vocabulary(self, db: sqlite3.Connection) -> dict[str, int]:
        """The writer's copy of the term dictionary, brought up to date: another connection
        may have added terms, and ids only grow, so only the tail is fetched."""
        vocabulary = self._vocabulary
        if vocabulary is None:
            vocabulary = dict(db.execute("SELECT term, id FROM terms").fetchall())
        else:
            known = max(vocabulary.values(), default=0)
            vocabulary.update(db.execute("SELECT term, id FROM terms WHERE id > ?", (known,)))
        self._vocabulary = vocabulary
        return vocabulary

    @staticmethod
    def _term_ids(db: sqlite3.Connection, terms: Sequence[str]) -> dict[str, int]:
        """The dictionary's ids of those of ``terms`` it holds."""
        rows = db.execute(
            "SELECT term, id FROM terms WHERE term IN (SELECT value FROM json_each(?))",
            (json.dumps(list(terms)),),
        )
        return dict(rows.fetchall())

    def _write_terms(self, db: sqlite3.Connection, keys: Sequence[int], texts: _Analysed) -> None:
        """Index analysed texts under their chunk keys, adding new terms to the dictionary;
        call inside a transaction."""
        import numpy as np

        vocabulary = self._load_vocabulary(db)
        new = [term for term in texts.distinct if term not in vocabulary]
        if new:
            db.executemany("INSERT INTO terms (term) VALUES (?)", [(term,) for term in new])
            vocabulary.update(self._term_ids(db, new))
        ids = np.fromiter(
            (vocabulary[term] for term in texts.distinct), np.int64, len(texts.distinct)
        )
        db.executemany(
            "INSERT INTO chunk_terms (chunk, length, term_ids, tfs) VALUES (?, ?, ?, ?)",
            [(key, *row) for key, row in zip(keys, texts.rows(ids), strict=True)],
        )

    # ------------------------------------------------------------------ writes

    def upsert(
        self,
        document: Document,
        chunks: Sequence[Chunk],
        vectors: Sequence[Vector | None] | None = None,
        *,
        facts: Sequence[Fact] = (),
    ) -> None:
        width, rows = check_upsert(document, chunks, vectors, facts)
        # Everything that needs no lock is done before the transaction: analysing the text
        # (most of the cost), packing vectors, building rows. Inside it only rows are
        # written, so a large document holds the write lock for as short a time as its
        # rows allow, and still commits all or nothing.
        analysed = _analyse(f"{document.title}\n{chunk.text}" for chunk in chunks)
        blobs = [None if row is None else row.tobytes() for row in rows]
        with self._snapshot() as db:
            self._load_vocabulary(db)  # inside the transaction, only the tail is fetched
        with self.transaction() as db:
            delete_document(db, document.doc_id)
            stored = db.execute("SELECT length(vec) FROM vectors LIMIT 1").fetchone()
            refuse_other_width(document.doc_id, width, None if stored is None else stored[0] // 4)
            doc_key = insert_document(db, document)
            db.executemany(
                f"INSERT INTO chunks ({CHUNK_COLUMNS}) VALUES ({marks(7)})",
                [chunk_row(doc_key, c) for c in chunks],
            )
            key_of = dict(
                db.execute("SELECT chunk_id, id FROM chunks WHERE doc_key = ?", (doc_key,))
            )
            keys = [int(key_of[c.chunk_id]) for c in chunks]
            db.executemany(
                "INSERT INTO vectors (chunk, vec) VALUES (?, ?)",
                [(key, blob) for key, blob in zip(keys, blobs, strict=True) if blob is not None],
            )
            self._write_terms(db, keys, analysed)
            self._prune_log(db)
            insert_facts(db, doc_key, facts)

    @staticmethod
    def _prune_log(db: sqlite3.Connection) -> None:
        """Keep the last ``_LOG_KEPT`` change-log entries (a reader further behind rebuilds)."""
        db.execute(
            "DELETE FROM chunk_log WHERE seq <= (SELECT max(seq) FROM chunk_log) - ?", (_LOG_KEPT,)
        )

    def delete(self, doc_id: str) -> bool:
        with self.transaction() as db:
            deleted = delete_document(db, doc_id)
            self._prune_log(db)
            return deleted

    def _merge_extra(self, db: SqlConnection, doc_id: str, patch: Mapping[str, Any]) -> None:
        db.execute(
            "UPDATE documents SET extra = json_patch(extra, ?) WHERE doc_id = ?",
            (json.dumps(dict(patch)), doc_id),
        )

    @staticmethod
    def _in(column: str) -> str:
        return f"{column} IN (SELECT value FROM json_each(?))"

    @staticmethod
    def _list(values: Sequence[str]) -> str:
        return json.dumps(list(values))

    @staticmethod
    def _acl(value: str) -> frozenset[str]:
        return frozenset(json.loads(value))

    # ------------------------------------------------------------------ reads

    def vectors_by_text(self, doc_id: str) -> dict[str, Vector]:
        """A document's stored vectors keyed by chunk text, to reuse when only metadata changed."""
        import numpy as np

        with self._snapshot() as db:
            rows = db.execute(
                "SELECT c.text, v.vec FROM vectors v JOIN chunks c ON c.id = v.chunk "
                "JOIN documents d ON d.key = c.doc_key WHERE d.doc_id = ?",
                (doc_id,),
            ).fetchall()
        return {str(t): np.frombuffer(b, dtype=np.float32).copy() for t, b in rows}

    def corpora(self) -> list[str]:
        """Every corpus that holds at least one document. Every search asks, and the answer
        only changes with the documents table, so it is kept per access generation."""
        with self._snapshot() as db:
            _, generation = self._generations()
            cached = self._corpora
            if cached is None or cached[0] != generation:
                rows = db.execute("SELECT DISTINCT corpus FROM documents ORDER BY 1")
                cached = self._corpora = (generation, tuple(str(r[0]) for r in rows))
            return list(cached[1])

    # ------------------------------------------------------------------ filtered search

    @staticmethod
    def _allowed(flt: SearchFilter) -> tuple[str, list[Any]]:
        """SQL yielding ``(doc_key, ceiling)`` for every document the filter admits.

        The ACL test is driven from the ``doc_acl (principal, doc_key)`` index (an ``IN``
        over the principal set), so a user who may read little costs little; a correlated
        ``EXISTS`` per document was measured 4–40× slower."""
        params: list[Any] = []
        if flt.corpora is None:
            sql = "SELECT d.key AS doc_key, ? AS ceiling FROM documents d"
            params.append(int(flt.max_sensitivity))
            ceiling = "?"
            ceiling_params: list[Any] = [int(flt.max_sensitivity)]
        else:
            ceilings = {c: min(int(s), int(flt.max_sensitivity)) for c, s in flt.corpora.items()}
            sql = (
                "SELECT d.key AS doc_key, cj.value AS ceiling FROM documents d "
                "JOIN json_each(?) cj ON cj.key = d.corpus"
            )
            params.append(json.dumps(ceilings))
            ceiling, ceiling_params = "cj.value", []
        sql += (
            " WHERE d.key IN (SELECT a.doc_key FROM doc_acl a"
            " WHERE a.principal IN (SELECT value FROM json_each(?)))"
            f" AND d.sensitivity BETWEEN 0 AND {ceiling} AND d.key >= 0"
            " AND (d.expires_at IS NULL OR d.expires_at > ?)"
        )
        params += [json.dumps(sorted(flt.principals)), *ceiling_params, flt.now.timestamp()]
        if flt.require_ai_allowed:
            sql += " AND d.ai_allowed = 1"
        if flt.doc_ids is not None:
            sql += " AND d.doc_id IN (SELECT value FROM json_each(?))"
            params.append(json.dumps(sorted(flt.doc_ids)))
        if flt.exclude_doc_ids:
            sql += " AND d.doc_id NOT IN (SELECT value FROM json_each(?))"
            params.append(json.dumps(sorted(flt.exclude_doc_ids)))
        return sql, params

    def allowed_doc_ids(self, flt: SearchFilter) -> set[str]:
        """Every document id the filter admits (for previews, tests, counts and operators)."""
        sql, params = self._allowed(flt)
        with self._snapshot() as db:
            rows = db.execute(
                f"SELECT doc_id FROM documents WHERE key IN (SELECT doc_key FROM ({sql}))", params
            ).fetchall()
        return {str(r[0]) for r in rows}

    def _indexes(self, *, vectors: bool) -> tuple[ContentIndex, AccessIndex]:
        """The current in-memory copies, brought up to date first where the file moved on."""
        from clearance.store.memory import AccessIndex, VectorRows

        with self._snapshot() as db:
            content_generation, access_generation = self._generations()
            content = self._content
            if content is None:
                content = self._content = self._saved(db)
            if content is None or content.generation != content_generation:
                content = self._content = self._current_content(db, content, content_generation)
            if vectors and content.vectors is None:
                (count,) = db.execute("SELECT count(*) FROM vectors").fetchone()
                cursor = db.execute("SELECT chunk, vec FROM vectors")
                content.vectors = VectorRows.load(content, cursor, int(count))
            access = self._access
            if access is None or access.generation != access_generation:
                documents = db.execute(
                    "SELECT key, doc_id, corpus, sensitivity, expires_at, ai_allowed FROM documents"
                ).fetchall()
                acl = db.execute("SELECT principal, doc_key FROM doc_acl").fetchall()
                access = self._access = AccessIndex(access_generation, documents, acl)
            return content, access

    # A chunk without terms (only a writer bypassing `upsert` can make one) is still a chunk:
    # it keeps its place, so its vector lines up, and it matches no term.
    _CONTENT_ROWS = (
        "SELECT c.id, c.doc_key, c.sensitivity, c.chunk_id, coalesce(t.length, 0), "
        "coalesce(t.term_ids, x''), coalesce(t.tfs, x'') FROM chunks c "
        "LEFT JOIN chunk_terms t ON t.chunk = c.id"
    )

    @staticmethod
    def _holds_the_same_chunks(db: sqlite3.Connection, content: ContentIndex) -> bool:
        """A write the log missed (it cannot see every way a row can go) would leave a
        chunk alive in a patched copy that is gone from the file: compare the count and
        the sum of the live chunk keys with the table's."""
        count, total = db.execute("SELECT count(*), coalesce(sum(id), 0) FROM chunks").fetchone()
        live = content.keys[content.live]
        return (int(count), int(total)) == (live.size, int(live.sum()))

    def _current_content(
        self, db: sqlite3.Connection, old: ContentIndex | None, generation: int
    ) -> ContentIndex:
        """``old`` patched with the chunks the change log names since it was made, or a
        fresh copy when there is no ``old``, the log no longer reaches back to it, or so
        much changed that rebuilding is cheaper."""
        import numpy as np

        from clearance.store.memory import ContentIndex

        last = int(db.execute("SELECT coalesce(max(seq), 0) FROM chunk_log").fetchone()[0])
        touched: list[int] = []
        if old is not None and last > old.log_seq:
            entries = db.execute(
                "SELECT seq, chunk FROM chunk_log WHERE seq > ? ORDER BY seq", (old.log_seq,)
            ).fetchall()
            if entries and entries[0][0] == old.log_seq + 1:  # nothing pruned in between
                touched = sorted({int(chunk) for _, chunk in entries})

        def rebuilt() -> ContentIndex:
            rows = db.execute(f"{self._CONTENT_ROWS} ORDER BY c.id")
            return ContentIndex.build(generation, last, rows)

        limit = _PATCH_TOUCHED * max(len(old or ()), 1000)
        if old is None or not touched or len(touched) > limit:
            return rebuilt()
        ids = json.dumps(touched)
        rows = db.execute(
            f"{self._CONTENT_ROWS} WHERE c.id IN (SELECT value FROM json_each(?)) ORDER BY c.id",
            (ids,),
        ).fetchall()
        vectors = None
        if old.vectors is not None:
            vectors = db.execute(
                "SELECT chunk, vec FROM vectors WHERE chunk IN (SELECT value FROM json_each(?))",
                (ids,),
            ).fetchall()
        patched = old.changed(generation, last, np.asarray(touched, np.int64), rows, vectors)
        too_dead = patched.dead > _PATCH_DEAD * len(patched)
        if too_dead or not self._holds_the_same_chunks(db, patched):
            return rebuilt()
        return patched

    def _lexical(
        self, content: ContentIndex, terms: list[str], mask: npt.NDArray[np.bool_], k: int
    ) -> list[tuple[str, float]]:
        from clearance.store.memory import bm25_top_k

        if not terms:
            return []
        with self._lock:
            found = self._term_ids(self._db, terms)
        ids = [found[t] for t in terms if t in found]
        return [(content.chunk_ids[p], s) for p, s in bm25_top_k(content, ids, mask, k)]

    def _vector(
        self,
        content: ContentIndex,
        access: AccessIndex,
        vector: Vector,
        mask: npt.NDArray[np.bool_],
        k: int,
    ) -> list[tuple[str, float]]:
        import numpy as np

        from clearance.store.memory import top_k

        rows = content.vectors
        if rows is None or rows.positions.size == 0:
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if query.shape[0] != rows.dim:
            raise StoreError(f"query vector has {query.shape[0]} dimensions, index has {rows.dim}")
        # The permission mask picks the candidate rows; ranking happens after masking. With
        # permission classes, graphs built from the caller's rows of each class narrow them;
        # with sign codes, the nearest by code among the caller's rows.
        admitted = mask[rows.positions]
        if self._classes is not None:
            candidates = self._classes.candidates(content, access, admitted, query, k)
        elif self._signs is not None:
            candidates = self._signs.candidates(rows, admitted, query, k)
        else:
            candidates = np.flatnonzero(admitted)
        if candidates.size == 0:
            return []
        # einsum, not `@`: BLAS sums rows in a different order depending on where they fall
        # in its blocks, so identical vectors could score one ulp apart and break the
        # insertion-order tie; einsum computes every row alike, on one thread, as fast here.
        scores = np.zeros(rows.positions.size, dtype=np.float32)
        if candidates.size * 3 < rows.positions.size:
            scores[candidates] = np.einsum("ij,j->i", rows.matrix[candidates], query)
        else:
            scores = np.einsum("ij,j->i", rows.matrix, query)
        # A non-finite vector (only a writer bypassing `upsert` can store one) ranks nowhere.
        candidates = candidates[np.isfinite(scores[candidates])]
        best = top_k(scores, candidates, content.keys[rows.positions[candidates]], k)
        return [(content.chunk_ids[rows.positions[r]], float(scores[r])) for r in best]

    def warm(self, *, vectors: bool) -> None:
        """Build the in-memory copies now (seconds at 100k chunks) rather than in the first
        search, and with permission classes their graphs; later writes are applied to them
        as usual."""
        content, access = self._indexes(vectors=vectors)
        self.save_copy()
        if vectors and self._classes is not None and content.vectors is not None:
            self._classes.prepare(content, access)
        if vectors and self._signs is not None and content.vectors is not None:
            self._signs.words(content.vectors)

    def _retrieve(
        self, terms: list[str], vector: Vector | None, flt: SearchFilter, k: int
    ) -> Retrieved:
        """Both rank inside one permission mask over the in-memory copies."""
        content, access = self._indexes(vectors=vector is not None)
        mask = access.chunk_mask(flt, content)
        return Retrieved(
            self._lexical(content, terms, mask, k),
            [] if vector is None else self._vector(content, access, vector, mask, k),
        )

    def term_statistics(self, terms: Sequence[str], flt: SearchFilter) -> TermStatistics:
        """Allowed-chunk count and document frequencies, from the same mask as BM25."""
        import numpy as np

        wanted = list(dict.fromkeys(terms))
        if not flt.principals:
            return TermStatistics(0, {})
        content, access = self._indexes(vectors=False)
        mask = access.chunk_mask(flt, content)
        with self._lock:
            found = self._term_ids(self._db, wanted)
        df: dict[str, int] = {}
        for term in wanted:
            if term in found:
                chunks, _ = content.posting(found[term])
                count = int(np.count_nonzero(mask[chunks]))
                if count:
                    df[term] = count
        return TermStatistics(int(np.count_nonzero(mask)), df)

    # ------------------------------------------------------------------ facts

    def _allowed_facts(
        self, flt: SearchFilter, slots: Mapping[str, str]
    ) -> tuple[list[Any], dict[str, Document]]:
        """Filtered by the same ``_allowed`` SQL as chunk search, in one snapshot with the
        documents."""
        allowed, params = self._allowed(flt)
        sql = allowed_facts_sql(allowed, "doc_key", [f"f.{column} = ?" for column in slots])
        with self._snapshot() as db:
            try:
                rows = db.execute(sql, [*params, *slots.values()]).fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"fact query failed: {exc}") from exc
            return rows, self._documents_by_id(db, sorted({str(r[0]) for r in rows}))

    # ------------------------------------------------------------------ end facts

    # ------------------------------------------------------------------ status

    def _size_bytes(self, db: SqlConnection) -> int:
        """The file's size with its write-ahead log and shared memory."""
        if str(self.path) == ":memory:":
            return 0
        files = (self.path, Path(f"{self.path}-wal"), Path(f"{self.path}-shm"))
        return sum(p.stat().st_size for p in files if p.exists())
