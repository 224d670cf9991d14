"""``clearance sync --watch``'s scheduler: a 2-second-SLA corpus keeps serving while its
source answers, fails closed once the source stops answering, and serves again when it comes
back — for a folder, and for the fake Graph on loopback. The clock is the test's: ticks are
driven by hand, retries record their waits instead of sleeping, and nothing is timed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clearance.sources import registry
from clearance.sources.base import Connector, SourceContext
from clearance.sources.graph import graph_connector, parse_options
from clearance.sources.scheduler import Scheduler
from clearance.sources.service import source_status
from graph_server import CLIENT_SECRET

from .conftest import Share, make_share
from .test_graph import ALICE, Tenant, doc, make_tenant, user


def served_after_the_source_went_away(share: Share) -> tuple[bool, bool]:
    """(served while healthy, served 2.5 s after the source stopped answering)."""
    share.meta("", acl=["group:staff"])
    share.write("plan.md", "Reorganisation plan.")
    scheduler = Scheduler(share.app)
    scheduler.tick()
    healthy = True
    for _ in range(6):  # 3 s of healthy ticks, permissions due every 0.5 s
        share.clock.advance(0.5)
        scheduler.tick()
        healthy = healthy and share.found("alice", "reorganisation") == {"files:plan.md"}
    share.root.rename(share.root.with_name("unplugged"))
    for _ in range(5):
        share.clock.advance(0.5)
        scheduler.tick()
    return healthy, bool(share.found("alice", "reorganisation"))


def test_watch_keeps_a_2s_sla_corpus_serving_and_fails_it_closed_when_the_source_stops(
    tmp_path: Path,
) -> None:
    for share in make_share(tmp_path, sla="2s"):
        assert share.app.settings.sources["share"].permission_interval_s == 0.5
        assert served_after_the_source_went_away(share) == (True, False)
        row = source_status(share.app)[0]
        assert row["state"] == "failing" and row["corpus_failing_closed"]
        assert "does not exist" in row["last_error"]
        assert share.app.store.get_document("files:plan.md") is not None  # closed, not deleted

        share.root.with_name("unplugged").rename(share.root)  # the source answers again
        share.clock.advance(0.5)
        Scheduler(share.app).tick()
        assert share.found("alice", "reorganisation") == {"files:plan.md"}
        assert source_status(share.app)[0]["state"] == "ok"


def test_reverse_proof_a_scheduler_that_refreshes_the_clock_on_failure_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_tick = Scheduler.tick

    def careless(self: Scheduler) -> list[object]:
        reports = real_tick(self)
        self.runtime.store.record_acl_sync("docs", self.clock())  # "it ran, so it is fresh"
        return list(reports)

    monkeypatch.setattr(Scheduler, "tick", careless)
    for share in make_share(tmp_path, sla="2s"):
        assert served_after_the_source_went_away(share) == (True, True)


def test_permissions_are_synced_more_often_than_content(tmp_path: Path) -> None:
    for share in make_share(tmp_path, sla="2s"):
        share.meta("", acl=["group:staff"])
        share.write("plan.md", "Reorganisation plan.")
        scheduler = Scheduler(share.app)
        kinds = [r.kind for r in scheduler.tick()]
        for _ in range(4):
            share.clock.advance(0.5)
            kinds += [r.kind for r in scheduler.tick()]
        assert kinds.count("permissions") == 5 and kinds.count("content") == 1


# --------------------------------------------------------------------------- over HTTP


def quiet_graph(tenant: Tenant, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scheduler builds the Graph connector from settings, as ``--watch`` does, with the
    secret from the environment; only its retry waits are recorded instead of slept."""
    monkeypatch.setenv("GRAPH_CLIENT_SECRET", CLIENT_SECRET)

    def build(context: SourceContext) -> Connector:
        options = parse_options(context.source.name, context.source.options)
        secret = context.secret("client_secret")
        return graph_connector(context.source.name, options, secret, sleep=tenant.waits.append)

    monkeypatch.setitem(registry._KINDS._factories, "graph", build)


def test_watch_keeps_a_graph_corpus_serving_and_fails_it_closed_when_graph_stops_answering(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for tenant in make_tenant(tmp_path, sla="2s"):
        quiet_graph(tenant, monkeypatch)
        tenant.graph.share("root", user("u-alice"))
        tenant.graph.add_file("plan", "Reorganisation plan.")
        scheduler = Scheduler(tenant.app)
        assert all(r.ok for r in scheduler.tick())
        served = []
        for _ in range(6):  # 3 s of healthy ticks, permissions due every 0.5 s
            tenant.clock.advance(0.5)
            assert all(r.ok for r in scheduler.tick())
            served.append(tenant.found(ALICE, "reorganisation") == {doc("plan")})
        assert all(served)

        tenant.graph.fault("", 503, times=None)  # Graph answers nothing but 503 from now on
        for _ in range(5):
            tenant.clock.advance(0.5)
            assert not any(r.ok for r in scheduler.tick())
        assert tenant.found(ALICE, "reorganisation") == set()
        row = source_status(tenant.app)[0]
        assert row["state"] == "failing" and row["corpus_failing_closed"]
        assert "503" in row["last_error"] and CLIENT_SECRET not in json.dumps(row)
        assert tenant.waits  # each sync retried before giving up, without sleeping
        assert tenant.app.store.get_document(doc("plan")) is not None  # closed, not deleted

        tenant.graph.faults.clear()  # Graph answers again
        tenant.clock.advance(0.5)
        assert all(r.ok for r in scheduler.tick())
        assert tenant.found(ALICE, "reorganisation") == {doc("plan")}
        assert source_status(tenant.app)[0]["state"] == "ok"
