"""The filesystem connector through the sync engine, on real files and a real index.

Each invariant is shown with a reverse proof: a deliberately broken engine or connector
that the same assertion catches."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clearance.errors import OwnershipError, SourceError
from clearance.sources import filesystem
from clearance.sources.base import PermissionPage
from clearance.sources.filesystem import FilesystemConnector
from clearance.sources.service import source_status
from clearance.sources.sync import SourceSync
from clearance.trust import resolve_trust

from .conftest import Share, make_share

# --------------------------------------------------------------------------- deletions


def deleted_file_is_still_found(share: Share) -> bool:
    share.meta("", acl=["group:staff"])
    share.write("menu.txt", "Cafeteria menu: ramen on Fridays.")
    share.write("travel.md", "# Travel\n\nBook trains to Osaka.")
    share.sync()
    assert share.found("alice", "ramen") == {"files:menu.txt"}
    (share.root / "menu.txt").unlink()
    share.sync(permissions=False)  # the content sync alone must take it away
    return bool(share.found("alice", "ramen"))


def test_a_deleted_file_disappears_from_search_after_the_next_sync(share: Share) -> None:
    assert not deleted_file_is_still_found(share)
    assert share.app.store.get_document("files:menu.txt") is None
    assert share.reports[-1].counts["deleted"] == 1


def test_reverse_proof_an_engine_that_keeps_unlisted_documents_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(SourceSync, "_delete", lambda self, doc_id, owned, report: None)
    for broken in make_share(tmp_path):
        assert deleted_file_is_still_found(broken)


def test_a_missing_folder_fails_the_sync_and_deletes_nothing(share: Share) -> None:
    share.meta("", acl=["group:staff"])
    share.write("menu.txt", "Cafeteria menu: ramen on Fridays.")
    share.sync()
    share.root.rename(share.root.with_name("moved"))

    reports = share.sync()

    assert [r.ok for r in reports] == [False, False]
    assert "share" in (reports[0].error or "")
    assert share.app.store.get_document("files:menu.txt") is not None
    status = source_status(share.app)[0]
    assert status["state"] == "failing" and "does not exist" in status["last_error"]


# --------------------------------------------------------------------------- moves


def test_a_file_moved_into_a_restricted_folder_loses_its_inherited_access(share: Share) -> None:
    share.meta("", acl=["group:staff"])
    share.meta("hr", acl=["group:hr"])
    share.write("hr/salaries.md", "Salary bands for 2025.")
    share.write("plan.md", "Reorganisation plan: merge the two teams.")
    share.sync()
    assert share.found("alice", "reorganisation") == {"files:plan.md"}

    (share.root / "plan.md").rename(share.root / "hr" / "plan.md")
    share.sync()

    assert share.found("alice", "reorganisation") == set()
    assert share.found("bob", "reorganisation") == {"files:hr/plan.md"}
    assert share.app.store.get_document("files:plan.md") is None


def posix_share(tmp_path: Path) -> Iterator[Share]:
    return make_share(
        tmp_path,
        options={
            "acl": "posix",
            "users": {"0": "user:admin", str(os.getuid()): "user:admin"},
            "groups": {"0": "group:hr", str(os.getgid()): "group:hr"},
        },
    )


def test_posix_a_folder_others_may_not_enter_narrows_everything_below_it(
    tmp_path: Path,
) -> None:
    for share in posix_share(tmp_path):
        plan = share.write("plan.md", "Reorganisation plan: merge the two teams.")
        os.chmod(plan, 0o644)
        os.chmod(share.root, 0o755)
        share.sync()
        assert share.app.store.get_document("files:plan.md").acl == {  # type: ignore[union-attr]
            "user:admin",
            "group:hr",
            "everyone",
        }
        assert share.found("alice", "reorganisation") == {"files:plan.md"}

        restricted = share.root / "hr"
        restricted.mkdir()
        os.chmod(restricted, 0o750)
        plan.rename(restricted / "plan.md")
        share.sync()

        moved = share.app.store.get_document("files:hr/plan.md")
        assert moved is not None and moved.acl == {"user:admin", "group:hr"}
        assert share.found("alice", "reorganisation") == set()
        assert share.found("bob", "reorganisation") == {"files:hr/plan.md"}


def test_posix_a_mode_an_allow_list_cannot_state_is_visible_to_nobody(tmp_path: Path) -> None:
    for share in posix_share(tmp_path):
        odd = share.write("odd.md", "Group may not read, others may.")
        os.chmod(odd, 0o604)
        share.sync()
        document = share.app.store.get_document("files:odd.md")
        assert document is not None and document.acl == frozenset()
        explained = share.app.explain("alice", "files:odd.md")
        assert any("allow-list cannot state" in w for w in explained["warnings"])


# --------------------------------------------------------------------------- permission-only


def test_a_permission_only_change_neither_refetches_nor_reembeds(
    share: Share, monkeypatch: pytest.MonkeyPatch
) -> None:
    share.meta("", acl=["group:hr"])
    share.write("plan.md", "Reorganisation plan: merge the two teams.")
    share.sync()
    assert share.found("alice", "reorganisation") == set()
    fetched: list[str] = []
    original = FilesystemConnector.fetch
    monkeypatch.setattr(
        FilesystemConnector,
        "fetch",
        lambda self, item: fetched.append(item.doc_id) or original(self, item),
    )
    embedded = share.embedder.texts

    share.meta("", acl=["group:staff"])
    share.sync()

    assert fetched == []
    assert share.embedder.texts == embedded
    assert share.found("alice", "reorganisation") == {"files:plan.md"}


def test_reverse_proof_a_version_that_includes_the_acl_is_caught(
    share: Share, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same counters catch a connector whose version changes with the ACL."""
    share.meta("", acl=["group:hr"])
    share.write("plan.md", "Reorganisation plan: merge the two teams.")
    versions = FilesystemConnector._version
    monkeypatch.setattr(
        FilesystemConnector,
        "_version",
        lambda self, job: versions(self, job) + str(sorted(job.metadata.get("acl", ()))),
    )
    share.sync()
    before = share.reports[0].counts["fetched"]
    share.meta("", acl=["group:staff"])
    share.sync()
    assert share.reports[-2].counts["fetched"] == before == 1


