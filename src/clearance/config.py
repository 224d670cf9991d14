"""``clearance.toml`` → frozen, typed settings with safe defaults.

Where the configuration is found is a public contract:

1. ``--config FILE`` if given;
2. else ``$CLEARANCE_HOME/clearance.toml``;
3. else ``./clearance.toml``.

Relative paths inside the file are resolved against the file's directory. Every error names
the offending key (``corpora.hr.revocation_sla``) so an operator can fix it without reading
code. Unknown keys are errors: a typo must never silently fall back to a default.
The environment is read here and nowhere else.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from clearance.analysis import search_terms
from clearance.errors import ConfigError, NotFoundError
from clearance.model import Sensitivity
from clearance.oidc_settings import OidcSettings, parse_oidc_settings
from clearance.secrets import Secret
from clearance.trust import DEFAULT_ORIGIN_TRUST, Trust

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
    "parse_rate",
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


def parse_duration(value: object, key: str = "duration") -> float:
    """``"15m"`` → 900.0 seconds. A bare number is seconds."""
    if isinstance(value, bool):
        raise ConfigError(f"{key}: expected a duration such as '15m', got {value!r}")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str) and (m := _DURATION.match(value)):
        seconds = float(m.group(1)) * _UNIT_SECONDS[m.group(2) or "s"]
    else:
        raise ConfigError(
            f"{key}: expected a duration such as '15m', '24h' or '30s', got {value!r}"
        )
    if not math.isfinite(seconds):
        raise ConfigError(f"{key}: a duration must be a finite number, got {value!r}")
    if seconds < 0:
        raise ConfigError(f"{key}: a duration cannot be negative")
    return seconds


_RATE = re.compile(r"^\s*(\d+)\s*/\s*(s|m|h)\s*$")


def parse_rate(value: object, key: str = "rate") -> Rate | None:
    """``"60/m"`` → ``Rate(60, 60.0)`` (``/s``, ``/m``, ``/h``); ``"off"`` → ``None``."""
    if value == "off":
        return None
    m = _RATE.match(value) if isinstance(value, str) else None
    if m is None or int(m.group(1)) <= 0:
        raise ConfigError(f"{key}: expected a rate such as '60/m' (or 'off'), got {value!r}")
    return Rate(int(m.group(1)), float(_UNIT_SECONDS[m.group(2)]))


# --------------------------------------------------------------------------- typed readers

T = TypeVar("T")


class _Table:
    """Reads typed keys from one TOML table and rejects the keys nobody asked for.

    Made with an ``errors`` list (the settings file's top table, and every table reached
    from it with :meth:`table`), a bad value is recorded there and the key's default is
    used, so that one reading finds every problem of the file; without one, the first
    problem raises."""

    def __init__(self, data: object, path: str, errors: list[ConfigError] | None = None) -> None:
        self.errors = errors
        self.path = path
        self.seen: set[str] = set()
        if not isinstance(data, dict):
            self.data: dict[str, Any] = {}
            self._bad(f"{path or 'config'}: expected a table", None)
        else:
            self.data = data

    def _bad(self, message: str, default: T) -> T:
        """Record ``message`` (or raise it, without an errors list) and go on with ``default``."""
        if self.errors is None:
            raise ConfigError(message)
        self.errors.append(ConfigError(message))
        return default

    def key(self, name: str) -> str:
        return f"{self.path}.{name}" if self.path else name

    def get(self, name: str, typ: type[T], default: T) -> T:
        self.seen.add(name)
        if name not in self.data:
            return default
        value = self.data[name]
        if typ is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, typ) or (typ is not bool and isinstance(value, bool)):
            return self._bad(
                f"{self.key(name)}: expected {typ.__name__}, got {type(value).__name__} {value!r}",
                default,
            )
        return value

    def strings(self, name: str, default: tuple[str, ...] = ()) -> tuple[str, ...]:
        value = self.get(name, list, list(default))
        if not all(isinstance(v, str) for v in value):
            return self._bad(f"{self.key(name)}: expected a list of strings", default)
        return tuple(value)

    def sensitivity(self, name: str, default: Sensitivity) -> Sensitivity:
        raw = self.get(name, str, default.name)
        try:
            return Sensitivity.parse(raw)
        except ValueError as exc:
            return self._bad(f"{self.key(name)}: {exc}", default)

    def duration(self, name: str, default: float) -> float:
        self.seen.add(name)
        if name not in self.data:
            return default
        try:
            return parse_duration(self.data[name], self.key(name))
        except ConfigError as exc:
            return self._bad(exc.message, default)

    def table(self, name: str) -> _Table:
        self.seen.add(name)
        return _Table(self.data.get(name, {}), self.key(name), self.errors)

    def positive(self, name: str, default: int) -> int:
        value = self.get(name, int, default)
        if value <= 0:
            return self._bad(f"{self.key(name)}: must be a positive integer, got {value}", default)
        return value

    def done(self) -> None:
        for unknown in sorted(set(self.data) - self.seen):
            self._bad(f"unknown setting {self.key(unknown)!r}", None)


# --------------------------------------------------------------------------- settings


def _share(t: _Table, name: str, default: float) -> float:
    value = t.get(name, float, default)
    if not 0.0 <= value <= 1.0:
        raise ConfigError(f"{t.key(name)}: must be between 0 and 1, got {value}")
    return value


def _non_negative(t: _Table, name: str, default: float) -> float:
    value = t.get(name, float, default)
    if not 0.0 <= value < math.inf:
        raise ConfigError(f"{t.key(name)}: must be a finite number of at least 0, got {value}")
    return value


def _relevance(t: _Table) -> RelevanceSettings:
    d = RelevanceSettings()
    out = RelevanceSettings(
        min_coverage=_share(t, "min_coverage", d.min_coverage),
        cosine_weight=_non_negative(t, "cosine_weight", d.cosine_weight),
        min_score=_non_negative(t, "min_score", d.min_score),
        min_coverage_with_cosine=_share(t, "min_coverage_with_cosine", d.min_coverage_with_cosine),
    )
    t.done()
    return out


@dataclass(frozen=True, slots=True)
class StoreSettings:
    backend: str = "sqlite"
    path: Path = Path("data/clearance.db")
    # How long a writer waits for another writer's lock before failing. Readers never wait
    # for writers (WAL), so this only bounds writer-vs-writer contention.
    busy_timeout_s: float = 60.0
    # PostgreSQL (docs/postgres.md): the reading role's connection (searches, under row-level
    # security) and the owning role's (schema, writes), each with its password in the
    # environment variable named here, never in the file.
    dsn: str = ""
    writer_dsn: str = ""
    password_env: str = "CLEARANCE_PG_PASSWORD"
    writer_password_env: str = "CLEARANCE_PG_WRITER_PASSWORD"
    pool_size: int = 4
    # "exact" ranks the allowed chunks exactly (the true top-k; hidden chunks change
    # nothing). "hnsw" lets searches over more than vector_exact_below allowed chunks scan
    # the HNSW index (iterative scans: hnsw_ef_search candidates, at most
    # hnsw_max_scan_tuples rows), trading that guarantee for speed (docs/search.md).
    vector_search: str = "exact"
    vector_exact_below: int = 20_000
    hnsw_ef_search: int = 100
    hnsw_max_scan_tuples: int = 50_000


@dataclass(frozen=True, slots=True)
class SensitivitySettings:
    default_level: Sensitivity = Sensitivity.INTERNAL
    restricted_filename_patterns: tuple[str, ...] = ()
    restricted_keywords: tuple[str, ...] = ()
    escalate_unknown_to_restricted: bool = False


@dataclass(frozen=True, slots=True)
class RealtimeCheckSettings:
    """How to ask a source system, per document, whether a user may read it right now."""

    url: str = ""
    timeout_s: float = 1.0
    cache_ttl_s: float = 30.0


@dataclass(frozen=True, slots=True)
class CorpusSettings:
    name: str
    description: str = ""
    revocation_sla_s: float = 24 * 3600.0
    realtime_check: bool = False
    realtime: RealtimeCheckSettings = field(default_factory=RealtimeCheckSettings)
    max_sensitivity: Sensitivity = Sensitivity.CONFIDENTIAL
    authority: int = 0


@dataclass(frozen=True, slots=True)
class SourceSettings:
    """One ``[sources.<name>]`` table: a connector that keeps one corpus in step with a
    source system (docs/sources.md).

    ``credentials`` maps a role the connector asks for (``token``, ``client_secret``) to the
    *name* of an environment variable; values are read only when the connector is built, and
    only as :class:`~clearance.secrets.Secret`. ``options`` belong to the connector's kind,
    which validates them."""

    name: str
    kind: str = ""
    corpus: str = ""
    content_interval_s: float = 3600.0
    permission_interval_s: float = 300.0
    max_concurrency: int = 4
    credentials: Mapping[str, str] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)
    # the public address of POST /v1/sources/<name>/notifications, for a connector that
    # subscribes to the source's change notifications itself (docs/notifications.md)
    notification_url: str | None = None


@dataclass(frozen=True, slots=True)
class DirectorySourceSettings:
    """One ``[directories.<name>]`` table: an identity provider whose users and groups are
    the directory (docs/directory-sources.md).

    ``interval_s`` is how often it is read; ``sla_s`` how long the directory it provided may
    serve without a successful read before every user it provides fails closed.
    ``credentials`` and ``options`` work as for ``[sources.<name>]``: roles name environment
    variables, and the kind validates its options."""

    name: str
    kind: str = ""
    interval_s: float = 300.0
    sla_s: float = 3600.0
    credentials: Mapping[str, str] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AssistantSettings:
    name: str
    corpora: tuple[str, ...]
    max_sensitivity: Sensitivity = Sensitivity.CONFIDENTIAL
    description: str = ""
    # [scope.entities] this assistant may answer narrative questions about (the
    # organisation's own battlecards on a competitor); figure questions stay refused
    allow_entities: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class AccessSettings:
    """Deployment-wide access rules beyond per-document ACLs."""

    # true: every search, ask and explain must name an assistant; without one it is refused
    # as an unknown assistant (no request may read across every corpus at once)
    require_assistant: bool = False


@dataclass(frozen=True, slots=True)
class EmbeddingSettings:
    provider: str = "minilm"  # "minilm" | "none"
    batch_size: int = 32
    max_tokens: int = 256
    persist_restricted: bool = False


@dataclass(frozen=True, slots=True)
class IngestSettings:
    """How files become documents, and the limits that keep hostile or careless input from
    widening access or exhausting the machine (docs/metadata.md, "Limits")."""

    chunk_size: int = 800  # characters
    chunk_overlap: int = 120  # characters
    default_corpus: str = "default"
    default_source_system: str = "files"
    # Folders files may be read from. Empty: the folders named on the command line, and a
    # manifest's own folder. Absolute after loading (relative to the config file).
    roots: tuple[Path, ...] = ()
    follow_symlinks: bool = False  # even then, only links that stay inside a root
    allow_unconfigured_corpora: bool = False
    max_file_mb: float = 100.0  # size on disk of one file
    max_uncompressed_mb: float = 256.0  # an OOXML (zip) file's members, added up
    max_rows: int = 100_000  # rows of one CSV or XLSX file
    file_time_budget_s: float = 300.0  # extraction time of one file


@dataclass(frozen=True, slots=True)
class RetrievalSettings:
    k: int = 5
    rrf_k: int = 60
    candidates: int = 50  # per retriever, before fusion
    # RRF weight of the vector list for queries mostly in CJK script (see docs/search.md)
    cjk_vector_weight: float = 0.0
    # Groups of equivalent phrases, the configured one first (clearance.retrieval.synonyms)
    synonyms: tuple[tuple[str, ...], ...] = ()


@dataclass(frozen=True, slots=True)
class LLMSettings:
    provider: str = "extractive"
    base_url: str = ""
    model: str = ""
    api_key_env: str = ""
    timeout_s: float = 30.0
    max_retries: int = 2


@dataclass(frozen=True, slots=True)
class RerankSettings:
    """The listwise judge. ``provider = ""`` means: the same provider as ``[llm]``;
    ``"none"`` turns reranking off (fused order is kept)."""

    provider: str = ""
    candidates: int = 10


@dataclass(frozen=True, slots=True)
class ScopeSettings:
    """External / competitor entities the assistant must never answer about.

    ``entities`` maps a canonical name to its aliases (any language); the name itself is
    always an alias too."""

    entities: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PeriodForm:
    """A regular expression recognising a period and the canonical form it maps to.

    ``canonical`` may use ``{1}``, ``{2}`` … for the pattern's groups, e.g.
    ``pattern = "FY\\s*(\\d{4})"``, ``canonical = "FY{1}"``."""

    pattern: str
    canonical: str


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
    PeriodForm(r"(\d{4})\s*年度", "FY{1}"),
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
    PeriodForm(rf"\bfirst\s+half\s+(?:of\s+)?(?:FY\s*|fiscal\s+(?:year\s+)?)?{_Y4}\b", "H1 {1}"),
    PeriodForm(rf"\bsecond\s+half\s+(?:of\s+)?(?:FY\s*|fiscal\s+(?:year\s+)?)?{_Y4}\b", "H2 {1}"),
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
            rf"\b(?:{words})\s+quarter\s+(?:of\s+)?(?:FY\s*|fiscal\s+(?:year\s+)?)?{_Y4}\b",
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

    metrics: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    entities: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    channels: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    units: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    metric_units: Mapping[str, str] = field(default_factory=dict)
    default_channel: str = "total"
    periods: tuple[PeriodForm, ...] = DEFAULT_PERIOD_FORMS
    replace_builtin_periods: bool = False
    fiscal_year_start: str = "01-01"  # "MM-01": the first day of fiscal year
    fiscal_year_named_by: str = "start"  # FY2025 starts in 2025 ("start") or ends in it ("end")
    default_entity: str = ""
    default_period: str = ""  # a period ("FY2025") or "latest"


@dataclass(frozen=True, slots=True)
class RelevanceSettings:
    """The narrative path's relevance gate (:mod:`clearance.answer.relevance`). Without an
    embedding cosine, a snippet bears on the question when it holds ``min_coverage`` of the
    question's IDF mass; with one, when ``coverage + cosine_weight * cosine`` reaches
    ``min_score`` and the coverage reaches ``min_coverage_with_cosine``. Calibrated by
    benchmarks/relevance_calibration.py."""

    min_coverage: float = 0.6
    cosine_weight: float = 1.5
    min_score: float = 1.3
    min_coverage_with_cosine: float = 0.45


@dataclass(frozen=True, slots=True)
class AnswerSettings:
    max_question_chars: int = 2000  # longer questions are refused before any work
    context_budget_tokens: int = 700
    min_snippets: int = 1
    relevance: RelevanceSettings = field(default_factory=RelevanceSettings)
    no_source_message: str = "I have no approved source I can use to answer that."
    # Added to a refusal for nothing found while a corpus in the asker's assistant scope is
    # failing closed (past its revocation SLA): a system state, not any document's.
    unavailable_notice: str = "Some sources are temporarily unavailable."
    degraded_message: str = "The answer service is unavailable right now. Please try again later."
    # Narrative sentences no snippet states (uncited, or marked by the model as inferred):
    # "drop" them, or "label" them apart under INFERRED_LABEL after the sourced answer.
    inferred: str = "drop"


#: The values of ``[answer] inferred``.
INFERRED_MODES = ("drop", "label")


@dataclass(frozen=True, slots=True)
class Rate:
    """At most ``count`` requests per ``per_s`` seconds: a bucket of ``count`` tokens,
    refilled evenly over ``per_s``."""

    count: int
    per_s: float


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """``clearance serve``: where the HTTP API listens and what it accepts. The default
    address is loopback only; put TLS and any public address on a reverse proxy."""

    host: str = "127.0.0.1"
    port: int = 8080
    max_body_bytes: int = 1024 * 1024  # larger request bodies are refused with 413
    # Sign-in beside API tokens (docs/server.md). Both are off by default.
    oidc: OidcSettings | None = None  # [server.oidc]: JWT bearer tokens checked against a JWKS
    # The user id in ``user_header`` is believed only from these peers (addresses or
    # networks); empty turns trusted-header sign-in off.
    trusted_proxies: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()
    user_header: str = "X-Forwarded-User"
    # OIDC and proxy users are administrators when the directory puts them (transitively)
    # in one of these groups; never because a token says so. API tokens have --admin.
    admin_groups: tuple[str, ...] = ()
    # An ask running longer answers 503 with [answer] degraded_message (nothing streamed).
    request_timeout_s: float = 30.0
    # Per signed-in user over the API, the UI and MCP together, shared by every process on
    # the index; None ("off") = unlimited.
    rate_limit: Rate | None = Rate(60, 60.0)
    # Sign-in attempts (token form, OIDC start and callback) per client address.
    signin_rate_limit: Rate | None = Rate(20, 60.0)
    # A stream (MCP's GET /mcp, an answer as server-sent events) that sends nothing but
    # keep-alives, or whose client reads nothing, for this long is ended.
    stream_idle_timeout_s: float = 60.0
    # Streams one user may hold open at once in one process; one more is refused with 429.
    streams_per_user: int = 4
    # GET /metrics for anyone when true; by default for administrators only.
    metrics_public: bool = False
    # Browser origins allowed to call the API with a bearer token (CORS); none by default.
    # The browser UI is served by the same origin and needs none.
    cors_origins: tuple[str, ...] = ()
    # The browser UI at "/" (sign-in, ask, previews, the administrator page).
    ui: bool = True
    # Where users reach the server, e.g. "https://clearance.example.internal" behind a TLS
    # proxy: the OIDC redirect URI is built from it, and an https:// URL makes session
    # cookies Secure. Unset: taken from each request (and cookies are Secure over https only).
    public_url: str | None = None
    # A browser session ends this long after sign-in (and never outlives its credential).
    session_lifetime_s: float = 8 * 3600.0
    # Expired browser sessions are deleted from the index this often while serving.
    session_sweep_interval_s: float = 3600.0


@dataclass(frozen=True, slots=True)
class TraceSettings:
    """Privacy-preserving traces (docs/design.md §8). ``retention_s = 0`` keeps records until purged
    by hand. ``question_text_corpora``: the question text is recorded only when every corpus
    an answer cited is listed here and no retrieved document is RESTRICTED."""

    enabled: bool = True
    retention_s: float = 30 * 86400.0
    hmac_key_env: str = "CLEARANCE_TRACE_KEY"
    question_text_corpora: tuple[str, ...] = ()


def _default_origins() -> dict[str, Trust]:
    return dict(DEFAULT_ORIGIN_TRUST)


@dataclass(frozen=True, slots=True)
class TrustSettings:
    """Origin → trust (docs/design.md §4), applied at read time and never stored.

    ``origins`` is the built-in mapping with ``[trust.origins]`` laid over it (keys
    lower-case); an origin missing from it is untrusted. ``source_origins`` names the
    origin of documents from a source system whose metadata gives none (keys lower-case);
    a source system missing from it yields ``unknown``."""

    origins: Mapping[str, Trust] = field(default_factory=_default_origins)
    source_origins: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything a Clearance process needs to know, resolved and validated."""

    root: Path = Path()
    store: StoreSettings = field(default_factory=StoreSettings)
    sensitivity: SensitivitySettings = field(default_factory=SensitivitySettings)
    corpora: Mapping[str, CorpusSettings] = field(default_factory=dict)
    assistants: Mapping[str, AssistantSettings] = field(default_factory=dict)
    access: AccessSettings = field(default_factory=AccessSettings)
    embedding: EmbeddingSettings = field(default_factory=EmbeddingSettings)
    ingest: IngestSettings = field(default_factory=IngestSettings)
    retrieval: RetrievalSettings = field(default_factory=RetrievalSettings)
    llm: LLMSettings = field(default_factory=LLMSettings)
    trace: TraceSettings = field(default_factory=TraceSettings)
    trust: TrustSettings = field(default_factory=TrustSettings)
    rerank: RerankSettings = field(default_factory=RerankSettings)
    scope: ScopeSettings = field(default_factory=ScopeSettings)
    facts: FactSettings = field(default_factory=FactSettings)
    answer: AnswerSettings = field(default_factory=AnswerSettings)
    server: ServerSettings = field(default_factory=ServerSettings)
    sources: Mapping[str, SourceSettings] = field(default_factory=dict)
    directories: Mapping[str, DirectorySourceSettings] = field(default_factory=dict)
    source: Path | None = None

    @property
    def db_path(self) -> Path:
        path = self.store.path
        return path if path.is_absolute() else self.root / path

    def corpus(self, name: str) -> CorpusSettings:
        """A configured corpus, or the safe defaults for one that is not configured."""
        return self.corpora.get(name) or CorpusSettings(name=name)


