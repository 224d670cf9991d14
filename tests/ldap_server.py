"""A real OpenLDAP server (Debian's ``slapd``) for the LDAP directory source's tests.

:func:`start_slapd` writes a temporary ``slapd.conf`` (core, cosine, inetorgperson and nis
schemas plus a small Active-Directory-shaped schema: ``user`` and ``group`` classes with
``sAMAccountName``, ``userPrincipalName``, ``userAccountControl``, ``objectGUID``,
``proxyAddresses``, ``objectCategory``, ``accountExpires`` and
``msDS-User-Account-Control-Computed`` under AD's own OIDs, and ppolicy's
``pwdAccountLockedTime``), loads the given LDIF with ``slapadd`` and runs ``/usr/sbin/slapd`` as
the current user on free loopback ports, plain (``ldap://``, where StartTLS is offered) and
``ldaps://``, with a certificate for ``127.0.0.1`` only (not ``localhost``) signed by a CA made at start. The size limit is low
(:data:`SIZE_LIMIT`) so only a paged search reads a large tree whole; the ``cn=limited`` DN may
read at most :data:`LIMITED_TOTAL` entries in total through paging, so its search fails on a
later page. ``cn=reader`` (password :data:`READER_PASSWORD`) is an ordinary account under the
server's size limit, with paging unlimited in total; the tests add both entries to their LDIF.

AD constructs ``msDS-User-Account-Control-Computed`` on every read (MS-ADTS 3.1.1.4.5.17: the
bits ``userAccountControl`` does not persist, among them ``UF_LOCKOUT`` 0x10 while the account
is locked out); slapd cannot compute it, so a test stores the value a domain controller would
return at that moment.

When slapd is missing or cannot start, :func:`start_slapd` skips the test, except under
``CI=true`` where that is a failure.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SLAPD = "/usr/sbin/slapd"
SLAPADD = "/usr/sbin/slapadd"
SCHEMA_DIR = Path("/etc/ldap/schema")
SUFFIX = "dc=example,dc=test"
ADMIN_DN = f"cn=admin,{SUFFIX}"
ADMIN_PASSWORD = "admin-secret"
READER_DN = f"cn=reader,{SUFFIX}"
READER_PASSWORD = "reader-secret"
LIMITED_DN = f"cn=limited,{SUFFIX}"
SIZE_LIMIT = 50
LIMITED_TOTAL = 30

AD_SCHEMA = """
attributetype ( 1.2.840.113556.1.4.221 NAME 'sAMAccountName'
  EQUALITY caseIgnoreMatch SUBSTR caseIgnoreSubstringsMatch
  SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.2.840.113556.1.4.656 NAME 'userPrincipalName'
  EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.2.840.113556.1.4.8 NAME 'userAccountControl'
  EQUALITY integerMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
attributetype ( 1.2.840.113556.1.4.2 NAME 'objectGUID'
  EQUALITY octetStringMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.40 SINGLE-VALUE )
attributetype ( 1.2.840.113556.1.2.210 NAME 'proxyAddresses'
  EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )
attributetype ( 1.2.840.113556.1.4.782 NAME 'objectCategory'
  EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.2.840.113556.1.4.159 NAME 'accountExpires'
  EQUALITY integerMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
attributetype ( 1.2.840.113556.1.4.1460 NAME 'msDS-User-Account-Control-Computed'
  EQUALITY integerMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.42.2.27.8.1.17 NAME 'pwdAccountLockedTime'
  EQUALITY generalizedTimeMatch ORDERING generalizedTimeOrderingMatch
  SYNTAX 1.3.6.1.4.1.1466.115.121.1.24 SINGLE-VALUE )
objectclass ( 1.2.840.113556.1.5.9 NAME 'user' SUP top STRUCTURAL MUST cn
  MAY ( sAMAccountName $ userPrincipalName $ userAccountControl $ objectGUID $
        proxyAddresses $ objectCategory $ mail $ accountExpires $
        msDS-User-Account-Control-Computed ) )
objectclass ( 1.2.840.113556.1.5.8 NAME 'group' SUP top STRUCTURAL MUST cn
  MAY ( member $ sAMAccountName $ objectCategory ) )
objectclass ( 1.3.6.1.4.1.42.2.27.8.2.99 NAME 'lockablePerson' SUP top AUXILIARY
  MAY pwdAccountLockedTime )
"""


@dataclass(frozen=True)
class Slapd:
    host: str
    port: int
    tls_port: int
    ca_file: Path
    other_ca_file: Path

    @property
    def url(self) -> str:
        return f"ldap://{self.host}:{self.port}"

    @property
    def ldaps_url(self) -> str:
        return f"ldaps://{self.host}:{self.tls_port}"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _unavailable(why: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"slapd is needed under CI=true: {why}")
    pytest.skip(why)


def _ca_and_cert(directory: Path) -> tuple[Path, Path, Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = dt.datetime.now(dt.UTC)

    def name(text: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, text)])

    def ca(label: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (
            x509.CertificateBuilder()
            .subject_name(name(label))
            .issuer_name(name(label))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256())
        )
        return key, cert

    ca_key, ca_cert = ca("Test LDAP CA")
    _other_key, other_cert = ca("Other CA")
    key = ec.generate_private_key(ec.SECP256R1())
    import ipaddress

    cert = (
        x509.CertificateBuilder()
        .subject_name(name("127.0.0.1"))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    paths = [directory / n for n in ("ca.pem", "other-ca.pem", "server.pem", "server.key")]
    paths[0].write_bytes(ca_cert.public_bytes(pem))
    paths[1].write_bytes(other_cert.public_bytes(pem))
    paths[2].write_bytes(cert.public_bytes(pem))
    paths[3].write_bytes(
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return paths[0], paths[1], paths[2], paths[3]


def start_slapd(directory: Path, ldif: str) -> Iterator[Slapd]:
    """Run slapd with ``ldif`` loaded under :data:`SUFFIX`; yields once it answers."""
    if not (os.access(SLAPD, os.X_OK) and os.access(SLAPADD, os.X_OK)):
        _unavailable("slapd is not installed (Debian package slapd)")
    modules = Path("/usr/lib/ldap")
    ca, other_ca, cert, key = _ca_and_cert(directory)
    (directory / "ad.schema").write_text(AD_SCHEMA)
    data = directory / "data"
    data.mkdir()
    includes = "\n".join(
        f"include {SCHEMA_DIR / n}.schema" for n in ("core", "cosine", "inetorgperson", "nis")
    )
    conf = directory / "slapd.conf"
    conf.write_text(
        f"""{includes}
include {directory / "ad.schema"}
pidfile {directory / "slapd.pid"}
modulepath {modules}
moduleload back_mdb
TLSCACertificateFile {ca}
TLSCertificateFile {cert}
TLSCertificateKeyFile {key}
sizelimit size.soft={SIZE_LIMIT} size.hard={SIZE_LIMIT} size.prtotal=unlimited
database mdb
suffix "{SUFFIX}"
rootdn "{ADMIN_DN}"
rootpw {ADMIN_PASSWORD}
directory {data}
maxsize 10485760
limits dn.exact="{LIMITED_DN}" size.soft={SIZE_LIMIT} size.hard={SIZE_LIMIT} size.prtotal={LIMITED_TOTAL}
access to * by * read
"""
    )
    (directory / "data.ldif").write_text(ldif)
    loaded = subprocess.run(
        [SLAPADD, "-f", str(conf), "-l", str(directory / "data.ldif")],
        capture_output=True,
        text=True,
    )
    if loaded.returncode != 0:
        _unavailable(f"slapadd failed: {loaded.stderr.strip()[-500:]}")
    port, tls_port = _free_port(), _free_port()
    urls = f"ldap://127.0.0.1:{port}/ ldaps://127.0.0.1:{tls_port}/"
    log = (directory / "slapd.log").open("w")
    proc = subprocess.Popen(
        [SLAPD, "-d", "0", "-f", str(conf), "-h", urls], stdout=log, stderr=subprocess.STDOUT
    )
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    pass
                with socket.create_connection(("127.0.0.1", tls_port), timeout=0.5):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.close()
                    _unavailable(
                        "slapd did not start: " + (directory / "slapd.log").read_text()[-800:]
                    )
                time.sleep(0.1)
        yield Slapd("127.0.0.1", port, tls_port, ca, other_ca)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(data, ignore_errors=True)
