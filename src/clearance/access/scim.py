"""SCIM 2.0 provisioning (RFC 7643/7644) onto the directory: the logic behind ``/scim/v2``.

An identity provider (Entra ID, Okta, OneLogin, Google) creates, changes and removes users
and groups; each change is one new directory version, written with the SCIM resources in
one transaction, so a deactivation (``active: false``) empties that user's principal set
on the very next request. Nothing here does HTTP: :mod:`clearance.api.scim` maps requests
to these calls and :class:`ScimError` to RFC 7644 §3.12 error bodies.

Identity model
--------------
* A user's Clearance id — what document ACLs name (``user:<id>``) — is its ``userName``
  when it is created, and its SCIM ``id`` is that same string. The id never changes after:
  a later ``userName`` (a rename) is recorded as the user's sign-in name and alias, so a
  sign-in by the new name still resolves to this user (:meth:`Directory.resolve`). Every
  other name — ``externalId``, ``emails`` — is an alias too.
* A group's id is its ``displayName`` when it is created (what ACLs name as
  ``group:<id>``), kept as its SCIM ``id``; a rename changes the display name only.
  Members are SCIM ids: a user's or a group's (nested groups).
* Users and groups the directory already holds (from a file or ``POST /v1/directory/sync``)
  are listed too, so a provider that looks a user up before creating it (every validator
  does) finds and adopts it instead of failing on a duplicate.

Dialects
--------
PATCH operations are read as RFC 7644 §3.5.2 writes them and as providers send them: an
operation name in any case (Entra sends ``Replace``), booleans as strings (``"False"``), a
replace without a path carrying an object of attributes (Okta), members removed by a value
list or by a ``members[value eq "…"]`` path. Resources are validated with ``scim2-models``
and filters parsed with ``scim2-filter-parser``.
"""

from __future__ import annotations

import copy
import operator
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

import scim2_models as sm
from pydantic import ValidationError
from pydantic.alias_generators import to_snake
from scim2_filter_parser import ast as fast
from scim2_filter_parser.lexer import SCIMLexer
from scim2_filter_parser.parser import SCIMParser

from clearance.access.directory import Directory, DirectoryDoc, Group, User
from clearance.model import principal_id_problem

__all__ = [
    "ENTERPRISE",
    "GROUP",
    "USER",
    "ScimError",
    "ScimState",
    "ScimWrite",
    "apply",
    "group_resource",
    "list_resources",
    "user_resource",
]

USER = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP = "urn:ietf:params:scim:schemas:core:2.0:Group"
ENTERPRISE = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"
_UserModel = sm.User[sm.EnterpriseUser]
#: The most resources one list response holds (``ServiceProviderConfig`` says so).
MAX_RESULTS = 200


class ScimError(Exception):
    """An RFC 7644 §3.12 error: the HTTP status, the ``scimType`` (or ``None``) and a detail
    that names what was wrong without echoing more than the offending value."""

    def __init__(self, status: int, detail: str, scim_type: str | None = None) -> None:
        super().__init__(detail)
        self.status, self.detail, self.scim_type = status, detail, scim_type

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "schemas": ["urn:ietf:params:scim:api:messages:2.0:Error"],
            "status": str(self.status),
            "detail": self.detail,
        }
        if self.scim_type is not None:
            out["scimType"] = self.scim_type
        return out


@dataclass(frozen=True, slots=True)
class ScimState:
    """The SCIM resources as the provider last wrote them (id → resource), stored beside
    the directory; a directory user or group with no entry here is shown from the
    directory alone."""

    users: Mapping[str, Mapping[str, Any]]
    groups: Mapping[str, Mapping[str, Any]]

    @classmethod
    def from_json(cls, data: Any) -> ScimState:
        data = data if isinstance(data, dict) else {}
        return cls(
            MappingProxyType(dict(data.get("users") or {})),
            MappingProxyType(dict(data.get("groups") or {})),
        )

    def to_json(self) -> dict[str, Any]:
        return {"users": dict(self.users), "groups": dict(self.groups)}


@dataclass(frozen=True, slots=True)
class ScimWrite:
    """The outcome of one write: the new directory and SCIM state to store together, the
    resource to answer with (``None`` for a delete) and what was done, for the log."""

    directory: Directory
    state: ScimState
    resource: dict[str, Any] | None
    action: str
    target: str