def _period_forms(t: _Table) -> tuple[PeriodForm, ...]:
    raw_periods = t.get("periods", list, [])
    parsed: list[PeriodForm] = []
    for i, item in enumerate(raw_periods):
        pt = _Table(item, f"facts.periods[{i}]")
        form = PeriodForm(pt.get("pattern", str, ""), pt.get("canonical", str, ""))
        pt.done()
        try:
            re.compile(form.pattern)
        except re.error as exc:
            raise ConfigError(
                f"facts.periods[{i}].pattern: bad regular expression: {exc}"
            ) from None
        if not form.pattern or not form.canonical:
            raise ConfigError(f"facts.periods[{i}]: needs 'pattern' and 'canonical'")
        parsed.append(form)
    return tuple(parsed)


def _facts(t: _Table) -> FactSettings:
    fiscal_start = t.get("fiscal_year_start", str, "01-01")
    fiscal_year_start_month(fiscal_start)
    named_by = t.get("fiscal_year_named_by", str, "start")
    if named_by not in ("start", "end"):
        raise ConfigError(
            f"facts.fiscal_year_named_by: expected 'start' or 'end', got {named_by!r}"
        )
    replace_builtin = t.get("replace_builtin_periods", bool, False)
    configured = _period_forms(t)
    if replace_builtin and not configured:
        raise ConfigError(
            "facts.replace_builtin_periods: true needs at least one [[facts.periods]]"
        )
    builtin = () if replace_builtin else builtin_period_forms(fiscal_start)
    # Where two forms match overlapping text the longest match wins; an operator whose form
    # reads a built-in's text differently sets replace_builtin_periods.
    periods = configured + builtin
    mu = t.table("metric_units")
    metric_units = {name: mu.get(name, str, "") for name in list(mu.data)}
    mu.done()
    entities = _alias_map(t.table("entities"))
    default_entity = t.get("default_entity", str, "").strip()
    if default_entity and default_entity not in entities:
        known = ", ".join(entities) or "none configured"
        raise ConfigError(
            f"facts.default_entity: {default_entity!r} is not in [facts.entities] (known: {known})"
        )
    facts = FactSettings(
        metrics=_alias_map(t.table("metrics")),
        entities=entities,
        channels=_alias_map(t.table("channels")),
        units=_alias_map(t.table("units")),
        metric_units=metric_units,
        default_channel=t.get("default_channel", str, "total"),
        periods=periods,
        replace_builtin_periods=replace_builtin,
        fiscal_year_start=fiscal_start,
        fiscal_year_named_by=named_by,
        default_entity=default_entity,
        default_period=t.get("default_period", str, "").strip(),
    )
    t.done()
    return facts


