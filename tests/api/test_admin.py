"""The administrator routes end to end, on a real uvicorn server over a project whose
``[ingest] roots`` is its ``docs/`` folder.

Every admin route refuses an anonymous caller (401) and a signed-in non-administrator (403),
with the reverse proof that the same check catches a route served without the administrator
dependency; each route's JSON equals the matching CLI ``--json`` output; invalid bodies are
422 naming the place, with nothing applied.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from api.conftest import Live, create_token, make_project, serving
from clearance.api import admin
from clearance.api.app import _identify
from clearance.store.sqlite import SQLiteStore
from clitools import cli

OUTSIDE = "outside the roots: never to be ingested"


@pytest.fixture(scope="module")
def rooted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    """A server over a project with ``[ingest] roots = ["docs"]``, tokens for ann (an
    employee) and root (an administrator)."""
    root = tmp_path_factory.mktemp("rooted")
    config = make_project(root)
    with config.open("a", encoding="utf-8") as f:
        f.write('\n[ingest]\nroots = ["docs"]\n')
    (root / "outside.md").write_text(f"# Outside\n\n{OUTSIDE}\n", encoding="utf-8")
    with serving(config) as url:
        server = Live(url, config)
        server.tokens["ann"] = create_token(config, "ann")["token"]
        server.tokens["root"] = create_token(config, "root", "--admin")["token"]
        yield server


@pytest.fixture
def client(rooted: Live) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=rooted.url, timeout=30) as c:
        yield c


def assert_error(response: httpx.Response, status: int, code: str) -> dict[str, str]:
    assert response.status_code == status, response.text
    body: dict[str, str] = response.json()
    assert set(body) == {"error", "message"} and body["error"] == code, body
    return body


def cli_json(config: Path, *args: str | Path) -> Any:
    rc, out, err = cli("--config", config, *args, "--json")
    assert rc == 0, err
    return json.loads(out)


def acl_of(config: Path, doc_id: str) -> frozenset[str]:
    store = SQLiteStore(config.parent / "data" / "index.db")
    try:
        doc = store.get_document(doc_id)
        assert doc is not None
        return doc.acl
    finally:
        store.close()


# --------------------------------------------------------------------------- who may call

# Bodies that change nothing even if a leaky route let a non-administrator through.
ADMIN_ROUTES: list[tuple[str, str, dict[str, str], bytes]] = [
    ("GET", "/v1/status", {}, b""),
    ("POST", "/v1/directory/sync", {}, b""),
    ("POST", "/v1/acl/sync", {"corpus": "default", "delta": "true"}, b""),
    ("POST", "/v1/ingest", {}, b""),
    ("GET", "/v1/traces", {}, b""),
    ("GET", "/v1/audit", {"doc": "files:travel.md"}, b""),
    ("GET", "/v1/actions", {}, b""),
    ("GET", "/v1/stats", {}, b""),
]
ROUTER_ROUTES = [r for r in ADMIN_ROUTES if r[1] != "/v1/status"]  # admin.py's own


def assert_administrators_only(
    live: Live, method: str, path: str, params: dict[str, str], body: bytes
) -> None:
    """Anonymous → 401 (with WWW-Authenticate), a signed-in non-administrator → 403."""
    with httpx.Client(base_url=live.url, timeout=30) as c:
        anonymous = c.request(method, path, params=params, content=body)
        employee = c.request(method, path, params=params, content=body, headers=live.auth("ann"))
    assert anonymous.status_code == 401, f"{path}: an anonymous caller was not refused"
    assert anonymous.headers["www-authenticate"] == "Bearer"
    assert employee.status_code == 403, f"{path}: a non-administrator was served"
    assert_error(anonymous, 401, "unauthenticated")
    assert_error(employee, 403, "forbidden")


@pytest.mark.parametrize(("method", "path", "params", "body"), ADMIN_ROUTES)
def test_every_admin_route_refuses_anonymous_and_non_administrators(
    rooted: Live, method: str, path: str, params: dict[str, str], body: bytes
) -> None:
    assert_administrators_only(rooted, method, path, params, body)


def test_the_admin_route_list_covers_every_admin_route(client: httpx.Client) -> None:
    schema = client.get("/openapi.json").json()
    tagged = {
        (method.upper(), path)
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
        if "admin" in operation.get("tags", ())
    }

    assert tagged == {(method, path) for method, path, _, _ in ADMIN_ROUTES}


def test_reverse_proof_a_route_without_the_admin_dependency_is_caught(
    rooted: Live, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same check must fail for the router built with sign-in only."""
    original = admin.admin_router
    monkeypatch.setattr(admin, "admin_router", lambda _administrator: original(_identify))

    with serving(rooted.config) as url:
        leaky = Live(url, rooted.config, rooted.tokens)
        for method, path, params, body in ROUTER_ROUTES:
            with pytest.raises(AssertionError, match="a non-administrator was served"):
                assert_administrators_only(leaky, method, path, params, body)