# --------------------------------------------------------------------------- resources


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _meta(kind: str, ident: str, stored: Mapping[str, Any] | None, base: str) -> dict[str, Any]:
    previous = dict((stored or {}).get("meta") or {})
    created = previous.get("created") or _now()
    return {
        "resourceType": kind,
        "created": created,
        "lastModified": previous.get("lastModified") or created,
        "location": f"{base}/{kind}s/{ident}",
        "version": previous.get("version") or f'W/"{uuid.uuid4().hex[:12]}"',
    }


def user_resource(
    user: User, stored: Mapping[str, Any] | None, base: str, groups: Iterable[Group] = ()
) -> dict[str, Any]:
    """The SCIM User for a directory user: the provider's own resource as written, with
    ``id``, ``active``, ``groups`` and ``meta`` from the directory (which is the truth)."""
    out = copy.deepcopy(dict(stored)) if stored else {}
    out["schemas"] = out.get("schemas") or [USER]
    out["id"] = user.id
    out.setdefault("userName", user.attributes.get("user_name", user.id))
    if "name" in user.attributes and "displayName" not in out:
        out["displayName"] = user.attributes["name"]
    out["active"] = user.active
    member_of = [g.id for g in groups if f"user:{user.id}" in g.members]
    out["groups"] = [{"value": g, "display": g, "type": "direct"} for g in sorted(member_of)]
    out["meta"] = _meta("User", user.id, stored, base)
    return out


def group_resource(group: Group, stored: Mapping[str, Any] | None, base: str) -> dict[str, Any]:
    """The SCIM Group for a directory group, its members from the directory."""
    out = copy.deepcopy(dict(stored)) if stored else {}
    out["schemas"] = [GROUP]
    out["id"] = group.id
    out.setdefault("displayName", group.id)
    members = []
    for member in sorted(group.members):
        kind, _, ident = member.partition(":")
        members.append({"value": ident, "type": "User" if kind == "user" else "Group"})
    out["members"] = members
    out["meta"] = _meta("Group", group.id, stored, base)
    return out


# --------------------------------------------------------------------------- filters


def _parse_filter(text: str) -> fast.AST:
    try:
        return SCIMParser().parse(SCIMLexer().tokenize(text))
    except Exception as exc:  # the parser's own error types
        message = " ".join(str(exc).split())[:200]
        raise ScimError(400, f"cannot read the filter: {message}", "invalidFilter") from None


def _values(resource: Mapping[str, Any], path: fast.AttrPath) -> list[Any]:
    """The values an attribute path selects in a resource (names are case-insensitive)."""

    def get(obj: Any, name: str) -> Any:
        if not isinstance(obj, Mapping):
            return None
        for key, value in obj.items():
            if key.casefold() == name.casefold():
                return value
        return None

    top = get(resource, path.attr_name)
    if path.uri:
        top = get(get(resource, path.uri.rstrip(":")), path.attr_name)
    items = top if isinstance(top, list) else [top]
    if path.sub_attr is not None:
        items = [get(i, path.sub_attr.value) for i in items]
    elif any(isinstance(i, Mapping) for i in items):
        items = [get(i, "value") if isinstance(i, Mapping) else i for i in items]
    return [i for i in items if i is not None]


#: RFC 7644 §3.4.2.2 comparison operators (``pr`` is answered before any comparison).
_OPERATORS: dict[str, Callable[[str, str], bool]] = {
    "eq": operator.eq,
    "ne": operator.ne,
    "co": lambda text, wanted: wanted in text,
    "sw": str.startswith,
    "ew": str.endswith,
    "gt": operator.gt,
    "ge": operator.ge,
    "lt": operator.lt,
    "le": operator.le,
}


def _compare(op: str, value: Any, wanted: str, case_exact: bool) -> bool:
    if isinstance(value, bool):
        text = "true" if value else "false"
        wanted = wanted.casefold()
    else:
        text = str(value)
        if not case_exact:
            text, wanted = text.casefold(), wanted.casefold()
    compare = _OPERATORS.get(op.casefold())
    if compare is None:
        raise ScimError(400, f"unknown filter operator {op!r}", "invalidFilter")
    return compare(text, wanted)


