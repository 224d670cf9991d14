"""What the REST connectors share: reading vendor JSON, listing, mapping permissions,
renewing tokens.

Each cloud connector reads loosely typed JSON (a field may be missing, ``null`` or of the
wrong type), pages through listings whose next links it must keep inside the configured
API, maps each item's permission list to the principals it grants (failing closed on what
it cannot state), reads every item's access concurrently for a permission snapshot, and
authenticates with an OAuth token that must be renewed before it expires and once more
when the service refuses it early. Those pieces live here once (:class:`RestReader`, which
the directory readers share too, :class:`RestConnector`, :class:`RenewingToken` and the
functions beside them), so a fix reaches every connector.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import PurePosixPath
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx

from clearance.errors import SourceError
from clearance.model import parse_principal
from clearance.secrets import Secret
from clearance.sources.base import Access, PermissionChange, PermissionPage, snapshot_pages
from clearance.sources.http import SourceClient
from clearance.sources.sync import MEDIA_SUFFIXES

__all__ = [
    "PermissionReader",
    "RenewingToken",
    "RestConnector",
    "RestReader",
    "Unrepresentable",
    "access_from",
    "combine",
    "content",
    "facet",
    "ident",
    "inside",
    "media_type",
    "objects",
    "page_token",
    "principal",
    "text",
    "timestamp",
    "unless_gone",
    "version",
]

T = TypeVar("T")

_TOKEN_MARGIN_S = 120.0  # renew a token this long before it expires
_SUFFIX_MEDIA = {suffix: media for media, suffix in MEDIA_SUFFIXES.items()}


class Unrepresentable(Exception):
    """A permission that cannot be stated as principals: the item is visible to nobody."""


# ---------------------------------------------------------------------- vendor JSON


def text(value: Any) -> str | None:
    """``value`` when it is a non-empty string, else ``None``."""
    return value if isinstance(value, str) and value else None


def ident(value: Any) -> str | None:
    """An id given as a non-empty string or a number, as a string; else ``None``."""
    return str(value) if isinstance(value, (str, int)) and value != "" else None


def facet(raw: Any, name: str) -> Mapping[str, Any]:
    """The object ``raw`` holds at ``name`` (a Graph facet, a Confluence ``_links`` …), or
    an empty one."""
    value = raw.get(name) if isinstance(raw, dict) else None
    return value if isinstance(value, dict) else {}


def objects(body: Any, key: str, *, optional: bool = False) -> list[dict[str, Any]] | None:
    """The list of objects a JSON ``body`` holds at ``key`` (``optional``: none is an empty
    one), or ``None`` when it holds no such list."""
    values = body.get(key, [] if optional else None) if isinstance(body, dict) else None
    if not isinstance(values, list) or not all(isinstance(v, dict) for v in values):
        return None
    return values


def inside(link: str, base: str) -> bool:
    """Whether ``link`` points below ``base`` (same scheme and host, a path below base's,
    no ``..``): only such links are followed with a source's credentials."""
    parts, within = urlsplit(link), urlsplit(base)
    return (
        (parts.scheme, parts.netloc) == (within.scheme, within.netloc)
        and parts.path.startswith(within.path + "/")
        and "/../" not in parts.path + "/"
    )


