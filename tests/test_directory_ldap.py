"""The LDAP / Active Directory directory source against a real OpenLDAP server (slapd)."""

from __future__ import annotations

import base64
import gc
import ssl
import uuid
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import ldap3
import pytest

from clearance.access.directory import Directory
from clearance.errors import ConfigError, SourceError
from clearance.secrets import Secret
from clearance.sources.directory import ldap as ldap_module
from clearance.sources.directory import registry
from clearance.sources.directory.base import DirectoryRead, DirectoryReader
from clearance.sources.directory.ldap import LdapReader
from conftest import make_settings
from ldap_server import (
    ADMIN_DN,
    ADMIN_PASSWORD,
    LIMITED_DN,
    READER_DN,
    READER_PASSWORD,
    SIZE_LIMIT,
    SUFFIX,
    Slapd,
    start_slapd,
)

MANY = 120  # more than SIZE_LIMIT: only a paged search reads them all
GUID = uuid.UUID("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")


def _entry(dn: str, *lines: str) -> str:
    return "\n".join([f"dn: {dn}", *lines]) + "\n\n"


def _ldif() -> str:
    out = [
        _entry(
            SUFFIX,
            "objectClass: dcObject",
            "objectClass: organization",
            "o: Example",
            "dc: example",
        ),
        _entry(
            f"cn=limited,{SUFFIX}",
            "objectClass: person",
            "cn: limited",
            "sn: limited",
            "userPassword: limited-secret",
        ),
        _entry(
            READER_DN,
            "objectClass: person",
            "cn: reader",
            "sn: reader",
            f"userPassword: {READER_PASSWORD}",
        ),
    ]
    for ou in ("ad-users", "ad-groups", "people", "groups", "elsewhere"):
        out.append(_entry(f"ou={ou},{SUFFIX}", "objectClass: organizationalUnit", f"ou: {ou}"))
    ad = f"ou=ad-users,{SUFFIX}"
    guid = base64.b64encode(GUID.bytes_le).decode()
    out.append(
        _entry(
            f"cn=Alice Admin,{ad}",
            "objectClass: user",
            "cn: Alice Admin",
            "sAMAccountName: alice",
            "userPrincipalName: alice@corp.example",
            "mail: alice.admin@example.com",
            "proxyAddresses: SMTP:alice@example.com",
            "proxyAddresses: smtp:a.admin@example.com",
            "proxyAddresses: X500:/o=Example/cn=alice",
            f"objectGUID:: {guid}",
            "objectCategory: person",
            "userAccountControl: 512",
        )
    )
    out.append(
        _entry(
            f"cn=Bob Leaver,{ad}",
            "objectClass: user",
            "cn: Bob Leaver",
            "sAMAccountName: bob",
            "objectCategory: person",
            "userAccountControl: 514",  # NORMAL_ACCOUNT | ACCOUNTDISABLE
        )
    )
    out.append(
        _entry(
            f"cn=Carol NoFlags,{ad}",
            "objectClass: user",
            "cn: Carol NoFlags",
            "sAMAccountName: carol",
            "objectCategory: person",  # no userAccountControl: unknown
        )
    )
    out.append(
        _entry(
            f"cn=Dan,{ad}",
            "objectClass: user",
            "cn: Dan",
            "sAMAccountName: dan",
            "objectCategory: person",
            "userAccountControl: 66048",  # DONT_EXPIRE_PASSWORD, enabled
        )
    )
    for i in range(MANY):
        out.append(
            _entry(
                f"cn=Bulk {i:03d},{ad}",
                "objectClass: user",
                f"cn: Bulk {i:03d}",
                f"sAMAccountName: bulk{i:03d}",
                "objectCategory: person",
                "userAccountControl: 512",
            )
        )
    adg = f"ou=ad-groups,{SUFFIX}"
    # Three levels: top <- middle <- bottom <- alice; and a cycle: loop-a <-> loop-b.
    out.append(_entry(f"cn=top,{adg}", "objectClass: group", "cn: top", f"member: cn=middle,{adg}"))
    out.append(
        _entry(
            f"cn=middle,{adg}",
            "objectClass: group",
            "cn: middle",
            f"member: CN=Bottom, OU=AD-Groups,{SUFFIX}",
        )
    )
    out.append(
        _entry(
            f"cn=bottom,{adg}",
            "objectClass: group",
            "cn: bottom",
            f"member: cn=Alice Admin,{ad}",
            f"member: cn=Bob Leaver,{ad}",
        )
    )
    out.append(
        _entry(
            f"cn=loop-a,{adg}",
            "objectClass: group",
            "cn: loop-a",
            f"member: cn=loop-b,{adg}",
            f"member: cn=Dan,{ad}",
        )
    )
    out.append(
        _entry(
            f"cn=loop-b,{adg}",
            "objectClass: group",
            "cn: loop-b",
            f"member: cn=loop-a,{adg}",
            f"member: cn=stranger,ou=elsewhere,{SUFFIX}",
        )
    )
    out.append(
        _entry(
            f"cn=everyone,{adg}",
            "objectClass: group",
            "cn: everyone",
            *(f"member: cn=Bulk {i:03d},{ad}" for i in range(MANY)),
        )
    )
    people = f"ou=people,{SUFFIX}"
    out.append(
        _entry(
            f"cn=stranger,ou=elsewhere,{SUFFIX}",
            "objectClass: inetOrgPerson",
            "cn: stranger",
            "sn: s",
            "uid: stranger",
        )
    )
    out.append(
        _entry(
            f"uid=erin,{people}",
            "objectClass: inetOrgPerson",
            "cn: Erin",
            "sn: E",
            "uid: erin",
            "mail: erin@example.com",
        )
    )
    out.append(
        _entry(
            f"uid=frank,{people}",
            "objectClass: inetOrgPerson",
            "objectClass: lockablePerson",
            "cn: Frank",
            "sn: F",
            "uid: frank",
            "pwdAccountLockedTime: 20260101000000Z",
        )
    )
    out.append(
        _entry(
            f"uid=gina,{people}",
            "objectClass: inetOrgPerson",
            "cn: Gina",
            "sn: G",
            "uid: gina",
            "employeeType: disabled",
        )
    )
    grp = f"ou=groups,{SUFFIX}"
    out.append(
        _entry(
            f"cn=staff,{grp}",
            "objectClass: groupOfNames",
            "cn: staff",
            f"member: uid=erin,{people}",
            f"member: cn=leads,{grp}",
            f"member: uid=ghost,{people}",
        )
    )
    out.append(
        _entry(
            f"cn=leads,{grp}",
            "objectClass: groupOfUniqueNames",
            "cn: leads",
            f"uniqueMember: uid=frank,{people}#'0101'B",
            f"uniqueMember: cn=staff,{grp}",
        )
    )
    return "".join(out)