def _matches(node: fast.AST, resource: Mapping[str, Any]) -> bool:
    if isinstance(node, fast.Filter):
        if node.namespace is not None:  # members[value eq "x"]: any item matching
            items = resource.get(node.namespace.attr_name) or []
            found = any(isinstance(i, Mapping) and _matches(node.expr, i) for i in items)
        else:
            found = _matches(node.expr, resource)
        return not found if node.negated else found
    if isinstance(node, fast.LogExpr):
        first = _matches(node.expr1, resource)
        if node.op.casefold() == "and":
            return first and _matches(node.expr2, resource)
        return first or _matches(node.expr2, resource)
    if isinstance(node, fast.AttrExpr):
        values = _values(resource, node.attr_path)
        if node.value.casefold() == "pr":
            return any(v not in ("", [], {}) for v in values)
        wanted = "" if node.comp_value is None else str(node.comp_value.value)
        # RFC 7643 §2.2: strings compare case-insensitively unless caseExact (ids are).
        case_exact = node.attr_path.attr_name.casefold() in {"id", "externalid"}
        return any(_compare(node.value, v, wanted, case_exact) for v in values)
    raise ScimError(400, "unsupported filter", "invalidFilter")


def list_resources(
    resources: Iterable[dict[str, Any]],
    *,
    filter_text: str | None,
    start_index: int,
    count: int | None,
) -> dict[str, Any]:
    """A ``ListResponse`` of the resources the filter keeps, sorted by id, from the
    1-based ``start_index`` (values below 1 are 1), at most ``count`` (and
    :data:`MAX_RESULTS`) of them; ``count=0`` gives the total only."""
    node = _parse_filter(filter_text) if filter_text else None
    kept = sorted(
        (r for r in resources if node is None or _matches(node, r)), key=lambda r: r["id"]
    )
    start = max(start_index, 1)
    size = MAX_RESULTS if count is None else max(0, min(count, MAX_RESULTS))
    page = kept[start - 1 : start - 1 + size]
    return {
        "schemas": ["urn:ietf:params:scim:api:messages:2.0:ListResponse"],
        "totalResults": len(kept),
        "startIndex": start,
        "itemsPerPage": len(page),
        "Resources": page,
    }


# --------------------------------------------------------------------------- writes


def _validated_user(body: Any, context: sm.Context) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ScimError(400, "expected a JSON object", "invalidSyntax")
    # Addresses are the provider's to vouch for: Okta's own test suite provisions
    # "test.user@okta.local", which a deliverability check refuses. They are read as
    # strings here, and the rest of the resource by the models.
    emails = body.get("emails")
    if emails is not None and (
        not isinstance(emails, list)
        or not all(isinstance(e, dict) and isinstance(e.get("value"), str) for e in emails)
    ):
        raise ScimError(400, "emails: expected a list of objects with a value", "invalidValue")
    others = {k: v for k, v in body.items() if k != "emails"}
    dumped = _validated(_UserModel, others, context, "userName")
    if emails is not None:
        dumped["emails"] = copy.deepcopy(emails)
    return dumped


def _validated_group(body: Any, context: sm.Context) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ScimError(400, "expected a JSON object", "invalidSyntax")
    return _validated(sm.Group, body, context, "displayName")


def _validated(
    model: type[sm.Resource[Any]], body: dict[str, Any], context: sm.Context, naming: str
) -> dict[str, Any]:
    """``body`` as ``model`` reads it, without ``meta`` and ``id`` (the directory's), after
    checking it has the attribute ``naming`` that names it."""
    try:
        resource = model.model_validate(body, scim_ctx=context)
    except ValidationError as exc:
        raise ScimError(400, _first_error(exc), "invalidValue") from None
    if not getattr(resource, to_snake(naming)):
        raise ScimError(400, f"{naming} is required", "invalidValue")
    dumped: dict[str, Any] = resource.model_dump(scim_ctx=sm.Context.RESOURCE_QUERY_RESPONSE)
    dumped.pop("meta", None)
    dumped.pop("id", None)
    return dumped


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(p) for p in error.get("loc", ()))
    return f"{where}: {error.get('msg', 'invalid')}" if where else str(error.get("msg"))


def _directory_user(ident: str, resource: Mapping[str, Any]) -> User:
    """The directory user a SCIM User stands for: active as it says, its names as aliases."""
    attrs: dict[str, str] = {"user_name": str(resource.get("userName") or ident)}
    name = resource.get("displayName") or (resource.get("name") or {}).get("formatted")
    if isinstance(name, str) and name:
        attrs["name"] = name
    enterprise = resource.get(ENTERPRISE) or {}
    if isinstance(enterprise, Mapping) and isinstance(enterprise.get("department"), str):
        attrs["department"] = enterprise["department"]
    if isinstance(resource.get("userType"), str):
        attrs["employment_type"] = resource["userType"]
    aliases = [resource.get("userName"), resource.get("externalId")]
    aliases += [e.get("value") for e in resource.get("emails") or [] if isinstance(e, Mapping)]
    return User(
        ident,
        resource.get("active") is not False,  # RFC 7643 §4.1.1: absent means not restricted
        attrs,
        tuple(a for a in aliases if isinstance(a, str) and a.strip()),
    )