def timestamp(value: Any) -> datetime | None:
    """An RFC 3339 timestamp (``Z`` or an offset; naive ones are UTC), or ``None``."""
    found = text(value)
    if found is None:
        return None
    try:
        moment = datetime.fromisoformat(found.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def media_type(declared: str | None, name: str) -> str:
    """The media type to load a file as: the declared one when Clearance reads it, else the
    one its name's suffix implies, else the declared one (which the engine then skips)."""
    found = (declared or "").partition(";")[0].strip().lower()
    if found in MEDIA_SUFFIXES:
        return found
    return _SUFFIX_MEDIA.get(PurePosixPath(name).suffix.lower(), found or "unknown")


def version(system: str, parts: Iterable[object]) -> str:
    """An item's version from the ``parts`` every content-side change moves (a hash, a
    modification time, a size, a name), as ``<system>:<digest>``."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()
    return f"{system}:{digest[:24]}"


def page_token(
    url: str, params: Mapping[str, Any]
) -> Callable[[Any], tuple[str, Mapping[str, Any]] | None]:
    """The ``next_request`` of :meth:`SourceClient.pages` for Google's APIs: ``url`` again
    with the body's ``nextPageToken`` as ``pageToken`` (any token given is followed: a
    listing is never cut short on a token of an unexpected type)."""

    def following(body: Any) -> tuple[str, Mapping[str, Any]] | None:
        token = body.get("nextPageToken") if isinstance(body, dict) else None
        return (url, {**params, "pageToken": token}) if token else None

    return following


def content(media_type: str, download: Callable[[], bytes]) -> bytes:
    """A file's bytes, downloaded only when the engine reads ``media_type``: anything else
    it skips unread."""
    return download() if media_type in MEDIA_SUFFIXES else b""


def principal(value: str) -> str:
    """``value`` as a principal, or :class:`Unrepresentable` when it is not one."""
    try:
        return parse_principal(value)
    except ValueError as exc:
        raise Unrepresentable(str(exc)) from None


#: One permission of the source → the principals it grants (``None``: anyone with the link),
#: raising :class:`Unrepresentable` for what cannot be stated safely.
PermissionReader = Callable[[Mapping[str, Any]], "set[str] | None"]


def combine(permissions: Sequence[Mapping[str, Any]], read: PermissionReader) -> Access:
    """The access an item's permissions grant together; :class:`Unrepresentable` when any
    one of them cannot be stated (the item must then be visible to nobody, not to the
    others alone)."""
    principals: set[str] = set()
    anyone = False
    for permission in permissions:
        granted = read(permission)
        if granted is None:
            anyone = True
        else:
            principals |= granted
    return Access(frozenset(principals), anyone_with_link=anyone)


def access_from(
    listing: Callable[[], Sequence[Mapping[str, Any]]], read: PermissionReader
) -> Access | None:
    """An item's access from its permission list (``listing()``): ``None`` when the item
    is gone (404), visible to nobody when the source refuses to show the list (403) or a
    permission cannot be stated. Any other failure is raised: a sync that cannot read a
    permission list must fail rather than guess."""
    try:
        permissions = listing()
    except SourceError as exc:
        if exc.status == 404:
            return None
        if exc.status == 403:
            return Access.nobody("its permissions cannot be read (HTTP 403)")
        raise
    try:
        return combine(permissions, read)
    except Unrepresentable as exc:
        return Access.nobody(str(exc))


def unless_gone(read: Callable[[], T], gone: T) -> T:
    """``read()``, or ``gone`` when the source answers 404: what was to be read was deleted
    meanwhile (a page, a group), which is not a failure of the sync."""
    try:
        return read()
    except SourceError as exc:
        if exc.status != 404:
            raise
        return gone


# ---------------------------------------------------------------------- connectors


class RestReader:
    """What every reader of a REST API shares as an object: errors that name the source,
    next links followed only below the configured API, the list of objects a JSON page
    holds, every page of a listing joined, and the clients it owns closed with it."""

    source: str
    client: SourceClient
    #: The clients besides ``client`` the reader owns (token endpoints, SharePoint's API).
    _owned: tuple[SourceClient, ...] = ()

    def close(self) -> None:
        for client in (self.client, *self._owned):
            client.close()

    def _requests(self) -> int:
        """The requests sent so far by every client the reader owns."""
        return sum(client.requests for client in (self.client, *self._owned))

    def _next(self, body: Any) -> tuple[str, Mapping[str, Any] | None] | None:
        """The page after ``body`` (see :meth:`SourceClient.pages`)."""
        raise NotImplementedError

    def _error(self, message: str) -> SourceError:
        return SourceError(f"source {self.source!r}: {message}")

    def _next_link(
        self, body: Any, key: str, ours: Callable[[str], bool], setting: str
    ) -> tuple[str, Mapping[str, Any] | None] | None:
        """The next link at ``key``, followed only where ``ours`` (below ``setting``)."""
        link = body.get(key) if isinstance(body, dict) else None
        if link is None:
            return None
        if not isinstance(link, str) or not ours(link):
            raise self._error(f"a next link points outside {setting}; it is not followed")
        return link, None

    def _send(self, method: str, url: str, body: Mapping[str, Any], **kwargs: Any) -> Any:
        """``method`` with a JSON ``body`` (and ``kwargs``, such as ``params``); the answer's
        JSON, or ``None`` when it has none."""
        response = self.client.request(method, url, json=body, **kwargs)
        try:
            return response.json()
        except ValueError:
            return None

    def _listed(
        self, body: Any, key: str, what: str, *, optional: bool = False
    ) -> list[dict[str, Any]]:
        """The list of objects ``body`` holds at ``key`` (``optional``: none is an empty
        one); anything else is an error naming ``what``."""
        values = objects(body, key, optional=optional)
        if values is None:
            raise self._error(f"{what}: the response has no '{key}' list")
        return values

    def _every(
        self,
        url: str,
        key: str,
        what: str,
        params: Mapping[str, Any] | None = None,
        *,
        client: SourceClient | None = None,
        following: Callable[[Any], tuple[str, Mapping[str, Any] | None] | None] | None = None,
    ) -> list[dict[str, Any]]:
        """The ``key`` lists of every page of ``url`` (after :meth:`_next`, or ``following``),
        joined."""
        pages = (client or self.client).pages(url, following or self._next, params=params)
        return [value for body in pages for value in self._listed(body, key, what)]


class RestConnector(RestReader):
    """What the cloud connectors share besides :class:`RestReader`: each item's access read
    concurrently, and the permission snapshot that ``groups()`` reads and the permission
    listing of the same sync reuses (``_snapshot``)."""

    _snapshot: list[PermissionChange] | None = None

    def doc_id(self, native_id: str) -> str:
        raise NotImplementedError

    def _read_permissions(self) -> list[PermissionChange]:
        """Every item's access, read afresh."""
        raise NotImplementedError

    def _accesses(
        self, ids: Sequence[str], read: Callable[[str], Access | None]
    ) -> list[PermissionChange]:
        """The access of each of ``ids`` by ``read``, on up to ``max_concurrency`` requests at
        once; an item ``read`` finds gone (``None``) is left out."""
        accesses = self.client.map(read, ids)
        return [
            PermissionChange(self.doc_id(item_id), access)
            for item_id, access in zip(ids, accesses, strict=True)
            if access is not None
        ]

    def permission_changes(self, cursor: str | None) -> Iterator[PermissionPage]:
        """Every item's access, re-read (a snapshot): the one ``groups()`` read just before
        in the same sync, else read now."""
        changes = self._snapshot if self._snapshot is not None else self._read_permissions()
        self._snapshot = None
        yield from snapshot_pages(PermissionPage, changes)


