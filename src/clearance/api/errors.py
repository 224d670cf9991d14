"""HTTP errors: every error the API returns is ``{"error": code, "message": text}``.

The codes and texts here are fixed, so a body never depends on what the caller may not
see: an absent document and an unreadable one get the same bytes (:data:`DOCUMENT_NOT_FOUND`).
Engine errors (:class:`~clearance.errors.ClearanceError`) carry their code; this module
adds the HTTP status each maps to.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from clearance.errors import (
    AuthError,
    ClearanceError,
    ConfigError,
    DirectoryError,
    MetadataError,
    NotFoundError,
    OwnershipError,
    ProviderError,
    QuestionError,
    StoreError,
)

__all__ = [
    "DOCUMENT_NOT_FOUND",
    "SIGN_IN_REQUIRED",
    "ErrorBody",
    "Forbidden",
    "HttpError",
    "InvalidRequest",
    "PayloadTooLarge",
    "Unauthenticated",
    "error_body",
    "status_of",
]


class ErrorBody(BaseModel):
    """The one error shape of every non-2xx response. ``problems`` is there only when an
    input (a manifest line, an ACL record) has more than one: every problem, one line each,
    ``message`` being the first."""

    error: str
    message: str
    problems: list[str] | None = None


class HttpError(ClearanceError):
    """An error raised by the HTTP layer itself; ``status`` is its HTTP status."""

    status = 500
    code = "internal_error"


class Unauthenticated(HttpError):
    status = 401
    code = "unauthenticated"


class Forbidden(HttpError):
    status = 403
    code = "forbidden"


class PayloadTooLarge(HttpError):
    status = 413
    code = "payload_too_large"


class InvalidRequest(HttpError):
    status = 422
    code = "invalid_request"


#: The 401 of every door that takes a bearer credential, whatever was wrong with it.
SIGN_IN_REQUIRED = "sign-in required: a valid bearer token (Authorization: Bearer …)"

#: The one answer for a document that does not exist *or* that the caller may not read.
DOCUMENT_NOT_FOUND = NotFoundError("no such document")

_STATUS: tuple[tuple[type[ClearanceError], int], ...] = (
    (HttpError, 0),  # its own status
    (AuthError, 401),
    (NotFoundError, 404),
    (QuestionError, 422),
    (ConfigError, 422),
    (MetadataError, 422),  # an operator's input (manifest, metadata) is invalid
    (DirectoryError, 422),  # a directory or ACL document is invalid
    (OwnershipError, 409),  # the document belongs to a source: change it there
    (ProviderError, 503),
    (StoreError, 503),
)


def status_of(exc: ClearanceError) -> int:
    for kind, status in _STATUS:
        if isinstance(exc, kind):
            return exc.status if isinstance(exc, HttpError) else status
    return 500


def error_body(code: str, message: str) -> dict[str, Any]:
    return {"error": code, "message": message}
