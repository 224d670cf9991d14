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
``"posix"``
    The file's owner, group and mode bits, and the search (``x``) bits of every folder from
    the root down to it. Owner → ``user_principal`` (``"user:{name}"``), group →
    ``group_principal`` (``"group:{name}"``), others → ``other_principal`` (``"everyone"``),
    with ``[…options.users]``/``[…options.groups]`` tables overriding single names. A folder
    that not everyone may enter narrows what lies below it: moving a file into a restricted
    folder takes its wider access away. A mode in which a class may read *less* than a
    broader one (``0604``: the group may not read what everyone else may) cannot be stated
    as an allow-list, so that file is visible to nobody. An ``acl`` in the metadata is then a
    conflict, and the file is visible to nobody, too.

A root that does not exist or cannot be read, or a folder below it that cannot be read,
fails the sync (the source is then reported failing): it is never mistaken for a folder
whose files were all deleted.
"""

from __future__ import annotations

import grp
import hashlib
import json
import os
import pwd
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from clearance.config import Settings
from clearance.errors import ConfigError, SourceError
from clearance.ingest.pipeline import Ingestor, Job
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
)
from clearance.sources.registry import register_connector

if TYPE_CHECKING:
    from clearance.store.backends import AnyStore

__all__ = ["FilesystemConnector", "PosixMapping"]

_OPTIONS = frozenset(
    {"path", "acl", "user_principal", "group_principal", "other_principal", "users", "groups"}
)
_PAGE = 500


@dataclass(frozen=True, slots=True)
class PosixMapping:
    """How owners, groups and "others" of POSIX permissions become principals."""

    user_principal: str = "user:{name}"
    group_principal: str = "group:{name}"
    other_principal: str = EVERYONE  # "" : world-readable grants nobody
    users: Mapping[str, str] | None = None
    groups: Mapping[str, str] | None = None

    def user(self, uid: int) -> str:
        return self._principal(uid, self.users, self.user_principal, _user_name)

    def group(self, gid: int) -> str:
        return self._principal(gid, self.groups, self.group_principal, _group_name)

    @staticmethod
    def _principal(
        ident: int,
        table: Mapping[str, str] | None,
        template: str,
        name_of: Any,
    ) -> str:
        name = name_of(ident)
        for key in (name, str(ident)):
            if table and key in table:
                return table[key]
        return template.format(name=name, id=ident)

    def readers(self, info: os.stat_result, bits: tuple[int, int, int]) -> Access:
        """Who passes ``bits`` (read or search, for owner/group/other) on one file or folder."""
        owner_bit, group_bit, other_bit = (bool(info.st_mode & b) for b in bits)
        if (other_bit and not (group_bit and owner_bit)) or (group_bit and not owner_bit):
            return Access.nobody(
                f"mode {stat.filemode(info.st_mode)} lets a broader class do what a narrower "
                "one may not, which an allow-list cannot state"
            )
        principals: set[str] = set()
        if owner_bit:
            principals.add(self.user(info.st_uid))
        if group_bit:
            principals.add(self.group(info.st_gid))
        if other_bit and self.other_principal:
            principals.add(self.other_principal)
        try:
            return Access(frozenset(principals))
        except ValueError as exc:
            return Access.nobody(f"owner or group maps to no valid principal: {exc}")


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _group_name(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)


_READ = (stat.S_IRUSR, stat.S_IRGRP, stat.S_IROTH)
_SEARCH = (stat.S_IXUSR, stat.S_IXGRP, stat.S_IXOTH)


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
    ) -> None:
        self.settings = settings
        self.root = root
        self.corpus = corpus
        self.source = source
        self.posix = posix
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
        return real

    def _plan(self) -> list[Job]:
        """Every document the folder holds now, as ingest would plan it; skipped entries
        (symbolic links, unsupported types) are not documents and are left out."""
        real = self._check_root()
        # Planning reads settings and files only, never the index.
        planner = Ingestor(self.settings, cast("AnyStore", None), None)
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
        digest = hashlib.sha256(json.dumps(meta, sort_keys=True, default=str).encode())
        return f"{info.st_mtime_ns}:{info.st_size}:{digest.hexdigest()[:16]}"

    def content_changes(self, cursor: str | None) -> Iterator[ContentPage]:
        """A snapshot every time (a folder has no change feed); only changed versions are
        fetched by the engine, so a listing costs a walk and a ``stat`` per file."""
        jobs = self._plan()
        items = [ItemRef(j.doc_id, self._version(j), j.source) for j in jobs if j.doc_id]
        for start in range(0, max(len(items), 1), _PAGE):
            page = items[start : start + _PAGE]
            last = start + _PAGE >= len(items)
            yield ContentPage(page, cursor=None, snapshot=True, last=last)

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
            origin=meta.get("origin"),
            sensitivity=meta.get("sensitivity"),
            owner=meta.get("owner"),
            created_at=meta.get("created_at"),
            modified_at=meta.get("updated_at"),
            file_name=job.label,
            metadata={k: meta[k] for k in meta if k not in ("acl", "title", "uri")},
        )

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
            access = self.posix.readers(path.stat(), _READ) if self.posix else Access()
            real_root = Path(os.path.realpath(self.root))
            folder = path.parent
            while folder.is_relative_to(real_root):
                assert self.posix is not None
                access = _narrow(access, self.posix.readers(folder.stat(), _SEARCH))
                if folder == real_root:
                    break
                folder = folder.parent
        except OSError as exc:
            return Access.nobody(f"permissions cannot be read: {exc.strerror or exc}")
        return access

    def permission_changes(self, cursor: str | None) -> Iterator[PermissionPage]:
        """Every file's access, re-read from metadata or modes (no content is read)."""
        jobs = self._plan()
        changes = [PermissionChange(j.doc_id, self._access(j)) for j in jobs if j.doc_id]
        for start in range(0, max(len(changes), 1), _PAGE):
            page = changes[start : start + _PAGE]
            last = start + _PAGE >= len(changes)
            yield PermissionPage(page, cursor=None, snapshot=True, last=last)

    def groups(self) -> GroupSnapshot | None:
        return None  # POSIX groups map to directory groups synced from the identity provider