@pytest.fixture(scope="module")
def slapd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Slapd]:
    yield from start_slapd(tmp_path_factory.mktemp("slapd"), _ldif())


def _ad(slapd: Slapd, **kwargs: Any) -> LdapReader:
    options: dict[str, Any] = {
        "user_base": f"ou=ad-users,{SUFFIX}",
        "group_base": f"ou=ad-groups,{SUFFIX}",
        # An ordinary account under the server's size limit (the root DN has none).
        "bind_dn": READER_DN,
        "password": Secret(READER_PASSWORD),
        "start_tls": True,
        "ca_file": str(slapd.ca_file),
        "page_size": 20,
        "timeout": 10.0,
    }
    options.update(kwargs)
    url = options.pop("url", slapd.url)
    cls = options.pop("cls", LdapReader)
    return cls("corp", url, **options)  # type: ignore[no-any-return]


def _openldap(slapd: Slapd, **kwargs: Any) -> LdapReader:
    return _ad(
        slapd,
        flavour="openldap",
        user_base=f"ou=people,{SUFFIX}",
        group_base=f"ou=groups,{SUFFIX}",
        disabled_attribute="employeeType",
        disabled_value="disabled",
        **kwargs,
    )


def _whole(read: DirectoryRead) -> None:
    """The assertion a correct read of the AD tree passes and a short one fails."""
    assert len(read.doc.users) == MANY + 4
    assert len(read.doc.groups["everyone"].members) == MANY