_DSN_PASSWORD = re.compile(r"(?:^|\s)password\s*=", re.IGNORECASE)


def _dsn(t: _Table, name: str, required: bool) -> str:
    """A libpq connection string or URI; it must name a user and hold no password."""
    value = t.get(name, str, "").strip()
    if not value:
        if required:
            raise ConfigError(f'store.{name}: required with backend = "postgres"')
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
        raise ConfigError(
            f"store.{name}: holds a password; put it in the environment variable that "
            f"store.{'writer_' if name == 'writer_dsn' else ''}password_env names instead"
        )
    if user is None:
        raise ConfigError(f"store.{name}: name the role to connect as (postgresql://ROLE@HOST/DB)")
    return value


def _positive(t: _Table, name: str, default: int) -> int:
    value = t.get(name, int, default)
    if isinstance(value, bool) or value < 1:
        raise ConfigError(f"store.{name}: expected a positive integer, got {value!r}")
    return value


def _vector_search(t: _Table) -> str:
    value = t.get("vector_search", str, "exact")
    if value not in ("exact", "hnsw"):
        raise ConfigError(f"store.vector_search: expected 'exact' or 'hnsw', got {value!r}")
    return value


def _store(t: _Table) -> StoreSettings:
    """``[store]``: the SQLite keys and the PostgreSQL keys are read whichever backend is
    chosen (so switching is one line), the DSNs required only for ``postgres``."""
    backend = t.get("backend", str, "sqlite")
    if backend not in ("sqlite", "postgres"):
        raise ConfigError(
            f"store.backend: unsupported backend {backend!r} (supported: sqlite, postgres)"
        )
    d = StoreSettings()
    postgres = backend == "postgres"
    envs = {}
    for name in ("password_env", "writer_password_env"):
        envs[name] = t.get(name, str, getattr(d, name))
        if not _ENV_NAME.match(envs[name]):
            raise ConfigError(f"store.{name}: expected the name of an environment variable")
    store = StoreSettings(
        backend=backend,
        path=Path(t.get("path", str, "data/clearance.db")),
        busy_timeout_s=t.duration("busy_timeout", 60.0),
        dsn=_dsn(t, "dsn", postgres),
        writer_dsn=_dsn(t, "writer_dsn", postgres),
        password_env=envs["password_env"],
        writer_password_env=envs["writer_password_env"],
        pool_size=_positive(t, "pool_size", d.pool_size),
        vector_search=_vector_search(t),
        vector_exact_below=_positive(t, "vector_exact_below", d.vector_exact_below),
        hnsw_ef_search=_positive(t, "hnsw_ef_search", d.hnsw_ef_search),
        hnsw_max_scan_tuples=_positive(t, "hnsw_max_scan_tuples", d.hnsw_max_scan_tuples),
    )
    t.done()
    return store


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


