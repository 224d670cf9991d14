"""The browser UI, served by the API's app: sign in, ask, read cited answers, open previews,
and — for administrators — see corpus freshness, recent traces and stats.

It is a door like the API, not a second engine: every page calls the same engine functions as
the API routes (``Clearance.ask`` through the same :class:`~clearance.api.streaming.Asker`,
:func:`~clearance.api.views.preview`, ``Clearance.status``), so authorisation, the egress
guard, refusal texts and traces are the API's. Pages are server-rendered Jinja2 templates with
autoescaping; the one script (``static/app.js``) only streams the answer in and never builds
markup from data (the server sends the rendered answer as its last event).

Security of the browser door:

* **Sign-in** — an API token pasted into the form, the identity provider's
  authorization-code flow with PKCE (:mod:`clearance.api.oidc_login`) when ``[server.oidc]``
  is configured, or the trusted proxy's header (per request, no session). A sign-in becomes a
  session (:mod:`clearance.api.sessions`): an ``HttpOnly``, ``SameSite=Lax`` cookie holding a
  random id, ``Secure`` (and ``__Host-`` prefixed) whenever the UI is reached over https.
* **CSRF** — every state-changing request carries a token bound to the session (or, before
  sign-in, to a double-submit cookie) in a form field or the ``X-CSRF-Token`` header, and a
  cross-origin ``Origin`` or ``Sec-Fetch-Site`` refuses it outright.
* **Content-Security-Policy** on every response: scripts, styles and fetches from this origin
  only, no inline script or style, no framing, forms post only here. Every asset is served by
  the app; nothing loads from a CDN, so the UI works offline.
* A document that does not exist and one the caller may not read get the same 404 page.
"""

from __future__ import annotations

import hmac
import logging
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import anyio.to_thread
import markupsafe
from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from clearance.answer.result import AnswerResult, Status
from clearance.api.auth import (
    READER_SCOPES,
    Authenticator,
    DirectoryAdmins,
    OidcAuthenticator,
    TrustedHeaderAuthenticator,
    request_headers,
)
from clearance.api.errors import DOCUMENT_NOT_FOUND, error_body
from clearance.api.limits import Limiter, RateLimited, client_address, limiter_of, signin_key
from clearance.api.oidc import JwtVerifier
from clearance.api.oidc_login import BrowserLogin, Pending
from clearance.api.sessions import SessionStore
from clearance.api.streaming import Asker, event, event_stream, wants_stream
from clearance.api.tokens import TokenStore
from clearance.api.views import assistants_for, preview
from clearance.app import Clearance
from clearance.config import Settings
from clearance.errors import AuthError, ClearanceError, NotFoundError
from clearance.ingest.locator import parse_locator

__all__ = ["CSP", "SecurityHeaders", "install_ui", "not_found_page", "place"]

log = logging.getLogger(__name__)

HERE = Path(__file__).parent
TEMPLATES = HERE / "templates"
STATIC = HERE / "static"

#: The Content-Security-Policy of every response. No ``'unsafe-inline'`` anywhere: the page's
#: only script is ``/static/app.js`` and its only stylesheet ``/static/app.css``.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
_SECURITY_HEADERS = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),  # "no-referrer" would make Origin "null"
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
)

#: How long a started OIDC sign-in may take before its cookie is gone.
OIDC_PENDING_S = 600

_STATUS_WORDS = {
    Status.NOT_FOUND: "Not found",
    Status.UNRECOGNIZED_PARAM: "Not understood",
    Status.NO_AUTHORIZED_SOURCE: "No answer",
    Status.OUT_OF_SCOPE_ENTITY: "Out of scope",
    Status.CLARIFY: "Please clarify",
    Status.DEGRADED: "Temporarily unavailable",
    Status.ACCOUNT_DISABLED: "Account disabled",
    Status.UNKNOWN_ASSISTANT: "Unknown assistant",
}
_TRUST_WORDS = {
    "trusted": "trusted source",
    "medium": "medium trust",
    "untrusted": "untrusted source",
}
_MARKER = re.compile(r"\[S(\d{1,4})\]")


