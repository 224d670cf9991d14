"""The HTTP API end to end: a real uvicorn server on loopback, driven with httpx.

Every route's happy path; sign-in refusals (missing, bad, expired, revoked token);
administrator routes; the one error shape; body and question bounds; and the invariant that
an unreadable document is indistinguishable from an absent one, with its reverse proof.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from api.conftest import Live, create_token
from clearance.access.policy import AccessControl, Decision, Reason
from clearance.api.app import SearchBody, SearchRow
from clearance.api.tokens import TokenStore
from clearance.app import Clearance
from clearance.errors import StoreError
from clearance.store.sqlite import SQLiteStore
from clitools import cli


@pytest.fixture
def client(live: Live) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=live.url, timeout=30) as c:
        yield c


def assert_error(response: httpx.Response, status: int, code: str) -> None:
    """The one error shape: exactly ``{"error": code, "message": text}``."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == {"error", "message"}
    assert body["error"] == code
    assert isinstance(body["message"], str) and body["message"]


# --------------------------------------------------------------------------- happy paths


def test_healthz_carries_no_data(client: httpx.Client) -> None:
    response = client.get("/healthz")

    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_readyz_reports_index_directory_and_corpus_sla_state(client: httpx.Client) -> None:
    body = client.get("/readyz").json()

    assert body["ready"] is True and body["index"] is True and body["directory_loaded"] is True
    assert [(c["corpus"], c["serving"]) for c in body["corpora"]] == [("default", True)]


def test_me_shows_user_groups_and_assistants(live: Live, client: httpx.Client) -> None:
    body = client.get("/v1/me", headers=live.auth("ann")).json()

    assert body["user"] == "ann" and body["active"] is True and body["admin"] is False
    assert body["groups"] == ["staff"]
    assert "user:ann" in body["principals"]
    assert body["assistants"] == ["general"]


def test_assistants_lists_the_configured_assistants(live: Live, client: httpx.Client) -> None:
    body = client.get("/v1/assistants", headers=live.auth("ann")).json()

    assert [a["name"] for a in body["assistants"]] == ["general"]
    assert body["assistants"][0]["corpora"] == ["default"]


def test_search_equals_the_cli_search_json(live: Live, client: httpx.Client) -> None:
    response = client.post("/v1/search", json={"query": "Hotels"}, headers=live.auth("ann"))
    rc, out, _ = cli("--config", live.config, "search", "Hotels", "--user", "ann", "--json")

    assert response.status_code == 200 and rc == 0
    assert response.json() == json.loads(out)
    assert [r["doc_id"] for r in response.json()["results"]] == ["files:travel.md"]
    assert matches_search_schema(response.json())


def matches_search_schema(body: dict[str, Any]) -> bool:
    """Whether a search body has exactly the fields the OpenAPI schema promises: the route
    returns its JSON without a second pydantic pass, so nothing else would notice a drift."""
    rows_ok = all(set(row) == set(SearchRow.model_fields) for row in body["results"])
    return set(body) == set(SearchBody.model_fields) and rows_ok and bool(body["results"])


def test_reverse_proof_a_field_outside_the_schema_is_noticed(
    live: Live, client: httpx.Client
) -> None:
    body = client.post("/v1/search", json={"query": "Hotels"}, headers=live.auth("ann")).json()
    body["results"][0]["acl"] = ["group:staff"]

    assert not matches_search_schema(body)


def test_search_never_returns_what_the_caller_may_not_read(
    live: Live, client: httpx.Client
) -> None:
    ann = client.post("/v1/search", json={"query": "allowance"}, headers=live.auth("ann"))
    root = client.post("/v1/search", json={"query": "allowance"}, headers=live.auth("root"))

    assert ann.json()["results"] == []
    assert [r["doc_id"] for r in root.json()["results"]] == ["files:salaries.md"]


