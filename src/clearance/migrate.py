"""Moving an index from one backend to the other, without re-embedding.

``clearance migrate --from sqlite:PATH --to postgres:DSN`` (or the reverse) copies what the
source holds, as stored: every document with its ACL, chunks with their vectors, facts,
metadata (the synced directory, the embedding model's name), ACL sync times, and the tables
other modules keep beside the index (FAQ entries, API tokens, browser sessions, source
state, traces). Vectors are copied, never recomputed; the target analyses each chunk's text
for its own lexical index, as it does on ingest.

Guarantees:

* **No half document.** Each document is written with the target's own ``upsert``: one
  transaction holding the document, its ACL, chunks, vectors and facts. An interrupted
  migration leaves whole documents only.
* **An occupied target is refused.** A target that holds anything (documents or rows of
  any copied table) is refused with one line naming both ways on: ``--append`` continues
  an interrupted migration of the same source (documents already present and identical are
  skipped, the rest written; table rows are written over by primary key), ``--force``
  empties the target first.
* **Verified at the end.** The rows of every copied table are counted on both sides, every
  document (metadata and ACL) is compared, and a sample of searches (a few users of the
  synced directory, a few queries taken from the index's own chunks; lexical and, where
  vectors exist, vector top-k) must return the same chunks with the same scores on both.
  Any difference fails the migration with one line naming it.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from clearance.access.directory import Directory
from clearance.config import Settings
from clearance.errors import ConfigError, StoreError
from clearance.model import Document, Sensitivity
from clearance.store.backends import open_postgres, postgres_module
from clearance.store.base import SearchFilter, Store
from clearance.store.side_tables import columns, create_table
from clearance.store.sqlite import SQLiteStore

__all__ = [
    "TABLES",
    "Endpoint",
    "MigrationReport",
    "copy_document",
    "migrate",
    "open_endpoint",
    "parse_endpoint",
    "summary_line",
    "table_counts",
    "verify",
]

# Keys of the embedded store's `meta` that belong to that file alone (its schema version
# and the write generations its in-memory copies follow): never copied, never compared.
_INTERNAL_META = (
    "schema_version",
    "content_generation",
    "access_generation",
    "directory_generation",
)


@dataclass(frozen=True, slots=True)
class Table:
    """A table copied row by row, with its primary key and columns (the same on both
    backends); ``order`` keeps the order records were written in where it matters."""

    name: str
    key: str
    columns: tuple[str, ...]
    order: Mapping[str, str] = field(default_factory=dict)


def _side_table(name: str, **order: str) -> Table:
    """A side table copied whole: every column its statement defines, keyed by the first
    (an API token's scopes too: one copied without them reads as made before scopes, and
    a provisioning token would then search and ask)."""
    found = columns(name)
    return Table(name, found[0], found, order)


#: The tables copied as rows, after the documents: everything but the index itself.
TABLES: tuple[Table, ...] = (
    Table("meta", "key", ("key", "value")),
    Table("corpus_sync", "corpus", ("corpus", "last_acl_sync")),
    *map(_side_table, ("faq_entries", "faq_state", "api_tokens", "ui_sessions", "source_state")),
    # Traces are listed newest first by write order: SQLite's rowid, PostgreSQL's seq.
    _side_table("traces", sqlite="rowid", postgres="seq"),
)

# Where each backend counts the index's own rows (vectors live in their own table in
# SQLite, in a column of chunks in PostgreSQL).
_INDEX_COUNTS = {
    "documents": "documents",
    "acl_entries": "doc_acl",
    "chunks": "chunks",
    "vectors": "vectors",
    "facts": "facts",
}
_POSTGRES_VECTORS = "chunks WHERE embedding IS NOT NULL"


# ---------------------------------------------------------------------------- endpoints


@dataclass(frozen=True, slots=True)
class Endpoint:
    """``sqlite:PATH`` or ``postgres:DSN`` (the DSN of the owning, writing role)."""

    backend: str
    where: str

    def __str__(self) -> str:
        if self.backend == "sqlite":
            return f"sqlite:{self.where}"
        from clearance.store.postgres import _safe_dsn

        return f"postgres:{_safe_dsn(self.where)}"


def parse_endpoint(text: str, option: str) -> Endpoint:
    """``sqlite:PATH`` or ``postgres:DSN``, or a one-line error naming ``option``."""
    backend, sep, where = text.partition(":")
    if not sep or backend not in ("sqlite", "postgres") or not where.strip():
        raise ConfigError(f"{option}: expected sqlite:PATH or postgres:DSN, got {text!r}")
    if backend == "postgres":
        _check_dsn(where, option)
    return Endpoint(backend, where.strip())


def _check_dsn(dsn: str, option: str) -> None:
    postgres_module()
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    try:
        parts = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else "unreadable"
        raise ConfigError(f"{option}: not a PostgreSQL connection string ({reason})") from None
    if "password" in parts:
        raise ConfigError(
            f"{option}: the DSN holds a password; put it in the environment variable that "
            "[store] writer_password_env names (CLEARANCE_PG_WRITER_PASSWORD by default)"
        )
    if not parts.get("user"):
        raise ConfigError(f"{option}: name the role to connect as (postgresql://ROLE@HOST/DB)")


def open_endpoint(
    endpoint: Endpoint, settings: Settings, *, reader_dsn: str | None, must_exist: bool
) -> Store:
    """The store at ``endpoint``. A PostgreSQL endpoint is opened like ``[store]`` opens
    it (both roles, this settings file's passwords and corpus SLAs), with ``reader_dsn``
    (or ``[store] dsn``) as the reading role that searches run as."""
    if endpoint.backend == "sqlite":
        path = Path(endpoint.where)
        if must_exist and not path.is_file():
            raise ConfigError(f"{endpoint}: no such index file")
        return SQLiteStore(path, busy_timeout_s=settings.store.busy_timeout_s)
    reader = reader_dsn or settings.store.dsn
    if not reader:
        raise ConfigError(
            f"{endpoint}: name the reading role searches run as: --reader-dsn DSN "
            "(or [store] dsn in the settings)"
        )
    _check_dsn(reader, "--reader-dsn")
    return open_postgres(settings, reader, endpoint.where)


# ---------------------------------------------------------------------------- counting


def _copied(table: Table) -> str:
    """The ``WHERE`` clause of the rows of ``table`` a migration copies, if not all."""
    if table.name != "meta":
        return ""
    return f" WHERE key NOT IN ({', '.join(repr(k) for k in _INTERNAL_META)})"


def table_counts(store: Store) -> dict[str, int]:
    """Rows per copied table (metadata without the embedded store's internal keys)."""
    counts: dict[str, int] = {}
    with store.reading() as db:
        for name, rows in _INDEX_COUNTS.items():
            if name == "vectors" and store.dialect == "postgres":
                rows = _POSTGRES_VECTORS
            counts[name] = int(db.execute(f"SELECT count(*) FROM {rows}").fetchone()[0])
    for table in TABLES:
        if not store.has_tables(table.name):
            counts[table.name] = 0
            continue
        with store.reading() as db:
            counts[table.name] = int(
                db.execute(f"SELECT count(*) FROM {table.name}{_copied(table)}").fetchone()[0]
            )
    return counts


# ---------------------------------------------------------------------------- copying


def copy_document(source: Store, target: Store, document: Document) -> int:
    """Write one document of ``source`` into ``target`` as stored: its ACL, chunks, their
    vectors and its facts, in the target's one transaction. Returns its chunk count.

    Vectors are looked up by chunk text, as the stores keep them for reuse: two chunks of
    one document with the same text have the same vector."""
    chunks = source.get_chunks(document.doc_id)
    by_text = source.vectors_by_text(document.doc_id)
    vectors = [by_text.get(chunk.text) for chunk in chunks] if by_text else None
    facts = source.list_facts(document.doc_id)
    target.upsert(document, chunks, vectors, facts=facts)
    return len(chunks)


def _rows(store: Store, table: Table) -> list[tuple[Any, ...]]:
    if not store.has_tables(table.name):
        return []
    sql = f"SELECT {', '.join(table.columns)} FROM {table.name}{_copied(table)}"
    order = table.order.get(store.dialect, table.key)
    with store.reading() as db:
        return [tuple(r) for r in db.execute(f"{sql} ORDER BY {order}").fetchall()]


def _copy_table(source: Store, target: Store, table: Table) -> int:
    rows = _rows(source, table)
    if not rows:
        return 0
    if not target.has_tables(table.name):
        with target.transaction() as db:
            create_table(db, table.name)
    columns = ", ".join(table.columns)
    updates = ", ".join(f"{c} = excluded.{c}" for c in table.columns if c != table.key)
    marks = ", ".join("?" for _ in table.columns)
    with target.transaction() as db:
        db.executemany(
            f"INSERT INTO {table.name} ({columns}) VALUES ({marks}) "
            f"ON CONFLICT ({table.key}) DO UPDATE SET {updates}",
            rows,
        )
    return len(rows)


def _empty(target: Store) -> None:
    """Remove everything a migration writes (``--force``)."""
    with target.transaction() as db:
        db.execute("DELETE FROM documents")
        for table in TABLES:
            if not target.has_tables(table.name):
                continue
            db.execute(f"DELETE FROM {table.name}{_copied(table)}")


# ---------------------------------------------------------------------------- verification


@dataclass
class Verification:
    counts: dict[str, dict[str, int]]
    searches: int
    users: list[str]
    queries: int
    skipped: str | None
    problems: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "counts": self.counts,
            "searches_compared": self.searches,
            "users": self.users,
            "queries": self.queries,
            "searches_skipped": self.skipped,
            "problems": self.problems,
        }


def _same_ranking(a: Sequence[tuple[str, float]], b: Sequence[tuple[str, float]]) -> bool:
    """The same scores in the same order and the same chunks, where chunks with equal
    scores may come in any order (and the last tie may be cut at ``k`` differently)."""
    if len(a) != len(b):
        return False
    for (_, sa), (_, sb) in zip(a, b, strict=True):
        if abs(sa - sb) > 1e-4 * max(1.0, abs(sa)):
            return False
    if not a:
        return True
    last = a[-1][1]
    cut = next(i for i, (_, s) in enumerate(a) if abs(s - last) <= 1e-4 * max(1.0, abs(last)))
    return Counter(c for c, _ in a[:cut]) == Counter(c for c, _ in b[:cut])


def _fresh_corpora(store: Store, settings: Settings, now: datetime) -> list[str]:
    """Corpora whose last ACL sync is within their SLA (with a minute to spare), which
    both backends search alike; a stale corpus is hidden by PostgreSQL's row policies."""
    fresh: list[str] = []
    for corpus, synced in store.last_acl_syncs().items():
        age = (now - synced).total_seconds()
        sla = settings.corpus(corpus).revocation_sla_s
        if 0 <= age <= sla - 60:
            fresh.append(corpus)
    return sorted(fresh)


def _sample_users(store: Store, documents: Sequence[Document], n: int) -> dict[str, frozenset[str]]:
    """A few users of the synced directory with their principal sets, or, with no
    directory, a few principals named on documents."""
    rng = random.Random(0)
    raw = store.get_meta("directory")
    if raw is not None:
        directory = Directory.from_json(raw)
        ids = sorted(directory.users)
        picked = rng.sample(ids, min(n, len(ids)))
        return {u: directory.principal_set(u) for u in sorted(picked)}
    named = sorted({p for d in documents for p in d.acl})
    return {p: frozenset({p}) for p in rng.sample(named, min(n, len(named)))}


# How many documents the sample looks through for chunks with vectors.
_VECTOR_LOOKS = 200


def _sample_queries(store: Store, documents: Sequence[Document], n: int) -> list[tuple[str, Any]]:
    """Queries from the index's own chunks: a few words of one chunk of each of ``n``
    documents, each with the chunk's stored vector when it has one. Where the first
    documents drawn have no vectors, further ones are looked through (a bounded number),
    so an index with some vectors gets its vector search compared too."""
    rng = random.Random(1)
    queries: list[tuple[str, Any]] = []
    with_vectors = 0
    drawn = rng.sample(list(documents), min(len(documents), max(n, _VECTOR_LOOKS)))
    for i, document in enumerate(drawn):
        if i >= n and with_vectors >= n:
            break
        chunks = store.get_chunks(document.doc_id)
        vectors = store.vectors_by_text(document.doc_id)
        if not chunks or (i >= n and not vectors):
            continue
        chunk = rng.choice(chunks)
        words = chunk.text.split()
        start = rng.randrange(max(1, len(words) - 6))
        vector = vectors.get(chunk.text)
        with_vectors += vector is not None
        queries.append((" ".join(words[start : start + 6]), vector))
    return queries


def verify(
    source: Store,
    target: Store,
    settings: Settings,
    *,
    users: int = 3,
    queries: int = 5,
    k: int = 10,
) -> Verification:
    """Compare both sides: rows per table, every document, and a sample of searches."""
    before, after = table_counts(source), table_counts(target)
    counts = {name: {"source": before[name], "target": after.get(name, 0)} for name in before}
    problems = [
        f"{name}: {n['source']} in the source, {n['target']} in the target"
        for name, n in counts.items()
        if n["source"] != n["target"]
    ]
    documents = source.list_documents()
    theirs = {d.doc_id: d for d in target.list_documents()}
    differing = [d.doc_id for d in documents if theirs.get(d.doc_id) != d]
    if differing:
        problems.append(
            f"{len(differing)} documents differ in metadata or ACL (first: {differing[0]})"
        )
    now = datetime.now(UTC)
    fresh = _fresh_corpora(source, settings, now)
    sampled_users = _sample_users(source, documents, users)
    sampled_queries = _sample_queries(source, documents, queries)
    skipped = None
    compared = 0
    if not fresh:
        skipped = "no corpus synced within its revocation SLA: PostgreSQL would show none"
    elif not sampled_users or not sampled_queries:
        skipped = "no users or no chunks to search with"
    else:
        corpora = dict.fromkeys(fresh, Sensitivity.RESTRICTED)
        for user, principals in sampled_users.items():
            flt = SearchFilter(
                principals=principals,
                corpora=corpora,
                max_sensitivity=Sensitivity.RESTRICTED,
                now=now,
            )
            for query, vector in sampled_queries:
                pairs = [
                    (source.lexical_search(query, flt, k), target.lexical_search(query, flt, k))
                ]
                if vector is not None:
                    pairs.append(
                        (source.vector_search(vector, flt, k), target.vector_search(vector, flt, k))
                    )
                for ours, migrated in pairs:
                    compared += 1
                    if not _same_ranking(ours, migrated):
                        problems.append(
                            f"search for {user!r} ({query!r}) differs: "
                            f"{[c for c, _ in ours][:3]} vs {[c for c, _ in migrated][:3]}"
                        )
    return Verification(
        counts, compared, sorted(sampled_users), len(sampled_queries), skipped, problems
    )


# ---------------------------------------------------------------------------- the run


@dataclass
class MigrationReport:
    source: str
    target: str
    documents: int = 0
    copied: int = 0
    skipped: int = 0
    chunks: int = 0
    rows: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    verification: Verification | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "from": self.source,
            "to": self.target,
            "documents": self.documents,
            "copied": self.copied,
            "skipped": self.skipped,
            "chunks_copied": self.chunks,
            "rows": self.rows,
            "seconds": round(self.seconds, 3),
            "verified": bool(self.verification and not self.verification.problems),
            "verification": None if self.verification is None else self.verification.to_dict(),
        }