def _parse(data: Mapping[str, Any], root: Path, source: Path | None) -> Settings:
    """The settings of ``data``, or one :class:`ConfigError` naming every problem found:
    the values read key by key are all checked; a check across keys (an assistant's corpus
    that is not configured …) stops the reading there."""
    errors: list[ConfigError] = []
    try:
        settings = _parse_tables(data, root, source, errors)
    except ConfigError as exc:
        errors.append(exc)
    if errors:
        problems = [p for e in errors for p in e.problems]
        raise ConfigError(problems[0], problems=problems)
    return settings


def _parse_tables(
    data: Mapping[str, Any], root: Path, source: Path | None, errors: list[ConfigError]
) -> Settings:
    top = _Table(dict(data), "", errors)

    store = _store(top.table("store"))

    t = top.table("sensitivity")
    patterns = t.strings("restricted_filename_patterns")
    sens = SensitivitySettings(
        default_level=t.sensitivity("default_level", Sensitivity.INTERNAL),
        restricted_filename_patterns=patterns,
        restricted_keywords=t.strings("restricted_keywords"),
        escalate_unknown_to_restricted=t.get("escalate_unknown_to_restricted", bool, False),
    )
    t.done()

    corpora: dict[str, CorpusSettings] = {}
    ct = top.table("corpora")
    for name in ct.data:
        c = ct.table(name)
        rt = c.table("realtime")
        realtime = RealtimeCheckSettings(
            url=rt.get("url", str, ""),
            timeout_s=rt.duration("timeout", 1.0),
            cache_ttl_s=rt.duration("cache_ttl", 30.0),
        )
        rt.done()
        corpus = CorpusSettings(
            name=name,
            description=c.get("description", str, ""),
            revocation_sla_s=c.duration("revocation_sla", 24 * 3600.0),
            realtime_check=c.get("realtime_check", bool, False),
            realtime=realtime,
            max_sensitivity=c.sensitivity("max_sensitivity", Sensitivity.CONFIDENTIAL),
            authority=c.get("authority", int, 0),
        )
        if corpus.realtime_check and not realtime.url:
            raise ConfigError(f"corpora.{name}.realtime.url: required when realtime_check = true")
        if corpus.realtime_check and realtime.cache_ttl_s > corpus.revocation_sla_s:
            raise ConfigError(
                f"corpora.{name}.realtime.cache_ttl: {realtime.cache_ttl_s:g}s exceeds the "
                f"corpus revocation_sla of {corpus.revocation_sla_s:g}s"
            )
        c.done()
        corpora[name] = corpus
    ct.done()

    assistants: dict[str, AssistantSettings] = {}
    at = top.table("assistants")
    for name in at.data:
        a = at.table(name)
        names = a.strings("corpora")
        for corpus_name in names:
            if corpus_name not in corpora:
                raise ConfigError(f"assistants.{name}.corpora: unknown corpus {corpus_name!r}")
        assistants[name] = AssistantSettings(
            name=name,
            corpora=names,
            max_sensitivity=a.sensitivity("max_sensitivity", Sensitivity.CONFIDENTIAL),
            description=a.get("description", str, ""),
            allow_entities=a.strings("allow_entities"),
        )
        a.done()
    at.done()

    sources = _sources(top.table("sources"), corpora)
    directories = _directories(top.table("directories"))

    t = top.table("access")
    access = AccessSettings(require_assistant=t.get("require_assistant", bool, False))
    if access.require_assistant and not assistants:
        raise ConfigError("access.require_assistant: no [assistants.NAME] is configured")
    t.done()

    t = top.table("embedding")
    provider = t.get("provider", str, "minilm")
    if provider not in ("minilm", "none"):
        raise ConfigError(f"embedding.provider: unknown provider {provider!r} (minilm, none)")
    embedding = EmbeddingSettings(
        provider=provider,
        batch_size=t.positive("batch_size", 32),
        max_tokens=t.positive("max_tokens", 256),
        persist_restricted=t.get("persist_restricted", bool, False),
    )
    t.done()

    t = top.table("ingest")
    ingest = IngestSettings(
        chunk_size=t.positive("chunk_size", 800),
        chunk_overlap=t.get("chunk_overlap", int, 120),
        default_corpus=t.get("default_corpus", str, "default"),
        default_source_system=t.get("default_source_system", str, "files"),
        roots=tuple((root / r).resolve() for r in _names(t, "roots")),
        follow_symlinks=t.get("follow_symlinks", bool, False),
        allow_unconfigured_corpora=t.get("allow_unconfigured_corpora", bool, False),
        max_file_mb=_positive_float(t, "max_file_mb", 100.0),
        max_uncompressed_mb=_positive_float(t, "max_uncompressed_mb", 256.0),
        max_rows=t.positive("max_rows", 100_000),
        file_time_budget_s=t.duration("file_time_budget", 300.0),
    )
    if ingest.file_time_budget_s <= 0:
        raise ConfigError("ingest.file_time_budget: must be longer than 0s")
    if not 0 <= ingest.chunk_overlap < ingest.chunk_size:
        raise ConfigError("ingest.chunk_overlap: must be >= 0 and smaller than chunk_size")
    t.done()

    t = top.table("retrieval")
    retrieval = RetrievalSettings(
        k=t.positive("k", 5),
        rrf_k=t.positive("rrf_k", 60),
        candidates=t.positive("candidates", 50),
        cjk_vector_weight=t.get("cjk_vector_weight", float, 0.0),
        synonyms=_synonyms(t.table("synonyms")),
    )
    if not 0.0 <= retrieval.cjk_vector_weight <= 1.0:
        raise ConfigError(
            f"retrieval.cjk_vector_weight: must be between 0 and 1, got {retrieval.cjk_vector_weight}"
        )
    t.done()

    t = top.table("llm")
    llm = LLMSettings(
        provider=t.get("provider", str, "extractive"),
        base_url=t.get("base_url", str, ""),
        model=t.get("model", str, ""),
        api_key_env=t.get("api_key_env", str, ""),
        timeout_s=t.duration("timeout_s", 30.0),
        max_retries=t.get("max_retries", int, 2),
    )
    t.done()

    t = top.table("trace")
    trace = TraceSettings(
        enabled=t.get("enabled", bool, True),
        retention_s=t.duration("retention", 30 * 86400.0),
        hmac_key_env=t.get("hmac_key_env", str, "CLEARANCE_TRACE_KEY"),
        question_text_corpora=_names(t, "question_text_corpora"),
    )
    t.done()

    trust = _trust(top.table("trust"))

    t = top.table("rerank")
    rerank = RerankSettings(
        provider=t.get("provider", str, ""), candidates=t.positive("candidates", 10)
    )
    t.done()

    t = top.table("scope")
    scope = ScopeSettings(entities=_alias_map(t.table("entities")))
    t.done()
    for assistant in assistants.values():
        for entity in assistant.allow_entities:
            if entity not in scope.entities:
                raise ConfigError(
                    f"assistants.{assistant.name}.allow_entities: {entity!r} is not an entity "
                    "of [scope.entities]"
                )

    facts = _facts(top.table("facts"))

    t = top.table("answer")
    defaults = AnswerSettings()
    answer = AnswerSettings(
        max_question_chars=t.positive("max_question_chars", defaults.max_question_chars),
        context_budget_tokens=t.positive("context_budget_tokens", defaults.context_budget_tokens),
        min_snippets=t.positive("min_snippets", defaults.min_snippets),
        relevance=_relevance(t.table("relevance")),
        no_source_message=t.get("no_source_message", str, defaults.no_source_message),
        unavailable_notice=t.get("unavailable_notice", str, defaults.unavailable_notice),
        degraded_message=t.get("degraded_message", str, defaults.degraded_message),
        inferred=t.get("inferred", str, defaults.inferred),
    )
    if answer.inferred not in INFERRED_MODES:
        raise ConfigError(
            f'{t.key("inferred")}: must be "drop" or "label", got {answer.inferred!r}'
        )
    t.done()

    t = top.table("server")
    server_defaults = ServerSettings()
    port = t.get("port", int, server_defaults.port)
    if not 0 < port < 65536:
        raise ConfigError(f"{t.key('port')}: must be between 1 and 65535, got {port}")
    request_timeout_s = t.duration("request_timeout", server_defaults.request_timeout_s)
    if request_timeout_s <= 0:
        raise ConfigError(f"{t.key('request_timeout')}: must be longer than 0")
    t.seen.add("rate_limit")
    rate_limit = (
        parse_rate(t.data["rate_limit"], t.key("rate_limit"))
        if "rate_limit" in t.data
        else server_defaults.rate_limit
    )
    t.seen.add("signin_rate_limit")
    signin_rate_limit = (
        parse_rate(t.data["signin_rate_limit"], t.key("signin_rate_limit"))
        if "signin_rate_limit" in t.data
        else server_defaults.signin_rate_limit
    )
    stream_idle_timeout_s = t.duration("stream_idle_timeout", server_defaults.stream_idle_timeout_s)
    if stream_idle_timeout_s <= 0:
        raise ConfigError(f"{t.key('stream_idle_timeout')}: must be longer than 0")
    server = ServerSettings(
        host=t.get("host", str, server_defaults.host),
        port=port,
        max_body_bytes=t.positive("max_body_bytes", server_defaults.max_body_bytes),
        oidc=_oidc(t.table("oidc"), root) if "oidc" in t.data else None,
        trusted_proxies=_networks(t, "trusted_proxies"),
        user_header=_header_name(t, "user_header", server_defaults.user_header),
        admin_groups=_names(t, "admin_groups"),
        request_timeout_s=request_timeout_s,
        rate_limit=rate_limit,
        signin_rate_limit=signin_rate_limit,
        stream_idle_timeout_s=stream_idle_timeout_s,
        streams_per_user=t.positive("streams_per_user", server_defaults.streams_per_user),
        metrics_public=t.get("metrics_public", bool, server_defaults.metrics_public),
        cors_origins=_origins(t, "cors_origins"),
        ui=t.get("ui", bool, server_defaults.ui),
        public_url=_public_url(t, "public_url"),
        session_lifetime_s=_session_lifetime(t),
        session_sweep_interval_s=_positive_duration(t, "session_sweep_interval", 3600.0),
    )
    t.done()

    top.done()
    return Settings(
        root=root,
        store=store,
        sensitivity=sens,
        corpora=corpora,
        assistants=assistants,
        access=access,
        embedding=embedding,
        ingest=ingest,
        retrieval=retrieval,
        llm=llm,
        trace=trace,
        trust=trust,
        rerank=rerank,
        scope=scope,
        facts=facts,
        answer=answer,
        server=server,
        sources=sources,
        directories=directories,
        source=source,
    )


