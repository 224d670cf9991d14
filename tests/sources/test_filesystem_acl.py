"""The filesystem connector's ``acl = "posix"`` on real POSIX ACLs, and its refusal on shares.

Files and folders are real, under pytest's tmp_path, with ACLs set by ``setfacl``; owners and
groups are numeric ids named through the source's ``users``/``groups`` tables. Without a
working ``setfacl`` (Debian package ``acl``) the ACL tests skip, and fail under ``CI=true``.

Each guarantee comes with a reverse proof: a deliberately broken connector that the same
check catches."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from clearance.errors import ConfigError, SourceError
from clearance.sources import filesystem
from clearance.sources.filesystem import (
    FilesystemConnector,
    PosixAcl,
    PosixMapping,
    mounts_of,
    parse_posix_acl,
)
from clearance.sources.registry import build_connector
from clearance.sources.service import source_status

from .conftest import Share, make_share
from .connector_conformance import SharingShapes, matches

ALICE, BOB, CAROL = 50001, 50002, 50003
STAFF, HR = 60001, 60002

OPTIONS: dict[str, Any] = {
    "acl": "posix",
    "users": {str(ALICE): "user:alice", str(BOB): "user:bob", str(CAROL): "user:carol"},
    "groups": {str(STAFF): "group:staff", str(HR): "group:hr"},
}

# carol is staff; bob is not, and is in hr.
DIRECTORY = {
    "users": [{"id": u, "active": True, "attributes": {}} for u in ("alice", "bob", "carol")],
    "groups": [
        {"id": "staff", "members": ["user:alice", "user:carol"]},
        {"id": "hr", "members": ["user:bob"]},
    ],
}

SETFACL = shutil.which("setfacl")


def acls_unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason}: POSIX ACLs are required in CI (Debian package acl)")
    pytest.skip(f"{reason} (apt-get install acl)")


def setfacl(path: Path, *args: str) -> None:
    assert SETFACL is not None
    done = subprocess.run([SETFACL, *args, str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        raise AssertionError(f"setfacl {' '.join(args)} {path}: {done.stderr.strip()}")


def acl_share(tmp_path: Path, **options: Any) -> Iterator[Share]:
    """A share synced with ``acl = "posix"``, its root owned by alice:staff, mode 0755."""
    if SETFACL is None:
        acls_unavailable("setfacl is not installed")
    probe = tmp_path / "probe"
    probe.touch()
    try:
        setfacl(probe, "-m", f"u:{BOB}:r")
    except AssertionError as exc:
        acls_unavailable(f"POSIX ACLs cannot be set under {tmp_path}: {exc}")
    probe.unlink()
    for share in make_share(tmp_path, options={**OPTIONS, **options}):
        share.app.sync_directory_data(json.dumps(DIRECTORY), "directory.json")
        own(share.root, 0o755)
        yield share


def own(path: Path, mode: int, owner: int = ALICE, group: int = STAFF) -> Path:
    os.chown(path, owner, group)
    os.chmod(path, mode)
    return path


def put(root: Path, rel: str, mode: int, *acl: str, text: str = "Payroll figures.") -> Path:
    """A file owned by alice:staff with ``mode``, then ``setfacl`` with ``acl``."""
    path = root / rel
    path.write_text(text, encoding="utf-8")
    own(path, mode)
    if acl:
        setfacl(path, *acl)
    return path


def folder(root: Path, rel: str, mode: int, *acl: str) -> Path:
    path = root / rel
    path.mkdir()
    own(path, mode)
    if acl:
        setfacl(path, *acl)
    return path


# --------------------------------------------------------------------------- the table

Expected = frozenset[str] | str  # the principals, or a part of the reason for nobody


@dataclass(frozen=True)
class Shape:
    name: str
    make: Callable[[Path, pytest.MonkeyPatch], str]  # builds it, returns the file's path
    expected: Expected


def mode_only(root: Path, _: pytest.MonkeyPatch) -> str:
    put(root, "doc.md", 0o640)
    return "doc.md"


def named_user(root: Path, _: pytest.MonkeyPatch) -> str:
    path = put(root, "doc.md", 0o600, "-m", f"u:{BOB}:r")
    assert path.stat().st_mode & 0o777 == 0o640  # the mask shows as the group's bits
    return "doc.md"


def named_group(root: Path, _: pytest.MonkeyPatch) -> str:
    put(root, "doc.md", 0o600, "-m", f"g:{HR}:r")
    return "doc.md"


def mask_narrows_named_user(root: Path, _: pytest.MonkeyPatch) -> str:
    put(root, "doc.md", 0o600, "-m", f"u:{BOB}:r,m::-")
    return "doc.md"


def owning_group_through_mask(root: Path, _: pytest.MonkeyPatch) -> str:
    put(root, "doc.md", 0o600, "-m", f"g::r,u:{BOB}:r,m::r")
    return "doc.md"


def mask_narrows_owning_group(root: Path, _: pytest.MonkeyPatch) -> str:
    path = put(root, "doc.md", 0o640, "-m", f"u:{BOB}:-,m::-")
    assert path.stat().st_mode & 0o777 == 0o600
    return "doc.md"


def other_reads_named_user_denied(root: Path, _: pytest.MonkeyPatch) -> str:
    put(root, "doc.md", 0o644, "-m", f"u:{BOB}:-")
    return "doc.md"


def other_reads_named_group_denied(root: Path, _: pytest.MonkeyPatch) -> str:
    put(root, "doc.md", 0o644, "-m", f"g:{HR}:-")
    return "doc.md"


def group_reads_named_user_denied(root: Path, _: pytest.MonkeyPatch) -> str:
    put(root, "doc.md", 0o640, "-m", f"u:{BOB}:-")
    return "doc.md"


def folder_denies_named_group(root: Path, _: pytest.MonkeyPatch) -> str:
    folder(root, "hr", 0o755, "-m", f"g:{HR}:r")  # may list it, may not enter it
    put(root, "hr/doc.md", 0o644)
    return "hr/doc.md"


def folder_admits_named_group_only(root: Path, _: pytest.MonkeyPatch) -> str:
    folder(root, "hr", 0o700, "-m", f"g:{HR}:rx")
    put(root, "hr/doc.md", 0o644)
    return "hr/doc.md"


def default_acl_file_from_before(root: Path, _: pytest.MonkeyPatch) -> str:
    team = folder(root, "team", 0o750, "-m", f"u:{BOB}:rx")
    put(root, "team/doc.md", 0o640)
    setfacl(team, "-d", "-m", f"u:{BOB}:r")
    return "team/doc.md"


def default_acl_file_created_after(root: Path, _: pytest.MonkeyPatch) -> str:
    team = folder(root, "team", 0o750, "-m", f"u:{BOB}:rx")
    setfacl(team, "-d", "-m", f"u:{BOB}:r")
    path = root / "team" / "doc.md"
    path.write_text("Payroll figures.", encoding="utf-8")  # inherits the default ACL
    os.chown(path, ALICE, STAFF)
    return "team/doc.md"


def unparseable(data: bytes) -> Callable[[Path, pytest.MonkeyPatch], str]:
    """The kernel refuses to store a malformed ACL, so the connector's reader is handed one."""

    def make(root: Path, monkeypatch: pytest.MonkeyPatch) -> str:
        path = put(root, "doc.md", 0o644)
        real = filesystem._read_acl
        monkeypatch.setattr(
            filesystem,
            "_read_acl",
            lambda p: parse_posix_acl(data) if p == path else real(p),
        )
        return "doc.md"

    return make