# ---------------------------------------------------------------------- tokens


class RenewingToken(httpx.Auth):
    """An OAuth access token, fetched when first needed, renewed shortly before it expires,
    and once more when the service answers 401 (a token revoked early).

    Subclasses say what to post to the token endpoint (:meth:`grant`). The endpoint is
    called through its own :class:`SourceClient`, so it gets the same retries and never
    appears in an error; the token is held as a :class:`Secret`."""

    def __init__(
        self, tokens: SourceClient, token_url: str, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._tokens = tokens
        self._token_url = token_url
        self._clock = clock
        self._lock = threading.Lock()
        self._token: Secret | None = None
        self._expires = 0.0

    def __repr__(self) -> str:
        return f"{type(self).__name__}(Secret('****'))"

    def grant(self) -> dict[str, str]:
        """The form posted to the token endpoint."""
        raise NotImplementedError

    def token(self, *, stale: Secret | None = None) -> Secret:
        """The current token; a new one when it is about to expire, or is ``stale``."""
        with self._lock:
            if self._token is None or self._token is stale or self._clock() >= self._expires:
                self._token, lifetime = self._request()
                self._expires = self._clock() + max(0.0, lifetime - _TOKEN_MARGIN_S)
            return self._token

    def _request(self) -> tuple[Secret, float]:
        response = self._tokens.request("POST", self._token_url, data=self.grant())
        token, lifetime, _ = self._answer(response, "the token endpoint", "an access token")
        return token, lifetime

    def _answer(
        self, response: httpx.Response, sender: str, lacking: str, *also: str
    ) -> tuple[Secret, float, list[Secret]]:
        """The access token in ``response`` and its lifetime in seconds, then the tokens
        named ``also`` (a refresh token); an error saying ``sender`` answered without
        ``lacking`` when one is missing."""
        try:
            body = response.json()
            token = Secret(body["access_token"])
            lifetime = float(body.get("expires_in", 3600))
            more = [Secret(body[name]) for name in also]
        except (ValueError, KeyError, TypeError):
            raise SourceError(
                f"source {self._tokens.source!r}: {sender} answered without {lacking}"
            ) from None
        return token, lifetime, more

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        token = self.token()
        request.headers["Authorization"] = f"Bearer {token.reveal()}"
        response = yield request
        if response.status_code == 401:
            renewed = self.token(stale=token)
            request.headers["Authorization"] = f"Bearer {renewed.reveal()}"
            yield request
