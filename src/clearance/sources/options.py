"""The value types that connector and directory-source options are made of, and the one way
they are validated: each kind declares its options as a frozen dataclass of these types
(``GraphOptions``, ``DriveOptions`` …) and :func:`parse` checks a ``[sources.<name>.options]``
table against it with :mod:`clearance.validation`, every problem named by its key
(``sources.sp.options.site_url: …``), unknown keys refused."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, TypeVar
from urllib.parse import urlsplit

from pydantic import BeforeValidator, ConfigDict, PlainValidator

from clearance.model import parse_principal
from clearance.validation import SETTINGS, Invalid, Wording, non_empty, validate

__all__ = [
    "OPTIONS",
    "UNKNOWN_OPTION",
    "Email",
    "FilePath",
    "Flag",
    "Positive",
    "Principal",
    "PrincipalTable",
    "Text",
    "Url",
    "between",
    "choice",
    "directory_options",
    "parse",
    "url",
]

T = TypeVar("T")

#: The pydantic configuration of every options dataclass: unknown keys are errors.
OPTIONS = ConfigDict(extra="forbid")
#: How a directory source's options name an unknown key.
UNKNOWN_OPTION = Wording(unknown="{key}: unknown option")


def url(value: object) -> str:
    """An http(s) URL without a query, its trailing slashes removed."""
    if not isinstance(value, str) or not value.strip():
        raise Invalid("expected a non-empty string")
    url = value.rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname or parts.query:
        raise Invalid(f"expected an http(s) URL without a query, got {url!r}")
    return url


def _flag(value: object) -> bool:
    if not isinstance(value, bool):
        raise Invalid("expected true or false")
    return value


def _email(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise Invalid("expected a non-empty string")
    if "@" not in value:
        raise Invalid("expected an email address")
    return str(value).lower()


def _principal(value: object) -> str:
    if not isinstance(value, str):
        raise Invalid("expected a principal")
    try:
        return parse_principal(value)
    except ValueError as exc:
        raise Invalid(str(exc)) from None


def _principal_table(value: object) -> dict[str, str]:
    """A table of ``name = "principal"`` (SharePoint groups, Google domains, users)."""
    if not isinstance(value, dict):
        raise Invalid("expected a table of name = principal")
    for entry, principal in value.items():
        try:
            parse_principal(principal)
        except (TypeError, ValueError) as exc:
            raise Invalid(str(exc), at=entry) from None
    return dict(value)


#: A non-empty string.
Text = Annotated[str, non_empty()]
#: An http(s) URL without a query, its trailing slashes removed.
Url = Annotated[str, PlainValidator(url)]
#: ``true`` or ``false``, nothing that merely looks like one.
Flag = Annotated[bool, PlainValidator(_flag)]
#: The path of a file (read when the connector is built).
FilePath = Annotated[str, non_empty("expected the path of a file")]
#: An email address (a user to act as), lower-cased.
Email = Annotated[str, PlainValidator(_email)]
#: A principal (``group:staff``, ``user:ana``, ``everyone``), exactly as written.
Principal = Annotated[str, PlainValidator(_principal)]
#: A table of ``name = "principal"``.
PrincipalTable = Annotated[Mapping[str, str], PlainValidator(_principal_table)]


def parse(
    schema: type[T],
    raw: Mapping[str, Any],
    at: str,
    *,
    before: Callable[[object], object] | None = None,
    unknown: Wording | None = None,
    **context: Any,
) -> T:
    """``raw`` (the options table at key ``at``) validated as ``schema`` (an options
    dataclass), after ``before``, a check on the whole table; ``context`` is what a check
    across options may need (``oauth``: whether the source signs in with OAuth), beside
    ``at`` itself. ``unknown`` words the problems otherwise than as settings."""
    checked = schema if before is None else Annotated[schema, BeforeValidator(before)]
    parsed: T = validate(
        checked, dict(raw), at=at, context={"at": at, **context}, wording=unknown or SETTINGS
    )
    return parsed


def directory_options(schema: type[T], name: str, raw: Mapping[str, Any], **kw: Any) -> T:
    """``[directories.<name>.options]`` validated as ``schema`` (see :func:`parse`), an
    unknown key named as an unknown option."""
    return parse(schema, raw, f"directories.{name}.options", unknown=UNKNOWN_OPTION, **kw)


def between(low: int, high: int | None) -> Any:
    """An integer from ``low`` to ``high`` (no bound: ``None``); never a bool."""

    def check(value: object) -> int:
        if (
            isinstance(value, bool)
            or not isinstance(value, int)
            or value < low
            or (high is not None and value > high)
        ):
            if high is None:
                raise Invalid("expected a positive integer")
            raise Invalid(f"expected {low} to {high}, got {value!r}")
        return value

    return PlainValidator(check)


def choice(*choices: str) -> Any:
    """One of ``choices``, exactly."""

    def check(value: object) -> str:
        if not isinstance(value, str) or value not in choices:
            raise Invalid(f"expected one of {', '.join(choices)}, got {value!r}")
        return value

    return PlainValidator(check)


#: A positive integer (concurrent requests …).
Positive = Annotated[int, between(1, None)]
