"""Connector kinds → factories, and the one place a connector is built from settings.

``[sources.<name>] kind = "…"`` names a kind. Built-in connectors register the same way any
other does, with :func:`register_connector`; the kinds are looked up when a source is built,
so an unknown kind is a :class:`~clearance.errors.ConfigError` naming the key and every kind
that is registered.

Credentials: ``[sources.<name>.credentials]`` maps roles to environment variable *names*.
The context handed to a factory reads a variable only when the factory asks for its role,
through the ``env`` mapping (``os.environ`` by default), and only ever as a
:class:`~clearance.secrets.Secret`.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Mapping

from clearance.config import Settings, SourceSettings
from clearance.errors import ConfigError
from clearance.secrets import Secret, secret_from_env
from clearance.sources.base import Connector, ConnectorFactory, SourceContext

__all__ = ["available_kinds", "build_connector", "register_connector"]

_FACTORIES: dict[str, ConnectorFactory] = {}
_LOCK = threading.Lock()
# Built-in kinds and the module that registers each, imported on first use (a connector's
# dependencies are only loaded when a source of its kind is configured).
_BUILTIN = {
    "confluence": "clearance.sources.confluence",
    "filesystem": "clearance.sources.filesystem",
    "gdrive": "clearance.sources.gdrive",
    "graph": "clearance.sources.graph",
}


def register_connector(kind: str, factory: ConnectorFactory) -> None:
    """Make ``kind`` available to ``[sources.<name>] kind``; a later registration wins."""
    with _LOCK:
        _FACTORIES[kind] = factory


def available_kinds() -> list[str]:
    return sorted(set(_FACTORIES) | set(_BUILTIN))


def _factory(kind: str) -> ConnectorFactory | None:
    with _LOCK:
        found = _FACTORIES.get(kind)
    if found is None and kind in _BUILTIN:
        importlib.import_module(_BUILTIN[kind])
        with _LOCK:
            found = _FACTORIES.get(kind)
    return found


def build_connector(
    settings: Settings, source: SourceSettings, env: Mapping[str, str] | None = None
) -> Connector:
    """The connector for ``[sources.<source.name>]``."""
    factory = _factory(source.kind)
    if factory is None:
        raise ConfigError(
            f"sources.{source.name}.kind: unknown kind {source.kind!r} "
            f"({', '.join(available_kinds())})"
        )
    environ = os.environ if env is None else env

    def secret(role: str) -> Secret:
        key = f"sources.{source.name}.credentials.{role}"
        variable = source.credentials.get(role)
        if variable is None:
            raise ConfigError(
                f"{key}: required by kind {source.kind!r}; name an environment variable"
            )
        found = secret_from_env(variable, environ, key=key)
        assert found is not None  # the variable name is not empty (checked when loading)
        return found

    context = SourceContext(
        settings=settings,
        source=source,
        corpus=settings.corpus(source.corpus),
        secret=secret,
    )
    connector = factory(context)
    if not isinstance(connector, Connector):
        raise ConfigError(f"sources.{source.name}.kind: {source.kind!r} built no Connector")
    return connector
