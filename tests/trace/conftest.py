"""A small index for the trace suite: a few inline documents of different origins, corpora
and sensitivities, a directory, a fixed clock and a scripted model.

Every canary below is a string that must never reach a trace by default (docs/design.md §8, §10.10).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from clearance.app import Clearance
from clearance.config import Settings, settings_from_dict
from clearance.llm.base import Provider
from clearance.llm.mock import MockProvider
from clearance.trace.record import TraceRecord

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
KEY = b"trace-test-key-0123456789"

#: Canaries planted in document text; none may appear in a trace.
VPN_CANARY = "vpn-canary-7c1e.example.com"
TRAVEL_CANARY = "TRAVEL-CANARY-55Q"
CHAT_CANARY = "CHAT-CANARY-09Z"
SECRET_CANARY = "SECRET-CANARY-RESTRICTED-41K"

DOCUMENTS: list[dict[str, Any]] = [
    {
        "doc_id": "wiki:vpn",
        "title": "VPN guide",
        "text": f"VPN portal guide.\n\nThe VPN portal is {VPN_CANARY} and requires MFA.",
        "corpus": "ops",
        "acl": ["group:staff"],
        "origin": "human",
    },
    {
        "doc_id": "wiki:travel",
        "title": "Travel policy",
        "text": f"Travel policy hotels.\n\nHotel rooms are booked through {TRAVEL_CANARY}.",
        "corpus": "ops",
        "acl": ["group:staff"],
        "origin": "system",
        "review_at": "2026-01-01T00:00:00+00:00",  # past its review date at NOW
    },
    {
        "doc_id": "slack:rumour",
        "title": "Lunch chat",
        "text": f"Lunch chat about the cafeteria.\n\nThe cafeteria menu rumour is {CHAT_CANARY}.",
        "corpus": "chat",
        "acl": ["everyone"],
        "origin": "external_platform",
    },
    {
        "doc_id": "hr:secret",
        "title": "Board salary review",
        "text": f"Board salary review.\n\nThe board salary decision is {SECRET_CANARY}.",
        "corpus": "hr",
        "acl": ["group:staff"],
        "sensitivity": "RESTRICTED",
        "origin": "human",
    },
]
CANARIES = (VPN_CANARY, TRAVEL_CANARY, CHAT_CANARY, SECRET_CANARY)

DIRECTORY = {
    "users": [
        {"id": "ann", "active": True, "attributes": {}},
        {"id": "bob", "active": True, "attributes": {}},
        {"id": "eve", "active": True, "attributes": {}},
        {"id": "dan", "active": False, "attributes": {}},
    ],
    "groups": [{"id": "staff", "members": ["user:ann", "user:bob", "user:dan"]}],
}

BASE_CONFIG: dict[str, Any] = {
    "corpora": {
        "ops": {"revocation_sla": "30d"},
        "chat": {"revocation_sla": "30d"},
        "hr": {"revocation_sla": "30d", "max_sensitivity": "RESTRICTED"},
        "legal": {"revocation_sla": "30d"},  # configured, never synced: fails closed
    },
    "scope": {"entities": {"Rival Corp": ["rival"]}},
}


def merge(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """Deep-merge TOML-shaped mappings (tables merge, values replace)."""
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def settings_for(root: Path, config: Mapping[str, Any] | None = None) -> Settings:
    """Lexical-only settings rooted in ``root``: the suite's corpora plus ``config``."""
    base = merge({"embedding": {"provider": "none"}}, BASE_CONFIG)
    return settings_from_dict(merge(base, config or {}), root=root)


def write_project(root: Path) -> tuple[Path, Path]:
    """The manifest and directory files of this suite, written under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    manifest = root / "manifest.jsonl"
    manifest.write_text("\n".join(json.dumps(d) for d in DOCUMENTS) + "\n", encoding="utf-8")
    directory = root / "directory.json"
    directory.write_text(json.dumps(DIRECTORY), encoding="utf-8")
    return manifest, directory


AppFactory = Callable[..., Clearance]


@pytest.fixture
def make_app(tmp_path: Path) -> Iterator[AppFactory]:
    """``make_app(config=None, provider=None, **kwargs)`` → an ingested :class:`Clearance`
    on a fresh index in this test's tmp_path, closed after the test."""
    opened: list[Clearance] = []
    counter = iter(range(1000))

    def factory(
        config: Mapping[str, Any] | None = None,
        provider: Provider | None = None,
        **kwargs: Any,
    ) -> Clearance:
        root = tmp_path / f"app{next(counter)}"
        manifest, directory = write_project(root)
        settings = settings_for(root, config)
        kwargs.setdefault("clock", lambda: NOW)
        kwargs.setdefault("trace_key", KEY)
        app = Clearance.open(settings, embedder=None, provider=provider or MockProvider(), **kwargs)
        opened.append(app)
        app.sync_directory(directory)
        report = app.ingest([], manifest=manifest)
        assert not report.failed, report.to_dict()
        return app

    try:
        yield factory
    finally:
        for app in opened:
            app.close()


def traces(app: Clearance) -> list[dict[str, Any]]:
    """Every stored record, oldest first."""
    return list(reversed(app.trace_log().entries()))


def last_trace(app: Clearance) -> dict[str, Any]:
    records = traces(app)
    assert records, "no trace was written"
    return records[-1]


def raw_traces(app: Clearance) -> str:
    """The traces table exactly as stored, every column of every row."""
    with app.store.reading() as db:
        rows = db.execute("SELECT trace_id, created_at, record FROM traces").fetchall()
    return "\n".join(" ".join(str(c) for c in row) for row in rows)


def capture(monkeypatch: pytest.MonkeyPatch, app: Clearance) -> list[TraceRecord]:
    """Spy on ``write_trace`` (records are still written)."""
    seen: list[TraceRecord] = []
    real = app.write_trace

    def spy(user_id: str, record: TraceRecord) -> None:
        seen.append(record)
        real(user_id, record)

    monkeypatch.setattr(app, "write_trace", spy)
    return seen
