"""The directory: users, nested groups and the principal set of a user (docs/design.md §2, §7).

Why this module exists
----------------------
Every authorisation decision in Clearance compares a document's ACL with the caller's
*principal set*::

    {user:<id>} ∪ {group:<g> for every group reachable through nested membership} ∪ {everyone}

The set is computed at query time from the directory, so a membership change or a disabled
account takes effect on the next directory update without re-indexing anything. This module is
pure logic: it parses directory sync documents that somebody else has read from disk or from a
source system, and answers membership questions. It does no I/O.

Guarantees
----------
* A disabled or unknown user has the **empty** principal set — not even ``everyone`` — so a
  disabled account retrieves nothing from anything (docs/design.md §7, invariant 3), even though the
  account stays listed as a member of its groups.
* Nested membership is transitive and cycles (including a group that contains itself) are legal;
  every traversal terminates.
* Members that name unknown users or groups are legal and match nothing. Removing a user or group
  does **not** rewrite other groups' member lists: a dangling ``group:x`` or ``user:x`` simply
  resolves to nothing. Consequently, re-creating the *same id* later revives those memberships —
  which is what a source system that re-adds an id means, and why ids should be stable,
  never-reused identifiers (SCIM ids are).
* A :class:`Directory` is an immutable value: :meth:`Directory.replace` and
  :meth:`Directory.apply_delta` return a new instance with ``version + 1``. Caches live on the
  instance, so they can never outlive the data they were computed from.
* Malformed input raises :class:`~clearance.errors.DirectoryError` whose message names the
  ``source`` and the JSON path of the problem, e.g. ``dir.json: users[3].active: expected a
  boolean, got string``. JSON text is read strictly (:func:`clearance.jsonio.loads`): a key
  repeated in one object is an error naming the line and the object (``dir.json:4: users[1]:
  key 'active' appears twice in one object``), never "last wins", and nesting too deep for the
  parser is an error, not a ``RecursionError``. Nothing is half-applied: parsing finishes
  before any state changes.
* User and group ids, and the ids in member principals, follow the one principal id grammar
  (:func:`clearance.model.principal_id_problem`), so every id the directory holds can be
  named in an ACL and every principal an ACL may name has the shape of a directory id.

Accepted input shapes (detected automatically by :func:`parse_directory`)
------------------------------------------------------------------------
1. Clearance JSON::

       {"users":  [{"id": "alice", "active": true, "attributes": {"department": "finance"}}],
        "groups": [{"id": "finance", "members": ["user:alice", "group:finance-emea"]}],
        "removed_users": ["bob"], "removed_groups": ["old"],      # deltas only
        "version": 7}                                             # optional, see from_json

   A document carrying ``removed_users`` or ``removed_groups`` (even empty) is a *delta* and
   :meth:`Directory.replace` refuses it, so a delta can never be mistaken for a snapshot and
   wipe the directory.
2. SCIM 2.0 (RFC 7643/7644): a ``ListResponse`` of User and Group resources, a single User or
   Group resource (both snapshots), or a ``BulkRequest`` whose operations are upserts
   (POST/PUT, or PATCH carrying the full resource) and removals (DELETE ``/Users/<id>`` or
   ``/Groups/<id>``) — always a delta.
"""

from __future__ import annotations

import bisect
import json
import re
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, NoReturn

from clearance import jsonio
from clearance.errors import DirectoryError
from clearance.model import EVERYONE, parse_principal, principal_id_problem

__all__ = [
    "AliasMatch",
    "Directory",
    "DirectoryDoc",
    "Group",
    "User",
    "parse_directory",
    "unknown_principal_warning",
]

SCIM_LIST_RESPONSE = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
SCIM_BULK_REQUEST = "urn:ietf:params:scim:api:messages:2.0:BulkRequest"
SCIM_PATCH_OP = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
SCIM_USER = "urn:ietf:params:scim:schemas:core:2.0:User"
SCIM_GROUP = "urn:ietf:params:scim:schemas:core:2.0:Group"
SCIM_ENTERPRISE_USER = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"

_USER_PREFIX = "user:"
_GROUP_PREFIX = "group:"
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SCIM_RESOURCE_PATH = re.compile(r"/(Users|Groups)/([^/]+)")
_SCIM_REF = re.compile(r"/(Users|Groups)/([^/?#]+)/?$")


def _member_problem(value: str) -> str | None:
    """Why ``value`` is not a valid group member principal, or ``None`` if it is.

    User and group ids, here and everywhere in the directory, follow the one principal id
    grammar (:func:`clearance.model.principal_id_problem`): an id the directory accepted could
    otherwise never be named in an ACL, or the reverse.
    """
    kind, sep, ident = value.partition(":")
    if sep and kind in ("user", "group"):
        problem = principal_id_problem(ident)
        return None if problem is None else f"bad member {_shown(value)}: id {problem}"
    try:
        parse_principal(value)
    except ValueError as exc:
        return str(exc)
    # The only principal without a kind prefix is EVERYONE.
    return "'everyone' cannot be a group member; members are 'user:<id>' or 'group:<id>'"


def _shown(value: str) -> str:
    """``repr`` of ``value``, cut short so an error message stays one readable line."""
    return repr(value) if len(value) <= 80 else repr(value[:80]) + "…"


def alias_key(name: str) -> str:
    """How an alias is compared: surrounding space dropped and case folded.

    Sign-in names (UPNs, mail addresses, sAMAccountNames) are case-insensitive in every
    directory that issues them, so ``Alice@Acme.example`` and ``alice@acme.example`` are one
    alias. Object ids (GUIDs) fold the same way.
    """
    return name.strip().casefold()