def test_a_reader_and_unpaged_search_hits_the_size_limit(slapd: Slapd) -> None:
    reader = _ad(slapd)
    assert isinstance(reader, DirectoryReader)
    # The root DN has no limits; an ordinary bind shows the server's size limit.
    conn = ldap3.Connection(ldap3.Server(slapd.url), LIMITED_DN, "limited-secret", auto_bind=True)
    conn.search(f"ou=ad-users,{SUFFIX}", "(objectClass=user)")
    assert conn.result["description"] == "sizeLimitExceeded"
    assert len(conn.entries) <= SIZE_LIMIT
    conn.unbind()


def test_paged_read_is_whole_with_nesting_disabled_and_aliases(slapd: Slapd) -> None:
    progress: list[tuple[str, int]] = []
    read = _ad(slapd).read(None, lambda what, n: progress.append((what, n)))
    _whole(read)
    users, groups = read.doc.users, read.doc.groups
    assert read.api_calls >= 1 + (MANY + 4 + 19) // 20  # the bind and every page
    assert ("users", MANY + 4) in progress
    # Disabled by userAccountControl bit 0x2; missing flags are inactive too.
    assert users["alice"].active and users["dan"].active and users["bulk000"].active
    assert not users["bob"].active
    assert not users["carol"].active
    assert set(users["alice"].aliases) == {
        "alice@corp.example",
        "alice.admin@example.com",
        "alice@example.com",
        "a.admin@example.com",
        str(GUID),
    }
    # Nesting as group members, three levels; DNs compared case- and spacing-insensitively.
    assert groups["top"].members == {"group:middle"}
    assert groups["middle"].members == {"group:bottom"}
    assert groups["bottom"].members == {"user:alice", "user:bob"}
    assert groups["loop-a"].members == {"group:loop-b", "user:dan"}
    assert groups["loop-b"].members == {"group:loop-a"}  # the stranger outside the base dropped
    assert any("stranger" in w for w in read.warnings)


def test_transitive_membership_through_the_directory(slapd: Slapd) -> None:
    read = _ad(slapd).read(None)
    directory = Directory.empty().replace(read.doc)
    alice = directory.principal_set("alice")
    assert {"group:top", "group:middle", "group:bottom"} <= set(alice)
    assert directory.principal_set("bob") == frozenset()  # disabled: nothing
    dan = directory.principal_set("dan")
    assert {"group:loop-a", "group:loop-b"} <= set(dan)
    match = directory.resolve("alice@corp.example")
    assert match is not None and match.user_id == "alice"


def test_openldap_flavour(slapd: Slapd) -> None:
    read = _openldap(slapd).read(None)
    users, groups = read.doc.users, read.doc.groups
    assert users["erin"].active
    assert not users["frank"].active  # pwdAccountLockedTime
    assert not users["gina"].active  # disabled_attribute / disabled_value
    assert "erin@example.com" in users["erin"].aliases
    uuid.UUID(next(a for a in users["erin"].aliases if "@" not in a))  # entryUUID recorded
    assert groups["staff"].members == {"user:erin", "group:leads"}
    assert groups["leads"].members == {"user:frank", "group:staff"}
    assert any("uid=ghost" in w for w in read.warnings)


