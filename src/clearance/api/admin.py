"""The administrator routes: directory and ACL sync, ingestion, traces, audit and stats.

Each route is the HTTP door to an operator command and answers exactly that command's
``--json`` output; the tests compare them. The whole router sits behind one dependency (the
app's administrator check), so a route added here cannot forget it: an anonymous caller
gets 401 and a signed-in non-administrator 403 before any body is read.

Bodies are the documents the CLI reads from files. They have no file name, so errors name
``request body`` instead (``request body:3: key 'acl' appears twice in one object``), and
an invalid one is a 422 with nothing applied. A manifest has no folder of its own either:
it may only name files inside the configured ``[ingest] roots``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from starlette.concurrency import run_in_threadpool

from clearance.access.directory import Directory
from clearance.access.sync import AclSyncReport
from clearance.api.auth import Identity
from clearance.api.errors import ErrorBody
from clearance.app import Clearance, directory_sync_summary
from clearance.ingest.pipeline import IngestReport
from clearance.trace.log import parse_since

__all__ = ["BODY_SOURCE", "admin_router"]

#: How errors name the request body (a file name on the command line).
BODY_SOURCE = "request body"

_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorBody, "description": "No valid credential"},
    403: {"model": ErrorBody, "description": "Not an administrator"},
    413: {"model": ErrorBody, "description": "Body over [server] max_body_bytes"},
    422: {"model": ErrorBody, "description": "Invalid input, naming where; nothing applied"},
}


def _raw_body(description: str, *media: str) -> dict[str, Any]:
    """The OpenAPI entry of a body read as raw bytes (it is parsed by the engine)."""
    return {
        "requestBody": {
            "required": True,
            "description": description,
            "content": {m: {"schema": {"type": "string"}} for m in media},
        }
    }


def _since(engine: Clearance, since: str | None) -> Any:
    return None if since is None else parse_since(since, engine.clock(), "since")


def _actor(request: Request) -> str:
    """The administrator a request came from (the router's dependency identified it)."""
    return str(request.state.user_id)


def _engine(request: Request) -> Clearance:
    engine: Clearance = request.app.state.engine
    return engine


Engine = Annotated[Clearance, Depends(_engine)]


def admin_router(administrator: Callable[..., Identity]) -> APIRouter:
    """The administrator routes, every one behind ``administrator`` (a FastAPI dependency
    that raises 401/403 for anyone else)."""
    router = APIRouter(
        prefix="/v1", tags=["admin"], dependencies=[Depends(administrator)], responses=_ERRORS
    )

    @router.post(
        "/directory/sync",
        openapi_extra=_raw_body(
            "A directory document: Clearance JSON or SCIM 2.0", "application/json"
        ),
    )
    async def directory_sync(
        request: Request,
        engine: Engine,
        delta: bool = False,
        allow_empty: bool = False,
    ) -> dict[str, Any]:
        """Apply a directory snapshot (or a delta with ``?delta=true``):
        ``clearance directory sync --json``. A snapshot with no users is refused unless
        ``?allow_empty=true``."""
        data = await request.body()

        def run() -> Directory:
            with engine.actions().action(_actor(request), "directory.sync", BODY_SOURCE) as act:
                synced = engine.sync_directory_data(
                    data, BODY_SOURCE, delta=delta, allow_empty=allow_empty
                )
                act.detail.update(mode="delta" if delta else "snapshot", version=synced.version)
                return synced

        return directory_sync_summary(await run_in_threadpool(run), delta=delta)

    @router.post(
        "/acl/sync",
        openapi_extra=_raw_body(
            'JSONL of {"doc_id", "acl"} lines, or a JSON array of them',
            "application/x-ndjson",
            "application/json",
        ),
    )
    async def acl_sync(
        request: Request,
        engine: Engine,
        corpus: Annotated[str, Query(min_length=1)],
        delta: bool = False,
        read_at: Annotated[str | None, Query(min_length=1, max_length=64)] = None,
    ) -> dict[str, object]:
        """Apply document ACLs to one corpus in one transaction, or nothing:
        ``clearance acl sync --json``. ``read_at`` (ISO 8601 with a time zone) is when the
        export began reading the source; the revocation SLA counts from it (default: now)."""
        data = await request.body()

        def run() -> AclSyncReport:
            with engine.actions().action(_actor(request), "acl.sync", corpus) as act:
                synced = engine.sync_acl_data(
                    data, BODY_SOURCE, corpus, delta=delta, read_at=read_at
                )
                act.detail.update(changed=synced.changed)
                return synced

        report = await run_in_threadpool(run)
        return report.to_dict()

    @router.post(
        "/ingest",
        openapi_extra=_raw_body(
            "A JSONL manifest; paths inside the configured [ingest] roots (relative to the first)",
            "application/x-ndjson",
        ),
    )
    async def ingest(
        request: Request,
        engine: Engine,
        corpus: str | None = None,
    ) -> dict[str, Any]:
        """Ingest a manifest: ``clearance ingest --manifest … --json``. A refused line (bad
        metadata, a path outside the roots) fails alone; the others are ingested. Without
        ``[ingest] roots`` the whole manifest is refused with 422."""
        data = await request.body()

        def run() -> IngestReport:
            target = corpus or "(by metadata)"
            with engine.actions().action(_actor(request), "ingest", target) as act:
                done = engine.ingest([], corpus=corpus, manifest_data=(BODY_SOURCE, data))
                act.detail.update(counts=dict(done.counts))
                return done

        report = await run_in_threadpool(run)
        return report.to_dict()

    @router.get("/traces")
    def traces(
        engine: Engine,
        since: str | None = None,
        limit: Annotated[int, Query(ge=1, le=10_000)] = 50,
    ) -> dict[str, Any]:
        """Recent trace records, newest first, pseudonymous and without text:
        ``clearance trace list --json``."""
        records = engine.trace_log().entries(since=_since(engine, since), limit=limit)
        return {"count": len(records), "traces": records}

    @router.get("/audit")
    def audit(engine: Engine, doc: Annotated[str, Query(min_length=1)]) -> dict[str, Any]:
        """Every request that retrieved or cited ``doc``: ``clearance audit --json``."""
        events = engine.trace_log().audit(doc)
        return {"doc_id": doc, "count": len(events), "events": events}

    @router.get("/actions")
    def actions(
        engine: Engine,
        actor: Annotated[str | None, Query(min_length=1)] = None,
        action: Annotated[str | None, Query(min_length=1)] = None,
        since: str | None = None,
        limit: Annotated[int, Query(ge=1, le=10_000)] = 50,
    ) -> dict[str, Any]:
        """Administrator actions, newest first: ``clearance audit --actor … --json``."""
        entries = engine.actions().entries(
            actor=actor, action=action, since=_since(engine, since), limit=limit
        )
        return {"count": len(entries), "actions": entries}

    @router.get("/stats")
    def stats(engine: Engine, since: str | None = None) -> dict[str, Any]:
        """Outcomes per assistant, denied- and stale-source rates, citations, latency:
        ``clearance stats --json``."""
        data: dict[str, Any] = engine.trace_log().stats(since=_since(engine, since))
        return data

    return router
