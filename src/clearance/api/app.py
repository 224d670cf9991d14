"""The HTTP API: one hot :class:`~clearance.app.Clearance` behind authenticated routes.

Every route that returns data goes through the same engine calls as the CLI — ``search``,
``ask``, the access control's ``decide`` — with the user an :class:`Authenticator` vouched
for, so the CLI's guarantees hold unchanged: same authorisation, same egress guard, same
refusal texts, same traces. Engine calls block, so the routes are plain (sync) functions,
which FastAPI runs in its threadpool.

Every error is ``{"error": code, "message": text}`` (see :mod:`clearance.api.errors`),
including validation errors, unknown routes and oversize bodies.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Annotated, Any

import anyio
from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from clearance.answer.result import AnswerResult
from clearance.api import metrics
from clearance.api.auth import Authenticator, Identity, default_authenticators, request_headers
from clearance.api.errors import (
    SIGN_IN_REQUIRED,
    ErrorBody,
    Forbidden,
    PayloadTooLarge,
    Unauthenticated,
    error_body,
    status_of,
)
from clearance.api.limits import Limiter, RateLimited, limiter_of
from clearance.api.sessions import SessionStore, SessionSweeper
from clearance.api.streaming import Asker
from clearance.api.streams import StreamGuard, TooManyStreams
from clearance.api.ui import SecurityHeaders, install_ui, not_found_page
from clearance.api.views import assistants_for, preview
from clearance.app import Clearance
from clearance.config import Settings
from clearance.errors import ClearanceError, ConfigError, NotFoundError
from clearance.sources.notifications import NotificationReceiver
from clearance.sources.scheduler import BackgroundScheduler

__all__ = ["API_VERSION", "create_app", "error_response"]

#: The API's version in the OpenAPI schema: the ``/v1`` contract, not the package version.
API_VERSION = "1"

# --------------------------------------------------------------------------- request bodies


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str
    assistant: str | None = None
    k: int | None = Field(default=None, ge=1, le=1000)


class AskRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str
    assistant: str | None = None


# --------------------------------------------------------------------------- response bodies
# They pin the JSON of `clearance ask --json` and `clearance search --json` in the OpenAPI
# schema; tests check the API's JSON equals the CLI's, so a new field fails loudly.


class CitationBody(BaseModel):
    doc_id: str
    title: str
    locator: str
    uri: str
    trust: str


class ResolvedPeriodBody(BaseModel):
    text: str
    period: str


class CorrectionBody(BaseModel):
    written: str
    read_as: str


class AnswerBody(BaseModel):
    """``AnswerResult.to_dict()``: the contract of ``clearance ask --json``."""

    status: str
    answer: str
    citations: list[CitationBody]
    route: str
    trace_id: str
    flags: list[str]
    assumptions: list[str]
    missing: list[str]
    options: list[str]
    resolved_periods: list[ResolvedPeriodBody]
    corrections: list[CorrectionBody]


class SearchRow(BaseModel):
    rank: int
    doc_id: str
    title: str
    locator: str
    uri: str
    corpus: str
    sensitivity: str
    score: float
    lexical_rank: int | None
    vector_rank: int | None
    text: str


class SearchBody(BaseModel):
    """The contract of ``clearance search --json``."""

    user: str
    query: str
    refused: str | None
    results: list[SearchRow]


def _errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI entries for the errors a route may answer, all of the one shape."""
    texts = {
        401: "No valid credential (with WWW-Authenticate: Bearer)",
        403: "Not an administrator",
        404: "Not found (an unreadable document is not found too)",
        413: "Body over [server] max_body_bytes",
        422: "Invalid input: invalid_request or bad_question",
        429: "Over [server] rate_limit for this user, or streams_per_user streams open "
        "(with Retry-After, in seconds)",
        503: "degraded: the model failed or [server] request_timeout passed (fixed text)",
    }
    return {s: {"model": ErrorBody, "description": texts[s]} for s in statuses}


_BODY = _errors(401, 404, 413, 422)


# --------------------------------------------------------------------------- body limit


