"""Reading directory documents: Clearance JSON and SCIM 2.0, checked object by object.

:func:`parse_directory` reads one document that somebody read from disk, received over
HTTP or built from a source system, and returns it as a
:class:`~clearance.access.accounts.DirectoryDoc` without applying it. pydantic checks the
shape of each object; :class:`_Reader` checks what spans objects (one record per id, SCIM's
kinds of message, members named without a type). The schemas are built on first use, and
the module itself loads with the first document read
(:func:`clearance.access.directory.parse_directory`), so a command that only consults the
directory the index holds never pays for either.

Guarantees: the returned document is fully validated, or :class:`DirectoryError` names the
``source`` and the JSON path of each problem, every one found in its ``problems``
(``dir.json: users[3].active: expected a boolean, got string``). JSON text is read
strictly (:func:`clearance.jsonio.loads`): a key repeated in one object is an error naming
the line and the object (``dir.json:4: users[1]: key 'active' appears twice in one
object``), never "last wins", and nesting too deep for the
parser is an error, not a ``RecursionError``.

Accepted input shapes (detected automatically by :func:`parse_directory`)
------------------------------------------------------------------------
1. Clearance JSON::

       {"users":  [{"id": "alice", "active": true, "attributes": {"department": "finance"}}],
        "groups": [{"id": "finance", "members": ["user:alice", "group:finance-emea"]}],
        "removed_users": ["bob"], "removed_groups": ["old"],      # deltas only
        "version": 7}                                             # optional, see from_json

   A document carrying ``removed_users`` or ``removed_groups`` (even empty) is a *delta* and
   :meth:`~clearance.access.directory.Directory.replace` refuses it, so a delta can never be
   mistaken for a snapshot and wipe the directory.
2. SCIM 2.0 (RFC 7643/7644): a ``ListResponse`` of User and Group resources, a single User or
   Group resource (both snapshots), or a ``BulkRequest`` whose operations are upserts
   (POST/PUT, or PATCH carrying the full resource) and removals (DELETE ``/Users/<id>`` or
   ``/Groups/<id>``) — always a delta.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Annotated, Any, Literal, NoReturn

from pydantic import (
    AfterValidator,
    AliasGenerator,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    StrictBool,
    StrictInt,
    StrictStr,
)
from pydantic.alias_generators import to_camel

from clearance import jsonio
from clearance.access.accounts import (
    GROUP_PREFIX,
    USER_PREFIX,
    DirectoryDoc,
    Group,
    User,
    member_problem,
)
from clearance.errors import ConfigError, DirectoryError
from clearance.model import principal_id_problem
from clearance.validation import Invalid, Loc, Wording, validate

__all__ = [
    "SCIM_BULK_REQUEST",
    "SCIM_ENTERPRISE_USER",
    "SCIM_GROUP",
    "SCIM_LIST_RESPONSE",
    "SCIM_PATCH_OP",
    "SCIM_USER",
    "parse_directory",
]

SCIM_LIST_RESPONSE = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
SCIM_BULK_REQUEST = "urn:ietf:params:scim:api:messages:2.0:BulkRequest"
SCIM_PATCH_OP = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
SCIM_USER = "urn:ietf:params:scim:schemas:core:2.0:User"
SCIM_GROUP = "urn:ietf:params:scim:schemas:core:2.0:Group"
SCIM_ENTERPRISE_USER = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SCIM_RESOURCE_PATH = re.compile(r"/(Users|Groups)/([^/]+)")
_SCIM_REF = re.compile(r"/(Users|Groups)/([^/?#]+)/?$")


# --------------------------------------------------------------------------------------------
# Parsing: pydantic checks the shape of each object, _Reader what spans objects
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


def _json_path(loc: Iterable[object]) -> str:
    """``("users", 3, "active")`` → ``users[3].active``. A key that is not an identifier is
    quoted (``$["urn:…"].department``); the document itself is ``$``."""
    path = "$"
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif _IDENTIFIER.match(str(part)):
            path = str(part) if path == "$" else f"{path}.{part}"
        else:
            path += f"[{json.dumps(str(part))}]"
    return path


_ARTICLES = {
    "str": "a string",
    "bool": "a boolean",
    "int": "an integer",
    "list": "an array",
    "table": "an object",
}


def _expected(kind: str, value: object) -> str:
    """``expected a boolean, got string``: a value of the wrong JSON type."""
    return f"expected {_ARTICLES.get(kind, kind)}, got {_json_type(value)}"


#: A directory file names a problem by its JSON path and a type by its JSON name.
_FILE = Wording(
    key=_json_path, missing="{table}: missing required key {name!r}", expected=_expected
)

_Kind = Literal["user", "group"]


def _id(value: str) -> str:
    """A user or group id (the principal id grammar); a SCIM ``bulkId:`` says so."""
    problem = principal_id_problem(value)
    if problem is None:
        return value
    if value.startswith("bulkId:"):
        raise Invalid(f"bulkId references ({value!r}) are not supported; use real ids")
    raise Invalid(f"id {problem}")


def _member(value: str) -> str:
    problem = member_problem(value)
    if problem is not None:
        raise Invalid(problem)
    return value


def _alias(value: str) -> str:
    if not value.strip():
        raise Invalid("an alias must not be empty")
    return value


def _attribute_names(attributes: dict[str, str] | None) -> dict[str, str] | None:
    if attributes and "" in attributes:
        raise Invalid("attribute names must not be empty")
    return attributes


def _version(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise Invalid(f"expected a non-negative integer, got {_json_type(value)}")
    return value


def _resource_type(value: object) -> _Kind:
    if not isinstance(value, str):
        raise Invalid(_expected("str", value))
    if value not in ("User", "Group"):
        raise Invalid(f"unsupported resourceType {value!r} (User or Group)")
    return "user" if value == "User" else "group"


def _member_type(value: str) -> _Kind:
    if value.lower() not in ("user", "group"):
        raise Invalid(f"unsupported type {value!r} (User/Group)")
    return "user" if value.lower() == "user" else "group"


def _closed(record: type, hints: Mapping[str, str] | None = None) -> BeforeValidator:
    """Refuse a key ``record`` has no field for, naming the keys it has: Clearance JSON is
    the operator's own format, so an unknown key is a mistake, not an extension. ``hints``:
    where what a key meant to say is written instead."""
    names = tuple(f.name for f in fields(record))

    def check(value: object) -> object:
        for key in value if isinstance(value, Mapping) else ():
            if key not in names:
                message = f"unknown key (expected one of {', '.join(names)})"
                if hints and key in hints:
                    message += f"; {hints[key]}"
                raise Invalid(message, at=(str(key),))
        return value

    return BeforeValidator(check)


def _unless(written: str, unread: str) -> BeforeValidator:
    """Leave ``unread`` unread (so unchecked) when ``written`` holds a value."""

    def drop(value: object) -> object:
        if isinstance(value, Mapping) and value.get(written) is not None:
            return {key: item for key, item in value.items() if key != unread}
        return value

    return BeforeValidator(drop)


_ID = Annotated[StrictStr, AfterValidator(_id)]
_ARRAY = list[Any]
_OBJECT = dict[Any, Any]
_STRINGS = list[StrictStr]
_COUNT = StrictInt | None


@dataclass(frozen=True, slots=True)
class _UserRecord:
    id: _ID
    active: StrictBool
    attributes: Annotated[dict[str, StrictStr] | None, AfterValidator(_attribute_names)] = None
    aliases: list[Annotated[StrictStr, AfterValidator(_alias)]] | None = None


@dataclass(frozen=True, slots=True)
class _GroupRecord:
    id: _ID
    members: list[Annotated[StrictStr, AfterValidator(_member)]] = field(default_factory=list)


_USER_RECORD = Annotated[
    _UserRecord,
    _closed(
        _UserRecord,
        {"groups": 'a user\'s groups are those whose "members" name "user:<id>" (docs/access.md)'},
    ),
]
_GROUP_RECORD = Annotated[_GroupRecord, _closed(_GroupRecord)]


@dataclass(frozen=True, slots=True)
class _ClearanceFile:
    users: list[_USER_RECORD] = field(default_factory=list)
    groups: list[_GROUP_RECORD] = field(default_factory=list)
    removed_users: list[_ID] = field(default_factory=list)
    removed_groups: list[_ID] = field(default_factory=list)
    version: Annotated[int | None, PlainValidator(_version)] = None


_CLEARANCE_FILE = Annotated[_ClearanceFile, _closed(_ClearanceFile)]


#: SCIM attributes are camelCase (``userName``), their fields here snake_case.
_SCIM = ConfigDict(alias_generator=AliasGenerator(validation_alias=to_camel))


@dataclass(frozen=True, slots=True)
class _ScimMeta:
    __pydantic_config__ = _SCIM

    resource_type: Annotated[_Kind | None, PlainValidator(_resource_type)] = None


@dataclass(frozen=True, slots=True)
class _ScimName:
    formatted: StrictStr | None = None


@dataclass(frozen=True, slots=True)
class _ScimEnterprise:
    department: StrictStr | None = None


@dataclass(frozen=True, slots=True)
class _ScimEmail:
    value: StrictStr | None = None


@dataclass(frozen=True, slots=True)
class _ScimUser:
    """What Clearance reads of a SCIM User (RFC 7643 §4.1); any other attribute is ignored,
    and a missing or null one is absent."""

    __pydantic_config__ = _SCIM

    active: StrictBool | None = None
    user_name: StrictStr | None = None
    user_type: StrictStr | None = None
    display_name: StrictStr | None = None
    name: _ScimName | None = None
    enterprise: Annotated[_ScimEnterprise | None, Field(alias=SCIM_ENTERPRISE_USER)] = None
    external_id: StrictStr | None = None
    emails: list[_ScimEmail] | None = None

    def user(self, ident: str) -> User:
        name = self.display_name
        if name is None and self.name is not None:
            name = self.name.formatted
        found = {
            "user_name": self.user_name,
            "employment_type": self.user_type,
            "name": name,
            "department": None if self.enterprise is None else self.enterprise.department,
        }
        # RFC 7643 §4.1.1/§3.1: userName is the sign-in name, externalId the provisioning
        # client's id, emails the addresses; each is another name for this one user.
        names = [self.user_name, self.external_id, *(e.value for e in self.emails or ())]
        return User(
            ident,
            True if self.active is None else self.active,  # absent: the account is not restricted
            {key: value for key, value in found.items() if value is not None},
            tuple(n for n in names if n and n.strip()),
        )


@dataclass(frozen=True, slots=True)
class _ScimMember:
    __pydantic_config__ = _SCIM

    value: _ID
    type: Annotated[StrictStr, AfterValidator(_member_type)] | None = None
    ref: Annotated[StrictStr | None, Field(alias="$ref")] = None


@dataclass(frozen=True, slots=True)
class _ScimGroup:
    __pydantic_config__ = _SCIM

    display_name: StrictStr | None = None  # checked, not kept
    members: list[Annotated[_ScimMember, _unless("type", "$ref")]] | None = None


_SCIM_USER = Annotated[_ScimUser, _unless("displayName", "name")]


@dataclass(frozen=True, slots=True)
class _Operation:
    method: StrictStr
    path: StrictStr
    data: Any = None


class _Reader:
    """Reads one document: pydantic checks each object, this class what spans objects (one
    record per id, SCIM's kinds of message, members named without a type). Every error
    names ``source`` and the JSON path."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.users: dict[str, User] = {}
        self.groups: dict[str, set[str]] = {}  # id → members
        self.untyped: list[tuple[str, str, Loc]] = []  # SCIM (group, member, where) to resolve
        self.removed: dict[_Kind, set[str]] = {"user": set(), "group": set()}
        self.seen: dict[tuple[_Kind, str], Loc] = {}
        # Problems that leave the rest readable (repeated ids, untyped members): reported
        # together by :meth:`finish`, with any others found by then.
        self.problems: list[str] = []

    # -- primitives ---------------------------------------------------------------------------

    def fail(self, loc: Loc, message: str) -> NoReturn:
        self.note(loc, message)
        raise self.error()

    def note(self, loc: Loc, message: str) -> None:
        self.problems.append(f"{self.source}: {_json_path(loc)}: {message}")

    def error(self) -> DirectoryError:
        """Every problem noted, one line each."""
        return DirectoryError(self.problems[0], problems=self.problems)

    def read(self, schema: Any, data: object, loc: Loc = ()) -> Any:
        """``data`` (found at ``loc``) validated as ``schema``, or every problem in it (and
        those noted before)."""
        try:
            return validate(schema, data, at=loc, wording=_FILE)
        except ConfigError as exc:
            self.problems += [f"{self.source}: {problem}" for problem in exc.problems]
            raise self.error() from None

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
            self.fail((), message)

    def claim(self, kind: _Kind, ident: str, loc: Loc) -> None:
        """Record that ``ident`` occurs once in this document; a second occurrence is an error."""
        first = self.seen.get((kind, ident))
        if first is not None:
            self.note(loc, f"duplicate {kind} id {ident!r} (first at {_json_path(first)})")
            return
        self.seen[(kind, ident)] = loc

    def add_user(self, user: User, id_loc: Loc) -> None:
        self.claim("user", user.id, id_loc)
        self.users[user.id] = user

    def add_group(self, ident: str, members: set[str], id_loc: Loc) -> None:
        self.claim("group", ident, id_loc)
        self.groups[ident] = members

    def remove(self, kind: _Kind, ident: str, loc: Loc) -> None:
        self.claim(kind, ident, loc)
        self.removed[kind].add(ident)

    def finish(self, *, delta: bool, version: int | None = None) -> DirectoryDoc:
        for group_id, value, loc in self.untyped:
            if value in self.users:
                self.groups[group_id].add(USER_PREFIX + value)
            elif value in self.groups:
                self.groups[group_id].add(GROUP_PREFIX + value)
            else:
                self.note(
                    loc,
                    f"member {value!r} has no type and is neither a user nor a group in "
                    'this document; add "type": "User" or "Group"',
                )
        if self.problems:
            raise self.error()
        groups = {ident: Group(ident, frozenset(members)) for ident, members in self.groups.items()}
        return DirectoryDoc(
            source=self.source,
            users=MappingProxyType(dict(self.users)),
            groups=MappingProxyType(groups),
            removed_users=frozenset(self.removed["user"]),
            removed_groups=frozenset(self.removed["group"]),
            delta=delta,
            version=version,
        )

    # -- Clearance JSON -----------------------------------------------------------------------

    def clearance(self, data: Mapping[str, Any]) -> DirectoryDoc:
        doc: _ClearanceFile = self.read(_CLEARANCE_FILE, data)
        for i, user in enumerate(doc.users):
            aliases = tuple(user.aliases or ())
            self.add_user(
                User(user.id, user.active, user.attributes or {}, aliases), ("users", i, "id")
            )
        for i, group in enumerate(doc.groups):
            self.add_group(group.id, set(group.members), ("groups", i, "id"))
        for i, ident in enumerate(doc.removed_users):
            self.remove("user", ident, ("removed_users", i))
        for i, ident in enumerate(doc.removed_groups):
            self.remove("group", ident, ("removed_groups", i))
        delta = "removed_users" in data or "removed_groups" in data
        return self.finish(delta=delta, version=doc.version)

    # -- SCIM ---------------------------------------------------------------------------------

    def scim(self, data: Mapping[str, Any]) -> DirectoryDoc:
        schemas = self.schemas(data, ())
        if SCIM_LIST_RESPONSE in schemas:
            resources: list[Any] = self.read(_ARRAY, data.get("Resources", []), ("Resources",))
            total = self.read(_COUNT, data.get("totalResults"), ("totalResults",))
            if total is not None and total != len(resources):
                self.fail(
                    ("totalResults",),
                    f"{total} results but {len(resources)} Resources: this is one page of a "
                    "paginated response; merge all pages into one document first",
                )
            for i, resource in enumerate(resources):
                self.scim_resource(resource, ("Resources", i))
            return self.finish(delta=False)
        if SCIM_BULK_REQUEST in schemas:
            operations: list[Any] = self.read(_ARRAY, data.get("Operations"), ("Operations",))
            for i, operation in enumerate(operations):
                self.scim_operation(operation, ("Operations", i))
            return self.finish(delta=True)
        if self.resource_kind(data, ()) is not None:
            self.scim_resource(data, ())
            return self.finish(delta=False)
        self.fail(
            ("schemas",),
            "unsupported SCIM message: expected a ListResponse, a BulkRequest, or a User or "
            "Group resource",
        )

    def schemas(self, obj: Mapping[str, Any], loc: Loc) -> list[str]:
        found: list[str] = self.read(_STRINGS, obj.get("schemas", []), (*loc, "schemas"))
        return found

    def resource_kind(self, obj: Mapping[str, Any], loc: Loc) -> _Kind | None:
        """User/Group from ``schemas`` or ``meta.resourceType``; ``None`` if neither says."""
        schemas = self.schemas(obj, loc)
        kinds: tuple[tuple[_Kind, str], ...] = (("user", SCIM_USER), ("group", SCIM_GROUP))
        by_schema = {kind for kind, urn in kinds if urn in schemas}
        if len(by_schema) > 1:
            self.fail((*loc, "schemas"), "a resource cannot be both a User and a Group")
        by_meta = None
        if "meta" in obj:
            by_meta = self.read(_ScimMeta, obj["meta"], (*loc, "meta")).resource_type
        if by_schema and by_meta is not None and by_meta not in by_schema:
            self.fail((*loc, "meta", "resourceType"), "contradicts the resource's schemas")
        return next(iter(by_schema), by_meta)

    def scim_resource(
        self,
        item: object,
        loc: Loc,
        *,
        kind: _Kind | None = None,
        named: tuple[str, Loc] | None = None,
    ) -> None:
        """Read one User/Group resource. A bulk operation's path gives ``kind``, and ``named``
        the id it names and where."""
        obj: Mapping[str, Any] = self.read(_OBJECT, item, loc)
        declared = self.resource_kind(obj, loc)
        if kind is not None and declared is not None and declared != kind:
            self.fail(loc, f"resource is a {declared} but the operation path names a {kind}")
        kind = kind or declared
        if kind is None:
            self.fail(
                loc,
                "cannot tell whether this resource is a User or a Group: add its core schema "
                "URN to 'schemas' or set meta.resourceType",
            )
        id_loc = (*loc, "id")
        if "id" in obj:
            ident: str = self.read(_ID, obj["id"], id_loc)
            if named is not None and ident != named[0]:
                self.fail(id_loc, f"id {ident!r} does not match the operation path id {named[0]!r}")
        elif named is None:
            self.fail(loc, "missing required key 'id'")
        else:
            ident, id_loc = named
        resource: _ScimUser | _ScimGroup = self.read(
            _SCIM_USER if kind == "user" else _ScimGroup, obj, loc
        )
        if isinstance(resource, _ScimUser):
            self.add_user(resource.user(ident), id_loc)
        else:
            self.add_scim_group(ident, resource, loc, id_loc)

    def add_scim_group(self, ident: str, group: _ScimGroup, loc: Loc, id_loc: Loc) -> None:
        """A SCIM Group's members are typed by ``type``, else by a ``$ref`` naming the same
        id, else by the document's own ids (:meth:`finish`)."""
        members: set[str] = set()
        for j, member in enumerate(group.members or ()):
            kind = member.type
            ref = _SCIM_REF.search(member.ref) if kind is None and member.ref is not None else None
            if ref is not None and ref.group(2) == member.value:
                kind = "user" if ref.group(1) == "Users" else "group"
            if kind is None:
                self.untyped.append((ident, member.value, (*loc, "members", j, "value")))
            else:
                members.add(f"{kind}:{member.value}")
        self.add_group(ident, members, id_loc)

    def scim_operation(self, item: object, loc: Loc) -> None:
        op: _Operation = self.read(_Operation, item, loc)
        method = op.method.upper()
        path_loc, data_loc = (*loc, "path"), (*loc, "data")
        if method == "POST":
            if op.path not in ("/Users", "/Groups"):
                self.fail(path_loc, f"POST path must be /Users or /Groups, got {op.path!r}")
            self.scim_resource(op.data, data_loc, kind="user" if op.path == "/Users" else "group")
            return
        match = _SCIM_RESOURCE_PATH.fullmatch(op.path)
        if match is None:
            self.fail(path_loc, f"expected /Users/<id> or /Groups/<id>, got {op.path!r}")
        kind: _Kind = "user" if match.group(1) == "Users" else "group"
        ident: str = self.read(_ID, match.group(2), path_loc)
        if method == "DELETE":
            self.remove(kind, ident, path_loc)
        elif method in ("PUT", "PATCH"):
            resource, resource_loc = op.data, data_loc
            if method == "PATCH":
                data: Mapping[str, Any] = self.read(_OBJECT, op.data, data_loc)
                if SCIM_PATCH_OP in self.schemas(data, data_loc):
                    resource, resource_loc = self.full_value_patch(data, data_loc)
            self.scim_resource(resource, resource_loc, kind=kind, named=(ident, path_loc))
        else:
            self.fail((*loc, "method"), f"unsupported method {method!r} (POST, PUT, PATCH, DELETE)")

    def full_value_patch(self, data: Mapping[str, Any], loc: Loc) -> tuple[object, Loc]:
        """Accept only a PatchOp that replaces the whole resource; partial patches need state."""
        ops_loc = (*loc, "Operations")
        ops: list[Any] = self.read(_ARRAY, data.get("Operations"), ops_loc)
        if len(ops) != 1:
            self.fail(ops_loc, "only a single full-value 'replace' operation is supported")
        op_loc = (*ops_loc, 0)
        op: Mapping[str, Any] = self.read(_OBJECT, ops[0], op_loc)
        verb: str = self.read(StrictStr, op.get("op"), (*op_loc, "op"))
        if verb.lower() != "replace" or op.get("path") is not None:
            self.fail(
                op_loc,
                "partial PATCH is not supported: send one 'replace' without 'path' whose value "
                "is the full resource",
            )
        return op.get("value"), (*op_loc, "value")


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
                    path = _json_path(frame.at for frame in stack[:-1])
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
    reader = _Reader(source)
    if isinstance(data, str | bytes | bytearray):
        data = reader.decode(data if isinstance(data, str) else bytes(data))
    obj: Mapping[Any, Any] = reader.read(_OBJECT, data)
    for key in obj:
        if not isinstance(key, str):
            reader.fail((), f"object keys must be strings, got {_json_type(key)}")
    if any(key in obj for key in ("schemas", "meta", "Resources", "Operations")):
        return reader.scim(obj)
    return reader.clearance(obj)
