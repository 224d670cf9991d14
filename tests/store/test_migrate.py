"""``clearance migrate``: the ACME index built through the CLI in SQLite, moved to a real
PostgreSQL and back, answers every user alike; an occupied target is refused, an
interrupted migration continues with --append; and each check of the verification
catches the migration bug it is there for."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import factories
from clearance import migrate as migration
from clearance.config import settings_from_dict
from clearance.errors import StoreError
from clearance.migrate import open_endpoint, parse_endpoint
from clearance.model import Document, Sensitivity
from clearance.store.base import SearchFilter
from clearance.store.sqlite import SQLiteStore
from clitools import assert_one_line_error, cli
from pg import PgDatabase, server

from .acme_cli import ACME, comparable, home, run_json

# The real copy, which the leaky variants below wrap.
COPY = migration.copy_document
DIM = 384
QUESTIONS = [
    ("alice", "travel policy for flights"),
    ("alice", "What was ACME Japan's revenue in FY2024?"),
    ("bob", "Compare operating profit of Japan and US in FY2025"),
    ("bob", "travel policy for flights"),
]


@dataclasses.dataclass
class Homes:
    sqlite: Path
    postgres: Path
    index: Path
    database: PgDatabase


def _with_vectors(index: Path) -> None:
    """Three documents with stored vectors (the demo runs without a model), in a corpus
    the demo syncs, so the vector search of the verification has something to compare."""
    rng = np.random.default_rng(7)
    store = SQLiteStore(index)
    try:
        for d in range(3):
            doc = factories.document(
                f"vectors:{d}",
                corpus="public",
                title=f"Vector note {d}",
                acl={"group:everyone" if d else "group:all-staff"},
                sensitivity=Sensitivity.PUBLIC,
            )
            chunks = factories.chunks(doc, [f"note {d} part {i} about flights" for i in range(4)])
            vectors = [v / np.linalg.norm(v) for v in rng.normal(size=(4, DIM)).astype(np.float32)]
            store.upsert(doc, chunks, vectors)
    finally:
        store.close()


@pytest.fixture
def homes(tmp_path: Path) -> Iterator[Homes]:
    """The ACME demo ingested and synced into SQLite through the CLI, with a FAQ entry, an
    API token, a SCIM-only token and traces; and a PostgreSQL home on an upgraded, empty database."""
    found = server()
    database = found.database()
    try:
        sqlite_config = home(tmp_path / "sqlite", '[store]\npath = "data/clearance.db"\n')
        pg_config = home(
            tmp_path / "postgres",
            '[store]\nbackend = "postgres"\n'
            f'dsn = "{database.reader_dsn}"\nwriter_dsn = "{database.writer_dsn}"\n',
        )
        run_json(sqlite_config, "ingest", "--manifest", str(ACME / "manifest.jsonl"))
        run_json(sqlite_config, "directory", "sync", str(ACME / "directory.json"))
        run_json(
            sqlite_config,
            "faq",
            "add",
            "--id",
            "wifi",
            "--question",
            "What is the guest wifi password?",
            "--answer",
            "Ask reception.",
            "--acl",
            "group:all-staff",
        )
        run_json(sqlite_config, "token", "create", "--user", "alice")
        # A provisioning token: were its scope lost on the way, it would read as a token
        # made before scopes, which may search and ask.
        run_json(sqlite_config, "token", "create", "--user", "provisioner", "--scope", "scim")
        run_json(sqlite_config, "ask", "travel policy", "--user", "alice")
        index = tmp_path / "sqlite" / "data" / "clearance.db"
        _with_vectors(index)
        yield Homes(sqlite_config, pg_config, index, database)
    finally:
        found.drop(database)


def _migrate(homes: Homes, *extra: str) -> tuple[int, str, str]:
    return cli(
        "--config",
        homes.postgres,
        "migrate",
        "--from",
        f"sqlite:{homes.index}",
        "--to",
        f"postgres:{homes.database.writer_dsn}",
        *extra,
    )


def _same_answers(first: Path, second: Path) -> int:
    served = 0
    for user, question in QUESTIONS:
        searched = [
            run_json(c, "search", question, "--user", user, "-k", "5") for c in (first, second)
        ]
        assert comparable(searched[0]) == comparable(searched[1]), (user, question)
        asked = [run_json(c, "ask", question, "--user", user) for c in (first, second)]
        assert comparable(asked[0]) == comparable(asked[1]), (user, question)
        served += bool(searched[0]["results"])
    return served


def test_an_index_moved_to_postgres_and_back_answers_every_user_alike(
    homes: Homes, tmp_path: Path
) -> None:
    rc, out, err = _migrate(homes, "--json")
    assert rc == 0, err
    report = json.loads(out)
    assert report["verified"] and report["copied"] == report["documents"] > 70
    counts = report["verification"]["counts"]
    assert all(n["source"] == n["target"] for n in counts.values()), counts
    for table in ("vectors", "facts", "acl_entries", "faq_entries", "api_tokens", "traces"):
        assert counts[table]["source"] > 0, table  # the comparison is not between empty tables
    assert report["verification"]["searches_compared"] > 0
    assert report["verification"]["searches_skipped"] is None

    # the side tables, as their commands list them
    for listing in (("trace", "list", "--limit", "100"), ("token", "list"), ("faq", "list")):
        assert comparable(run_json(homes.sqlite, *listing)) == comparable(
            run_json(homes.postgres, *listing)
        ), listing

    # as two users, through the CLI, on both backends
    assert _same_answers(homes.sqlite, homes.postgres) >= 3

    # vectors came across as stored: the same vector top-k
    settings = settings_from_dict({})
    ends = [
        open_endpoint(
            parse_endpoint(f"sqlite:{homes.index}", "--from"),
            settings,
            reader_dsn=None,
            must_exist=True,
        ),
        open_endpoint(
            parse_endpoint(f"postgres:{homes.database.writer_dsn}", "--to"),
            settings,
            reader_dsn=homes.database.reader_dsn,
            must_exist=True,
        ),
    ]
    try:
        query = ends[0].vectors_by_text("vectors:1")["note 1 part 2 about flights"]
        flt = SearchFilter(
            principals=frozenset({"group:everyone", "group:all-staff"}),
            corpora={"public": Sensitivity.RESTRICTED},
        )
        found = [[c for c, _ in end.vector_search(query, flt, 5)] for end in ends]
        assert found[0] == found[1] and found[0][0] == "vectors:1#2"
    finally:
        for end in ends:
            end.close()

    # and back again, into a new embedded index
    back = tmp_path / "back" / "clearance.db"
    rc, out, err = cli(
        "--config",
        homes.postgres,
        "migrate",
        "--from",
        f"postgres:{homes.database.writer_dsn}",
        "--to",
        f"sqlite:{back}",
        "--json",
    )
    assert rc == 0, err
    assert json.loads(out)["verified"]


def _dropping_acl(source: Any, target: Any, document: Document) -> int:
    return COPY(source, target, _narrowed(document))


def _narrowed(document: Document) -> Document:
    return dataclasses.replace(document, acl=frozenset(sorted(document.acl)[:-1]))


def _swapping_acl(source: Any, target: Any, document: Document) -> int:
    """As many ACL entries, one of them someone else."""
    if document.acl:
        swapped = frozenset({*sorted(document.acl)[:-1], "user:mallory"})
        document = dataclasses.replace(document, acl=swapped)
    return COPY(source, target, document)


def _scrambling_vectors(source: Any, target: Any, document: Document) -> int:
    chunks = source.get_chunks(document.doc_id)
    by_text = source.vectors_by_text(document.doc_id)
    vectors = [by_text.get(c.text) for c in chunks] if by_text else None
    if vectors:
        vectors = vectors[::-1]
    target.upsert(document, chunks, vectors, facts=source.list_facts(document.doc_id))
    return len(chunks)


@pytest.mark.parametrize(
    ("leaky", "caught_by"),
    [
        (_dropping_acl, "verification failed: acl_entries:"),
        (_swapping_acl, "documents differ in metadata or ACL"),
        (_scrambling_vectors, "verification failed: search for"),
    ],
)
def test_the_verification_catches_a_migration_that_changes_what_it_copies(
    homes: Homes, monkeypatch: pytest.MonkeyPatch, leaky: Any, caught_by: str
) -> None:
    monkeypatch.setattr(migration, "copy_document", leaky)
    rc, _, err = _migrate(homes)
    assert rc == 1
    assert_one_line_error(err, caught_by)


def test_an_interrupted_migration_is_refused_then_continued_with_append(
    homes: Homes, monkeypatch: pytest.MonkeyPatch
) -> None:
    written: list[str] = []

    def failing_after_five(source: Any, target: Any, document: Document) -> int:
        if len(written) == 5:
            raise StoreError("write to the target failed: server closed the connection")
        written.append(document.doc_id)
        return COPY(source, target, document)

    monkeypatch.setattr(migration, "copy_document", failing_after_five)
    rc, _, err = _migrate(homes)
    assert rc == 1
    assert_one_line_error(err, "server closed the connection")
    monkeypatch.undo()

    rc, _, err = _migrate(homes)
    assert rc == 2
    assert_one_line_error(err, "the target is not empty (5 documents")
    assert "--append" in err and "--force" in err

    rc, out, err = _migrate(homes, "--append", "--json")
    assert rc == 0, err
    report = json.loads(out)
    assert (report["skipped"], report["copied"]) == (5, report["documents"] - 5)
    assert report["verified"]

    rc, out, err = _migrate(homes, "--force")
    assert rc == 0, err
    assert f"migrated {report['documents']} documents" in out and "counts match" in out


def test_a_postgres_endpoint_is_opened_as_store_settings_open_one(homes: Homes) -> None:
    """The migration's target gets the vector plan of ``[store]`` too: with the HNSW
    opt-in, its writers build the graph the readers will scan."""
    settings = settings_from_dict({"store": {"vector_search": "hnsw", "hnsw_ef_search": 77}})
    end = open_endpoint(
        parse_endpoint(f"postgres:{homes.database.writer_dsn}", "--to"),
        settings,
        reader_dsn=homes.database.reader_dsn,
        must_exist=True,
    )
    try:
        assert end.vector_plan.approximate and end.vector_plan.ef_search == 77  # type: ignore[union-attr]
    finally:
        end.close()
    unset = settings_from_dict({"store": {"vector_search": "classes"}})
    end = open_endpoint(
        parse_endpoint(f"postgres:{homes.database.writer_dsn}", "--to"),
        unset,
        reader_dsn=homes.database.reader_dsn,
        must_exist=True,
    )
    try:  # unset: PostgreSQL's own width, not the embedded store's 100
        assert end.vector_plan.classes and end.vector_plan.ef_search == 160  # type: ignore[union-attr]
    finally:
        end.close()


def test_bad_endpoints_are_one_line_errors(homes: Homes, tmp_path: Path) -> None:
    cases = [
        (("--from", "mysql:x", "--to", f"sqlite:{tmp_path / 'a.db'}"), "expected sqlite:PATH"),
        (("--from", f"sqlite:{tmp_path / 'none.db'}", "--to", "sqlite:b.db"), "no such index"),
        (
            ("--from", f"sqlite:{homes.index}", "--to", "postgres:host=db port=notaport x"),
            "--to: not a PostgreSQL connection string",
        ),
        (
            ("--from", f"sqlite:{homes.index}", "--to", "postgres:postgresql://o:secret@db/c"),
            "the DSN holds a password",
        ),
        (
            ("--from", f"sqlite:{homes.index}", "--to", f"sqlite:{homes.index}"),
            "name the same index",
        ),
    ]
    for args, message in cases:
        rc, _, err = cli("--config", homes.postgres, "migrate", *args)
        assert rc == 2, (args, err)
        assert_one_line_error(err, message)
        assert "secret" not in err
    rc, _, err = _migrate(homes, "--append", "--force")
    assert rc == 2
    assert_one_line_error(err, "exclude each other")

    bare = server().database(migrated=False)
    try:
        rc, _, err = cli(
            "--config",
            homes.postgres,
            "migrate",
            "--from",
            f"sqlite:{homes.index}",
            "--to",
            f"postgres:{bare.writer_dsn}",
        )
        assert rc == 1
        assert_one_line_error(err, "run `clearance db upgrade`")
    finally:
        server().drop(bare)