def _new_id(value: str, what: str) -> str:
    problem = principal_id_problem(value)
    if problem is not None:
        raise ScimError(400, f"{what} {value!r} cannot be an id: {problem}", "invalidValue")
    return value


def _members(
    resource: Mapping[str, Any], directory: Directory, pending_groups: Iterable[str] = ()
) -> frozenset[str]:
    out = set()
    groups = set(directory.groups) | set(pending_groups)
    for member in resource.get("members") or []:
        if not isinstance(member, Mapping) or not isinstance(member.get("value"), str):
            raise ScimError(400, "members: each member needs a string value", "invalidValue")
        value = member["value"]
        kind = str(member.get("type") or "").casefold()
        is_group = kind == "group" or (
            kind != "user" and value in groups and value not in directory.users
        )
        problem = principal_id_problem(value)
        if problem is not None:
            raise ScimError(400, f"members: {value!r}: {problem}", "invalidValue")
        out.add(f"{'group' if is_group else 'user'}:{value}")
    return frozenset(out)


def _truthy(value: Any) -> Any:
    """Entra writes booleans as strings in PATCH values."""
    if isinstance(value, str) and value.casefold() in {"true", "false"}:
        return value.casefold() == "true"
    return value


def _set_path(resource: dict[str, Any], path: str, value: Any) -> None:
    """``name.givenName``, ``emails[type eq "work"].value``, ``urn:…:User:department``."""
    if path.startswith("urn:") and ":" in path[4:]:
        uri, _, attr = path.rpartition(":")
        resource.setdefault(uri, {})[attr] = value
        return
    if "[" in path:
        head, _, rest = path.partition("[")
        condition, _, sub = rest.partition("]")
        sub = sub.lstrip(".")
        key, _, wanted = condition.partition(" eq ")
        wanted = wanted.strip().strip('"')
        items = resource.setdefault(head, [])
        target = next(
            (i for i in items if isinstance(i, dict) and str(i.get(key.strip())) == wanted),
            None,
        )
        if target is None:
            target = {key.strip(): wanted}
            items.append(target)
        if sub:
            target[sub] = value
        return
    head, _, sub = path.partition(".")
    if sub:
        node = resource.setdefault(head, {})
        if isinstance(node, dict):
            node[sub] = value
        return
    resource[head] = value


def _patch(resource: dict[str, Any], body: Any, *, group: bool) -> dict[str, Any]:
    """``resource`` with the PatchOp ``body`` applied (a copy)."""
    if not isinstance(body, dict) or not isinstance(body.get("Operations"), list):
        raise ScimError(400, "expected a PatchOp with Operations", "invalidSyntax")
    out = copy.deepcopy(resource)
    for i, op in enumerate(body["Operations"]):
        if not isinstance(op, dict):
            raise ScimError(400, f"Operations[{i}]: expected an object", "invalidSyntax")
        name = str(op.get("op", "")).casefold()
        path = op.get("path")
        value = _truthy(op.get("value"))
        if name not in {"add", "replace", "remove"}:
            raise ScimError(400, f"Operations[{i}]: unknown op {op.get('op')!r}", "invalidValue")
        if path is not None and not isinstance(path, str):
            raise ScimError(400, f"Operations[{i}]: path must be a string", "invalidPath")
        if group and path is not None and path.split("[")[0].casefold() == "members":
            _patch_members(out, name, path, value, i)
            continue
        if path is None:
            if name == "remove" or not isinstance(value, dict):
                raise ScimError(400, f"Operations[{i}]: a path is required", "noTarget")
            for key, item in value.items():
                if group and key.casefold() == "members" and name == "add":
                    _patch_members(out, "add", "members", item, i)
                else:
                    _set_path(out, key, _truthy(item))
            continue
        if name == "remove":
            out.pop(path, None)
        else:
            _set_path(out, path, value)
    return out


