"""The browser UI over real HTTP: sign-in, sessions, CSRF, the Content-Security-Policy,
previews, the administrator page and the OIDC authorization-code flow with PKCE.

Each test drives a real uvicorn server on loopback with httpx as a browser would (cookies,
form posts, ``Origin``), and checks the page, not only the status. Every protection carries a
reverse proof: with the check deliberately removed, the same probe shows the attack working.
The same scenarios in a real browser are in ``tests/ui/test_browser.py``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from api.conftest import CONFIG, Live, create_token, make_project, serving_app
from clearance.api import ui as ui_module
from clearance.api.app import create_app
from clearance.api.oidc_login import BrowserLogin, Pending, code_challenge
from clearance.api.tokens import TokenStore
from clearance.config import load_settings
from clearance.errors import ConfigError
from clitools import cli
from idp_server import Provider

CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def csrf_of(page: str) -> str:
    found = CSRF.search(page)
    assert found is not None, "the page has no CSRF field"
    return found.group(1)


class Browser:
    """An httpx client that keeps cookies and reads the CSRF token off each page."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.client = httpx.Client(base_url=base, follow_redirects=False, timeout=30)

    def close(self) -> None:
        self.client.close()

    def get(self, path: str, **kw: Any) -> httpx.Response:
        return self.client.get(path, **kw)

    def post(self, path: str, data: dict[str, str], **kw: Any) -> httpx.Response:
        return self.client.post(path, data=data, **kw)

    def sign_in(self, token: str) -> httpx.Response:
        page = self.get("/signin")
        assert page.status_code == 200
        return self.post("/signin", {"token": token, "csrf": csrf_of(page.text)})

    def ask(self, question: str, assistant: str = "", **kw: Any) -> httpx.Response:
        home = self.get("/")
        assert home.status_code == 200, home.text
        data = {"question": question, "assistant": assistant, "csrf": csrf_of(home.text)}
        return self.post("/ask", data, **kw)


@pytest.fixture
def browser(live: Live) -> Iterator[Browser]:
    b = Browser(live.url)
    yield b
    b.close()


def signed_in(live: Live, user: str) -> Browser:
    b = Browser(live.url)
    reply = b.sign_in(live.tokens[user])
    assert reply.status_code == 303 and reply.headers["location"] == "/"
    return b


# --------------------------------------------------------------------------- headers, assets


def test_every_response_carries_a_strict_content_security_policy(browser: Browser) -> None:
    for path in ("/signin", "/static/app.js", "/healthz", "/v1/me"):
        policy = browser.get(path).headers["content-security-policy"]
        assert "script-src 'self'" in policy and "default-src 'none'" in policy
        assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
        assert "frame-ancestors 'none'" in policy
    page = browser.get("/signin")
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["cache-control"] == "no-store"


def test_pages_load_nothing_from_elsewhere_and_every_asset_is_served(browser: Browser) -> None:
    html = browser.get("/signin").text
    links = re.findall(r'(?:src|href)="([^"#]+)"', html)
    assert all(link.startswith("/") for link in links), links  # nothing from another origin
    assets = [link for link in links if link.startswith("/static/")]
    assert len(assets) == 3, assets  # the script, the stylesheet and the icon
    for asset in assets:
        assert browser.get(asset).status_code == 200, asset
    # No inline script, style or event handler: the policy would block them anyway.
    assert "<script>" not in html and "<style" not in html
    assert not re.search(r"\s(?:style|on\w+)=", html)


def test_form_controls_have_labels(live: Live) -> None:
    b = signed_in(live, "ann")
    for page in (b.get("/signin"), b.get("/")):
        for control in re.findall(r"<(?:input|select|textarea)\b[^>]*>", page.text):
            if 'type="hidden"' in control:
                continue
            name = re.search(r'id="([^"]+)"', control)
            assert name is not None, control
            assert f'for="{name.group(1)}"' in page.text, f"no label for {control}"
    b.close()


# --------------------------------------------------------------------------- sign-in, sessions


