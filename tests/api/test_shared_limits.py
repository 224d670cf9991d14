"""One allowance per user over the API, the browser UI and MCP, shared by every process on
the index, and sign-in attempts limited per client address — on real servers on loopback.

The finding: with ``rate_limit = "5/m"`` a user made 5 API requests and then 5 more through
MCP in the same minute (each process, and each door, kept buckets of its own), and
``POST /signin`` was never limited. The invariant: over all doors and processes, at most the
configured number of requests is admitted. Its reverse proof runs the same two-process
assertion against servers that keep their buckets in the process, and must see it fail.
"""

from __future__ import annotations

import ipaddress
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters

from api.conftest import create_token, free_port, serving_app
from api.test_limits import reset_allowances
from api.test_ui import Browser, csrf_of
from clearance.api.app import create_app
from clearance.config import Rate, load_settings

MCP_HEADERS = {"Accept": "application/json, text/event-stream"}
LISTING = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}

# One app over the project's index in a process of its own; "per-process" swaps in the
# limiter that kept its buckets in memory (the finding's behaviour).
APP_PROCESS = """
import sys, uvicorn
from pathlib import Path
from clearance.api.app import create_app
from clearance.api.limits import RateLimiter
from clearance.config import load_settings
config, port, kind = sys.argv[1], int(sys.argv[2]), sys.argv[3]
settings = load_settings(Path(config))
app = create_app(settings)
if kind == "per-process":
    app.state.rate_limiter = RateLimiter(settings.server.rate_limit)
uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", proxy_headers=False)
"""


def limited(project: Path, **server: str) -> Path:
    """The project's configuration with these ``[server]`` settings (rate_limit replaced)."""
    text = project.read_text(encoding="utf-8")
    rate = server.pop("rate_limit", "off")
    text = text.replace('\nrate_limit = "off"', f'\nrate_limit = "{rate}"')
    extra = "".join(f"{key} = {value}\n" for key, value in server.items())
    text = text.replace("[server]\n", f"[server]\n{extra}")
    config = project.parent / f"limited-{abs(hash(text))}.toml"
    config.write_text(text, encoding="utf-8")
    return config


@contextmanager
def process(command: list[str], url: str) -> Iterator[str]:
    """``command`` (a server) running until the block ends; yields ``url`` once it answers."""
    running = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 30
        while True:  # any answer at all (an MCP server has no /healthz)
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.TransportError:
                assert running.poll() is None, running.stdout.read() if running.stdout else ""
                assert time.monotonic() < deadline, f"{command} did not start"
                time.sleep(0.05)
        yield url
    finally:
        running.terminate()
        running.wait(30)
        if running.stdout:
            running.stdout.close()


def app_process(config: Path, kind: str = "shared") -> Any:
    port = free_port()
    command = [sys.executable, "-c", APP_PROCESS, str(config), str(port), kind]
    return process(command, f"http://127.0.0.1:{port}")


def mcp_process(config: Path) -> Any:
    port = free_port()
    command = [sys.executable, "-m", "clearance.cli.main", "--config", str(config)]
    command += ["mcp", "--http", "--port", str(port)]
    return process(command, f"http://127.0.0.1:{port}/mcp")


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture(autouse=True)
def fresh_allowances(project: Path) -> Iterator[None]:
    reset_allowances(project)
    yield
    reset_allowances(project)


@pytest.fixture(scope="module")
def tokens(project: Path) -> dict[str, str]:
    return {user: create_token(project, user)["token"] for user in ("ann", "root")}


# --------------------------------------------------------------------------- across processes


def admitted_by_two_processes(config: Path, token: str, kind: str) -> list[int]:
    """Ten requests of one user, alternating between two app processes on one index."""
    with app_process(config, kind) as first, app_process(config, kind) as second:
        return [
            httpx.get(f"{url}/v1/me", headers=bearer(token), timeout=30).status_code
            for url in [first, second] * 5
        ]


def test_two_processes_on_one_index_share_one_allowance(
    project: Path, tokens: dict[str, str]
) -> None:
    statuses = admitted_by_two_processes(
        limited(project, rate_limit="5/m"), tokens["ann"], "shared"
    )

    assert statuses.count(200) == 5 and statuses[:5] == [200] * 5
    assert statuses[5:] == [429] * 5


def test_reverse_proof_buckets_kept_in_each_process_are_caught(
    project: Path, tokens: dict[str, str]
) -> None:
    config = limited(project, rate_limit="5/m")
    statuses = admitted_by_two_processes(config, tokens["ann"], "per-process")

    assert statuses.count(200) == 10  # five in each process: the finding
    with pytest.raises(AssertionError):
        assert statuses.count(200) == 5 and statuses[5:] == [429] * 5