@dataclass(frozen=True, slots=True)
class AliasMatch:
    """Who a sign-in name resolved to, and by which of the user's names."""

    user_id: str
    matched: str
    """``"id"`` when the name is the user id itself, else the alias (as stored) that matched."""


@dataclass(frozen=True, slots=True)
class User:
    """One account. ``active=False`` means the account gets nothing (docs/design.md §7).

    ``attributes`` (department, employment type, display name …) are informational: they never
    widen the principal set. They are stored as a read-only mapping sorted by key, so a ``User``
    cannot change after construction; equality compares them, hashing ignores them.

    ``aliases`` are the user's other names in the identity provider and directory (UPN, mail,
    object id, sAMAccountName, SCIM ``userName``/``externalId``), stored case-folded and sorted
    (:func:`alias_key`). They let a sign-in by any configured claim resolve to this one user
    (:meth:`Directory.resolve`); like attributes, they never widen the principal set.
    """

    id: str
    active: bool
    attributes: Mapping[str, str] = field(default_factory=dict, hash=False)
    aliases: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or principal_id_problem(self.id) is not None:
            raise DirectoryError(f"bad user id: {self.id!r}")
        if isinstance(self.aliases, str) or not all(
            isinstance(a, str) and a.strip() for a in self.aliases
        ):
            raise DirectoryError(f"user {self.id}: aliases must be non-empty strings")
        # One spelling per alias (case-folded), sorted, never the id itself.
        folded = {alias_key(a) for a in self.aliases} - {alias_key(self.id)}
        object.__setattr__(self, "aliases", tuple(sorted(folded)))
        if not isinstance(self.active, bool):
            raise DirectoryError(f"user {self.id}: active must be a boolean")
        if not isinstance(self.attributes, Mapping):
            raise DirectoryError(f"user {self.id}: attributes must be a mapping")
        attrs: dict[str, str] = {}
        for key, val in sorted(self.attributes.items()):
            if not isinstance(key, str) or not key or not isinstance(val, str):
                raise DirectoryError(f"user {self.id}: attributes must map strings to strings")
            attrs[key] = val
        object.__setattr__(self, "attributes", MappingProxyType(attrs))


@dataclass(frozen=True, slots=True)
class Group:
    """One group. ``members`` are principal strings ``user:<id>`` / ``group:<id>``.

    Members may name users or groups that do not exist (they match nothing) and may form cycles,
    including the group itself.
    """

    id: str
    members: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or principal_id_problem(self.id) is not None:
            raise DirectoryError(f"bad group id: {self.id!r}")
        members = frozenset(self.members)
        for member in members:
            problem = _member_problem(member)
            if problem is not None:
                raise DirectoryError(f"group {self.id}: {problem}")
        object.__setattr__(self, "members", members)


@dataclass(frozen=True, slots=True)
class DirectoryDoc:
    """One parsed directory sync document, not yet applied to anything.

    ``users``/``groups`` are upserts keyed by id (whole records: an upsert replaces the previous
    record, attributes and member lists are not merged). ``removed_users``/``removed_groups`` are
    ids to delete; a parsed document never names an id both as an upsert and a removal of the
    same kind (should a hand-built one do so, :meth:`Directory.apply_delta` removes first, then
    upserts).
    ``delta`` is true when the document can only be a delta (SCIM BulkRequest, or Clearance JSON
    with a ``removed_*`` key); :meth:`Directory.replace` refuses such documents. ``version`` is
    the optional ``version`` of Clearance JSON, used only by :meth:`Directory.from_json`.
    """

    source: str
    users: Mapping[str, User] = field(default_factory=lambda: MappingProxyType({}))
    groups: Mapping[str, Group] = field(default_factory=lambda: MappingProxyType({}))
    removed_users: frozenset[str] = frozenset()
    removed_groups: frozenset[str] = frozenset()
    delta: bool = False
    version: int | None = None


# --------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def _key(path: str, key: str) -> str:
    """Extend a JSON path with an object key (``a.b`` or ``a["urn:…"]`` when not an identifier)."""
    step = f".{key}" if _IDENTIFIER.match(key) else f"[{json.dumps(key)}]"
    if path == "$":
        return step[1:] if step.startswith(".") else f"${step}"
    return path + step


def _index(path: str, i: int) -> str:
    return f"{path}[{i}]"


_Kind = Literal["user", "group"]
_USER_KEYS = frozenset({"id", "active", "attributes", "aliases"})
_GROUP_KEYS = frozenset({"id", "members"})
_JSON_TYPES: dict[str, type | tuple[type, ...]] = {
    "object": Mapping,
    "array": (list, tuple),
    "string": str,
    "boolean": bool,
}


@dataclass(slots=True)
class _PendingGroup:
    """A group whose untyped SCIM members still need resolving against the document's ids."""

    id: str
    path: str
    members: set[str]
    untyped: list[tuple[str, str]]  # (value, json path)