def test_signing_in_with_a_token_sets_a_safe_session_cookie(live: Live, browser: Browser) -> None:
    reply = browser.sign_in(live.tokens["ann"])
    assert reply.status_code == 303
    cookie = next(
        c for c in reply.headers.get_list("set-cookie") if c.startswith("clearance_session=")
    )
    flags = cookie.lower()
    assert "httponly" in flags and "samesite=lax" in flags and "path=/" in flags
    assert "secure" not in flags  # plain http on loopback
    assert live.tokens["ann"] not in cookie  # the cookie is a session id, not the credential
    home = browser.get("/")
    assert home.status_code == 200
    assert '<span class="user" data-testid="user">ann</span>' in home.text
    assert 'id="ask-form"' in home.text


def test_behind_tls_the_cookie_is_secure_and_host_prefixed(tmp_path: Path) -> None:
    config = make_project(tmp_path)
    config.write_text(
        CONFIG.replace("[server]\n", '[server]\npublic_url = "https://clearance.example.test"\n'),
        encoding="utf-8",
    )
    token = create_token(config, "ann")["token"]
    with serving_app(create_app(load_settings(config))) as url:
        b = Browser(url)
        page = b.get("/signin")
        csrf_cookie = page.headers["set-cookie"]
        assert csrf_cookie.startswith("__Host-clearance_csrf=") and "Secure" in csrf_cookie
        # httpx keeps Secure cookies for https only: send the pair back by hand.
        value = csrf_cookie.split(";")[0].split("=", 1)[1]
        reply = b.client.post(
            "/signin",
            data={"token": token, "csrf": csrf_of(page.text)},
            headers={"Cookie": f"__Host-clearance_csrf={value}"},
        )
        session = reply.headers["set-cookie"]
        assert session.startswith("__Host-clearance_session=")
        assert "Secure" in session and "HttpOnly" in session
        b.close()


def test_a_bad_token_signs_nobody_in(live: Live, browser: Browser) -> None:
    for token in ("clr_000000000000_" + "x" * 43, live.tokens["ann"] + "x", ""):
        reply = browser.sign_in(token)
        assert reply.status_code == 303 and reply.headers["location"] == "/signin?error=token"
        assert "clearance_session" not in reply.headers.get("set-cookie", "")
    page = browser.get("/signin?error=token")
    assert page.status_code == 401 and "That token is not valid" in page.text
    assert browser.get("/").headers["location"] == "/signin"


def test_a_revoked_token_ends_its_browser_session_on_the_next_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = make_project(tmp_path)
    created = create_token(config, "ann")
    with serving_app(create_app(load_settings(config))) as url:
        b = Browser(url)
        assert b.sign_in(created["token"]).status_code == 303
        assert b.get("/").status_code == 200
        rc, _, err = cli("--config", config, "token", "revoke", created["id"])
        assert rc == 0, err
        assert b.get("/").headers.get("location") == "/signin"
        assert b.post("/ask", {"question": "Where do I book trains?"}).status_code == 401

        # Reverse proof: a UI that trusted the session without re-checking its token would
        # still serve the page — the probe above would have seen it.
        def ignoring_revocation(self: TokenStore, token_id: str) -> Any:
            return next(t for t in self.list() if t.id == token_id)

        monkeypatch.setattr(TokenStore, "current", ignoring_revocation)
        assert b.get("/").status_code == 200
        b.close()


def test_signing_out_ends_the_session_on_the_server(live: Live) -> None:
    b = signed_in(live, "ann")
    cookie = b.client.cookies.get("clearance_session")
    home = b.get("/")
    reply = b.post("/signout", {"csrf": csrf_of(home.text)})
    assert reply.status_code == 303 and reply.headers["location"] == "/signin"
    # The old cookie, replayed, names no session any more.
    replay = httpx.get(f"{live.url}/", cookies={"clearance_session": cookie}, timeout=30)
    assert replay.status_code == 303 and replay.headers["location"] == "/signin"
    b.close()


# --------------------------------------------------------------------------- CSRF


def _forgeries(home: str) -> dict[str, tuple[dict[str, str], dict[str, str]]]:
    good = csrf_of(home)
    question = "Where do I book trains?"
    return {
        "no token": ({"question": question}, {}),
        "wrong token": ({"question": question, "csrf": good[:-2] + "xx"}, {}),
        "another origin": ({"question": question, "csrf": good}, {"Origin": "https://evil.test"}),
        "cross-site fetch": (
            {"question": question, "csrf": good},
            {"Sec-Fetch-Site": "cross-site"},
        ),
    }