def test_api_ui_and_a_separate_mcp_process_spend_one_allowance(
    project: Path, tokens: dict[str, str]
) -> None:
    """The finding as reported: 5 API requests, then MCP in the same minute. Here two API
    requests, two previews in the UI and one MCP call spend ann's five; then every door,
    in either process, says 429 with Retry-After, and root's allowance is untouched."""
    config = limited(project, rate_limit="5/m")
    ann = bearer(tokens["ann"])
    with app_process(config) as api, mcp_process(config) as mcp:
        browser = Browser(api)
        signed = browser.sign_in(tokens["ann"])
        assert signed.status_code == 303
        spent = [httpx.get(f"{api}/v1/me", headers=ann).status_code for _ in range(2)]
        spent += [browser.get("/documents/nothing-here").status_code for _ in range(2)]
        spent.append(httpx.post(mcp, json=LISTING, headers={**MCP_HEADERS, **ann}).status_code)
        over_mcp = httpx.post(mcp, json=LISTING, headers={**MCP_HEADERS, **ann})
        over_api = httpx.get(f"{api}/v1/me", headers=ann)
        over_ui = browser.get("/documents/nothing-here")
        root = httpx.post(
            mcp, json=LISTING, headers={**MCP_HEADERS, **bearer(tokens["root"])}
        ).status_code
        browser.close()

    assert spent == [200, 200, 404, 404, 200]
    for refused in (over_mcp, over_api):
        assert refused.status_code == 429
        assert refused.json()["error"] == "rate_limited" and set(refused.json()) == {
            "error",
            "message",
        }
        assert 1 <= int(refused.headers["retry-after"]) <= 12
    assert over_ui.status_code == 429 and int(over_ui.headers["retry-after"]) >= 1
    assert root == 200


def test_an_mcp_stdio_process_spends_the_same_allowance(
    project: Path, tokens: dict[str, str]
) -> None:
    config = limited(project, rate_limit="3/m")
    with app_process(config) as api:
        spent = [
            httpx.get(f"{api}/v1/me", headers=bearer(tokens["ann"])).status_code for _ in range(3)
        ]
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "clearance.cli.main", "--config", str(config), "mcp", "--user", "ann"],
    )
    found: dict[str, Any] = {}

    async def main() -> None:
        async with Client(params) as client:
            found["search"] = await client.call_tool("search", {"query": "hotels"})

    anyio.run(main)

    assert spent == [200, 200, 200]
    result = found["search"]
    assert result.is_error
    assert '"error": "rate_limited"' in result.content[0].text


# --------------------------------------------------------------------------- sign-in


def signin_attempts(
    url: str, n: int, headers: dict[str, str] | None = None
) -> list[httpx.Response]:
    """``n`` token sign-ins with a wrong token, each with a fresh CSRF cookie and page."""
    out: list[httpx.Response] = []
    for _ in range(n):
        browser = Browser(url)
        page = browser.get("/signin")
        data = {"token": "clr_000000000000_" + "x" * 43, "csrf": csrf_of(page.text)}
        out.append(browser.post("/signin", data, headers=headers or {}))
        browser.close()
    return out


def test_sign_in_attempts_are_limited_per_client_address(project: Path) -> None:
    settings = load_settings(project)
    server = replace(settings.server, signin_rate_limit=Rate(3, 60.0))
    with serving_app(create_app(replace(settings, server=server))) as url:
        attempts = signin_attempts(url, 4)
        as_json = signin_attempts(url, 1, {"Accept": "application/json"})[0]
        page = signin_attempts(url, 1, {"Accept": "text/html"})[0]

    assert [a.status_code for a in attempts] == [303, 303, 303, 429]
    assert attempts[3].headers["retry-after"] == "20"
    assert as_json.status_code == 429 and as_json.json()["error"] == "rate_limited"
    assert set(as_json.json()) == {"error", "message"}
    assert page.status_code == 429 and "Too many sign-in attempts" in page.text
    assert page.headers["retry-after"].isdigit()


def test_behind_a_trusted_proxy_each_forwarded_client_has_its_own_sign_in_allowance(
    project: Path,
) -> None:
    """From a trusted proxy, the forwarded client's address is counted: one client's
    attempts leave another's alone. From any other peer ``X-Forwarded-For`` is ignored, so
    a client cannot escape its limit by writing the header (reverse proof below)."""
    settings = load_settings(project)
    server = replace(
        settings.server,
        signin_rate_limit=Rate(2, 60.0),
        trusted_proxies=(ipaddress.ip_network("127.0.0.1/32"),),
    )
    with serving_app(create_app(replace(settings, server=server))) as url:
        first = signin_attempts(url, 3, {"X-Forwarded-For": "203.0.113.7"})
        second = signin_attempts(url, 1, {"X-Forwarded-For": "198.51.100.2"})
    untrusted = replace(settings.server, signin_rate_limit=Rate(2, 60.0))
    reset_allowances(project)
    with serving_app(create_app(replace(settings, server=untrusted))) as url:
        spoofed = [
            signin_attempts(url, 1, {"X-Forwarded-For": f"192.0.2.{i}"})[0] for i in range(3)
        ]

    assert [a.status_code for a in first] == [303, 303, 429]
    assert second[0].status_code == 303
    assert [a.status_code for a in spoofed] == [303, 303, 429]