def replaying(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands the app ``body`` (already read whole from ``receive``) as
    one message, then passes on whatever ``receive`` says next (a disconnect)."""
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if replayed:
            return await receive()
        replayed = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


async def read_body(receive: Receive, limit: int | None = None) -> bytes | None:
    """The whole request body from ``receive``, or ``None`` when the client went away
    before sending it; :class:`PayloadTooLarge` as soon as more than ``limit`` bytes came."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        if limit is not None and size > limit:
            raise PayloadTooLarge(f"the request body is larger than {limit} bytes")
        if not message.get("more_body", False):
            return b"".join(chunks)


@dataclass(eq=False)
class BodyLimit:
    """Refuses request bodies over ``limit`` bytes with 413, counting what actually arrives
    (a chunked body has no Content-Length to trust). The body is buffered — it is at most
    ``limit`` bytes — and replayed to the app."""

    app: ASGIApp
    limit: int

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name == b"content-length" and value.isdigit() and int(value) > self.limit:
                await self._refuse(send)
                return
        try:
            body = await read_body(receive, self.limit)
        except PayloadTooLarge:
            await self._refuse(send)
            return
        if body is not None:
            await self.app(scope, replaying(body, receive), send)

    async def _refuse(self, send: Send) -> None:
        error = PayloadTooLarge(f"the request body is larger than {self.limit} bytes")
        response = JSONResponse(
            error.to_dict(), status_code=error.status, headers={"Connection": "close"}
        )
        await response({"type": "http"}, _no_receive, send)


async def _no_receive() -> Message:
    return {"type": "http.disconnect"}


# --------------------------------------------------------------------------- the app


def _validation_message(exc: RequestValidationError) -> str:
    """The first problem, naming where it is and never quoting the input."""
    errors = exc.errors()
    if not errors:
        return "invalid request"
    first = errors[0]
    where = ".".join(str(p) for p in first.get("loc", ()) if p != "body") or "body"
    if first.get("type") == "json_invalid":
        return "the request body is not valid JSON"
    return f"{where}: {first.get('msg', 'invalid')}"


def error_response(exc: ClearanceError) -> JSONResponse:
    """``exc`` in the one error shape with its HTTP status, and the header that status
    calls for: ``WWW-Authenticate`` on a 401, ``Retry-After`` on a 429."""
    headers = {"WWW-Authenticate": "Bearer"} if isinstance(exc, Unauthenticated) else None
    if isinstance(exc, RateLimited | TooManyStreams):
        headers = {"Retry-After": str(exc.retry_after)}
    return JSONResponse(exc.to_dict(), status_code=status_of(exc), headers=headers)


def _identify(request: Request) -> Identity:
    headers = request_headers(request.headers.items())
    peer = request.client.host if request.client else None
    authenticators: list[Authenticator] = request.app.state.authenticators
    for authenticator in authenticators:
        identity = authenticator.authenticate(headers, peer)
        if identity is not None:
            limiter: Limiter | None = request.app.state.rate_limiter
            if limiter is not None:
                limiter.admit(identity.user_id, peer)  # per user; 429 with Retry-After
            request.state.user_id = identity.user_id  # for the access log's pseudonym
            return identity
    raise Unauthenticated(SIGN_IN_REQUIRED)


def _administrator(request: Request, identity: Annotated[Identity, Depends(_identify)]) -> Identity:
    """An administrator credential of a user the directory says is active."""
    principal = request.app.state.engine.principal(identity.user_id)
    if not (identity.admin and "admin" in identity.scopes and principal.active):
        raise Forbidden("this route is for administrators")
    return identity


def _scoped(scope: str) -> Callable[[Identity], Identity]:
    """A dependency: the caller, when its credential carries ``scope`` (a token made for
    searching cannot ask, say); 403 naming the scope otherwise."""

    def check(identity: Annotated[Identity, Depends(_identify)]) -> Identity:
        if scope not in identity.scopes:
            raise Forbidden(f"this credential lacks the {scope!r} scope")
        return identity

    return check


Caller = Annotated[Identity, Depends(_identify)]
Searcher = Annotated[Identity, Depends(_scoped("search"))]
Asker_ = Annotated[Identity, Depends(_scoped("ask"))]
Admin = Annotated[Identity, Depends(_administrator)]


def create_app(
    settings: Settings,
    *,
    clearance: Clearance | None = None,
    authenticators: Sequence[Authenticator] | None = None,
) -> FastAPI:
    """The API over ``clearance`` (opened from ``settings``, and closed on shutdown, when
    not given). ``authenticators`` default to API tokens from the same index, then OIDC
    and trusted-header sign-in as ``[server]`` configures them."""
    owned = clearance is None
    engine = Clearance.open(settings) if clearance is None else clearance
    auth: Sequence[Authenticator] = (
        authenticators
        if authenticators is not None
        else default_authenticators(settings.server, engine)
    )
    orchestrator_lock = threading.Lock()
    notifications = NotificationReceiver(engine)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        # Configured sources are kept in step while the server runs (docs/sources.md), and
        # their change notifications go to the same scheduler (docs/notifications.md).
        sources = (
            BackgroundScheduler(engine).start()
            if settings.sources or settings.directories
            else None
        )
        if sources is not None:
            notifications.attach(sources.scheduler.notify)
        sweeper = SessionSweeper(
            SessionStore(engine.store, clock=engine.clock),
            settings.server.session_sweep_interval_s,
        ).start()
        try:
            yield
        finally:
            sweeper.stop()
            notifications.attach(None)
            await anyio.to_thread.run_sync(notifications.close)
            if sources is not None:
                await anyio.to_thread.run_sync(sources.stop)
            # Asks abandoned at their deadline still run: let them finish and write their
            # traces (bounded by the provider's own timeout) before the index is closed.
            grace = settings.llm.timeout_s * (settings.llm.max_retries + 1) + 5.0
            await anyio.to_thread.run_sync(asker.wait_idle, grace)
            if owned:
                engine.close()

    app = FastAPI(
        title="Clearance",
        version=API_VERSION,
        description="Answers only from what the caller may read, with every source cited.",
        lifespan=lifespan,
        docs_url=None,  # the schema browsers load scripts from a CDN: serve the schema only
        redoc_url=None,
    )
    app.state.engine = engine
    app.state.authenticators = list(auth)
    app.state.notifications = notifications
    # One allowance per user over the API, the UI and MCP, kept in the index for every process.
    app.state.rate_limiter = limiter_of(engine.store, settings.server.rate_limit)
    app.state.streams = StreamGuard.of(settings.server)

    # ------------------------------------------------------------------ errors

    @app.exception_handler(ClearanceError)
    async def clearance_error(_: Request, exc: ClearanceError) -> JSONResponse:
        return error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(error_body("invalid_request", _validation_message(exc)), 422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 404:
            page = await anyio.to_thread.run_sync(not_found_page, request)
            return page or JSONResponse(error_body("not_found", "not found"), 404)
        if exc.status_code == 400:  # FastAPI's answer to a body it cannot decode
            return JSONResponse(
                error_body("invalid_request", "the request body is not valid JSON"), 422
            )
        if exc.status_code == 405:
            return JSONResponse(error_body("method_not_allowed", "method not allowed"), 405)
        return JSONResponse(error_body("http_error", str(exc.detail)), exc.status_code)

    @app.exception_handler(Exception)
    async def internal_error(_: Request, exc: Exception) -> JSONResponse:
        return JSONResponse(error_body("internal_error", "internal error"), 500)

    # ------------------------------------------------------------------ probes

    @app.get("/healthz", tags=["probes"])
    def healthz() -> dict[str, str]:
        """Liveness: the process answers. Carries no data."""
        return {"status": "ok"}

    @app.get("/readyz", tags=["probes"])
    def readyz() -> JSONResponse:
        """Readiness: the index opens, a directory is loaded, and which corpora serve."""
        try:
            engine.store.stats()
            directory = engine.directory
            corpora = engine.corpus_status()
        except ClearanceError:
            return JSONResponse({"ready": False, "index": False}, 503)
        loaded = bool(directory.users)
        body = {
            "ready": loaded,
            "index": True,
            "directory_loaded": loaded,
            "corpora": [
                {
                    "corpus": c["corpus"],
                    "serving": not c["failing_closed"],
                    "last_acl_sync": c["last_acl_sync"],
                    "revocation_sla_seconds": c["revocation_sla_seconds"],
                }
                for c in corpora
            ],
        }
        return JSONResponse(body, 200 if loaded else 503)

    # ------------------------------------------------------------------ the caller

    @app.get("/v1/me", tags=["caller"], responses=_errors(401))
    def me(identity: Caller) -> dict[str, Any]:
        """Who the server thinks you are: user, whether active, groups, assistants."""
        principal = engine.principal(identity.user_id)
        return {
            "user": identity.user_id,
            "known": principal.known,
            "active": principal.active,
            "admin": identity.admin and principal.active,
            "principals": sorted(principal.principals),
            "groups": sorted(
                p.removeprefix("group:") for p in principal.principals if p.startswith("group:")
            ),
            "assistants": [a["name"] for a in assistants_for(engine, identity.user_id)],
            "scopes": sorted(identity.scopes),
        }

    @app.get("/v1/assistants", tags=["caller"], responses=_errors(401))
    def assistants(identity: Caller) -> dict[str, Any]:
        """The assistants the caller may use (none for a disabled or unknown account)."""
        return {"assistants": assistants_for(engine, identity.user_id)}

    # ------------------------------------------------------------------ retrieval and answers

    @app.post("/v1/search", tags=["answers"], responses=_BODY, response_model=SearchBody)
    async def search(body: SearchRequest, identity: Searcher) -> Response:
        """Hybrid search inside what the caller may retrieve: ``clearance search --json``."""

        # The search and its JSON encoding run in one worker thread; the body is built by
        # SearchResult.to_dict (whose shape the tests pin against SearchBody), so it is not
        # validated a second time through pydantic (~0.4 ms a request, measured).
        def run() -> JSONResponse:
            try:
                result = engine.search(
                    identity.user_id, body.query, assistant=body.assistant, k=body.k
                )
            except ConfigError as exc:  # an unknown or missing assistant
                raise NotFoundError(exc.message) from None
            return JSONResponse(result.to_dict(body.query))

        return await anyio.to_thread.run_sync(run)

    def answer(question: str, user_id: str, assistant: str | None) -> AnswerResult:
        with orchestrator_lock:  # built once, on first use, by one thread
            engine.orchestrator()
        return engine.ask(question, user_id, assistant=assistant)

    asker = Asker(
        answer,
        timeout_s=settings.server.request_timeout_s,
        degraded_message=settings.answer.degraded_message,
        streams=app.state.streams,
    )

    @app.post(
        "/v1/ask",
        tags=["answers"],
        responses={
            **_errors(401, 413, 422, 429, 503),
            200: {"content": {"text/event-stream": {}}},
        },
        response_model=AnswerBody,
    )
    async def ask(body: AskRequest, identity: Asker_, request: Request) -> Response:
        """A cited answer or a refusal: exactly ``clearance ask --json``; with
        ``Accept: text/event-stream``, its checked sentences and then that JSON as
        server-sent events (:mod:`clearance.api.streaming`)."""
        return await asker.respond(request, body.question, identity.user_id, body.assistant)

    @app.get(
        "/v1/documents/{doc_id:document_id}", tags=["answers"], responses=_errors(401, 404, 422)
    )
    def document(
        doc_id: str, identity: Caller, assistant: str | None = None, locator: str | None = None
    ) -> dict[str, Any]:
        """Metadata and a short preview, authorised exactly like retrieval; with a
        citation's ``locator``, the cited passage too. A document that does not exist and
        one the caller may not read get the same 404, byte for byte."""
        return preview(engine, identity.user_id, doc_id, assistant, locator)

    # ------------------------------------------------------------------ administrators

    @app.get("/v1/status", tags=["admin"], responses=_errors(401, 403))
    def status(identity: Admin) -> dict[str, Any]:
        """What ``clearance status --json`` shows: counts, directory, corpus freshness."""
        return engine.status()

    from clearance.api.admin import admin_router  # imported here: it builds on this module

    app.include_router(admin_router(_administrator))

    from clearance.api.notifications import notifications_router  # builds on this module too

    app.include_router(notifications_router())

    from clearance.api.scim import scim_router  # provisioning: its own credential, /scim/v2

    def provisioned(identity: Identity, done: Any) -> None:
        engine.actions().record(identity.user_id, done.action, done.target)

    app.include_router(scim_router(provisioned))

    if settings.server.ui:
        install_ui(app, settings, engine, app.state.authenticators, asker)

    if settings.server.cors_origins:  # bearer-token calls from these browser origins only
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(settings.server.cors_origins),
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type", "Accept"],
            allow_credentials=False,
        )
    app.add_middleware(BodyLimit, limit=settings.server.max_body_bytes)
    app.add_middleware(SecurityHeaders)
    metrics.install(app, engine, public=settings.server.metrics_public, admin=_administrator)
    return app
