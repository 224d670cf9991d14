"""``clearance serve`` keeps configured sources in step: its lifespan runs the scheduler on a
background thread and stops it on shutdown."""

from __future__ import annotations

import threading

import anyio

from clearance.api.app import create_app
from clearance.sources.state import StateTable

from .conftest import Share


def test_the_server_lifespan_syncs_configured_sources(share: Share) -> None:
    share.meta("", acl=["group:staff"])
    share.write("plan.md", "Reorganisation plan.")
    app = create_app(share.app.settings, clearance=share.app)
    synced = threading.Event()

    def first_sync() -> None:
        # Waits for the background thread's first complete permission sync (a condition,
        # not a duration: the bound only keeps a broken build from hanging the suite).
        for _ in range(400):
            if StateTable(share.app.store).get("share").permission_synced_at is not None:
                synced.set()
                return
            threading.Event().wait(0.05)

    async def serve_briefly() -> None:
        async with app.router.lifespan_context(app):
            await anyio.to_thread.run_sync(first_sync)

    anyio.run(serve_briefly)

    assert synced.is_set()
    assert share.app.store.get_document("files:plan.md") is not None
    assert not any(t.name == "clearance-sources" for t in threading.enumerate())