_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _credentials(t: _Table) -> dict[str, str]:
    """``credentials``: role = the *name* of an environment variable, never a value."""
    credentials = t.table("credentials")
    roles: dict[str, str] = {}
    for role in list(credentials.data):
        variable = credentials.get(role, str, "")
        if not _ENV_NAME.match(variable):
            raise ConfigError(
                f"{credentials.key(role)}: expected the name of an environment variable "
                "(credentials are never written in the configuration)"
            )
        roles[role] = variable
    credentials.done()
    return roles


def _directories(table: _Table) -> dict[str, DirectorySourceSettings]:
    """``[directories.<name>]``. A directory source owns the whole directory (its snapshot
    replaces every user and group), so at most one may be configured: two would each remove
    the other's users on every sync."""
    out: dict[str, DirectorySourceSettings] = {}
    for name in list(table.data):
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", name):
            raise ConfigError(
                f"{table.key(name)}: a directory source name is 1-64 letters, digits, '.', "
                "'_' or '-'"
            )
        t = table.table(name)
        kind = t.get("kind", str, "")
        if not kind:
            raise ConfigError(f"{t.key('kind')}: required (entra, google, okta or ldap)")
        interval = t.duration("interval", 300.0)
        sla = t.duration("sla", 3600.0)
        for key, value in (("interval", interval), ("sla", sla)):
            if value <= 0:
                raise ConfigError(f"{t.key(key)}: must be longer than 0")
        if interval >= sla:
            raise ConfigError(
                f"{t.key('interval')}: {interval:g}s is not shorter than the directory sla of "
                f"{sla:g}s, so the directory would fail closed between two syncs"
            )
        roles = _credentials(t)
        options = t.table("options")
        options.seen.update(options.data)  # the reader's kind validates its own options
        out[name] = DirectorySourceSettings(
            name=name,
            kind=kind,
            interval_s=interval,
            sla_s=sla,
            credentials=roles,
            options=dict(options.data),
        )
        t.done()
    table.done()
    if len(out) > 1:
        raise ConfigError(
            f"directories: {', '.join(sorted(out))}: only one directory source may be "
            "configured (each owns the whole directory)"
        )
    return out


