"""Shared fixtures: a clean environment per test, temporary settings and a real SQLite store."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from clearance.config import Settings, settings_from_dict
from clearance.store.sqlite import SQLiteStore

SettingsFactory = Callable[..., Settings]


@pytest.fixture(autouse=True)
def clean_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """No test sees the caller's Clearance environment or writes to the real home."""
    monkeypatch.delenv("CLEARANCE_HOME", raising=False)
    monkeypatch.delenv("CLEARANCE_TRACE_KEY", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))


def merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """Deep-merge TOML-shaped mappings (tables merge, values replace)."""
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def make_settings(root: Path, data: Mapping[str, Any] | None = None) -> Settings:
    """Settings rooted in ``root`` with embeddings off (lexical only) unless ``data`` says so.

    Tests name corpora freely, so unconfigured corpora are allowed here; the tests of that
    rule (tests/ingest/test_fail_safe_corpora.py) turn it off. A near miss of a configured
    corpus ("HR" for "hr") is refused either way."""
    base: dict[str, Any] = {
        "embedding": {"provider": "none"},
        "ingest": {"allow_unconfigured_corpora": True},
    }
    return settings_from_dict(merge(base, data or {}), root=root)


@pytest.fixture
def settings_factory(tmp_path: Path) -> SettingsFactory:
    """``settings_factory({...})`` → Settings rooted in this test's tmp_path."""

    def factory(data: Mapping[str, Any] | None = None) -> Settings:
        return make_settings(tmp_path, data)

    return factory


@pytest.fixture
def settings(settings_factory: SettingsFactory) -> Settings:
    return settings_factory()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    """An opened store on a real file, closed after the test."""
    db = SQLiteStore(tmp_path / "index" / "clearance.db")
    try:
        yield db
    finally:
        db.close()


def _write_directory(path: Path, users: Mapping[str, list[str]], active: bool = True) -> Path:
    groups: dict[str, list[str]] = {}
    for user, names in users.items():
        for group in names:
            groups.setdefault(group, []).append(f"user:{user}")
    data = {
        "users": [{"id": u, "active": active, "attributes": {}} for u in users],
        "groups": [{"id": g, "members": members} for g, members in groups.items()],
    }
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.fixture
def write_directory() -> Callable[..., Path]:
    """``write_directory(path, {user: [group, …]})`` writes a Clearance-JSON directory file."""
    return _write_directory


@pytest.fixture
def finance_engine(
    tmp_path: Path,
    settings_factory: SettingsFactory,
    store: SQLiteStore,
    write_directory: Callable[..., Path],
) -> Callable[[Callable[[Path], object]], Any]:
    """``finance_engine(write)``: ``write(folder)`` puts its files in a corpus folder that
    group ``finance`` reads; the folder is ingested (every file must be read) and fay, of
    that group, may ask. Returns the engine."""
    from clearance.app import Clearance

    def build(write: Callable[[Path], object]) -> Clearance:
        corpus = tmp_path / "finance"
        corpus.mkdir(exist_ok=True)
        write(corpus)
        (corpus / "_meta.json").write_text(json.dumps({"acl": ["group:finance"]}), "utf-8")
        engine = Clearance(settings_factory({}), store)
        assert engine.ingest([corpus]).failed == []
        engine.sync_directory(write_directory(tmp_path / "directory.json", {"fay": ["finance"]}))
        return engine

    return build


# A real PostgreSQL server (tests/pg.py), started by the first test that asks for it.
from pg import backend_store, pg_database, stop_server  # noqa: E402, F401


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    stop_server()
