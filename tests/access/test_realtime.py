"""Stage 8 — real-time permission checks fail closed (docs/design.md §1, §7, invariant 5).

HTTP behaviour is tested against a real server on loopback (``loopback.py``), not a mocked
transport, so timeouts, refused connections and trickled bodies are the real thing.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import httpx
import pytest

from clearance.access.realtime import (
    CachedPermissionChecker,
    FakePermissionChecker,
    HttpPermissionChecker,
    PermissionChecker,
    RealtimeOutcome,
    RealtimeResult,
    checker_for_corpus,
    filter_allowed,
)
from clearance.config import CorpusSettings, RealtimeCheckSettings, settings_from_dict
from clearance.errors import ConfigError

from .loopback import LoopbackServer, Reply, closed_port_url

TIMEOUT_S = 0.2  # for the tests that provoke a timeout
REPLY_TIMEOUT_S = (
    5.0  # for every other test: a loaded CI machine must not turn replies into timeouts
)
HANG_S = 1.5  # longer than the client timeout, bounded, and cut short at server shutdown

ALLOWED = RealtimeOutcome.ALLOWED
DENIED = RealtimeOutcome.DENIED
ERROR = RealtimeOutcome.ERROR


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as srv:
        yield srv


@pytest.fixture
def checker(server: LoopbackServer) -> Iterator[HttpPermissionChecker]:
    with HttpPermissionChecker(server.url, timeout_s=REPLY_TIMEOUT_S) as chk:
        yield chk


@pytest.fixture
def impatient_checker(server: LoopbackServer) -> Iterator[HttpPermissionChecker]:
    with HttpPermissionChecker(server.url, timeout_s=TIMEOUT_S) as chk:
        yield chk


def outcomes(results: Mapping[str, RealtimeResult]) -> dict[str, tuple[RealtimeOutcome, str]]:
    return {doc: (r.outcome, r.reason) for doc, r in results.items()}


class _Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


# --------------------------------------------------------------------------- HTTP checker


def test_allow_all_and_exact_wire_format(
    server: LoopbackServer, checker: HttpPermissionChecker
) -> None:
    results = checker.check("alice", ["wiki:1", "wiki:2", "wiki:1"])

    assert outcomes(results) == {
        "wiki:1": (ALLOWED, "allowed"),
        "wiki:2": (ALLOWED, "allowed"),
    }
    [request] = server.requests
    assert request.method == "POST"
    assert request.path == "/check"
    assert request.headers["content-type"] == "application/json"
    assert request.json == {"user": "alice", "doc_ids": ["wiki:1", "wiki:2"]}


def test_deny_listed_docs(server: LoopbackServer, checker: HttpPermissionChecker) -> None:
    server.deny("wiki:2")
    assert outcomes(checker.check("alice", ["wiki:1", "wiki:2"])) == {
        "wiki:1": (ALLOWED, "allowed"),
        "wiki:2": (DENIED, "denied"),
    }


@pytest.mark.parametrize("status", [500, 503, 404, 401, 204, 302])
def test_non_200_drops_every_doc_with_status_reason(
    server: LoopbackServer, checker: HttpPermissionChecker, status: int
) -> None:
    if status == 302:
        # A redirect is never followed, even to a server that would say "allowed".
        server.respond_with(
            lambda r: Reply(status=302, headers=(("Location", server.url),), body=b"")
        )
    else:
        server.fail(status)
    results = checker.check("alice", ["wiki:1", "wiki:2"])
    assert outcomes(results) == {
        "wiki:1": (ERROR, f"http_{status}"),
        "wiki:2": (ERROR, f"http_{status}"),
    }
    assert server.request_count == 1


def test_hang_past_timeout_drops_quickly(
    server: LoopbackServer, impatient_checker: HttpPermissionChecker
) -> None:
    server.hang(HANG_S)
    started = time.monotonic()
    results = impatient_checker.check("alice", ["wiki:1"])
    elapsed = time.monotonic() - started

    assert outcomes(results) == {"wiki:1": (ERROR, "timeout")}
    assert elapsed < HANG_S / 2


def test_trickled_reply_past_the_deadline_is_a_timeout(
    server: LoopbackServer, impatient_checker: HttpPermissionChecker
) -> None:
    # Every single read is faster than the per-read timeout; only the whole-exchange deadline
    # notices that the answer took longer than timeout_s. Without it this would be "allowed".
    server.trickle(chunk_delay_s=TIMEOUT_S / 4, padding=40)
    started = time.monotonic()
    results = impatient_checker.check("alice", ["wiki:1"])
    elapsed = time.monotonic() - started

    assert outcomes(results) == {"wiki:1": (ERROR, "timeout")}
    assert elapsed < 3 * TIMEOUT_S


def test_garbage_bytes_are_malformed(
    server: LoopbackServer, checker: HttpPermissionChecker
) -> None:
    server.garbage()
    assert outcomes(checker.check("alice", ["wiki:1", "wiki:2"])) == {
        "wiki:1": (ERROR, "malformed_reply"),
        "wiki:2": (ERROR, "malformed_reply"),
    }


@pytest.mark.parametrize(
    "payload",
    [
        None,
        "allowed",
        [True],
        {},
        {"decision": {"wiki:1": True}},
        {"decisions": [["wiki:1", True]]},
        {"decisions": ["wiki:1"]},
        {"decisions": "wiki:1"},
        {"decisions": None},
    ],
    ids=repr,
)
def test_wrong_shape_is_malformed(
    server: LoopbackServer, checker: HttpPermissionChecker, payload: Any
) -> None:
    server.reply_json(payload)
    assert outcomes(checker.check("alice", ["wiki:1"])) == {"wiki:1": (ERROR, "malformed_reply")}


@pytest.mark.parametrize("value", [1, 0, "true", "false", None, [], {}, "yes"], ids=repr)
def test_non_boolean_value_is_an_error_for_that_doc_only(
    server: LoopbackServer, checker: HttpPermissionChecker, value: Any
) -> None:
    server.decide({"wiki:1": value, "wiki:2": True, "wiki:3": False})
    assert outcomes(checker.check("alice", ["wiki:1", "wiki:2", "wiki:3"])) == {
        "wiki:1": (ERROR, "malformed_reply"),
        "wiki:2": (ALLOWED, "allowed"),
        "wiki:3": (DENIED, "denied"),
    }


def test_duplicate_keys_make_the_whole_reply_malformed(
    server: LoopbackServer, checker: HttpPermissionChecker
) -> None:
    server.reply_raw(b'{"decisions": {"wiki:1": false, "wiki:1": true}}')
    assert outcomes(checker.check("alice", ["wiki:1"])) == {"wiki:1": (ERROR, "malformed_reply")}


def test_missing_doc_is_an_error_and_extra_keys_are_ignored(
    server: LoopbackServer, checker: HttpPermissionChecker
) -> None:
    server.decide({"wiki:1": True, "wiki:99": True}, extra=[("note", "ignored")])
    assert outcomes(checker.check("alice", ["wiki:1", "wiki:2"])) == {
        "wiki:1": (ALLOWED, "allowed"),
        "wiki:2": (ERROR, "missing_from_reply"),
    }
    assert server.requests[0].json["doc_ids"] == ["wiki:1", "wiki:2"]


def test_omitted_doc_is_missing_from_reply(
    server: LoopbackServer, checker: HttpPermissionChecker
) -> None:
    server.omit("wiki:2")
    assert outcomes(checker.check("alice", ["wiki:1", "wiki:2"])) == {
        "wiki:1": (ALLOWED, "allowed"),
        "wiki:2": (ERROR, "missing_from_reply"),
    }


def test_connection_refused_is_a_connection_error() -> None:
    with HttpPermissionChecker(closed_port_url(), timeout_s=TIMEOUT_S) as chk:
        results = chk.check("alice", ["wiki:1", "wiki:2"])
    assert outcomes(results) == {
        "wiki:1": (ERROR, "connection_error"),
        "wiki:2": (ERROR, "connection_error"),
    }


def test_oversized_and_compressed_replies_are_refused(
    server: LoopbackServer, checker: HttpPermissionChecker
) -> None:
    big = json.dumps({"decisions": {"wiki:1": True}}).encode() + b" " * (
        HttpPermissionChecker.MAX_REPLY_BYTES + 1
    )
    server.reply_raw(big)
    assert outcomes(checker.check("alice", ["wiki:1"])) == {"wiki:1": (ERROR, "reply_too_large")}

    server.reply_raw(b"\x1f\x8b...", headers=(("Content-Encoding", "gzip"),))
    assert outcomes(checker.check("alice", ["wiki:1"])) == {"wiki:1": (ERROR, "malformed_reply")}
    assert server.requests[-1].headers["accept-encoding"] == "identity"


def test_no_doc_ids_sends_no_request(
    server: LoopbackServer, checker: HttpPermissionChecker
) -> None:
    assert checker.check("alice", []) == {}
    assert server.request_count == 0


def test_every_drop_is_logged_with_user_and_doc(
    server: LoopbackServer, checker: HttpPermissionChecker, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="clearance.access.realtime")
    server.deny("wiki:2")
    checker.check("alice", ["wiki:1", "wiki:2"])
    server.fail(500)
    checker.check("bob", ["wiki:3"])

    messages = [r.getMessage() for r in caplog.records if r.name == "clearance.access.realtime"]
    assert any("denied" in m and "user=alice" in m and "doc=wiki:2" in m for m in messages)
    assert any("error" in m and "user=bob" in m and "doc=wiki:3" in m for m in messages)
    assert any("http_500" in m for m in messages)
    assert not any("wiki:1" in m for m in messages)  # allowed docs are not logged as drops


def test_passed_in_client_is_used_and_left_open() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"decisions": {"wiki:1": True}})

    with httpx.Client(transport=httpx.MockTransport(handler)) as client:
        chk = HttpPermissionChecker("http://perms.example/check", client=client)
        assert outcomes(chk.check("alice", ["wiki:1"])) == {"wiki:1": (ALLOWED, "allowed")}
        chk.close()
        assert not client.is_closed
    assert json.loads(seen[0].content) == {"user": "alice", "doc_ids": ["wiki:1"]}


@pytest.mark.parametrize("url", ["", "ftp://x/check", "/relative", "http://"])
def test_bad_url_is_a_config_error(url: str) -> None:
    with pytest.raises(ConfigError, match=r"realtime\.url"):
        HttpPermissionChecker(url)


@pytest.mark.parametrize("timeout_s", [0, -1, float("nan"), float("inf")])
def test_bad_timeout_is_a_config_error(timeout_s: float) -> None:
    with pytest.raises(ConfigError, match=r"realtime\.timeout"):
        HttpPermissionChecker("http://127.0.0.1:1/check", timeout_s=timeout_s)


# --------------------------------------------------------------------------- cache


def test_cache_hit_avoids_a_second_request(
    server: LoopbackServer, checker: HttpPermissionChecker
) -> None:
    server.deny("wiki:2")
    cached = CachedPermissionChecker(checker, ttl_s=30, sla_s=60, clock=_Clock())
    first = cached.check("alice", ["wiki:1", "wiki:2"])
    second = cached.check("alice", ["wiki:1", "wiki:2"])

    assert (
        outcomes(first)
        == outcomes(second)
        == {
            "wiki:1": (ALLOWED, "allowed"),
            "wiki:2": (DENIED, "denied"),  # denials are cached too
        }
    )
    assert server.request_count == 1


def test_only_uncached_ids_are_sent_in_one_call(server: LoopbackServer) -> None:
    with CachedPermissionChecker(
        HttpPermissionChecker(server.url, timeout_s=REPLY_TIMEOUT_S),
        ttl_s=30,
        sla_s=60,
        clock=_Clock(),
    ) as cached:
        cached.check("alice", ["wiki:1"])
        results = cached.check("alice", ["wiki:2", "wiki:1", "wiki:3"])

    assert list(results) == ["wiki:2", "wiki:1", "wiki:3"]
    assert [r.json["doc_ids"] for r in server.requests] == [["wiki:1"], ["wiki:2", "wiki:3"]]


def test_cache_is_per_user() -> None:
    fake = FakePermissionChecker({("alice", "wiki:1"): True})
    cached = CachedPermissionChecker(fake, ttl_s=30, sla_s=60, clock=_Clock())
    assert cached.check("alice", ["wiki:1"])["wiki:1"].allowed
    assert not cached.check("bob", ["wiki:1"])["wiki:1"].allowed
    assert fake.calls == [("alice", ("wiki:1",)), ("bob", ("wiki:1",))]


def test_errors_are_not_cached(server: LoopbackServer, checker: HttpPermissionChecker) -> None:
    cached = CachedPermissionChecker(checker, ttl_s=30, sla_s=60, clock=_Clock())
    server.fail(500)
    assert outcomes(cached.check("alice", ["wiki:1"])) == {"wiki:1": (ERROR, "http_500")}
    server.allow_all()
    assert outcomes(cached.check("alice", ["wiki:1"])) == {"wiki:1": (ALLOWED, "allowed")}
    assert server.request_count == 2
    assert len(cached) == 1


def test_ttl_expiry_with_injected_clock(
    server: LoopbackServer, checker: HttpPermissionChecker
) -> None:
    clock = _Clock()
    cached = CachedPermissionChecker(checker, ttl_s=30, sla_s=60, clock=clock)
    cached.check("alice", ["wiki:1"])
    clock.now += 29.999
    cached.check("alice", ["wiki:1"])
    assert server.request_count == 1

    server.deny("wiki:1")  # revoked at the source
    clock.now += 0.001  # exactly ttl after the question: expired
    assert outcomes(cached.check("alice", ["wiki:1"])) == {"wiki:1": (DENIED, "denied")}
    assert server.request_count == 2


def test_ttl_is_measured_from_before_the_question() -> None:
    clock = _Clock()

    class SlowFake(FakePermissionChecker):
        def check(self, user_id: str, doc_ids: Sequence[str]) -> dict[str, RealtimeResult]:
            clock.now += 10  # the source system took 10 s to answer
            return super().check(user_id, doc_ids)

    fake = SlowFake({("alice", "wiki:1"): True})
    cached = CachedPermissionChecker(fake, ttl_s=30, sla_s=60, clock=clock)
    cached.check("alice", ["wiki:1"])
    clock.now += 20  # 30 s after the question was asked, 20 s after the answer arrived
    cached.check("alice", ["wiki:1"])
    assert len(fake.calls) == 2  # asked again: the answer's age counts from the question


def test_clock_going_backwards_does_not_extend_an_entry() -> None:
    clock = _Clock()
    fake = FakePermissionChecker({("alice", "wiki:1"): True})
    cached = CachedPermissionChecker(fake, ttl_s=30, sla_s=60, clock=clock)
    cached.check("alice", ["wiki:1"])
    clock.now -= 5
    cached.check("alice", ["wiki:1"])
    assert len(fake.calls) == 2


def test_cache_is_bounded_lru() -> None:
    fake = FakePermissionChecker({("u", d): True for d in "abc"})
    cached = CachedPermissionChecker(fake, ttl_s=30, sla_s=60, clock=_Clock(), max_entries=2)
    cached.check("u", ["a"])
    cached.check("u", ["b"])
    cached.check("u", ["a"])  # a is now most recently used
    cached.check("u", ["c"])  # evicts b
    assert len(cached) == 2
    fake.calls.clear()
    cached.check("u", ["a", "b", "c"])
    assert fake.calls == [("u", ("b",))]


def test_ttl_zero_disables_caching() -> None:
    fake = FakePermissionChecker({("u", "a"): True})
    cached = CachedPermissionChecker(fake, ttl_s=0, sla_s=60)
    cached.check("u", ["a"])
    cached.check("u", ["a"])
    assert len(fake.calls) == 2


def test_inner_checker_missing_entries_become_errors() -> None:
    class Forgetful:
        def check(self, user_id: str, doc_ids: Sequence[str]) -> Mapping[str, RealtimeResult]:
            return {"a": RealtimeResult.allow()}

    cached = CachedPermissionChecker(Forgetful(), ttl_s=30, sla_s=60, clock=_Clock())
    assert outcomes(cached.check("u", ["a", "b"])) == {
        "a": (ALLOWED, "allowed"),
        "b": (ERROR, "missing_from_checker"),
    }
    assert len(cached) == 1


def test_ttl_longer_than_sla_is_rejected() -> None:
    fake = FakePermissionChecker()
    with pytest.raises(ConfigError, match="revocation_sla"):
        CachedPermissionChecker(fake, ttl_s=61, sla_s=60)
    with pytest.raises(ConfigError):
        CachedPermissionChecker(fake, ttl_s=-1, sla_s=60)
    with pytest.raises(ConfigError):
        CachedPermissionChecker(fake, ttl_s=float("nan"), sla_s=60)
    with pytest.raises(ConfigError, match="max_entries"):
        CachedPermissionChecker(fake, ttl_s=1, sla_s=60, max_entries=0)
    CachedPermissionChecker(fake, ttl_s=60, sla_s=60)  # equal is fine


# --------------------------------------------------------------------------- fake


def test_fake_is_scriptable_and_records_calls() -> None:
    fake = FakePermissionChecker({("alice", "a"): True, ("alice", "b"): False}, errors={"c"})
    assert outcomes(fake.check("alice", ["a", "b", "c", "d"])) == {
        "a": (ALLOWED, "allowed"),
        "b": (DENIED, "denied"),
        "c": (ERROR, "connection_error"),
        "d": (DENIED, "denied"),  # unscripted: default deny
    }
    assert fake.calls == [("alice", ("a", "b", "c", "d"))]


# --------------------------------------------------------------------------- filter_allowed


def test_filter_allowed_keeps_input_order_and_reports_reasons() -> None:
    fake = FakePermissionChecker(
        {("alice", "d3"): True, ("alice", "d1"): True, ("alice", "d2"): False}, errors={"d4"}
    )
    allowed, dropped = filter_allowed(fake, "alice", ["d3", "d2", "d4", "d1", "d3"])
    assert allowed == ["d3", "d1"]
    assert outcomes(dropped) == {"d2": (DENIED, "denied"), "d4": (ERROR, "connection_error")}


def test_filter_allowed_with_a_raising_checker_drops_all(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Exploding:
        def check(self, user_id: str, doc_ids: Sequence[str]) -> Mapping[str, RealtimeResult]:
            raise RuntimeError("third-party bug")

    allowed, dropped = filter_allowed(Exploding(), "alice", ["d1", "d2"])
    assert allowed == []
    assert outcomes(dropped) == {
        "d1": (ERROR, "checker_exception"),
        "d2": (ERROR, "checker_exception"),
    }
    [logged] = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert logged.name == "clearance.access.realtime"
    assert logged.exc_info is not None  # not swallowed silently


def test_filter_allowed_survives_a_checker_breaking_the_contract() -> None:
    class Sloppy:
        def check(self, user_id: str, doc_ids: Sequence[str]) -> Any:
            return {"d1": RealtimeResult.allow(), "d2": True, "d3": "allowed"}

    class NotAMapping:
        def check(self, user_id: str, doc_ids: Sequence[str]) -> Any:
            return ["d1"]

    allowed, dropped = filter_allowed(Sloppy(), "alice", ["d1", "d2", "d3", "d4"])
    assert allowed == ["d1"]
    assert {d: r.reason for d, r in dropped.items()} == dict.fromkeys(
        ["d2", "d3", "d4"], "missing_from_checker"
    )
    allowed, dropped = filter_allowed(NotAMapping(), "alice", ["d1"])
    assert allowed == []
    assert dropped["d1"].reason == "checker_exception"


def test_filter_allowed_of_nothing_asks_nothing() -> None:
    fake = FakePermissionChecker()
    assert filter_allowed(fake, "alice", []) == ([], {})
    assert fake.calls == []


# --------------------------------------------------------------------------- checker_for_corpus


def test_checker_for_corpus_off_is_none() -> None:
    assert checker_for_corpus(CorpusSettings(name="docs")) is None


def test_checker_for_corpus_builds_a_working_cached_http_checker(server: LoopbackServer) -> None:
    settings = settings_from_dict(
        {
            "corpora": {
                "hr": {
                    "revocation_sla": "5m",
                    "realtime_check": True,
                    "realtime": {"url": server.url, "timeout": "200ms", "cache_ttl": "30s"},
                }
            }
        }
    )
    server.deny("hr:2")
    checker = checker_for_corpus(settings.corpus("hr"), clock=_Clock())
    assert checker is not None
    with checker:
        assert checker.ttl_s == 30 and checker.sla_s == 300
        assert filter_allowed(checker, "alice", ["hr:1", "hr:2"])[0] == ["hr:1"]
        assert filter_allowed(checker, "alice", ["hr:1", "hr:2"])[0] == ["hr:1"]
    assert server.request_count == 1


def test_checker_for_corpus_rejects_bad_settings() -> None:
    too_long = CorpusSettings(
        name="hr",
        revocation_sla_s=10,
        realtime_check=True,
        realtime=RealtimeCheckSettings(url="http://127.0.0.1:1/check", cache_ttl_s=30),
    )
    with pytest.raises(ConfigError, match=r"corpora\.hr\.realtime\.cache_ttl"):
        checker_for_corpus(too_long)
    no_url = CorpusSettings(name="hr", realtime_check=True)
    with pytest.raises(ConfigError, match=r"corpora\.hr\.realtime\.url"):
        checker_for_corpus(no_url)


# --------------------------------------------------------------------------- invariant 5


class _FailOpenChecker:
    """DELIBERATELY LEAKY: turns every ERROR into ALLOWED, only to prove the test has teeth."""

    def __init__(self, inner: HttpPermissionChecker) -> None:
        self.inner = inner

    def check(self, user_id: str, doc_ids: Sequence[str]) -> Mapping[str, RealtimeResult]:
        return {
            doc: RealtimeResult.allow() if r.outcome is ERROR else r
            for doc, r in self.inner.check(user_id, doc_ids).items()
        }

    def close(self) -> None:
        self.inner.close()


# (scenario, how to set the server up, docs asked, docs the invariant says must not be served)
_FAILURES: list[tuple[str, Callable[[LoopbackServer], None], list[str], set[str]]] = [
    ("http_500", lambda s: s.fail(500), ["a", "b"], {"a", "b"}),
    ("hang", lambda s: s.hang(HANG_S), ["a", "b"], {"a", "b"}),
    ("trickle", lambda s: s.trickle(TIMEOUT_S / 4), ["a"], {"a"}),
    ("garbage", lambda s: s.garbage(), ["a", "b"], {"a", "b"}),
    ("wrong_shape", lambda s: s.reply_json({"allowed": ["a", "b"]}), ["a", "b"], {"a", "b"}),
    ("non_boolean", lambda s: s.decide({"a": "true", "b": True}), ["a", "b"], {"a"}),
    ("omitted", lambda s: s.omit("b"), ["a", "b"], {"b"}),
    ("refused", lambda s: None, ["a", "b"], {"a", "b"}),
]


def _invariant_5_violations(
    server: LoopbackServer, make_checker: Callable[[str], PermissionChecker]
) -> list[str]:
    """Run every failure scenario through stage 8; list each document that was served anyway."""
    violations: list[str] = []
    for name, setup, asked, must_drop in _FAILURES:
        server.allow_all()
        setup(server)
        url = closed_port_url() if name == "refused" else server.url
        checker = make_checker(url)  # a fresh checker: no answer cached by an earlier scenario
        try:
            allowed, dropped = filter_allowed(checker, "alice", asked)
        finally:
            close = getattr(checker, "close", None)
            if close is not None:
                close()
        violations += [f"{name}: {doc} served" for doc in allowed if doc in must_drop]
        violations += [
            f"{name}: {doc} dropped as {dropped[doc].outcome.name}, not ERROR"
            for doc in must_drop
            if doc in dropped and dropped[doc].outcome is not ERROR
        ]
    return violations


def test_invariant_5_failed_realtime_check_serves_nothing(server: LoopbackServer) -> None:
    def real(url: str) -> PermissionChecker:
        return HttpPermissionChecker(url, timeout_s=TIMEOUT_S)

    def real_cached(url: str) -> PermissionChecker:
        return CachedPermissionChecker(real(url), ttl_s=30, sla_s=60)

    def fail_open(url: str) -> PermissionChecker:
        return _FailOpenChecker(HttpPermissionChecker(url, timeout_s=TIMEOUT_S))

    # Control: a healthy source system is served, so "drop everything" cannot pass as safe.
    server.allow_all()
    with HttpPermissionChecker(server.url, timeout_s=REPLY_TIMEOUT_S) as healthy:
        assert filter_allowed(healthy, "alice", ["a", "b"])[0] == ["a", "b"]

    assert _invariant_5_violations(server, real) == []
    assert _invariant_5_violations(server, real_cached) == []

    # Reverse proof: the same helper catches a checker that fails open, in every scenario.
    leaks = _invariant_5_violations(server, fail_open)
    assert leaks
    assert {leak.split(":")[0] for leak in leaks} == {name for name, *_ in _FAILURES}