def test_ldaps_and_wrong_ca(slapd: Slapd) -> None:
    _whole(_ad(slapd, url=slapd.ldaps_url, start_tls=False).read(None))
    with pytest.raises(SourceError):
        _ad(slapd, url=slapd.ldaps_url, start_tls=False, ca_file=str(slapd.other_ca_file)).read(
            None
        )
    with pytest.raises(SourceError):
        _ad(slapd, ca_file=str(slapd.other_ca_file)).read(None)  # StartTLS, wrong CA


# ldap3 drops the TLS socket it wrapped when the host name check fails without closing it.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_certificate_for_another_host_refused(slapd: Slapd) -> None:
    # The right CA, but the certificate names 127.0.0.1, not localhost: refused.
    with pytest.raises(SourceError, match="doesn't match"):
        _ad(slapd, url=f"ldaps://localhost:{slapd.tls_port}", start_tls=False).read(None)
    with pytest.raises(SourceError):
        _ad(slapd, url=f"ldap://localhost:{slapd.port}").read(None)  # StartTLS
    gc.collect()


def test_plain_bind_refused_without_tls(slapd: Slapd) -> None:
    with pytest.raises(ConfigError, match="allow_insecure"):
        _ad(slapd, start_tls=False)
    # Explicitly allowed, it works (a trusted network); a wrong password fails the read.
    _whole(_ad(slapd, start_tls=False, allow_insecure=True).read(None))
    with pytest.raises(SourceError, match="invalidCredentials"):
        _ad(slapd, password=Secret("wrong")).read(None)


class _SkipsFailedPages(LdapReader):
    """Leaky: stops quietly at a failed page, returning what it read so far."""

    def _search(
        self, conn: ldap3.Connection, base: str, query: str, attributes: Sequence[str]
    ) -> Iterator[tuple[str, Mapping[str, Any]]]:
        try:
            yield from super()._search(conn, base, query, attributes)
        except SourceError:
            return


class _FirstPageOnly(LdapReader):
    """Leaky: reads only the first page of each search."""

    def _search(
        self, conn: ldap3.Connection, base: str, query: str, attributes: Sequence[str]
    ) -> Iterator[tuple[str, Mapping[str, Any]]]:
        conn.search(base, query, attributes=list(attributes), paged_size=self.page_size)
        self.calls += 1
        for entry in conn.response or []:
            if entry.get("type") == "searchResEntry":
                yield str(entry["dn"]), entry.get("raw_attributes") or {}


class _Unpaged(LdapReader):
    """Leaky: one unpaged search per base, taking what the size limit lets through."""

    def _search(
        self, conn: ldap3.Connection, base: str, query: str, attributes: Sequence[str]
    ) -> Iterator[tuple[str, Mapping[str, Any]]]:
        conn.search(base, query, attributes=list(attributes))
        self.calls += 1
        for entry in conn.response or []:
            if entry.get("type") == "searchResEntry":
                yield str(entry["dn"]), entry.get("raw_attributes") or {}


def test_a_failing_page_fails_the_whole_read(slapd: Slapd) -> None:
    limited = {"bind_dn": LIMITED_DN, "password": Secret("limited-secret")}
    with pytest.raises(SourceError, match=r"(?i)limit"):
        _ad(slapd, **limited).read(None)
    # Reverse proof: a reader that skips the failed page returns a short snapshot, which the
    # same whole-read assertion catches.
    short = _ad(slapd, cls=_SkipsFailedPages, **limited).read(None)
    assert 0 < len(short.doc.users) < MANY  # the failure came after pages that were read
    with pytest.raises(AssertionError):
        _whole(short)
    first = _ad(slapd, cls=_FirstPageOnly).read(None)
    with pytest.raises(AssertionError):
        _whole(first)
    # A reader that searches without paging, ignoring sizeLimitExceeded, is short too.
    unpaged = _ad(slapd, cls=_Unpaged).read(None)
    assert len(unpaged.doc.users) <= SIZE_LIMIT
    with pytest.raises(AssertionError):
        _whole(unpaged)


