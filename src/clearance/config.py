"""``clearance.toml`` → frozen, typed settings with safe defaults.

Where the configuration is found is a public contract:

1. ``--config FILE`` if given;
2. else ``$CLEARANCE_HOME/clearance.toml``;
3. else ``./clearance.toml``.

The settings are frozen dataclasses whose annotations are the file's schema: pydantic
validates the TOML tables into them (:mod:`clearance.validation`), a field's TOML key is its
``validation_alias`` where the two differ (``revocation_sla`` → ``revocation_sla_s``), and
checks across keys are validators on the field that comes last. Scalars are strict (``true``
is not a number, ``"800"`` not an integer) and unknown keys are errors: a typo must never
silently fall back to a default. Every problem of a file is reported at once, each naming
its key (``corpora.hr.revocation_sla``) and, from a file, its line.

Relative paths inside the file are resolved against the file's directory. The environment
is read here and nowhere else.
"""

from __future__ import annotations

import dataclasses
import functools
import ipaddress
import json
import math
import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    StrictBool,
    StrictFloat,
    StrictInt,
    ValidationInfo,
)

from clearance.analysis import search_terms
from clearance.errors import ConfigError, NotFoundError
from clearance.model import Sensitivity
from clearance.oidc_settings import OidcSettings
from clearance.secrets import Secret
from clearance.trust import DEFAULT_ORIGIN_TRUST, Trust
from clearance.validation import Invalid, got, validate

__all__ = [
    "AccessSettings",
    "AssistantSettings",
    "CorpusSettings",
    "DirectorySourceSettings",
    "EmbeddingSettings",
    "IngestSettings",
    "LLMSettings",
    "Rate",
    "RelevanceSettings",
    "RetrievalSettings",
    "SensitivitySettings",
    "ServerSettings",
    "Settings",
    "SourceSettings",
    "StoreSettings",
    "TraceSettings",
    "TrustSettings",
    "find_config",
    "load_settings",
    "parse_duration",
    "require_assistant",
    "serve_worker_config",
    "unknown_assistant_message",
]

CONFIG_NAME = "clearance.toml"
HOME_ENV = "CLEARANCE_HOME"
#: Set by ``clearance serve --workers N`` for its worker processes (which start fresh and
#: import the app by name): ``{"config": path, "workers": N}`` as JSON. Never set by hand.
SERVE_WORKERS_ENV = "CLEARANCE_SERVE_WORKERS"

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)?\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_RATE = re.compile(r"^\s*(\d+)\s*/\s*(s|m|h)\s*$")


def _seconds(value: object) -> float:
    """``"15m"`` → 900.0; a bare number is seconds."""
    if isinstance(value, bool):
        raise Invalid(f"expected a duration such as '15m', got {value!r}")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str) and (m := _DURATION.match(value)):
        seconds = float(m.group(1)) * _UNIT_SECONDS[m.group(2) or "s"]
    else:
        raise Invalid(f"expected a duration such as '15m', '24h' or '30s', got {value!r}")
    if not math.isfinite(seconds):
        raise Invalid(f"a duration must be a finite number, got {value!r}")
    if seconds < 0:
        raise Invalid("a duration cannot be negative")
    return seconds


def _rate(value: object) -> Rate | None:
    if value is None or isinstance(value, Rate):
        return value
    if value == "off":
        return None
    m = _RATE.match(value) if isinstance(value, str) else None
    if m is None or int(m.group(1)) <= 0:
        raise Invalid(f"expected a rate such as '60/m' (or 'off'), got {value!r}")
    return Rate(int(m.group(1)), float(_UNIT_SECONDS[m.group(2)]))


def parse_duration(value: object, key: str = "duration") -> float:
    """``"15m"`` → 900.0 seconds. A bare number is seconds."""
    try:
        return _seconds(value)
    except Invalid as exc:
        raise ConfigError(f"{key}: {exc.message}") from None


# --------------------------------------------------------------------------- value types
# Each type refuses with the words an operator reads after the key (clearance.validation).

#: How every settings table is read: unknown keys are errors.
_TABLE = ConfigDict(extra="forbid")


def _check(ok: Callable[[Any], object], message: str) -> AfterValidator:
    """Refuse a value for which ``ok`` is false; ``message`` may use ``{value}``."""

    def check(value: Any) -> Any:
        if not ok(value):
            raise Invalid(message.format(value=value))
        return value

    return AfterValidator(check)


def _toml(key: str) -> Any:
    """The field's key in the file, where it differs from the field's name."""
    return Field(validation_alias=key)


def _always() -> Any:
    """Checked even when the key is absent: a check that depends on another key."""
    return Field(validate_default=True)


def _strings(value: object) -> tuple[str, ...]:
    if not isinstance(value, list | tuple):
        raise Invalid(f"expected list, {got(value)}")
    if not all(isinstance(v, str) for v in value):
        raise Invalid("expected a list of strings")
    return tuple(value)


def _names(value: object) -> tuple[str, ...]:
    """A list of non-empty names, stripped, without repeats."""
    names = _strings(value)
    if any(not v.strip() for v in names):
        raise Invalid("names must not be empty")
    return tuple(dict.fromkeys(v.strip() for v in names))


def _sensitivity(value: object) -> Sensitivity:
    if not isinstance(value, str | Sensitivity):
        raise Invalid(f"expected str, {got(value)}")
    try:
        return Sensitivity.parse(value)
    except ValueError as exc:
        raise Invalid(str(exc)) from None


def _path(value: object) -> Path:
    if not isinstance(value, str | Path):
        raise Invalid(f"expected str, {got(value)}")
    return Path(value)


def _roots(value: object, info: ValidationInfo) -> tuple[Path, ...]:
    root: Path = (info.context or {}).get("root", Path.cwd())
    return tuple((root / name).resolve() for name in _names(value))


def _networks(value: object) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    """Addresses (``10.0.0.5``) and networks (``10.0.0.0/8``) as networks."""
    networks = []
    for item in _strings(value):
        try:
            networks.append(ipaddress.ip_network(item.strip(), strict=True))
        except ValueError as exc:
            raise Invalid(str(exc)) from None
    return tuple(networks)


def _origins(value: object) -> tuple[str, ...]:
    """Browser origins (``https://app.example.com``): scheme, host and optional port only."""
    origins = []
    for item in _strings(value):
        parts = urlsplit(item)
        if (
            parts.scheme not in ("http", "https")
            or not parts.hostname
            or parts.path not in ("", "/")
            or parts.query
            or parts.fragment
            or parts.username
        ):
            raise Invalid(f"{item!r} is not an origin like 'https://app.example.com'")
        origins.append(f"{parts.scheme}://{parts.netloc}")
    return tuple(dict.fromkeys(origins))