def test_a_forged_ask_is_refused(live: Live) -> None:
    b = signed_in(live, "ann")
    for name, (data, headers) in _forgeries(b.get("/").text).items():
        reply = b.post("/ask", data, headers=headers)
        assert reply.status_code == 403, name
        assert "did not come from a Clearance page" in reply.text, name
        assert "Tokyo" not in reply.text, name
    honest = b.ask("Where do I book trains?")
    assert honest.status_code == 200 and "Tokyo" in honest.text
    b.close()


def test_forged_asks_would_be_answered_without_the_check(
    live: Live, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reverse proof of the test above: with the CSRF check removed, each forgery gets the
    answer — so the 403s there are the check's doing."""
    b = signed_in(live, "ann")
    monkeypatch.setattr(ui_module.Door, "forged", lambda *a: False)
    for name, (data, headers) in _forgeries(b.get("/").text).items():
        reply = b.post("/ask", data, headers=headers)
        assert reply.status_code == 200 and "Tokyo" in reply.text, name
    b.close()


def test_login_csrf_is_refused(live: Live, browser: Browser) -> None:
    """A cross-site form that signs the victim in as the attacker lacks the double-submit
    cookie (or comes from another origin)."""
    bare = httpx.post(
        f"{live.url}/signin", data={"token": live.tokens["ann"], "csrf": "guess"}, timeout=30
    )
    assert bare.status_code == 403 and "clearance_session" not in bare.headers.get("set-cookie", "")
    page = browser.get("/signin")
    cross = browser.post(
        "/signin",
        {"token": live.tokens["ann"], "csrf": csrf_of(page.text)},
        headers={"Origin": "https://evil.test"},
    )
    assert cross.status_code == 403


# --------------------------------------------------------------------------- asking


def test_an_answer_page_shows_the_cited_answer(live: Live) -> None:
    b = signed_in(live, "ann")
    page = b.ask("Where do I book trains?")
    assert page.status_code == 200
    assert 'data-status="answered"' in page.text and "Tokyo" in page.text
    assert 'href="#S1"' in page.text and 'id="S1"' in page.text
    assert 'class="title">Travel policy</a>' in page.text
    # Each citation is labelled with its trust (docs/design.md: origin decides trust); a file
    # of the operator's own folder is the organisation's writing.
    assert 'class="trust trust-trusted">trusted source</span>' in page.text
    # The preview opens at the cited passage: the citation's locator travels with the link.
    assert re.search(
        r'href="/documents/files%3Atravel\.md\?locator=section%3D[^"]+#cited"', page.text
    )
    b.close()


def test_the_stream_sends_checked_sentences_then_the_rendered_answer(live: Live) -> None:
    b = signed_in(live, "ann")
    home = b.get("/")
    reply = b.post(
        "/ask",
        {"question": "Where do I book trains?", "csrf": csrf_of(home.text)},
        headers={"Accept": "text/event-stream", "X-CSRF-Token": csrf_of(home.text)},
    )
    assert reply.status_code == 200
    events = re.findall(r"^event: (\w+)$", reply.text, re.M)
    assert events[0] == "sentence" and events[-2:] == ["answer", "rendered"]
    assert "Tokyo" in reply.text
    b.close()


def test_a_hidden_document_is_refused_with_the_fixed_text(live: Live) -> None:
    b = signed_in(live, "ann")
    page = b.ask("What is the board travel allowance per night in the salary bands?")
    assert page.status_code == 200
    assert 'data-status="answered"' not in page.text
    # the hidden allowance as a number, not three digits of the page's random trace id
    assert re.search(r"\b900\b", page.text) is None and "Salary bands" not in page.text
    b.close()


def test_a_disabled_account_sees_no_data(live: Live) -> None:
    b = signed_in(live, "bob")
    home = b.get("/")
    assert 'id="inactive"' in home.text and 'id="ask-form"' not in home.text
    assert "general" not in home.text  # no assistant is offered
    reply = b.post("/ask", {"question": "Where do I book trains?", "csrf": csrf_of(home.text)})
    assert reply.status_code == 200 and 'data-status="account_disabled"' in reply.text
    assert "Tokyo" not in reply.text
    b.close()


def test_a_question_too_long_is_a_plain_error(live: Live) -> None:
    b = signed_in(live, "ann")
    reply = b.ask("x" * 100_000)
    assert reply.status_code in (413, 422)
    assert "Tokyo" not in reply.text
    b.close()


# --------------------------------------------------------------------------- previews


def test_a_readable_document_opens_as_a_preview(live: Live) -> None:
    b = signed_in(live, "ann")
    page = b.get("/documents/files:travel.md")
    assert page.status_code == 200
    assert "<h1>Travel policy</h1>" in page.text and "Book trains in Tokyo" in page.text
    b.close()


def absent_and_unreadable(b: Browser) -> tuple[str, str]:
    absent = b.get("/documents/files:no-such-file.md")
    unreadable = b.get("/documents/files:salaries.md")
    assert absent.status_code == unreadable.status_code == 404
    return absent.text, unreadable.text


def test_an_unreadable_document_is_the_same_404_page_as_an_absent_one(live: Live) -> None:
    b = signed_in(live, "ann")
    absent, unreadable = absent_and_unreadable(b)
    assert absent == unreadable
    assert "900" not in unreadable and "Salary" not in unreadable
    # An administrator in the ACL does see it: the 404 above is the ACL's doing.
    root = signed_in(live, "root")
    assert "Salary bands" in root.get("/documents/files:salaries.md").text
    b.close()
    root.close()


def test_the_404_comparison_catches_a_page_that_tells_them_apart(
    live: Live, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reverse proof: a preview that said "not allowed" for an unreadable document (and so
    confirmed it exists) makes the two pages differ."""
    real = ui_module.preview

    def telling(
        engine: Any, user_id: str, doc_id: str, assistant: str | None, locator: str | None = None
    ) -> Any:
        if engine.store.get_document(doc_id) is not None:
            try:
                return real(engine, user_id, doc_id, assistant, locator)
            except Exception:
                return {
                    "doc_id": doc_id,
                    "title": "Not allowed",
                    "uri": "",
                    "link": None,
                    "corpus": "",
                    "sensitivity": "",
                    "updated_at": None,
                    "preview": "",
                    "preview_truncated": False,
                    "passage": None,
                }
        return real(engine, user_id, doc_id, assistant, locator)

    monkeypatch.setattr(ui_module, "preview", telling)
    b = signed_in(live, "ann")
    absent = b.get("/documents/files:no-such-file.md")
    unreadable = b.get("/documents/files:salaries.md")
    assert (absent.status_code, absent.text) != (unreadable.status_code, unreadable.text)
    b.close()


def test_unknown_pages_are_html_for_browsers_and_json_for_the_api(live: Live) -> None:
    b = signed_in(live, "ann")
    page = b.get("/no/such/page", headers={"Accept": "text/html"})
    assert page.status_code == 404 and "<h1>Not found</h1>" in page.text
    api = b.get("/v1/no-such-route", headers={"Accept": "text/html"})
    assert api.status_code == 404 and api.json() == {"error": "not_found", "message": "not found"}
    b.close()


# --------------------------------------------------------------------------- administrators


def test_the_admin_page_is_for_administrators(live: Live, browser: Browser) -> None:
    assert browser.get("/admin").headers["location"] == "/signin"
    ann = signed_in(live, "ann")
    refused = ann.get("/admin")
    assert refused.status_code == 403 and "for administrators" in refused.text
    assert "Corpora" not in refused.text
    root = signed_in(live, "root")
    page = root.get("/admin")
    assert page.status_code == 200
    assert 'data-corpus="default"' in page.text and "serving" in page.text
    assert 'id="directory-version"' in page.text
    ann.close()
    root.close()


def test_the_admin_page_shows_each_source_and_its_last_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = make_project(tmp_path)
    share = tmp_path / "share"
    share.mkdir()
    (share / "plan.md").write_text("Reorganisation plan.", encoding="utf-8")
    (share / "_meta.json").write_text(json.dumps({"acl": ["group:staff"]}), encoding="utf-8")
    source = (
        f'\n[sources.share]\nkind = "filesystem"\ncorpus = "default"\n'
        f'credentials = {{ token = "SHARE_TOKEN" }}\n'
        f"[sources.share.options]\npath = {json.dumps(str(share))}\n"
    )
    config.write_text(CONFIG + source, encoding="utf-8")
    monkeypatch.setenv("SHARE_TOKEN", "tok-VERY-secret-value")
    assert cli("--config", config, "source", "sync", "share")[0] == 0
    share.rename(tmp_path / "unplugged")  # the source stops answering
    assert cli("--config", config, "source", "sync", "share")[0] == 1
    token = create_token(config, "root", "--admin")["token"]
    with serving_app(create_app(load_settings(config))) as url:
        root = Browser(url)
        root.sign_in(token)
        page = root.get("/admin").text
        root.close()
    row = re.search(r'<tr data-source="share">(.*?)</tr>', page, re.S)
    assert row is not None, page
    assert "filesystem" in row.group(1) and ">default<" in row.group(1)
    assert ">failing<" in row.group(1) and "does not exist" in row.group(1)
    assert "tok-VERY-secret-value" not in page and "SHARE_TOKEN" not in page


def test_the_admin_page_shows_no_question_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = make_project(tmp_path)
    # Traces keep the question text for this corpus: the page must still not show it.
    config.write_text(CONFIG + '\n[trace]\nquestion_text_corpora = ["default"]\n', encoding="utf-8")
    tokens = {
        u: create_token(config, u, *x)["token"] for u, x in (("ann", ()), ("root", ("--admin",)))
    }
    # Answerable (so the trace keeps its text), and a phrase no page shows otherwise.
    question = "Where do I book trains in Tokyo?"
    with serving_app(create_app(load_settings(config))) as url:
        ann, root = Browser(url), Browser(url)
        ann.sign_in(tokens["ann"])
        root.sign_in(tokens["root"])
        answered = ann.ask(question)
        assert answered.status_code == 200 and 'data-status="answered"' in answered.text
        page = root.get("/admin").text
        assert "book trains" not in page.lower()
        assert "<code>ann</code>" not in page  # users are pseudonyms
        assert re.search(r"<td>answered</td>", page)

        # Reverse proof: a trace row that carried the question would show it.
        original = ui_module._trace_row
        monkeypatch.setattr(
            ui_module,
            "_trace_row",
            lambda r: {**original(r), "assistant": str(r.get("question_text"))},
        )
        assert "book trains" in root.get("/admin").text.lower()
        ann.close()
        root.close()


# --------------------------------------------------------------------------- OIDC with PKCE


@pytest.fixture
def sso(tmp_path: Path) -> Iterator[tuple[Provider, str]]:
    config = make_project(tmp_path)
    with Provider(user="ann") as idp:
        config.write_text(CONFIG + "\n" + idp.settings(), encoding="utf-8")
        with serving_app(create_app(load_settings(config))) as url:
            yield idp, url


def single_sign_on(url: str) -> tuple[Browser, httpx.Response]:
    """Click "sign in with single sign-on" and follow the provider back."""
    b = Browser(url)
    assert 'id="sso"' in b.get("/signin").text
    start = b.get("/signin/oidc")
    assert start.status_code == 303
    to_provider = start.headers["location"]
    back = httpx.get(to_provider, timeout=30, follow_redirects=False)
    assert back.status_code == 302, back.text
    callback = urlsplit(back.headers["location"])
    return b, b.get(f"{callback.path}?{callback.query}")


def test_single_sign_on_with_pkce_signs_the_user_in(sso: tuple[Provider, str]) -> None:
    idp, url = sso
    b, reply = single_sign_on(url)
    assert reply.status_code == 303 and reply.headers["location"] == "/"
    home = b.get("/")
    assert (
        home.status_code == 200 and '<span class="user" data-testid="user">ann</span>' in home.text
    )
    assert idp.token_errors == []
    # The authorization request carried an S256 challenge, and the state and nonce are fresh.
    authorize = next(r for r in idp.requests if r.path.startswith("/authorize"))
    query = parse_qs(urlsplit(authorize.path).query)
    assert query["code_challenge_method"] == ["S256"]
    assert len(query["code_challenge"][0]) == 43 and len(query["state"][0]) >= 32
    b.close()


@pytest.mark.parametrize("misbehave", ["nonce", "audience"])
def test_an_id_token_not_issued_for_this_sign_in_is_refused(
    sso: tuple[Provider, str], misbehave: str
) -> None:
    idp, url = sso
    idp.misbehave = misbehave
    b, reply = single_sign_on(url)
    assert reply.status_code == 303 and reply.headers["location"] == "/signin?error=sso"
    assert b.get("/").headers["location"] == "/signin"
    b.close()


def test_the_nonce_check_is_what_refuses_a_replayed_id_token(
    sso: tuple[Provider, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reverse proof: without the nonce comparison the wrong-nonce token signs in."""
    idp, url = sso
    idp.misbehave = "nonce"
    real_finish = BrowserLogin.finish

    def without_nonce_check(
        self: BrowserLogin, code: str, state: str, pending: Any, uri: str
    ) -> Any:
        real_verify = self.verifier.verify_claims

        def lenient(token: str) -> Any:
            user, claims = real_verify(token)
            return user, {**claims, "nonce": pending.nonce}

        monkeypatch.setattr(self.verifier, "verify_claims", lenient)
        return real_finish(self, code, state, pending, uri)

    monkeypatch.setattr(BrowserLogin, "finish", without_nonce_check)
    b, reply = single_sign_on(url)
    assert reply.headers["location"] == "/"
    b.close()


def test_a_callback_without_the_browsers_state_is_refused(sso: tuple[Provider, str]) -> None:
    _, url = sso
    victim, attacker = Browser(url), Browser(url)
    start = attacker.get("/signin/oidc")
    back = httpx.get(start.headers["location"], timeout=30)
    callback = urlsplit(back.headers["location"])
    # The attacker's callback URL, opened in the victim's browser (login CSRF).
    reply = victim.get(f"{callback.path}?{callback.query}")
    assert reply.headers["location"] == "/signin?error=sso"
    assert victim.get("/").headers["location"] == "/signin"
    victim.close()
    attacker.close()


def test_the_token_endpoint_sees_the_verifier_of_the_challenge(sso: tuple[Provider, str]) -> None:
    idp, url = sso
    b, _ = single_sign_on(url)
    token_request = next(r for r in idp.requests if r.path == "/token")
    form = {k: v[0] for k, v in parse_qs(token_request.body.decode()).items()}
    authorize = next(r for r in idp.requests if r.path.startswith("/authorize"))
    challenge = parse_qs(urlsplit(authorize.path).query)["code_challenge"][0]
    assert code_challenge(form["code_verifier"]) == challenge
    assert 43 <= len(form["code_verifier"]) <= 128
    b.close()


def test_pending_sign_in_cookies_are_parsed_strictly() -> None:
    assert Pending.from_cookie(None) is None
    assert Pending.from_cookie("a.b") is None
    assert Pending.from_cookie("a.b.c.d") is None
    assert Pending.from_cookie("a..c") is None
    assert Pending.from_cookie("s.n.v") == Pending("s", "n", "v")


# --------------------------------------------------------------------------- CORS


def test_cors_is_off_by_default_and_opens_only_to_configured_origins(tmp_path: Path) -> None:
    preflight = {
        "Origin": "https://portal.example.test",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type",
    }
    config = make_project(tmp_path)
    with serving_app(create_app(load_settings(config))) as url:
        closed = httpx.options(f"{url}/v1/search", headers=preflight, timeout=30)
        assert "access-control-allow-origin" not in closed.headers
    config.write_text(
        CONFIG.replace("[server]\n", '[server]\ncors_origins = ["https://portal.example.test"]\n'),
        encoding="utf-8",
    )
    with serving_app(create_app(load_settings(config))) as url:
        allowed = httpx.options(f"{url}/v1/search", headers=preflight, timeout=30)
        assert allowed.headers["access-control-allow-origin"] == "https://portal.example.test"
        assert "access-control-allow-credentials" not in allowed.headers  # bearer only
        other = httpx.options(
            f"{url}/v1/search", headers={**preflight, "Origin": "https://evil.test"}, timeout=30
        )
        assert other.headers.get("access-control-allow-origin") != "https://evil.test"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('cors_origins = ["portal.example.test"]', "server.cors_origins"),
        ('cors_origins = ["https://portal.example.test/app"]', "server.cors_origins"),
        ('public_url = "clearance.example.test"', "server.public_url"),
        ('session_lifetime = "0s"', "server.session_lifetime"),
    ],
)
def test_bad_ui_settings_are_refused_naming_the_key(
    tmp_path: Path, line: str, message: str
) -> None:
    config = tmp_path / "clearance.toml"
    config.write_text(CONFIG.replace("[server]\n", f"[server]\n{line}\n"), encoding="utf-8")
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_settings(config)


