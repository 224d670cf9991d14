"""Who can read what, for the scenarios every connector shares: written once here and run by
each connector's test class against its vendor's fake, through the sync engine into a real
index.

A connector's class mixes in the scenarios its vendor has, provides the fixture ``src`` (its
:class:`~tests.sources.connector_sync.SyncedSource`), the two people the scenarios search as
(``ALICE``, ``BOB``), ``doc(name)``, and the set-ups that put its fake in each state (the
methods each mixin lists). ``CONNECTOR`` with ``ACCESS`` (its method reading one item's
access) and ``MEMBERS`` (one group's members) are what the reverse proofs break: each
scenario is shown failing for a deliberately broken connector, with the same assertion.

The classes here have no ``Test`` prefix, so pytest collects them only through a
connector's class."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest

from clearance.access.ownership import BLOCKED_KEY
from clearance.app import Clearance
from clearance.sources.service import source_status
from clearance.sources.sync import SyncReport

from .connector_sync import (
    SyncedSource,
    acl_state,
    remember_first_answers,
    shrug_off_source_errors,
)

__all__ = [
    "AllOrNothing",
    "AnyoneWithTheLink",
    "GroupRevocation",
    "InheritedAccess",
    "Permissions",
    "SharingShapes",
    "matches",
    "readers",
]

#: Exactly who may read a document: its principals, or ``"nobody: <the reason>"``.
Readers = frozenset[str] | str


def readers(app: Clearance, doc_id: str) -> Readers:
    """Who the index lets read ``doc_id``: its principals, or nobody and why."""
    document = app.store.get_document(doc_id)
    assert document is not None, doc_id
    blocked = document.extra.get(BLOCKED_KEY)
    if document.acl or not blocked:
        return frozenset(document.acl)
    return f"nobody: {blocked}"


def matches(found: Readers, expected: Readers) -> bool:
    """``expected`` principals exactly, or nobody for a reason holding the expected words."""
    if isinstance(expected, str):
        return isinstance(found, str) and expected.removeprefix("nobody: ") in found
    return found == expected


@dataclass(frozen=True)
class Permissions:
    """A sharing shape written as the permissions the vendor's API lists for the item."""

    name: str
    permissions: list[dict[str, Any]]
    expected: Readers  # principals, or "nobody: <words of the reason>"