def _public_url(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise Invalid(f"expected str, {got(value)}")
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query:
        raise Invalid(f"{value!r} is not a URL like 'https://clearance.example.com'")
    return value.rstrip("/")


def _notification_url(value: object) -> str | None:
    """Where the source must send notifications: HTTPS (a source system will not deliver
    to plain HTTP), or HTTP on a loopback host for a local proxy. That it ends in this
    source's own notification path is checked with the source's name (:func:`_sources_fit`)."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise Invalid(f"expected str, {got(value)}")
    parts = urlsplit(value)
    loopback = parts.hostname in ("localhost", "127.0.0.1", "::1")
    if parts.scheme != "https" and not (parts.scheme == "http" and loopback):
        raise Invalid(f"expected an https:// URL (http only on localhost), got {value!r}")
    return value


def _jwks_here(oidc: OidcSettings | None, info: ValidationInfo) -> OidcSettings | None:
    """``[server.oidc]``; a relative JWKS file path is relative to the config file."""
    if oidc is None:
        return oidc
    root: Path | None = (info.context or {}).get("root")
    if root is None or oidc.jwks_is_url or Path(oidc.jwks).is_absolute():
        return oidc
    return dataclasses.replace(oidc, jwks=str(root / oidc.jwks))


def _alias_map(value: object) -> dict[str, tuple[str, ...]]:
    """``name = ["alias", …]`` pairs; the canonical name is always one of its aliases."""
    if not isinstance(value, dict):
        raise Invalid("expected a table")
    out: dict[str, tuple[str, ...]] = {}
    for name, aliases in value.items():
        try:
            listed = _strings(aliases)
        except Invalid as exc:
            raise Invalid(exc.message, at=name) from None
        if not name.strip():
            raise Invalid("empty name", at=name)
        out[name] = tuple(dict.fromkeys([name, *(a for a in listed if a.strip())]))
    return out


def _synonyms(value: object) -> tuple[tuple[str, ...], ...]:
    """``phrase = ["equivalent", …]``: each phrase must hold a word that can be searched."""
    if isinstance(value, tuple):
        return value
    groups = _alias_map(value)
    for name, group in groups.items():
        if len(group) < 2:
            raise Invalid("name at least one equivalent phrase", at=name)
        for phrase in group:
            if not search_terms(phrase):
                raise Invalid(
                    f"{phrase!r} holds no word to search for "
                    "(only stopwords, punctuation or spaces)",
                    at=name,
                )
    return tuple(groups.values())


_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_HEADER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*")
_DSN_PASSWORD = re.compile(r"(?:^|\s)password\s*=", re.IGNORECASE)


def _dsn(value: str, info: ValidationInfo) -> str:
    """A libpq connection string or URI; it must name a user and hold no password, and is
    required with ``backend = "postgres"``."""
    value = value.strip()
    name = info.field_name
    if not value:
        if info.data.get("backend") == "postgres":
            raise Invalid('required with backend = "postgres"')
        return value
    if value.startswith(("postgresql://", "postgres://")):
        parts = urlsplit(value)
        has_password, user = parts.password is not None, parts.username
        if "password=" in parts.query.lower():
            has_password = True
        if user is None and "user=" in parts.query.lower():
            user = "?"
    else:
        has_password = bool(_DSN_PASSWORD.search(value))
        user = "?" if re.search(r"(?:^|\s)user\s*=", value) else None
    if has_password:
        raise Invalid(
            "holds a password; put it in the environment variable that "
            f"store.{'writer_' if name == 'writer_dsn' else ''}password_env names instead"
        )
    if user is None:
        raise Invalid("name the role to connect as (postgresql://ROLE@HOST/DB)")
    return value


Duration = Annotated[float, BeforeValidator(_seconds)]
PositiveDuration = Annotated[Duration, _check(lambda v: v > 0, "must be longer than 0")]
PositiveInt = Annotated[
    StrictInt, _check(lambda v: v > 0, "must be a positive integer, got {value}")
]
PositiveFloat = Annotated[
    StrictFloat,
    _check(lambda v: math.isfinite(v) and v > 0, "must be a positive number, got {value}"),
]
Share = Annotated[
    StrictFloat, _check(lambda v: 0 <= v <= 1, "must be between 0 and 1, got {value}")
]
NonNegative = Annotated[
    StrictFloat,
    _check(lambda v: 0 <= v < math.inf, "must be a finite number of at least 0, got {value}"),
]
Strings = Annotated[tuple[str, ...], PlainValidator(_strings)]
Names = Annotated[tuple[str, ...], PlainValidator(_names)]
Level = Annotated[Sensitivity, PlainValidator(_sensitivity)]
AliasMap = Annotated[Mapping[str, tuple[str, ...]], PlainValidator(_alias_map)]
EnvName = Annotated[str, _check(_ENV_NAME.match, "expected the name of an environment variable")]
CredentialEnv = Annotated[
    str,
    _check(
        _ENV_NAME.match,
        "expected the name of an environment variable "
        "(credentials are never written in the configuration)",
    ),
]


# --------------------------------------------------------------------------- settings

_StorePositive = Annotated[
    StrictInt, _check(lambda v: v > 0, "expected a positive integer, got {value!r}")
]


@dataclass(frozen=True, slots=True)
class StoreSettings:
    """``[store]``: the SQLite keys and the PostgreSQL keys are read whichever backend is
    chosen (so switching is one line), the DSNs required only for ``postgres``."""

    __pydantic_config__ = _TABLE

    backend: Annotated[
        str,
        _check(
            lambda v: v in ("sqlite", "postgres"),
            "unsupported backend {value!r} (supported: sqlite, postgres)",
        ),
    ] = "sqlite"
    path: Annotated[Path, PlainValidator(_path)] = Path("data/clearance.db")
    # How long a writer waits for another writer's lock before failing. Readers never wait
    # for writers (WAL), so this only bounds writer-vs-writer contention.
    busy_timeout_s: Annotated[Duration, _toml("busy_timeout")] = 60.0
    # PostgreSQL (docs/postgres.md): the reading role's connection (searches, under row-level
    # security) and the owning role's (schema, writes), each with its password in the
    # environment variable named here, never in the file.
    dsn: Annotated[str, AfterValidator(_dsn), _always()] = ""
    writer_dsn: Annotated[str, AfterValidator(_dsn), _always()] = ""
    password_env: EnvName = "CLEARANCE_PG_PASSWORD"
    writer_password_env: EnvName = "CLEARANCE_PG_WRITER_PASSWORD"
    pool_size: _StorePositive = 4
    # "exact" ranks the allowed chunks exactly (the true top-k; hidden chunks change
    # nothing). PostgreSQL's "hnsw" lets searches over more than vector_exact_below allowed
    # chunks scan the HNSW index (iterative scans: hnsw_ef_search candidates, at most
    # hnsw_max_scan_tuples rows), trading that guarantee for speed. "classes" (both
    # backends) gives each permission class of vector_exact_below chunks or more its own
    # HNSW graph, searched with hnsw_ef_search candidates when the caller may read the
    # whole class. The embedded store's "signs" searches a caller who may read
    # vector_exact_below chunks or more by the signs of their vectors, the
    # vector_scan_rescore nearest scored exactly (docs/search.md). Each backend ranks
    # exactly under a value only the other has, so one file can prepare a migration.
    vector_search: Annotated[
        str,
        _check(
            lambda v: v in ("exact", "hnsw", "classes", "signs"),
            "expected 'exact', 'hnsw', 'classes' or 'signs', got {value!r}",
        ),
    ] = "exact"
    vector_exact_below: _StorePositive = 20_000
    # With "classes", a class too large for one graph: in the embedded store one of this
    # many chunks or more is scanned instead, by the signs of its vectors, whose
    # vector_scan_rescore nearest rows are scored exactly (0: its float vectors, scanned
    # exactly); in PostgreSQL one of more chunks than this is split into graphs of about
    # this many each (at most 64 of them).
    vector_scan_above: _StorePositive = 100_000
    vector_scan_rescore: Annotated[
        StrictInt, _check(lambda v: v >= 0, "expected an integer of at least 0, got {value!r}")
    ] = 8000
    # How wide a graph walk is (candidates kept). Unset: each backend's own default, 100
    # for the embedded store's graphs, 160 for PostgreSQL's, whose class graphs of
    # vector_scan_above chunks needed that for recall@10 0.99 (docs/postgres.md).
    hnsw_ef_search: _StorePositive | None = None
    hnsw_max_scan_tuples: _StorePositive = 50_000
    # The embedded store keeps its in-memory search copy in "<path>.saved/" between
    # processes, so opening a large index maps it back instead of rebuilding it
    # (docs/scaling.md). Content only: permissions are always read from the file.
    saved_copy: StrictBool = True


@dataclass(frozen=True, slots=True)
class SensitivitySettings:
    __pydantic_config__ = _TABLE

    default_level: Level = Sensitivity.INTERNAL
    restricted_filename_patterns: Strings = ()
    restricted_keywords: Strings = ()
    escalate_unknown_to_restricted: StrictBool = False


@dataclass(frozen=True, slots=True)
class RealtimeCheckSettings:
    """How to ask a source system, per document, whether a user may read it right now."""

    __pydantic_config__ = _TABLE

    url: str = ""
    timeout_s: Annotated[Duration, _toml("timeout")] = 1.0
    cache_ttl_s: Annotated[Duration, _toml("cache_ttl")] = 30.0


def _realtime_usable(value: RealtimeCheckSettings, info: ValidationInfo) -> RealtimeCheckSettings:
    """With ``realtime_check = true`` the check needs a URL, and its answers may not be kept
    longer than the corpus's revocation SLA."""
    if info.data.get("realtime_check"):
        if not value.url:
            raise Invalid("required when realtime_check = true", at="url")
        sla = info.data.get("revocation_sla_s")
        if sla is not None and value.cache_ttl_s > sla:
            raise Invalid(
                f"{value.cache_ttl_s:g}s exceeds the corpus revocation_sla of {sla:g}s",
                at="cache_ttl",
            )
    return value


@dataclass(frozen=True, slots=True)
class CorpusSettings:
    __pydantic_config__ = _TABLE

    name: str
    description: str = ""
    revocation_sla_s: Annotated[Duration, _toml("revocation_sla")] = 24 * 3600.0
    realtime_check: StrictBool = False
    realtime: Annotated[RealtimeCheckSettings, AfterValidator(_realtime_usable), _always()] = field(
        default_factory=RealtimeCheckSettings
    )
    max_sensitivity: Level = Sensitivity.CONFIDENTIAL
    authority: StrictInt = 0


@dataclass(frozen=True, slots=True)
class SourceSettings:
    """One ``[sources.<name>]`` table: a connector that keeps one corpus in step with a
    source system (docs/sources.md).

    ``credentials`` maps a role the connector asks for (``token``, ``client_secret``) to the
    *name* of an environment variable; values are read only when the connector is built, and
    only as :class:`~clearance.secrets.Secret`. ``options`` belong to the connector's kind,
    which validates them. Permissions are synced more often than the corpus's revocation
    SLA (by default a quarter of it, at most 5 minutes), or the corpus would go stale
    between two healthy syncs."""

    __pydantic_config__ = _TABLE

    name: str
    kind: Annotated[str, _check(bool, "required (e.g. 'filesystem')"), _always()] = ""
    corpus: str = ""
    content_interval_s: Annotated[PositiveDuration, _toml("content_interval")] = 3600.0
    permission_interval_s: Annotated[PositiveDuration, _toml("permission_interval")] = 300.0
    max_concurrency: PositiveInt = 4
    credentials: Mapping[str, CredentialEnv] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)
    # the public address of POST /v1/sources/<name>/notifications, for a connector that
    # subscribes to the source's change notifications itself (docs/notifications.md)
    notification_url: Annotated[str | None, PlainValidator(_notification_url)] = None