class _Parser:
    """Parses one document; every error names ``source`` and the JSON path."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.users: dict[str, User] = {}
        self.groups: dict[str, _PendingGroup] = {}
        self.removed_users: dict[str, str] = {}
        self.removed_groups: dict[str, str] = {}
        self.seen: dict[tuple[_Kind, str], str] = {}

    # -- primitives ---------------------------------------------------------------------------

    def fail(self, path: str, message: str) -> NoReturn:
        raise DirectoryError(f"{self.source}: {path}: {message}")

    def decode(self, raw: str | bytes) -> Any:
        """Strict JSON (:func:`clearance.jsonio.loads`); a repeated key is reported with the
        line of its second occurrence and the path of its object, because "last wins" would
        silently pick one of two values the operator wrote."""
        try:
            return jsonio.loads(raw)
        except jsonio.JSONInputError as exc:
            message = str(exc)
            text = raw if isinstance(raw, str) else raw.decode("utf-8", "replace")
            for line, path, key in _repeated_keys(text):
                if f"key {key!r} appears twice" in message:
                    raise DirectoryError(
                        f"{self.source}:{line}: {path}: key {key!r} appears twice in one object"
                    ) from None
            self.fail("$", message)

    def expect(self, value: object, path: str, kind: str) -> Any:
        """Return ``value`` if it has JSON type ``kind``, else fail naming the path."""
        if not isinstance(value, _JSON_TYPES[kind]):
            article = "an" if kind[0] in "aeiou" else "a"
            self.fail(path, f"expected {article} {kind}, got {_json_type(value)}")
        return value

    def ident(self, value: object, path: str) -> str:
        text: str = self.expect(value, path, "string")
        problem = principal_id_problem(text)
        if problem is not None:
            if text.startswith("bulkId:"):
                self.fail(path, f"bulkId references ({text!r}) are not supported; use real ids")
            self.fail(path, f"id {problem}")
        return text

    def only_keys(self, obj: Mapping[str, Any], path: str, allowed: tuple[str, ...]) -> None:
        for key in obj:
            if key not in allowed:
                self.fail(
                    _key(path, str(key)), f"unknown key (expected one of {', '.join(allowed)})"
                )

    def claim(self, kind: _Kind, ident: str, path: str) -> None:
        """Record that ``ident`` occurs once in this document; a second occurrence is an error."""
        first = self.seen.get((kind, ident))
        if first is not None:
            self.fail(path, f"duplicate {kind} id {ident!r} (first at {first})")
        self.seen[(kind, ident)] = path

    # -- results ------------------------------------------------------------------------------

    def add_user(self, user: User, id_path: str) -> None:
        self.claim("user", user.id, id_path)
        self.users[user.id] = user

    def add_group(self, group: _PendingGroup, id_path: str) -> None:
        self.claim("group", group.id, id_path)
        self.groups[group.id] = group

    def remove(self, kind: _Kind, ident: str, path: str) -> None:
        self.claim(kind, ident, path)
        (self.removed_users if kind == "user" else self.removed_groups)[ident] = path

    def finish(self, *, delta: bool, version: int | None) -> DirectoryDoc:
        groups: dict[str, Group] = {}
        for pending in self.groups.values():
            members = set(pending.members)
            for value, path in pending.untyped:
                if value in self.users:
                    members.add(_USER_PREFIX + value)
                elif value in self.groups:
                    members.add(_GROUP_PREFIX + value)
                else:
                    self.fail(
                        path,
                        f"member {value!r} has no type and is neither a user nor a group in "
                        'this document; add "type": "User" or "Group"',
                    )
            groups[pending.id] = Group(pending.id, frozenset(members))
        return DirectoryDoc(
            source=self.source,
            users=MappingProxyType(dict(self.users)),
            groups=MappingProxyType(groups),
            removed_users=frozenset(self.removed_users),
            removed_groups=frozenset(self.removed_groups),
            delta=delta,
            version=version,
        )

    # -- Clearance JSON -----------------------------------------------------------------------

    def clearance(self, data: Mapping[str, Any]) -> DirectoryDoc:
        self.only_keys(data, "$", ("users", "groups", "removed_users", "removed_groups", "version"))
        version: int | None = None
        if "version" in data:
            raw = data["version"]
            if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
                self.fail("version", f"expected a non-negative integer, got {_json_type(raw)}")
            version = raw
        for i, item in enumerate(self.expect(data.get("users", []), "users", "array")):
            self.clearance_user(item, _index("users", i))
        for i, item in enumerate(self.expect(data.get("groups", []), "groups", "array")):
            self.clearance_group(item, _index("groups", i))
        removals: tuple[tuple[str, _Kind], ...] = (
            ("removed_users", "user"),
            ("removed_groups", "group"),
        )
        for key, kind in removals:
            for i, item in enumerate(self.expect(data.get(key, []), key, "array")):
                path = _index(key, i)
                self.remove(kind, self.ident(item, path), path)
        delta = "removed_users" in data or "removed_groups" in data
        return self.finish(delta=delta, version=version)

    # The two loops below run once per user/group/membership of a whole directory, so JSON
    # paths are only formatted when something is wrong.

    def clearance_user(self, item: object, path: str) -> None:
        obj: Mapping[str, Any] = self.expect(item, path, "object")
        if not _USER_KEYS.issuperset(obj):
            self.only_keys(obj, path, ("id", "active", "attributes", "aliases"))
        for required in ("id", "active"):
            if required not in obj:
                self.fail(path, f"missing required key {required!r}")
        id_path = f"{path}.id"
        ident = self.ident(obj["id"], id_path)
        active = obj["active"]
        if not isinstance(active, bool):
            self.expect(active, f"{path}.active", "boolean")
        attrs: dict[str, str] = {}
        raw_attrs = obj.get("attributes")
        if raw_attrs:
            attrs_path = f"{path}.attributes"
            self.expect(raw_attrs, attrs_path, "object")
            for key, val in raw_attrs.items():
                if not key:
                    self.fail(attrs_path, "attribute names must not be empty")
                attrs[key] = self.expect(val, _key(attrs_path, key), "string")
        elif raw_attrs is not None:
            self.expect(raw_attrs, f"{path}.attributes", "object")
        aliases: list[str] = []
        raw_aliases = obj.get("aliases")
        if raw_aliases is not None:
            aliases_path = f"{path}.aliases"
            self.expect(raw_aliases, aliases_path, "array")
            for j, alias in enumerate(raw_aliases):
                alias_path = f"{aliases_path}[{j}]"
                self.expect(alias, alias_path, "string")
                if not alias.strip():
                    self.fail(alias_path, "an alias must not be empty")
                aliases.append(alias)
        self.add_user(User(ident, active, attrs, tuple(aliases)), id_path)

    def clearance_group(self, item: object, path: str) -> None:
        obj: Mapping[str, Any] = self.expect(item, path, "object")
        if not _GROUP_KEYS.issuperset(obj):
            self.only_keys(obj, path, ("id", "members"))
        if "id" not in obj:
            self.fail(path, "missing required key 'id'")
        id_path = f"{path}.id"
        ident = self.ident(obj["id"], id_path)
        raw_members = obj.get("members", [])
        if not isinstance(raw_members, list | tuple):
            self.expect(raw_members, f"{path}.members", "array")
        members: set[str] = set()
        for j, member in enumerate(raw_members):
            problem = (
                _member_problem(member)
                if isinstance(member, str)
                else f"expected a string, got {_json_type(member)}"
            )
            if problem is not None:
                self.fail(f"{path}.members[{j}]", problem)
            members.add(member)
        self.add_group(_PendingGroup(ident, path, members, []), id_path)

    # -- SCIM ---------------------------------------------------------------------------------

    def scim(self, data: Mapping[str, Any]) -> DirectoryDoc:
        schemas = self.schemas(data, "$")
        if SCIM_LIST_RESPONSE in schemas:
            resources = self.expect(data.get("Resources", []), "Resources", "array")
            total = data.get("totalResults")
            if total is not None:
                if isinstance(total, bool) or not isinstance(total, int):
                    self.fail("totalResults", f"expected an integer, got {_json_type(total)}")
                if total != len(resources):
                    self.fail(
                        "totalResults",
                        f"{total} results but {len(resources)} Resources: this is one page of a "
                        "paginated response; merge all pages into one document first",
                    )
            for i, resource in enumerate(resources):
                self.scim_resource(resource, _index("Resources", i))
            return self.finish(delta=False, version=None)
        if SCIM_BULK_REQUEST in schemas:
            operations = self.expect(data.get("Operations"), "Operations", "array")
            for i, operation in enumerate(operations):
                self.scim_operation(operation, _index("Operations", i))
            return self.finish(delta=True, version=None)
        if self.resource_kind(data, "$") is not None:
            self.scim_resource(data, "$")
            return self.finish(delta=False, version=None)
        self.fail(
            "schemas",
            "unsupported SCIM message: expected a ListResponse, a BulkRequest, or a User or "
            "Group resource",
        )

    def schemas(self, obj: Mapping[str, Any], path: str) -> list[str]:
        if "schemas" not in obj:
            return []
        schemas_path = _key(path, "schemas")
        raw = self.expect(obj["schemas"], schemas_path, "array")
        for i, item in enumerate(raw):
            self.expect(item, _index(schemas_path, i), "string")
        return list(raw)

    def resource_kind(self, obj: Mapping[str, Any], path: str) -> _Kind | None:
        """User/Group from ``schemas`` or ``meta.resourceType``; ``None`` if neither says."""
        schemas = self.schemas(obj, path)
        by_schema: set[_Kind] = set()
        if SCIM_USER in schemas:
            by_schema.add("user")
        if SCIM_GROUP in schemas:
            by_schema.add("group")
        if len(by_schema) > 1:
            self.fail(_key(path, "schemas"), "a resource cannot be both a User and a Group")
        by_meta: _Kind | None = None
        if "meta" in obj:
            meta_path = _key(path, "meta")
            meta: Mapping[str, Any] = self.expect(obj["meta"], meta_path, "object")
            if "resourceType" in meta:
                rt_path = _key(meta_path, "resourceType")
                rtype: str = self.expect(meta["resourceType"], rt_path, "string")
                if rtype == "User":
                    by_meta = "user"
                elif rtype == "Group":
                    by_meta = "group"
                else:
                    self.fail(rt_path, f"unsupported resourceType {rtype!r} (User or Group)")
        if by_schema and by_meta is not None and by_meta not in by_schema:
            self.fail(
                _key(_key(path, "meta"), "resourceType"), "contradicts the resource's schemas"
            )
        if by_schema:
            return next(iter(by_schema))
        return by_meta

    def scim_resource(
        self,
        item: object,
        path: str,
        *,
        kind: _Kind | None = None,
        ident: str | None = None,
        ident_path: str | None = None,
    ) -> None:
        """Parse one User/Group resource. ``kind``/``ident`` come from a bulk operation's path."""
        obj: Mapping[str, Any] = self.expect(item, path, "object")
        declared = self.resource_kind(obj, path)
        if kind is not None and declared is not None and declared != kind:
            self.fail(path, f"resource is a {declared} but the operation path names a {kind}")
        kind = kind or declared
        if kind is None:
            self.fail(
                path,
                "cannot tell whether this resource is a User or a Group: add its core schema "
                "URN to 'schemas' or set meta.resourceType",
            )
        id_path = _key(path, "id")
        if "id" in obj:
            own = self.ident(obj["id"], id_path)
            if ident is not None and own != ident:
                self.fail(id_path, f"id {own!r} does not match the operation path id {ident!r}")
            ident = own
        elif ident is None:
            self.fail(path, "missing required key 'id'")
        else:
            id_path = ident_path or path
        if kind == "user":
            self.add_user(self.scim_user(obj, path, ident), id_path)
        else:
            self.add_group(self.scim_group(obj, path, ident), id_path)

    def optional_string(self, obj: Mapping[str, Any], key: str, path: str) -> str | None:
        if obj.get(key) is None:
            return None
        value: str = self.expect(obj[key], _key(path, key), "string")
        return value

    def scim_user(self, obj: Mapping[str, Any], path: str, ident: str) -> User:
        active = True  # RFC 7643 §4.1.1: absent means the service does not restrict the account
        if obj.get("active") is not None:
            active = self.expect(obj["active"], _key(path, "active"), "boolean")
        attrs: dict[str, str] = {}
        user_name = self.optional_string(obj, "userName", path)
        if user_name is not None:
            attrs["user_name"] = user_name
        user_type = self.optional_string(obj, "userType", path)
        if user_type is not None:
            attrs["employment_type"] = user_type
        name = self.optional_string(obj, "displayName", path)
        if name is None and obj.get("name") is not None:
            name_path = _key(path, "name")
            name_obj: Mapping[str, Any] = self.expect(obj["name"], name_path, "object")
            name = self.optional_string(name_obj, "formatted", name_path)
        if name is not None:
            attrs["name"] = name
        if obj.get(SCIM_ENTERPRISE_USER) is not None:
            ext_path = _key(path, SCIM_ENTERPRISE_USER)
            ext: Mapping[str, Any] = self.expect(obj[SCIM_ENTERPRISE_USER], ext_path, "object")
            department = self.optional_string(ext, "department", ext_path)
            if department is not None:
                attrs["department"] = department
        # RFC 7643 §4.1.1/§3.1: userName is the sign-in name, externalId the provisioning
        # client's id, emails the addresses; each is another name for this one user.
        aliases = [a for a in (user_name, self.optional_string(obj, "externalId", path)) if a]
        if obj.get("emails") is not None:
            emails_path = _key(path, "emails")
            for j, email in enumerate(self.expect(obj["emails"], emails_path, "array")):
                entry_path = _index(emails_path, j)
                entry: Mapping[str, Any] = self.expect(email, entry_path, "object")
                value = self.optional_string(entry, "value", entry_path)
                if value and value.strip():
                    aliases.append(value)
        return User(ident, active, attrs, tuple(a for a in aliases if a.strip()))

    def scim_group(self, obj: Mapping[str, Any], path: str, ident: str) -> _PendingGroup:
        self.optional_string(obj, "displayName", path)  # validated, not kept
        members: set[str] = set()
        untyped: list[tuple[str, str]] = []
        members_path = _key(path, "members")
        raw_members = obj.get("members")
        for j, raw in enumerate(
            [] if raw_members is None else self.expect(raw_members, members_path, "array")
        ):
            member_path = _index(members_path, j)
            member: Mapping[str, Any] = self.expect(raw, member_path, "object")
            value_path = _key(member_path, "value")
            if "value" not in member:
                self.fail(member_path, "missing required key 'value'")
            value = self.ident(member["value"], value_path)
            mtype = self.optional_string(member, "type", member_path)
            if mtype is not None:
                if mtype.lower() == "user":
                    members.add(_USER_PREFIX + value)
                elif mtype.lower() == "group":
                    members.add(_GROUP_PREFIX + value)
                else:
                    self.fail(_key(member_path, "type"), f"unsupported type {mtype!r} (User/Group)")
                continue
            ref = self.optional_string(member, "$ref", member_path)
            match = _SCIM_REF.search(ref) if ref is not None else None
            if match is not None and match.group(2) == value:
                prefix = _USER_PREFIX if match.group(1) == "Users" else _GROUP_PREFIX
                members.add(prefix + value)
            else:
                untyped.append((value, value_path))
        return _PendingGroup(ident, path, members, untyped)

    def scim_operation(self, item: object, path: str) -> None:
        op: Mapping[str, Any] = self.expect(item, path, "object")
        for required in ("method", "path"):
            if required not in op:
                self.fail(path, f"missing required key {required!r}")
        method_path = _key(path, "method")
        method = self.expect(op["method"], method_path, "string").upper()
        op_path_path = _key(path, "path")
        op_path: str = self.expect(op["path"], op_path_path, "string")
        if method == "POST":
            if op_path not in ("/Users", "/Groups"):
                self.fail(op_path_path, f"POST path must be /Users or /Groups, got {op_path!r}")
            kind: _Kind = "user" if op_path == "/Users" else "group"
            self.scim_resource(op.get("data"), _key(path, "data"), kind=kind)
            return
        match = _SCIM_RESOURCE_PATH.fullmatch(op_path)
        if match is None:
            self.fail(op_path_path, f"expected /Users/<id> or /Groups/<id>, got {op_path!r}")
        kind = "user" if match.group(1) == "Users" else "group"
        ident = self.ident(match.group(2), op_path_path)
        if method == "DELETE":
            self.remove(kind, ident, op_path_path)
        elif method == "PUT":
            self.scim_resource(
                op.get("data"), _key(path, "data"), kind=kind, ident=ident, ident_path=op_path_path
            )
        elif method == "PATCH":
            data_path = _key(path, "data")
            data: Mapping[str, Any] = self.expect(op.get("data"), data_path, "object")
            resource: object = data
            resource_path = data_path
            if SCIM_PATCH_OP in self.schemas(data, data_path):
                resource, resource_path = self.full_value_patch(data, data_path)
            self.scim_resource(
                resource, resource_path, kind=kind, ident=ident, ident_path=op_path_path
            )
        else:
            self.fail(method_path, f"unsupported method {method!r} (POST, PUT, PATCH, DELETE)")

    def full_value_patch(self, data: Mapping[str, Any], path: str) -> tuple[object, str]:
        """Accept only a PatchOp that replaces the whole resource; partial patches need state."""
        ops_path = _key(path, "Operations")
        ops = self.expect(data.get("Operations"), ops_path, "array")
        if len(ops) != 1:
            self.fail(ops_path, "only a single full-value 'replace' operation is supported")
        op_path = _index(ops_path, 0)
        op: Mapping[str, Any] = self.expect(ops[0], op_path, "object")
        verb = self.expect(op.get("op"), _key(op_path, "op"), "string")
        if verb.lower() != "replace" or op.get("path") is not None:
            self.fail(
                op_path,
                "partial PATCH is not supported: send one 'replace' without 'path' whose value "
                "is the full resource",
            )
        return op.get("value"), _key(op_path, "value")