def entries(*entries: tuple[int, int, int], version: int = 2) -> bytes:
    return struct.pack("<I", version) + b"".join(struct.pack("<HHI", *e) for e in entries)


NONE = 0xFFFFFFFF
MINIMAL = ((0x01, 6, NONE), (0x04, 4, NONE), (0x20, 4, NONE))

SHAPES = [
    Shape("mode only (0640)", mode_only, frozenset({"user:alice", "group:staff"})),
    Shape("named user (0600 + u:bob:r)", named_user, frozenset({"user:alice", "user:bob"})),
    Shape("named group (0600 + g:hr:r)", named_group, frozenset({"user:alice", "group:hr"})),
    Shape(
        "mask narrowing a named user to nothing (u:bob:r, m::-)",
        mask_narrows_named_user,
        frozenset({"user:alice"}),
    ),
    Shape(
        "owning group readable through the mask (g::r, u:bob:r, m::r)",
        owning_group_through_mask,
        frozenset({"user:alice", "group:staff", "user:bob"}),
    ),
    Shape(
        "mask narrowing the owning group (0640 + u:bob:-, m::-)",
        mask_narrows_owning_group,
        frozenset({"user:alice"}),
    ),
    Shape(
        "others may read, a named user may not (0644 + u:bob:-)",
        other_reads_named_user_denied,
        "its ACL lets others read what user:bob may not",
    ),
    Shape(
        "others may read, a named group may not (0644 + g:hr:-)",
        other_reads_named_group_denied,
        "its ACL lets others read what group:hr may not",
    ),
    Shape(
        "the owning group may read, a named user may not (0640 + u:bob:-)",
        group_reads_named_user_denied,
        "its ACL lets group:staff read what user:bob may not",
    ),
    Shape(
        "folder ACL removing traversal for a named group (0755 + g:hr:r)",
        folder_denies_named_group,
        "folder hr: its ACL lets others enter what group:hr may not",
    ),
    Shape(
        "folder ACL admitting a named group only (0700 + g:hr:rx)",
        folder_admits_named_group_only,
        frozenset({"user:alice", "group:hr"}),
    ),
    Shape(
        "default ACL on the folder, file from before it (d:u:bob:r)",
        default_acl_file_from_before,
        frozenset({"user:alice", "group:staff"}),
    ),
    Shape(
        "default ACL on the folder, file created after it (d:u:bob:r)",
        default_acl_file_created_after,
        frozenset({"user:alice", "user:bob", "group:staff"}),
    ),
    Shape(
        "malformed ACL attribute (truncated entry)",
        unparseable(entries(*MINIMAL)[:-3]),
        "its POSIX ACL cannot be parsed: 25 bytes are not a header and whole entries",
    ),
    Shape(
        "unknown ACL version (3)",
        unparseable(entries(*MINIMAL, version=3)),
        "its POSIX ACL cannot be parsed: version 3, expected 2",
    ),
]


