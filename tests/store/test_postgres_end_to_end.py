"""The ACME demo corpus through the real CLI into PostgreSQL and into SQLite: an operator
upgrades an empty database, ingests and syncs, and every user's searches and answers are
the same on both backends."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clitools import assert_one_line_error, cli, lexical_only
from pg import PgDatabase, server

ACME = Path(__file__).resolve().parents[2] / "examples" / "acme"
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


def _home(root: Path, store: str) -> Path:
    root.mkdir()
    config = lexical_only((ACME / "clearance.toml").read_text(encoding="utf-8"))
    config = config.replace('[store]\npath = "data/clearance.db"\n', store)
    assert store in config
    (root / "clearance.toml").write_text(config, encoding="utf-8")
    return root / "clearance.toml"


def _run(config: Path, *args: str) -> Any:
    rc, out, err = cli("--config", config, *args, "--json")
    assert rc == 0, err
    return json.loads(out)


def _comparable(answer: Any) -> Any:
    """An answer without what differs per run (ids, times)."""
    if isinstance(answer, dict):
        return {
            k: _comparable(v)
            for k, v in answer.items()
            if not re.search(r"(^|_)(id|ms|latency|timings?|created_at)$", k)
        }
    if isinstance(answer, list):
        return [_comparable(v) for v in answer]
    return answer


def test_acme_on_postgres_answers_like_sqlite(tmp_path: Path, empty_db: PgDatabase) -> None:
    sqlite_config = _home(tmp_path / "sqlite", '[store]\npath = "data/clearance.db"\n')
    pg_config = _home(
        tmp_path / "postgres",
        '[store]\nbackend = "postgres"\n'
        f'dsn = "{empty_db.reader_dsn}"\nwriter_dsn = "{empty_db.writer_dsn}"\n',
    )
    status = _run(pg_config, "db", "status")
    assert (status["backend"], status["version"], status["pending"]) == (
        "postgres",
        0,
        ["0001_initial", "0002_policies_as_arrays"],
    )
    rc, _, err = cli("--config", pg_config, "status")
    assert rc != 0
    assert_one_line_error(err, "run `clearance db upgrade`")
    upgraded = _run(pg_config, "db", "upgrade")
    assert (
        upgraded["applied"] == ["0001_initial", "0002_policies_as_arrays"]
        and upgraded["pending"] == []
    )
    assert _run(pg_config, "db", "upgrade")["applied"] == []  # a second run does nothing

    for config in (sqlite_config, pg_config):
        _run(config, "ingest", "--manifest", str(ACME / "manifest.jsonl"))
        _run(config, "directory", "sync", str(ACME / "directory.json"))
    ours, theirs = _run(pg_config, "status"), _run(sqlite_config, "status")
    for key in ("documents", "chunks", "by_sensitivity"):
        assert ours[key] == theirs[key], key
    assert [c["failing_closed"] for c in ours["corpora"]] == [
        c["failing_closed"] for c in theirs["corpora"]
    ]

    served, seen = 0, []
    for user, question in QUESTIONS:
        search = [
            _run(c, "search", question, "--user", user, "-k", "5")
            for c in (pg_config, sqlite_config)
        ]
        assert _comparable(search[0]) == _comparable(search[1]), (user, question)
        asked = [_run(c, "ask", question, "--user", user) for c in (pg_config, sqlite_config)]
        assert _comparable(asked[0]) == _comparable(asked[1]), (user, question)
        served += bool(search[0]["results"])
        seen += [r["doc_id"] for r in search[0]["results"]]
    assert served >= 5  # the comparison is not between two empty indexes

    # the side tables: traces with their audit, API tokens
    traces = [_run(c, "trace", "list", "--limit", "100") for c in (pg_config, sqlite_config)]
    assert traces[0]["count"] == traces[1]["count"] == len(QUESTIONS)
    audits = [_run(c, "audit", "--doc", seen[0]) for c in (pg_config, sqlite_config)]
    assert audits[0]["count"] == audits[1]["count"] > 0
    for config in (pg_config, sqlite_config):
        token = _run(config, "token", "create", "--user", "alice")
        _run(config, "token", "revoke", token["id"])
        (listed,) = _run(config, "token", "list")["tokens"]
        assert listed["id"] == token["id"] and listed["revoked"]


def test_a_password_in_the_dsn_is_refused(tmp_path: Path) -> None:
    config = _home(
        tmp_path / "home",
        '[store]\nbackend = "postgres"\ndsn = "postgresql://reader:secret@db/clearance"\n'
        'writer_dsn = "postgresql://owner@db/clearance"\n',
    )
    rc, _, err = cli("--config", config, "status")
    assert rc == 2
    assert_one_line_error(err, "store.dsn: holds a password")
    assert "secret" not in err
    shutil.rmtree(tmp_path / "home")