# --------------------------------------------------------------------------- directory


def test_directory_sync_equals_the_cli_directory_sync_json(
    rooted: Live, client: httpx.Client
) -> None:
    document = (rooted.config.parent / "directory.json").read_bytes()

    response = client.post("/v1/directory/sync", content=document, headers=rooted.auth("root"))
    expected = cli_json(rooted.config, "directory", "sync", rooted.config.parent / "directory.json")

    assert response.status_code == 200, response.text
    api = response.json()
    assert api["mode"] == "snapshot" and api["users"] == 3 and api["active_users"] == 2
    assert expected["version"] == api["version"] + 1
    assert {**api, "version": 0} == {**expected, "version": 0}


def test_directory_delta_applies_changes_only(rooted: Live, client: httpx.Client) -> None:
    delta = {"users": [{"id": "cat", "active": True}], "removed_users": []}

    response = client.post(
        "/v1/directory/sync", params={"delta": "true"}, json=delta, headers=rooted.auth("root")
    )

    assert response.status_code == 200, response.text
    assert response.json()["mode"] == "delta" and response.json()["users"] == 4


def test_a_snapshot_without_users_is_422_unless_allow_empty(
    rooted: Live, client: httpx.Client
) -> None:
    before = client.get("/v1/status", headers=rooted.auth("root")).json()["directory"]
    empty = {"users": [], "groups": []}

    refused = client.post("/v1/directory/sync", json=empty, headers=rooted.auth("root"))

    message = assert_error(refused, 422, "directory_error")["message"]
    assert message.startswith("request body: the snapshot has no users")
    assert "allow_empty=true" in message
    after = client.get("/v1/status", headers=rooted.auth("root")).json()["directory"]
    assert after == before

    applied = client.post(
        "/v1/directory/sync",
        params={"allow_empty": "true"},
        json=empty,
        headers=rooted.auth("root"),
    )
    try:
        assert applied.status_code == 200, applied.text
        assert applied.json()["warnings"] == ["no active users: every account gets nothing"]
        # Nobody is active now, administrators included.
        assert_error(client.get("/v1/status", headers=rooted.auth("root")), 403, "forbidden")
    finally:
        cli_json(rooted.config, "directory", "sync", rooted.config.parent / "directory.json")


def test_an_invalid_directory_document_is_422_naming_the_place(
    rooted: Live, client: httpx.Client
) -> None:
    body = b'{"users": [{"id": "ann", "active": "yes"}]}'

    response = client.post("/v1/directory/sync", content=body, headers=rooted.auth("root"))

    message = assert_error(response, 422, "directory_error")["message"]
    assert message.startswith("request body: users[0].active")


# --------------------------------------------------------------------------- ACLs

