"""Per-user rate limits (``[server] rate_limit``) on a real uvicorn server on loopback.

The invariant: one user's requests never spend another user's allowance — the limiter is
keyed by the signed-in user, not by the address, which behind a proxy (or here, on
loopback) every caller shares. Its reverse proof runs the same assertion against a server
whose limiter is keyed by the peer address, and must see it fail.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from api.conftest import create_token, serving_app
from clearance.api.app import create_app
from clearance.api.limits import RateLimited, RateLimiter, SharedRateLimiter, client_address
from clearance.config import Rate, load_settings, settings_from_dict
from clearance.errors import ConfigError
from clearance.store.sqlite import SQLiteStore

# --------------------------------------------------------------------------- helpers


def limited_config(project: Path, rate: str) -> Path:
    """The module project's configuration with ``[server] rate_limit = rate``."""
    text = project.read_text(encoding="utf-8")
    assert 'rate_limit = "off"' in text, "conftest's CONFIG no longer turns the limit off"
    config = project.parent / f"limited-{rate.replace('/', '-')}.toml"
    limited = text.replace('\nrate_limit = "off"', f'\nrate_limit = "{rate}"')
    config.write_text(limited, "utf-8")
    return config


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def spend_then_ask_as_another(url: str, tokens: dict[str, str]) -> tuple[list[int], int]:
    """ann sends four requests under a 3/m limit; then root, from the same address, one."""
    with httpx.Client(base_url=url, timeout=30) as client:
        ann = [client.get("/v1/me", headers=bearer(tokens["ann"])).status_code for _ in range(4)]
        root = client.get("/v1/me", headers=bearer(tokens["root"])).status_code
    return ann, root


def reset_allowances(config: Path) -> None:
    """Forget every allowance kept in the project's index: they outlive a server now."""
    index = config.parent / "data" / "index.db"
    with sqlite3.connect(index) as db:
        if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'rate_limits'").fetchone():
            db.execute("DELETE FROM rate_limits")


@pytest.fixture(autouse=True)
def fresh_allowances(project: Path) -> Iterator[None]:
    reset_allowances(project)
    yield
    reset_allowances(project)


@pytest.fixture(scope="module")
def tokens(project: Path) -> dict[str, str]:
    return {user: create_token(project, user)["token"] for user in ("ann", "root")}


# --------------------------------------------------------------------------- the server


def test_the_fourth_request_in_a_minute_is_429_with_retry_after(
    project: Path, tokens: dict[str, str]
) -> None:
    config = limited_config(project, "3/m")
    with (
        serving_app(create_app(load_settings(config))) as url,
        httpx.Client(base_url=url, timeout=30) as client,
    ):
        ok = [client.get("/v1/me", headers=bearer(tokens["ann"])) for _ in range(3)]
        refused = client.post(
            "/v1/ask", json={"question": "Hotels limits"}, headers=bearer(tokens["ann"])
        )
        probes = [client.get(p).status_code for p in ("/healthz", "/readyz") * 5]

    assert [r.status_code for r in ok] == [200, 200, 200]
    assert refused.status_code == 429
    assert refused.headers["content-type"] == "application/json"
    body = refused.json()
    assert set(body) == {"error", "message"} and body["error"] == "rate_limited"
    retry_after = refused.headers["retry-after"]
    assert retry_after.isdigit() and 1 <= int(retry_after) <= 20  # one request per 20 s
    assert probes == [200] * 10  # the probes are never limited


def test_one_users_requests_never_spend_another_users_allowance(
    project: Path, tokens: dict[str, str]
) -> None:
    config = limited_config(project, "3/m")
    with serving_app(create_app(load_settings(config))) as url:
        ann, root = spend_then_ask_as_another(url, tokens)

    assert ann == [200, 200, 200, 429]
    assert root == 200  # same address, another user: a fresh allowance


def test_reverse_proof_a_limiter_keyed_by_address_is_caught(
    project: Path, tokens: dict[str, str]
) -> None:
    app = create_app(load_settings(project))
    # A deliberately wrong limiter: keyed by the peer address, as a naive one would be.
    app.state.rate_limiter = RateLimiter(Rate(3, 60.0), key=lambda user, peer: peer or "")
    with serving_app(app) as url:
        ann, root = spend_then_ask_as_another(url, tokens)

    assert ann == [200, 200, 200, 429]
    with pytest.raises(AssertionError):
        assert root == 200  # the assertion of the invariant test rejects this limiter


def test_an_unauthenticated_request_is_401_and_spends_no_allowance(
    project: Path, tokens: dict[str, str]
) -> None:
    config = limited_config(project, "1/m")
    with (
        serving_app(create_app(load_settings(config))) as url,
        httpx.Client(base_url=url, timeout=30) as client,
    ):
        anonymous = [client.get("/v1/me").status_code for _ in range(3)]
        ann = client.get("/v1/me", headers=bearer(tokens["ann"])).status_code

    assert anonymous == [401, 401, 401]
    assert ann == 200


