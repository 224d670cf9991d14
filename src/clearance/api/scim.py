"""``/scim/v2``: the SCIM 2.0 service provider an identity provider provisions through.

Only a provisioning token reaches it — an API token created with the ``scim`` scope
(``clearance token create --user entra-provisioning --scope scim``), and nothing else: not
a person's token, not an administrator's, not a single sign-on session. Such a token signs
nobody in anywhere else (:class:`~clearance.api.auth.ApiTokenAuthenticator` refuses it).
Every write is one new directory version (:meth:`clearance.app.Clearance.provision`), so a
user the provider deactivates is refused on the next request. Requests and answers are
``application/scim+json``; errors are RFC 7644 §3.12 bodies.

Supported: ``Users`` and ``Groups`` with ``GET`` (``filter`` — ``eq``, ``ne``, ``co``,
``sw``, ``ew``, ``pr``, ``and``/``or``/``not``, ``members[value eq "…"]`` — and
``startIndex``/``count`` paging), ``POST``, ``PUT``, ``PATCH`` (RFC 7644 §3.5.2 and the
Entra and Okta dialects) and ``DELETE``; ``excludedAttributes=members``;
``ServiceProviderConfig``, ``ResourceTypes`` and ``Schemas``. Not supported (and said so
in ``ServiceProviderConfig``): bulk, sorting, ETags, password changes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any

import scim2_models as sm
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool

from clearance.access import scim
from clearance.api.auth import Identity, ProvisioningTokenAuthenticator, request_headers
from clearance.api.tokens import TokenStore
from clearance.app import Clearance

__all__ = ["MEDIA_TYPE", "scim_router"]

MEDIA_TYPE = "application/scim+json"


def _answer(content: Any, status: int = 200, location: str | None = None) -> Response:
    headers = {"Location": location} if location else None
    return JSONResponse(content, status, headers=headers, media_type=MEDIA_TYPE)


def _error(exc: scim.ScimError) -> Response:
    return _answer(exc.body(), exc.status)


def _engine(request: Request) -> Clearance:
    engine: Clearance = request.app.state.engine
    return engine


def _provisioner(request: Request) -> Identity:
    engine = _engine(request)
    gate = ProvisioningTokenAuthenticator(TokenStore(engine.store, clock=engine.clock))
    peer = request.client.host if request.client else None
    identity = gate.authenticate(request_headers(request.headers.items()), peer)
    if identity is None:
        raise _Refused()
    return identity


class _Refused(Exception):
    """No provisioning token: answered as a SCIM 401."""


class _ProvisioningRoute(APIRoute):
    """A route answered only for a provisioning token (else a SCIM 401), whose identity it
    leaves in ``request.state.provisioner``, with a :class:`~clearance.access.scim.ScimError`
    it raises as its SCIM error body. Every route of the router is one, so a route added
    there cannot forget the check."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def route(request: Request) -> Response:
            try:
                request.state.provisioner = _provisioner(request)
                return await handler(request)
            except _Refused:
                return _error(scim.ScimError(401, "a provisioning token (scope scim) is required"))
            except scim.ScimError as exc:
                return _error(exc)

        return route


def _base(request: Request) -> str:
    return str(request.base_url).rstrip("/") + "/scim/v2"


async def _body(request: Request) -> Any:
    raw = await request.body()
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise scim.ScimError(400, "the body is not JSON", "invalidSyntax") from None


def _resources(engine: Clearance, kind: str, base: str) -> list[dict[str, Any]]:
    directory, state = engine.scim_view()
    if kind == "Users":
        groups = list(directory.groups.values())
        return [
            scim.user_resource(u, state.users.get(u.id), base, groups)
            for u in directory.users.values()
        ]
    return [scim.group_resource(g, state.groups.get(g.id), base) for g in directory.groups.values()]


def _excluded(resource: dict[str, Any], excluded: str | None) -> dict[str, Any]:
    if not excluded:
        return resource
    drop = {name.strip().casefold() for name in excluded.split(",")}
    return {k: v for k, v in resource.items() if k.casefold() not in drop or k == "id"}


def _int(value: str | None, name: str, default: int | None) -> int | None:
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise scim.ScimError(400, f"{name} must be an integer", "invalidValue") from None


def _discovery() -> dict[str, Any]:
    ctx = sm.Context.RESOURCE_QUERY_RESPONSE
    config = sm.ServiceProviderConfig(
        patch=sm.Patch(supported=True),
        bulk=sm.Bulk(supported=False, max_operations=0, max_payload_size=0),
        filter=sm.Filter(supported=True, max_results=scim.MAX_RESULTS),
        change_password=sm.ChangePassword(supported=False),
        sort=sm.Sort(supported=False),
        etag=sm.ETag(supported=False),
        authentication_schemes=[
            sm.AuthenticationScheme(
                type=sm.AuthenticationScheme.Type.oauthbearertoken,
                name="Provisioning token",
                description="An API token with the scim scope, as a bearer token",
            )
        ],
    ).model_dump(scim_ctx=ctx)
    types = {
        "User": sm.ResourceType.from_resource(sm.User[sm.EnterpriseUser]),
        "Group": sm.ResourceType.from_resource(sm.Group),
    }
    schemas = {
        scim.USER: sm.User.to_schema(),
        scim.GROUP: sm.Group.to_schema(),
        scim.ENTERPRISE: sm.EnterpriseUser.to_schema(),
    }
    return {
        "config": config,
        "types": {k: v.model_dump(scim_ctx=ctx) for k, v in types.items()},
        "schemas": {k: v.model_dump(scim_ctx=ctx) for k, v in schemas.items()},
    }