def test_ask_equals_the_cli_ask_json(live: Live, client: httpx.Client) -> None:
    question = "Hotels limits"
    response = client.post("/v1/ask", json={"question": question}, headers=live.auth("ann"))
    rc, out, _ = cli("--config", live.config, "ask", question, "--user", "ann", "--json")

    assert response.status_code == 200 and rc == 0
    api, expected = response.json(), json.loads(out)
    assert api["status"] == "answered" and api["citations"]
    assert api["trace_id"] and api["trace_id"] != expected["trace_id"]
    assert {**api, "trace_id": ""} == {**expected, "trace_id": ""}


def test_ask_with_an_unknown_assistant_is_the_cli_contract(
    live: Live, client: httpx.Client
) -> None:
    body = {"question": "Hotels limits", "assistant": "nope"}
    response = client.post("/v1/ask", json=body, headers=live.auth("ann"))

    assert response.status_code == 200
    assert response.json()["status"] == "unknown_assistant"


def test_document_shows_metadata_and_a_short_preview(live: Live, client: httpx.Client) -> None:
    response = client.get("/v1/documents/files:travel.md", headers=live.auth("ann"))

    assert response.status_code == 200
    body = response.json()
    assert body["doc_id"] == "files:travel.md" and body["title"] == "Travel policy"
    assert "Book trains in Tokyo." in body["preview"]


def test_status_for_an_administrator_equals_the_cli_status_json(
    live: Live, client: httpx.Client
) -> None:
    response = client.get("/v1/status", headers=live.auth("root"))
    rc, out, _ = cli("--config", live.config, "status", "--json")

    assert response.status_code == 200 and rc == 0
    api, expected = response.json(), json.loads(out)
    assert {k: v for k, v in api.items() if k != "size_bytes"} == {
        k: v for k, v in expected.items() if k != "size_bytes"
    }


# --------------------------------------------------------------------------- sign-in


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer clr_000000000000_" + "a" * 43},
        {"Authorization": "Bearer not-a-token"},
        {"Authorization": "Basic YW5uOmFubg=="},
        {"Authorization": "Bearer"},
    ],
    ids=["missing", "unknown", "malformed", "basic", "empty"],
)
def test_a_missing_or_bad_token_is_401(client: httpx.Client, headers: dict[str, str]) -> None:
    for method, path in (("GET", "/v1/me"), ("POST", "/v1/search"), ("GET", "/v1/status")):
        response = client.request(method, path, headers=headers, json={"query": "x"})
        assert_error(response, 401, "unauthenticated")
        assert response.headers["www-authenticate"] == "Bearer"


def test_a_tampered_token_is_401(live: Live, client: httpx.Client) -> None:
    token = live.tokens["ann"]
    tampered = token[:-1] + ("A" if token[-1] != "A" else "B")

    response = client.get("/v1/me", headers={"Authorization": f"Bearer {tampered}"})

    assert_error(response, 401, "unauthenticated")


def test_an_expired_token_is_401(live: Live, client: httpx.Client) -> None:
    store = SQLiteStore(live.config.parent / "data" / "index.db")
    try:
        past = datetime.now(UTC) - timedelta(days=2)
        token, _ = TokenStore(store, clock=lambda: past).create("ann", expires_in_s=86400)
    finally:
        store.close()

    response = client.get("/v1/me", headers={"Authorization": f"Bearer {token}"})

    assert_error(response, 401, "unauthenticated")


def test_revocation_takes_effect_on_the_next_request(live: Live, client: httpx.Client) -> None:
    created = create_token(live.config, "ann")
    headers = {"Authorization": f"Bearer {created['token']}"}
    assert client.get("/v1/me", headers=headers).status_code == 200

    rc, _, err = cli("--config", live.config, "token", "revoke", created["id"])
    assert rc == 0, err

    assert_error(client.get("/v1/me", headers=headers), 401, "unauthenticated")


def test_status_is_403_for_a_non_administrator(live: Live, client: httpx.Client) -> None:
    assert_error(client.get("/v1/status", headers=live.auth("ann")), 403, "forbidden")


