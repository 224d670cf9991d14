"""The directory: users, nested groups and the principal set of a user (docs/design.md §2, §7).

Why this module exists
----------------------
Every authorisation decision in Clearance compares a document's ACL with the caller's
*principal set*::

    {user:<id>} ∪ {group:<g> for every group reachable through nested membership} ∪ {everyone}

The set is computed at query time from the directory, so a membership change or a disabled
account takes effect on the next directory update without re-indexing anything. This module is
pure logic: it parses directory sync documents that somebody else has read from disk or from a
source system (through :mod:`clearance.access.directory_file`), and answers membership
questions. It does no I/O.

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
  boolean, got string`` (:mod:`clearance.access.directory_file`, the reader, which loads
  with the first document :func:`parse_directory` reads). Nothing is half-applied: parsing
  finishes before any state changes.
* The index's own copy, in the form :meth:`Directory.to_json` writes, is read by
  :meth:`Directory.from_json` with the values' own checks, without the reader: that is
  what every command does on opening the index. Anything not in exactly that form goes
  through the reader, so both ways accept the same directories and refuse them alike.
* User and group ids, and the ids in member principals, follow the one principal id grammar
  (:func:`clearance.model.principal_id_problem`), so every id the directory holds can be
  named in an ACL and every principal an ACL may name has the shape of a directory id.

The document shapes it reads are described in :mod:`clearance.access.directory_file`.
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from clearance import jsonio
from clearance.access.accounts import (
    GROUP_PREFIX,
    USER_PREFIX,
    AliasMatch,
    DirectoryDoc,
    Group,
    User,
    alias_key,
)
from clearance.errors import DirectoryError
from clearance.model import EVERYONE

__all__ = [
    "AliasMatch",
    "Directory",
    "DirectoryDoc",
    "Group",
    "User",
    "parse_directory",
    "unknown_principal_warning",
]


def parse_directory(data: object, *, source: str) -> DirectoryDoc:
    """Parse one directory sync document (Clearance JSON or SCIM 2.0) without applying it:
    :func:`clearance.access.directory_file.parse_directory`, whose reader loads here, with
    the first document read."""
    from clearance.access import directory_file

    return directory_file.parse_directory(data, source=source)


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
        start = USER_PREFIX + user_id
        result = {start, EVERYONE}
        stack = [start]
        while stack:
            for group_id in parents.get(stack.pop(), ()):
                principal = GROUP_PREFIX + group_id
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
            p[len(GROUP_PREFIX) :] for p in self.principal_set(user_id) if p.startswith("group:")
        )

    def why(self, user_id: str, group_id: str) -> list[str] | None:
        """A shortest membership path ``["user:<id>", "group:<g1>", …, "group:<group_id>"]``.

        ``None`` when the user does not reach the group (or is disabled/unknown, mirroring
        :meth:`principal_set`). ``group_id`` may be given bare or as ``group:<id>``. Among
        equally short paths the choice is deterministic (group ids are visited in sorted order).
        """
        target = group_id if group_id.startswith(GROUP_PREFIX) else GROUP_PREFIX + group_id
        if target not in self.principal_set(user_id):
            return None
        parents = self._reverse_index()
        start = USER_PREFIX + user_id
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
                principal = GROUP_PREFIX + parent_id
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
            if principal.startswith(USER_PREFIX):
                known = principal[len(USER_PREFIX) :] in self._users
            elif principal.startswith(GROUP_PREFIX):
                known = principal[len(GROUP_PREFIX) :] in self._groups
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

        Refuses delta documents: a directory is a snapshot. The form :meth:`to_json`
        writes is read directly (:func:`_stored`); anything else, and anything that form
        does not hold valid, is read by :func:`parse_directory`, which names its problem.
        """
        stored = _stored(data)
        if stored is not None:
            return stored
        doc = parse_directory(data, source=source)
        if doc.delta:
            raise DirectoryError(f"{source}: is a delta, not a directory snapshot")
        return cls(doc.users, doc.groups, doc.version or 0)


#: The keys of the form :meth:`Directory.to_json` writes, and of its users and groups.
_STORED_KEYS = frozenset({"version", "users", "groups"})
_STORED_USER_KEYS = frozenset({"id", "active", "attributes", "aliases"})
_STORED_GROUP_KEYS = frozenset({"id", "members"})


class _NotStored(Exception):
    """``data`` is not in the form :meth:`Directory.to_json` writes."""


def _stored(data: object) -> Directory | None:
    """The directory ``data`` holds in the form :meth:`Directory.to_json` writes (JSON text
    or decoded), or ``None`` when it is in any other form or holds anything invalid.

    This is how the index's own copy is read on every command, without loading the
    document reader: the shape is checked here, exactly (JSON types, no other key, a
    missing key only where the reader has a default), and the values by :class:`User`,
    :class:`Group` and :class:`Directory` themselves, which check what the reader checks
    (ids, members, aliases, attributes, duplicate ids, the version). So what this accepts,
    the reader accepts as the same directory; whatever this refuses, the caller hands to
    the reader, which then refuses it with its own message, or reads a form (SCIM, a
    document with other optional keys) this does not."""
    if isinstance(data, str | bytes | bytearray):
        try:
            data = jsonio.loads(data if isinstance(data, str) else bytes(data))
        except jsonio.JSONInputError:
            return None
    if type(data) is not dict or not data.keys() <= _STORED_KEYS:
        return None
    version = data.get("version", 0)
    users = data.get("users", [])
    groups = data.get("groups", [])
    if type(version) is not int or type(users) is not list or type(groups) is not list:
        return None
    try:
        return Directory(
            [_stored_user(record) for record in users],
            [_stored_group(record) for record in groups],
            version,
        )
    except (_NotStored, DirectoryError):
        return None


def _stored_user(record: object) -> User:
    if type(record) is not dict or not record.keys() <= _STORED_USER_KEYS:
        raise _NotStored
    attributes = {} if record.get("attributes") is None else record["attributes"]
    aliases = [] if record.get("aliases") is None else record["aliases"]
    if (
        type(record.get("id")) is not str
        or type(record.get("active")) is not bool
        or type(attributes) is not dict
        or type(aliases) is not list
    ):
        raise _NotStored
    if not all(type(key) is str and type(value) is str for key, value in attributes.items()):
        raise _NotStored
    return User(record["id"], record["active"], attributes, tuple(aliases))


def _stored_group(record: object) -> Group:
    if type(record) is not dict or not record.keys() <= _STORED_GROUP_KEYS:
        raise _NotStored
    members = record.get("members", [])
    if type(record.get("id")) is not str or type(members) is not list:
        raise _NotStored
    if not all(type(member) is str for member in members):
        raise _NotStored
    return Group(record["id"], frozenset(members))


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