def test_options_are_checked() -> None:
    with pytest.raises(ConfigError, match="url"):
        LdapReader("x", "http://h", user_base="dc=x", group_base="dc=x")
    with pytest.raises(ConfigError, match="flavour"):
        LdapReader("x", "ldaps://h", user_base="dc=x", group_base="dc=x", flavour="novell")
    with pytest.raises(ConfigError, match="allow_insecure"):
        LdapReader("x", "ldap://h", user_base="dc=x", group_base="dc=x", password=Secret("p"))


def test_reverse_proofs_for_tls_and_disabled(slapd: Slapd) -> None:
    # A reader that does not verify the certificate reads through the wrong CA: the refusal
    # above comes from verification, and the same assertion catches the leaky reader.
    leaky = _ad(slapd, url=slapd.ldaps_url, start_tls=False, ca_file=str(slapd.other_ca_file))
    leaky.server = ldap3.Server(
        slapd.ldaps_url, use_ssl=True, tls=ldap3.Tls(validate=ssl.CERT_NONE)
    )
    with pytest.raises(pytest.fail.Exception), pytest.raises(SourceError):
        leaky.read(None)

    # A reader that trusts accounts whose state it cannot read keeps the leaver and the
    # account without flags: the disabled-account assertions catch it.
    class _TrustsEveryone(LdapReader):
        def _active(self, attrs: Mapping[str, Any]) -> bool:
            return True

    users = _ad(slapd, cls=_TrustsEveryone).read(None).doc.users
    with pytest.raises(AssertionError):
        assert not users["bob"].active
    with pytest.raises(AssertionError):
        assert not users["carol"].active


_GOOD = {"url": "ldaps://dc.example.test", "user_base": "dc=x", "group_base": "dc=x"}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"user_base": "dc=x", "group_base": "dc=x"}, "url: required"),
        ({**_GOOD, "url": "https://dc"}, "url: required"),
        ({**_GOOD, "group_base": None}, "group_base: required"),
        ({**_GOOD, "flavour": "novell"}, "flavour: expected"),
        ({**_GOOD, "page_size": 0}, "page_size: expected"),
        ({**_GOOD, "timeout": "soon"}, "timeout: expected"),
        ({**_GOOD, "start_tls": "yes"}, "start_tls: expected true or false"),
        ({**_GOOD, "start_tls": True}, "start_tls: not with an ldaps"),
        ({**_GOOD, "url": "ldap://dc", "bind_dn": "cn=svc"}, "url: .* in clear"),
        ({**_GOOD, "colour": 1}, "colour: unknown option"),
    ],
)
def test_bad_options_name_the_key(tmp_path: Path, options: dict[str, Any], message: str) -> None:
    options = {k: v for k, v in options.items() if v is not None}
    settings = make_settings(
        tmp_path,
        {
            "directories": {
                "corp": {"kind": "ldap", "credentials": {"password": "LDAP_PW"}, "options": options}
            }
        },
    )
    with pytest.raises(ConfigError, match=f"directories.corp.options.{message}"):
        registry.build_directory_reader(
            settings, settings.directories["corp"], env={"LDAP_PW": "p"}
        )


def test_the_ldap_kind_is_built_from_settings(tmp_path: Path, slapd: Slapd) -> None:
    options = {
        "url": slapd.url,
        "start_tls": True,
        "ca_file": str(slapd.ca_file),
        "bind_dn": ADMIN_DN,
        "user_base": f"ou=people,{SUFFIX}",
        "group_base": f"ou=groups,{SUFFIX}",
        "flavour": "openldap",
        "page_size": 10,
    }
    settings = make_settings(
        tmp_path,
        {
            "directories": {
                "corp": {"kind": "ldap", "credentials": {"password": "LDAP_PW"}, "options": options}
            }
        },
    )
    assert "ldap" in registry.available_directory_kinds()
    built = registry.build_directory_reader(
        settings, settings.directories["corp"], env={"LDAP_PW": ADMIN_PASSWORD}
    )
    try:
        assert ADMIN_PASSWORD not in repr(built)
        assert set(built.read(None).doc.users) == {"erin", "frank", "gina"}
    finally:
        built.close()
    with pytest.raises(ConfigError, match=r"credentials\.password"):
        registry.build_directory_reader(settings, settings.directories["corp"], env={})


