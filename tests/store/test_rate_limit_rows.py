"""The shared allowance's table (``rate_limits``) on both backends: the same admissions,
exactly the limit under concurrent writers, refusals that write nothing, and no effect on
what search has loaded (the counters are not content or access rows)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from clearance.api.limits import RateLimited, SharedRateLimiter
from clearance.config import Rate
from clearance.store.postgres import PostgresStore
from clearance.store.sqlite import SQLiteStore


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def store(backend_store: SQLiteStore | PostgresStore) -> SQLiteStore | PostgresStore:
    """SQLite, then PostgreSQL (tests/pg.py)."""
    return backend_store


def test_the_bucket_and_retry_after_are_the_same_on_both_backends(
    store: SQLiteStore | PostgresStore,
) -> None:
    clock = Clock()
    limiter = SharedRateLimiter(store, Rate(3, 60.0), clock=clock)
    for _ in range(3):
        limiter.check("user:ann")
    with pytest.raises(RateLimited) as refused:
        limiter.check("user:ann")
    assert refused.value.retry_after == 20
    clock.now += 19.5
    with pytest.raises(RateLimited) as refused:
        limiter.check("user:ann")
    assert refused.value.retry_after == 1
    clock.now += 0.5
    limiter.check("user:ann")
    limiter.check("user:root")  # another key, a full bucket
    clock.now += 3600
    for _ in range(3):
        limiter.check("user:ann")
    with pytest.raises(RateLimited):
        limiter.check("user:ann")


def test_concurrent_writers_are_admitted_exactly_up_to_the_limit(
    store: SQLiteStore | PostgresStore,
) -> None:
    limiters = [SharedRateLimiter(store, Rate(40, 3600.0)) for _ in range(4)]
    admitted: list[bool] = []
    lock = threading.Lock()

    def hammer(limiter: SharedRateLimiter) -> None:
        for _ in range(25):
            try:
                limiter.check("user:ann")
                ok = True
            except RateLimited:
                ok = False
            with lock:
                admitted.append(ok)

    threads = [threading.Thread(target=hammer, args=(lim,)) for lim in limiters * 2]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(admitted) == 200 and sum(admitted) == 40


def test_counting_requests_leaves_the_loaded_index_alone(tmp_path: Path) -> None:
    """The generation triggers watch content and access tables only: a counter write must
    not make every search rebuild its in-memory copy, and neither may a refusal."""
    store = SQLiteStore(tmp_path / "index.db")
    limiter = SharedRateLimiter(store, Rate(1, 60.0))
    with store.reading():
        before = store._generations()
    limiter.check("user:ann")
    with pytest.raises(RateLimited):
        limiter.check("user:ann")
    with store.reading():
        assert store._generations() == before
    store.close()