@dataclass(frozen=True, slots=True)
class DirectorySourceSettings:
    """One ``[directories.<name>]`` table: an identity provider whose users and groups are
    the directory (docs/directory-sources.md).

    ``interval_s`` is how often it is read; ``sla_s`` how long the directory it provided may
    serve without a successful read before every user it provides fails closed.
    ``credentials`` and ``options`` work as for ``[sources.<name>]``: roles name environment
    variables, and the kind validates its options."""

    __pydantic_config__ = _TABLE

    name: str
    kind: Annotated[str, _check(bool, "required (entra, google, okta or ldap)"), _always()] = ""
    interval_s: Annotated[PositiveDuration, _toml("interval")] = 300.0
    sla_s: Annotated[PositiveDuration, _toml("sla")] = 3600.0
    credentials: Mapping[str, CredentialEnv] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AssistantSettings:
    __pydantic_config__ = _TABLE

    name: str
    corpora: Strings = ()
    max_sensitivity: Level = Sensitivity.CONFIDENTIAL
    description: str = ""
    # [scope.entities] this assistant may answer narrative questions about (the
    # organisation's own battlecards on a competitor); figure questions stay refused
    allow_entities: Strings = ()


def _assistant_configured(value: bool, info: ValidationInfo) -> bool:
    if value and not _written(info, "assistants"):
        raise Invalid("no [assistants.NAME] is configured")
    return value


@dataclass(frozen=True, slots=True)
class AccessSettings:
    """Deployment-wide access rules beyond per-document ACLs."""

    __pydantic_config__ = _TABLE

    # true: every search, ask and explain must name an assistant; without one it is refused
    # as an unknown assistant (no request may read across every corpus at once)
    require_assistant: Annotated[StrictBool, AfterValidator(_assistant_configured)] = False


#: The values of ``[embedding] device``.
EMBEDDING_DEVICES = ("cpu", "gpu", "auto")


@dataclass(frozen=True, slots=True)
class EmbeddingSettings:
    __pydantic_config__ = _TABLE

    provider: Annotated[
        str,
        _check(lambda v: v in ("minilm", "none"), "unknown provider {value!r} (minilm, none)"),
    ] = "minilm"
    batch_size: PositiveInt = 32
    max_tokens: PositiveInt = 256
    persist_restricted: StrictBool = False
    # Where the model runs: "cpu"; "gpu", which fails to load without a GPU that
    # onnxruntime-gpu can use; or "auto", a GPU where there is one (clearance.llm.embedding).
    device: Annotated[
        str,
        _check(lambda v: v in EMBEDDING_DEVICES, 'must be "cpu", "gpu" or "auto", got {value!r}'),
    ] = "cpu"


def _overlap(value: int, info: ValidationInfo) -> int:
    if not 0 <= value < info.data.get("chunk_size", math.inf):
        raise Invalid("must be >= 0 and smaller than chunk_size")
    return value


@dataclass(frozen=True, slots=True)
class IngestSettings:
    """How files become documents, and the limits that keep hostile or careless input from
    widening access or exhausting the machine (docs/metadata.md, "Limits")."""

    __pydantic_config__ = _TABLE

    chunk_size: PositiveInt = 800  # characters
    chunk_overlap: Annotated[StrictInt, AfterValidator(_overlap), _always()] = 120  # characters
    default_corpus: str = "default"
    default_source_system: str = "files"
    # Folders files may be read from. Empty: the folders named on the command line, and a
    # manifest's own folder. Absolute after loading (relative to the config file).
    roots: Annotated[tuple[Path, ...], PlainValidator(_roots)] = ()
    follow_symlinks: StrictBool = False  # even then, only links that stay inside a root
    allow_unconfigured_corpora: StrictBool = False
    max_file_mb: PositiveFloat = 100.0  # size on disk of one file
    max_uncompressed_mb: PositiveFloat = 256.0  # an OOXML (zip) file's members, added up
    max_rows: PositiveInt = 100_000  # rows of one CSV or XLSX file
    file_time_budget_s: Annotated[
        Duration, _toml("file_time_budget"), _check(lambda v: v > 0, "must be longer than 0s")
    ] = 300.0  # extraction time of one file


