"""Users, groups and directory documents: the values a directory is made of.

These are plain frozen values that check themselves on construction (ids follow the one
principal id grammar of :func:`clearance.model.principal_id_problem`, members are
``user:<id>`` or ``group:<id>``, aliases are stored case-folded), so a value that exists is
valid whichever way it was made: by the directory file reader
(:mod:`clearance.access.directory_file`), by a directory source, by SCIM provisioning or
from the index's own copy (:meth:`clearance.access.directory.Directory.from_json`). They
live apart from both the reader and :class:`~clearance.access.directory.Directory` so that
reading the index's copy of the directory never loads the reader.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from clearance.errors import DirectoryError
from clearance.model import parse_principal, principal_id_problem, shown

__all__ = [
    "GROUP_PREFIX",
    "USER_PREFIX",
    "AliasMatch",
    "DirectoryDoc",
    "Group",
    "User",
    "alias_key",
    "member_problem",
]

USER_PREFIX = "user:"
GROUP_PREFIX = "group:"


def member_problem(value: str) -> str | None:
    """Why ``value`` is not a valid group member principal, or ``None`` if it is.

    User and group ids, here and everywhere in the directory, follow the one principal id
    grammar (:func:`clearance.model.principal_id_problem`): an id the directory accepted could
    otherwise never be named in an ACL, or the reverse.
    """
    kind, sep, ident = value.partition(":")
    if sep and kind in ("user", "group"):
        problem = principal_id_problem(ident)
        return None if problem is None else f"bad member {shown(value)}: id {problem}"
    try:
        parse_principal(value)
    except ValueError as exc:
        return str(exc)
    # The only principal without a kind prefix is EVERYONE.
    return "'everyone' cannot be a group member; members are 'user:<id>' or 'group:<id>'"


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
            problem = member_problem(member)
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
