"""Ids in requests match exactly: ``/v1/documents/files:travel.md%0a`` is not travel.md.

A route pattern ending in ``$`` also matches before a trailing newline, so the id captured
without it named a real document. The invariant, through the API and the UI on a real server:
an id with anything after it — a newline included — is the absent document's 404. The
reverse proof serves the same routes with Starlette's ``path`` convertor, which the same
assertion catches. API tokens are matched whole too.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from starlette import convertors

from api.conftest import create_token, make_project, serving_app
from api.test_ui import Browser
from clearance.api.app import create_app
from clearance.api.tokens import TokenStore
from clearance.app import Clearance
from clearance.config import load_settings

READABLE = "files:travel.md"  # ann may read it


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_project(tmp_path_factory.mktemp("exact-ids"))


@pytest.fixture(scope="module")
def token(project: Path) -> str:
    return create_token(project, "ann")["token"]


def assert_ids_match_exactly(url: str, token: str) -> None:
    with httpx.Client(base_url=url, timeout=30) as api:
        headers = {"Authorization": f"Bearer {token}"}
        assert api.get(f"/v1/documents/{READABLE}", headers=headers).status_code == 200
        absent = api.get("/v1/documents/files:no-such.md", headers=headers)
        for suffix in ("%0a", "%0A", "%0d%0a", "%0a%0a"):
            served = api.get(f"/v1/documents/{READABLE}{suffix}", headers=headers)
            assert served.status_code == 404, f"{READABLE}{suffix} was served"
            assert served.content == absent.content
    browser = Browser(url)
    try:
        assert browser.sign_in(token).status_code == 303
        assert browser.get(f"/documents/{READABLE}").status_code == 200
        served = browser.get(f"/documents/{READABLE}%0a")
        assert served.status_code == 404, f"the UI served {READABLE}%0a"
    finally:
        browser.close()


def test_a_document_id_with_a_trailing_newline_is_not_found(project: Path, token: str) -> None:
    with serving_app(create_app(load_settings(project))) as url:
        assert_ids_match_exactly(url, token)


def test_reverse_proof_routes_with_the_path_convertor_serve_the_newline_id(
    project: Path, token: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(convertors.CONVERTOR_TYPES, "document_id", convertors.PathConvertor())

    with (
        serving_app(create_app(load_settings(project))) as url,
        pytest.raises(AssertionError, match="was served"),
    ):
        assert_ids_match_exactly(url, token)


def test_an_api_token_with_a_trailing_newline_is_no_token(project: Path, token: str) -> None:
    engine = Clearance.open(load_settings(project))
    try:
        tokens = TokenStore(engine.store, clock=engine.clock)
        assert tokens.verify(token) is not None
        assert tokens.verify(token + "\n") is None
    finally:
        engine.close()