@dataclass(frozen=True, slots=True)
class RetrievalSettings:
    __pydantic_config__ = _TABLE

    k: PositiveInt = 5
    rrf_k: PositiveInt = 60
    candidates: PositiveInt = 50  # per retriever, before fusion
    # RRF weight of the vector list for queries mostly in CJK script (see docs/search.md)
    cjk_vector_weight: Share = 0.0
    # Groups of equivalent phrases, the configured one first (clearance.retrieval.synonyms)
    synonyms: Annotated[tuple[tuple[str, ...], ...], PlainValidator(_synonyms)] = ()


@dataclass(frozen=True, slots=True)
class LLMSettings:
    __pydantic_config__ = _TABLE

    provider: str = "extractive"
    base_url: str = ""
    model: str = ""
    api_key_env: str = ""
    timeout_s: Duration = 30.0
    max_retries: StrictInt = 2


@dataclass(frozen=True, slots=True)
class RerankSettings:
    """The listwise judge. ``provider = ""`` means: the same provider as ``[llm]``;
    ``"none"`` turns reranking off (fused order is kept)."""

    __pydantic_config__ = _TABLE

    provider: str = ""
    candidates: PositiveInt = 10


@dataclass(frozen=True, slots=True)
class ScopeSettings:
    """External / competitor entities the assistant must never answer about.

    ``entities`` maps a canonical name to its aliases (any language); the name itself is
    always an alias too."""

    __pydantic_config__ = _TABLE

    entities: AliasMap = field(default_factory=dict)


def _regex(pattern: str) -> str:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise Invalid(f"bad regular expression: {exc}") from None
    return pattern


@dataclass(frozen=True, slots=True)
class PeriodForm:
    """A regular expression recognising a period and the canonical form it maps to.

    ``canonical`` may use ``{1}``, ``{2}`` … for the pattern's groups, e.g.
    ``pattern = "FY\\s*(\\d{4})"``, ``canonical = "FY{1}"``."""

    __pydantic_config__ = _TABLE

    pattern: Annotated[str, _check(bool, "must not be empty"), AfterValidator(_regex)]
    canonical: Annotated[str, _check(bool, "must not be empty")]


# Built-in period forms (canonical: ``FY2024``, ``CY2024``, ``H1 2024``, ``Q3 2025``) in
# English, Japanese and Chinese. Half years and quarters are of the fiscal year; a two-digit
# year ``24`` is 2024. ``CY`` forms are calendar years; they become ``FY`` forms when the
# fiscal year is the calendar year (:func:`builtin_period_forms`), so ``2024年`` then means
# FY2024 but never does when the fiscal year starts in April. ``[[facts.periods]]`` adds to
# these or, with ``replace_builtin_periods = true``, replaces them.
_Y4 = r"(\d{4})"
_Y2 = r"'?(\d{2})"
_FYP = r"(?:FY\s*)?"  # an optional "FY" before a year ("H1 FY2024")
_ZH_YEAR = r"(?:年度?|[财財](?:政)?年度?)"  # 年 / 年度 / 财年 / 財年 / 财政年度
_QUARTER_WORDS = (("first|1st", 1), ("second|2nd", 2), ("third|3rd", 3), ("fourth|4th", 4))
_CJK_NUMERALS = (("一", 1), ("二", 2), ("三", 3), ("四", 4))

_BUILTIN_PERIOD_FORMS: tuple[PeriodForm, ...] = (
    # fiscal years
    PeriodForm(r"\bFY\s*'?(\d{4})\b", "FY{1}"),
    PeriodForm(r"\bFY\s*'?(\d{2})\b", "FY20{1}"),
    PeriodForm(r"(\d{4})\s*(?:会計|會計|会计)?年度", "FY{1}"),  # 2024年度, 2024会計年度
    PeriodForm(r"(\d{4})\s*[财財](?:政)?年(?:度)?", "FY{1}"),
    PeriodForm(r"\bfiscal\s+(?:year\s+)?(\d{4})\b", "FY{1}"),
    # calendar years
    PeriodForm(r"\bCY\s*'?(\d{4})\b", "CY{1}"),
    PeriodForm(r"\bCY\s*'?(\d{2})\b", "CY20{1}"),
    PeriodForm(r"\bcalendar\s+(?:year\s+)?(\d{4})\b", "CY{1}"),
    PeriodForm(r"(\d{4})\s*年(?!\s*(?:度|\d|[一二三四五六七八九十]+\s*月))", "CY{1}"),
    # half years
    PeriodForm(rf"\b{_Y4}\s*H([12])\b", "H{2} {1}"),
    PeriodForm(rf"\bH([12])\s*{_FYP}'?{_Y4}\b", "H{1} {2}"),
    PeriodForm(rf"\bH([12])\s*{_FYP}{_Y2}\b", "H{1} 20{2}"),
    PeriodForm(rf"\b([12])H\s*{_FYP}'?{_Y4}\b", "H{1} {2}"),
    PeriodForm(rf"\b([12])H\s*{_FYP}{_Y2}\b", "H{1} 20{2}"),
    PeriodForm(rf"\bFY\s*'?{_Y4}\s*H([12])\b", "H{2} {1}"),
    PeriodForm(rf"\bFY\s*{_Y2}\s*H([12])\b", "H{2} 20{1}"),
    PeriodForm(rf"\bfirst[\s-]+half\s+(?:of\s+)?(?:FY\s*|fiscal\s+(?:year\s+)?)?{_Y4}\b", "H1 {1}"),
    PeriodForm(
        rf"\bsecond[\s-]+half\s+(?:of\s+)?(?:FY\s*|fiscal\s+(?:year\s+)?)?{_Y4}\b", "H2 {1}"
    ),
    PeriodForm(rf"(?:\bFY\s*|\bfiscal\s+(?:year\s+)?|\b){_Y4}\s+first[\s-]+half\b", "H1 {1}"),
    PeriodForm(rf"(?:\bFY\s*|\bfiscal\s+(?:year\s+)?|\b){_Y4}\s+second[\s-]+half\b", "H2 {1}"),
    PeriodForm(rf"{_Y4}\s*年度?\s*上\s*半?\s*期", "H1 {1}"),
    PeriodForm(rf"{_Y4}\s*年度?\s*下\s*半?\s*期", "H2 {1}"),
    PeriodForm(rf"{_Y4}\s*{_ZH_YEAR}\s*上半年度?", "H1 {1}"),
    PeriodForm(rf"{_Y4}\s*{_ZH_YEAR}\s*下半年度?", "H2 {1}"),
    PeriodForm(rf"{_Y4}\s*{_ZH_YEAR}\s*H([12])\b", "H{2} {1}"),
    # quarters
    PeriodForm(r"\bQ([1-4])\s*(?:FY)?\s*(\d{4})\b", "Q{1} {2}"),
    PeriodForm(rf"\bQ([1-4])\s*{_FYP}{_Y2}\b", "Q{1} 20{2}"),
    PeriodForm(r"\b(\d{4})\s*Q([1-4])\b", "Q{2} {1}"),
    PeriodForm(rf"\b([1-4])Q\s*{_FYP}'?{_Y4}\b", "Q{1} {2}"),
    PeriodForm(rf"\b([1-4])Q\s*{_FYP}{_Y2}\b", "Q{1} 20{2}"),
    PeriodForm(rf"\bFY\s*'?{_Y4}\s*Q([1-4])\b", "Q{2} {1}"),
    PeriodForm(rf"\bFY\s*{_Y2}\s*Q([1-4])\b", "Q{2} 20{1}"),
    PeriodForm(r"(\d{4})\s*年度?\s*第\s*([1-4])\s*四半期", "Q{2} {1}"),
    PeriodForm(rf"{_Y4}\s*{_ZH_YEAR}\s*第?\s*([1-4])\s*季度?", "Q{2} {1}"),
    PeriodForm(rf"{_Y4}\s*{_ZH_YEAR}\s*Q([1-4])\b", "Q{2} {1}"),
    *(
        PeriodForm(
            rf"\b(?:{words})[\s-]+quarter\s+(?:of\s+)?(?:FY\s*|fiscal\s+(?:year\s+)?)?{_Y4}\b",
            f"Q{n} {{1}}",
        )
        for words, n in _QUARTER_WORDS
    ),
    # "fiscal 2024 third quarter", "2024 fourth-quarter results", as press releases write them
    *(
        PeriodForm(
            rf"(?:\bFY\s*|\bfiscal\s+(?:year\s+)?|\b){_Y4}\s+(?:{words})[\s-]+quarter\b",
            f"Q{n} {{1}}",
        )
        for words, n in _QUARTER_WORDS
    ),
    *(
        PeriodForm(rf"{_Y4}\s*年度?\s*第\s*{kanji}\s*四半期", f"Q{n} {{1}}")
        for kanji, n in _CJK_NUMERALS
    ),
    *(
        PeriodForm(rf"{_Y4}\s*{_ZH_YEAR}\s*第?\s*{kanji}\s*季度?", f"Q{n} {{1}}")
        for kanji, n in _CJK_NUMERALS
    ),
)


