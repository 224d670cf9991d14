"""The ACME demo corpus through the real CLI into PostgreSQL and into SQLite: an operator
upgrades an empty database, ingests and syncs, and every user's searches and answers are
the same on both backends."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from clitools import assert_one_line_error, cli
from pg import PgDatabase, server

from .acme_cli import ACME, comparable, home, run_json

QUESTIONS = [
    ("alice", "travel policy for flights"),
    ("alice", "What class do I fly on a 5 hour flight?"),
    ("alice", "What was ACME Japan's revenue in FY2024?"),
    ("hiro", "ACME Japanの2024年度の売上高は？"),
    ("bob", "Compare operating profit of Japan and US in FY2025"),
    ("alice", "What did the board decide about the Globex lawsuit?"),
    ("grace", "What hours is support available for Standard plan customers Monday to Friday?"),
    ("erin", "What is the travel policy?"),
]


@pytest.fixture
def empty_db() -> Iterator[PgDatabase]:
    """A database as a DBA hands it over: roles and the vector extension, no schema."""
    found = server()
    database = found.database(migrated=False)
    try:
        yield database
    finally:
        found.drop(database)


MIGRATIONS = [
    "0001_initial",
    "0002_policies_as_arrays",
    "0003_rate_limits",
    "0004_token_scopes",
    "0005_admin_actions",
    "0006_permission_classes",
    "0007_class_statistics",
    "0008_postings",
    "0009_posting_blocks",
    "0010_narrow_blocks",
]


def test_acme_on_postgres_answers_like_sqlite(tmp_path: Path, empty_db: PgDatabase) -> None:
    sqlite_config = home(tmp_path / "sqlite", '[store]\npath = "data/clearance.db"\n')
    pg_config = home(
        tmp_path / "postgres",
        '[store]\nbackend = "postgres"\n'
        f'dsn = "{empty_db.reader_dsn}"\nwriter_dsn = "{empty_db.writer_dsn}"\n',
    )
    status = run_json(pg_config, "db", "status")
    assert (status["backend"], status["version"], status["pending"]) == (
        "postgres",
        0,
        MIGRATIONS,
    )
    rc, _, err = cli("--config", pg_config, "status")
    assert rc != 0
    assert_one_line_error(err, "run `clearance db upgrade`")
    upgraded = run_json(pg_config, "db", "upgrade")
    assert upgraded["applied"] == MIGRATIONS and upgraded["pending"] == []
    assert run_json(pg_config, "db", "upgrade")["applied"] == []  # a second run does nothing

    for config in (sqlite_config, pg_config):
        run_json(config, "ingest", "--manifest", str(ACME / "manifest.jsonl"))
        run_json(config, "directory", "sync", str(ACME / "directory.json"))
    ours, theirs = run_json(pg_config, "status"), run_json(sqlite_config, "status")
    for key in ("documents", "chunks", "by_sensitivity"):
        assert ours[key] == theirs[key], key
    assert [c["failing_closed"] for c in ours["corpora"]] == [
        c["failing_closed"] for c in theirs["corpora"]
    ]

    served, seen = 0, []
    for user, question in QUESTIONS:
        search = [
            run_json(c, "search", question, "--user", user, "-k", "5")
            for c in (pg_config, sqlite_config)
        ]
        assert comparable(search[0]) == comparable(search[1]), (user, question)
        asked = [run_json(c, "ask", question, "--user", user) for c in (pg_config, sqlite_config)]
        assert comparable(asked[0]) == comparable(asked[1]), (user, question)
        served += bool(search[0]["results"])
        seen += [r["doc_id"] for r in search[0]["results"]]
    assert served >= 5  # the comparison is not between two empty indexes

    # the side tables: traces with their audit, API tokens
    traces = [run_json(c, "trace", "list", "--limit", "100") for c in (pg_config, sqlite_config)]
    assert traces[0]["count"] == traces[1]["count"] == len(QUESTIONS)
    audits = [run_json(c, "audit", "--doc", seen[0]) for c in (pg_config, sqlite_config)]
    assert audits[0]["count"] == audits[1]["count"] > 0
    for config in (pg_config, sqlite_config):
        token = run_json(config, "token", "create", "--user", "alice")
        run_json(config, "token", "revoke", token["id"])
        (listed,) = run_json(config, "token", "list")["tokens"]
        assert listed["id"] == token["id"] and listed["revoked"]


def test_a_password_in_the_dsn_is_refused(tmp_path: Path) -> None:
    config = home(
        tmp_path / "home",
        '[store]\nbackend = "postgres"\ndsn = "postgresql://reader:secret@db/clearance"\n'
        'writer_dsn = "postgresql://owner@db/clearance"\n',
    )
    rc, _, err = cli("--config", config, "status")
    assert rc == 2
    assert_one_line_error(err, "store.dsn: holds a password")
    assert "secret" not in err
    shutil.rmtree(tmp_path / "home")