Progress = Callable[[int, int, str], None]


def _occupied(counts: Mapping[str, int]) -> str | None:
    held = [f"{n} {name.replace('_', ' ')}" for name, n in counts.items() if n]
    return ", ".join(held) or None


def migrate(
    source: Store,
    target: Store,
    settings: Settings,
    *,
    mode: str = "new",
    on_progress: Progress | None = None,
    copy: Callable[[Store, Store, Document], int] | None = None,
) -> MigrationReport:
    """Copy ``source`` into ``target`` (``mode``: ``new`` — the target must hold nothing;
    ``append`` — continue into what it holds; ``force`` — empty it first), then verify.
    Raises :class:`StoreError` naming the first difference when verification fails."""
    started = time.perf_counter()
    report = MigrationReport(source.location, target.location)
    held = _occupied(table_counts(target))
    if held and mode == "new":
        raise ConfigError(
            f"the target is not empty ({held}): --append continues an interrupted "
            "migration of the same source, --force empties the target first"
        )
    if held and mode == "force":
        _empty(target)
    documents = source.list_documents()
    report.documents = len(documents)
    # Documents are written whole or not at all: one already there and equal to the
    # source's (metadata and ACL) is a finished copy.
    present = {d.doc_id: d for d in target.list_documents()} if mode == "append" else {}
    write = copy or copy_document
    for done, document in enumerate(documents, start=1):
        if present.get(document.doc_id) == document:
            report.skipped += 1
        else:
            report.chunks += write(source, target, document)
            report.copied += 1
        if on_progress is not None:
            on_progress(done, len(documents), document.doc_id)
    for table in TABLES:
        report.rows[table.name] = _copy_table(source, target, table)
    report.verification = verify(source, target, settings)
    report.seconds = time.perf_counter() - started
    if report.verification.problems:
        problems = report.verification.problems
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise StoreError(f"verification failed: {problems[0]}{more}")
    return report


def summary_line(report: MigrationReport) -> str:
    """One line for people: what was copied and what was compared."""
    v = report.verification
    if v is None or v.skipped:
        searched = f"searches not compared ({v.skipped if v else 'not verified'})"
    else:
        searched = f"{v.searches} searches identical for {len(v.users)} users"
    return (
        f"migrated {report.copied} documents ({report.chunks} chunks), skipped "
        f"{report.skipped} already there, in {report.seconds:.1f}s; counts match; {searched}"
    )