def _sources(table: _Table, corpora: Mapping[str, CorpusSettings]) -> dict[str, SourceSettings]:
    """``[sources.<name>]``. The corpus must be configured, and permissions must be synced
    more often than the corpus's revocation SLA, or the corpus would go stale between two
    healthy syncs."""
    out: dict[str, SourceSettings] = {}
    for name in list(table.data):
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", name):
            raise ConfigError(
                f"{table.key(name)}: a source name is 1-64 letters, digits, '.', '_' or '-'"
            )
        t = table.table(name)
        kind = t.get("kind", str, "")
        if not kind:
            raise ConfigError(f"{t.key('kind')}: required (e.g. 'filesystem')")
        corpus = t.get("corpus", str, "")
        if corpus not in corpora:
            known = ", ".join(repr(c) for c in sorted(corpora)) or "none"
            raise ConfigError(
                f"{t.key('corpus')}: {corpus!r} is not a configured corpus (configured: {known})"
            )
        sla = corpora[corpus].revocation_sla_s
        permission = t.duration("permission_interval", min(300.0, sla / 4))
        content = t.duration("content_interval", 3600.0)
        for key, value in (("permission_interval", permission), ("content_interval", content)):
            if value <= 0:
                raise ConfigError(f"{t.key(key)}: must be longer than 0")
        if permission >= sla:
            raise ConfigError(
                f"{t.key('permission_interval')}: {permission:g}s is not shorter than corpus "
                f"{corpus!r}'s revocation_sla of {sla:g}s, so it would go stale between syncs"
            )
        roles = _credentials(t)
        options = t.table("options")
        options.seen.update(options.data)  # the connector's kind validates its own options
        notification_url = _notification_url(t, name)
        out[name] = SourceSettings(
            name=name,
            kind=kind,
            corpus=corpus,
            content_interval_s=content,
            permission_interval_s=permission,
            max_concurrency=t.positive("max_concurrency", 4),
            credentials=roles,
            options=dict(options.data),
            notification_url=notification_url,
        )
        t.done()
    table.done()
    return out