@dataclass(eq=False)
class SecurityHeaders:
    """Adds the Content-Security-Policy and the other browser protections to every HTTP
    response (a pure ASGI middleware, so streamed answers pass through untouched)."""

    app: ASGIApp

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", ())}
                extra = [(n, v) for n, v in _SECURITY_HEADERS if n not in present]
                message["headers"] = [*message.get("headers", ()), *extra]
            await send(message)

        await self.app(scope, receive, with_headers)


# --------------------------------------------------------------------------- who is visiting


@dataclass(frozen=True, slots=True)
class Visitor:
    """A signed-in browser: the user, whether it may open the administrator page, the CSRF
    token its requests must carry, and its session cookie (``None`` behind a proxy)."""

    user_id: str
    admin: bool
    csrf: str
    session_id: str | None
    scopes: frozenset[str] = READER_SCOPES


class Door:
    """Everything the pages share: the engine, sign-in, sessions and cookies."""

    def __init__(
        self,
        settings: Settings,
        engine: Clearance,
        authenticators: Sequence[Authenticator],
        asker: Asker,
        rate_limiter: Limiter | None,
    ) -> None:
        self.settings = settings
        self.engine = engine
        self.asker = asker
        self.rate_limiter = rate_limiter
        self.signin_limiter = limiter_of(engine.store, settings.server.signin_rate_limit)
        self.sessions = SessionStore(engine.store, clock=engine.clock)
        self.tokens = TokenStore(engine.store, clock=engine.clock)
        server = settings.server
        self.admins = DirectoryAdmins(engine.principal, server.admin_groups)
        self.proxy = next(
            (a for a in authenticators if isinstance(a, TrustedHeaderAuthenticator)), None
        )
        self.login: BrowserLogin | None = None
        if server.oidc is not None:
            # The bearer sign-in's verifier, so both share one JWKS cache.
            oidc_verifier = next(
                (a.verifier for a in authenticators if isinstance(a, OidcAuthenticator)), None
            )
            self.login = BrowserLogin(server.oidc, oidc_verifier or JwtVerifier(server.oidc))
        environment = Environment(
            loader=FileSystemLoader(TEMPLATES),
            autoescape=select_autoescape(("html",)),
            trim_blocks=True,
            lstrip_blocks=True,
        )
        environment.filters.update(
            cited=_cited_html, when=_when, date=_date, duration=_duration, place=place
        )
        self.templates = Jinja2Templates(env=environment)

    # ------------------------------------------------------------------ cookies

    def secure(self, request: Request) -> bool:
        """Whether users reach the UI over https: then cookies are ``Secure``."""
        public = self.settings.server.public_url
        if public is not None:
            return public.startswith("https://")
        return request.url.scheme == "https"

    def cookie(self, request: Request, name: str) -> str:
        return f"__Host-{name}" if self.secure(request) else name

    def set_cookie(
        self,
        response: Response,
        request: Request,
        name: str,
        value: str,
        *,
        max_age: int | None = None,
        samesite: str = "lax",
    ) -> None:
        response.set_cookie(
            self.cookie(request, name),
            value,
            max_age=max_age,
            path="/",
            secure=self.secure(request),
            httponly=True,
            samesite=samesite,  # type: ignore[arg-type]
        )

    def delete_cookie(self, response: Response, request: Request, name: str) -> Response:
        response.delete_cookie(self.cookie(request, name), path="/", secure=self.secure(request))
        return response

    def base_url(self, request: Request) -> str:
        public = self.settings.server.public_url
        return public if public is not None else str(request.base_url).rstrip("/")

    def origin(self, request: Request) -> str:
        parts = urlsplit(self.base_url(request))
        return f"{parts.scheme}://{parts.netloc}"

    # ------------------------------------------------------------------ identity

    def visitor(self, request: Request) -> Visitor | None:
        """The signed-in visitor of ``request``, re-checked now: the session is live, and a
        session from an API token still has an unrevoked, unexpired token."""
        session_id = request.cookies.get(self.cookie(request, "clearance_session"))
        session = self.sessions.get(session_id)
        if session is not None and session_id is not None:
            if session.method == "api_token":
                record = None if session.token_id is None else self.tokens.current(session.token_id)
                if record is None or record.user_id != session.user_id or "scim" in record.scopes:
                    return None
                return Visitor(
                    session.user_id,
                    record.admin and "admin" in record.scopes,
                    session.csrf,
                    session_id,
                    record.scopes,
                )
            admin = self.admins(session.user_id)
            return Visitor(session.user_id, admin, session.csrf, session_id)
        if self.proxy is not None:
            peer = request.client.host if request.client else None
            headers = request_headers(request.headers.items())
            identity = self.proxy.authenticate(headers, peer)
            if identity is not None:
                # No session behind a proxy: the CSRF token is a double-submit cookie,
                # set with the first page (``page``).
                csrf = request.cookies.get(self.cookie(request, "clearance_csrf")) or _new_token()
                return Visitor(identity.user_id, identity.admin, csrf, None)
        return None

    def forged(self, request: Request, presented: str | None, expected: str) -> bool:
        """Whether a state-changing request must be refused: it comes from another origin,
        or does not carry the CSRF token it was given."""
        origin = request.headers.get("origin")
        if origin is not None and origin != self.origin(request):
            return True
        fetch_site = request.headers.get("sec-fetch-site")
        if fetch_site is not None and fetch_site not in ("same-origin", "none"):
            return True
        if not expected or not presented:
            return True
        return not _equal(presented, expected)

    # ------------------------------------------------------------------ pages

    def page(
        self,
        request: Request,
        name: str,
        visitor: Visitor | None,
        status_code: int = 200,
        **context: Any,
    ) -> HTMLResponse:
        response = self.templates.TemplateResponse(
            request,
            name,
            {"visitor": visitor, "product": "Clearance", **context},
            status_code=status_code,
        )
        response.headers["Cache-Control"] = "no-store"
        csrf_cookie = self.cookie(request, "clearance_csrf")
        if (
            visitor is not None
            and visitor.session_id is None
            and csrf_cookie not in request.cookies
        ):
            self.set_cookie(response, request, "clearance_csrf", visitor.csrf, samesite="strict")
        return response

    def over_limit(self, request: Request, visitor: Visitor) -> int | None:
        """Seconds to wait when ``visitor`` is over ``[server] rate_limit`` (counted like
        the API's requests, per user), else ``None``; a request within it is counted."""
        if self.rate_limiter is None:
            return None
        try:
            self.rate_limiter.admit(
                visitor.user_id, request.client.host if request.client else None
            )
        except RateLimited as exc:
            return exc.retry_after
        return None

    def not_found(self, request: Request, visitor: Visitor | None) -> HTMLResponse:
        return self.page(request, "not_found.html", visitor, 404)

    def answer_context(self, result: AnswerResult, assistant: str | None) -> dict[str, Any]:
        """What the answer template shows of ``result``: its text with numbered markers, and
        each citation with its trust label, preview link and notes."""
        outdated = {f.split(":", 1)[1] for f in result.flags if f.startswith("possibly_outdated:")}
        citations = [
            {
                "n": i,
                "title": c.title,
                "locator": c.locator,
                "trust": c.trust,
                "trust_words": _TRUST_WORDS.get(c.trust, c.trust),
                "outdated": c.doc_id in outdated,
                "preview": _preview_url(c.doc_id, assistant, c.locator),
            }
            for i, c in enumerate(result.citations, start=1)
        ]
        return {
            "status": result.status.value,
            "answered": result.status is Status.ANSWERED,
            "status_words": _STATUS_WORDS.get(result.status, ""),
            "text": result.answer,
            "citations": citations,
            "conflict": "conflict" in result.flags,
            "trace_id": result.trace_id,
        }

    def render_answer(self, result: AnswerResult, assistant: str | None) -> str:
        template = self.templates.env.get_template("_answer.html")
        return template.render(answer=self.answer_context(result, assistant))