class TestPosixSharing(SharingShapes):
    """Each shape of the table, on its own share (tests/sources/connector_conformance.py)."""

    SHAPES = SHAPES

    @pytest.fixture
    def src(self, tmp_path: Path) -> Iterator[Share]:
        yield from acl_share(tmp_path)

    def share(self, src: Share, shape: Shape, monkeypatch: pytest.MonkeyPatch) -> str:
        return f"files:{shape.make(src.root, monkeypatch)}"

    def sync(self, src: Share) -> None:
        reports = src.sync()
        assert all(r.ok for r in reports), [r.error for r in reports]


def unmasked(path: Path) -> PosixAcl | None:
    """Broken on purpose: the ACL without its mask."""
    acl = READ_ACL(path)
    return None if acl is None else replace(acl, mask=None)


READ_ACL = filesystem._read_acl
BROKEN = [
    ("mode bits", lambda path: None, "named user (0600 + u:bob:r)"),
    ("mode bits", lambda path: None, "others may read, a named user may not (0644 + u:bob:-)"),
    ("mode bits", lambda path: None, "folder ACL admitting a named group only (0700 + g:hr:rx)"),
    ("no mask", unmasked, "mask narrowing a named user to nothing (u:bob:r, m::-)"),
    ("no mask", unmasked, "mask narrowing the owning group (0640 + u:bob:-, m::-)"),
]


@pytest.mark.parametrize(
    ("broken", "reader", "name"), BROKEN, ids=[f"{b}: {n}" for b, _, n in BROKEN]
)
def test_reverse_proof_the_table_catches_a_reader_of_mode_bits_or_without_the_mask(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    broken: str,
    reader: Callable[[Path], PosixAcl | None],
    name: str,
) -> None:
    (shape,) = [s for s in SHAPES if s.name == name]
    monkeypatch.setattr(filesystem, "_read_acl", reader)
    for share in acl_share(tmp_path):
        found = TestPosixSharing().mapped(share, shape, monkeypatch)
        assert not matches(found, shape.expected), found


# --------------------------------------------------------------------------- the reported leak


def leaks_of_bobs_file(share: Share) -> list[str]:
    """Mode 0600, alice:staff, ``setfacl -m u:bob:r`` — ``stat`` shows 0640. carol (staff)
    must not get it through search, explain or ask; bob must find it."""
    put(share.root, "payroll.md", 0o600, "-m", f"u:{BOB}:r", text="Payroll figures for March.")
    share.sync()
    leaks: list[str] = []
    if share.found("carol", "payroll"):
        leaks.append("carol finds it")
    decisions = share.app.explain("carol", "files:payroll.md")["decisions"]
    if any(d["allow"] for d in decisions.values()):
        leaks.append("explain allows carol")
    answer = share.app.ask("What are the payroll figures for March?", "carol")
    if any(c.doc_id == "files:payroll.md" for c in answer.citations):
        leaks.append("carol's answer cites it")
    if share.found("bob", "payroll") != {"files:payroll.md"}:
        leaks.append("bob does not find it")
    return leaks


