"""The filesystem connector: a local folder or a mounted share, kept in step with the index.

The folder is the source of truth: a file that vanishes is deleted from the index on the
next content sync. Files are found, and their metadata resolved, exactly as ``clearance
ingest FOLDER`` does (:meth:`clearance.ingest.pipeline.Ingestor.plan`: ``_meta.json`` per
folder, ``<file>.meta.json`` sidecars, the same symlink and root rules), and read by the same
loaders. Listing is incremental by modification time and size (and the file's resolved
metadata): only a file whose version changed is read again, and one whose text did not
change keeps its vectors.

Access comes from one of two places (``[sources.<name>.options] acl``):

``"metadata"`` (default)
    The ``acl`` of the ``_meta.json``/sidecar metadata, as a folder ingest reads it. A file
    without one is visible to nobody, and ``source status`` says why.
``"posix"`` (Linux)
    The file's POSIX access ACL, and the search (``x``) permission of every folder from the
    root down to it, each read from the ``system.posix_acl_access`` extended attribute when
    the file or folder has one (:func:`parse_posix_acl`), else from its mode bits — never
    from the mode bits of an item with an extended ACL, whose group bits are the ACL's mask.
    Owner and named users → ``user_principal`` (``"user:{name}"``), owning group and named
    groups → ``group_principal`` (``"group:{name}"``), others → ``other_principal``
    (``"everyone"``), with ``[…options.users]``/``[…options.groups]`` tables overriding
    single names; the mask limits named users, named groups and the owning group, as the
    kernel applies it. A folder that not everyone may enter narrows what lies below it:
    moving a file into a restricted folder takes its wider access away. When a class POSIX
    checks later may read what one it checks earlier may not (mode ``0604``: the group may
    not read what everyone else may; an ACL in which others may read but ``user:bob`` may
    not; a group that may read while a user, who may belong to it, may not), that cannot be
    stated as an allow-list, so the file is visible to nobody. So is a file whose ACL cannot
    be read or parsed. A folder's default ACL (``system.posix_acl_default``) is not read: it
    only seeds the access ACL of files created in it later, and that access ACL is what is
    read. An ``acl`` in the metadata is a conflict, and the file is visible to nobody, too.

    Mounted network and FUSE filesystems (SMB/CIFS, NFS, sshfs, …) make up modes that need
    not show the server's access, so a root on one — or with one mounted below it — fails
    the sync with the filesystem type named (read from ``/proc/self/mountinfo``; where that
    cannot be read, the sync fails too), unless ``posix_on_network_share = true`` says the
    operator trusts those modes.

A file's origin (docs/trust.md) is its metadata's ``origin``; else the one
``[trust.source_origins]`` gives its source system; else :data:`DEFAULT_ORIGIN`, the
organisation's own writing, since the folder is the organisation's. External material in it
is marked in its metadata (``"origin": "external_web"``, ``"email"`` …). The resolved origin is
part of a file's version, so changing ``[trust.source_origins]`` re-reads the files it
applies to on the next content sync (their text unchanged, their vectors are kept).

A root that does not exist or cannot be read, or a folder below it that cannot be read,
fails the sync (the source is then reported failing): it is never mistaken for a folder
whose files were all deleted.
"""

from __future__ import annotations

import errno
import grp
import hashlib
import json
import os
import pwd
import re
import stat
import struct
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

from pydantic import Field, PlainValidator, ValidationInfo

from clearance.config import Settings
from clearance.errors import SourceError
from clearance.ingest.pipeline import FILES_ORIGIN, Ingestor, Job
from clearance.model import EVERYONE, parse_principal
from clearance.sources.base import (
    Access,
    Connector,
    ContentPage,
    GroupSnapshot,
    ItemRef,
    PermissionChange,
    PermissionPage,
    SourceContext,
    SourceDocument,
    snapshot_pages,
)
from clearance.sources.options import OPTIONS, Flag, PrincipalTable
from clearance.sources.options import parse as parse_table
from clearance.sources.registry import register_connector
from clearance.validation import Invalid

if TYPE_CHECKING:
    from clearance.store.base import Store

__all__ = ["FilesystemConnector", "PosixAcl", "PosixMapping", "mounts_of", "parse_posix_acl"]

_PAGE = 500

#: Where the mounts of this process are listed (Linux); the connector reads it on each sync.
MOUNTINFO = Path("/proc/self/mountinfo")