def test_ranged_member_attribute_fails_the_read(slapd: Slapd) -> None:
    # AD returns a group's members as member;range=0-1499 when there are more than one reply
    # holds; reading only that range would drop members, so the read fails.
    class _RangedReply(LdapReader):
        def _search(
            self, conn: ldap3.Connection, base: str, query: str, attributes: Sequence[str]
        ) -> Iterator[tuple[str, Mapping[str, Any]]]:
            for dn, attrs in super()._search(conn, base, query, attributes):
                if dn.startswith("cn=everyone"):
                    attrs = {"cn": [b"everyone"], "member;range=0-1499": attrs["member"]}
                yield dn, attrs

    with pytest.raises(SourceError, match="ranged member attribute"):
        _ad(slapd, cls=_RangedReply).read(None)


# --------------------------------------------------------------------------- account expiry
#
# [MS-ADA1] Account-Expires: "the number of 100-nanosecond intervals since January 1, 1601
# (UTC). A value of 0 or 0x7FFFFFFFFFFFFFFF indicates that the account never expires." AD
# does not set ACCOUNTDISABLE for an expired account: userAccountControl still reads 512.


def _filetime(year: int) -> int:
    return (
        int((datetime(year, 1, 1, tzinfo=UTC) - datetime(1601, 1, 1, tzinfo=UTC)).total_seconds())
        * 10_000_000
    )


def _ad_people(*people: tuple[str, ...]) -> str:
    """An AD-shaped tree with a person per ``(name, *attribute lines)``, each a normal,
    enabled account (``userAccountControl: 512``) unless its lines say more."""
    users = f"ou=ad-users,{SUFFIX}"

    def person(name: str, *lines: str) -> str:
        return _entry(
            f"cn={name},{users}",
            "objectClass: user",
            f"cn: {name}",
            f"sAMAccountName: {name.lower()}",
            "objectCategory: person",
            "userAccountControl: 512",  # NORMAL_ACCOUNT, not disabled
            *lines,
        )

    return "".join(
        [
            _entry(
                SUFFIX, "objectClass: dcObject", "objectClass: organization", "o: Ex", "dc: example"
            ),
            _entry(
                READER_DN,
                "objectClass: person",
                "cn: reader",
                "sn: reader",
                f"userPassword: {READER_PASSWORD}",
            ),
            _entry(users, "objectClass: organizationalUnit", "ou: ad-users"),
            _entry(f"ou=ad-groups,{SUFFIX}", "objectClass: organizationalUnit", "ou: ad-groups"),
            *(person(*one) for one in people),
        ]
    )


def _expiry_ldif() -> str:
    return _ad_people(
        ("Erin", f"accountExpires: {_filetime(2001)}"),  # expired in 2001
        ("Fay", "accountExpires: 9223372036854775807"),  # never
        ("Gil", "accountExpires: 0"),  # never
        ("Hal", f"accountExpires: {_filetime(2030)}"),  # a contractor's end date
        ("Ivy",),  # none set: no expiry
        ("Jo", "accountExpires: soon"),  # unreadable: inactive
    )


@pytest.fixture(scope="module")
def expiring(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Slapd]:
    yield from start_slapd(tmp_path_factory.mktemp("slapd-expiry"), _expiry_ldif())


def _active_by_year(slapd: Slapd, year: int) -> dict[str, bool]:
    """Who the AD reader finds active when the directory sync's clock reads ``year``."""
    reader = _ad(slapd, clock=lambda: datetime(year, 6, 1, tzinfo=UTC))
    try:
        return {u.id: u.active for u in reader.read(None).doc.users.values()}
    finally:
        reader.close()


