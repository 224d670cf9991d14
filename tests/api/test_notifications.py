"""``POST /v1/sources/{name}/notifications`` on a real server: a notification posted over
HTTP reaches the index through the background scheduler long before the next full
re-listing; an unauthenticated one is refused and changes nothing; an unknown source and a
source without notifications answer the same bytes; the secret never comes back out.

Waits are for conditions (a bounded poll keeps a broken build from hanging the suite), never
for durations; each security property has its reverse proof."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from clearance.api.app import create_app
from clearance.api.notifications import MAX_NOTIFICATION_BYTES
from clearance.app import Clearance
from clearance.model import Sensitivity
from clearance.sources import registry
from clearance.sources.base import Access, Connector, Notice, SourceContext, SourceDocument
from clearance.sources.memory import TOKEN_HEADER, MemoryConnector
from clearance.sources.service import source_status
from clearance.store.sqlite import SQLiteStore
from conftest import make_settings

from .conftest import serving_app

SECRET = "notify-me-if-you-can"
VARIABLE = "DRIVE_NOTIFICATION_SECRET"


class Quiet(MemoryConnector):
    """A source whose connector takes no notifications."""

    notification = None  # type: ignore[assignment]


class Leaky(MemoryConnector):
    """Leaky: takes any notification, authenticated or not."""

    def notification(self, headers: dict[str, str], query: dict[str, str], body: bytes) -> Notice:
        return super().notification({**headers, TOKEN_HEADER: SECRET}, query, body)


@dataclass
class Site:
    url: str
    app: Clearance
    drive: MemoryConnector

    def post(
        self, source: str = "drive", token: str | None = SECRET, **body: object
    ) -> httpx.Response:
        headers = {} if token is None else {TOKEN_HEADER: token}
        return httpx.post(
            f"{self.url}/v1/sources/{source}/notifications",
            content=json.dumps(body),
            headers={**headers, "Content-Type": "application/json"},
            timeout=10,
        )

    def found(self, user: str) -> set[str]:
        return {h.document.doc_id for h in self.app.search(user, "minutes").hits}


def until(condition: Callable[[], object], what: str) -> None:
    """Wait for ``condition()`` (a condition, not a duration: at most 20 s)."""
    for _ in range(400):
        if condition():
            return
        threading.Event().wait(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def doc(doc_id: str, *principals: str) -> SourceDocument:
    return SourceDocument(
        doc_id=doc_id,
        version="1",
        title=doc_id,
        uri=f"https://drive.test/{doc_id}",
        access=Access.of(*principals),
        text=f"Board minutes of {doc_id}.",
        sensitivity=Sensitivity.INTERNAL,
    )


def serve(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, connector: type[MemoryConnector]
) -> Iterator[Site]:
    """A server over two memory sources (``drive`` takes notifications, ``quiet`` does not)
    whose scheduler has done its first syncs; the full re-listing is 10 minutes away."""
    settings = make_settings(
        tmp_path,
        {
            "corpora": {"board": {"revocation_sla": "1h"}},
            "sources": {
                "drive": {
                    "kind": "memory",
                    "corpus": "board",
                    "permission_interval": "10m",
                    "credentials": {"notification_secret": VARIABLE},
                },
                "quiet": {"kind": "memory", "corpus": "board", "permission_interval": "10m"},
            },
        },
    )
    monkeypatch.setenv(VARIABLE, SECRET)
    drive = connector("drive")
    drive.put(doc("drive:a", "user:alice", "user:bob"))
    drive.put(doc("drive:b", "user:alice", "user:bob"))
    quiet = Quiet("quiet")

    def build(context: SourceContext) -> Connector:
        if context.source.name == "quiet":
            return quiet
        drive.secret = context.secret("notification_secret")
        return drive

    monkeypatch.setitem(registry._KINDS._factories, "memory", build)
    app = Clearance(settings, SQLiteStore(tmp_path / "index.db"), embedder=None)
    users = [{"id": u, "active": True, "attributes": {}} for u in ("alice", "bob")]
    app.sync_directory_data(json.dumps({"users": users, "groups": []}), "directory.json")
    try:
        with serving_app(create_app(settings, clearance=app)) as url:
            site = Site(url, app, drive)
            until(
                lambda: all(r["last_permission_sync"] for r in source_status(app)),
                "the first syncs",
            )
            assert site.found("alice") == {"drive:a", "drive:b"}
            yield site
    finally:
        app.close()


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Site]:
    yield from serve(tmp_path, monkeypatch, MemoryConnector)


def test_a_notification_posted_over_http_revokes_before_the_next_full_sync(site: Site) -> None:
    site.drive.access["drive:a"] = Access.of("user:bob")  # revoked at the source
    response = site.post(changed=["drive:a"])
    assert response.status_code == 202 and response.content == b""
    until(lambda: "drive:a" not in site.found("alice"), "the revocation to reach the index")
    assert site.found("bob") == {"drive:a", "drive:b"}
    assert site.drive.item_reads == [["drive:a"]]


def unauthenticated_notification(site: Site) -> tuple[int, list[list[str]], bool]:
    """A notification without the secret about a revoked item, then an authenticated one
    about another item; once that one was read: (the first's status, the item reads, does
    alice still read the first item — its revocation left for the full sync to find)."""
    site.drive.access["drive:a"] = Access.of("user:bob")
    status = site.post(token="guess", changed=["drive:a"]).status_code
    assert site.post(changed=["drive:b"]).status_code == 202
    until(lambda: any("drive:b" in r for r in site.drive.item_reads), "the authenticated notice")
    return status, site.drive.item_reads, "drive:a" in site.found("alice")


def test_an_unauthenticated_notification_is_refused_and_changes_nothing(site: Site) -> None:
    assert unauthenticated_notification(site) == (401, [["drive:b"]], True)
    for token in (None, ""):
        response = site.post(token=token, changed=None)
        assert response.status_code == 401
        assert response.json() == {
            "error": "unauthenticated",
            "message": "the notification is not authenticated",
        }


def test_reverse_proof_a_connector_that_skips_the_check_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for site in serve(tmp_path, monkeypatch, Leaky):
        status, reads, still = unauthenticated_notification(site)
        assert status == 202 and any("drive:a" in r for r in reads) and not still


def test_unknown_and_silent_sources_answer_the_same_bytes(site: Site) -> None:
    unknown = site.post(source="nowhere", changed=["drive:a"])
    silent = site.post(source="quiet", changed=["drive:a"])
    path = httpx.post(f"{site.url}/v1/nothing/here", content=b"{}", timeout=10)
    assert unknown.status_code == silent.status_code == 404
    assert unknown.content == silent.content == path.content
    assert unknown.headers.get("content-type") == silent.headers.get("content-type")


def test_the_subscription_handshake_is_echoed_as_text(site: Site) -> None:
    response = httpx.post(
        f"{site.url}/v1/sources/drive/notifications",
        params={"validationToken": "Validation: Testing client application"},
        timeout=10,
    )
    assert response.status_code == 200
    assert response.text == "Validation: Testing client application"
    assert response.headers["content-type"].startswith("text/plain")
    assert site.drive.item_reads == []


def test_malformed_and_oversized_notifications_change_nothing(site: Site) -> None:
    url = f"{site.url}/v1/sources/drive/notifications"
    headers = {TOKEN_HEADER: SECRET}
    for body in (b"not json", b"[]", b'{"changed": "drive:a"}', b'{"changed": [1]}'):
        assert httpx.post(url, content=body, headers=headers, timeout=10).status_code == 400
    big = b" " * (MAX_NOTIFICATION_BYTES + 1)
    assert httpx.post(url, content=big, headers=headers, timeout=10).status_code == 413
    assert site.post(changed=["drive:b"]).status_code == 202
    until(lambda: site.drive.item_reads, "the valid notice")
    assert site.drive.item_reads == [["drive:b"]]


def test_the_secret_never_comes_back_out(site: Site) -> None:
    refused = site.post(token="guess", changed=None)
    accepted = site.post(changed=None)
    assert refused.status_code == 401 and accepted.status_code == 202
    shown = json.dumps(source_status(site.app)) + refused.text + accepted.text
    assert SECRET not in shown and VARIABLE not in json.dumps(site.app.status(), default=str)
