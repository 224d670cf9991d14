"""Fuzz the request bodies of the live server: whatever bytes arrive, the answer is a
success or one of the expected refusals in the one error shape — never a 500, never the
input echoed back in an error."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from api.conftest import Live, serving

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=50),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=10,
)
_BODIES = st.one_of(
    st.binary(max_size=300),
    _JSON.map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries(
        {}, optional={"question": _JSON, "query": _JSON, "assistant": _JSON, "k": _JSON}
    ).map(lambda v: json.dumps(v).encode()),
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(body=_BODIES, path=st.sampled_from(["/v1/ask", "/v1/search"]))
def test_any_body_gets_a_result_or_the_one_error_shape(live: Live, body: bytes, path: str) -> None:
    headers = {**live.auth("ann"), "Content-Type": "application/json"}

    response = httpx.post(live.url + path, content=body, headers=headers, timeout=30)

    assert response.status_code in (200, 404, 422), response.text
    if response.status_code != 200:
        error = response.json()
        assert set(error) == {"error", "message"}
        assert error["error"] in ("invalid_request", "bad_question", "not_found")


def test_readyz_is_503_until_a_directory_is_loaded(tmp_path: Path) -> None:
    config = tmp_path / "clearance.toml"
    config.write_text('[embedding]\nprovider = "none"\n', encoding="utf-8")

    with serving(config) as url:
        response = httpx.get(f"{url}/readyz", timeout=10)

    assert response.status_code == 503
    assert response.json()["directory_loaded"] is False