# --------------------------------------------------------------------------- the bucket


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_bucket_refills_evenly_and_retry_after_is_when_one_request_fits() -> None:
    clock = Clock()
    limiter = RateLimiter(Rate(3, 60.0), clock=clock)
    for _ in range(3):
        limiter.check("ann")
    with pytest.raises(RateLimited) as refused:
        limiter.check("ann")
    assert refused.value.retry_after == 20
    clock.now += 19.5
    with pytest.raises(RateLimited) as refused:
        limiter.check("ann")
    assert refused.value.retry_after == 1  # never 0: a whole number of seconds, rounded up
    clock.now += 0.5
    limiter.check("ann")  # one request regained after 20 s
    with pytest.raises(RateLimited):
        limiter.check("ann")
    clock.now += 3600
    for _ in range(3):  # a long pause refills to the bucket's size, not beyond
        limiter.check("ann")
    with pytest.raises(RateLimited):
        limiter.check("ann")


def test_concurrent_requests_of_one_user_are_admitted_exactly_up_to_the_limit() -> None:
    limiter = RateLimiter(Rate(50, 3600.0))
    admitted: list[bool] = []
    lock = threading.Lock()

    def hammer() -> None:
        for _ in range(20):
            try:
                limiter.check("ann")
                ok = True
            except RateLimited:
                ok = False
            with lock:
                admitted.append(ok)

    threads = [threading.Thread(target=hammer) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert len(admitted) == 160 and sum(admitted) == 50


def test_full_buckets_are_forgotten() -> None:
    clock = Clock()
    limiter = RateLimiter(Rate(1, 1.0), clock=clock)
    for i in range(5000):
        limiter.check(f"user{i}")
        clock.now += 0.001
    clock.now += 10
    limiter._sweep(clock.now)

    assert limiter._buckets == {}


def make_limiter(
    kind: str, rate: Rate, clock: Clock, tmp_path: Path
) -> RateLimiter | SharedRateLimiter:
    if kind == "in-process":
        return RateLimiter(rate, clock=clock)
    return SharedRateLimiter(SQLiteStore(tmp_path / "index.db"), rate, clock=clock)


def test_the_shared_bucket_admits_exactly_what_the_in_process_one_does(tmp_path: Path) -> None:
    """The same random schedule of checks against both: the same admissions and the same
    Retry-After, request for request (GCRA is the token bucket, not an approximation)."""
    import random

    draw = random.Random(7)
    schedule = [(draw.choice(["ann", "bob"]), draw.expovariate(1 / 4.0)) for _ in range(400)]
    outcomes: dict[str, list[int]] = {}
    for kind in ("in-process", "shared"):
        clock = Clock()
        limiter = make_limiter(kind, Rate(5, 60.0), clock, tmp_path / kind)
        seen: list[int] = []
        for user, pause in schedule:
            clock.now += pause
            try:
                limiter.check(user)
                seen.append(0)
            except RateLimited as exc:
                seen.append(exc.retry_after)
        outcomes[kind] = seen
    assert outcomes["shared"] == outcomes["in-process"]
    assert 0 < outcomes["shared"].count(0) < len(schedule)  # both admitted and refused


def test_the_shared_bucket_refills_evenly_and_forgets_full_buckets(tmp_path: Path) -> None:
    clock = Clock()
    store = SQLiteStore(tmp_path / "index.db")
    limiter = SharedRateLimiter(store, Rate(3, 60.0), clock=clock)
    for _ in range(3):
        limiter.check("ann")
    with pytest.raises(RateLimited) as refused:
        limiter.check("ann")
    assert refused.value.retry_after == 20
    clock.now += 20
    limiter.check("ann")
    clock.now += 3600  # the next check sweeps rows whose bucket is full again
    limiter.check("bob")
    with store.reading() as db:
        rows = db.execute("SELECT key FROM rate_limits").fetchall()
    assert len(rows) == 1 and "bob" not in rows[0][0]  # only bob's, and hashed
    store.close()


def test_concurrent_processes_are_admitted_exactly_up_to_the_shared_limit(tmp_path: Path) -> None:
    """Four processes hammer one user's allowance in one index: exactly the limit passes."""
    import subprocess
    import sys

    index = tmp_path / "index.db"
    SQLiteStore(index).close()
    script = (
        "import sys\n"
        "from clearance.api.limits import RateLimited, SharedRateLimiter\n"
        "from clearance.config import Rate\n"
        "from clearance.store.sqlite import SQLiteStore\n"
        "limiter = SharedRateLimiter(SQLiteStore(sys.argv[1]), Rate(50, 3600.0))\n"
        "ok = 0\n"
        "for _ in range(40):\n"
        "    try:\n"
        "        limiter.check('ann'); ok += 1\n"
        "    except RateLimited:\n"
        "        pass\n"
        "print(ok)\n"
    )
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(index)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(4)
    ]
    admitted = [int(p.communicate(timeout=60)[0]) for p in processes]
    assert sum(admitted) == 50