def test_a_named_user_acl_reaches_that_user_and_not_the_group_its_mask_shows(
    tmp_path: Path,
) -> None:
    for share in acl_share(tmp_path):
        assert leaks_of_bobs_file(share) == []
        answer = share.app.ask("What are the payroll figures for March?", "bob")
        assert "files:payroll.md" in {c.doc_id for c in answer.citations}


def test_reverse_proof_a_connector_reading_the_mode_bits_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(filesystem, "_read_acl", lambda path: None)  # "no extended ACL"
    for share in acl_share(tmp_path):
        assert leaks_of_bobs_file(share) == [
            "carol finds it",
            "explain allows carol",
            "carol's answer cites it",
            "bob does not find it",
        ]


# --------------------------------------------------------------------------- the parser


def test_the_parser_reads_what_setfacl_wrote(tmp_path: Path) -> None:
    for share in acl_share(tmp_path):
        path = put(share.root, "doc.md", 0o640, "-m", f"u:{BOB}:r,g:{HR}:rw,m::r")
        acl = parse_posix_acl(os.getxattr(path, "system.posix_acl_access"))
        assert acl == PosixAcl(owner=6, group=4, other=0, users={BOB: 4}, groups={HR: 6}, mask=4)


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (b"", "0 bytes are not a header"),
        (entries(*MINIMAL, version=1), "version 1, expected 2"),
        (entries(*MINIMAL, (0x40, 4, NONE)), "unknown entry tag 0x40"),
        (entries(*MINIMAL, (0x02, 4, BOB)), "named entries without a mask"),
        (entries(*MINIMAL, (0x10, 4, NONE), (0x10, 4, NONE)), "mask entry appears twice"),
        (entries(*MINIMAL, (0x10, 4, NONE), (0x08, 4, HR), (0x08, 0, HR)), "group 60002"),
        (entries(*MINIMAL[1:]), "no owner entry"),
        (entries((0x01, 8, NONE), *MINIMAL[1:]), "permissions 0x8"),
    ],
)
def test_the_parser_refuses_what_it_cannot_read_exactly(data: bytes, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        parse_posix_acl(data)


def test_mode_bits_stand_when_there_is_no_extended_acl() -> None:
    info = os.stat_result((0o100604, 0, 0, 1, ALICE, STAFF, 0, 0, 0, 0))
    mapping = PosixMapping(users=OPTIONS["users"], groups=OPTIONS["groups"])
    access = mapping.readers(info, None, 4)
    assert access.unrepresentable is not None
    assert "mode -rw----r-- lets others read what group:staff may not" in access.unrepresentable


def test_posix_order_decides_entries_that_name_the_same_reader() -> None:
    mapping = PosixMapping(
        users={**OPTIONS["users"], "50004": "user:alice"}, groups=OPTIONS["groups"]
    )
    info = os.stat_result((0o100000, 0, 0, 1, ALICE, STAFF, 0, 0, 0, 0))

    # The owner's own entry decides for the owner, not a named entry for the same uid.
    shadowed = PosixAcl(owner=0, group=0, other=0, users={ALICE: 4, BOB: 4}, mask=4)
    assert mapping.readers(info, shadowed, 4).principals == {"user:bob"}
    # A named entry for the owning group: any group entry that allows grants.
    merged = PosixAcl(owner=4, group=0, other=0, groups={STAFF: 4}, mask=4)
    assert mapping.readers(info, merged, 4).principals == {"user:alice", "group:staff"}
    # Two uids mapped to one principal, one allowed and one not: visible to nobody.
    clash = PosixAcl(owner=4, group=0, other=0, users={50004: 0}, mask=4)
    assert "mapped to user:alice" in (mapping.readers(info, clash, 4).unrepresentable or "")


# --------------------------------------------------------------------------- network shares


def fabricated_mountinfo(tmp_path: Path, *mounts: tuple[str, str]) -> Path:
    """A /proc/self/mountinfo with an ext4 root and ``(mount point, type)`` mounted on it."""
    lines = ["27 1 254:0 / / rw,relatime - ext4 /dev/vda rw"]
    for n, (point, fstype) in enumerate(mounts, 90):
        escaped = point.replace("\\", "\\134").replace(" ", "\\040")
        lines.append(f"{n} 27 0:{n} / {escaped} rw,relatime shared:{n} - {fstype} server:/x rw")
    path = tmp_path / "mountinfo"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_mounts_of_finds_the_mount_holding_the_root_and_those_below_it(tmp_path: Path) -> None:
    info = fabricated_mountinfo(
        tmp_path,
        ("/srv", "xfs"),
        ("/srv/my share", "cifs"),
        ("/srv/my share/deep", "fuse.sshfs"),
        ("/srv/my sharex", "nfs4"),
        ("/srv/my share", "ext4"),  # mounted over the cifs mount: the last one counts
    )
    root = Path("/srv/my share")
    assert mounts_of(root, info) == [
        ("/srv/my share", "ext4"),
        ("/srv/my share/deep", "fuse.sshfs"),
    ]
    assert mounts_of(Path("/srv/other"), info) == [("/srv", "xfs")]
    assert mounts_of(Path("/home/x"), info) == [("/", "ext4")]
    info.write_text("27 1 254:0 / / rw,relatime ext4 /dev/vda rw\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 1 is not a mount"):
        mounts_of(root, info)


@pytest.mark.parametrize(
    ("mounted", "named"),
    [
        ([("{root}", "cifs")], "{root} is a cifs mount"),
        ([("{root}", "nfs4")], "{root} is a nfs4 mount"),
        ([("{root}/inner", "fuse.sshfs")], "{root}/inner is a fuse.sshfs mount"),
    ],
)
def test_a_network_or_fuse_mount_is_refused_by_name(
    tmp_path: Path, mounted: list[tuple[str, str]], named: str
) -> None:
    root = Path(os.path.realpath(tmp_path))
    info = fabricated_mountinfo(tmp_path, *[(p.format(root=root), t) for p, t in mounted])
    connector = FilesystemConnector(
        None,  # type: ignore[arg-type]  # refused before settings are used
        tmp_path,
        "docs",
        source="share",
        posix=PosixMapping(),
        mountinfo=info,
    )
    with pytest.raises(SourceError, match="acl = 'posix' refused") as raised:
        connector._check_root()
    assert named.format(root=root) in raised.value.message
    assert "posix_on_network_share = true" in raised.value.message


def test_mounts_that_cannot_be_told_are_refused(tmp_path: Path) -> None:
    connector = FilesystemConnector(
        None,  # type: ignore[arg-type]
        tmp_path,
        "docs",
        source="share",
        posix=PosixMapping(),
        mountinfo=tmp_path / "missing",
    )
    with pytest.raises(SourceError, match=r"cannot be told from .*missing"):
        connector._check_root()


def widened_on_a_cifs_mount(share: Share, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Synced on a local disk, then the share turns out to be a cifs mount whose modes say
    everyone may read: did the index widen the file's readers?"""
    plan = share.write("plan.md", "Reorganisation plan: merge the two teams.")
    os.chmod(plan, 0o640)
    os.chmod(share.root, 0o755)
    share.sync()
    before = share.app.store.get_document("files:plan.md")
    assert before is not None and "everyone" not in before.acl
    os.chmod(plan, 0o644)
    root = os.path.realpath(share.root)
    monkeypatch.setattr(
        filesystem, "MOUNTINFO", fabricated_mountinfo(share.root.parent, (root, "cifs"))
    )
    share.sync()
    after = share.app.store.get_document("files:plan.md")
    return after is None or not after.acl <= before.acl


def test_a_cifs_mount_fails_the_sync_with_its_type_and_widens_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for share in make_share(tmp_path, options={"acl": "posix"}):
        assert not widened_on_a_cifs_mount(share, monkeypatch)
        content, permissions = share.reports[-2:]
        assert not content.ok and not permissions.ok
        assert "is a cifs mount" in (permissions.error or "")
        status = source_status(share.app)[0]
        assert status["state"] == "failing" and "is a cifs mount" in status["last_error"]


def test_reverse_proof_an_operator_trusting_the_share_widens_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``posix_on_network_share = true`` takes the refusal away, and the same check sees it."""
    options = {"acl": "posix", "posix_on_network_share": True}
    for share in make_share(tmp_path, options=options):
        assert widened_on_a_cifs_mount(share, monkeypatch)
        assert all(r.ok for r in share.reports)


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"acl": "posix", "posix_on_network_share": "yes"}, "expected true or false"),
        ({"posix_on_network_share": True}, "only used with acl = 'posix'"),
    ],
)
def test_the_network_share_setting_is_a_posix_boolean(
    tmp_path: Path, options: dict[str, Any], error: str
) -> None:
    for share in make_share(tmp_path, options=options):
        with pytest.raises(ConfigError, match=f"options.posix_on_network_share: {error}"):
            build_connector(share.app.settings, share.app.settings.sources["share"])