_FISCAL_START = re.compile(r"^(\d{2})-(\d{2})$")


def fiscal_year_start_month(value: str, key: str = "facts.fiscal_year_start") -> int:
    """The month a fiscal year starts in, from ``"MM-01"``; anything else is a ConfigError
    (fiscal years start on the first of a month, so halves and quarters are whole months)."""
    m = _FISCAL_START.match(value)
    if m is None or not 1 <= int(m.group(1)) <= 12 or m.group(2) != "01":
        raise ConfigError(f'{key}: expected "MM-01" (e.g. "04-01"), got {value!r}')
    return int(m.group(1))


def builtin_period_forms(fiscal_year_start: str = "01-01") -> tuple[PeriodForm, ...]:
    """The built-in period forms for a fiscal calendar: with a fiscal year that starts on
    1 January, a calendar year *is* the fiscal year, so the ``CY`` forms map to ``FY``."""
    if fiscal_year_start_month(fiscal_year_start) != 1:
        return _BUILTIN_PERIOD_FORMS
    return tuple(
        PeriodForm(f.pattern, "FY" + f.canonical[2:]) if f.canonical.startswith("CY") else f
        for f in _BUILTIN_PERIOD_FORMS
    )


DEFAULT_PERIOD_FORMS: tuple[PeriodForm, ...] = builtin_period_forms()

#: ``[facts] default_period`` value meaning "the latest period with a readable fact".
LATEST_PERIOD = "latest"


def _fiscal_start(value: str) -> str:
    try:
        fiscal_year_start_month(value)
    except ConfigError as exc:
        raise Invalid(exc.message, keyed=True) from None
    return value


def _stripped(value: str) -> str:
    # Not str.strip itself: pydantic inspects every validator's signature, and a built-in's
    # is parsed from its text, which cost more than building the rest of [facts].
    return value.strip()


def _default_entity(value: str, info: ValidationInfo) -> str:
    entity = value.strip()
    entities = info.data.get("entities")
    if entity and entities is not None and entity not in entities:
        known = ", ".join(entities) or "none configured"
        raise Invalid(f"{entity!r} is not in [facts.entities] (known: {known})")
    return entity


@dataclass(frozen=True, slots=True)
class FactSettings:
    """Vocabulary for turning tables into facts and questions into metric queries.

    Every mapping is canonical name → aliases (matched after NFKC + casefold). Nothing
    about any one company lives in code: metrics, entities, channels and units come from
    here; period forms have built-in defaults (FY2024, 2024年度, H1 2024, 2024年上半年,
    Q3 2025 …) that ``[[facts.periods]]`` extends or replaces.

    The fiscal calendar (``fiscal_year_start``, ``fiscal_year_named_by``) decides what a
    relative period in a question means ("last year", 去年, 前期) and which periods are
    calendar years. ``default_entity`` and ``default_period`` (a canonical period or
    ``"latest"``) fill a metric question that names neither; the answer states the
    assumption. Empty means no default: such a question is asked to clarify."""

    __pydantic_config__ = _TABLE

    metrics: AliasMap = field(default_factory=dict)
    entities: AliasMap = field(default_factory=dict)
    channels: AliasMap = field(default_factory=dict)
    units: AliasMap = field(default_factory=dict)
    metric_units: Mapping[str, str] = field(default_factory=dict)
    default_channel: str = "total"
    periods: tuple[PeriodForm, ...] = DEFAULT_PERIOD_FORMS
    replace_builtin_periods: StrictBool = False
    # "MM-01": the first day of fiscal year
    fiscal_year_start: Annotated[str, AfterValidator(_fiscal_start)] = "01-01"
    # FY2025 starts in 2025 ("start") or ends in it ("end")
    fiscal_year_named_by: Annotated[
        str, _check(lambda v: v in ("start", "end"), "expected 'start' or 'end', got {value!r}")
    ] = "start"
    default_entity: Annotated[str, AfterValidator(_default_entity)] = ""
    default_period: Annotated[str, AfterValidator(_stripped)] = ""  # "FY2025" or "latest"


def _periods_written(value: object) -> object:
    """A ``[facts]`` table lists only the period forms it adds (none when it names none)."""
    if isinstance(value, dict) and "periods" not in value:
        return {**value, "periods": []}
    return value


def _with_builtin_periods(facts: FactSettings) -> FactSettings:
    """The configured period forms, then the built-in ones for the fiscal calendar unless
    they are replaced. Where two forms match overlapping text the longest match wins; an
    operator whose form reads a built-in's text differently sets replace_builtin_periods."""
    configured = facts.periods
    if facts.replace_builtin_periods and not configured:
        raise Invalid("true needs at least one [[facts.periods]]", at="replace_builtin_periods")
    builtin = () if facts.replace_builtin_periods else builtin_period_forms(facts.fiscal_year_start)
    return dataclasses.replace(facts, periods=configured + builtin)


#: The values of ``[answer.relevance] multilingual`` (clearance.llm.multilingual).
MULTILINGUAL_MODELS = ("e5", "none")


