"""Directory source kinds → factories, and the one place a directory reader is built.

``[directories.<name>] kind = "…"`` names a kind. A kind registers with
:func:`register_directory_reader`; built-in kinds are imported the first time a source of
their kind is built, so an unknown kind is a :class:`~clearance.errors.ConfigError` naming the
key and every registered kind. Adding a kind is one line in ``_BUILTIN`` (or one call to
:func:`register_directory_reader` from the kind's own module).

A factory is ``build(name, options, context) -> DirectoryReader``. It validates ``options``
itself and names the bad key (``directories.<name>.options.<key>``) in its errors. Credentials
are read only through ``context.secret(role)``, as a :class:`~clearance.secrets.Secret`, from
the environment variable that ``[directories.<name>.credentials]`` names for the role.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from clearance.config import DirectorySourceSettings, Settings
from clearance.errors import ConfigError
from clearance.plugins import Plugins
from clearance.secrets import Secret, credential_reader
from clearance.sources.directory.base import DirectoryReader

__all__ = [
    "DirectoryContext",
    "DirectoryReaderFactory",
    "available_directory_kinds",
    "build_directory_reader",
    "register_directory_reader",
]


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class DirectoryContext:
    """What a directory reader factory gets besides its options: the settings, its own
    table, ``secret(role)``, and the directory sync's ``clock`` (what "now" is when a
    reader judges a moment, such as an account's expiry)."""

    settings: Settings
    source: DirectorySourceSettings
    secret: Callable[[str], Secret]
    clock: Callable[[], datetime] = _utc_now


DirectoryReaderFactory = Callable[[str, Mapping[str, Any], DirectoryContext], DirectoryReader]

# Built-in kinds and the module that registers each when imported.
_KINDS: Plugins[DirectoryReaderFactory] = Plugins(
    {
        "entra": "clearance.sources.directory.entra",
        "google": "clearance.sources.directory.google",
        "okta": "clearance.sources.directory.okta",
        "ldap": "clearance.sources.directory.ldap",
    }
)


def register_directory_reader(kind: str, factory: DirectoryReaderFactory) -> None:
    """Make ``kind`` available to ``[directories.<name>] kind``; a later registration wins."""
    _KINDS.register(kind, factory)


def available_directory_kinds() -> list[str]:
    return _KINDS.kinds()


def build_directory_reader(
    settings: Settings,
    source: DirectorySourceSettings,
    env: Mapping[str, str] | None = None,
    *,
    clock: Callable[[], datetime] = _utc_now,
) -> DirectoryReader:
    """The reader for ``[directories.<source.name>]``, judging moments by ``clock``."""
    factory = _KINDS.get(source.kind)
    if factory is None:
        raise ConfigError(
            f"directories.{source.name}.kind: unknown kind {source.kind!r} "
            f"({', '.join(available_directory_kinds()) or 'none available'})"
        )
    table = f"directories.{source.name}"
    environ = os.environ if env is None else env
    secret = credential_reader(table, source.kind, source.credentials, environ)
    context = DirectoryContext(settings=settings, source=source, secret=secret, clock=clock)
    reader = factory(source.name, source.options, context)
    if not isinstance(reader, DirectoryReader):
        raise ConfigError(f"directories.{source.name}.kind: {source.kind!r} built no reader")
    return reader