def _patch_members(out: dict[str, Any], name: str, path: str, value: Any, i: int) -> None:
    members: list[dict[str, Any]] = list(out.get("members") or [])
    given = value if isinstance(value, list) else [] if value is None else [value]
    values = {str(m.get("value")) for m in given if isinstance(m, dict)}
    if "[" in path:  # members[value eq "id"]
        condition = path.partition("[")[2].partition("]")[0]
        key, _, wanted = condition.partition(" eq ")
        if key.strip() != "value":
            raise ScimError(400, f"Operations[{i}]: unsupported path {path!r}", "invalidPath")
        values.add(wanted.strip().strip('"'))
    if name == "remove":
        if "[" not in path and not values:
            out["members"] = []  # remove with no value: every member (RFC 7644 §3.5.2.2)
            return
        out["members"] = [m for m in members if str(m.get("value")) not in values]
        return
    if name == "replace":
        members = []
    known = {str(m.get("value")) for m in members}
    for member in given:
        if isinstance(member, dict) and str(member.get("value")) not in known:
            members.append(dict(member))
            known.add(str(member.get("value")))
    out["members"] = members


def apply(
    directory: Directory,
    state: ScimState,
    *,
    kind: str,
    method: str,
    ident: str | None,
    body: Any,
    base: str,
) -> ScimWrite:
    """One SCIM write — ``POST``, ``PUT``, ``PATCH`` or ``DELETE`` on ``Users`` or
    ``Groups`` — as the new directory and state (nothing is stored here). Raises
    :class:`ScimError` and changes nothing on a bad request."""
    if kind not in ("Users", "Groups"):
        raise ScimError(404, f"no resource type {kind!r}")
    ident, resource = _written(directory, state, kind, method, ident, body, base)
    users, groups = dict(state.users), dict(state.groups)
    stored = users if kind == "Users" else groups
    upserts: dict[str, Any] = {}
    if resource is None:
        stored.pop(ident, None)
    else:
        if kind == "Users":
            upserts[ident] = _directory_user(ident, resource)
        else:
            upserts[ident] = Group(ident, _members(resource, directory, [ident]))
            resource = {k: v for k, v in resource.items() if k != "members"}
        meta = _meta(kind[:-1], ident, stored.get(ident), base)
        stored[ident] = {**resource, "meta": {**meta, "lastModified": _now()}}
    removed = frozenset() if resource is not None else frozenset({ident})
    doc = DirectoryDoc(
        "scim",
        users=MappingProxyType(upserts if kind == "Users" else {}),
        groups=MappingProxyType(upserts if kind == "Groups" else {}),
        removed_users=removed if kind == "Users" else frozenset(),
        removed_groups=removed if kind == "Groups" else frozenset(),
        delta=True,
    )
    updated = directory.apply_delta(doc)
    new_state = ScimState(MappingProxyType(users), MappingProxyType(groups))
    shown: dict[str, Any] | None = None
    if kind == "Users" and ident in updated.users:
        shown = user_resource(updated.users[ident], users[ident], base, updated.groups.values())
    elif kind == "Groups" and ident in updated.groups:
        shown = group_resource(updated.groups[ident], groups[ident], base)
    action = {"POST": "create", "PUT": "replace", "PATCH": "patch", "DELETE": "delete"}[method]
    return ScimWrite(updated, new_state, shown, f"scim.{kind.lower()}.{action}", ident)


def _written(
    directory: Directory,
    state: ScimState,
    kind: str,
    method: str,
    ident: str | None,
    body: Any,
    base: str,
) -> tuple[str, dict[str, Any] | None]:
    """The id a write is to and the resource it writes, validated (``None`` to delete)."""
    users = kind == "Users"
    known: Mapping[str, User | Group] = directory.users if users else directory.groups
    stored = state.users if users else state.groups
    validated = _validated_user if users else _validated_group
    if method == "POST":
        resource = validated(body, sm.Context.RESOURCE_CREATION_REQUEST)
        naming = "userName" if users else "displayName"
        new = _new_id(str(resource[naming]), naming)
        if new in known and new in stored:
            raise ScimError(409, f"a {kind[:-1].lower()} {new!r} exists", "uniqueness")
        return new, resource
    ident = _existing(ident, known, kind[:-1])
    if method == "DELETE":
        return ident, None
    if method == "PUT":
        return ident, validated(body, sm.Context.RESOURCE_REPLACEMENT_REQUEST)
    if users:
        current = user_resource(directory.users[ident], stored.get(ident), base)
        dropped = {"groups", "meta", "id"}
    else:
        current = group_resource(directory.groups[ident], stored.get(ident), base)
        dropped = {"meta"}
    patched = _patch(current, body, group=not users)
    kept = {k: v for k, v in patched.items() if k not in dropped}
    return ident, validated(kept, sm.Context.RESOURCE_REPLACEMENT_REQUEST)


def _existing(ident: str | None, known: Mapping[str, Any], kind: str) -> str:
    if ident is None or ident not in known:
        raise ScimError(404, f"{kind} {ident!r} not found")
    return ident