def _preview_url(doc_id: str, assistant: str | None, locator: str) -> str:
    """The preview of a citation, opened at its passage."""
    query = urlencode(
        [(k, v) for k, v in (("assistant", assistant), ("locator", locator)) if v], quote_via=quote
    )
    at = "#cited" if locator else ""
    return f"/documents/{quote(doc_id, safe='')}{'?' + query if query else ''}{at}"


def _shown(passage: dict[str, Any] | None) -> dict[str, Any] | None:
    """A preview's passage as the page shows it: its text cut into plain and marked runs."""
    if passage is None:
        return None
    text: str = passage["text"]
    runs: list[dict[str, Any]] = []
    at = 0
    for start, end in sorted(passage["marks"]):
        if start > at:
            runs.append({"text": text[at:start], "mark": False})
        runs.append({"text": text[max(start, at) : end], "mark": True})
        at = max(at, end)
    if at < len(text):
        runs.append({"text": text[at:], "mark": False})
    return {**passage, "runs": runs}


def _equal(a: str, b: str) -> bool:
    return hmac.compare_digest(
        a.encode("utf-8", "surrogatepass"), b.encode("utf-8", "surrogatepass")
    )


def _cited_html(text: str) -> markupsafe.Markup:
    """The answer text, escaped, with each ``[S#]`` marker a link to its numbered citation."""
    escaped = str(markupsafe.escape(text))
    return markupsafe.Markup(
        _MARKER.sub(
            lambda m: f'<a class="marker" href="#S{m.group(1)}">[S{m.group(1)}]</a>', escaped
        )
    )