def test_a_touched_file_with_the_same_text_is_read_but_not_reembedded(share: Share) -> None:
    share.meta("", acl=["group:staff"])
    plan = share.write("plan.md", "Reorganisation plan: merge the two teams.")
    share.sync()
    embedded = share.embedder.texts
    stat = plan.stat()
    os.utime(plan, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    share.sync(permissions=False)
    assert share.reports[-1].counts["fetched"] == 1
    assert share.embedder.texts == embedded
    share.write("plan.md", "Reorganisation plan: keep the two teams apart.")
    share.sync(permissions=False)
    assert share.embedder.texts > embedded  # the counter does count real re-embedding


# --------------------------------------------------------------------------- all or nothing


class Interrupted(FilesystemConnector):
    """Lists the first page of permissions, then the source stops answering."""

    def permission_changes(self, cursor: str | None) -> Iterator[PermissionPage]:
        pages = super().permission_changes(cursor)
        yield next(pages)
        raise SourceError("source 'share': connection reset")


def interrupted_sync_changed_something(share: Share, sync: type[SourceSync]) -> bool:
    share.meta("", acl=["group:hr"])
    for name in ("a", "b", "c"):
        share.write(f"{name}.md", f"Quarterly memo {name}.")
    share.sync()
    before = {d.doc_id: d.acl for d in share.app.store.list_documents()}
    clock_before = share.app.store.last_acl_syncs()["docs"]
    share.meta("", acl=["group:staff"])
    share.clock.advance(60)
    source = share.app.settings.sources["share"]
    connector = Interrupted(share.app.settings, share.root, "docs", source="share")
    report = sync(share.app, source, connector).permissions()
    assert not report.ok and "connection reset" in (report.error or "")
    after = {d.doc_id: d.acl for d in share.app.store.list_documents()}
    return after != before or share.app.store.last_acl_syncs()["docs"] != clock_before


def test_a_permission_sync_interrupted_halfway_changes_nothing_and_keeps_the_sla_clock(
    share: Share, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(filesystem, "_PAGE", 1)
    assert not interrupted_sync_changed_something(share, SourceSync)
    assert source_status(share.app)[0]["state"] == "failing"


class Streaming(SourceSync):
    """Broken on purpose: applies each permission page as it arrives."""

    def _collect(self, report: Any) -> Any:
        owned = self.owned()
        for page in self.connector.permission_changes(None):
            acls = {c.doc_id: c.access.principals for c in page.items if c.doc_id in owned}
            self.runtime.store.set_acls(acls, synced=("docs", self.runtime.clock()))
        return {}, None, False


def test_reverse_proof_an_engine_that_applies_pages_as_they_come_is_caught(
    share: Share, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(filesystem, "_PAGE", 1)
    assert interrupted_sync_changed_something(share, Streaming)


def test_only_a_complete_permission_sync_advances_the_corpus_clock(share: Share) -> None:
    share.meta("", acl=["group:staff"])
    share.write("a.md", "Quarterly memo.")
    share.sync(permissions=False)
    assert "docs" not in share.app.store.last_acl_syncs()  # content alone earns nothing
    share.clock.advance(5)
    (report,) = share.sync(content=False)
    assert report.corpus_sync_advanced
    assert share.app.store.last_acl_syncs()["docs"] == share.clock.now


# --------------------------------------------------------------------------- one owner


def owner_refusals(share: Share, doc_id: str) -> list[str]:
    """The manual changes refused for ``doc_id``: ingest, acl sync, remove."""
    refused: list[str] = []
    report = share.app.ingest([share.root], corpus="docs")
    if any(
        r.code == "owned_by_source"
        for r in report.results
        if r.doc_id == doc_id or r.doc_id is None
    ):
        refused.append("ingest")
    line = f'{{"doc_id": "{doc_id}", "acl": ["everyone"]}}'.encode()
    try:
        share.app.sync_acl_data(line, "acls.jsonl", "docs", delta=True)
    except OwnershipError as exc:
        assert "'share'" in exc.message
        refused.append("acl sync")
    try:
        share.app.remove(doc_id)
    except OwnershipError:
        refused.append("remove")
    return refused


def test_a_document_from_a_source_is_changed_by_that_source_only(share: Share) -> None:
    share.meta("", acl=["group:hr"])
    share.write("plan.md", "Reorganisation plan.")
    share.sync()

    assert owner_refusals(share, "files:plan.md") == ["ingest", "acl sync", "remove"]
    report = share.app.ingest([share.root], corpus="docs")
    assert report.exit_code == 2
    assert "belongs to source 'share'" in (report.failed[0].error or "")
    document = share.app.store.get_document("files:plan.md")
    assert document is not None and document.acl == {"group:hr"}


def test_reverse_proof_the_same_checks_pass_a_document_nobody_owns(share: Share) -> None:
    share.meta("", acl=["group:hr"])
    share.write("plan.md", "Reorganisation plan.")
    assert owner_refusals(share, "files:plan.md") == []


def test_an_acl_sync_snapshot_of_a_source_fed_corpus_is_refused(share: Share) -> None:
    share.meta("", acl=["group:hr"])
    share.write("plan.md", "Reorganisation plan.")
    share.sync()
    with pytest.raises(OwnershipError, match=r"snapshot of corpus 'docs'.*source 'share'"):
        share.app.sync_acl_data(b"", "acls.jsonl", "docs", delta=False)


# --------------------------------------------------------------------------- reporting


def test_an_unknown_principal_is_kept_and_reported_everywhere(share: Share) -> None:
    share.meta("", acl=["group:employes"])
    share.write("plan.md", "Reorganisation plan.")
    content, permissions = share.sync()

    warning = "group:employes is not in the directory"
    assert any(warning in w for w in content.warnings)
    assert permissions.unknown_principals == ["group:employes"]
    assert warning in source_status(share.app)[0]["warnings"]
    assert warning in share.app.explain("alice", "files:plan.md")["warnings"]
    document = share.app.store.get_document("files:plan.md")
    assert document is not None and document.acl == {"group:employes"}  # kept, matches nobody


def test_reverse_proof_a_known_group_is_not_reported(share: Share) -> None:
    share.meta("", acl=["group:staff"])
    share.write("plan.md", "Reorganisation plan.")
    _, permissions = share.sync()
    assert permissions.unknown_principals == []
    assert source_status(share.app)[0]["warnings"] == []


def test_a_file_without_an_acl_is_visible_to_nobody_and_status_says_why(share: Share) -> None:
    share.write("plan.md", "Reorganisation plan.")
    share.sync()
    row = source_status(share.app)[0]
    assert row["visible_to_nobody"] == 1
    assert "no 'acl'" in row["visible_to_nobody_examples"][0]["reason"]
    assert share.found("alice", "reorganisation") == set()


def test_a_folder_made_unreadable_midway_is_never_read_as_empty(share: Share) -> None:
    share.meta("", acl=["group:staff"])
    share.write("sub/plan.md", "Reorganisation plan.")
    share.sync()
    shutil.rmtree(share.root)
    share.root.write_text("not a folder any more", encoding="utf-8")
    content, _ = share.sync()
    assert not content.ok and "is not a folder" in (content.error or "")
    assert share.app.store.get_document("files:sub/plan.md") is not None


# --------------------------------------------------------------------------- origin


def origins(share: Share) -> dict[str, tuple[str, str]]:
    """Each stored document's origin and the trust a citation of it shows."""
    out = {}
    for doc in share.app.store.list_documents("docs"):
        trust = resolve_trust(doc.origin, doc.origin_chain, share.app.settings.trust.origins)
        out[doc.doc_id] = (doc.origin, trust.label)
    return out


def with_source_origins(share: Share, **system_origins: str) -> None:
    settings = share.app.settings
    share.app.settings = dataclasses.replace(
        settings, trust=dataclasses.replace(settings.trust, source_origins=system_origins)
    )


def test_a_folders_files_are_the_organisations_own_unless_marked_external(share: Share) -> None:
    share.meta("", acl=["group:staff"])
    share.write("handbook.md", "# Handbook\n\nBook trains to Osaka.")
    share.write("vendor/datasheet.md", "# Vendor datasheet\n\nThe router draws 12 W.")
    share.meta("vendor", acl=["group:staff"], origin="external_web")
    share.sync()

    assert origins(share) == {
        "files:handbook.md": ("human", "trusted"),
        "files:vendor/datasheet.md": ("external_web", "untrusted"),
    }
    assert not any("name no origin" in w for r in share.reports for w in r.warnings)


def test_changing_source_origins_applies_to_indexed_files_on_the_next_sync(share: Share) -> None:
    share.meta("", acl=["group:staff"])
    share.write("handbook.md", "# Handbook\n\nBook trains to Osaka.")
    share.write("vendor/datasheet.md", "# Vendor datasheet\n\nThe router draws 12 W.")
    share.meta("vendor", acl=["group:staff"], origin="external_web")
    share.sync()
    embedded = share.embedder.texts

    with_source_origins(share, files="external_platform")
    share.sync(permissions=False)

    assert origins(share) == {
        "files:handbook.md": ("external_platform", "untrusted"),
        "files:vendor/datasheet.md": ("external_web", "untrusted"),  # its metadata still wins
    }
    assert share.embedder.texts == embedded  # re-read, never re-embedded
    assert share.reports[-1].counts["fetched"] == 1

    with_source_origins(share)
    share.sync(permissions=False)
    assert origins(share)["files:handbook.md"] == ("human", "trusted")


def test_reverse_proof_a_version_without_the_origin_keeps_the_old_one(
    share: Share, monkeypatch: pytest.MonkeyPatch
) -> None:
    share.meta("", acl=["group:staff"])
    share.write("handbook.md", "# Handbook\n\nBook trains to Osaka.")
    share.sync()

    def metadata_only(self: FilesystemConnector, job: Any) -> str:
        meta = {k: v for k, v in job.metadata.items() if k != "acl"}
        info = job.path.stat()
        return f"{info.st_mtime_ns}:{info.st_size}:{json.dumps(meta, sort_keys=True)}"

    monkeypatch.setattr(FilesystemConnector, "_version", metadata_only)
    share.sync(permissions=False)
    with_source_origins(share, files="external_platform")
    share.sync(permissions=False)
    assert origins(share)["files:handbook.md"] == ("human", "trusted")
