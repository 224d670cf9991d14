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

Text that is not valid Unicode — a lone UTF-16 surrogate, which only a JSON escape such as
``"\\ud800"`` can carry — is refused the same way over every transport: a tool error
naming the argument, ``bad_question`` for the question or query (the engine's own message)
and ``invalid_request`` for any other. The SDK's JSON parser rejects such a message before
any tool runs (over stdio it was dropped without an answer, over HTTP it was a 400 quoting
the parser), so the transports read what it refuses with Python's ``json``: a tool call
whose surrogates are all in its arguments goes on to the tool, which refuses it; a request
with one elsewhere is answered with a JSON-RPC error naming where, and a notification,
which may not be answered, is logged. Every message the SDK can parse takes its path
unchanged, and the server goes on serving.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.message import SessionMessage
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from clearance.answer.result import Status
from clearance.api.app import BodyLimit, error_response, read_body, replaying
from clearance.api.auth import Authenticator, Identity, request_headers
from clearance.api.errors import SIGN_IN_REQUIRED, Forbidden, Unauthenticated
from clearance.api.limits import Limiter, RateLimited, SharedRateLimiter, limiter_of
from clearance.api.streams import StreamGuard, TooManyStreams
from clearance.app import Clearance
from clearance.bounds import unicode_problem
from clearance.config import require_assistant, unknown_assistant_message
from clearance.errors import AuthError, ClearanceError, NotFoundError, QuestionError

__all__ = [
    "MCP_PATH",
    "SERVER_NAME",
    "UnicodeGate",
    "UserOf",
    "create_http_app",
    "create_server",
    "fixed_user",
    "serve_stdio",
    "shared_limiter",
    "unicode_refusal",
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
        raise Unauthenticated(SIGN_IN_REQUIRED)
    return identity.user_id


def request_scopes(ctx: ServerRequestContext[Any, Any]) -> frozenset[str]:
    """What the credential of a streamable HTTP call may do (a token made for searching
    cannot ask): the scopes of the identity :class:`BearerGate` put on the request."""
    request = ctx.request
    identity = getattr(request.state, _IDENTITY, None) if isinstance(request, Request) else None
    return identity.scopes if isinstance(identity, Identity) else frozenset()


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


# --------------------------------------------------------------------------- invalid Unicode

#: The arguments the engine reads as a question: invalid Unicode in one is ``bad_question``.
_QUESTION_ARGUMENTS = frozenset({"question", "query"})


def _lone_surrogate(
    value: Any, where: str = "", *, key: str = "name of a member"
) -> tuple[str, str] | None:
    """Where in a decoded JSON value the first lone surrogate is (``question``,
    ``params.name``; ``key`` for a name at the top) and what it is, or ``None``."""
    if isinstance(value, str):
        problem = unicode_problem(value)
        return None if problem is None else (where, problem)
    if isinstance(value, Mapping):
        for name, item in value.items():
            problem = unicode_problem(str(name))
            if problem is not None:
                return (f"name of a member of {where}" if where else key, problem)
            found = _lone_surrogate(item, f"{where}.{name}" if where else str(name))
            if found is not None:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _lone_surrogate(item, f"{where}[{index}]")
            if found is not None:
                return found
    return None


def unicode_refusal(arguments: Mapping[str, Any]) -> types.CallToolResult | None:
    """The tool error for ``arguments`` holding text that is not valid Unicode, naming the
    argument and where in it the lone surrogate is, or ``None`` when all of it is valid."""
    found = _lone_surrogate(arguments, key="name of an argument")
    if found is None:
        return None
    where, problem = found
    message = f"the {where} is not valid Unicode: {problem}"
    if where in _QUESTION_ARGUMENTS:
        return _refused(QuestionError(message))
    return _text(json.dumps({"error": "invalid_request", "message": message}), error=True)


def _surrogate_message(text: str | bytes) -> dict[str, Any] | None:
    """A JSON-RPC message the SDK's parser refuses only for a lone surrogate, as Python's
    ``json`` reads it; ``None`` for anything else, which stays the SDK's to answer."""
    try:
        message = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or _lone_surrogate(message) is None:
        return None
    return message


def _is_request(message: Mapping[str, Any]) -> bool:
    """Whether ``message`` asks for an answer (a notification or a response does not)."""
    return "method" in message and "id" in message


def _request_id(message: Mapping[str, Any]) -> str | int | None:
    """The id to answer ``message`` with: its own, or ``None`` (JSON ``null``) when it has
    none that can be sent back."""
    request_id = message.get("id")
    if not _is_request(message) or isinstance(request_id, bool):
        return None
    if isinstance(request_id, int) or (
        isinstance(request_id, str) and unicode_problem(request_id) is None
    ):
        return request_id
    return None


def _for_the_tool(message: Mapping[str, Any]) -> bool:
    """Whether ``message`` is a tool call whose lone surrogates are all in its arguments:
    then the tool itself refuses it, as it would in-process, before anything runs."""
    params = message.get("params")
    if message.get("method") != "tools/call" or _request_id(message) is None:
        return False
    if not isinstance(params, Mapping) or not isinstance(params.get("arguments"), Mapping):
        return False
    rest = {**message, "params": {k: v for k, v in params.items() if k != "arguments"}}
    return _lone_surrogate(rest) is None


def _unicode_error(message: Mapping[str, Any]) -> types.JSONRPCError:
    """The JSON-RPC error for a message with a lone surrogate outside a tool's arguments."""
    found = _lone_surrogate(message)
    assert found is not None
    where, problem = found
    code = types.INVALID_PARAMS if where.startswith("params") else types.INVALID_REQUEST
    return types.JSONRPCError(
        jsonrpc="2.0",
        id=_request_id(message),
        error=types.ErrorData(code=code, message=f"the {where} is not valid Unicode: {problem}"),
    )


# --------------------------------------------------------------------------- the server


def create_server(
    engine: Clearance,
    user_of: UserOf,
    *,
    assistant: str | None = None,
    limiter: Limiter | None = None,
    scopes_of: Callable[[ServerRequestContext[Any, Any]], frozenset[str]] | None = None,
) -> Server[Any]:
    """An MCP server over ``engine`` for the user ``user_of`` names on each call; with
    ``scopes_of``, a tool is refused unless the call's credential carries its scope
    (``search``, ``ask``), as the HTTP API refuses its routes.

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

    descriptions = {
        "search": "Search the documents the signed-in user may read now. Results are the JSON "
        "of `clearance search --json`; nothing outside the user's permissions.",
        "ask": "Answer a question from what the signed-in user may read, citing every "
        "source, or refuse. The JSON of `clearance ask --json`.",
    }

    def chosen(args: BaseModel) -> str | None:
        return getattr(args, "assistant", None) if narrowable else assistant

    def search(user_id: str, args: SearchArgs) -> types.CallToolResult:
        name = chosen(args)
        require_assistant(engine.settings, name)
        result = engine.search(user_id, args.query, assistant=name, k=args.k)
        return _ok(result.to_dict(args.query))

    def ask(user_id: str, args: AskArgs) -> types.CallToolResult:
        name = chosen(args)
        with orchestrator_lock:  # built once, on first use, by one thread
            engine.orchestrator()
        result = engine.ask(args.question, user_id, assistant=name)
        if result.status is Status.UNKNOWN_ASSISTANT:  # answered and traced, then refused
            return _refused(NotFoundError(unknown_assistant_message(engine.settings, name)))
        return _ok(result.to_dict())

    # Each tool: its arguments, and what answers a call (in a worker thread).
    handlers: dict[str, tuple[type[BaseModel], Callable[[str, Any], types.CallToolResult]]] = {
        "search": (search_model, search),
        "ask": (ask_model, ask),
    }
    tools = [
        types.Tool(
            name=name,
            description=descriptions[name],
            input_schema=model.model_json_schema(),
            annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
        )
        for name, (model, _) in handlers.items()
    ]

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
            handler = handlers.get(params.name)
            if handler is not None and scopes_of is not None and params.name not in scopes_of(ctx):
                return _refused(Forbidden(f"this credential lacks the {params.name!r} scope"))
            refusal = unicode_refusal(arguments)
            if refusal is not None:
                return refusal
            if handler is None:
                return _refused(NotFoundError(f"unknown tool {params.name!r} (search, ask)"))
            model, answer = handler
            return await anyio.to_thread.run_sync(answer, user_id, model.model_validate(arguments))
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


# --------------------------------------------------------------------------- stdio


def _refused_json(exc: Exception) -> str | bytes | None:
    """The text of a message the SDK's stdio transport could not parse as JSON."""
    if not isinstance(exc, ValidationError):
        return None
    errors = exc.errors()
    if len(errors) != 1 or errors[0]["type"] != "json_invalid":
        return None
    text = errors[0].get("input")
    return text if isinstance(text, str | bytes) else None


async def _reread(item: Exception, write_stream: Any) -> SessionMessage | Exception | None:
    """What the server is given for a message the SDK's stdio transport refused (``item``):
    a tool call whose lone surrogates are all in its arguments, parsed by Python's ``json``
    (the tool refuses it); ``None`` when it is answered here with a JSON-RPC error, or is
    a notification or a response, which is logged; else ``item`` itself, as the SDK had
    it."""
    text = _refused_json(item)
    message = None if text is None else _surrogate_message(text)
    if message is None:
        return item
    if _for_the_tool(message):
        try:
            parsed = types.jsonrpc_message_adapter.validate_python(message, by_name=False)
        except ValidationError as exc:
            return exc
        return SessionMessage(parsed)
    if _is_request(message):
        await write_stream.send(SessionMessage(_unicode_error(message)))
    else:
        log.warning("MCP message not read: %s", _unicode_error(message).error.message)
    return None


async def serve_stdio(
    server: Server[Any],
    stdin: anyio.AsyncFile[str] | None = None,
    stdout: anyio.AsyncFile[str] | None = None,
) -> None:
    """Serve ``server`` over the process's stdin and stdout (or ``stdin`` and ``stdout``)
    until the client disconnects: the SDK's transport, except that what its JSON parser
    refuses is read again (:func:`_reread`), so no request with a lone surrogate goes
    unanswered."""
    async with stdio_server(stdin, stdout) as (read_stream, write_stream):
        send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def forward() -> None:
            async with read_stream, send:
                async for item in read_stream:
                    passed = (
                        await _reread(item, write_stream) if isinstance(item, Exception) else item
                    )
                    if passed is not None:
                        await send.send(passed)

        async with receive, anyio.create_task_group() as tg:
            tg.start_soon(forward)
            await server.run(receive, write_stream, server.create_initialization_options())


# --------------------------------------------------------------------------- streamable HTTP


@dataclass(eq=False)
class BearerGate:
    """Every HTTP request must carry a credential one of ``authenticators`` accepts — the
    API's authentication — else 401 in the API's error shape, before the MCP app sees it.
    The identity is put on the request for :func:`request_user`; a client-sent value
    cannot get there, since the scope's state is set here and nowhere else. A ``GET`` (the
    event stream) takes one of the user's stream slots and is ended when idle (``streams``)."""

    app: ASGIApp
    authenticators: Sequence[Authenticator]
    limiter: Limiter | None = None
    streams: StreamGuard | None = None
    public_url: str | None = None

    def _challenge(self, scope: Scope, presented: bool) -> str:
        """RFC 9728 §5.1: the 401 names where the protected resource metadata is, so an
        MCP client can find the authorization server and sign the user in."""
        metadata = _origin(scope, self.public_url) + METADATA_PATH + MCP_PATH
        challenge = f'Bearer resource_metadata="{metadata}"'
        return challenge + ', error="invalid_token"' if presented else challenge

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path", "").startswith("/.well-known/"):
            await self.app(scope, receive, send)  # discovery documents are public
            return
        headers = request_headers(
            (k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]
        )
        client = scope.get("client")
        peer = client[0] if client else None
        identity = None
        error: ClearanceError = Unauthenticated(SIGN_IN_REQUIRED)
        try:
            for authenticator in self.authenticators:
                identity = await anyio.to_thread.run_sync(authenticator.authenticate, headers, peer)
                if identity is not None:
                    break
        except AuthError as exc:  # a refused credential: the API's 401, whatever the reason
            error = exc
        if identity is None:
            challenge = self._challenge(scope, presented="authorization" in headers)
            response = JSONResponse(
                error.to_dict(), status_code=401, headers={"WWW-Authenticate": challenge}
            )
            await response(scope, receive, send)
            return
        if self.limiter is not None:
            try:  # the API's allowance: one per user over every door and process
                await anyio.to_thread.run_sync(self.limiter.admit, identity.user_id, peer)
            except RateLimited as exc:
                await error_response(exc)(scope, receive, send)
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
            await error_response(exc)(scope, receive, send)


@dataclass(eq=False)
class UnicodeGate:
    """Answers a ``POST`` the SDK's streamable HTTP transport would refuse with its JSON
    parser's own words (400 ``Parse error: unexpected end of hex escape…``) because a
    string holds a lone surrogate. That parser reads the 2025 protocol versions; the 2026
    one reads the body with Python's ``json`` and gives the tool its arguments itself.

    A tool call whose surrogates are all in its arguments is answered with the tool's
    refusal (:func:`unicode_refusal`), as the tool answers it in-process; any other message
    with a JSON-RPC error naming where, with 400 as the SDK answers what it cannot read.
    Everything else is replayed to ``app`` unchanged. It sits inside :class:`BearerGate`:
    the caller is authenticated and counted first."""

    app: ASGIApp

    def _parsed_by_the_sdk(self, scope: Scope) -> bool:
        if scope["type"] != "http" or scope.get("method") != "POST":
            return False
        if scope.get("path") != MCP_PATH:
            return False
        versions = [v for k, v in scope["headers"] if k == b"mcp-protocol-version"]
        return not versions or versions[0].decode("latin-1") in HANDSHAKE_PROTOCOL_VERSIONS

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._parsed_by_the_sdk(scope):
            await self.app(scope, receive, send)
            return
        body = await read_body(receive)
        if body is None:
            return  # the client went away before sending its body
        parsed = _surrogate_message(body)
        if parsed is None:
            await self.app(scope, replaying(body, receive), send)
            return
        reply: types.JSONRPCResponse | types.JSONRPCError
        if _for_the_tool(parsed):
            refusal = unicode_refusal(parsed["params"]["arguments"])
            assert refusal is not None
            result = refusal.model_dump(mode="json", by_alias=True, exclude_unset=True)
            reply = types.JSONRPCResponse(jsonrpc="2.0", id=parsed["id"], result=result)
            status = 200
        else:
            reply = _unicode_error(parsed)
            status = 400
        content = reply.model_dump(mode="json", by_alias=True, exclude_unset=True)
        await JSONResponse(content, status)(scope, receive, send)


#: Where RFC 9728 protected resource metadata lives (the resource's path is appended).
METADATA_PATH = "/.well-known/oauth-protected-resource"


def _origin(scope: Scope, public_url: str | None) -> str:
    """``https://clearance.example.com``: ``[server] public_url`` when set (behind a
    proxy), else the scheme and Host of the request."""
    if public_url:
        return public_url.rstrip("/")
    headers = dict(scope.get("headers") or [])
    host = headers.get(b"host", b"").decode("latin-1") or "localhost"
    return f"{scope.get('scheme', 'http')}://{host}"


def discovery_routes(engine: Clearance) -> list[Route]:
    """The MCP authorization spec's discovery documents (2025-06-18): protected resource
    metadata (RFC 9728) at ``/.well-known/oauth-protected-resource`` and its path-suffixed
    form for :data:`MCP_PATH`, naming the configured OIDC provider as the authorization
    server; and ``/.well-known/oauth-authorization-server``, which older clients read at
    the resource's own origin, redirecting to the provider's discovery document. Clearance
    issues no tokens: the company's provider does, for the audience ``[server.oidc]``
    names, and the same verifier as the API's checks them (issuer, signature, expiry,
    audience — a token for another audience is refused, never passed through)."""
    server = engine.settings.server
    oidc = server.oidc

    async def resource(request: Request) -> JSONResponse:
        origin = _origin(request.scope, server.public_url)
        body: dict[str, Any] = {
            "resource": origin + MCP_PATH,
            "bearer_methods_supported": ["header"],
            "resource_name": "Clearance",
        }
        if oidc is not None:
            body["authorization_servers"] = [oidc.issuer]
            body["scopes_supported"] = list(oidc.scopes)
        return JSONResponse(body, headers={"Cache-Control": "max-age=300"})

    async def authorization_server(request: Request) -> Response:
        if oidc is None:
            return JSONResponse({"error": "not_found"}, status_code=404)
        url = oidc.issuer.rstrip("/") + "/.well-known/openid-configuration"
        return RedirectResponse(url, status_code=302)

    return [
        Route(METADATA_PATH, resource, methods=["GET"]),
        Route(METADATA_PATH + MCP_PATH, resource, methods=["GET"]),
        Route("/.well-known/oauth-authorization-server", authorization_server, methods=["GET"]),
    ]


def shared_limiter(engine: Clearance) -> SharedRateLimiter | None:
    """``[server] rate_limit`` as the API keeps it: in the index, per user."""
    return limiter_of(engine.store, engine.settings.server.rate_limit)


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

    A message with a lone surrogate, which the SDK's JSON parser refuses, is answered as
    every transport answers it (:class:`UnicodeGate`).

    The SDK's Host/Origin check (against DNS rebinding) is off, as for the API: it would
    refuse a reverse proxy's ``Host``, and a rebinding page holds no bearer token."""
    server = create_server(engine, request_user, assistant=assistant, scopes_of=request_scopes)
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    server_settings = engine.settings.server
    app.router.routes.extend(discovery_routes(engine))
    # Innermost: a message the SDK cannot parse is answered once the caller is admitted.
    app.add_middleware(UnicodeGate)
    app.add_middleware(
        BearerGate,
        authenticators=authenticators,
        limiter=shared_limiter(engine),
        streams=StreamGuard.of(server_settings),
        public_url=server_settings.public_url,
    )
    # Outermost, as on the API: an oversize body is 413 before anything reads it.
    app.add_middleware(BodyLimit, limit=engine.settings.server.max_body_bytes)
    return app
