"""Shutdown waits for asks abandoned at their deadline, so their traces are written before
the index is closed."""

from __future__ import annotations

import threading

import anyio
import pytest

from clearance.answer.result import AnswerResult
from clearance.api.streaming import Asker
from clearance.errors import ProviderError


def test_an_abandoned_ask_is_waited_for_until_it_ends() -> None:
    release = threading.Event()
    finished = threading.Event()

    def slow_ask(question: str, user_id: str, assistant: str | None) -> AnswerResult:
        release.wait(10)
        finished.set()
        raise ProviderError("the model answered too late")

    asker = Asker(slow_ask, timeout_s=0.05, degraded_message="unavailable")

    with pytest.raises(ProviderError, match="longer than"):
        anyio.run(asker.run, "q", "ann", None)

    assert not asker.wait_idle(0.05)  # still running in the background
    release.set()
    assert asker.wait_idle(5)
    assert finished.is_set()


def test_with_nothing_running_shutdown_does_not_wait() -> None:
    asker = Asker(lambda q, u, a: None, timeout_s=1, degraded_message="x")  # type: ignore[arg-type, return-value]
    assert asker.wait_idle(0)
