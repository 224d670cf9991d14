"""LDAP and Active Directory as a directory source: ``[directories.<name>] kind = "ldap"``.

Reads every entry matching ``user_filter`` under ``user_base`` and ``group_filter`` under
``group_base`` with the simple paged results control (RFC 2696), so a directory larger than the
server's size limit is read whole. Any search error, on any page, fails the whole read with a
:class:`~clearance.errors.SourceError` carrying the server's message; nothing partial is returned.

Transport
---------
``url`` is ``ldaps://host[:port]`` or ``ldap://host[:port]`` with ``start_tls = true``. The
server's certificate is verified (``ca_file``, or the system's trust store). A password is never
sent over plain ``ldap://`` without StartTLS: that configuration is refused unless
``allow_insecure = true`` is set. The password is the ``password`` credential (an environment
variable named in ``[directories.<name>.credentials]``), revealed only into the bind request.

Flavours
--------
``flavour = "active-directory"`` (default): users are ``(&(objectClass=user)(objectCategory=
person))`` with id ``sAMAccountName``; groups ``(objectClass=group)`` with id ``cn``. A user is
inactive when ``userAccountControl`` has bit ``0x2`` (ACCOUNTDISABLE) set, and also when the
attribute is missing or not a number (its disabled state cannot be read); and when its
``accountExpires`` (a FILETIME: 100-ns intervals since 1601-01-01 UTC; 0 and
0x7FFFFFFFFFFFFFFF mean never, none means no expiry) is at or before the directory sync's
clock — AD does not set ACCOUNTDISABLE when an account expires — or is not a whole number,
or has several values; and while it is locked out: ``msDS-User-Account-Control-Computed`` (a
constructed attribute, MS-ADTS 3.1.1.4.5.17) carries ``UF_LOCKOUT`` (0x10), which
``userAccountControl`` does not persist. A computed value that is not a number, or several, is
unreadable and inactive; none at all (a global catalog, which does not hold the attribute)
leaves the lockout unknown and the account judged by the rest. Aliases:
``userPrincipalName``, ``mail``, ``proxyAddresses`` (``smtp:`` entries), ``objectGUID`` (as a
GUID string) and ``sAMAccountName``. A group holding more members than AD returns at once
(``member;range=…``) fails the read rather than being read short.

``flavour = "openldap"``: users ``(objectClass=inetOrgPerson)`` with id ``uid``; groups
``(|(objectClass=groupOfNames)(objectClass=groupOfUniqueNames))`` with id ``cn``. A user is
inactive when ppolicy's ``pwdAccountLockedTime`` is present, or when ``disabled_attribute``
(optional) has ``disabled_value`` (default ``TRUE``). Aliases: ``mail``, ``entryUUID``, ``uid``.

Groups and nesting
------------------
Membership is read from each group's direct ``member`` / ``uniqueMember`` DNs (not
``memberOf``, and not AD's LDAP_MATCHING_RULE_IN_CHAIN, which flattens nesting server-side and
loses which group grants what); a DN naming a group read by this source becomes
``group:<id>`` and the directory computes transitive membership, cycles included. A member DN
that names no user or group this source read (outside the bases, or filtered out) is ignored
with a warning, never guessed from the DN's text.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import ssl
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

import ldap3
from ldap3.core.exceptions import LDAPException
from ldap3.utils.dn import parse_dn
from pydantic import Field, PlainValidator

from clearance.access.directory import DirectoryDoc, Group, User
from clearance.errors import ConfigError, SourceError
from clearance.secrets import Secret
from clearance.sources.directory.base import DirectoryRead, Progress
from clearance.sources.directory.registry import DirectoryContext, register_directory_reader
from clearance.sources.options import OPTIONS, Flag, Positive, Text, choice, directory_options
from clearance.validation import Invalid, non_empty

__all__ = ["FLAVOURS", "LdapReader", "build", "normal_dn"]


#: Defaults per flavour: user filter, group filter, user id attribute.
FLAVOURS: dict[str, tuple[str, str, str]] = {
    "active-directory": (
        "(&(objectClass=user)(objectCategory=person))",
        "(objectClass=group)",
        "sAMAccountName",
    ),
    "openldap": (
        "(objectClass=inetOrgPerson)",
        "(|(objectClass=groupOfNames)(objectClass=groupOfUniqueNames))",
        "uid",
    ),
}
_ACCOUNTDISABLE = 0x2
_LOCKOUT = 0x10  # ADS_UF_LOCKOUT, in msDS-User-Account-Control-Computed only
_COMPUTED_CONTROL = "msDS-User-Account-Control-Computed"
_FILETIME_EPOCH = datetime(1601, 1, 1, tzinfo=UTC)  # accountExpires counts 100 ns from here
_NEVER = frozenset({0, 0x7FFFFFFFFFFFFFFF})  # accountExpires values that mean "never expires"


def _utc_now() -> datetime:
    return datetime.now(UTC)


def expired(value: Any, now: datetime) -> bool:
    """Whether an ``accountExpires`` value (a FILETIME: 100-nanosecond intervals since
    1601-01-01 UTC; 0 and 0x7FFFFFFFFFFFFFFF mean never) lies at or before ``now``. A value
    that is not a non-negative whole number cannot be read, and counts as expired."""
    try:
        ticks = int(_text(value).strip())
    except ValueError:
        return True
    if ticks < 0:
        return True
    if ticks in _NEVER:
        return False
    try:
        return _FILETIME_EPOCH + timedelta(microseconds=ticks // 10) <= now
    except OverflowError:
        return False  # past the year 9999: not in any lifetime of this process


def locked_out(values: Sequence[Any]) -> bool:
    """Whether the values of ``msDS-User-Account-Control-Computed`` say the account is locked
    out (``UF_LOCKOUT``). Several values, or one that is not a whole number, cannot be read
    and count as locked out; none says nothing (the attribute is not returned)."""
    if not values:
        return False
    if len(values) > 1:
        return True
    try:
        return bool(int(_text(values[0]).strip()) & _LOCKOUT)
    except ValueError:
        return True


def normal_dn(dn: str) -> str:
    """A DN compared case- and spacing-insensitively (``CN=A, DC=x`` is ``cn=a,dc=x``)."""
    try:
        parts = parse_dn(dn, escape=False, strip=True)
    except LDAPException:
        return dn.strip().lower()
    return ",".join(f"{attr.lower()}={value.lower()}" for attr, value, _sep in parts)


def _values(attributes: Mapping[str, Any], name: str) -> list[Any]:
    for key, value in attributes.items():
        if key.lower() == name.lower():
            if isinstance(value, list | tuple):
                return list(value)
            return [] if value is None else [value]
    return []


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _guid(value: Any) -> str | None:
    if isinstance(value, bytes) and len(value) == 16:
        return str(uuid.UUID(bytes_le=value))  # AD stores objectGUID little-endian
    text = _text(value).strip("{}")
    try:
        return str(uuid.UUID(text))
    except ValueError:
        return None


def _close(conn: ldap3.Connection) -> None:
    """Unbind, or at least close the socket when the connection already broke."""
    with contextlib.suppress(LDAPException, OSError):
        conn.unbind()
    sock = getattr(conn, "socket", None)
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.close()


class LdapReader:
    """One LDAP / Active Directory tree's users and groups (see the module docstring)."""

    def __init__(
        self,
        name: str,
        url: str,
        *,
        user_base: str,
        group_base: str,
        bind_dn: str | None = None,
        password: Secret | None = None,
        start_tls: bool = False,
        ca_file: str | None = None,
        flavour: str = "active-directory",
        user_filter: str | None = None,
        group_filter: str | None = None,
        user_id_attribute: str | None = None,
        group_id_attribute: str = "cn",
        page_size: int = 500,
        timeout: float = 30.0,
        allow_insecure: bool = False,
        disabled_attribute: str | None = None,
        disabled_value: str = "TRUE",
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        if flavour not in FLAVOURS:
            raise ConfigError(f"flavour: expected one of {', '.join(FLAVOURS)}, got {flavour!r}")
        ldaps = url.lower().startswith("ldaps://")
        if not ldaps and not url.lower().startswith("ldap://"):
            raise ConfigError(f"url: expected ldap:// or ldaps://, got {url!r}")
        if ldaps and start_tls:
            raise ConfigError("start_tls: not with an ldaps:// url (already TLS)")
        if password is not None and not ldaps and not start_tls and not allow_insecure:
            raise ConfigError(
                f"url: {url!r} would send the bind password in clear; use ldaps://, "
                "start_tls = true, or (only on a trusted network) allow_insecure = true"
            )
        default_users, default_groups, default_id = FLAVOURS[flavour]
        self.name = name
        self.url = url
        self.flavour = flavour
        self.user_base = user_base
        self.group_base = group_base
        self.bind_dn = bind_dn
        self.password = password
        self.start_tls = start_tls
        self.user_filter = user_filter or default_users
        self.group_filter = group_filter or default_groups
        self.user_id_attribute = user_id_attribute or default_id
        self.group_id_attribute = group_id_attribute
        self.page_size = page_size
        self.timeout = timeout
        self.disabled_attribute = disabled_attribute
        self.disabled_value = disabled_value
        self.clock = clock
        self.calls = 0  # requests made by the current read: the bind and each page
        tls = None
        if ldaps or start_tls:
            tls = ldap3.Tls(validate=ssl.CERT_REQUIRED, ca_certs_file=ca_file)
        self.server = ldap3.Server(
            url, use_ssl=ldaps, tls=tls, connect_timeout=timeout, get_info=ldap3.NONE
        )

    def close(self) -> None:
        """Nothing held between reads: each read opens and closes its own connection."""

    def __repr__(self) -> str:
        return f"LdapReader({self.name!r}, {self.url!r})"

    def _fail(self, what: str, exc: BaseException | None = None, result: Any = None) -> SourceError:
        detail = ""
        if isinstance(result, Mapping):
            detail = f"{result.get('description', '')} {result.get('message', '')}".strip()
        elif exc is not None:
            detail = str(exc)
        return SourceError(f"source {self.name!r}: {what}: {detail or 'failed'}")

    def _connect(self) -> ldap3.Connection:
        password = self.password.reveal() if self.password is not None else None
        conn = ldap3.Connection(
            self.server,
            user=self.bind_dn,
            password=password,
            authentication=ldap3.SIMPLE if self.bind_dn else ldap3.ANONYMOUS,
            auto_bind=ldap3.AUTO_BIND_NONE,
            receive_timeout=max(1, math.ceil(self.timeout)),
            raise_exceptions=False,
            read_only=True,
            auto_referrals=False,  # never carry the bind to a server the referral names
            return_empty_attributes=False,
        )
        try:
            conn.open()
            if self.start_tls and not conn.start_tls():
                raise self._fail("StartTLS", result=conn.result)
            if not conn.bind():
                raise self._fail(f"bind as {self.bind_dn or 'anonymous'}", result=conn.result)
        except SourceError:
            _close(conn)
            raise
        except (LDAPException, OSError) as exc:
            _close(conn)
            raise self._fail(f"connect to {self.url}", exc) from exc
        return conn

    def _search(
        self, conn: ldap3.Connection, base: str, query: str, attributes: Sequence[str]
    ) -> Iterator[tuple[str, Mapping[str, Any]]]:
        """Every entry, page by page; any page's failure raises. Counts one call per page."""
        cookie: bytes | None = None
        while True:
            try:
                conn.search(
                    base,
                    query,
                    search_scope=ldap3.SUBTREE,
                    attributes=list(attributes),
                    paged_size=self.page_size,
                    paged_cookie=cookie,
                    paged_criticality=True,
                )
            except (LDAPException, OSError) as exc:
                raise self._fail(f"search {base} {query}", exc) from exc
            self.calls += 1
            result = conn.result
            if not isinstance(result, Mapping) or result.get("result") != 0:
                raise self._fail(f"search {base} {query}", result=result)
            for entry in conn.response or []:
                if entry.get("type") != "searchResEntry":
                    continue  # search references (other naming contexts) are not followed
                yield str(entry["dn"]), entry.get("raw_attributes") or {}
            controls = result.get("controls") or {}
            paged = controls.get("1.2.840.113556.1.4.319")
            if paged is None:
                raise self._fail(f"search {base} {query}", result={"message": "no paging cookie"})
            cookie = paged.get("value", {}).get("cookie")
            if not cookie:
                return

    def _active(self, attrs: Mapping[str, Any]) -> bool:
        if self.flavour == "active-directory":
            control = _values(attrs, "userAccountControl")
            if len(control) != 1:
                return False
            try:
                flags = int(_text(control[0]))
            except ValueError:
                return False
            if flags & _ACCOUNTDISABLE or locked_out(_values(attrs, _COMPUTED_CONTROL)):
                return False
            expires = _values(attrs, "accountExpires")
            if len(expires) > 1:
                return False
            return not expires or not expired(expires[0], self.clock())
        if _values(attrs, "pwdAccountLockedTime"):
            return False
        if self.disabled_attribute is not None:
            values = {_text(v).lower() for v in _values(attrs, self.disabled_attribute)}
            if self.disabled_value.lower() in values:
                return False
        return True

    def _user_attributes(self) -> list[str]:
        names = {self.user_id_attribute, "mail"}
        if self.flavour == "active-directory":
            names |= {"userAccountControl", "userPrincipalName", "proxyAddresses", "objectGUID"}
            names |= {"sAMAccountName", "accountExpires", _COMPUTED_CONTROL}
        else:
            names |= {"pwdAccountLockedTime", "entryUUID", "uid"}
            if self.disabled_attribute:
                names.add(self.disabled_attribute)
        return sorted(names)

    def _id(self, dn: str, attrs: Mapping[str, Any], attribute: str) -> str:
        """The entry's one value of ``attribute``; an entry without exactly one fails the read."""
        ids = _values(attrs, attribute)
        if len(ids) != 1 or not _text(ids[0]).strip():
            raise SourceError(f"source {self.name!r}: {dn} has no single {attribute}")
        return _text(ids[0]).strip()

    def _user(self, dn: str, attrs: Mapping[str, Any]) -> User:
        ident = self._id(dn, attrs, self.user_id_attribute)
        names: set[str] = set()
        for attr in ("userPrincipalName", "mail", "sAMAccountName", "uid"):
            names |= {_text(v).strip() for v in _values(attrs, attr)}
        for value in _values(attrs, "proxyAddresses"):
            text = _text(value)
            if text.lower().startswith("smtp:"):
                names.add(text[5:].strip())
        for attr in ("objectGUID", "entryUUID"):
            for value in _values(attrs, attr):
                guid = _guid(value)
                if guid is not None:
                    names.add(guid)
        names.discard(ident)
        names.discard("")
        return User(ident, active=self._active(attrs), aliases=tuple(sorted(names)))

    def read(self, cursor: str | None, progress: Progress | None = None) -> DirectoryRead:
        self.calls = 1  # the bind
        warnings: list[str] = []
        conn = self._connect()
        try:
            users: dict[str, User] = {}
            by_dn: dict[str, str] = {}
            for dn, attrs in self._search(
                conn, self.user_base, self.user_filter, self._user_attributes()
            ):
                user = self._user(dn, attrs)
                if user.id in users:
                    raise SourceError(f"source {self.name!r}: two users have the id {user.id!r}")
                users[user.id] = user
                by_dn[normal_dn(dn)] = f"user:{user.id}"
            if progress is not None:
                progress("users", len(users))
            raw_groups: list[tuple[str, list[str]]] = []
            group_attrs = [self.group_id_attribute, "member", "uniqueMember"]
            for dn, attrs in self._search(conn, self.group_base, self.group_filter, group_attrs):
                if any(k.lower().startswith("member;range=") for k in attrs):
                    raise SourceError(
                        f"source {self.name!r}: group {dn} has more members than one reply "
                        "carries (ranged member attribute); not read short"
                    )
                gid = self._id(dn, attrs, self.group_id_attribute)
                key = normal_dn(dn)
                if f"group:{gid}" in by_dn.values() and by_dn.get(key) != f"group:{gid}":
                    raise SourceError(f"source {self.name!r}: two groups have the id {gid!r}")
                by_dn[key] = f"group:{gid}"
                members = [_text(v) for v in _values(attrs, "member")]
                # uniqueMember may carry an optional UID after '#': "cn=x,dc=y#'0101'B".
                members += [_text(v).split("#", 1)[0] for v in _values(attrs, "uniqueMember")]
                raw_groups.append((gid, members))
        finally:
            _close(conn)
        groups: dict[str, Group] = {}
        for gid, members in raw_groups:
            found: set[str] = set()
            for member in members:
                principal = by_dn.get(normal_dn(member))
                if principal is None:
                    warnings.append(f"group {gid}: member {member} is no user or group read")
                else:
                    found.add(principal)
            groups[gid] = Group(gid, frozenset(found))
        if progress is not None:
            progress("groups", len(groups))
        doc = DirectoryDoc(source=f"ldap:{self.name}", users=users, groups=groups)
        return DirectoryRead(doc, api_calls=self.calls, warnings=tuple(warnings))


def _url(value: object) -> str:
    if not isinstance(value, str) or not value.lower().startswith(("ldap://", "ldaps://")):
        raise Invalid("required, ldap://host or ldaps://host")
    return value


def _seconds(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise Invalid("expected a positive number of seconds")
    return float(value)


_REQUIRED = Field(validate_default=True)


@dataclass(frozen=True, slots=True)
class LdapOptions:
    """``[directories.<name>.options]`` of the ``ldap`` kind (see :class:`LdapReader`)."""

    __pydantic_config__ = OPTIONS

    url: Annotated[str, PlainValidator(_url), _REQUIRED] = ""
    user_base: Annotated[str, non_empty("required (a DN to search under)"), _REQUIRED] = ""
    group_base: Annotated[str, non_empty("required (a DN to search under)"), _REQUIRED] = ""
    bind_dn: Text | None = None
    start_tls: Flag = False
    ca_file: Text | None = None
    flavour: Annotated[str, choice(*FLAVOURS)] = "active-directory"
    user_filter: Text | None = None
    group_filter: Text | None = None
    user_id_attribute: Text | None = None
    group_id_attribute: Text = "cn"
    page_size: Positive = 500
    timeout: Annotated[float, PlainValidator(_seconds)] = 30.0
    allow_insecure: Flag = False
    disabled_attribute: Text | None = None
    disabled_value: Text = "TRUE"


def build(name: str, options: Mapping[str, Any], context: DirectoryContext) -> LdapReader:
    """The reader for ``[directories.<name>] kind = "ldap"``; errors name the bad key."""
    key = f"directories.{name}.options"
    parsed = directory_options(LdapOptions, name, options)
    password = context.secret("password") if parsed.bind_dn is not None else None
    settings = {f.name: getattr(parsed, f.name) for f in dataclasses.fields(parsed)}
    try:
        return LdapReader(name, password=password, clock=context.clock, **settings)
    except ConfigError as exc:
        raise ConfigError(f"{key}.{exc}") from exc


register_directory_reader("ldap", build)