#: Filesystems whose modes are the client's invention or do not show the server's access
#: (besides these, every FUSE type: ``fuse``, ``fuseblk``, ``fuse.sshfs``, …).
NETWORK_FILESYSTEMS = frozenset(
    {
        "9p",
        "afs",
        "ceph",
        "cifs",
        "coda",
        "davfs",
        "drvfs",
        "glusterfs",
        "gpfs",
        "ncpfs",
        "nfs",
        "nfs4",
        "prl_fs",
        "smb3",
        "smbfs",
        "vboxsf",
        "virtiofs",
        "vmhgfs",
    }
)

_ACL_XATTR = "system.posix_acl_access"
_ACL_VERSION = 2
_USER_OBJ, _USER, _GROUP_OBJ, _GROUP, _MASK, _OTHER = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20
_R, _X = 4, 1


@dataclass(frozen=True, slots=True)
class PosixAcl:
    """A POSIX access ACL: each entry's permissions as ``rwx`` bits (``r`` = 4, ``x`` = 1).

    ``owner``, ``group`` and ``other`` are the owner's, the owning group's and everyone
    else's entries; ``users`` and ``groups`` the named entries by uid and gid; ``mask`` the
    mask entry, ``None`` when there is none (plain mode bits)."""

    owner: int
    group: int
    other: int
    users: Mapping[int, int] = field(default_factory=dict)
    groups: Mapping[int, int] = field(default_factory=dict)
    mask: int | None = None

    @classmethod
    def of_mode(cls, mode: int) -> PosixAcl:
        """The ACL that mode bits alone amount to (valid only without an extended ACL)."""
        return cls(owner=(mode >> 6) & 7, group=(mode >> 3) & 7, other=mode & 7)


def parse_posix_acl(data: bytes) -> PosixAcl:
    """The ``system.posix_acl_access`` extended attribute, as Linux stores it.

    Little-endian: a u32 version (2), then 8-byte entries of u16 tag, u16 permissions and
    u32 uid or gid (unused, ``0xffffffff``, for the owner, owning group, mask and other).
    Tags: owner 0x01, named user 0x02, owning group 0x04, named group 0x08, mask 0x10,
    other 0x20. Raises ``ValueError`` naming the first thing wrong: a length that is no
    header and whole entries, another version, an unknown tag, permissions beyond ``rwx``,
    a missing or repeated owner, owning group or other entry, a repeated mask, uid or gid,
    or named entries without a mask."""
    if len(data) < 4 or (len(data) - 4) % 8:
        raise ValueError(f"{len(data)} bytes are not a header and whole entries")
    (version,) = struct.unpack_from("<I", data)
    if version != _ACL_VERSION:
        raise ValueError(f"version {version}, expected {_ACL_VERSION}")
    single: dict[int, int] = {}
    named: dict[int, dict[int, int]] = {_USER: {}, _GROUP: {}}
    names = {_USER_OBJ: "owner", _GROUP_OBJ: "owning group", _MASK: "mask", _OTHER: "other"}
    for tag, perm, ident in struct.iter_unpack("<HHI", data[4:]):
        if perm & ~7:
            raise ValueError(f"permissions {perm:#x} in an entry with tag {tag:#x}")
        if tag in named:
            kind = "user" if tag == _USER else "group"
            if ident in named[tag]:
                raise ValueError(f"named {kind} {ident} appears twice")
            named[tag][ident] = perm
        elif tag in names:
            if tag in single:
                raise ValueError(f"{names[tag]} entry appears twice")
            single[tag] = perm
        else:
            raise ValueError(f"unknown entry tag {tag:#x}")
    for tag in (_USER_OBJ, _GROUP_OBJ, _OTHER):
        if tag not in single:
            raise ValueError(f"no {names[tag]} entry")
    if (named[_USER] or named[_GROUP]) and _MASK not in single:
        raise ValueError("named entries without a mask")
    return PosixAcl(
        owner=single[_USER_OBJ],
        group=single[_GROUP_OBJ],
        other=single[_OTHER],
        users=named[_USER],
        groups=named[_GROUP],
        mask=single.get(_MASK),
    )


def _read_acl(path: Path) -> PosixAcl | None:
    """The extended access ACL of ``path`` (following symbolic links, as ``stat`` does), or
    ``None`` when it has none — no attribute, or a filesystem without ACLs — and its mode
    bits are all there is. Raises ``OSError`` when it cannot be read, ``ValueError`` when
    it cannot be parsed."""
    getxattr = getattr(os, "getxattr", None)
    if getxattr is None:
        raise OSError(errno.ENOSYS, "POSIX ACLs can only be read on Linux")
    try:
        data = getxattr(path, _ACL_XATTR)
    except OSError as exc:
        if exc.errno in (errno.ENODATA, errno.ENOTSUP, errno.EOPNOTSUPP):
            return None
        raise
    return parse_posix_acl(data)