def _notification_url(table: _Table, name: str) -> str | None:
    """``notification_url``: where the source must send notifications — HTTPS (a source
    system will not deliver to plain HTTP), or HTTP on a loopback host for a local proxy —
    ending in this source's own notification path."""
    value = table.get("notification_url", str, "")
    if not value:
        return None
    parts = urlsplit(value)
    loopback = parts.hostname in ("localhost", "127.0.0.1", "::1")
    if parts.scheme != "https" and not (parts.scheme == "http" and loopback):
        raise ConfigError(
            f"{table.key('notification_url')}: expected an https:// URL (http only on "
            f"localhost), got {value!r}"
        )
    path = f"/v1/sources/{name}/notifications"
    if parts.query or parts.fragment or not parts.path.endswith(path):
        raise ConfigError(
            f"{table.key('notification_url')}: must end in {path} (this source's "
            "notification endpoint), with no query"
        )
    return value


def _positive_float(table: _Table, name: str, default: float) -> float:
    value = table.get(name, float, default)
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{table.key(name)}: must be a positive number, got {value}")
    return value


def _oidc(table: _Table, root: Path) -> OidcSettings:
    """``[server.oidc]``; a relative JWKS file path is relative to the config file."""
    oidc = parse_oidc_settings(table.data, table.path)
    if oidc.jwks_is_url or Path(oidc.jwks).is_absolute():
        return oidc
    return dataclasses.replace(oidc, jwks=str(root / oidc.jwks))


