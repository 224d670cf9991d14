"""Service metrics and the access log (issue 10 item 6), against real uvicorn servers.

The invariant: metrics and access-log lines carry route templates, codes, durations and
pseudonyms — never a user id, a token, a document id or a word of a question. It is checked
with the very values the requests used, and a reverse proof (route labels from the concrete
path) shows the same check fails on a leaky variant.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from api.conftest import Live, create_token, free_port, make_project, serving, wait_until_serving
from clearance.api import metrics as metrics_module
from clearance.api.metrics import ACCESS_LOGGER, UNMATCHED, serve_log_config
from clearance.app import Clearance
from clearance.config import load_settings, settings_from_dict
from clearance.trace.record import pseudonymise

#: A question word that appears nowhere else: in no document, route or metric name.
QUESTION = "What is the zebrafish hotel limit?"
QUESTION_WORD = "zebrafish"
QUERY = "Hotels"


def labels(exposition: str) -> dict[str, set[str]]:
    """Every label value of the exposition, by label name."""
    found: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            for name, value in sample.labels.items():
                found.setdefault(name, set()).add(value)
    return found


def sample(exposition: str, name: str, **wanted: str) -> float | None:
    for family in text_string_to_metric_families(exposition):
        for s in family.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in wanted.items()):
                return float(s.value)
    return None


def leaks(text: str, *, users: list[str], secrets: list[str]) -> list[str]:
    """What of ``secrets`` occurs anywhere in ``text``, and which user id is a label value
    or a part of one (user ids are short words: looked for in labels, not in names)."""
    found = [s for s in secrets if s in text]
    values = {v for vs in labels(text).values() for v in vs}
    found += [u for u in users if any(u in v.split("/") or u == v for v in values)]
    return found


def traffic(client: httpx.Client, live: Live) -> dict[str, str]:
    """Search, ask and document requests by ann (and a refused ask by disabled bob); the
    values a leak would show."""
    found = client.post("/v1/search", json={"query": QUERY}, headers=live.auth("ann")).json()
    doc_id = found["results"][0]["doc_id"]
    asked = client.post("/v1/ask", json={"question": QUESTION}, headers=live.auth("ann")).json()
    client.post("/v1/ask", json={"question": QUESTION}, headers=live.auth("bob"))
    assert client.get(f"/v1/documents/{doc_id}", headers=live.auth("ann")).status_code == 200
    assert (
        client.get(
            f"/v1/documents/{doc_id}", params={"assistant": "general"}, headers=live.auth("bob")
        ).status_code
        == 404
    )
    client.get("/v1/no/such/route/with-" + QUESTION_WORD)
    return {"doc_id": doc_id, "trace_id": asked["trace_id"]}


def scrape(client: httpx.Client, live: Live) -> str:
    response = client.get("/metrics", headers=live.auth("root"))
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return response.text


@pytest.fixture
def client(live: Live) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=live.url, timeout=30) as c:
        yield c


# --------------------------------------------------------------------------- what is counted


def test_metrics_count_requests_by_route_template_and_status(
    live: Live, client: httpx.Client
) -> None:
    traffic(client, live)
    text = scrape(client, live)

    requests = "clearance_http_requests_total"
    document = "/v1/documents/{doc_id}"
    assert (sample(text, requests, method="GET", route=document, status="200") or 0) >= 1
    assert (sample(text, requests, method="GET", route=document, status="404") or 0) >= 1
    assert (sample(text, requests, method="POST", route="/v1/ask", status="200") or 0) >= 2
    assert (sample(text, requests, method="POST", route="/v1/search", status="200") or 0) >= 1
    assert (sample(text, requests, route=UNMATCHED, status="404") or 0) >= 1
    assert (
        sample(text, "clearance_http_request_duration_seconds_count", route="/v1/search") or 0
    ) >= 1
    # Stage timings come from the trace record; the disabled account is a refusal by reason.
    assert (sample(text, "clearance_answer_stage_duration_seconds_count", stage="total") or 0) >= 2
    assert (sample(text, "clearance_refusals_total", reason="account_disabled") or 0) >= 1
    # The ACL age is computed when scraped, per corpus.
    age = sample(text, "clearance_corpus_acl_age_seconds", corpus="default")
    assert age is not None and age >= 0
    assert sample(text, "clearance_corpus_serving", corpus="default") == 1.0


def test_metrics_carry_no_user_id_token_document_id_or_question_text(
    live: Live, client: httpx.Client
) -> None:
    seen = traffic(client, live)
    text = scrape(client, live)

    assert (
        leaks(
            text,
            users=["ann", "bob", "root"],
            secrets=[*live.tokens.values(), seen["doc_id"], QUESTION_WORD, seen["trace_id"]],
        )
        == []
    )


def test_reverse_proof_route_labels_from_the_concrete_path_are_caught(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A leaky variant — the route label is the concrete path — must fail the same check."""
    monkeypatch.setattr(metrics_module, "route_template", lambda scope: scope["path"])
    extras: dict[str, tuple[str, ...]] = {"ann": (), "bob": (), "root": ("--admin",)}
    tokens = {user: create_token(project, user, *extra)["token"] for user, extra in extras.items()}
    with serving(project) as url, httpx.Client(base_url=url, timeout=30) as client:
        leaky = Live(url, project, tokens)
        seen = traffic(client, leaky)
        text = scrape(client, leaky)

    found = leaks(
        text,
        users=["ann", "bob", "root"],
        secrets=[*leaky.tokens.values(), seen["doc_id"], QUESTION_WORD],
    )
    assert seen["doc_id"] in found and QUESTION_WORD in found