@dataclass(frozen=True, slots=True)
class RelevanceSettings:
    """The narrative path's relevance gate (:mod:`clearance.answer.relevance`). Without an
    embedding cosine, a snippet bears on the question when it holds ``min_coverage`` of the
    question's IDF mass; with one, when ``coverage + cosine_weight * cosine`` reaches
    ``min_score`` and the coverage reaches ``min_coverage_with_cosine``. A mostly-CJK
    question (no cosine: the embedder is English-only) needs ``min_coverage_cjk``, since
    character pairs match by chance more often than words, or, with a ``multilingual``
    model, ``min_coverage_cjk_with_cosine`` and that model's cosine ``min_cosine_cjk``,
    and to be the snippet nearest the question. A snippet whose cosine reaches
    ``near_cosine`` needs only ``min_coverage_near``: the embedder places it that near a
    question worded unlike it ("keep earning holiday" against "continue to accrue
    holiday"). Calibrated by benchmarks/relevance_calibration.py and the held-out sets."""

    __pydantic_config__ = _TABLE

    min_coverage: Share = 0.6
    cosine_weight: NonNegative = 1.5
    min_score: NonNegative = 1.3
    min_coverage_with_cosine: Share = 0.45
    min_coverage_cjk: Share = 0.7
    multilingual: Annotated[
        str,
        _check(lambda v: v in MULTILINGUAL_MODELS, 'must be "e5" or "none", got {value!r}'),
    ] = "e5"
    min_coverage_cjk_with_cosine: Share = 0.3
    min_cosine_cjk: Share = 0.86
    near_cosine: Share = 0.7
    min_coverage_near: Share = 0.3


#: The values of ``[answer] inferred``.
INFERRED_MODES = ("drop", "label")


@dataclass(frozen=True, slots=True)
class AnswerSettings:
    __pydantic_config__ = _TABLE

    max_question_chars: PositiveInt = 2000  # longer questions are refused before any work
    context_budget_tokens: PositiveInt = 1500  # k chunks of chunk_size, titles and locators
    min_snippets: PositiveInt = 1
    relevance: RelevanceSettings = field(default_factory=RelevanceSettings)
    no_source_message: str = "I have no approved source I can use to answer that."
    # Added to a refusal for nothing found while a corpus in the asker's assistant scope is
    # failing closed (past its revocation SLA): a system state, not any document's.
    unavailable_notice: str = "Some sources are temporarily unavailable."
    degraded_message: str = "The answer service is unavailable right now. Please try again later."
    # Narrative sentences no snippet states (uncited, or marked by the model as inferred):
    # "drop" them, or "label" them apart under INFERRED_LABEL after the sourced answer.
    inferred: Annotated[
        str, _check(lambda v: v in INFERRED_MODES, 'must be "drop" or "label", got {value!r}')
    ] = "drop"
    # A question nothing answers as asked is asked again in the other languages' words
    # (Japanese or Chinese in English, English in Japanese and Chinese), read from the
    # dictionaries shipped with Clearance (clearance.bilingual).
    across_languages: StrictBool = True


@dataclass(frozen=True, slots=True)
class Rate:
    """At most ``count`` requests per ``per_s`` seconds: a bucket of ``count`` tokens,
    refilled evenly over ``per_s``."""

    count: int
    per_s: float


RateLimit = Annotated[Rate | None, PlainValidator(_rate)]


def _usable_header(value: str) -> bool:
    return bool(_HEADER_NAME.fullmatch(value)) and value.lower() not in (
        "authorization",
        "cookie",
        "host",
    )


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """``clearance serve``: where the HTTP API listens and what it accepts. The default
    address is loopback only; put TLS and any public address on a reverse proxy."""

    __pydantic_config__ = _TABLE

    host: str = "127.0.0.1"
    port: Annotated[
        StrictInt, _check(lambda v: 0 < v < 65536, "must be between 1 and 65535, got {value}")
    ] = 8080
    max_body_bytes: PositiveInt = 1024 * 1024  # larger request bodies are refused with 413
    # Sign-in beside API tokens (docs/server.md). Both are off by default.
    # [server.oidc]: JWT bearer tokens checked against a JWKS
    oidc: Annotated[OidcSettings | None, AfterValidator(_jwks_here)] = None
    # The user id in ``user_header`` is believed only from these peers (addresses or
    # networks); empty turns trusted-header sign-in off.
    trusted_proxies: Annotated[
        tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...], PlainValidator(_networks)
    ] = ()
    user_header: Annotated[str, _check(_usable_header, "{value!r} is not a usable header name")] = (
        "X-Forwarded-User"
    )
    # OIDC and proxy users are administrators when the directory puts them (transitively)
    # in one of these groups; never because a token says so. API tokens have --admin.
    admin_groups: Names = ()
    # An ask running longer answers 503 with [answer] degraded_message (nothing streamed).
    request_timeout_s: Annotated[PositiveDuration, _toml("request_timeout")] = 30.0
    # Per signed-in user over the API, the UI and MCP together, shared by every process on
    # the index; None ("off") = unlimited.
    rate_limit: RateLimit = Rate(60, 60.0)
    # Sign-in attempts (token form, OIDC start and callback) per client address.
    signin_rate_limit: RateLimit = Rate(20, 60.0)
    # A stream (MCP's GET /mcp, an answer as server-sent events) that sends nothing but
    # keep-alives, or whose client reads nothing, for this long is ended.
    stream_idle_timeout_s: Annotated[PositiveDuration, _toml("stream_idle_timeout")] = 60.0
    # Streams one user may hold open at once in one process; one more is refused with 429.
    streams_per_user: PositiveInt = 4
    # GET /metrics for anyone when true; by default for administrators only.
    metrics_public: StrictBool = False
    # Browser origins allowed to call the API with a bearer token (CORS); none by default.
    # The browser UI is served by the same origin and needs none.
    cors_origins: Annotated[tuple[str, ...], PlainValidator(_origins)] = ()
    # The browser UI at "/" (sign-in, ask, previews, the administrator page).
    ui: StrictBool = True
    # Where users reach the server, e.g. "https://clearance.example.internal" behind a TLS
    # proxy: the OIDC redirect URI is built from it, and an https:// URL makes session
    # cookies Secure. Unset: taken from each request (and cookies are Secure over https only).
    public_url: Annotated[str | None, PlainValidator(_public_url)] = None
    # A browser session ends this long after sign-in (and never outlives its credential).
    session_lifetime_s: Annotated[PositiveDuration, _toml("session_lifetime")] = 8 * 3600.0
    # Expired browser sessions are deleted from the index this often while serving.
    session_sweep_interval_s: Annotated[PositiveDuration, _toml("session_sweep_interval")] = 3600.0


@dataclass(frozen=True, slots=True)
class TraceSettings:
    """Privacy-preserving traces (docs/design.md §8). ``retention_s = 0`` keeps records until purged
    by hand. ``question_text_corpora``: the question text is recorded only when every corpus
    an answer cited is listed here and no retrieved document is RESTRICTED."""

    __pydantic_config__ = _TABLE

    enabled: StrictBool = True
    retention_s: Annotated[Duration, _toml("retention")] = 30 * 86400.0
    hmac_key_env: str = "CLEARANCE_TRACE_KEY"
    question_text_corpora: Names = ()


def _default_origins() -> dict[str, Trust]:
    return dict(DEFAULT_ORIGIN_TRUST)


def _trust_origins(value: object) -> dict[str, Trust]:
    """``[trust.origins]`` laid over the built-in mapping; keys lower-case."""
    if not isinstance(value, dict):
        raise Invalid("expected a table")
    origins = _default_origins()
    seen: dict[str, str] = {}
    for name, raw in value.items():
        origin = name.strip().lower()
        if not origin:
            raise Invalid("empty origin name", at=name)
        if origin in seen:
            raise Invalid(f"the same origin as trust.origins.{seen[origin]}", at=name)
        seen[origin] = name
        if not isinstance(raw, str):
            raise Invalid(f"expected str, {got(raw)}", at=name)
        trust = Trust.__members__.get(raw.strip().upper())
        if trust is None:
            raise Invalid(f"expected 'trusted', 'medium' or 'untrusted', got {raw!r}", at=name)
        origins[origin] = trust
    return origins