def test_the_client_address_is_the_peer_unless_a_trusted_proxy_forwarded_it() -> None:
    import ipaddress

    proxies = [ipaddress.ip_network("10.0.0.0/8")]
    forwarded = {"x-forwarded-for": "6.6.6.6, 203.0.113.9, 10.1.1.1"}
    assert client_address(forwarded, "10.0.0.2", proxies) == "203.0.113.9"
    assert client_address(forwarded, "198.51.100.4", proxies) == "198.51.100.4"  # not a proxy
    assert client_address({}, "10.0.0.2", proxies) == "10.0.0.2"
    assert client_address({"x-forwarded-for": "junk"}, "10.0.0.2", proxies) == "10.0.0.2"
    assert client_address(forwarded, "10.0.0.2", []) == "10.0.0.2"  # no proxies configured


# --------------------------------------------------------------------------- settings


def test_server_limits_default_to_60_a_minute_and_a_30_second_deadline() -> None:
    server = settings_from_dict({}).server

    assert server.rate_limit == Rate(60, 60.0)
    assert server.request_timeout_s == 30.0


def test_server_limits_parse_and_refuse_bad_values() -> None:
    server = settings_from_dict({"server": {"rate_limit": "5/s", "request_timeout": "2m"}}).server
    assert (server.rate_limit, server.request_timeout_s) == (Rate(5, 1.0), 120.0)
    assert settings_from_dict({"server": {"rate_limit": "off"}}).server.rate_limit is None
    assert settings_from_dict({"server": {"rate_limit": " 100 / h "}}).server.rate_limit == Rate(
        100, 3600.0
    )
    for bad in ("0/m", "60", "60/d", "-1/m", "", 60, "1.5/m"):
        with pytest.raises(ConfigError, match=r"server\.rate_limit"):
            settings_from_dict({"server": {"rate_limit": bad}})
    for bad_timeout in ("0", 0, "soon"):
        with pytest.raises(ConfigError, match=r"server\.request_timeout"):
            settings_from_dict({"server": {"request_timeout": bad_timeout}})


def test_sign_in_and_stream_bounds_default_and_refuse_bad_values() -> None:
    server = settings_from_dict({}).server
    assert server.signin_rate_limit == Rate(20, 60.0)
    assert (server.stream_idle_timeout_s, server.streams_per_user) == (60.0, 4)
    custom = settings_from_dict(
        {"server": {"signin_rate_limit": "off", "stream_idle_timeout": "5m", "streams_per_user": 1}}
    ).server
    assert (custom.signin_rate_limit, custom.stream_idle_timeout_s, custom.streams_per_user) == (
        None,
        300.0,
        1,
    )
    for key, bad in (
        ("signin_rate_limit", "10"),
        ("stream_idle_timeout", "0"),
        ("stream_idle_timeout", "soon"),
        ("streams_per_user", 0),
        ("streams_per_user", "4"),
    ):
        with pytest.raises(ConfigError, match=rf"server\.{key}"):
            settings_from_dict({"server": {key: bad}})


def _reads_mapped_addresses_as_auth_does() -> None:
    import ipaddress

    from clearance.api.auth import TrustedHeaderAuthenticator

    proxies = [ipaddress.ip_network("10.0.0.0/8")]
    forwarded = {"x-forwarded-for": "203.0.113.9"}
    assert client_address(forwarded, "::ffff:10.0.0.2", proxies) == "203.0.113.9"
    assert client_address({}, "::ffff:198.51.100.4", proxies) == "198.51.100.4"
    mapped_hop = {"x-forwarded-for": "::ffff:203.0.113.9"}
    assert client_address(mapped_hop, "10.0.0.2", proxies) == "203.0.113.9"
    header = TrustedHeaderAuthenticator(proxies, "X-User", lambda _: False)
    for peer in ("10.0.0.2", "::ffff:10.0.0.2", "198.51.100.4", "::ffff:198.51.100.4", "junk"):
        trusted_by_limiter = client_address(forwarded, peer, proxies) == "203.0.113.9"
        assert trusted_by_limiter == header.trusted(peer), peer


def test_a_proxy_seen_as_an_ipv4_mapped_peer_is_the_proxy_for_the_limiter_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A dual-stack listener reports an IPv4 proxy as ``::ffff:10.0.0.2``. Trusted-header
    sign-in took it for the proxy it is while the limiter did not, so every sign-in through
    that proxy counted against the proxy's one address (one client locking everyone out)
    instead of the client it forwarded for. Both now read addresses with one function, and
    a client's address is counted in one form whichever way it arrived. Reverse proof: with
    the limiter's former check (the mapped address compared as IPv6) the same assertions
    fail."""
    import ipaddress

    import clearance.api.limits as limits

    _reads_mapped_addresses_as_auth_does()

    def former(address: str | None, networks: Sequence[Any]) -> bool:
        try:
            parsed = ipaddress.ip_address(address or "")
        except ValueError:
            return False
        return any(parsed in network for network in networks)

    def unmapped(text: str | None) -> Any:
        try:
            return ipaddress.ip_address(text or "")
        except ValueError:
            return None

    monkeypatch.setattr(limits, "in_networks", former)
    monkeypatch.setattr(limits, "ip_address", unmapped)
    with pytest.raises(AssertionError):
        _reads_mapped_addresses_as_auth_does()