ACLS = [
    {"doc_id": "files:travel.md", "acl": ["group:staff"]},
    {"doc_id": "files:salaries.md", "acl": ["group:hr"]},
]


def test_acl_sync_equals_the_cli_acl_sync_json(
    rooted: Live, client: httpx.Client, tmp_path: Path
) -> None:
    jsonl = "".join(json.dumps(line) + "\n" for line in ACLS)
    (tmp_path / "acls.jsonl").write_text(jsonl, encoding="utf-8")
    params = {"corpus": "default", "delta": "true"}

    as_lines = client.post(
        "/v1/acl/sync", params=params, content=jsonl, headers=rooted.auth("root")
    )
    as_array = client.post("/v1/acl/sync", params=params, json=ACLS, headers=rooted.auth("root"))
    expected = cli_json(
        rooted.config, "acl", "sync", tmp_path / "acls.jsonl", "--corpus", "default", "--delta"
    )

    assert as_lines.status_code == 200 and as_array.status_code == 200, as_lines.text
    assert expected["mode"] == "delta" and expected["unchanged"] == 2
    for response in (as_lines, as_array):
        assert {**response.json(), "synced_at": ""} == {**expected, "synced_at": ""}


def test_a_bad_acl_line_is_422_naming_the_line_and_nothing_is_applied(
    rooted: Live, client: httpx.Client
) -> None:
    body = (
        '{"doc_id": "files:salaries.md", "acl": ["everyone"]}\n'
        "\n"
        '{"doc_id": "files:travel.md", "acl": ["everyone"], "acl": ["group:staff"]}\n'
    )

    response = client.post(
        "/v1/acl/sync", params={"corpus": "default"}, content=body, headers=rooted.auth("root")
    )

    message = assert_error(response, 422, "directory_error")["message"]
    assert message == "request body:3: key 'acl' appears twice in one object"
    assert acl_of(rooted.config, "files:salaries.md") == {"group:hr"}


def test_a_bad_acl_array_item_is_named_by_its_index(rooted: Live, client: httpx.Client) -> None:
    body = [ACLS[0], {"doc_id": "files:travel.md", "acl": ["nobody-knows-this-kind"]}]

    response = client.post(
        "/v1/acl/sync", params={"corpus": "default"}, json=body, headers=rooted.auth("root")
    )

    assert assert_error(response, 422, "directory_error")["message"].startswith(
        "request body[1]: acl[0]:"
    )


def test_every_problem_of_a_bad_acl_record_is_listed_in_the_error_body(
    rooted: Live, client: httpx.Client
) -> None:
    body = [ACLS[0], {"acl": "everyone", "owner": "ann"}]

    response = client.post(
        "/v1/acl/sync", params={"corpus": "default"}, json=body, headers=rooted.auth("root")
    )

    assert response.status_code == 422, response.text
    error = response.json()
    assert set(error) == {"error", "message", "problems"}  # problems: only when more than one
    assert error["error"] == "directory_error" and error["message"] == error["problems"][0]
    assert sorted(p.split(": ", 1)[1] for p in error["problems"]) == [
        "'acl' must be a list of principals",
        "'doc_id' must be a non-empty string",
        "unknown key 'owner'",
    ]
    assert all(p.startswith("request body[1]: ") for p in error["problems"])
    assert acl_of(rooted.config, "files:salaries.md") == {"group:hr"}


def test_acl_sync_needs_a_corpus(rooted: Live, client: httpx.Client) -> None:
    response = client.post("/v1/acl/sync", json=ACLS, headers=rooted.auth("root"))

    assert "corpus" in assert_error(response, 422, "invalid_request")["message"]


# --------------------------------------------------------------------------- ingestion


