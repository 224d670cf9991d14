"""The directory and the corpus list are kept in memory between requests; a change must still
be seen by the very next search, whoever wrote it.

A server re-reads the directory only when the index's ``directory_generation`` moved (a
trigger bumps it on every write of the directory, by any connection), and the corpus list
only when the ``access_generation`` moved. The writers here are another :class:`Clearance`
on the same file (another worker process, the CLI) and a plain ``sqlite3`` connection. Each
check is run once more against a deliberately broken variant — a cache that never looks at
the index again, or an index without the trigger — to show the same assertion catches it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from clearance.access.directory import Directory, parse_directory
from clearance.app import Clearance
from clearance.config import Settings
from clearance.store.sqlite import SQLiteStore
from factories import chunks, document
from store.rawsql import raw

QUERY = "London revenue"


@pytest.fixture
def served(
    tmp_path: Path, settings: Settings, store: SQLiteStore, write_directory: Callable[..., Path]
) -> Clearance:
    """The instance that serves: ``ann`` (group ``staff``) reads the one document, and has
    searched once, so its directory and corpus list are cached."""
    app = Clearance(settings, store, embedder=None)
    doc = document("wiki:london", corpus="wiki", acl=frozenset({"group:staff"}))
    store.upsert(doc, chunks(doc, ["Revenue of the London office grew."]))
    app.store.record_acl_sync("wiki", app.clock())
    app.sync_directory(write_directory(tmp_path / "dir.json", {"ann": ["staff"]}))
    assert [h.document.doc_id for h in app.search("ann", QUERY).hits] == ["wiki:london"]
    return app


@pytest.fixture
def other(served: Clearance, settings: Settings) -> Iterator[Clearance]:
    """A second instance on the same index file, as another worker or the CLI would be."""
    with SQLiteStore(served.store.path) as store:
        yield Clearance(settings, store, embedder=None)


def disabled_by(writer: Clearance, tmp_path: Path, write_directory: Callable[..., Path]) -> None:
    writer.sync_directory(write_directory(tmp_path / "off.json", {"ann": ["staff"]}, active=False))


def test_a_directory_sync_by_another_writer_applies_to_the_next_search(
    served: Clearance,
    other: Clearance,
    tmp_path: Path,
    write_directory: Callable[..., Path],
) -> None:
    disabled_by(other, tmp_path, write_directory)

    result = served.search("ann", QUERY)

    assert (result.hits, result.refused) == ([], "account_disabled")


def test_reverse_proof_a_cache_that_never_rereads_keeps_serving_a_disabled_account(
    served: Clearance,
    other: Clearance,
    tmp_path: Path,
    write_directory: Callable[..., Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(served.store, "directory_if_changed", lambda generation: None)
    disabled_by(other, tmp_path, write_directory)

    result = served.search("ann", QUERY)

    assert (result.hits, result.refused) != ([], "account_disabled")  # the leak the cache risks


def write_by_hand(path: Path, directory: Directory) -> None:
    with raw(path) as db:
        db.execute(
            "UPDATE meta SET value = ? WHERE key = 'directory'", (json.dumps(directory.to_json()),)
        )


def without_ann(directory: Directory) -> Directory:
    return directory.replace(
        parse_directory({"users": [{"id": "bo", "active": True}]}, source="test")
    )


@pytest.mark.parametrize("trigger", [True, False], ids=["trigger", "reverse-proof-no-trigger"])
def test_a_directory_written_by_plain_sql_applies_to_the_next_search(
    served: Clearance, trigger: bool
) -> None:
    """The generation comes from a trigger in the file, not from this class: without it, the
    same write goes unseen — which is what the cache would get wrong."""
    path = served.store.path
    if not trigger:
        with raw(path) as db:
            db.execute("DROP TRIGGER meta_update_bumps_directory_generation")
    write_by_hand(path, without_ann(served.directory))

    refused = served.search("ann", QUERY).refused

    assert (refused == "unknown_user") is trigger


def test_opening_an_index_of_an_earlier_release_installs_the_directory_generation(
    served: Clearance,
) -> None:
    path = served.store.path
    with raw(path) as db:  # what an index written before the directory generation looks like
        for event in ("insert", "update", "delete"):
            db.execute(f"DROP TRIGGER meta_{event}_bumps_directory_generation")
        db.execute("DELETE FROM meta WHERE key = 'directory_generation'")

    with SQLiteStore(path) as store:
        before = store.directory_if_changed(None)
        assert before is not None
        assert [u["id"] for u in before[1]["users"]] == ["ann"]
        write_by_hand(path, without_ann(served.directory))
        after = store.directory_if_changed(before[0])

    assert after is not None
    assert [u["id"] for u in after[1]["users"]] == ["bo"]


@pytest.mark.parametrize(
    "frozen", [False, True], ids=["generation", "reverse-proof-frozen-generation"]
)
def test_a_corpus_added_by_another_writer_is_searched_next(
    served: Clearance, other: Clearance, monkeypatch: pytest.MonkeyPatch, frozen: bool
) -> None:
    """The corpus list (kept per access generation) decides which corpora a search without an
    assistant covers. Reverse proof: with the generation frozen, the list stays stale."""
    if frozen:
        generations = served.store._generations()
        monkeypatch.setattr(served.store, "_generations", lambda: generations)
    doc = document("notes:paris", corpus="notes", acl=frozenset({"group:staff"}))
    other.store.upsert(doc, chunks(doc, ["Revenue of the Paris office."]))
    other.store.record_acl_sync("notes", other.clock())

    assert ("notes" in served.store.corpora()) is not frozen
    if not frozen:
        found = {h.document.doc_id for h in served.search("ann", "revenue office").hits}
        assert found == {"wiki:london", "notes:paris"}