def _source_origins(value: object, info: ValidationInfo) -> dict[str, str]:
    """``[trust.source_origins]``: source system → an origin known to ``[trust.origins]``."""
    if not isinstance(value, dict):
        raise Invalid("expected a table")
    origins = info.data.get("origins", DEFAULT_ORIGIN_TRUST)
    out: dict[str, str] = {}
    for name, raw in value.items():
        system = name.strip().lower()
        if not system:
            raise Invalid("empty source system name", at=name)
        if system in out:
            raise Invalid(f"source system {system!r} is given twice", at=name)
        if not isinstance(raw, str):
            raise Invalid(f"expected str, {got(raw)}", at=name)
        origin = raw.strip().lower()
        if origin not in origins:
            raise Invalid(
                f"unknown origin {raw!r} (known: {', '.join(sorted(origins))}; "
                "add it to [trust.origins] first)",
                at=name,
            )
        out[system] = origin
    return out


@dataclass(frozen=True, slots=True)
class TrustSettings:
    """Origin → trust (docs/design.md §4), applied at read time and never stored.

    ``origins`` is the built-in mapping with ``[trust.origins]`` laid over it (keys
    lower-case); an origin missing from it is untrusted. ``source_origins`` names the
    origin of documents from a source system whose metadata gives none (keys lower-case);
    a source system missing from it yields ``unknown``."""

    __pydantic_config__ = _TABLE

    origins: Annotated[Mapping[str, Trust], PlainValidator(_trust_origins)] = field(
        default_factory=_default_origins
    )
    source_origins: Annotated[Mapping[str, str], PlainValidator(_source_origins)] = field(
        default_factory=dict
    )


# --------------------------------------------------------------------------- across tables


def _written(info: ValidationInfo, table: str) -> set[str]:
    """The names of ``[table.NAME]`` as written in the file, whether or not they are valid:
    a check that refers to them still runs when one of them is bad."""
    raw = (info.context or {}).get("raw", {}).get(table)
    return set(raw) if isinstance(raw, dict) else set()


def _named(value: object) -> object:
    """``[corpora.hr]`` → a table whose ``name`` is ``hr``: a named table's name is its key."""
    if not isinstance(value, dict):
        return value
    out: dict[str, object] = {}
    for name, table in value.items():
        if isinstance(table, dict):
            if "name" in table:
                raise Invalid("not a setting: a table's name is its key", at=f"{name}.name")
            table = {**table, "name": name}
        out[name] = table
    return out


def _assistants_fit(
    assistants: Mapping[str, AssistantSettings], info: ValidationInfo
) -> Mapping[str, AssistantSettings]:
    corpora = _written(info, "corpora")
    for name, assistant in assistants.items():
        for corpus in assistant.corpora:
            if corpus not in corpora:
                raise Invalid(f"unknown corpus {corpus!r}", at=f"{name}.corpora")
    return assistants


def _source_defaults(value: object, info: ValidationInfo) -> object:
    """A source's permission interval defaults to a quarter of its corpus's revocation SLA,
    at most 5 minutes."""
    corpora: Mapping[str, CorpusSettings] = info.data.get("corpora", {})
    if not isinstance(value, dict):
        return value
    out: dict[str, object] = {}
    for name, table in value.items():
        corpus = corpora.get(table.get("corpus", "")) if isinstance(table, dict) else None
        if corpus is not None and "permission_interval" not in table:
            table = {**table, "permission_interval": min(300.0, corpus.revocation_sla_s / 4)}
        out[name] = table
    return out


_SOURCE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def _sources_fit(
    sources: Mapping[str, SourceSettings], info: ValidationInfo
) -> Mapping[str, SourceSettings]:
    """Each source feeds a configured corpus, syncs permissions within its revocation SLA,
    and has its notifications sent to its own endpoint."""
    written = _written(info, "corpora")
    corpora: Mapping[str, CorpusSettings] = info.data.get("corpora", {})
    for name, source in sources.items():
        if not _SOURCE_NAME.fullmatch(name):
            raise Invalid("a source name is 1-64 letters, digits, '.', '_' or '-'", at=name)
        if source.corpus not in written:
            known = ", ".join(repr(c) for c in sorted(written)) or "none"
            raise Invalid(
                f"{source.corpus!r} is not a configured corpus (configured: {known})",
                at=f"{name}.corpus",
            )
        corpus = corpora.get(source.corpus)
        if corpus is not None and source.permission_interval_s >= corpus.revocation_sla_s:
            raise Invalid(
                f"{source.permission_interval_s:g}s is not shorter than corpus "
                f"{source.corpus!r}'s revocation_sla of {corpus.revocation_sla_s:g}s, so it "
                "would go stale between syncs",
                at=f"{name}.permission_interval",
            )
        path = f"/v1/sources/{name}/notifications"
        url = urlsplit(source.notification_url or path)
        if url.query or url.fragment or not url.path.endswith(path):
            raise Invalid(
                f"must end in {path} (this source's notification endpoint), with no query",
                at=f"{name}.notification_url",
            )
    return sources