def test_an_admin_token_of_a_disabled_user_is_not_an_administrator(
    live: Live, client: httpx.Client
) -> None:
    token = create_token(live.config, "bob", "--admin")["token"]

    response = client.get("/v1/status", headers={"Authorization": f"Bearer {token}"})

    assert_error(response, 403, "forbidden")


def test_a_disabled_user_gets_account_disabled_whatever_the_credential(
    live: Live, client: httpx.Client
) -> None:
    headers = live.auth("bob")
    ask = client.post("/v1/ask", json={"question": "Hotels limits"}, headers=headers)
    search = client.post("/v1/search", json={"query": "Hotels"}, headers=headers)
    me = client.get("/v1/me", headers=headers).json()

    assert ask.status_code == 200
    assert ask.json()["status"] == "account_disabled" and ask.json()["citations"] == []
    assert search.json()["refused"] == "account_disabled" and search.json()["results"] == []
    assert me["active"] is False and me["principals"] == [] and me["assistants"] == []
    assert client.get("/v1/assistants", headers=headers).json() == {"assistants": []}
    assert_error(client.get("/v1/documents/files:travel.md", headers=headers), 404, "not_found")


# --------------------------------------------------------------------------- invariant 8


def absent_and_unreadable_bodies(live: Live, client: httpx.Client) -> tuple[bytes, bytes]:
    headers = live.auth("ann")
    absent = client.get("/v1/documents/files:no-such-file.md", headers=headers)
    unreadable = client.get("/v1/documents/files:salaries.md", headers=headers)
    assert absent.status_code == 404
    assert unreadable.status_code == absent.status_code, "unreadable document was served"
    assert dict(unreadable.headers) == {**dict(absent.headers), "date": unreadable.headers["date"]}
    return absent.content, unreadable.content


def test_an_unreadable_document_is_indistinguishable_from_an_absent_one(
    live: Live, client: httpx.Client
) -> None:
    absent, unreadable = absent_and_unreadable_bodies(live, client)

    assert absent == unreadable
    assert json.loads(absent) == {"error": "not_found", "message": "no such document"}
    # The reader it is hidden from cannot tell; its reader can read it.
    root = client.get("/v1/documents/files:salaries.md", headers=live.auth("root"))
    assert root.status_code == 200