_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)


@dataclass(slots=True)
class _Open:
    """One open object (``keys`` is a set) or array (``keys`` is ``None``) while scanning."""

    keys: set[str] | None
    at: str | int = 0  # the current key or index
    want_key: bool = True


def _repeated_keys(text: str) -> Iterator[tuple[int, str, str]]:
    """``(line, JSON path of the object, key)`` for each key repeated within one object, in
    the order of the repeats.

    Only used to locate an error :func:`clearance.jsonio.loads` has already found, so it is a
    scan, not a parser: it needs no recursion (the text may be nested too deeply for one) and
    it stops quietly at text it cannot follow.
    """
    stack: list[_Open] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == '"':
            match = _JSON_STRING.match(text, i)
            if match is None:
                return
            top = stack[-1] if stack else None
            if top is not None and top.keys is not None and top.want_key:
                try:
                    key = json.loads(match.group())
                except ValueError:
                    return
                if key in top.keys:
                    path = "$"
                    for frame in stack[:-1]:
                        step = frame.at
                        path = _key(path, step) if isinstance(step, str) else _index(path, step)
                    yield text.count("\n", 0, i) + 1, path, key
                top.keys.add(key)
                top.at, top.want_key = key, False
            i = match.end()
            continue
        if char in "{[":
            stack.append(_Open(set() if char == "{" else None))
        elif char in "}]":
            if not stack:
                return
            stack.pop()
        elif char == "," and stack:
            top = stack[-1]
            if top.keys is None:
                top.at = int(top.at) + 1
            else:
                top.want_key = True
        i += 1


