"""The contract between a directory source and the directory it keeps.

A *directory source* reads users and groups from an identity provider (Entra ID through
Microsoft Graph, Google Workspace, Okta, LDAP / Active Directory) and hands back a whole
snapshot of what it read, as a :class:`~clearance.access.directory.DirectoryDoc`. The
directory service applies it as one new directory version, so every read is all or nothing.

What a reader must guarantee
----------------------------
* **Whole or failed.** :meth:`DirectoryReader.read` returns a complete snapshot or raises
  (:class:`~clearance.errors.SourceError` for the source's own failures). A page that could not
  be read is never skipped: a snapshot missing a group would drop its members' access, one
  missing a disabled flag would keep a leaver's. Failing leaves the previous version in place,
  and once the directory's SLA passes without a successful read the directory fails closed.
* **Disabled means inactive.** An account the provider reports disabled, suspended,
  deprovisioned or locked out (``accountEnabled=false``, ``suspended``, Okta status other than
  ``ACTIVE``/``PASSWORD_EXPIRED``/``RECOVERY`` as :mod:`.okta` documents,
  ``userAccountControl`` bit 2, AD's computed ``UF_LOCKOUT``) is a
  :class:`~clearance.access.directory.User` with ``active=False``. When the reader cannot
  tell, the user is inactive.
* **Every name recorded.** A user's other names (UPN, mail, object id, sAMAccountName, login)
  are its ``aliases``, so a sign-in by any configured claim resolves to that one user.
* **Nested groups as members.** A group that is a member of another is ``group:<id>`` in its
  member list; the directory computes transitive membership.
* **Counted.** ``api_calls`` is the number of requests made, for the sync report and the
  benchmark that holds directory syncs to their SLA.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from clearance.access.directory import DirectoryDoc

__all__ = ["DirectoryRead", "DirectoryReader", "Progress"]

#: Called as reading goes on: ``progress(what, count)``, e.g. ``("users", 1200)``.
Progress = Callable[[str, int], None]


@dataclass(frozen=True, slots=True)
class DirectoryRead:
    """What one read of a directory source produced.

    ``doc`` is a snapshot (``doc.delta`` is false). ``cursor`` is what the reader wants back
    on its next :meth:`DirectoryReader.read` (a Graph delta link, say), or ``None``.
    ``warnings`` are one line each, for the sync report; a warning never stands for missing
    data (that raises).
    """

    doc: DirectoryDoc
    api_calls: int
    cursor: str | None = None
    warnings: tuple[str, ...] = ()


@runtime_checkable
class DirectoryReader(Protocol):
    """One identity provider's users and groups."""

    def read(self, cursor: str | None, progress: Progress | None = None) -> DirectoryRead:
        """Read the whole directory (or, given the ``cursor`` of a previous read that the
        provider's delta API accepts, the changes since, merged into the previous snapshot
        that the reader keeps) and return it as a snapshot."""
        ...

    def close(self) -> None: ...