def test_ingest_outside_the_roots_fails_that_line_and_ingests_the_others(
    rooted: Live, client: httpx.Client
) -> None:
    docs = rooted.config.parent / "docs"
    (docs / "visas.md").write_text("# Visas\n\nApply for visas early.\n", encoding="utf-8")
    manifest = '{"path": "visas.md"}\n{"path": "../outside.md"}\n'

    first = client.post("/v1/ingest", content=manifest, headers=rooted.auth("root"))

    assert first.status_code == 200, first.text
    results = first.json()["results"]
    assert [(r["source"], r["status"]) for r in results] == [
        ("request body:1", "added"),
        ("request body:2", "failed"),
    ]
    assert "outside the configured [ingest] roots" in results[1]["error"]
    assert first.json()["ok"] is False
    search = client.post("/v1/search", json={"query": "outside roots"}, headers=rooted.auth("root"))
    assert OUTSIDE not in search.text
    visas = client.post("/v1/search", json={"query": "visas"}, headers=rooted.auth("ann"))
    assert [r["doc_id"] for r in visas.json()["results"]] == ["files:visas.md"]

    # The same manifest from a file named like the body, in the first root: the same JSON.
    (docs / "request body").write_text(manifest, encoding="utf-8")
    again = client.post("/v1/ingest", content=manifest, headers=rooted.auth("root"))
    rc, out, err = cli(
        "--config", rooted.config, "ingest", "--manifest", docs / "request body", "--json"
    )
    (docs / "request body").unlink()
    assert rc == 2, err
    assert again.json() == json.loads(out)
    assert again.json()["results"][0]["status"] == "unchanged"


def test_ingest_without_roots_is_refused_saying_to_configure_them(
    live: Live, tmp_path: Path
) -> None:
    with httpx.Client(base_url=live.url, timeout=30) as c:
        response = c.post("/v1/ingest", content=b'{"path": "x.md"}\n', headers=live.auth("root"))

    message = assert_error(response, 422, "metadata_error")["message"]
    assert message.startswith("request body:") and "[ingest] roots" in message


# --------------------------------------------------------------------------- traces


@pytest.fixture
def asked(rooted: Live, client: httpx.Client) -> str:
    question = "Hotels limits"
    response = client.post("/v1/ask", json={"question": question}, headers=rooted.auth("ann"))
    assert response.status_code == 200 and response.json()["status"] == "answered"
    trace_id: str = response.json()["trace_id"]
    return trace_id


def test_traces_equal_the_cli_trace_list_json_and_carry_no_text(
    rooted: Live, client: httpx.Client, asked: str
) -> None:
    response = client.get("/v1/traces", params={"limit": 5}, headers=rooted.auth("root"))
    expected = cli_json(rooted.config, "trace", "list", "--limit", "5")

    assert response.status_code == 200
    assert response.json() == expected
    assert response.json()["traces"][0]["trace_id"] == asked
    assert "Hotels" not in response.text and "ann" not in response.text


def test_audit_equals_the_cli_audit_json(rooted: Live, client: httpx.Client, asked: str) -> None:
    response = client.get(
        "/v1/audit", params={"doc": "files:travel.md"}, headers=rooted.auth("root")
    )
    expected = cli_json(rooted.config, "audit", "--doc", "files:travel.md")

    assert response.status_code == 200
    assert response.json() == expected
    assert asked in {e["trace_id"] for e in response.json()["events"]}


def test_stats_equal_the_cli_stats_json(rooted: Live, client: httpx.Client, asked: str) -> None:
    response = client.get("/v1/stats", params={"since": "1d"}, headers=rooted.auth("root"))
    expected = cli_json(rooted.config, "stats", "--since", "1d")

    assert response.status_code == 200
    api = response.json()
    assert api["requests"] >= 1 and api["denied_source_rate"] == 0
    assert {**api, "since": ""} == {**expected, "since": ""}


def test_a_bad_since_is_422(rooted: Live, client: httpx.Client) -> None:
    response = client.get("/v1/stats", params={"since": "soon"}, headers=rooted.auth("root"))

    assert assert_error(response, 422, "metadata_error")["message"].startswith("since:")