def _one_directory(
    directories: Mapping[str, DirectorySourceSettings],
) -> Mapping[str, DirectorySourceSettings]:
    """A directory source owns the whole directory (its snapshot replaces every user and
    group), so at most one may be configured: two would each remove the other's users on
    every sync. It is read more often than its SLA, or it would fail closed between two."""
    for name, directory in directories.items():
        if directory.interval_s >= directory.sla_s:
            raise Invalid(
                f"{directory.interval_s:g}s is not shorter than the directory sla of "
                f"{directory.sla_s:g}s, so the directory would fail closed between two syncs",
                at=f"{name}.interval",
            )
    if len(directories) > 1:
        raise Invalid(
            f"directories: {', '.join(sorted(directories))}: only one directory source may be "
            "configured (each owns the whole directory)",
            keyed=True,
        )
    return directories


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything a Clearance process needs to know, resolved and validated."""

    __pydantic_config__ = _TABLE

    root: Path = Path()
    store: StoreSettings = field(default_factory=StoreSettings)
    sensitivity: SensitivitySettings = field(default_factory=SensitivitySettings)
    corpora: Annotated[Mapping[str, CorpusSettings], BeforeValidator(_named)] = field(
        default_factory=dict
    )
    assistants: Annotated[
        Mapping[str, AssistantSettings], BeforeValidator(_named), AfterValidator(_assistants_fit)
    ] = field(default_factory=dict)
    access: AccessSettings = field(default_factory=AccessSettings)
    embedding: EmbeddingSettings = field(default_factory=EmbeddingSettings)
    ingest: IngestSettings = field(default_factory=IngestSettings)
    retrieval: RetrievalSettings = field(default_factory=RetrievalSettings)
    llm: LLMSettings = field(default_factory=LLMSettings)
    trace: TraceSettings = field(default_factory=TraceSettings)
    trust: TrustSettings = field(default_factory=TrustSettings)
    rerank: RerankSettings = field(default_factory=RerankSettings)
    scope: ScopeSettings = field(default_factory=ScopeSettings)
    facts: Annotated[
        FactSettings, BeforeValidator(_periods_written), AfterValidator(_with_builtin_periods)
    ] = field(default_factory=FactSettings)
    answer: AnswerSettings = field(default_factory=AnswerSettings)
    server: ServerSettings = field(default_factory=ServerSettings)
    sources: Annotated[
        Mapping[str, SourceSettings],
        AfterValidator(_sources_fit),
        BeforeValidator(_source_defaults),
        BeforeValidator(_named),
    ] = field(default_factory=dict)
    directories: Annotated[
        Mapping[str, DirectorySourceSettings],
        BeforeValidator(_named),
        AfterValidator(_one_directory),
    ] = field(default_factory=dict)
    source: Path | None = None

    @property
    def db_path(self) -> Path:
        path = self.store.path
        return path if path.is_absolute() else self.root / path

    def corpus(self, name: str) -> CorpusSettings:
        """A configured corpus, or the safe defaults for one that is not configured."""
        return self.corpora.get(name) or CorpusSettings(name=name)


#: Not tables of the file: where it was read from, added by :func:`_from_file`.
_WHERE_READ = ("root", "source")


def _from_file(data: object, info: ValidationInfo) -> object:
    """The file's tables, with where it was read from: ``root`` and ``source`` are not
    settings a file may write."""
    if not isinstance(data, dict):
        return data
    for internal in _WHERE_READ:
        if internal in data:
            raise Invalid(f"unknown setting {internal!r}", keyed=True)
    context = info.context or {}
    context["raw"] = data
    return {**data, "root": context.get("root", Path()), "source": context.get("source")}


def _across_tables(settings: Settings) -> Settings:
    for assistant in settings.assistants.values():
        for entity in assistant.allow_entities:
            if entity not in settings.scope.entities:
                raise Invalid(
                    f"{entity!r} is not an entity of [scope.entities]",
                    at=f"assistants.{assistant.name}.allow_entities",
                )
    return settings


def _settings_of(tables: Any) -> Settings:
    """The :class:`Settings` of a file's validated tables; a table it does not have is its
    default, as pydantic would have made it (defaults are not validated either way)."""
    return Settings(**{f.name: getattr(tables, f.name) for f in dataclasses.fields(tables)})


@functools.cache
def _schema(tables: frozenset[str]) -> Any:
    """The schema of a file whose top-level keys are ``tables``: :class:`Settings` with only
    the fields the file writes (in their order, with their annotations, so with every check
    and message), then the checks across tables. Building a validator costs most of loading
    the settings, and a table the file leaves out only ever takes its default, so the
    validator is built for what the file holds (once per process and shape of file). A key
    that is no field stays out of the fields, and is refused as an unknown setting."""
    written = [f for f in dataclasses.fields(Settings) if f.name in tables or f.name in _WHERE_READ]
    fields = [
        (f.name, f.type, dataclasses.field(default=f.default, default_factory=f.default_factory))
        for f in written
    ]
    # The annotations are text (postponed), resolved by pydantic in this module.
    namespace = {"__pydantic_config__": _TABLE, "__module__": __name__}
    file = dataclasses.make_dataclass("Settings", fields, namespace=namespace, frozen=True)
    return Annotated[
        file,
        BeforeValidator(_from_file),
        AfterValidator(_settings_of),
        AfterValidator(_across_tables),
    ]


def _parse(data: Mapping[str, Any], root: Path, source: Path | None) -> Settings:
    """The settings of ``data``, or one :class:`ConfigError` naming every problem found."""
    schema = _schema(frozenset(data))
    settings: Settings = validate(
        schema,
        dict(data),
        context={"root": root, "source": source},
        keys_from=Settings,
        unwritten=frozenset((*_WHERE_READ, "name")),  # a named table's name is its key
    )
    return settings


def store_passwords(
    settings: Settings, env: Mapping[str, str] | None = None
) -> tuple[Secret | None, Secret | None]:
    """The reading and the writing role's PostgreSQL passwords, from the variables
    ``[store] password_env`` and ``writer_password_env`` name (``None`` when unset: libpq
    then uses its own means, such as a password file or peer authentication)."""
    environ = os.environ if env is None else env
    store = settings.store
    reader = environ.get(store.password_env, "")
    writer = environ.get(store.writer_password_env, "")
    return (Secret(reader) if reader else None, Secret(writer) if writer else None)


def settings_from_dict(data: Mapping[str, Any], root: Path | None = None) -> Settings:
    """Validate settings given as a mapping (what ``tomllib`` would return)."""
    return _parse(data, (root or Path.cwd()).resolve(), None)


def find_config(
    explicit: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None
) -> Path:
    """Apply the lookup contract of the module docstring; the file need not exist. An
    ``explicit`` path may be given as text, and a folder stands for its ``clearance.toml``
    (as ``CLEARANCE_HOME`` does)."""
    if explicit is not None:
        path = Path(explicit)
        return path / CONFIG_NAME if path.is_dir() else path
    environ = os.environ if env is None else env
    home = environ.get(HOME_ENV)
    if home:
        return Path(home) / CONFIG_NAME
    return Path.cwd() / CONFIG_NAME


def load_settings(
    explicit: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None
) -> Settings:
    """Find and parse the configuration. A missing file is an error naming where we looked."""
    path = find_config(explicit, env)
    if not path.is_file():
        raise ConfigError(
            f"no configuration at {path}: run 'clearance init' there, pass --config FILE "
            f"or set {HOME_ENV}"
        )
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    try:
        return _parse(data, path.resolve().parent, path.resolve())
    except ConfigError as exc:
        placed = sorted(
            ((_line(text, p), p) for p in exc.problems),
            key=lambda item: (item[0] is None, item[0] or 0),
        )
        problems = [
            f"{path}:{line}: {p}" if line is not None else f"{path}: {p}" for line, p in placed
        ]
        raise ConfigError(problems[0], problems=problems) from None


def _line(text: str, message: str) -> int | None:
    """The line of the key a settings error names (its text up to the first ``: ``, or the
    quoted key of ``unknown setting '…'``); None when the key is not written in the file
    (a default, a missing key), and the error then names the file alone."""
    from clearance.toml_lines import key_line

    unknown = re.match(r"unknown setting '([^']+)'", message)
    return key_line(text, unknown.group(1) if unknown else message.split(": ", 1)[0])


def serve_worker_config(env: Mapping[str, str] | None = None) -> tuple[Path, int]:
    """``(configuration file, number of workers)`` that ``clearance serve --workers N`` left
    in :data:`SERVE_WORKERS_ENV` for the worker processes it starts."""
    environ = os.environ if env is None else env
    raw = environ.get(SERVE_WORKERS_ENV)
    if not raw:
        raise ConfigError(f"{SERVE_WORKERS_ENV} is not set: start workers with 'clearance serve'")
    found = json.loads(raw)
    return Path(found["config"]), int(found["workers"])


def trace_key(settings: Settings, env: Mapping[str, str] | None = None) -> bytes | None:
    """The HMAC key for pseudonymous trace user ids, from the variable named by
    ``[trace] hmac_key_env``; ``None`` when unset (pseudonyms are then per process)."""
    environ = os.environ if env is None else env
    value = environ.get(settings.trace.hmac_key_env, "")
    return value.encode("utf-8") if value else None


def require_assistant(settings: Settings, name: str | None) -> None:
    """``--assistant NAME`` must name a configured assistant: else exit 3 (not found).

    Omitting ``--assistant`` is not an error: see :data:`ASSISTANT_HELP`.
    """
    if name in settings.assistants or (name is None and not settings.access.require_assistant):
        return
    raise NotFoundError(unknown_assistant_message(settings, name))


def unknown_assistant_message(settings: Settings, name: str | None) -> str:
    configured = ", ".join(sorted(settings.assistants)) or "none"
    if name is None:
        return (
            f"--assistant is required here ([access] require_assistant; configured: {configured})"
        )
    return f"unknown assistant {name!r} (configured: {configured})"