def parse_directory(data: object, *, source: str) -> DirectoryDoc:
    """Parse one directory sync document (Clearance JSON or SCIM 2.0) without applying it.

    ``data`` is decoded JSON (or JSON text, which is decoded first). The shape is detected from
    the top-level object: a ``schemas``, ``meta``, ``Resources`` or ``Operations`` key means SCIM,
    anything else is Clearance JSON. ``source`` (usually the file name) prefixes every error.

    Guarantees: the returned document is fully validated — ids, principal strings, no duplicate
    id of one kind, no untyped SCIM member left unresolved. Otherwise :class:`DirectoryError`.
    """
    parser = _Parser(source)
    if isinstance(data, str | bytes | bytearray):
        data = parser.decode(data if isinstance(data, str) else bytes(data))
    obj: Mapping[str, Any] = parser.expect(data, "$", "object")
    for key in obj:
        if not isinstance(key, str):
            parser.fail("$", f"object keys must be strings, got {_json_type(key)}")
    if any(key in obj for key in ("schemas", "meta", "Resources", "Operations")):
        return parser.scim(obj)
    return parser.clearance(obj)


# --------------------------------------------------------------------------------------------
# The directory
# --------------------------------------------------------------------------------------------


class Directory:
    """An immutable snapshot of users and groups with fast principal-set lookups.

    Changes return a new instance (``version + 1``). Two lazily-filled caches live on each
    instance: the reverse membership index (member principal → ids of the groups listing it),
    built once on first use, and the principal set per user id. Because the instance never
    changes, neither cache can go stale. A new version starts with no cached principal sets;
    :meth:`apply_delta` on an instance whose index is already built hands the new version a
    patched copy of the index, so the first lookup after a sync does not pay a full rebuild.
    Concurrent readers may race to fill a cache entry; they compute the same value, so the race
    is benign.
    """

    __slots__ = ("_aliases", "_groups", "_parents", "_principals", "_users", "_version")

    _users: Mapping[str, User]
    _groups: Mapping[str, Group]
    _version: int
    _parents: dict[str, tuple[str, ...]] | None
    _principals: dict[str, frozenset[str]]
    _aliases: dict[str, tuple[str, ...]] | None

    def __init__(
        self,
        users: Mapping[str, User] | Iterable[User] = (),
        groups: Mapping[str, Group] | Iterable[Group] = (),
        version: int = 0,
    ) -> None:
        user_map = _keyed(users, "user")
        group_map = _keyed(groups, "group")
        if isinstance(version, bool) or not isinstance(version, int) or version < 0:
            raise DirectoryError(f"directory version must be a non-negative integer: {version!r}")
        object.__setattr__(self, "_users", MappingProxyType(user_map))
        object.__setattr__(self, "_groups", MappingProxyType(group_map))
        object.__setattr__(self, "_version", version)
        object.__setattr__(self, "_parents", None)
        object.__setattr__(self, "_principals", {})
        object.__setattr__(self, "_aliases", None)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Directory is immutable; cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Directory is immutable; cannot delete {name!r}")

    # -- value semantics ----------------------------------------------------------------------

    @property
    def users(self) -> Mapping[str, User]:
        """Read-only mapping of user id → :class:`User`."""
        return self._users

    @property
    def groups(self) -> Mapping[str, Group]:
        """Read-only mapping of group id → :class:`Group`."""
        return self._groups

    @property
    def version(self) -> int:
        """Increases by one with every :meth:`replace` / :meth:`apply_delta`."""
        return self._version

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Directory):
            return NotImplemented
        return (
            self._version == other._version
            and self._users == other._users
            and self._groups == other._groups
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"Directory(version={self._version}, users={len(self._users)}, "
            f"groups={len(self._groups)})"
        )

    @classmethod
    def empty(cls) -> Directory:
        """A directory with no users and no groups at version 0: everyone gets nothing."""
        return cls()

    # -- changes ------------------------------------------------------------------------------

    def replace(self, doc: DirectoryDoc) -> Directory:
        """Apply a full snapshot: afterwards the directory holds exactly ``doc``'s users and groups.

        Users and groups absent from the snapshot are removed. Refuses a delta document
        (``doc.delta``) with :class:`DirectoryError`, because treating a delta as a snapshot would
        silently delete everything it does not mention.
        """
        if doc.delta:
            raise DirectoryError(
                f"{doc.source}: is a delta (it has removals or is a SCIM BulkRequest); "
                "apply it as a delta, not as a full snapshot"
            )
        return Directory(doc.users, doc.groups, self._version + 1)

    def apply_delta(self, doc: DirectoryDoc) -> Directory:
        """Apply upserts and removals from ``doc``; everything it does not mention is kept.

        Upserts replace whole records. Removing an id that is not present is a no-op, so a
        retried delta is idempotent. Removals do not edit other groups' member lists (see the
        module docstring): dangling members simply match nothing.
        """
        users = dict(self._users)
        groups = dict(self._groups)
        for user_id in doc.removed_users:
            users.pop(user_id, None)
        for group_id in doc.removed_groups:
            groups.pop(group_id, None)
        users.update(doc.users)
        groups.update(doc.groups)
        result = Directory(users, groups, self._version + 1)
        if self._parents is not None:
            # This version's index is warm: patch a copy instead of letting the first request
            # after every sync rebuild it from scratch (O(changed memberships), not O(all)).
            changed = set(doc.groups) | (set(doc.removed_groups) & set(self._groups))
            object.__setattr__(
                result, "_parents", _patched_index(self._parents, self._groups, groups, changed)
            )
        return result

    # -- membership ---------------------------------------------------------------------------

    def _reverse_index(self) -> dict[str, tuple[str, ...]]:
        """member principal → sorted ids of the (existing) groups that list it; built once."""
        parents = self._parents
        if parents is None:
            building: dict[str, list[str]] = {}
            for group_id in sorted(self._groups):
                for member in self._groups[group_id].members:
                    building.setdefault(member, []).append(group_id)
            parents = {member: tuple(ids) for member, ids in building.items()}
            object.__setattr__(self, "_parents", parents)
        return parents

    def resolve(self, name: str) -> AliasMatch | None:
        """The one user that ``name`` (a sign-in claim's value) names, and how, or ``None``.

        A user id matches itself exactly, first, so an alias can never take over another
        user's id. Otherwise ``name`` is compared with every user's aliases (:func:`alias_key`).
        An alias that two or more users carry names nobody: guessing between two accounts
        would hand one person the other's access, so the sign-in fails closed. Disabled users
        resolve like active ones (their principal set is empty anyway), so a refusal can say
        ``account_disabled`` instead of "unknown user".
        """
        if name in self._users:
            return AliasMatch(name, "id")
        index = self._aliases
        if index is None:
            building: dict[str, list[str]] = {}
            for user in self._users.values():
                for alias in user.aliases:
                    building.setdefault(alias, []).append(user.id)
            index = {alias: tuple(sorted(ids)) for alias, ids in building.items()}
            object.__setattr__(self, "_aliases", index)
        key = alias_key(name)
        owners = index.get(key, ())
        if len(owners) != 1:
            return None
        return AliasMatch(owners[0], key)

    def ambiguous_aliases(self) -> dict[str, tuple[str, ...]]:
        """Aliases carried by more than one user (alias → user ids): they resolve to nobody."""
        if self._aliases is None:
            self.resolve("\x00")  # builds the index; no alias can be a NUL
        assert self._aliases is not None
        return {alias: ids for alias, ids in self._aliases.items() if len(ids) > 1}

    def principal_set(self, user_id: str) -> frozenset[str]:
        """``{user:<id>} ∪ {group:<g> reachable through nested membership} ∪ {everyone}``.

        A disabled or unknown user gets ``frozenset()`` — not even ``everyone`` — so a disabled
        account matches no ACL at all. Groups that do not exist are never in the set, even when
        named as members. Terminates on cycles. Results for known, active users are cached on
        this instance.
        """
        cached = self._principals.get(user_id)
        if cached is not None:
            return cached
        user = self._users.get(user_id)
        if user is None or not user.active:
            return frozenset()  # not cached: unknown ids must not grow the cache
        parents = self._reverse_index()
        start = _USER_PREFIX + user_id
        result = {start, EVERYONE}
        stack = [start]
        while stack:
            for group_id in parents.get(stack.pop(), ()):
                principal = _GROUP_PREFIX + group_id
                if principal not in result:
                    result.add(principal)
                    stack.append(principal)
        principals = frozenset(result)
        self._principals[user_id] = principals
        return principals

    def groups_of(self, user_id: str) -> frozenset[str]:
        """Ids of every group ``user_id`` reaches through nested membership.

        Exactly the ``group:`` part of :meth:`principal_set` without the prefix, so it is empty
        for disabled and unknown users too: what ``explain`` shows is what authorisation uses.
        """
        return frozenset(
            p[len(_GROUP_PREFIX) :] for p in self.principal_set(user_id) if p.startswith("group:")
        )

    def why(self, user_id: str, group_id: str) -> list[str] | None:
        """A shortest membership path ``["user:<id>", "group:<g1>", …, "group:<group_id>"]``.

        ``None`` when the user does not reach the group (or is disabled/unknown, mirroring
        :meth:`principal_set`). ``group_id`` may be given bare or as ``group:<id>``. Among
        equally short paths the choice is deterministic (group ids are visited in sorted order).
        """
        target = group_id if group_id.startswith(_GROUP_PREFIX) else _GROUP_PREFIX + group_id
        if target not in self.principal_set(user_id):
            return None
        parents = self._reverse_index()
        start = _USER_PREFIX + user_id
        came_from: dict[str, str] = {start: start}
        queue = deque([start])
        while queue:
            current = queue.popleft()
            if current == target:
                path = [current]
                while current != start:
                    current = came_from[current]
                    path.append(current)
                path.reverse()
                return path
            for parent_id in parents.get(current, ()):
                principal = _GROUP_PREFIX + parent_id
                if principal not in came_from:
                    came_from[principal] = current
                    queue.append(principal)
        return None  # pragma: no cover - unreachable: target is in the principal set

    def unknown_principals(self, principals: Iterable[str]) -> list[str]:
        """The ``user:``/``group:`` principals among ``principals`` that name no user or group
        of this directory, sorted, each once.

        Such a principal is legal in an ACL — it matches nobody until the directory learns the
        id — but it is usually a typo (``group:employes``) or a directory sync that has not
        happened yet, so ingest, ``acl sync`` and ``explain`` report it (worded by
        :func:`unknown_principal_warning`). ``everyone`` and disabled users are never unknown.
        """
        unknown: set[str] = set()
        for principal in principals:
            if principal.startswith(_USER_PREFIX):
                known = principal[len(_USER_PREFIX) :] in self._users
            elif principal.startswith(_GROUP_PREFIX):
                known = principal[len(_GROUP_PREFIX) :] in self._groups
            else:
                continue
            if not known:
                unknown.add(principal)
        return sorted(unknown)

    # -- serialisation ------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """Clearance JSON, sorted (users, groups, attributes, members) so output is stable.

        ``parse_directory(d.to_json(), …)`` + :meth:`replace` reproduces the same users and
        groups; :meth:`from_json` also reproduces ``version``.
        """
        return {
            "version": self._version,
            "users": [
                {
                    "id": u.id,
                    "active": u.active,
                    "attributes": dict(sorted(u.attributes.items())),
                    **({"aliases": list(u.aliases)} if u.aliases else {}),
                }
                for u in sorted(self._users.values(), key=lambda u: u.id)
            ],
            "groups": [
                {"id": g.id, "members": sorted(g.members)}
                for g in sorted(self._groups.values(), key=lambda g: g.id)
            ],
        }

    @classmethod
    def from_json(cls, data: object, *, source: str = "<json>") -> Directory:
        """Rebuild a directory from :meth:`to_json` output (``version`` defaults to 0).

        Refuses delta documents: a directory is a snapshot.
        """
        doc = parse_directory(data, source=source)
        if doc.delta:
            raise DirectoryError(f"{source}: is a delta, not a directory snapshot")
        return cls(doc.users, doc.groups, doc.version or 0)


def unknown_principal_warning(principal: str) -> str:
    """The one wording of "this ACL names somebody the directory does not know", shared by
    ingest, ``acl sync`` and ``explain``: ``group:employes is not in the directory``."""
    return f"{principal} is not in the directory"


def _patched_index(
    parents: Mapping[str, tuple[str, ...]],
    old_groups: Mapping[str, Group],
    new_groups: Mapping[str, Group],
    changed: Iterable[str],
) -> dict[str, tuple[str, ...]]:
    """The reverse index of ``new_groups``, derived from ``parents`` (that of ``old_groups``).

    ``changed`` must contain every group id whose record differs between the two (upserted or
    removed). The result equals a from-scratch build, including the sorted order of each entry.
    """
    patched = dict(parents)
    edits: dict[str, list[str]] = {}

    def entry(member: str) -> list[str]:
        if member not in edits:
            edits[member] = list(patched.get(member, ()))
        return edits[member]

    for group_id in changed:
        old = old_groups.get(group_id)
        if old is not None:
            for member in old.members:
                entry(member).remove(group_id)
        new = new_groups.get(group_id)
        if new is not None:
            for member in new.members:
                bisect.insort(entry(member), group_id)
    for member, ids in edits.items():
        if ids:
            patched[member] = tuple(ids)
        else:
            patched.pop(member, None)
    return patched


def _keyed(items: Mapping[str, Any] | Iterable[Any], kind: str) -> dict[str, Any]:
    """Turn ``items`` into an id-keyed dict, checking keys match ids and ids are unique."""
    expected = User if kind == "user" else Group
    result: dict[str, Any] = {}
    if isinstance(items, Mapping):
        for key, value in items.items():
            if not isinstance(value, expected):
                raise DirectoryError(f"{kind} {key!r}: expected a {expected.__name__}")
            if key != value.id:
                raise DirectoryError(f"{kind} keyed {key!r} has id {value.id!r}")
            result[key] = value
        return result
    for value in items:
        if not isinstance(value, expected):
            raise DirectoryError(f"expected a {expected.__name__}, got {type(value).__name__}")
        if value.id in result:
            raise DirectoryError(f"duplicate {kind} id {value.id!r}")
        result[value.id] = value
    return result
