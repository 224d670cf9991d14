"""``clearance note add``, ``trace list|show|purge``, ``audit`` and ``stats``, run in-process
with a real index: exit codes and the ``--json`` shapes."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from clearance.cli.main import main
from clearance.config import load_settings
from clearance.store.sqlite import SQLiteStore
from clearance.trace.record import TraceRecord, TraceWriter, pseudonymise, timestamp

from .conftest import write_project

TRACE_KEY = "cli-trace-key"
CONFIG = """\
[embedding]
provider = "none"

[store]
path = "data/index.db"

[corpora.ops]
revocation_sla = "30d"

[corpora.chat]
revocation_sla = "30d"

[corpora.hr]
revocation_sla = "30d"

[corpora.notes]
revocation_sla = "30d"
"""
RECORD_KEYS = {
    "trace_id",
    "created_at",
    "user",
    "assistant",
    "route",
    "status",
    "reason",
    "retrieved",
    "cited",
    "filter_counts",
    "realtime_dropped",
    "fabrication_guard_triggered",
    "guard_fired",
    "latency_ms",
    "provider_errors",
    "denied_retrieved",
    "cited_past_review",
}


class Run:
    def __init__(self, capsys: pytest.CaptureFixture[str], config: Path) -> None:
        self.capsys = capsys
        self.config = config

    def __call__(self, *args: str) -> tuple[int, str, str]:
        self.capsys.readouterr()
        rc = main(["--config", str(self.config), *args])
        out, err = self.capsys.readouterr()
        return rc, out, err

    def json(self, *args: str) -> Any:
        rc, out, err = self(*args, "--json")
        assert rc == 0, err
        return json.loads(out)


@pytest.fixture
def run(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Run:
    monkeypatch.setenv("CLEARANCE_TRACE_KEY", TRACE_KEY)
    config = tmp_path / "clearance.toml"
    config.write_text(CONFIG, encoding="utf-8")
    manifest, directory = write_project(tmp_path / "project")
    runner = Run(capsys, config)
    assert runner("directory", "sync", str(directory))[0] == 0
    assert runner("ingest", "--manifest", str(manifest))[0] == 0
    return runner


def db_path(run: Run) -> Path:
    return load_settings(run.config).db_path


def assert_one_line_error(err: str, text: str) -> None:
    assert err.startswith("error: "), err
    assert text in err
    assert err.count("\n") == 1, err


# --------------------------------------------------------------------------- note add


def test_note_add_json_shape_and_trust_from_the_chain(run: Run) -> None:
    data = run.json(
        "note",
        "add",
        "Summary of the #it-help channel: the VPN portal moved.",
        "--origin",
        "consolidation",
        "--origin-chain",
        "external_platform",
        "--corpus",
        "notes",
        "--acl",
        "everyone",
    )

    assert set(data) == {
        "doc_id",
        "status",
        "chunks",
        "corpus",
        "origin",
        "origin_chain",
        "trust",
        "warnings",
    }
    assert data["doc_id"].startswith("note:") and len(data["doc_id"]) == len("note:") + 36
    assert data["status"] == "added"
    assert data["chunks"] == 1
    assert data["corpus"] == "notes"
    assert (data["origin"], data["origin_chain"], data["trust"]) == (
        "consolidation",
        ["external_platform"],
        "untrusted",
    )
    shown = run.json("docs", "show", data["doc_id"])
    assert shown["origin"] == "consolidation"
    assert shown["origin_chain"] == ["external_platform"]
    assert shown["source_system"] == "note"
    assert "trust" not in json.dumps(shown)  # derived when read, never stored


@pytest.mark.parametrize(
    ("origin", "chain", "trust"),
    [
        ("human", [], "trusted"),
        ("consolidation", [], "medium"),
        ("consolidation", ["human,system"], "medium"),
        ("consolidation", ["human", "email"], "untrusted"),
        ("SYSTEM", [], "trusted"),
        ("wiki", [], "untrusted"),
    ],
)
def test_note_add_trust_levels(run: Run, origin: str, chain: list[str], trust: str) -> None:
    args = ["note", "add", "A note.", "--origin", origin, "--corpus", "notes", "--acl", "everyone"]
    for hop in chain:
        args += ["--origin-chain", hop]
    assert run.json(*args)["trust"] == trust


def test_note_add_with_doc_id_title_and_comma_separated_acl(run: Run) -> None:
    data = run.json(
        "note",
        "add",
        "Weekly ops sync summary.",
        "--origin",
        "human",
        "--corpus",
        "notes",
        "--acl",
        "group:staff,user:eve",
        "--title",
        "Ops sync",
        "--doc-id",
        "note:ops-sync-1",
    )
    assert data["doc_id"] == "note:ops-sync-1"
    shown = run.json("docs", "show", "note:ops-sync-1")
    assert shown["title"] == "Ops sync"
    assert shown["acl"] == ["group:staff", "user:eve"]

    again = run.json(
        "note",
        "add",
        "Weekly ops sync summary.",
        "--origin",
        "human",
        "--corpus",
        "notes",
        "--acl",
        "group:staff,user:eve",
        "--title",
        "Ops sync",
        "--doc-id",
        "note:ops-sync-1",
    )
    assert again["status"] == "unchanged"


def test_note_add_plain_output(run: Run) -> None:
    rc, out, _ = run(
        "note", "add", "x y z", "--origin", "email", "--corpus", "notes", "--acl", "everyone"
    )
    assert rc == 0
    assert out.startswith("added note:")
    assert "untrusted" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["   ", "--origin", "human", "--acl", "everyone"], "the text is empty"),
        (["t", "--origin", " ", "--acl", "everyone"], "key 'origin'"),
        (["t", "--origin", "human", "--acl", "bogus"], "key 'acl'"),
        (["t", "--origin", "human", "--acl", "everyone", "--doc-id", "nocolon"], "doc_id"),
        (["t", "--origin", "human", "--acl", "everyone", "--title", " "], "key 'title'"),
    ],
)
def test_note_add_bad_input_is_a_one_line_error(run: Run, args: list[str], message: str) -> None:
    rc, out, err = run("note", "add", *args, "--corpus", "notes")
    assert rc == 2
    assert out == ""
    assert_one_line_error(err, message)


def test_note_add_requires_origin_corpus_and_acl(run: Run) -> None:
    for missing in ("--origin", "--corpus", "--acl"):
        args = {"--origin": "human", "--corpus": "notes", "--acl": "everyone"}
        del args[missing]
        rc, _, err = run("note", "add", "text", *[x for kv in args.items() for x in kv])
        assert rc == 2
        assert missing in err


# --------------------------------------------------------------------------- trace list / show


def test_trace_list_and_show(run: Run) -> None:
    first = run.json("ask", "Where is the VPN portal?", "--user", "ann")
    second = run.json("ask", "What is the cafeteria menu rumour?", "--user", "bob")

    listed = run.json("trace", "list")
    assert listed["count"] == 2
    assert [t["trace_id"] for t in listed["traces"]] == [second["trace_id"], first["trace_id"]]
    assert all(set(t) == RECORD_KEYS for t in listed["traces"])
    assert run.json("trace", "list", "--limit", "1")["count"] == 1
    assert run.json("trace", "list", "--since", "1h")["count"] == 2
    assert run.json("trace", "list", "--since", "2999-01-01")["count"] == 0

    shown = run.json("trace", "show", first["trace_id"])
    assert shown == listed["traces"][1]
    assert shown["user"] == pseudonymise("ann", TRACE_KEY.encode())
    assert shown["cited"] == ["wiki:vpn"]
    assert "Where is the VPN portal" not in json.dumps(listed)

    rc, out, _ = run("trace", "list")
    assert rc == 0 and first["trace_id"][:6] in out
    rc, out, _ = run("trace", "show", first["trace_id"])
    assert rc == 0 and "cited" in out


def test_trace_show_unknown_id_exits_3(run: Run) -> None:
    rc, out, err = run("trace", "show", "nope", "--json")
    assert rc == 3
    assert json.loads(out) == {"error": "not_found", "message": "no trace 'nope'"}
    assert_one_line_error(err, "no trace 'nope'")


def test_trace_list_bad_since_exits_2(run: Run) -> None:
    rc, _, err = run("trace", "list", "--since", "whenever")
    assert rc == 2
    assert_one_line_error(err, "--since")


def test_trace_list_empty(run: Run) -> None:
    assert run.json("trace", "list") == {"count": 0, "traces": []}
    rc, out, _ = run("trace", "list")
    assert rc == 0 and "no trace records" in out


# --------------------------------------------------------------------------- purge and retention


def write_old(db: Path, *ages_days: float) -> None:
    now = datetime.now(UTC)
    with SQLiteStore(db) as store:
        writer = TraceWriter(store, b"k")  # retention 0: does not purge
        for i, age in enumerate(ages_days):
            writer.write(
                TraceRecord(
                    trace_id=f"old{i}", created_at=timestamp(now - timedelta(days=age))
                ).to_dict()
            )


def test_trace_purge_older_than(run: Run) -> None:
    run.json("ask", "Where is the VPN portal?", "--user", "ann")
    # The first trace writer of this process already applied retention to this index.
    write_old(db_path(run), 45, 10)

    data = run.json("trace", "purge", "--older-than", "30d")

    assert set(data) == {"purged", "older_than_seconds", "cutoff"}
    assert data["purged"] == 1
    assert data["older_than_seconds"] == 30 * 86400
    assert {t["trace_id"] for t in run.json("trace", "list")["traces"]} >= {"old1"}
    assert "old0" not in {t["trace_id"] for t in run.json("trace", "list")["traces"]}

    rc, out, _ = run("trace", "purge", "--older-than", "5d")
    assert rc == 0 and "purged 1 trace record(s)" in out


def test_trace_purge_requires_a_valid_duration(run: Run) -> None:
    rc, _, err = run("trace", "purge", "--older-than", "a month")
    assert rc == 2
    assert_one_line_error(err, "--older-than")
    rc, _, err = run("trace", "purge")
    assert rc == 2 and "--older-than" in err


def test_configured_retention_is_applied_automatically(run: Run) -> None:
    # No trace writer or reader has opened this index yet in this process.
    write_old(db_path(run), 31, 29)

    remaining = {t["trace_id"] for t in run.json("trace", "list")["traces"]}

    assert remaining == {"old1"}  # [trace] retention defaults to 30 days


# --------------------------------------------------------------------------- audit


def test_audit_who_saw_this_document(run: Run) -> None:
    note = run.json(
        "note",
        "add",
        "The cafeteria menu rumour was confirmed.",
        "--origin",
        "external_platform",
        "--corpus",
        "notes",
        "--acl",
        "everyone",
    )["doc_id"]
    asked = [
        run.json("ask", "Where is the VPN portal?", "--user", "ann"),
        run.json("ask", "What is the cafeteria menu rumour?", "--user", "eve"),
        run.json("ask", "Where is the VPN portal?", "--user", "bob"),
    ]

    audit = run.json("audit", "--doc", "wiki:vpn")
    assert set(audit) == {"doc_id", "count", "events"}
    assert audit["doc_id"] == "wiki:vpn"
    assert audit["count"] == 2
    key = TRACE_KEY.encode()
    assert [(e["trace_id"], e["user"]) for e in audit["events"]] == [
        (asked[0]["trace_id"], pseudonymise("ann", key)),
        (asked[2]["trace_id"], pseudonymise("bob", key)),
    ]
    assert all(
        set(e) == {"trace_id", "created_at", "user", "assistant", "status", "retrieved", "cited"}
        for e in audit["events"]
    )
    assert all(e["retrieved"] and e["cited"] for e in audit["events"])

    seen_note = run.json("audit", "--doc", note)
    assert [e["user"] for e in seen_note["events"]] == [pseudonymise("eve", key)]

    assert run.json("audit", "--doc", "wiki:never") == {
        "doc_id": "wiki:never",
        "count": 0,
        "events": [],
    }
    rc, out, _ = run("audit", "--doc", "wiki:vpn")
    assert rc == 0 and "cited" in out
    rc, out, _ = run("audit", "--doc", "wiki:never")
    assert rc == 0 and "no request retrieved or cited" in out


# --------------------------------------------------------------------------- stats


STATS_KEYS = {
    "since",
    "requests",
    "assistants",
    "by_status",
    "denied_source_requests",
    "denied_source_rate",
    "stale_source_requests",
    "stale_source_ratio",
    "citations",
    "latency_ms",
    "guard_fired",
    "fabrication_guard_triggered",
    "provider_error_requests",
}


def test_stats_json_shape_and_values(run: Run) -> None:
    run.json("ask", "Where is the VPN portal?", "--user", "ann")
    run.json("ask", "Where are hotel rooms booked for travel?", "--user", "bob")  # past review
    run.json("ask", "Where is the VPN portal?", "--user", "eve")  # nothing readable
    run.json("ask", "Where is the VPN portal?", "--user", "dan")  # disabled

    stats = run.json("stats")

    assert set(stats) == STATS_KEYS
    assert stats["requests"] == 4
    assert stats["assistants"] == {
        "(default)": {
            "requests": 4,
            "answered": 2,
            "refused": 1,
            "not_found": 1,
            "degraded": 0,
            "citations": 2,
        }
    }
    assert stats["denied_source_rate"] == 0.0
    assert stats["stale_source_ratio"] == 0.25
    assert stats["citations"] == {
        "total": 2,
        "per_answered": 1.0,
        "by_doc": {"wiki:vpn": 1, "wiki:travel": 1},
    }
    assert set(stats["latency_ms"]) == {"p50", "p95"}
    assert stats["latency_ms"]["p50"] <= stats["latency_ms"]["p95"]
    assert run.json("stats", "--since", "2999-01-01")["requests"] == 0

    rc, out, _ = run("stats")
    assert rc == 0
    assert "denied-source rate: 0.0%" in out
    assert "stale-source ratio: 25.0%" in out
