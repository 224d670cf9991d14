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

import importlib
import importlib.util
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from clearance.config import DirectorySourceSettings, Settings
from clearance.errors import ConfigError
from clearance.secrets import Secret, secret_from_env
from clearance.sources.directory.base import DirectoryReader

__all__ = [
    "DirectoryContext",
    "DirectoryReaderFactory",
    "available_directory_kinds",
    "build_directory_reader",
    "register_directory_reader",
]


@dataclass(frozen=True, slots=True)
class DirectoryContext:
    """What a directory reader factory gets besides its options: the settings, its own
    table, and ``secret(role)``."""

    settings: Settings
    source: DirectorySourceSettings
    secret: Callable[[str], Secret]

    def key(self, option: str) -> str:
        """``directories.<name>.options.<option>``, for an error naming the bad key."""
        return f"directories.{self.source.name}.options.{option}"


DirectoryReaderFactory = Callable[[str, Mapping[str, Any], DirectoryContext], DirectoryReader]

_FACTORIES: dict[str, DirectoryReaderFactory] = {}
_LOCK = threading.Lock()
# Built-in kinds and the module that registers each when imported.
_BUILTIN: dict[str, str] = {
    "entra": "clearance.sources.directory.entra",
    "google": "clearance.sources.directory.google",
    "okta": "clearance.sources.directory.okta",
    "ldap": "clearance.sources.directory.ldap",
}


def register_directory_reader(kind: str, factory: DirectoryReaderFactory) -> None:
    """Make ``kind`` available to ``[directories.<name>] kind``; a later registration wins."""
    with _LOCK:
        _FACTORIES[kind] = factory


def _importable(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def available_directory_kinds() -> list[str]:
    with _LOCK:
        registered = set(_FACTORIES)
    return sorted(registered | {k for k, m in _BUILTIN.items() if _importable(m)})


def _factory(kind: str) -> DirectoryReaderFactory | None:
    with _LOCK:
        found = _FACTORIES.get(kind)
    if found is None and kind in _BUILTIN and _importable(_BUILTIN[kind]):
        importlib.import_module(_BUILTIN[kind])
        with _LOCK:
            found = _FACTORIES.get(kind)
    return found


def build_directory_reader(
    settings: Settings, source: DirectorySourceSettings, env: Mapping[str, str] | None = None
) -> DirectoryReader:
    """The reader for ``[directories.<source.name>]``."""
    factory = _factory(source.kind)
    if factory is None:
        raise ConfigError(
            f"directories.{source.name}.kind: unknown kind {source.kind!r} "
            f"({', '.join(available_directory_kinds()) or 'none available'})"
        )
    environ = os.environ if env is None else env

    def secret(role: str) -> Secret:
        key = f"directories.{source.name}.credentials.{role}"
        variable = source.credentials.get(role)
        if variable is None:
            raise ConfigError(
                f"{key}: required by kind {source.kind!r}; name an environment variable"
            )
        found = secret_from_env(variable, environ, key=key)
        assert found is not None  # the variable name is not empty (checked when loading)
        return found

    context = DirectoryContext(settings=settings, source=source, secret=secret)
    reader = factory(source.name, source.options, context)
    if not isinstance(reader, DirectoryReader):
        raise ConfigError(f"directories.{source.name}.kind: {source.kind!r} built no reader")
    return reader