_PLACE_WORDS = {"col": "column", "range": "cells"}


def place(locator: str) -> str:
    """A locator as a reader says it: ``section=Report > Japan,table=1,row=Revenue,col=FY2024``
    → ``Report › Japan · table 1 · row Revenue · column FY2024`` (the raw locator stays in
    the citation's JSON; this is only how the page shows it)."""
    try:
        parts = parse_locator(locator)
    except ValueError:
        return locator
    words = []
    for key, value in parts:
        if key == "section":
            words.append(value.replace(" > ", " › "))
        else:
            words.append(f"{_PLACE_WORDS.get(key, key)} {value}")
    return " · ".join(words)


def _utc(value: str) -> datetime | None:
    """An ISO timestamp in UTC (a naive one as written), or ``None`` when it is not one."""
    try:
        moment = datetime.fromisoformat(str(value))
    except ValueError:
        return None
    return moment.astimezone(UTC) if moment.tzinfo is not None else moment


def _when(value: str | None) -> str:
    """An ISO timestamp as people read it, in UTC to the second."""
    if not value:
        return "never"
    moment = _utc(value)
    return str(value) if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def _date(value: str | None) -> str:
    """An ISO timestamp as a date people read: ``2026-03-12T09:30:00+00:00`` →
    ``12 March 2026`` (the day in UTC)."""
    if not value:
        return ""
    moment = _utc(value)
    return str(value) if moment is None else f"{moment.day} {moment.strftime('%B %Y')}"


def _duration(seconds: float | None) -> str:
    """``5400`` → ``1 h 30 min``: an SLA as an operator configured it."""
    if seconds is None:
        return ""
    total = round(float(seconds))
    parts: list[str] = []
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60), ("s", 1)):
        if total >= size or (unit == "s" and not parts):
            amount, total = divmod(total, size)
            parts.append(f"{amount} {unit}")
    return " ".join(parts)


# --------------------------------------------------------------------------- routes


def not_found_page(request: Request) -> HTMLResponse | None:
    """The UI's 404 page for a browser that asked for a page no route has (``None`` when the
    UI is off, for API paths, or for a client that does not accept HTML)."""
    door: Door | None = getattr(request.app.state, "ui", None)
    path = request.url.path
    if (
        door is None
        or path.startswith("/v1/")
        or "text/html" not in request.headers.get("accept", "")
    ):
        return None
    return door.not_found(request, door.visitor(request))


async def _form(request: Request) -> dict[str, str]:
    """The urlencoded form of ``request`` (the last value of each field)."""
    form = await request.form()
    return {k: v for k, v in form.items() if isinstance(v, str)}