def mounts_of(root: Path, mountinfo: Path) -> list[tuple[str, str]]:
    """``(mount point, filesystem type)`` of the mount holding ``root`` (an absolute, real
    path) and of every mount below it, read from ``mountinfo`` in the format of
    ``/proc/self/mountinfo``: the fifth field is the mount point (with space, tab, newline
    and backslash as octal escapes), the field after the lone ``-`` the type; of mounts on
    the same point the last, which hides the others, counts. Raises ``OSError`` when the
    file cannot be read, ``ValueError`` for a line it cannot parse or when no mount holds
    ``root``."""
    mounts: dict[str, str] = {}
    for number, line in enumerate(mountinfo.read_bytes().splitlines(), 1):
        fields = line.split(b" ")
        try:
            separator = fields.index(b"-", 6)
            point = os.fsdecode(_unescape(fields[4]))
            mounts[point] = os.fsdecode(fields[separator + 1])
        except (ValueError, IndexError):
            raise ValueError(f"{mountinfo}: line {number} is not a mount") from None
    holding = [p for p in mounts if root.is_relative_to(p)]
    if not holding:
        raise ValueError(f"{mountinfo}: no mount holds {root}")
    top = max(holding, key=len)
    below = [p for p in mounts if p != top and Path(p).is_relative_to(root)]
    return [(p, mounts[p]) for p in [top, *sorted(below)]]


def _unescape(field: bytes) -> bytes:
    return re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m.group(1), 8)]), field)


@dataclass(frozen=True, slots=True)
class PosixMapping:
    """How owners, groups and "others" of POSIX permissions become principals."""

    user_principal: str = "user:{name}"
    group_principal: str = "group:{name}"
    other_principal: str = EVERYONE  # "" : world-readable grants nobody
    users: Mapping[str, str] | None = None
    groups: Mapping[str, str] | None = None

    def user(self, uid: int) -> str:
        return self._principal(
            uid, self.users, self.user_principal, lambda: pwd.getpwuid(uid).pw_name
        )

    def group(self, gid: int) -> str:
        return self._principal(
            gid, self.groups, self.group_principal, lambda: grp.getgrgid(gid).gr_name
        )

    @staticmethod
    def _principal(
        ident: int,
        table: Mapping[str, str] | None,
        template: str,
        name_of: Callable[[], str],
    ) -> str:
        """The principal of a uid or gid: what ``table`` maps its name (``name_of()``, or the
        id itself when the system database does not know it) or the id to, else
        ``template``."""
        try:
            name = name_of()
        except KeyError:
            name = str(ident)
        for key in (name, str(ident)):
            if table and key in table:
                return table[key]
        return template.format(name=name, id=ident)

    def readers(self, info: os.stat_result, acl: PosixAcl | None, bit: int) -> Access:
        """Who passes ``bit`` (``r`` = 4 or ``x`` = 1) on one file or folder, by its access
        ACL, or its mode bits when ``acl`` is ``None``.

        POSIX tries the owner, then named users, then the owning and named groups (any that
        matches and allows grants; one that matches and does not denies), then others, and
        stops at the first class that matches. An allow-list can only add: when a user entry
        denies, no group may allow (the user may belong to it), and when a user or group
        entry denies, others may not be allowed (they include everyone); otherwise the item
        is visible to nobody. So it is when one principal, that two ids map to, is allowed
        by one and denied by the other."""
        described = "its ACL"
        if acl is None:
            described, acl = f"mode {stat.filemode(info.st_mode)}", PosixAcl.of_mode(info.st_mode)
        mask = 7 if acl.mask is None else acl.mask
        owner = self.user(info.st_uid)
        users = [(f"{owner} (the owner)", owner, bool(acl.owner & bit))]
        users += [
            (self.user(uid), self.user(uid), bool(perm & mask & bit))
            for uid, perm in sorted(acl.users.items())
            if uid != info.st_uid  # the owner's own entry decides for the owner
        ]
        by_gid = {info.st_gid: bool(acl.group & mask & bit)}
        for gid, perm in acl.groups.items():
            by_gid[gid] = by_gid.get(gid, False) or bool(perm & mask & bit)
        groups = [(self.group(gid), self.group(gid), ok) for gid, ok in sorted(by_gid.items())]
        other = bool(acl.other & bit)

        verb = "read" if bit == _R else "enter"
        denied_user = next((label for label, _, ok in users if not ok), None)
        denied_group = next((label for label, _, ok in groups if not ok), None)
        allowed_group = next((label for label, _, ok in groups if ok), None)
        broader, narrower = None, None
        if other and (denied_user or denied_group):
            broader, narrower = "others", denied_user or denied_group
        elif allowed_group and denied_user:
            broader, narrower = allowed_group, denied_user
        if broader is not None:
            return Access.nobody(
                f"{described} lets {broader} {verb} what {narrower} may not, which an "
                "allow-list cannot state"
            )
        allowed = {p for _, p, ok in users + groups if ok}
        clash = sorted(allowed & {p for _, p, ok in users + groups if not ok})
        if clash:
            return Access.nobody(
                f"{described} lets one id mapped to {clash[0]} {verb} and not another"
            )
        if other and self.other_principal:
            allowed.add(self.other_principal)
        try:
            return Access(frozenset(allowed))
        except ValueError as exc:
            return Access.nobody(f"owner or group maps to no valid principal: {exc}")