def test_an_expired_active_directory_account_is_inactive(expiring: Slapd) -> None:
    assert _active_by_year(expiring, 2029) == {
        "erin": False,
        "fay": True,
        "gil": True,
        "hal": True,
        "ivy": True,
        "jo": False,
    }
    assert not _active_by_year(expiring, 2031)["hal"]  # by the sync's clock, not the host's


def test_reverse_proof_a_reader_that_ignores_account_expiry_is_caught(
    expiring: Slapd, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ldap_module, "expired", lambda value, now: False)
    active = _active_by_year(expiring, 2031)
    with pytest.raises(AssertionError):
        assert not active["erin"]
    with pytest.raises(AssertionError):
        assert not active["hal"]


def test_the_ldap_kind_judges_expiry_by_the_directory_syncs_clock(
    tmp_path: Path, expiring: Slapd
) -> None:
    options = {
        "url": expiring.url,
        "user_base": f"ou=ad-users,{SUFFIX}",
        "group_base": f"ou=ad-groups,{SUFFIX}",
        "bind_dn": READER_DN,
        "start_tls": True,
        "ca_file": str(expiring.ca_file),
    }
    corp = {"kind": "ldap", "credentials": {"password": "LDAP_PW"}, "options": options}
    settings = make_settings(tmp_path, {"directories": {"corp": corp}})
    built = registry.build_directory_reader(
        settings,
        settings.directories["corp"],
        env={"LDAP_PW": READER_PASSWORD},
        clock=lambda: datetime(2031, 1, 2, tzinfo=UTC),
    )
    try:
        assert not built.read(None).doc.users["hal"].active
    finally:
        built.close()


# --------------------------------------------------------------------------- account lockout
#
# [MS-ADTS] 3.1.1.4.5.17 msDS-User-Account-Control-Computed: a constructed attribute whose
# ADS_UF_LOCKOUT bit (0x10) is set while the account is locked out (lockoutTime set and the
# lockout duration not yet over). userAccountControl does not persist that bit ("additional
# bits that are not persisted", ms-DS-User-Account-Control-Computed in the AD schema
# reference): a locked-out account still reads 512 there. The reader's contract
# (clearance.sources.directory.base) makes a locked-out account inactive, as Okta's LOCKED_OUT.

_COMPUTED = "msDS-User-Account-Control-Computed"


@pytest.fixture(scope="module")
def locking(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Slapd]:
    ldif = _ad_people(
        ("Kim", f"{_COMPUTED}: 16"),  # UF_LOCKOUT: locked out after failed sign-ins
        ("Lee", f"{_COMPUTED}: 8388624"),  # UF_LOCKOUT | UF_PASSWORD_EXPIRED
        ("Max", f"{_COMPUTED}: 0"),  # nothing computed: not locked out
        ("Ned", f"{_COMPUTED}: 8388608"),  # UF_PASSWORD_EXPIRED alone, as Okta's: active
        ("Oz",),  # not returned (a global catalog does not hold it): lockout unknown
    )
    yield from start_slapd(tmp_path_factory.mktemp("slapd-lockout"), ldif)


def _active(slapd: Slapd) -> dict[str, bool]:
    reader = _ad(slapd)
    try:
        return {u.id: u.active for u in reader.read(None).doc.users.values()}
    finally:
        reader.close()


def test_a_locked_out_active_directory_account_is_inactive(locking: Slapd) -> None:
    assert _active(locking) == {"kim": False, "lee": False, "max": True, "ned": True, "oz": True}


def test_reverse_proof_a_reader_that_reads_user_account_control_alone_is_caught(
    locking: Slapd, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ldap_module, "locked_out", lambda values: False)
    assert _active(locking)["kim"]  # the locked-out account keeps its access
