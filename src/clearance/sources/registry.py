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

import os
from collections.abc import Mapping

from clearance.config import Settings, SourceSettings
from clearance.errors import ConfigError
from clearance.plugins import Plugins
from clearance.secrets import credential_reader
from clearance.sources.base import Connector, ConnectorFactory, SourceContext

__all__ = ["available_kinds", "build_connector", "register_connector"]

# Built-in kinds and the module that registers each, imported on first use (a connector's
# dependencies are only loaded when a source of its kind is configured).
_KINDS: Plugins[ConnectorFactory] = Plugins(
    {
        "confluence": "clearance.sources.confluence",
        "filesystem": "clearance.sources.filesystem",
        "gdrive": "clearance.sources.gdrive",
        "graph": "clearance.sources.graph",
    }
)


def register_connector(kind: str, factory: ConnectorFactory) -> None:
    """Make ``kind`` available to ``[sources.<name>] kind``; a later registration wins."""
    _KINDS.register(kind, factory)


def available_kinds() -> list[str]:
    return _KINDS.kinds()


def build_connector(
    settings: Settings, source: SourceSettings, env: Mapping[str, str] | None = None
) -> Connector:
    """The connector for ``[sources.<source.name>]``."""
    factory = _KINDS.get(source.kind)
    if factory is None:
        raise ConfigError(
            f"sources.{source.name}.kind: unknown kind {source.kind!r} "
            f"({', '.join(available_kinds())})"
        )
    environ = os.environ if env is None else env
    secret = credential_reader(f"sources.{source.name}", source.kind, source.credentials, environ)
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