def _networks(
    table: _Table, name: str
) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    """Addresses (``10.0.0.5``) and networks (``10.0.0.0/8``) as networks."""
    networks = []
    for value in table.strings(name):
        try:
            networks.append(ipaddress.ip_network(value.strip(), strict=True))
        except ValueError as exc:
            raise ConfigError(f"{table.key(name)}: {exc}") from None
    return tuple(networks)


def _origins(table: _Table, name: str) -> tuple[str, ...]:
    """Browser origins (``https://app.example.com``): scheme, host and optional port only."""
    origins = []
    for value in table.strings(name):
        parts = urlsplit(value)
        if (
            parts.scheme not in ("http", "https")
            or not parts.hostname
            or parts.path not in ("", "/")
            or parts.query
            or parts.fragment
            or parts.username
        ):
            raise ConfigError(
                f"{table.key(name)}: {value!r} is not an origin like 'https://app.example.com'"
            )
        origins.append(f"{parts.scheme}://{parts.netloc}")
    return tuple(dict.fromkeys(origins))


def _public_url(table: _Table, name: str) -> str | None:
    if name not in table.data:
        table.seen.add(name)
        return None
    value = table.get(name, str, "")
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query:
        raise ConfigError(
            f"{table.key(name)}: {value!r} is not a URL like 'https://clearance.example.com'"
        )
    return value.rstrip("/")


def _positive_duration(table: _Table, name: str, default: float) -> float:
    value = table.duration(name, default)
    if value <= 0:
        raise ConfigError(f"{table.key(name)}: must be longer than 0")
    return value


def _session_lifetime(table: _Table) -> float:
    lifetime = table.duration("session_lifetime", ServerSettings().session_lifetime_s)
    if lifetime <= 0:
        raise ConfigError(f"{table.key('session_lifetime')}: must be longer than 0")
    return lifetime


_HEADER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*")


def _header_name(table: _Table, name: str, default: str) -> str:
    value = table.get(name, str, default)
    if not _HEADER_NAME.fullmatch(value) or value.lower() in ("authorization", "cookie", "host"):
        raise ConfigError(f"{table.key(name)}: {value!r} is not a usable header name")
    return value


def _names(table: _Table, name: str) -> tuple[str, ...]:
    """A list of non-empty names, stripped, without repeats."""
    values = table.strings(name)
    if any(not v.strip() for v in values):
        raise ConfigError(f"{table.key(name)}: names must not be empty")
    return tuple(dict.fromkeys(v.strip() for v in values))


def _trust(table: _Table) -> TrustSettings:
    """``[trust.origins]`` (origin → trusted / medium / untrusted, over the built-in
    mapping) and ``[trust.source_origins]`` (source system → a known origin)."""
    origins = _default_origins()
    ot = table.table("origins")
    seen: dict[str, str] = {}
    for name in list(ot.data):
        origin = name.strip().lower()
        if not origin:
            raise ConfigError(f"{ot.key(name)}: empty origin name")
        if origin in seen:
            raise ConfigError(f"{ot.key(name)}: the same origin as {ot.key(seen[origin])}")
        seen[origin] = name
        raw = ot.get(name, str, "")
        try:
            origins[origin] = Trust[raw.strip().upper()]
        except KeyError:
            raise ConfigError(
                f"{ot.key(name)}: expected 'trusted', 'medium' or 'untrusted', got {raw!r}"
            ) from None
    ot.done()
    st = table.table("source_origins")
    source_origins: dict[str, str] = {}
    for name in list(st.data):
        system = name.strip().lower()
        if not system:
            raise ConfigError(f"{st.key(name)}: empty source system name")
        if system in source_origins:
            raise ConfigError(f"{st.key(name)}: source system {system!r} is given twice")
        raw = st.get(name, str, "")
        origin = raw.strip().lower()
        if origin not in origins:
            raise ConfigError(
                f"{st.key(name)}: unknown origin {raw!r} (known: {', '.join(sorted(origins))}; "
                "add it to [trust.origins] first)"
            )
        source_origins[system] = origin
    st.done()
    table.done()
    return TrustSettings(origins=origins, source_origins=source_origins)


def _alias_map(table: _Table) -> dict[str, tuple[str, ...]]:
    """``name = ["alias", …]`` pairs; the canonical name is always one of its aliases."""
    out: dict[str, tuple[str, ...]] = {}
    for name in list(table.data):
        aliases = table.strings(name)
        if not name.strip():
            raise ConfigError(f"{table.key(name)}: empty name")
        out[name] = tuple(dict.fromkeys([name, *(a for a in aliases if a.strip())]))
    table.done()
    return out


def _synonyms(table: _Table) -> tuple[tuple[str, ...], ...]:
    """``phrase = ["equivalent", …]``: each phrase must hold a word that can be searched."""
    groups = _alias_map(table)
    for name, group in groups.items():
        if len(group) < 2:
            raise ConfigError(f"{table.key(name)}: name at least one equivalent phrase")
        for phrase in group:
            if not search_terms(phrase):
                raise ConfigError(
                    f"{table.key(name)}: {phrase!r} holds no word to search for "
                    "(only stopwords, punctuation or spaces)"
                )
    return tuple(groups.values())


def settings_from_dict(data: Mapping[str, Any], root: Path | None = None) -> Settings:
    """Validate settings given as a mapping (what ``tomllib`` would return)."""
    return _parse(data, (root or Path.cwd()).resolve(), None)


def find_config(explicit: Path | None = None, env: Mapping[str, str] | None = None) -> Path:
    """Apply the lookup contract of the module docstring; the file need not exist."""
    if explicit is not None:
        return explicit
    environ = os.environ if env is None else env
    home = environ.get(HOME_ENV)
    if home:
        return Path(home) / CONFIG_NAME
    return Path.cwd() / CONFIG_NAME


def load_settings(explicit: Path | None = None, env: Mapping[str, str] | None = None) -> Settings:
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