# --------------------------------------------------------------------------- behind a proxy

PROXY = "127.0.0.2"  # the trusted proxy; 127.0.0.1 is any other client


def test_behind_a_trusted_proxy_the_ui_signs_in_from_its_header(tmp_path: Path) -> None:
    config = make_project(tmp_path)
    config.write_text(
        CONFIG.replace("[server]\n", f'[server]\ntrusted_proxies = ["{PROXY}"]\n'),
        encoding="utf-8",
    )
    user = {"X-Forwarded-User": "ann"}

    def client(url: str, address: str) -> httpx.Client:
        transport = httpx.HTTPTransport(local_address=address)
        return httpx.Client(base_url=url, transport=transport, headers=user, timeout=30)

    with (
        serving_app(create_app(load_settings(config))) as url,
        client(url, PROXY) as proxy,
        client(url, PROXY) as cookieless,
        client(url, "127.0.0.1") as direct,
    ):
        home = proxy.get("/")
        assert home.status_code == 200 and 'data-testid="user">ann<' in home.text
        # No session: the CSRF token is a double-submit cookie set with the page.
        assert "clearance_csrf" in proxy.cookies and "clearance_session" not in proxy.cookies
        token = csrf_of(home.text)
        question = {"question": "Where do I book trains?", "csrf": token}
        answer = proxy.post("/ask", data=question)
        assert answer.status_code == 200 and "Tokyo" in answer.text
        # The token without its cookie, as a cross-site form would send it: refused.
        assert cookieless.post("/ask", data=question).status_code == 403

        refused = direct.get("/")
        assert refused.status_code == 303 and refused.headers["location"] == "/signin"