def _narrow(reachable: Access, folder: Access) -> Access:
    """Who can read a file = who may read it ∩ who may enter each folder above it. With no
    membership known here, ``everyone`` narrows to the folder's principals and any other
    principal must be named by the folder itself: never wider than POSIX allows."""
    if reachable.unrepresentable is not None:
        return reachable
    if folder.unrepresentable is not None:
        return folder
    if EVERYONE in folder.principals:
        return reachable
    kept = reachable.principals & folder.principals
    if EVERYONE in reachable.principals:
        kept |= folder.principals
    return Access(frozenset(kept))


#: The origin of a file whose metadata names none and whose source system
#: ``[trust.source_origins]`` does not name: written by the organisation's own people, as
#: a file ingested from a local folder is.
DEFAULT_ORIGIN = FILES_ORIGIN


class FilesystemConnector:
    """See the module docstring. Built by the ``filesystem`` kind from its options."""

    def __init__(
        self,
        settings: Settings,
        root: Path,
        corpus: str,
        *,
        source: str,
        posix: PosixMapping | None = None,
        posix_on_network_share: bool = False,
        mountinfo: Path | None = None,
    ) -> None:
        self.settings = settings
        self.root = root
        self.corpus = corpus
        self.source = source
        self.posix = posix
        self.posix_on_network_share = posix_on_network_share
        self.mountinfo = mountinfo  # None: MOUNTINFO
        self._jobs: dict[str, Job] = {}

    def close(self) -> None:
        self._jobs.clear()

    # ------------------------------------------------------------------ listing

    def _check_root(self) -> Path:
        """The real root, after proving that it and every folder below it can be read: a
        folder that cannot be listed must fail the sync, not look empty."""
        try:
            real = Path(os.path.realpath(self.root))
            if not real.exists():
                raise SourceError(f"source {self.source!r}: {self.root} does not exist")
            if not real.is_dir():
                raise SourceError(f"source {self.source!r}: {self.root} is not a folder")
            os.listdir(real)
        except OSError as exc:
            raise SourceError(
                f"source {self.source!r}: cannot read {self.root}: {exc.strerror or exc}"
            ) from None

        def unreadable(exc: OSError) -> None:
            raise SourceError(
                f"source {self.source!r}: cannot read {exc.filename}: {exc.strerror or exc}"
            )

        for _, dirs, _ in os.walk(real, onerror=unreadable):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
        if self.posix is not None and not self.posix_on_network_share:
            self._check_mounts(real)
        return real

    def _check_mounts(self, real: Path) -> None:
        """Refuse POSIX permissions on a network or FUSE mount, or where mounts are unknown."""
        mountinfo = self.mountinfo or MOUNTINFO

        def refused(why: str) -> SourceError:
            return SourceError(
                f"source {self.source!r}: acl = 'posix' refused: {why}; use acl = 'metadata', "
                "or set posix_on_network_share = true if its modes are trusted"
            )

        unknown = f"the filesystem type of {self.root} cannot be told"
        try:
            mounts = mounts_of(real, mountinfo)
        except OSError as exc:
            raise refused(f"{unknown} from {mountinfo}: {exc.strerror or exc}") from None
        except ValueError as exc:
            raise refused(f"{unknown}: {exc}") from None
        for point, fstype in mounts:
            if fstype in NETWORK_FILESYSTEMS or fstype.startswith("fuse"):
                raise refused(
                    f"{point} is a {fstype} mount, whose modes need not show the server's access"
                )

    def _plan(self) -> list[Job]:
        """Every document the folder holds now, as ingest would plan it; skipped entries
        (symbolic links, unsupported types) are not documents and are left out."""
        real = self._check_root()
        # Planning reads settings and files only, never the index.
        planner = Ingestor(self.settings, cast("Store", None), None)
        jobs = planner.plan([real], corpus=self.corpus)
        found: list[Job] = []
        for job in jobs:
            if job.error is not None and job.error.startswith("skipped:"):
                continue
            if job.doc_id is None:
                # Unreadable metadata: the id a folder ingest would give it, so the stored
                # document is kept (and closed) rather than deleted.
                system = self.settings.ingest.default_source_system
                job = Job(job.source, job.path, {}, f"{system}:{job.source}", job.error)
            found.append(job)
        self._jobs = {job.doc_id: job for job in found if job.doc_id is not None}
        return found

    def _version(self, job: Job) -> str:
        """Modification time, size and the resolved metadata except the ACL: a changed
        file or a changed title or label is fetched again; a permission change is not."""
        if job.error is not None or job.path is None:
            return "error:" + hashlib.sha256((job.error or "").encode()).hexdigest()[:16]
        try:
            info = job.path.stat()
        except OSError as exc:
            return f"error:{exc.errno}"
        meta = {k: v for k, v in job.metadata.items() if k != "acl"}
        meta["origin"] = self._origin(job)
        digest = hashlib.sha256(json.dumps(meta, sort_keys=True, default=str).encode())
        return f"{info.st_mtime_ns}:{info.st_size}:{digest.hexdigest()[:16]}"

    def content_changes(self, cursor: str | None) -> Iterator[ContentPage]:
        """A snapshot every time (a folder has no change feed); only changed versions are
        fetched by the engine, so a listing costs a walk and a ``stat`` per file."""
        jobs = self._plan()
        items = [ItemRef(j.doc_id, self._version(j), j.source) for j in jobs if j.doc_id]
        yield from snapshot_pages(ContentPage, items, _PAGE)

    def fetch(self, item: ItemRef) -> SourceDocument:
        job = self._jobs.get(item.doc_id)
        if job is None:
            raise SourceError(f"source {self.source!r}: {item.doc_id} is no longer listed")
        if job.error is not None or job.path is None:
            raise SourceError(f"source {self.source!r}: {job.source}: {job.error}")
        meta = job.metadata
        if meta.get("corpus", self.corpus) != self.corpus:
            raise SourceError(
                f"source {self.source!r}: {job.source}: its metadata names corpus "
                f"{meta['corpus']!r}, but this source feeds {self.corpus!r}"
            )
        return SourceDocument(
            doc_id=item.doc_id,
            version=item.version,
            title=meta.get("title", ""),
            uri=meta.get("uri") or job.source,
            access=self._access(job),
            path=job.path,
            origin=self._origin(job),
            sensitivity=meta.get("sensitivity"),
            owner=meta.get("owner"),
            created_at=meta.get("created_at"),
            modified_at=meta.get("updated_at"),
            file_name=job.label,
            metadata={k: meta[k] for k in meta if k not in ("acl", "title", "uri")},
        )

    def _origin(self, job: Job) -> str:
        """The metadata's origin, else ``[trust.source_origins]`` for the file's source
        system, else :data:`DEFAULT_ORIGIN`."""
        named = job.metadata.get("origin")
        if named:
            return str(named)
        system = (job.doc_id or "").partition(":")[0].strip().lower()
        return self.settings.trust.source_origins.get(system, DEFAULT_ORIGIN)

    # ------------------------------------------------------------------ permissions

    def _access(self, job: Job) -> Access:
        if job.error is not None or job.path is None:
            return Access.nobody(f"metadata cannot be read: {job.error}")
        if self.posix is None:
            acl = job.metadata.get("acl")
            if not acl:
                return Access.nobody("no 'acl' in its _meta.json or sidecar metadata")
            return Access(frozenset(acl))
        if "acl" in job.metadata:
            return Access.nobody(
                "its metadata sets 'acl', but this source takes access from POSIX permissions"
            )
        return self._posix_access(job.path)

    def _posix_access(self, path: Path) -> Access:
        try:
            access = self._readers(path, _R, "")
            real_root = Path(os.path.realpath(self.root))
            folder = path.parent
            while folder.is_relative_to(real_root):
                rel = folder.relative_to(real_root).as_posix()
                where = "the root folder: " if rel == "." else f"folder {rel}: "
                access = _narrow(access, self._readers(folder, _X, where))
                if folder == real_root:
                    break
                folder = folder.parent
        except OSError as exc:
            return Access.nobody(f"permissions cannot be read: {exc.strerror or exc}")
        return access

    def _readers(self, path: Path, bit: int, where: str) -> Access:
        """Who passes ``bit`` on ``path``, from its access ACL or, without one, its mode."""
        assert self.posix is not None
        info = path.stat()
        try:
            acl = _read_acl(path)
        except ValueError as exc:
            return Access.nobody(f"{where}its POSIX ACL cannot be parsed: {exc}")
        access = self.posix.readers(info, acl, bit)
        if where and access.unrepresentable is not None:
            return Access.nobody(where + access.unrepresentable)
        return access

    def permission_changes(self, cursor: str | None) -> Iterator[PermissionPage]:
        """Every file's access, re-read from metadata or ACLs (no content is read)."""
        jobs = self._plan()
        changes = [PermissionChange(j.doc_id, self._access(j)) for j in jobs if j.doc_id]
        yield from snapshot_pages(PermissionPage, changes, _PAGE)

    def groups(self) -> GroupSnapshot | None:
        return None  # POSIX groups map to directory groups synced from the identity provider


