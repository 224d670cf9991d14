"""A credential that cannot leak by accident.

Why: an API key held in a plain ``str`` ends up in a ``repr`` in a traceback, a log line, a
pickled cache entry or a JSON trace sooner or later. :class:`Secret` wraps the value so that
every *accidental* route out prints or fails instead:

* ``repr()``, ``str()`` and ``format()`` print ``Secret('****')`` — never the value, not even its
  length;
* ``pickle``, ``copy.copy``/``deepcopy`` through pickling, and ``json.dumps`` refuse it
  (``TypeError``); ``copy.copy``/``deepcopy`` return the same immutable object;
* it is immutable and has no ``__dict__``.

The only way to the value is an explicit :meth:`Secret.reveal`, which the one place that needs it
(the ``Authorization`` header of an HTTP request) calls at the last moment. This is a guard
against mistakes, not against hostile code in the same process.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NoReturn, final

from clearance.errors import ConfigError

__all__ = ["Secret", "credential_reader", "secret_from_env"]

_MASK = "Secret('****')"


@final
class Secret:
    """An opaque, non-empty credential string. See the module docstring for the guarantees."""

    __slots__ = ("_value",)
    _value: str

    def __init__(self, value: str) -> None:
        if not isinstance(value, str) or not value:
            raise ValueError("a Secret needs a non-empty string")
        object.__setattr__(self, "_value", value)

    def reveal(self) -> str:
        """The secret value itself. Call only where it leaves the process on purpose."""
        return self._value

    def __repr__(self) -> str:
        return _MASK

    __str__ = __repr__

    def __format__(self, format_spec: str) -> str:
        return _MASK

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError("Secret is immutable")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError("Secret is immutable")

    def __reduce_ex__(self, protocol: Any) -> NoReturn:
        raise TypeError("a Secret cannot be pickled or serialised")

    def __reduce__(self) -> NoReturn:
        raise TypeError("a Secret cannot be pickled or serialised")

    def __getstate__(self) -> NoReturn:
        raise TypeError("a Secret cannot be pickled or serialised")

    def __copy__(self) -> Secret:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Secret:
        return self


def secret_from_env(
    name: str, env: Mapping[str, str], *, key: str = "llm.api_key_env"
) -> Secret | None:
    """The value of environment variable ``name`` as a :class:`Secret`.

    ``name == ""`` means "no key configured" → ``None``. A variable that is named but unset or
    empty is a :class:`ConfigError` naming ``key`` and the variable (never a value): the operator
    asked for a key, and silently sending none would fail later and less clearly.
    """
    if not name:
        return None
    value = env.get(name, "")
    if not value.strip():
        raise ConfigError(f"{key}: environment variable {name!r} is not set or empty")
    return Secret(value.strip())


def credential_reader(
    table: str, kind: str, credentials: Mapping[str, str], env: Mapping[str, str]
) -> Callable[[str], Secret]:
    """``secret(role)`` for a plugin configured at ``table`` (``sources.wiki``): the
    environment variable that ``<table>.credentials.<role>`` names, read when asked for, as
    a :class:`Secret`. A role that is not configured, or a variable that is unset, is a
    :class:`ConfigError` naming the key and the variable, never a value."""

    def secret(role: str) -> Secret:
        key = f"{table}.credentials.{role}"
        variable = credentials.get(role)
        if variable is None:
            raise ConfigError(f"{key}: required by kind {kind!r}; name an environment variable")
        found = secret_from_env(variable, env, key=key)
        assert found is not None  # the variable name is not empty (checked when loading)
        return found

    return secret