# --------------------------------------------------------------------------- who may scrape


def test_metrics_are_for_administrators_by_default(live: Live, client: httpx.Client) -> None:
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", headers=live.auth("ann")).status_code == 403
    assert client.get("/metrics", headers=live.auth("root")).status_code == 200
    assert "/metrics" not in client.get("/openapi.json").json()["paths"]


def test_metrics_public_opens_metrics_to_anyone(tmp_path: Path) -> None:
    config = make_project(tmp_path)
    text = config.read_text(encoding="utf-8")
    if "[server]\n" not in text:
        text += "\n[server]\n"
    config.write_text(text.replace("[server]\n", "[server]\nmetrics_public = true\n"), "utf-8")
    assert load_settings(config).server.metrics_public is True
    assert settings_from_dict({}).server.metrics_public is False

    with serving(config) as url:
        response = httpx.get(f"{url}/metrics", timeout=10)

    assert response.status_code == 200
    assert "clearance_http_requests_total" in response.text


def test_each_app_has_its_own_registry(live: Live, client: httpx.Client) -> None:
    with serving(live.config) as url:
        root = {"Authorization": f"Bearer {live.tokens['root']}"}
        fresh = httpx.get(f"{url}/metrics", headers=root, timeout=10).text
    # The fresh app has not seen the module server's searches.
    assert sample(fresh, "clearance_http_requests_total", route="/v1/search") is None


# --------------------------------------------------------------------------- the access log


def test_access_log_names_the_pseudonym_and_trace_never_the_user_or_token(
    project: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "access-log-test-key"
    monkeypatch.setenv("CLEARANCE_TRACE_KEY", key)
    token = create_token(project, "ann")["token"]
    auth = {"Authorization": f"Bearer {token}"}
    caplog.set_level(logging.INFO, logger=ACCESS_LOGGER)
    with serving(project) as url, httpx.Client(base_url=url, timeout=30) as client:
        found = client.post("/v1/search", json={"query": QUERY}, headers=auth).json()
        doc_id = found["results"][0]["doc_id"]
        asked = client.post("/v1/ask", json={"question": QUESTION}, headers=auth).json()
        client.get(f"/v1/documents/{doc_id}", params={"assistant": "general"}, headers=auth)
        client.get("/healthz")

    lines = [r.getMessage() for r in caplog.records if r.name == ACCESS_LOGGER]
    pseudonym = pseudonymise("ann", key.encode())
    # The same pseudonym the trace record of that answer carries.
    engine = Clearance.open(load_settings(project))
    try:
        record = engine.trace_log().get(asked["trace_id"])
    finally:
        engine.close()
    assert record is not None and record["user"] == pseudonym

    assert "POST /v1/search 200" in lines[0] and f"user={pseudonym}" in lines[0]
    assert f"trace={asked['trace_id']}" in lines[1] and f"user={pseudonym}" in lines[1]
    assert "GET /v1/documents/{doc_id} 200" in lines[2]
    assert lines[3].startswith("GET /healthz 200") and lines[3].endswith("trace=- user=-")
    text = "\n".join(lines)
    for secret in (token, doc_id, QUESTION_WORD, QUERY, "assistant=", "127.0.0.1", "ann "):
        assert secret not in text
    assert " ann" not in text and "=ann" not in text


def test_clearance_serve_writes_our_access_log_instead_of_uvicorns(project: Path) -> None:
    assert "clearance.access" in serve_log_config({"version": 1})["loggers"]
    port = free_port()
    token = create_token(project, "ann")["token"]
    env = {**os.environ, "CLEARANCE_TRACE_KEY": "serve-key"}
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "clearance.cli.main"),
            *("--config", str(project), "serve", "--port", str(port)),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_serving(url, process)
        me = httpx.get(
            f"{url}/v1/me?x={QUESTION_WORD}",
            headers={"Authorization": f"Bearer {token}"},
            timeout=5,
        )
        assert me.status_code == 200
    finally:
        process.terminate()
        _, err = process.communicate(timeout=30)
    log = err.decode("utf-8", "replace")

    assert "clearance.access GET /v1/me 200" in log
    assert f"user={pseudonymise('ann', b'serve-key')}" in log
    assert '"GET /v1/me' not in log  # uvicorn's access line: client address and full path
    for secret in (token, QUESTION_WORD, "127.0.0.1:"):
        assert secret not in log.split("Uvicorn running on")[-1].split("\n", 1)[-1]