def _folder(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise Invalid("required (the folder to sync)")
    return value


def _mode(value: object) -> str:
    if value not in ("metadata", "posix"):
        raise Invalid(f"expected 'metadata' or 'posix', got {value!r}")
    return str(value)


def _template(value: object, info: ValidationInfo) -> str:
    """A principal with ``{name}`` or ``{id}`` for the owner or group (``""`` only for
    ``other_principal``: world-readable grants nobody)."""
    if not isinstance(value, str):
        raise Invalid("expected a string")
    if value == "" and info.field_name == "other_principal":
        return value
    try:
        parse_principal(value.format(name="x", id=0))
    except (ValueError, KeyError, IndexError) as exc:
        raise Invalid(
            f"{exc} (a principal, with {{name}} or {{id}} for the owner or group)"
        ) from None
    return value


def _posix_keys_need_posix(raw: object) -> object:
    if isinstance(raw, dict) and raw.get("acl", "metadata") == "metadata":
        for key in sorted(set(raw) - {"path", "acl"}):
            raise Invalid("only used with acl = 'posix'", at=key)
    return raw


_Template = Annotated[str | None, PlainValidator(_template)]


@dataclass(frozen=True, slots=True)
class FilesystemOptions:
    """``[sources.<name>.options]`` of the ``filesystem`` kind: the folder, and with
    ``acl = "posix"`` how its permissions become principals (:class:`PosixMapping`)."""

    __pydantic_config__ = OPTIONS

    path: Annotated[str, PlainValidator(_folder), Field(validate_default=True)] = ""
    acl: Annotated[str, PlainValidator(_mode)] = "metadata"
    posix_on_network_share: Flag = False
    user_principal: _Template = None
    group_principal: _Template = None
    other_principal: _Template = None
    users: PrincipalTable = field(default_factory=dict)
    groups: PrincipalTable = field(default_factory=dict)


def _options(context: SourceContext) -> tuple[Path, PosixMapping | None, bool]:
    source = context.source
    options = parse_table(
        FilesystemOptions,
        source.options,
        f"sources.{source.name}.options",
        before=_posix_keys_need_posix,
    )
    path = Path(options.path).expanduser()
    if not path.is_absolute():
        path = context.settings.root / path
    if options.acl == "metadata":
        return path, None, False
    templates = ("user_principal", "group_principal", "other_principal")
    mapping = {t: getattr(options, t) for t in templates if getattr(options, t) is not None}
    posix = PosixMapping(**mapping, users=dict(options.users), groups=dict(options.groups))
    return path, posix, options.posix_on_network_share


def _build(context: SourceContext) -> Connector:
    path, posix, trusted = _options(context)
    return FilesystemConnector(
        context.settings,
        path,
        context.source.corpus,
        source=context.source.name,
        posix=posix,
        posix_on_network_share=trusted,
    )


register_connector("filesystem", _build)
