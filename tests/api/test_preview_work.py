"""A preview does the same work for a document the caller may not read as for one that does
not exist, through the API and the UI, over a real server on loopback.

Timing is a benchmark's business (benchmarks/bench_preview_timing.py); what a test can pin
is the cause of a difference: every SQL statement the store runs for the request, in order,
and every question to the source system's real-time checker. For ann, ``salaries.md`` (hr
only) and an absent id of the same length must produce the same sequence, once the id
itself and the clock are blanked out. The reverse proof: the preview as it was — the
document read first, then decided — fails the same assertion.

The UI preview is rate limited per user like the API's.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from api.conftest import CONFIG, create_token, make_project, serving_app
from api.test_ui import Browser
from clearance.access.policy import Action
from clearance.access.realtime import FakePermissionChecker
from clearance.api import app as app_module
from clearance.api import ui as ui_module
from clearance.api import views
from clearance.api.app import create_app
from clearance.api.errors import DOCUMENT_NOT_FOUND
from clearance.app import Clearance
from clearance.config import load_settings
from clearance.errors import ConfigError, NotFoundError

HIDDEN = "files:salaries.md"
ABSENT = "files:salariez.md"  # the same length, never ingested


class Recorder:
    """The statements the index runs and the real-time questions asked, per request."""

    def __init__(self, engine: Clearance, checker: FakePermissionChecker) -> None:
        self.statements: list[str] = []
        self.checker = checker
        engine.store._db.set_trace_callback(self.statements.append)

    def work(self, fetch: Any, doc_id: str) -> list[str]:
        self.statements.clear()
        self.checker.calls.clear()
        response = fetch(doc_id)
        assert response.status_code == 404, response.text
        asked = [f"realtime {user} {list(ids)}" for user, ids in self.checker.calls]
        return [_blank(s, doc_id) for s in [*self.statements, *asked]]


def _blank(statement: str, doc_id: str) -> str:
    """The statement with the id asked about and every number (times, keys) blanked out."""
    return re.sub(r"\d+(\.\d+)?", "#", statement.replace(doc_id, "<id>"))


def assert_same_work(recorder: Recorder, fetch: Any) -> None:
    fetch(HIDDEN), fetch(ABSENT)  # the directory and the token are read once, then cached
    for _ in range(2):
        hidden = recorder.work(fetch, HIDDEN)
        absent = recorder.work(fetch, ABSENT)
        assert hidden == absent, "a hidden document costs other work than an absent one"
    assert any("doc_acl" in s for s in hidden), "no statement was recorded: the test proves nothing"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Recorder, Path]]:
    project = make_project(tmp_path_factory.mktemp("preview-work"))
    checker = FakePermissionChecker()  # rule 9 for the corpus: every question is recorded
    engine = Clearance.open(load_settings(project), checkers={"default": checker})
    recorder = Recorder(engine, checker)
    try:
        with serving_app(create_app(load_settings(project), clearance=engine)) as url:
            yield url, recorder, project
    finally:
        engine.close()


@pytest.fixture(scope="module")
def doors(served: tuple[str, Recorder, Path]) -> Iterator[dict[str, Any]]:
    url, _, project = served
    token = create_token(project, "ann")["token"]
    api = httpx.Client(base_url=url, timeout=30, headers={"Authorization": f"Bearer {token}"})
    browser = Browser(url)
    assert browser.sign_in(token).status_code == 303
    try:
        yield {
            "api": lambda doc_id: api.get(f"/v1/documents/{doc_id}"),
            "ui": lambda doc_id: browser.get(f"/documents/{doc_id}"),
        }
    finally:
        api.close()
        browser.close()


@pytest.mark.parametrize("door", ["api", "ui"])
def test_a_hidden_document_costs_the_same_work_as_an_absent_one(
    served: tuple[str, Recorder, Path], doors: dict[str, Any], door: str
) -> None:
    assert_same_work(served[1], doors[door])


def lookup_first_preview(
    engine: Clearance,
    user_id: str,
    doc_id: str,
    assistant: str | None,
    locator: str | None = None,
) -> dict[str, Any]:
    """The preview as it was: the document read by id first, then decided."""
    access = engine.access()
    try:
        assistant_settings = access.assistant(assistant)
    except ConfigError as exc:
        raise NotFoundError(exc.message) from None
    principal = access.principal(user_id)
    found = engine.store.get_document(doc_id)
    if found is None:
        raise DOCUMENT_NOT_FOUND
    if not access.decide(principal, Action.RETRIEVE, found, assistant_settings).allow:
        raise DOCUMENT_NOT_FOUND
    return views.preview(engine, user_id, doc_id, assistant, locator)


@pytest.mark.parametrize("door", ["api", "ui"])
def test_reverse_proof_a_preview_that_reads_the_document_first_is_caught(
    served: tuple[str, Recorder, Path],
    doors: dict[str, Any],
    door: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(app_module, "preview", lookup_first_preview)
    monkeypatch.setattr(ui_module, "preview", lookup_first_preview)

    with pytest.raises(AssertionError, match="costs other work"):
        assert_same_work(served[1], doors[door])


def test_a_readable_document_still_previews_after_the_source_system_agrees(
    served: tuple[str, Recorder, Path], doors: dict[str, Any]
) -> None:
    _, recorder, _ = served
    recorder.checker.decisions[("ann", "files:travel.md")] = True

    response = doors["api"]("files:travel.md")

    assert response.status_code == 200, response.text
    assert "Book trains in Tokyo" in response.json()["preview"]
    assert ("ann", ("files:travel.md",)) in recorder.checker.calls
    recorder.checker.decisions.clear()
    assert doors["api"]("files:travel.md").status_code == 404  # the source system said no


# --------------------------------------------------------------------------- rate limit


def test_the_ui_preview_is_rate_limited_per_user_like_the_api(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    project.write_text(CONFIG.replace('rate_limit = "off"', 'rate_limit = "5/m"'), "utf-8")
    token = create_token(project, "ann")["token"]
    with serving_app(create_app(load_settings(project))) as url:
        browser = Browser(url)
        try:
            assert browser.sign_in(token).status_code == 303
            statuses = [browser.get("/documents/files:travel.md").status_code for _ in range(8)]
            limited = browser.get("/documents/files:travel.md")
        finally:
            browser.close()

    assert statuses[0] == 200 and 429 in statuses, statuses
    assert limited.status_code == 429
    assert int(limited.headers["Retry-After"]) >= 1
    assert "text/html" in limited.headers["content-type"]
