"""``POST /v1/sources/{name}/notifications``: where a source pushes its change notifications.

No user token is asked for: the sender is a source system, and the source's connector
authenticates it (:class:`~clearance.sources.base.Notifiable`; docs/notifications.md). What
the route guarantees:

* **It reveals nothing about configuration.** An unknown source and a source that takes no
  notifications get the same 404, byte for byte — the one every unknown ``/v1`` path gets.
* **A refused notification changes nothing.** The connector's 401 or 400 is answered and no
  sync is queued.
* **It answers at once.** An accepted notice is queued for the scheduler (which gathers a
  source's notices into one sync), never synced while the sender waits; the answer is the
  connector's (202 for a change, the echoed token of a subscription handshake).
* **It is bounded.** The body is read up to :data:`MAX_NOTIFICATION_BYTES` (413 past it);
  the per-user rate limit does not apply (there is no user, and a source that is answered
  429 may drop its subscription), so checking one costs a constant-time comparison and a
  flood of accepted notices still coalesces into one sync per source and gathering period.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from clearance.api.errors import ErrorBody, error_body
from clearance.sources.notifications import NotificationReceiver

__all__ = ["MAX_NOTIFICATION_BYTES", "notifications_router"]

#: The largest notification body read (Graph batches up to 1,000 notifications; Drive and
#: Confluence send one small JSON object each).
MAX_NOTIFICATION_BYTES = 1 << 20

_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"description": "A handshake answered (the source's own format)"},
    202: {"description": "Accepted: the changed items are synced in the background"},
    400: {"model": ErrorBody, "description": "A malformed notification; nothing changed"},
    401: {"model": ErrorBody, "description": "The sender is not authenticated; nothing changed"},
    404: {"model": ErrorBody, "description": "No source of that name takes notifications"},
    413: {"model": ErrorBody, "description": "Body over the notification limit"},
    422: {"model": ErrorBody, "description": "Invalid request (the one error shape)"},
    503: {"model": ErrorBody, "description": "No scheduler runs now: the sender retries"},
}


def notifications_router() -> APIRouter:
    """The notification route; the app keeps its
    :class:`~clearance.sources.notifications.NotificationReceiver` in ``state.notifications``."""
    router = APIRouter(prefix="/v1", tags=["sources"])

    @router.post(
        "/sources/{name}/notifications",
        responses=_RESPONSES,
        status_code=202,
        response_class=Response,
        openapi_extra={
            "requestBody": {
                "required": False,
                "description": "The source's notification, as it sends it",
                "content": {"*/*": {"schema": {"type": "string"}}},
            }
        },
    )
    async def notification(name: str, request: Request) -> Response:
        """A change notification from source ``name``, checked by its connector; the sync it
        asks for runs in the background."""
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > MAX_NOTIFICATION_BYTES:
            return _too_large()
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > MAX_NOTIFICATION_BYTES:
                return _too_large()
            chunks.append(chunk)
        body = b"".join(chunks)
        receiver: NotificationReceiver = request.app.state.notifications
        headers = {k.lower(): v for k, v in request.headers.items()}
        query = {k: request.query_params.getlist(k)[0] for k in request.query_params}
        notice = await run_in_threadpool(receiver.receive, name, headers, query, body)
        if notice is None:  # the 404 of any unknown path
            return JSONResponse(error_body("not_found", "not found"), 404)
        return Response(notice.body, status_code=notice.status, media_type=notice.content_type)

    return router


def _too_large() -> JSONResponse:
    message = f"the notification is larger than {MAX_NOTIFICATION_BYTES} bytes"
    return JSONResponse(error_body("payload_too_large", message), 413)
