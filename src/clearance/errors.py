"""The one exception hierarchy of Clearance.

::

    ClearanceError                  base; carries an exit code for the CLI
     ├── ConfigError                a bad or missing setting (names the key)
     ├── AuthError                  a credential was refused (HTTP 401); ``reason`` says why
     ├── MetadataError              a bad metadata file or manifest line (names key and file)
     ├── QuestionError              a question or query refused before any work (too long)
     ├── LoaderError                one file could not be read (corrupt, encrypted, empty, unsupported)
     ├── StoreError                 the index could not be opened, read or written
     ├── EmbeddingError             the embedding model is missing, corrupt or failed
     ├── DirectoryError             a bad directory or ACL sync file
     ├── AccessDenied               an ``ensure_…`` check failed; carries the Decision
     ├── PermissionCheckError       a real-time check failed (always treated as a deny)
     ├── ProviderError              an LLM provider failed (network, API, timeout)
     ├── GuardError                 the egress guard refused a prompt (``internal_guard``)
     ├── NotFoundError              no such document, assistant, token … (exit 3)
     ├── SourceError                a source system could not be read during a sync
     ├── OwnershipError             a document owned by a source was to be changed elsewhere
     └── EvaluationError            a bad evaluation suite, dataset or baseline (names file and key)

Third-party exceptions are translated at the boundary (``raise LoaderError(...) from exc``)
so callers only ever need to catch :class:`ClearanceError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class ClearanceError(Exception):
    """Base of every error Clearance raises on purpose. ``problems`` holds every problem
    found, one line each (``message`` is the first): operator input is checked whole, so a
    file with three bad keys reports three lines, not one at a time."""

    exit_code = 1
    code = "error"

    def __init__(self, message: str, *, problems: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.problems: tuple[str, ...] = tuple(problems) or (message,)

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape of an error: ``{"error": code, "message": text}``, and
        ``"problems"`` when there is more than one."""
        out: dict[str, Any] = {"error": self.code, "message": self.message}
        if len(self.problems) > 1:
            out["problems"] = list(self.problems)
        return out


class ConfigError(ClearanceError):
    """Bad settings or operator input."""

    exit_code = 2
    code = "config_error"


class AuthError(ClearanceError):
    """A credential was refused. ``reason`` is a short stable code (``expired``,
    ``wrong_audience`` …) fit for logs and metrics; the message never quotes the credential.
    Every refusal reaches HTTP as the same 401, so a caller cannot tell one from another."""

    exit_code = 2
    code = "unauthenticated"
    status = 401

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class MetadataError(ClearanceError):
    exit_code = 2
    code = "metadata_error"


class QuestionError(ClearanceError):
    """The caller's input is refused before the request path starts; the message says why
    and never quotes the question."""

    exit_code = 2
    code = "bad_question"


class LoaderError(ClearanceError):
    code = "loader_error"


class EmptyDocumentError(LoaderError):
    """A file that holds no text to index (a page of front matter only, a scan without
    OCR): nothing to serve, so ingest skips it rather than failing its corpus."""


class StoreError(ClearanceError):
    code = "store_error"


class EmbeddingError(ClearanceError):
    code = "embedding_error"


class DirectoryError(ClearanceError):
    exit_code = 2
    code = "directory_error"


class AccessDenied(ClearanceError):
    code = "access_denied"

    def __init__(self, message: str, decision: Any = None) -> None:
        super().__init__(message)
        self.decision = decision


class PermissionCheckError(ClearanceError):
    code = "permission_check_error"


class ProviderError(ClearanceError):
    code = "provider_error"


class GuardError(ClearanceError):
    code = "internal_guard"


class NotFoundError(ClearanceError):
    exit_code = 3
    code = "not_found"


class SourceError(ClearanceError):
    """A source system could not be read (unreachable, refused credentials, retries
    exhausted, a response that does not parse). The sync that met it changes nothing it had
    not finished, and the source is reported failing until a sync succeeds."""

    code = "source_error"

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        #: The HTTP status the source answered with, when that is why (a connector tells
        #: an expired cursor, 410, from other refusals by it); ``None`` otherwise.
        self.status = status


class ItemUnavailable(SourceError):
    """One item the source refuses to deliver for good (a Google Doc over Drive's export size
    limit). The sync reports it per document, removes any text indexed from an earlier
    version (never serves it stale) and moves on; it is tried again when its version
    changes. Any other :class:`SourceError` keeps the cursor before the item instead, so
    that the next sync tries it again."""

    code = "item_unavailable"


class OwnershipError(ClearanceError):
    """A document that came from a source was about to be changed by something else (a
    folder ingest, ``acl sync``, ``remove``, another source). The message names the owner."""

    exit_code = 2
    code = "owned_by_source"


class EvaluationError(ClearanceError):
    """``clearance eval`` was given a suite, dataset or baseline it cannot use."""

    exit_code = 2
    code = "evaluation_error"
