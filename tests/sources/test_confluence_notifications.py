"""Confluence Cloud change notifications: a Connect webhook signed by the fake Confluence
reaches the index through a targeted sync; a delivery that is not signed for this request is
refused and changes nothing; a space permission change asks for a full permission sync; a
restriction names the content below it from the last listing; ``permissions_of`` reads access
as the full permission sync does; the shared secret never comes back out.

Each security property has a reverse proof: a deliberately leaky connector that the same
assertion catches."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from clearance.app import Clearance
from clearance.errors import SourceError
from clearance.secrets import Secret
from clearance.sources import confluence
from clearance.sources.base import Access, Notice
from clearance.sources.confluence import ConfluenceConnector, confluence_connector, parse_options
from clearance.sources.notifications import NoticeQueue, NotificationReceiver
from clearance.sources.service import source_status
from clearance.sources.sync import SourceSync, SyncReport
from confluence_server import EMAIL, SHARED_SECRET, SPACE_KEY, TOKEN, Delivery, FakeConfluence

from .conftest import Clock
from .connector_sync import SyncedSource, indexed_app
from .test_confluence import ALICE, BOB, CAROL, doc

ENV = {"CONFLUENCE_API_TOKEN": TOKEN, "CONFLUENCE_NOTIFICATION_SECRET": SHARED_SECRET}
BELOW_P = {doc(n) for n in ("p", "child", "leaf", "att9", "c1")}
EVERYTHING = BELOW_P | {doc("home"), doc("other")}


@dataclass
class Wiki(SyncedSource):
    source = "wiki"
    wiki: FakeConfluence
    app: Clearance
    clock: Clock
    waits: list[float] = field(default_factory=list)
    reports: list[SyncReport] = field(default_factory=list)
    listings_before: int = 0  # attachment and comment listings before the targeted sync

    def listings(self) -> int:
        ends = ("/attachments", "/footer-comments")
        return sum(r.path.partition("?")[0].endswith(ends) for r in self.wiki.requests)

    def connector(self) -> ConfluenceConnector:
        options = parse_options("wiki", self.app.settings.sources["wiki"].options)
        return confluence_connector(
            "wiki",
            options,
            Secret(TOKEN),
            sleep=self.waits.append,
            notification_secret=Secret(SHARED_SECRET),
        )

    def found(self, who: str, word: str) -> set[str]:
        hits = self.app.search(who, word, k=50).hits
        return {h.document.doc_id for h in hits if word.lower() in h.chunk.text.lower()}

    def notify(self, delivery: Delivery) -> Notice:
        """What a connector that never synced (the server's checker) makes of ``delivery``."""
        checker = self.connector()
        try:
            return checker.notification(delivery.headers, delivery.query, delivery.body)
        finally:
            checker.close()

    def targeted(self, doc_ids: frozenset[str] | None) -> SyncReport:
        assert doc_ids is not None
        connector = self.connector()
        try:
            engine = SourceSync(self.app, self.app.settings.sources["wiki"], connector)
            report = engine.targeted(doc_ids)
        finally:
            connector.close()
        self.reports.append(report)
        return report

    def receiver(self) -> tuple[NotificationReceiver, list[Notice]]:
        """The server's receiver for this app, forwarding to a list."""
        forwarded: list[Notice] = []
        receiver = NotificationReceiver(self.app, ENV)
        receiver.attach(lambda name, notice: forwarded.append(notice) is None)
        return receiver, forwarded


@pytest.fixture
def wiki(tmp_path: Path) -> Iterator[Wiki]:
    with FakeConfluence() as fake:
        config = {
            "kind": "confluence",
            "credentials": {
                "api_token": "CONFLUENCE_API_TOKEN",
                "notification_secret": "CONFLUENCE_NOTIFICATION_SECRET",
            },
            "options": {"base_url": fake.base_url, "email": EMAIL, "space_key": SPACE_KEY},
        }
        with indexed_app(
            tmp_path, "wiki", config, people=(ALICE, BOB, CAROL), staff_group=False
        ) as (app, clock):
            fake.groups["g-eng"] = [ALICE, BOB]
            yield Wiki(fake, app, clock)


def arrange(site: Wiki) -> None:
    """home / p / child / leaf (pages), an attachment and a comment on child; other (root)."""
    wiki = site.wiki
    wiki.grant_space("group", "g-eng")
    wiki.add_page("home", "<p>Ledger home.</p>")
    wiki.add_page("p", "<p>Ledger plan.</p>", "home")
    wiki.add_page("child", "<p>Ledger child.</p>", "p")
    wiki.add_page("leaf", "<p>Ledger leaf.</p>", "child")
    wiki.add_page("other", "<p>Ledger other.</p>")
    wiki.attach("child", "att9", "rota.txt", "text/plain", b"Ledger rota.")
    wiki.comment("c1", "child", "<p>Ledger comment.</p>")
    site.synced()
    assert site.found(BOB, "ledger") == EVERYTHING


def bob_after_restricting_p(site: Wiki) -> set[str]:
    """Alice alone may read p (and so everything below it): what bob finds once the
    webhook's targeted sync ran."""
    arrange(site)
    site.wiki.restrict("p", users=(ALICE,))
    notice = site.notify(site.wiki.webhook("content_permissions_updated", "p"))
    assert notice.status == 202 and not notice.content
    site.listings_before = site.listings()
    report = site.targeted(notice.doc_ids)
    assert report.ok and report.kind == "notified", report.error
    return site.found(BOB, "ledger")


# --------------------------------------------------------------------------- the whole path


def test_a_restriction_reaches_the_index_through_its_webhook(wiki: Wiki) -> None:
    assert bob_after_restricting_p(wiki) == {doc("home"), doc("other")}
    assert wiki.found(ALICE, "ledger") == EVERYTHING
    (report,) = wiki.reports[-1:]
    assert report.counts["revoked"] == len(BELOW_P)
    assert wiki.listings() == wiki.listings_before  # no page's attachments or comments listed


def test_the_webhook_names_the_content_and_everything_below_it(wiki: Wiki) -> None:
    arrange(wiki)
    assert wiki.notify(wiki.wiki.webhook("content_permissions_updated", "p")).doc_ids == BELOW_P
    leaf = wiki.notify(wiki.wiki.webhook("content_permissions_updated", "leaf"))
    assert leaf.doc_ids == {doc("leaf")}
    moved = wiki.notify(wiki.wiki.webhook("page_moved", "child"))
    assert moved.doc_ids == {doc(n) for n in ("child", "leaf", "att9", "c1")} and moved.content


def test_reverse_proof_naming_only_the_restricted_page_is_caught(
    wiki: Wiki, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        confluence._Hierarchy, "below", lambda self, content_id: frozenset({content_id})
    )
    assert bob_after_restricting_p(wiki) != {doc("home"), doc("other")}


def test_reverse_proof_permissions_of_that_ignores_ancestors_is_caught(
    wiki: Wiki, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ConfluenceConnector, "_chain", lambda self, page_id: [page_id])
    assert doc("leaf") in bob_after_restricting_p(wiki)


def test_without_a_listing_a_restriction_asks_for_a_full_permission_sync(wiki: Wiki) -> None:
    arrange(wiki)
    wiki.wiki.add_page("late", "<p>Ledger late.</p>", "p")  # not listed yet
    assert wiki.notify(wiki.wiki.webhook("content_permissions_updated", "late")).doc_ids is None
    with confluence._known_lock:
        confluence._known.clear()  # a process that never listed the space
    notice = wiki.notify(wiki.wiki.webhook("content_permissions_updated", "p"))
    assert notice.status == 202 and notice.doc_ids is None


# --------------------------------------------------------------------------- other events


def test_a_space_permission_change_runs_a_full_permission_sync(wiki: Wiki) -> None:
    arrange(wiki)
    notice = wiki.notify(wiki.wiki.webhook("space_permissions_updated"))
    assert notice.status == 202 and notice.doc_ids is None and not notice.content
    queue = NoticeQueue(debounce_s=0)
    queue.add("wiki", notice, datetime.now(UTC))
    ((name, pending),) = queue.take_due(datetime.now(UTC))
    assert name == "wiki" and pending.full

    wiki.wiki.space_permissions.clear()
    wiki.wiki.grant_space("user", ALICE)
    wiki.synced(content=False)
    assert wiki.found(BOB, "ledger") == set() and wiki.found(ALICE, "ledger") == EVERYTHING

    elsewhere = wiki.notify(wiki.wiki.webhook("space_permissions_updated", space_key="HR"))
    assert elsewhere.status == 202 and not elsewhere.changes


def test_content_events_name_what_they_carry_and_make_the_content_sync_due(wiki: Wiki) -> None:
    arrange(wiki)
    cases = {
        ("page_updated", "home"): {doc("home")},
        ("comment_created", "c1"): {doc("c1")},
        ("attachment_updated", "att9"): {doc("att9")},
        ("page_trashed", "leaf"): {doc("leaf")},
    }
    for (event, content_id), named in cases.items():
        notice = wiki.notify(wiki.wiki.webhook(event, content_id))
        assert (notice.status, notice.doc_ids, notice.content) == (202, named, True), event
    ignored = wiki.notify(wiki.wiki.webhook("label_added", "home"))
    assert ignored.status == 202 and not ignored.changes


def test_a_malformed_body_is_refused(wiki: Wiki) -> None:
    arrange(wiki)
    good = wiki.wiki.webhook("content_permissions_updated", "p")
    for body in (b"not json", b"[1, 2]"):
        notice = wiki.notify(replace(good, body=body))
        assert notice.status == 400 and not notice.changes


# --------------------------------------------------------------------------- authentication


def forgeries(fake: FakeConfluence) -> dict[str, Delivery]:
    """Deliveries that must not be taken: unsigned, signed with another secret, expired,
    signed for another event, for another source, or with no algorithm."""
    good = fake.webhook("content_permissions_updated", "p")
    unsigned = {k: v for k, v in good.headers.items() if k != "authorization"}
    head, claims, _ = good.headers["authorization"].removeprefix("JWT ").split(".")
    none_alg = confluence._unbase64(head).replace(b"HS256", b"none")
    unsigned_token = f"{base64.urlsafe_b64encode(none_alg).rstrip(b'=').decode()}.{claims}."
    other_event = fake.webhook("label_added", "p")
    return {
        "no credential": replace(good, headers=unsigned),
        "basic credential": replace(good, headers={**unsigned, "authorization": "Basic eDp5"}),
        "wrong secret": fake.webhook("content_permissions_updated", "p", secret="guess"),
        "expired": fake.webhook("content_permissions_updated", "p", now=1_000_000_000),
        "another event": replace(other_event, query={**other_event.query, "event": "page_moved"}),
        "another source": fake.webhook(
            "content_permissions_updated", "p", path="/v1/sources/other/notifications"
        ),
        "alg none": replace(good, headers={**unsigned, "authorization": f"JWT {unsigned_token}"}),
    }


def forgeries_taken(site: Wiki) -> list[str]:
    """The forgeries the server's receiver took (forwarded), after checking each one was
    answered 401 and left every ACL as it was."""
    arrange(site)
    site.wiki.restrict("p", users=(ALICE,))
    receiver, forwarded = site.receiver()
    taken: list[str] = []
    try:
        for name, delivery in forgeries(site.wiki).items():
            before = len(forwarded)
            notice = receiver.receive("wiki", delivery.headers, delivery.query, delivery.body)
            assert notice is not None
            if len(forwarded) > before:
                taken.append(name)
                site.targeted(notice.doc_ids)
            else:
                assert notice.status == 401 and not notice.changes, name
    finally:
        receiver.close()
    return taken


def test_a_delivery_not_signed_for_this_request_is_refused_and_changes_nothing(
    wiki: Wiki,
) -> None:
    assert forgeries_taken(wiki) == []
    assert wiki.found(BOB, "ledger") == EVERYTHING  # nothing re-read
    receiver, forwarded = wiki.receiver()
    try:
        good = wiki.wiki.webhook("content_permissions_updated", "p")
        notice = receiver.receive("wiki", good.headers, good.query, good.body)
    finally:
        receiver.close()
    assert notice is not None and notice.status == 202 and len(forwarded) == 1


def test_reverse_proof_a_connector_that_skips_the_check_is_caught(
    wiki: Wiki, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ConfluenceConnector, "_authentic", lambda self, auth, query: True)
    assert forgeries_taken(wiki) != []
    assert wiki.found(BOB, "ledger") != EVERYTHING


def test_reverse_proof_a_check_without_the_query_hash_is_caught(
    wiki: Wiki, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Leaky: the signature and expiry are checked, but the token's qsh is taken as is."""
    presented: dict[str, object] = {}
    original = ConfluenceConnector._authentic

    def reading_the_claims(
        self: ConfluenceConnector, authorization: str, query: dict[str, str]
    ) -> bool:
        parts = authorization.removeprefix("JWT ").split(".")
        if len(parts) == 3:
            presented.update(json.loads(confluence._unbase64(parts[1])))
        return original(self, authorization, query)

    monkeypatch.setattr(ConfluenceConnector, "_authentic", reading_the_claims)
    monkeypatch.setattr(
        ConfluenceConnector, "_query_hash", lambda self, query: str(presented.get("qsh"))
    )
    assert set(forgeries_taken(wiki)) == {"another event", "another source"}


def test_without_a_secret_every_notification_is_refused(wiki: Wiki) -> None:
    arrange(wiki)
    options = parse_options("wiki", wiki.app.settings.sources["wiki"].options)
    connector = confluence_connector("wiki", options, Secret(TOKEN))
    good = wiki.wiki.webhook("content_permissions_updated", "p")
    try:
        assert connector.notification(good.headers, good.query, good.body).status == 401
    finally:
        connector.close()


def secret_shown(site: Wiki, leaky: bool = False) -> bool:
    """Whether the shared secret appears in any refusal, report, status or error."""
    arrange(site)
    connector = site.connector()
    if leaky:
        original = connector.notification

        def echoing(headers: dict[str, str], query: dict[str, str], body: bytes) -> Notice:
            notice = original(headers, query, body)
            if notice.refused:
                return Notice.refuse(401, f"expected a token signed with {SHARED_SECRET}")
            return notice

        connector.notification = echoing  # type: ignore[method-assign]
    shown: list[str] = [repr(connector)]
    for delivery in forgeries(site.wiki).values():
        shown.append(connector.notification(delivery.headers, delivery.query, delivery.body).body)
    connector.close()
    site.wiki.fault("/pages", 500, times=10)
    failed = site.targeted(frozenset({doc("p")}))
    shown.append(failed.error or "")
    shown.extend(json.dumps(r.to_dict()) for r in site.reports)
    shown.append(json.dumps(source_status(site.app)))
    return any(SHARED_SECRET in text for text in shown)


def test_the_secret_never_appears_in_answers_reports_status_or_errors(wiki: Wiki) -> None:
    assert not secret_shown(wiki)


def test_reverse_proof_a_refusal_that_echoes_the_secret_is_caught(wiki: Wiki) -> None:
    assert secret_shown(wiki, leaky=True)


# --------------------------------------------------------------------------- permissions_of


def test_permissions_of_reads_items_it_never_listed_and_leaves_out_what_is_gone(
    wiki: Wiki,
) -> None:
    arrange(wiki)
    with confluence._known_lock:
        confluence._known.clear()
    wiki.wiki.restrict("child", users=(ALICE, CAROL))
    wiki.wiki.delete("other")
    connector = wiki.connector()
    try:
        names = ["child", "att9", "c1", "other", "nothing"]
        found = {c.doc_id: c.access for c in connector.permissions_of([doc(n) for n in names])}
    finally:
        connector.close()
    alice = Access.of(f"user:{ALICE}")
    assert found == {doc("child"): alice, doc("att9"): alice, doc("c1"): alice}


def test_permissions_of_fails_when_the_source_is_down_and_the_items_close(wiki: Wiki) -> None:
    arrange(wiki)
    wiki.wiki.fault("/pages", 503, times=20)
    connector = wiki.connector()
    try:
        with pytest.raises(SourceError):
            connector.permissions_of([doc("p")])
    finally:
        connector.close()
    report = wiki.targeted(frozenset({doc("p")}))
    assert not report.ok
    assert doc("p") not in wiki.found(ALICE, "ledger") | wiki.found(BOB, "ledger")


def test_permissions_of_states_unreadable_restrictions_as_nobody(wiki: Wiki) -> None:
    arrange(wiki)
    wiki.wiki.fault("/content/child/restriction/", 403, times=5)
    connector = wiki.connector()
    try:
        (change,) = connector.permissions_of([doc("child")])
    finally:
        connector.close()
    assert change.access.unrepresentable is not None and "403" in change.access.unrepresentable