def install_ui(
    app: FastAPI,
    settings: Settings,
    engine: Clearance,
    authenticators: Sequence[Authenticator],
    asker: Asker,
) -> None:
    """Serve the browser UI from ``app``: pages at ``/``, assets at ``/static``."""
    door = Door(settings, engine, authenticators, asker, app.state.rate_limiter)
    app.state.ui = door
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    router = APIRouter(include_in_schema=False)

    def signin_redirect() -> RedirectResponse:
        return RedirectResponse("/signin", status_code=303)

    # ------------------------------------------------------------------ sign-in

    @router.get("/signin")
    def signin_page(request: Request, error: str | None = None) -> Response:
        if door.visitor(request) is not None:
            return RedirectResponse("/", status_code=303)
        csrf = request.cookies.get(door.cookie(request, "clearance_csrf")) or _new_token()
        response = door.page(
            request,
            "signin.html",
            None,
            401 if error else 200,
            csrf=csrf,
            error=_SIGNIN_ERRORS.get(error or ""),
            sso=door.login is not None,
        )
        door.set_cookie(response, request, "clearance_csrf", csrf, samesite="strict")
        return response

    def too_many_signins(request: Request) -> Response | None:
        """429 once this client address is over ``[server] signin_rate_limit`` (a page for
        a browser, the one error shape for anything else), else ``None``."""
        if door.signin_limiter is None:
            return None
        peer = request.client.host if request.client else None
        headers = request_headers(request.headers.items())
        address = client_address(headers, peer, settings.server.trusted_proxies)
        try:
            door.signin_limiter.check(signin_key(address))
        except RateLimited as exc:
            retry = {"Retry-After": str(exc.retry_after)}
            if "text/html" not in request.headers.get("accept", ""):
                return JSONResponse(exc.to_dict(), exc.status, headers=retry)
            page = door.page(request, "error.html", None, exc.status, message=_SLOW_SIGNIN)
            page.headers.update(retry)
            return page
        return None

    @router.post("/signin")
    async def signin(request: Request) -> Response:
        refused = await anyio.to_thread.run_sync(too_many_signins, request)
        if refused is not None:
            return refused
        form = await _form(request)
        expected = request.cookies.get(door.cookie(request, "clearance_csrf"), "")
        if door.forged(request, form.get("csrf"), expected):
            return door.page(request, "error.html", None, 403, message=_FORGED)
        record = door.tokens.verify(form.get("token", "").strip())
        if record is None or "scim" in record.scopes:  # a provisioning token signs nobody in
            return RedirectResponse("/signin?error=token", status_code=303)
        return _signed_in(request, record.user_id, "api_token", record.expires_at, record.id)

    def _signed_in(
        request: Request,
        user_id: str,
        method: str,
        until: datetime | None,
        token_id: str | None = None,
    ) -> Response:
        """A new session for ``user_id``, ending after ``[server] session_lifetime`` or at
        ``until`` (the credential's own expiry), whichever is first; its cookie is set."""
        expires = engine.clock() + timedelta(seconds=settings.server.session_lifetime_s)
        if until is not None:
            expires = min(expires, until)
        session_id, _ = door.sessions.create(user_id, method, expires, token_id=token_id)
        response = RedirectResponse("/", status_code=303)
        max_age = max(1, int((expires - engine.clock()).total_seconds()))
        door.set_cookie(response, request, "clearance_session", session_id, max_age=max_age)
        return response

    @router.get("/signin/oidc")
    def signin_oidc(request: Request) -> Response:
        if door.login is None:
            return door.not_found(request, None)
        refused = too_many_signins(request)
        if refused is not None:
            return refused
        try:
            url, pending = door.login.start(_callback(request))
        except AuthError:
            return RedirectResponse("/signin?error=provider", status_code=303)
        response = RedirectResponse(url, status_code=303)
        door.set_cookie(
            response, request, "clearance_oidc", pending.to_cookie(), max_age=OIDC_PENDING_S
        )
        return response

    def _callback(request: Request) -> str:
        return f"{door.base_url(request)}/signin/oidc/callback"

    @router.get("/signin/oidc/callback")
    def signin_oidc_callback(
        request: Request, code: str = "", state: str = "", error: str | None = None
    ) -> Response:
        if door.login is None:
            return door.not_found(request, None)
        refused = too_many_signins(request)
        if refused is not None:
            return refused
        pending = Pending.from_cookie(request.cookies.get(door.cookie(request, "clearance_oidc")))
        response: Response
        if error is not None:
            response = RedirectResponse("/signin?error=provider", 303)
        else:
            try:
                user_id, expires = door.login.finish(code, state, pending, _callback(request))
            except AuthError as exc:
                log.info("browser sign-in refused: %s", exc.reason)
                response = RedirectResponse("/signin?error=sso", 303)
            else:
                # The session holds the directory user the claim names through any alias.
                response = _signed_in(request, engine.resolve_user(user_id), "oidc", expires)
        # However the started sign-in ended, it is over: its cookie goes.
        return door.delete_cookie(response, request, "clearance_oidc")

    @router.post("/signout")
    async def signout(request: Request) -> Response:
        visitor = door.visitor(request)
        form = await _form(request)
        if visitor is not None and not door.forged(request, form.get("csrf"), visitor.csrf):
            door.sessions.end(visitor.session_id)
        return door.delete_cookie(signin_redirect(), request, "clearance_session")

    # ------------------------------------------------------------------ asking

    def ask_context(visitor: Visitor) -> dict[str, Any]:
        principal = engine.principal(visitor.user_id)
        return {
            "active": principal.active,
            "assistants": assistants_for(engine, visitor.user_id),
            # Without [access] require_assistant, asking with no assistant searches every
            # corpus, each under its own ceiling.
            "allow_none": not settings.access.require_assistant,
            "max_question_chars": settings.answer.max_question_chars,
        }

    @router.get("/")
    def home(request: Request) -> Response:
        visitor = door.visitor(request)
        if visitor is None:
            return signin_redirect()
        return door.page(request, "ask.html", visitor, **ask_context(visitor))

    @router.post("/ask")
    async def ask(request: Request) -> Response:
        visitor = door.visitor(request)
        stream = wants_stream(request)
        if visitor is None:
            return _refuse(request, stream, 401, "unauthenticated", _SIGNED_OUT, None)
        form = await _form(request)
        presented = request.headers.get("x-csrf-token") or form.get("csrf")
        if door.forged(request, presented, visitor.csrf):
            return _refuse(request, stream, 403, "forbidden", _FORGED, visitor)
        if "ask" not in visitor.scopes:
            return _refuse(request, stream, 403, "forbidden", _NO_ASK_SCOPE, visitor)
        retry_after = await anyio.to_thread.run_sync(door.over_limit, request, visitor)
        if retry_after is not None:
            return _refuse(request, stream, 429, "rate_limited", _SLOW_DOWN, visitor, retry_after)
        request.state.user_id = visitor.user_id  # the access log's pseudonym
        question = form.get("question", "")
        assistant = form.get("assistant") or None
        if stream:
            return await door.asker.respond(
                request,
                question,
                visitor.user_id,
                assistant,
                render=lambda result: door.render_answer(result, assistant),
            )

        def answer_page(status: int = 200, **shown: Any) -> Response:
            return door.page(
                request,
                "ask.html",
                visitor,
                status,
                question=question,
                chosen=assistant,
                **shown,
                **ask_context(visitor),
            )

        try:
            result = await door.asker.run(question, visitor.user_id, assistant)
        except ClearanceError as exc:  # a bad question (422), the deadline or the model (503)
            status, body = door.asker.failure(exc)
            return answer_page(status, problem=body["message"])
        if result.status is Status.DEGRADED:
            return answer_page(503, problem=settings.answer.degraded_message)
        return answer_page(answer=door.answer_context(result, assistant))

    def _refuse(
        request: Request,
        stream: bool,
        status: int,
        code: str,
        message: str,
        visitor: Visitor | None,
        retry_after: int | None = None,
    ) -> Response:
        if stream:
            response: Response = event_stream([event("error", error_body(code, message))], status)
        else:
            response = door.page(request, "error.html", visitor, status, message=message)
        if retry_after is not None:
            response.headers["Retry-After"] = str(retry_after)
        return response

    # ------------------------------------------------------------------ previews

    @router.get("/documents/{doc_id:document_id}")
    def document(
        request: Request, doc_id: str, assistant: str | None = None, locator: str | None = None
    ) -> Response:
        visitor = door.visitor(request)
        if visitor is None:
            return signin_redirect()
        retry_after = door.over_limit(request, visitor)  # previews count like the API's
        if retry_after is not None:
            return _refuse(
                request, False, 429, "rate_limited", _SLOW_DOWN_PAGES, visitor, retry_after
            )
        request.state.user_id = visitor.user_id  # the access log's pseudonym
        try:
            found = preview(engine, visitor.user_id, doc_id, assistant, locator)
        except NotFoundError as exc:
            if exc is not DOCUMENT_NOT_FOUND:  # an unknown assistant: say so
                return door.page(request, "error.html", visitor, 404, message=exc.message)
            return door.not_found(request, visitor)
        return door.page(
            request,
            "document.html",
            visitor,
            document=found,
            passage=_shown(found["passage"]),
            locator=locator,
        )

    # ------------------------------------------------------------------ administrators

    @router.get("/admin")
    def admin(request: Request) -> Response:
        visitor = door.visitor(request)
        if visitor is None:
            return signin_redirect()
        if not (visitor.admin and engine.principal(visitor.user_id).active):
            return door.page(request, "error.html", visitor, 403, message=_NOT_ADMIN)
        status = engine.status()
        log = engine.trace_log()
        traces = log.entries(limit=20)
        stats = log.stats()
        return door.page(
            request,
            "admin.html",
            visitor,
            status=status,
            traces=[_trace_row(t) for t in traces],
            stats=stats,
            chart=_bars(stats.get("by_status", {})),
        )

    app.include_router(router)