@pytest.mark.parametrize(
    ("locator", "shown"),
    [
        (
            "section=Report > 2. Results > Japan,table=1,row=Revenue (USD m),col=FY2024",
            "Report › 2. Results › Japan · table 1 · row Revenue (USD m) · column FY2024",
        ),
        ("page=3", "page 3"),
        (
            "slide=2,chart=1,series=Revenue,category=FY2024",
            "slide 2 · chart 1 · series Revenue · category FY2024",
        ),
        ("sheet=P&L,range=A1:D9", "sheet P&L · cells A1:D9"),
        ("not a locator", "not a locator"),
    ],
)
def test_citations_show_their_place_in_words(locator: str, shown: str) -> None:
    assert ui_module.place(locator) == shown


def test_a_provisioning_token_signs_nobody_in_to_the_browser(live: Live, browser: Browser) -> None:
    """A scim token is refused at the sign-in form like a bad one. Reverse proof: a reader
    token of the same shape signs in."""
    provisioning = create_token(live.config, "okta-provisioning", "--scope", "scim")["token"]
    reply = browser.sign_in(provisioning)
    assert reply.status_code == 303 and reply.headers["location"] == "/signin?error=token"
    assert "clearance_session" not in reply.headers.get("set-cookie", "")
    assert browser.sign_in(live.tokens["ann"]).headers["location"] == "/"


def test_a_search_only_token_cannot_ask_in_the_browser(live: Live) -> None:
    searcher = create_token(live.config, "ann", "--scope", "search")["token"]
    b = Browser(live.url)
    try:
        assert b.sign_in(searcher).headers["location"] == "/"
        refused = b.ask("Where do I book trains?")
        assert refused.status_code == 403 and "may search but not ask" in refused.text
    finally:
        b.close()
    reader = signed_in(live, "ann")  # reverse proof: the default token asks
    try:
        assert reader.ask("Where do I book trains?").status_code == 200
    finally:
        reader.close()