def _options(context: SourceContext) -> tuple[Path, PosixMapping | None]:
    source = context.source
    key = f"sources.{source.name}.options"
    options = dict(source.options)
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        raise ConfigError(f"unknown setting '{key}.{unknown[0]}'")
    raw_path = options.get("path")
    if not isinstance(raw_path, str) or not raw_path:
        raise ConfigError(f"{key}.path: required (the folder to sync)")
    path = Path(raw_path).expanduser()
    if not path.is_absolute():
        path = context.settings.root / path
    mode = options.get("acl", "metadata")
    if mode not in ("metadata", "posix"):
        raise ConfigError(f"{key}.acl: expected 'metadata' or 'posix', got {mode!r}")
    posix_keys = sorted(set(options) - {"path", "acl"})
    if mode == "metadata":
        if posix_keys:
            raise ConfigError(f"{key}.{posix_keys[0]}: only used with acl = 'posix'")
        return path, None
    mapping: dict[str, Any] = {}
    for name in ("user_principal", "group_principal", "other_principal"):
        if name in options:
            value = options[name]
            if not isinstance(value, str):
                raise ConfigError(f"{key}.{name}: expected a string")
            _check_template(value, f"{key}.{name}", allow_empty=name == "other_principal")
            mapping[name] = value
    for name in ("users", "groups"):
        table = options.get(name, {})
        if not isinstance(table, dict):
            raise ConfigError(f"{key}.{name}: expected a table of name = principal")
        for ident, principal in table.items():
            try:
                parse_principal(principal)
            except ValueError as exc:
                raise ConfigError(f"{key}.{name}.{ident}: {exc}") from None
        mapping[name] = dict(table)
    return path, PosixMapping(**mapping)


def _check_template(value: str, key: str, *, allow_empty: bool) -> None:
    if allow_empty and value == "":
        return
    try:
        parse_principal(value.format(name="x", id=0))
    except (ValueError, KeyError, IndexError) as exc:
        raise ConfigError(
            f"{key}: {exc} (a principal, with {{name}} or {{id}} for the owner or group)"
        ) from None


def _build(context: SourceContext) -> Connector:
    path, posix = _options(context)
    return FilesystemConnector(
        context.settings, path, context.source.corpus, source=context.source.name, posix=posix
    )


register_connector("filesystem", _build)