def test_reverse_proof_a_leaky_document_route_is_caught(
    live: Live, client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same check must fail when the route skips authorisation (allows everything):
    the allowed set holds every id asked about and every decision allows."""
    monkeypatch.setattr(
        AccessControl, "decide", lambda *args, **kwargs: Decision(True, (Reason.ALLOWED,))
    )
    monkeypatch.setattr(SQLiteStore, "allowed_doc_ids", lambda _, flt: set(flt.doc_ids or ()))

    with pytest.raises(AssertionError, match="unreadable document was served"):
        absent_and_unreadable_bodies(live, client)


# --------------------------------------------------------------------------- bad input


def test_unknown_routes_and_methods_use_the_one_error_shape(client: httpx.Client) -> None:
    assert_error(client.get("/nope"), 404, "not_found")
    assert_error(client.get("/v1/ask"), 405, "method_not_allowed")


@pytest.mark.parametrize(
    "body", [b'{"question": "x",', b"\x80", b""], ids=["truncated", "not-utf8", "empty"]
)
def test_malformed_json_is_422_with_the_one_error_shape(
    live: Live, client: httpx.Client, body: bytes
) -> None:
    headers = {**live.auth("ann"), "Content-Type": "application/json"}

    response = client.post("/v1/ask", content=body, headers=headers)

    assert_error(response, 422, "invalid_request")


@pytest.mark.parametrize(
    "body",
    [{}, {"question": 3}, {"question": "x", "extra": "SECRETX"}, ["SECRETX"], "SECRETX"],
    ids=["missing", "wrong-type", "extra-key", "list", "string"],
)
def test_invalid_bodies_are_422_without_echoing_the_input(
    live: Live, client: httpx.Client, body: object
) -> None:
    response = client.post("/v1/ask", json=body, headers=live.auth("ann"))

    assert_error(response, 422, "invalid_request")
    assert "SECRETX" not in response.text


def test_search_k_out_of_range_is_422(live: Live, client: httpx.Client) -> None:
    response = client.post("/v1/search", json={"query": "x", "k": 0}, headers=live.auth("ann"))

    assert_error(response, 422, "invalid_request")


def test_a_100000_character_question_is_422_bad_question(live: Live, client: httpx.Client) -> None:
    question = "why " * 25_000

    response = client.post("/v1/ask", json={"question": question}, headers=live.auth("ann"))
    search = client.post("/v1/search", json={"query": question}, headers=live.auth("ann"))

    assert_error(response, 422, "bad_question")
    assert_error(search, 422, "bad_question")
    assert "why" not in response.json()["message"]


def test_a_2_mib_body_is_413(live: Live, client: httpx.Client) -> None:
    body = json.dumps({"question": "x" * (2 * 1024 * 1024)}).encode()

    response = client.post(
        "/v1/ask", content=body, headers={**live.auth("ann"), "Content-Type": "application/json"}
    )

    assert_error(response, 413, "payload_too_large")


def test_a_2_mib_chunked_body_without_content_length_is_413(
    live: Live, client: httpx.Client
) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"question": "'
        for _ in range(32):
            yield b"x" * 65536
        yield b'"}'

    request = client.build_request(
        "POST",
        "/v1/ask",
        content=chunks(),
        headers={**live.auth("ann"), "Content-Type": "application/json"},
    )
    assert "content-length" not in request.headers
    assert request.headers["transfer-encoding"] == "chunked"

    response = client.send(request)

    assert_error(response, 413, "payload_too_large")


def test_search_with_an_unknown_assistant_is_404(live: Live, client: httpx.Client) -> None:
    body = {"query": "Hotels", "assistant": "nope"}

    response = client.post("/v1/search", json=body, headers=live.auth("ann"))

    assert_error(response, 404, "not_found")


# --------------------------------------------------------------------------- failures


def test_engine_failures_keep_the_one_error_shape(
    live: Live, client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    def store_down(*args: object, **kwargs: object) -> None:
        raise StoreError("cannot read the index")

    def crash(*args: object, **kwargs: object) -> None:
        raise RuntimeError("secret internals")

    monkeypatch.setattr(Clearance, "search", store_down)
    assert_error(
        client.post("/v1/search", json={"query": "x"}, headers=live.auth("ann")),
        503,
        "store_error",
    )
    monkeypatch.setattr(Clearance, "search", crash)
    response = client.post("/v1/search", json={"query": "x"}, headers=live.auth("ann"))
    assert_error(response, 500, "internal_error")
    assert "secret" not in response.text


def test_concurrent_callers_each_get_their_own_answer(live: Live) -> None:
    def run(user: str) -> list[list[str]]:
        with httpx.Client(base_url=live.url, timeout=30) as c:
            return [
                [
                    r["doc_id"]
                    for r in c.post(
                        "/v1/search", json={"query": "allowance Hotels"}, headers=live.auth(user)
                    ).json()["results"]
                ]
                for _ in range(10)
            ]

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(run, ["ann", "root"] * 4))

    for user, rounds in zip(["ann", "root"] * 4, results, strict=True):
        for ids in rounds:
            assert ("files:salaries.md" in ids) is (user == "root")
            assert "files:travel.md" in ids


# --------------------------------------------------------------------------- OpenAPI

OPENAPI = Path(__file__).with_name("openapi.json")


def test_openapi_schema_is_pinned(client: httpx.Client) -> None:
    """Regenerate with: python -m clearance.api.openapi > tests/api/openapi.json"""
    served = client.get("/openapi.json").json()

    assert served == json.loads(OPENAPI.read_text(encoding="utf-8"))
