"""Service metrics and the access log (docs/design.md §8: logs that do not leak twice).

One ASGI middleware, :class:`RequestObserver`, times every HTTP request once and feeds both:

- **Prometheus metrics** in a registry of their own per app (never the process-global default
  registry, so several apps in one process do not collide), served at ``GET /metrics``.
- **The access log**: one line per request on the ``clearance.access`` logger, replacing
  uvicorn's (which prints client addresses and full paths, query strings included).

What they may carry is fixed here, and nothing else: the method, the route *template*
(``/v1/documents/{doc_id}``, never the concrete path, which would carry a document id),
the status, durations, answer-stage names, refusal codes, corpus names — and in the access
log only, the trace id and the user's keyed pseudonym (:meth:`Clearance.pseudonym`, the
one traces use). Never a user id, a token, a query string, a body, a question or an answer.

Per-stage answer timings come from the trace record the engine hands its
``trace_listeners``; the ACL age per corpus is computed when scraped.
"""

from __future__ import annotations

import contextvars
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.responses import Response
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from clearance.app import Clearance
from clearance.errors import ClearanceError
from clearance.trace.record import TraceRecord

__all__ = [
    "ACCESS_LOGGER",
    "UNMATCHED",
    "Metrics",
    "RequestObserver",
    "install",
    "route_template",
    "serve_log_config",
]

#: The access log's logger name.
ACCESS_LOGGER = "clearance.access"

#: The route label of a request no route matched: its path is the caller's to choose,
#: so it is never a label (unbounded, and it may carry an id).
UNMATCHED = "unmatched"

access_log = logging.getLogger(ACCESS_LOGGER)

#: Answer latencies from a cache hit to a slow model: milliseconds to a minute.
_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


def route_template(scope: Scope) -> str:
    """The matched route's path template without converters (``/v1/documents/{doc_id}``),
    or :data:`UNMATCHED`."""
    route = scope.get("route")
    template = getattr(route, "path_format", None)
    return template if isinstance(template, str) else UNMATCHED


@dataclass(slots=True)
class _Seen:
    """What the request's handlers report back to the observer (through a context
    variable: the sync routes run in a worker thread with a copy of the context)."""

    trace_id: str | None = None


_current: contextvars.ContextVar[_Seen | None] = contextvars.ContextVar(
    "clearance_request", default=None
)


class _AclAge(Collector):
    """Seconds since each corpus's last ACL sync, and whether it serves, read when scraped."""

    def __init__(self, engine: Clearance) -> None:
        self.engine = engine

    def describe(self) -> list[Metric]:  # registering must not touch the index
        return list(self._families())

    def _families(self) -> tuple[GaugeMetricFamily, GaugeMetricFamily]:
        age = GaugeMetricFamily(
            "clearance_corpus_acl_age_seconds",
            "Seconds since the corpus's last ACL sync (absent: never synced)",
            labels=["corpus"],
        )
        serving = GaugeMetricFamily(
            "clearance_corpus_serving",
            "1 while the corpus is within its revocation SLA, 0 while it fails closed",
            labels=["corpus"],
        )
        return age, serving

    def collect(self) -> Iterator[Metric]:
        age, serving = self._families()
        try:
            corpora = self.engine.corpus_status()
        except ClearanceError:
            return  # the index is unreadable: /readyz says so; no made-up numbers here
        now = self.engine.clock()
        for corpus in corpora:
            name = corpus["corpus"]
            serving.add_metric([name], 0.0 if corpus["failing_closed"] else 1.0)
            if corpus["last_acl_sync"] is not None:
                last = datetime.fromisoformat(corpus["last_acl_sync"])
                if last.tzinfo is None:
                    last = last.replace(tzinfo=UTC)
                age.add_metric([name], max(0.0, (now - last).total_seconds()))
        yield age
        yield serving