# --------------------------------------------------------------------------- helpers

_SIGNIN_ERRORS = {
    "token": "That token is not valid: it may be mistyped, expired or revoked.",
    "sso": "Single sign-on did not complete. Please try again.",
    "provider": "The identity provider could not be reached or refused the sign-in.",
}
_NO_ASK_SCOPE = "The token you signed in with may search but not ask."
_FORGED = "This request did not come from a Clearance page. Reload the page and try again."
_SIGNED_OUT = "Your session has ended. Please sign in again."
_SLOW_DOWN = "Too many questions in a short time. Please wait a moment and try again."
_SLOW_DOWN_PAGES = "Too many pages in a short time. Please wait a moment and try again."
_SLOW_SIGNIN = "Too many sign-in attempts from this address. Please wait a minute and try again."
_NOT_ADMIN = "This page is for administrators."


def _new_token() -> str:
    return secrets.token_urlsafe(32)


def _trace_row(record: dict[str, Any]) -> dict[str, Any]:
    """The columns of a trace the administrator page shows: never any text."""
    latency = record.get("latency_ms", {})
    total = latency.get("total") if isinstance(latency, dict) else None
    return {
        "time": str(record.get("created_at", "")),
        "trace_id": str(record.get("trace_id", "")),
        "user": str(record.get("user", "")),
        "assistant": str(record.get("assistant") or ""),
        "route": str(record.get("route", "")),
        "status": str(record.get("status", "")),
        "latency_ms": round(float(total)) if isinstance(total, int | float) else None,
        "cited": len(record.get("cited", []) or []),
    }


def _bars(counts: dict[str, int]) -> dict[str, Any]:
    """A horizontal bar chart of ``counts`` as SVG geometry (the template draws it)."""
    items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    top = max((v for _, v in items), default=0)
    width = 240
    return {
        "height": 24 * len(items) + 4,
        "bars": [
            {
                "label": name or "(none)",
                "value": value,
                "y": 4 + 24 * i,
                "width": 0 if top == 0 else max(2, round(width * value / top)),
            }
            for i, (name, value) in enumerate(items)
        ],
    }