class SharingShapes:
    """For each sharing shape a vendor documents, exactly who can read an item shared that
    way: its principals, or nobody, with the reason ``source status`` and ``explain`` give.

    ``SHAPES`` lists the shapes (each with a ``name`` and the ``expected`` readers; pytest
    runs the test once per shape, see ``conftest.pytest_generate_tests``); ``share`` puts
    one on the vendor's fake and returns the id of the document to ask about."""

    SHAPES: ClassVar[Sequence[Any]]

    def share(self, src: Any, shape: Any, monkeypatch: pytest.MonkeyPatch) -> str:
        raise NotImplementedError

    def sync(self, src: Any) -> None:
        src.synced()

    def mapped(self, src: Any, shape: Any, monkeypatch: pytest.MonkeyPatch) -> Readers:
        """Who may read the item ``shape`` was shared as, once synced."""
        doc_id = self.share(src, shape, monkeypatch)
        self.sync(src)
        return readers(src.app, doc_id)

    def test_each_sharing_shape_maps_to_exactly_who_can_read(
        self, src: Any, shape: Any, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        found = self.mapped(src, shape, monkeypatch)
        assert matches(found, shape.expected), (shape.name, found)


class _Scenario:
    CONNECTOR: ClassVar[type]
    ACCESS: ClassVar[str] = "_access"
    MEMBERS: ClassVar[str] = "_members"
    ALICE: ClassVar[str]
    BOB: ClassVar[str]

    def doc(self, name: str) -> str:
        raise NotImplementedError


class GroupRevocation(_Scenario):
    """A user removed from a group at the source loses what the group grants after the next
    permission-only sync; a connector that keeps the members it first read is caught."""

    def share_with_a_group_of_alice_and_bob(self, src: Any, name: str, text: str) -> None:
        raise NotImplementedError

    def remove_alice_from_the_group(self, src: Any) -> None:
        raise NotImplementedError

    def removed_member_keeps_access(self, src: SyncedSource) -> bool:
        self.share_with_a_group_of_alice_and_bob(src, "minutes", "Board minutes: dividend policy.")
        src.synced()
        assert src.found(self.ALICE, "dividend") == {self.doc("minutes")}
        self.remove_alice_from_the_group(src)
        src.synced(content=False)
        assert src.found(self.BOB, "dividend") == {self.doc("minutes")}
        return bool(src.found(self.ALICE, "dividend"))

    def test_a_user_removed_from_a_group_upstream_loses_access_after_the_next_sync(
        self, src: SyncedSource
    ) -> None:
        assert not self.removed_member_keeps_access(src)

    def test_reverse_proof_a_connector_that_keeps_first_seen_members_is_caught(
        self, src: SyncedSource, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        remember_first_answers(monkeypatch, self.CONNECTOR, self.MEMBERS)
        assert self.removed_member_keeps_access(src)


class InheritedAccess(_Scenario):
    """A file moved into a folder only Bob may read loses the access it inherited, after a
    permission-only sync; a connector that keeps the permissions it first read is caught."""

    def open_file_and_closed_folder(self, src: Any) -> None:
        """A file ``plan`` ("Merger plan draft.") that Alice and Bob may read through its
        folder, and a folder ``board`` that only Bob may read."""
        raise NotImplementedError

    def move_plan_into_board(self, src: Any) -> None:
        raise NotImplementedError

    def moved_file_keeps_access(self, src: SyncedSource) -> bool:
        self.open_file_and_closed_folder(src)
        src.synced()
        assert src.found(self.ALICE, "merger") == {self.doc("plan")}
        self.move_plan_into_board(src)
        src.synced(content=False)  # the permission sync alone must take the access away
        assert src.found(self.BOB, "merger") == {self.doc("plan")}
        return bool(src.found(self.ALICE, "merger"))

    def test_a_file_moved_into_a_restricted_folder_loses_its_inherited_access(
        self, src: SyncedSource
    ) -> None:
        assert not self.moved_file_keeps_access(src)

    def test_reverse_proof_a_connector_that_remembers_permissions_is_caught(
        self, src: SyncedSource, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        remember_first_answers(monkeypatch, self.CONNECTOR, self.ACCESS)
        assert self.moved_file_keeps_access(src)


class AnyoneWithTheLink(_Scenario):
    """An item open to anyone who has its link, in a CONFIDENTIAL corpus, is visible to
    nobody, and ``source status`` and ``explain`` say why; a connector that maps such access
    to ``everyone`` is caught."""

    def open_to_anyone_with_the_link(self, src: Any, name: str, text: str) -> None:
        raise NotImplementedError

    def widen_anyone_to_everyone(self, monkeypatch: pytest.MonkeyPatch) -> None:
        raise NotImplementedError

    def anyone_item_is_found(self, src: SyncedSource) -> bool:
        self.open_to_anyone_with_the_link(src, "deck", "Board deck: acquisition targets.")
        src.synced()
        return bool(src.found(self.ALICE, "acquisition"))

    def test_an_item_open_to_anyone_with_the_link_in_a_confidential_corpus_is_visible_to_nobody(
        self, src: SyncedSource
    ) -> None:
        assert not self.anyone_item_is_found(src)
        (status,) = source_status(src.app)
        (example,) = status["visible_to_nobody_examples"]
        assert example["doc_id"] == self.doc("deck")
        assert "anyone who has the link" in example["reason"]
        warnings = src.app.explain(self.ALICE, self.doc("deck"))["warnings"]
        assert any("anyone who has the link" in w for w in warnings)

    def test_reverse_proof_a_connector_that_maps_anyone_to_everyone_is_caught(
        self, src: SyncedSource, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        self.widen_anyone_to_everyone(monkeypatch)
        assert self.anyone_item_is_found(src)


class AllOrNothing(_Scenario):
    """A permission sync during which the source stops answering changes no ACL and not the
    corpus's ACL-sync time (the revocation clock keeps running); a connector that takes
    permissions it cannot read as "nobody" is caught."""

    FAILURE: ClassVar[str] = "503"

    def readable_by(self, src: Any, names: Sequence[str], who: str) -> None:
        """Files ``names`` ("Quarterly memo <name>.") that ``who`` may read, added or, when
        they exist, shared with ``who`` as well."""
        raise NotImplementedError

    def stop_answering_permissions_after(self, src: Any, answered: int) -> None:
        raise NotImplementedError

    def shrug_off_unreadable_permissions(self, monkeypatch: pytest.MonkeyPatch) -> None:
        shrug_off_source_errors(monkeypatch, self.CONNECTOR, self.ACCESS)

    def interrupted_sync(self, src: SyncedSource) -> tuple[SyncReport, bool]:
        """The report of the interrupted sync, and whether it changed any ACL or the
        corpus's ACL-sync time."""
        names = ("a", "b", "c", "d")
        self.readable_by(src, names, self.ALICE)
        src.synced()
        before = acl_state(src.app)
        self.readable_by(src, names, self.BOB)
        src.clock.advance(60)
        self.stop_answering_permissions_after(src, 2)
        (report,) = src.sync(content=False)
        return report, acl_state(src.app) != before

    def test_a_permission_sync_interrupted_halfway_changes_nothing_and_keeps_the_sla_clock(
        self, src: SyncedSource
    ) -> None:
        report, changed = self.interrupted_sync(src)
        assert not changed
        assert not report.ok and self.FAILURE in (report.error or "")
        (status,) = source_status(src.app)
        assert status["state"] == "failing"

    def test_reverse_proof_a_connector_that_shrugs_off_unreadable_permissions_is_caught(
        self, src: SyncedSource, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        self.shrug_off_unreadable_permissions(monkeypatch)
        _, changed = self.interrupted_sync(src)
        assert changed
