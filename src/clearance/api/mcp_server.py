"""The MCP server: ``search`` and ``ask`` as tools for other assistants.

Who is asking is bound to the server, never to a tool call: over stdio it is the user the
operator started the server for (``clearance mcp --user U``); over streamable HTTP it is
the user an :class:`~clearance.api.auth.Authenticator` vouched for on that request. The
tools' input schemas forbid every argument they do not name (``additionalProperties:
false``), so a ``user`` argument is refused, and nothing a caller sends reaches the
identity anyway.

Results are exactly ``clearance search --json`` and ``clearance ask --json``, built by the
same functions. Refusals are the API's: a disabled account gets ``account_disabled``, an
over-long question is a tool error carrying the ``bad_question`` message, an unknown
assistant is refused like the CLI refuses it, and an unexpected failure is the fixed
``internal error`` — never a traceback or an exception's text.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

import anyio.to_thread
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from clearance.answer.result import Status
from clearance.api.app import BodyLimit
from clearance.api.auth import Authenticator, Identity, request_headers
from clearance.api.errors import Unauthenticated
from clearance.api.limits import Limiter, RateLimited, SharedRateLimiter
from clearance.api.streams import StreamGuard, TooManyStreams
from clearance.app import Clearance
from clearance.cli.context import require_assistant, unknown_assistant_message
from clearance.cli.search_cmd import search_json
from clearance.errors import AuthError, ClearanceError, NotFoundError

__all__ = [
    "MCP_PATH",
    "SERVER_NAME",
    "UserOf",
    "create_http_app",
    "create_server",
    "fixed_user",
    "shared_limiter",
]

SERVER_NAME = "clearance"

#: Where the streamable HTTP endpoint answers.
MCP_PATH = "/mcp"

#: Where :class:`BearerGate` leaves the caller's identity (``request.state``) for the tools.
_IDENTITY = "clearance_identity"

log = logging.getLogger(__name__)

#: How a tool call learns who is asking, from the request context and never its arguments.
UserOf = Callable[[ServerRequestContext[Any, Any]], str]


def fixed_user(user_id: str) -> UserOf:
    """The identity of a stdio server: the one user it was started for."""
    return lambda _ctx: user_id


def request_user(ctx: ServerRequestContext[Any, Any]) -> str:
    """The identity of a streamable HTTP call: the user :class:`BearerGate` authenticated
    on this very HTTP request (never one from an earlier request or a session)."""
    request = ctx.request
    identity = getattr(request.state, _IDENTITY, None) if isinstance(request, Request) else None
    if not isinstance(identity, Identity):
        raise Unauthenticated("sign-in required: a valid bearer token (Authorization: Bearer …)")
    return identity.user_id


# --------------------------------------------------------------------------- tool inputs


class SearchArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(description="What to search for.")
    k: int | None = Field(default=None, ge=1, le=1000, description="Number of results.")


class AskArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(description="The question, in natural language.")


_ASSISTANT = Field(
    default=None,
    description="Narrow to one assistant's corpora and sensitivity ceiling. "
    "An unknown name is refused.",
)


class SearchArgsWithAssistant(SearchArgs):
    assistant: str | None = _ASSISTANT


class AskArgsWithAssistant(AskArgs):
    assistant: str | None = _ASSISTANT


# --------------------------------------------------------------------------- results


def _text(text: str, *, error: bool) -> types.CallToolResult:
    content: list[types.ContentBlock] = [types.TextContent(type="text", text=text)]
    return types.CallToolResult(content=content, is_error=error)


def _ok(data: dict[str, Any]) -> types.CallToolResult:
    result = _text(json.dumps(data, ensure_ascii=False), error=False)
    result.structured_content = data
    return result


def _refused(error: ClearanceError) -> types.CallToolResult:
    """A tool error: the same ``{"error", "message"}`` the API and ``--json`` give."""
    return _text(json.dumps(error.to_dict(), ensure_ascii=False), error=True)


def _invalid(exc: ValidationError) -> types.CallToolResult:
    """Which argument is wrong, never quoting the value the caller sent."""
    errors = exc.errors()
    if errors:
        where = ".".join(str(p) for p in errors[0]["loc"]) or "arguments"
        message = f"{where}: {errors[0]['msg']}"
    else:
        message = "invalid arguments"
    return _text(json.dumps({"error": "invalid_request", "message": message}), error=True)


_INTERNAL = json.dumps({"error": "internal_error", "message": "internal error"})


# --------------------------------------------------------------------------- the server


def create_server(
    engine: Clearance,
    user_of: UserOf,
    *,
    assistant: str | None = None,
    limiter: Limiter | None = None,
) -> Server[Any]:
    """An MCP server over ``engine`` for the user ``user_of`` names on each call.

    With ``assistant`` the server is bound to that assistant and the tools take no
    ``assistant`` argument (another one could widen it); without, a tool may name one, which
    only narrows. An unknown ``assistant`` here raises :class:`NotFoundError`. With
    ``limiter`` (stdio, where no HTTP request is counted) every tool call takes one request
    from the user's allowance, refused as the tool error ``rate_limited``."""
    require_assistant(engine.settings, assistant)
    narrowable = assistant is None
    search_model: type[SearchArgs] = SearchArgsWithAssistant if narrowable else SearchArgs
    ask_model: type[AskArgs] = AskArgsWithAssistant if narrowable else AskArgs
    orchestrator_lock = threading.Lock()

    tools = [
        types.Tool(
            name="search",
            description=(
                "Search the documents the signed-in user may read now. Results are the JSON "
                "of `clearance search --json`; nothing outside the user's permissions."
            ),
            input_schema=search_model.model_json_schema(),
            annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
        ),
        types.Tool(
            name="ask",
            description=(
                "Answer a question from what the signed-in user may read, citing every "
                "source, or refuse. The JSON of `clearance ask --json`."
            ),
            input_schema=ask_model.model_json_schema(),
            annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
        ),
    ]

    def chosen(args: BaseModel) -> str | None:
        return getattr(args, "assistant", None) if narrowable else assistant

    def search(user_id: str, args: SearchArgs) -> types.CallToolResult:
        name = chosen(args)
        require_assistant(engine.settings, name)
        result = engine.search(user_id, args.query, assistant=name, k=args.k)
        return _ok(search_json(user_id, args.query, result))

    def ask(user_id: str, args: AskArgs) -> types.CallToolResult:
        name = chosen(args)
        with orchestrator_lock:  # built once, on first use, by one thread
            engine.orchestrator()
        result = engine.ask(args.question, user_id, assistant=name)
        if result.status is Status.UNKNOWN_ASSISTANT:  # answered and traced, then refused
            return _refused(NotFoundError(unknown_assistant_message(engine.settings, name)))
        return _ok(result.to_dict())

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        arguments = params.arguments or {}
        try:
            user_id = user_of(ctx)
            if limiter is not None:
                await anyio.to_thread.run_sync(limiter.admit, user_id, None)
            if params.name == "search":
                s_args = search_model.model_validate(arguments)
                return await anyio.to_thread.run_sync(search, user_id, s_args)
            if params.name == "ask":
                a_args = ask_model.model_validate(arguments)
                return await anyio.to_thread.run_sync(ask, user_id, a_args)
            return _refused(NotFoundError(f"unknown tool {params.name!r} (search, ask)"))
        except ValidationError as exc:
            return _invalid(exc)
        except ClearanceError as exc:
            return _refused(exc)
        except Exception:
            # The operator's log gets the traceback; the caller gets the fixed text only.
            log.exception("MCP tool %r failed", params.name)
            return _text(_INTERNAL, error=True)

    return Server(
        SERVER_NAME,
        instructions=(
            "Clearance answers only from what the signed-in user may read. The user is fixed "
            "by the server; tools cannot act for anyone else."
        ),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


# --------------------------------------------------------------------------- streamable HTTP


class BearerGate:
    """Every HTTP request must carry a credential one of ``authenticators`` accepts — the
    API's authentication — else 401 in the API's error shape, before the MCP app sees it.
    The identity is put on the request for :func:`request_user`; a client-sent value
    cannot get there, since the scope's state is set here and nowhere else. A ``GET`` (the
    event stream) takes one of the user's stream slots and is ended when idle (``streams``)."""

    def __init__(
        self,
        app: ASGIApp,
        authenticators: Sequence[Authenticator],
        limiter: Limiter | None = None,
        streams: StreamGuard | None = None,
    ) -> None:
        self.app = app
        self.authenticators = list(authenticators)
        self.limiter = limiter
        self.streams = streams

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = request_headers(
            (k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]
        )
        client = scope.get("client")
        peer = client[0] if client else None
        identity = None
        error: ClearanceError = Unauthenticated(
            "sign-in required: a valid bearer token (Authorization: Bearer …)"
        )
        try:
            for authenticator in self.authenticators:
                identity = await anyio.to_thread.run_sync(authenticator.authenticate, headers, peer)
                if identity is not None:
                    break
        except AuthError as exc:  # a refused credential: the API's 401, whatever the reason
            error = exc
        if identity is None:
            response = JSONResponse(
                error.to_dict(), status_code=401, headers={"WWW-Authenticate": "Bearer"}
            )
            await response(scope, receive, send)
            return
        if self.limiter is not None:
            try:  # the API's allowance: one per user over every door and process
                await anyio.to_thread.run_sync(self.limiter.admit, identity.user_id, peer)
            except RateLimited as exc:
                headers = {"Retry-After": str(exc.retry_after)}
                await JSONResponse(exc.to_dict(), 429, headers=headers)(scope, receive, send)
                return
        state = dict(scope.get("state") or {})
        state[_IDENTITY] = identity
        scope = {**scope, "state": state}
        if self.streams is None or scope.get("method") != "GET":
            await self.app(scope, receive, send)
            return
        try:
            with self.streams.slot(identity.user_id):
                await self.streams.run(self.app, scope, receive, send)
        except TooManyStreams as exc:
            headers = {"Retry-After": str(exc.retry_after)}
            await JSONResponse(exc.to_dict(), 429, headers=headers)(scope, receive, send)


def shared_limiter(engine: Clearance) -> SharedRateLimiter | None:
    """``[server] rate_limit`` as the API keeps it: in the index, per user."""
    rate = engine.settings.server.rate_limit
    return None if rate is None else SharedRateLimiter(engine.store, rate)


def create_http_app(
    engine: Clearance,
    authenticators: Sequence[Authenticator],
    *,
    assistant: str | None = None,
) -> Starlette:
    """The MCP tools over streamable HTTP at :data:`MCP_PATH`, each request authenticated
    like the API's. Stateless: no MCP session outlives its HTTP request, so no request can
    act under another request's identity. ``[server] rate_limit`` and ``max_body_bytes``
    apply as on the API (429 with ``Retry-After``, 413), in the API's error shape; the
    allowance is the one the API's processes keep in the index. The ``GET`` event stream,
    which carries nothing in stateless mode, is bounded by ``[server] streams_per_user``
    and ``stream_idle_timeout`` (:mod:`clearance.api.streams`).

    The SDK's Host/Origin check (against DNS rebinding) is off, as for the API: it would
    refuse a reverse proxy's ``Host``, and a rebinding page holds no bearer token."""
    server = create_server(engine, request_user, assistant=assistant)
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    server_settings = engine.settings.server
    streams = StreamGuard(
        per_user=server_settings.streams_per_user,
        idle_timeout_s=server_settings.stream_idle_timeout_s,
    )
    app.add_middleware(
        BearerGate,
        authenticators=authenticators,
        limiter=shared_limiter(engine),
        streams=streams,
    )
    # Outermost, as on the API: an oversize body is 413 before anything reads it.
    app.add_middleware(BodyLimit, limit=engine.settings.server.max_body_bytes)
    return app