def _list_response(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "schemas": ["urn:ietf:params:scim:api:messages:2.0:ListResponse"],
        "totalResults": len(items),
        "startIndex": 1,
        "itemsPerPage": len(items),
        "Resources": items,
    }


def scim_router(on_write: Callable[[Identity, scim.ScimWrite], None] | None = None) -> APIRouter:
    """The ``/scim/v2`` routes. ``on_write`` hears of every write that was stored (an audit
    log, say), with the provisioning token's identity."""
    router = APIRouter(
        prefix="/scim/v2", tags=["scim"], include_in_schema=True, route_class=_ProvisioningRoute
    )
    discovery = _discovery()

    @router.get("/ServiceProviderConfig")
    async def service_provider_config(request: Request) -> Response:
        return _answer(discovery["config"])

    @router.get("/ResourceTypes")
    async def resource_types(request: Request) -> Response:
        return _answer(_list_response(list(discovery["types"].values())))

    @router.get("/ResourceTypes/{name}")
    async def resource_type(request: Request, name: str) -> Response:
        if name not in discovery["types"]:
            raise scim.ScimError(404, f"no resource type {name!r}")
        return _answer(discovery["types"][name])

    @router.get("/Schemas")
    async def schemas(request: Request) -> Response:
        return _answer(_list_response(list(discovery["schemas"].values())))

    @router.get("/Schemas/{schema_id}")
    async def schema(request: Request, schema_id: str) -> Response:
        if schema_id not in discovery["schemas"]:
            raise scim.ScimError(404, f"no schema {schema_id!r}")
        return _answer(discovery["schemas"][schema_id])

    def collection(kind: str) -> None:
        @router.get(f"/{kind}", name=f"list_{kind.lower()}")
        async def list_(request: Request) -> Response:
            q = request.query_params
            engine = _engine(request)
            resources = await run_in_threadpool(_resources, engine, kind, _base(request))
            found = scim.list_resources(
                resources,
                filter_text=q.get("filter"),
                start_index=_int(q.get("startIndex"), "startIndex", 1) or 1,
                count=_int(q.get("count"), "count", None),
            )
            excluded = q.get("excludedAttributes")
            found["Resources"] = [_excluded(r, excluded) for r in found["Resources"]]
            return _answer(found)

        @router.get(f"/{kind}/{{ident}}", name=f"get_{kind.lower()}")
        async def get(request: Request, ident: str) -> Response:
            engine = _engine(request)
            resources = await run_in_threadpool(_resources, engine, kind, _base(request))
            for resource in resources:
                if resource["id"] == ident:
                    return _answer(
                        _excluded(resource, request.query_params.get("excludedAttributes"))
                    )
            raise scim.ScimError(404, f"{kind[:-1]} {ident!r} not found")

        async def write(request: Request, method: str, ident: str | None) -> Response:
            identity: Identity = request.state.provisioner
            engine = _engine(request)
            if engine.settings.directories:
                # A directory source owns the whole directory: its next read would
                # undo a SCIM write, so one of the two keeps it, never both.
                owner = ", ".join(sorted(engine.settings.directories))
                raise scim.ScimError(
                    409,
                    f"the directory is kept by the directory source {owner}: provision "
                    "there, or remove [directories] to provision through SCIM",
                    "mutability",
                )
            body = None if method == "DELETE" else await _body(request)
            base = _base(request)

            def change(directory: Any, state: scim.ScimState) -> scim.ScimWrite:
                return scim.apply(
                    directory, state, kind=kind, method=method, ident=ident, body=body,
                    base=base,
                )  # fmt: skip

            done = await run_in_threadpool(engine.provision, change)
            if on_write is not None:
                on_write(identity, done)
            if done.resource is None:
                return Response(status_code=204)
            if method == "POST":
                return _answer(done.resource, 201, done.resource["meta"]["location"])
            return _answer(done.resource)

        @router.post(f"/{kind}", name=f"create_{kind.lower()}")
        async def create(request: Request) -> Response:
            return await write(request, "POST", None)

        @router.put(f"/{kind}/{{ident}}", name=f"replace_{kind.lower()}")
        async def replace(request: Request, ident: str) -> Response:
            return await write(request, "PUT", ident)

        @router.patch(f"/{kind}/{{ident}}", name=f"patch_{kind.lower()}")
        async def patch(request: Request, ident: str) -> Response:
            return await write(request, "PATCH", ident)

        @router.delete(f"/{kind}/{{ident}}", name=f"delete_{kind.lower()}")
        async def delete(request: Request, ident: str) -> Response:
            return await write(request, "DELETE", ident)

    collection("Users")
    collection("Groups")
    return router