class Metrics:
    """The metrics of one app, in their own registry."""

    def __init__(self, engine: Clearance) -> None:
        self.engine = engine
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "clearance_http_requests",
            "HTTP requests by method, route template and status",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "clearance_http_request_duration_seconds",
            "HTTP request duration by method and route template",
            ["method", "route"],
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.stages = Histogram(
            "clearance_answer_stage_duration_seconds",
            "Answer latency per stage, from the trace record (stage 'total' is the whole answer)",
            ["stage"],
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.answers = Counter(
            "clearance_answers",
            "Answers by status: 'answered' or the refusal reason",
            ["status"],
            registry=self.registry,
        )
        self.refusals = Counter(
            "clearance_refusals",
            "Answers that were refusals, by reason (the answer status)",
            ["reason"],
            registry=self.registry,
        )
        self.registry.register(_AclAge(engine))

    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        self.requests.labels(method, route, str(status)).inc()
        self.latency.labels(method, route).observe(seconds)

    def observe_trace(self, record: TraceRecord) -> None:
        """A trace listener: stage timings and the outcome — codes and numbers only."""
        for stage, ms in record.latency_ms.items():
            self.stages.labels(stage).observe(ms / 1000)
        if record.status:
            self.answers.labels(record.status).inc()
            if record.status != "answered":
                self.refusals.labels(record.status).inc()
        seen = _current.get()
        if seen is not None:
            seen.trace_id = record.trace_id


@dataclass(eq=False)
class RequestObserver:
    """Times each HTTP request, counts it, and writes its access-log line.

    The user is whoever the route's sign-in put in ``request.state.user_id``; the line
    carries that user's pseudonym only. Unauthenticated requests log ``user=-``."""

    app: ASGIApp
    metrics: Metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state: dict[str, Any] = scope.setdefault("state", {})
        seen = _Seen()
        token = _current.set(seen)
        status = 500  # what the client gets if the app raises before answering
        started = time.perf_counter()

        async def observe(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, observe)
        finally:
            _current.reset(token)
            seconds = time.perf_counter() - started
            method = str(scope.get("method", ""))
            route = route_template(scope)
            self.metrics.observe_request(method, route, status, seconds)
            user_id = state.get("user_id")
            user = self.metrics.engine.pseudonym(user_id) if isinstance(user_id, str) else "-"
            access_log.info(
                "%s %s %d %.1fms trace=%s user=%s",
                method,
                route,
                status,
                seconds * 1000,
                seen.trace_id or "-",
                user,
            )


def install(app: FastAPI, engine: Clearance, *, public: bool, admin: Callable[..., Any]) -> None:
    """Metrics and the access log for ``app``: ``GET /metrics`` (for administrators, through
    the ``admin`` dependency, unless ``public``; left out of the OpenAPI schema) and the
    observing middleware, added outermost so it sees every response, 413s included."""
    metrics = Metrics(engine)
    engine.trace_listeners.append(metrics.observe_trace)
    app.state.metrics = metrics
    guard = [] if public else [Depends(admin)]

    @app.get("/metrics", include_in_schema=False, dependencies=guard)
    def scrape(_: Request) -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    app.add_middleware(RequestObserver, metrics=metrics)


def serve_log_config(base: dict[str, Any]) -> dict[str, Any]:
    """uvicorn's logging configuration ``base`` with the ``clearance.access`` logger writing
    to stderr beside uvicorn's own, for ``clearance serve`` (whose uvicorn access log is off)."""
    config = {**base}
    config["formatters"] = {
        **base.get("formatters", {}),
        "clearance_access": {"format": "%(asctime)s %(name)s %(message)s"},
    }
    config["handlers"] = {
        **base.get("handlers", {}),
        "clearance_access": {
            "class": "logging.StreamHandler",
            "formatter": "clearance_access",
            "stream": "ext://sys.stderr",
        },
    }
    config["loggers"] = {
        **base.get("loggers", {}),
        ACCESS_LOGGER: {"handlers": ["clearance_access"], "level": "INFO", "propagate": False},
    }
    return config
