"""OIDC / JWT bearer tokens: every way a token is refused, and the JWKS cache's bounds.

Tokens are minted here with real RSA and EC key pairs and PyJWT; the JWKS is served by a real
HTTP server on loopback (``loopback_server``) or read from a file. Rejections each have their
own test; the algorithm pinning and the audience check carry reverse proofs: a deliberately
permissive verifier accepts the very token the real one refuses.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt import PyJWK
from jwt.algorithms import ECAlgorithm, RSAAlgorithm
from jwt.warnings import InsecureKeyLengthWarning

from clearance.api.oidc import (
    AuthError,
    JwksCache,
    JwtVerifier,
    OidcSettings,
    parse_oidc_settings,
)
from clearance.errors import ClearanceError, ConfigError
from loopback_server import RecordedRequest, Reply, ScriptedServer, closed_url, json_reply

ISSUER = "https://idp.example.test/realms/acme"
AUDIENCE = "clearance"

RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
RSA_OTHER = rsa.generate_private_key(public_exponent=65537, key_size=2048)
RSA_NEXT = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC_KEY = ec.generate_private_key(ec.SECP256R1())


def rsa_jwk(key: rsa.RSAPrivateKey, kid: str, **extra: Any) -> dict[str, Any]:
    return {**RSAAlgorithm.to_jwk(key.public_key(), as_dict=True), "kid": kid, **extra}


def ec_jwk(key: ec.EllipticCurvePrivateKey, kid: str, **extra: Any) -> dict[str, Any]:
    return {**ECAlgorithm.to_jwk(key.public_key(), as_dict=True), "kid": kid, **extra}


JWKS = {"keys": [rsa_jwk(RSA_KEY, "rsa-1", use="sig"), ec_jwk(EC_KEY, "ec-1")]}


def claims(**overrides: Any) -> dict[str, Any]:
    now = int(time.time())
    base = {
        "iss": ISSUER,
        "aud": AUDIENCE,
        "sub": "ann",
        "iat": now,
        "nbf": now,
        "exp": now + 600,
    }
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not None}


def mint(
    key: Any = RSA_KEY, alg: str = "RS256", kid: str | None = "rsa-1", **overrides: Any
) -> str:
    headers = {"kid": kid} if kid is not None else {}
    return jwt.encode(claims(**overrides), key, algorithm=alg, headers=headers)


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def public_modulus(key: rsa.RSAPrivateKey) -> bytes:
    """The RSA public key as the JWKS publishes it (``n``), as bytes."""
    n = key.public_key().public_numbers().n
    return n.to_bytes((n.bit_length() + 7) // 8, "big")


def confusion_token(kid: str = "rsa-1") -> str:
    """The classic HS/RS confusion: an HS256 token whose HMAC secret is the RSA *public* key
    material (which anyone can fetch from the JWKS). Built by hand, without PyJWT."""
    header = b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": kid}).encode())
    payload = b64(json.dumps(claims(sub="mallory")).encode())
    signing_input = f"{header}.{payload}".encode()
    signature = hmac.new(public_modulus(RSA_KEY), signing_input, hashlib.sha256).digest()
    return f"{header}.{payload}.{b64(signature)}"


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class JwksServer(ScriptedServer[RecordedRequest]):
    """An identity provider's JWKS endpoint on loopback; ``serve`` switches the key set."""

    def __init__(self, jwks: dict[str, Any] = JWKS) -> None:
        self.jwks = jwks
        super().__init__(RecordedRequest, lambda r: json_reply(self.jwks))

    @property
    def url(self) -> str:
        return self.url_for("/certs")

    def serve(self, jwks: dict[str, Any]) -> None:
        self.jwks = jwks
        self.respond_with(lambda r: json_reply(self.jwks))


def settings(jwks: str, **overrides: Any) -> OidcSettings:
    values: dict[str, Any] = {"issuer": ISSUER, "audience": AUDIENCE, "jwks": jwks}
    values.update(overrides)
    return OidcSettings(**values)


def verifier_for(jwks: str, clock: Clock | None = None, **overrides: Any) -> JwtVerifier:
    s = settings(jwks, **overrides)
    return JwtVerifier(s, JwksCache(s, clock=clock or Clock()))


@pytest.fixture
def server() -> Iterator[JwksServer]:
    with JwksServer() as srv:
        yield srv


@pytest.fixture
def verifier(server: JwksServer) -> JwtVerifier:
    return verifier_for(server.url)


def rejected(verifier: JwtVerifier, token: str, reason: str) -> AuthError:
    """Asserts that ``token`` is refused for ``reason`` and that nothing of the token leaks
    into the error (its message or JSON shape)."""
    with pytest.raises(AuthError) as caught:
        verifier.verify(token)
    err = caught.value
    assert err.reason == reason, err.message
    assert err.code == "unauthenticated"
    shown = str(err) + json.dumps(err.to_dict())
    for part in [token, *token.split(".")]:
        assert len(part) < 8 or part not in shown
    return err


# --------------------------------------------------------------------------- acceptance


def test_a_valid_rsa_token_from_the_url_jwks_gives_the_user_id(
    verifier: JwtVerifier, server: JwksServer
) -> None:
    assert verifier.verify(mint()) == "ann"
    assert server.request_count == 1


def test_a_valid_ec_token_from_a_jwks_file_gives_the_user_id(tmp_path: Path) -> None:
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps(JWKS), encoding="utf-8")
    verifier = verifier_for(str(path))
    assert verifier.verify(mint(EC_KEY, "ES256", "ec-1")) == "ann"


def test_the_user_id_claim_is_configurable(server: JwksServer) -> None:
    verifier = verifier_for(server.url, user_claim="preferred_username")
    token = mint(sub="0f9c-opaque-id", preferred_username="ann.smith")
    assert verifier.verify(token) == "ann.smith"


def test_group_claims_in_the_token_are_ignored(verifier: JwtVerifier) -> None:
    token = mint(groups=["hr", "admins"], roles=["admin"], is_admin=True)
    result = verifier.verify(token)
    assert result == "ann"
    assert type(result) is str  # only the id: membership comes from the synced directory


def test_a_token_without_kid_matches_the_only_key_for_its_algorithm(
    verifier: JwtVerifier,
) -> None:
    assert verifier.verify(mint(kid=None)) == "ann"


# --------------------------------------------------------------------------- rejections


def test_an_expired_token_is_refused(verifier: JwtVerifier) -> None:
    now = int(time.time())
    rejected(verifier, mint(iat=now - 3600, nbf=now - 3600, exp=now - 60), "expired")


def test_expiry_allows_the_configured_clock_leeway(verifier: JwtVerifier) -> None:
    assert verifier.verify(mint(exp=int(time.time()) - 5)) == "ann"


def test_a_token_not_valid_yet_is_refused(verifier: JwtVerifier) -> None:
    rejected(verifier, mint(nbf=int(time.time()) + 600), "not_yet_valid")


def test_a_token_issued_in_the_future_is_refused(verifier: JwtVerifier) -> None:
    rejected(verifier, mint(iat=int(time.time()) + 600, nbf=None), "not_yet_valid")


def test_a_token_from_another_issuer_is_refused(verifier: JwtVerifier) -> None:
    rejected(verifier, mint(iss="https://evil.example.test/"), "wrong_issuer")


def test_a_token_for_another_audience_is_refused(verifier: JwtVerifier) -> None:
    rejected(verifier, mint(aud="payroll"), "wrong_audience")


def test_reverse_proof_the_audience_check_is_what_refuses_it(server: JwksServer) -> None:
    # The same token, otherwise valid, passes a verifier that also accepts "payroll".
    token = mint(aud="payroll")
    permissive = verifier_for(server.url, audience=(AUDIENCE, "payroll"))
    assert permissive.verify(token) == "ann"


@pytest.mark.parametrize("claim", ["exp", "iss", "aud"])
def test_a_token_missing_a_required_claim_is_refused(verifier: JwtVerifier, claim: str) -> None:
    err = rejected(verifier, mint(**{claim: None}), "missing_claim")
    assert claim in err.message


def test_a_token_signed_by_another_key_is_refused(verifier: JwtVerifier) -> None:
    rejected(verifier, mint(RSA_OTHER), "bad_signature")


def test_a_tampered_payload_is_refused(verifier: JwtVerifier) -> None:
    header, _, signature = mint().split(".")
    forged = b64(json.dumps(claims(sub="root")).encode())
    rejected(verifier, f"{header}.{forged}.{signature}", "bad_signature")


def test_an_unsigned_none_token_is_refused(verifier: JwtVerifier) -> None:
    token = jwt.encode(claims(), None, algorithm="none", headers={"kid": "rsa-1"})
    rejected(verifier, token, "algorithm_not_allowed")


def test_an_hs256_token_signed_with_the_rsa_public_key_is_refused(verifier: JwtVerifier) -> None:
    rejected(verifier, confusion_token(), "algorithm_not_allowed")


def test_reverse_proof_a_verifier_trusting_the_header_alg_accepts_the_confusion_token(
    server: JwksServer,
) -> None:
    token = confusion_token()
    # A naive verifier: the header's own alg and the published key material as bytes.
    naive = jwt.decode(
        token,
        key=public_modulus(RSA_KEY),
        algorithms=[jwt.get_unverified_header(token)["alg"]],
        audience=AUDIENCE,
        issuer=ISSUER,
    )
    assert naive["sub"] == "mallory"

    # Our verifier with the pin loosened to include HS256 and a cache that hands out the
    # public key as an HMAC secret: the same token now gets through.
    class ConfusedCache(JwksCache):
        def key_for(self, kid: str | None, alg: str) -> PyJWK | None:
            if alg == "HS256":
                return PyJWK({"kty": "oct", "k": rsa_jwk(RSA_KEY, "rsa-1")["n"]}, algorithm="HS256")
            return super().key_for(kid, alg)

    loose = settings(server.url)
    object.__setattr__(loose, "algorithms", ("RS256", "HS256"))  # bypasses the refusal
    assert JwtVerifier(loose, ConfusedCache(loose)).verify(token) == "mallory"


def test_an_algorithm_outside_the_pinned_list_is_refused(server: JwksServer) -> None:
    only_ec = verifier_for(server.url, algorithms=("ES256",))
    rejected(only_ec, mint(), "algorithm_not_allowed")


def test_a_token_whose_alg_does_not_fit_its_key_is_refused(verifier: JwtVerifier) -> None:
    # ES256 in the header, but the kid names the RSA key.
    rejected(verifier, mint(EC_KEY, "ES256", "rsa-1"), "unknown_key")


@pytest.mark.parametrize("alg", ["none", "HS256", "HS512", "hs384"])
def test_settings_refuse_none_and_symmetric_algorithms(alg: str) -> None:
    with pytest.raises(ConfigError, match=r"server\.oidc\.algorithms"):
        settings("jwks.json", algorithms=("RS256", alg))


def test_a_token_with_an_unknown_kid_is_refused(verifier: JwtVerifier) -> None:
    rejected(verifier, mint(kid="nobody-knows"), "unknown_key")


@pytest.mark.parametrize(
    "token", ["", "abc", "a.b.c", "not a jwt at all", "bm90IGpzb24.e30.c2ln", "....."]
)
def test_a_malformed_token_is_refused(verifier: JwtVerifier, token: str) -> None:
    with pytest.raises(AuthError) as caught:
        verifier.verify(token)
    assert caught.value.reason == "malformed"


def test_a_token_with_a_non_string_kid_is_refused(verifier: JwtVerifier) -> None:
    header = b64(json.dumps({"alg": "RS256", "kid": 7}).encode())
    payload = b64(json.dumps(claims()).encode())
    with pytest.raises(AuthError) as caught:
        verifier.verify(f"{header}.{payload}.{b64(b'sig')}")
    assert caught.value.reason == "malformed"


def test_a_token_without_the_user_claim_is_refused(verifier: JwtVerifier) -> None:
    rejected(verifier, mint(sub=None), "bad_user_claim")


def test_a_token_with_an_empty_user_claim_is_refused(verifier: JwtVerifier) -> None:
    rejected(verifier, mint(sub=""), "bad_user_claim")


@pytest.mark.parametrize("value", ["ann smith", "group:hr", "ann\u200b", "a" * 300, "e\u0301", "*"])
def test_a_user_claim_outside_the_principal_grammar_is_refused(value: str) -> None:
    with JwksServer() as srv:
        verifier = verifier_for(srv.url, user_claim="email")
        err = rejected(verifier, mint(email=value), "bad_user_claim")
    assert value not in err.message  # the claim's value is not quoted either


def test_a_non_string_user_claim_is_refused(server: JwksServer) -> None:
    verifier = verifier_for(server.url, user_claim="uid")
    rejected(verifier, mint(uid=1234), "bad_user_claim")


def test_an_oversized_token_is_refused_before_any_work(server: JwksServer) -> None:
    verifier = verifier_for(server.url, max_token_bytes=2048)
    rejected(verifier, mint(padding="x" * 4096), "too_large")
    assert server.request_count == 0


def test_auth_error_is_a_clearance_error_with_a_401_shape() -> None:
    err = AuthError("expired", "the token has expired")
    assert isinstance(err, ClearanceError)
    assert err.status == 401
    assert err.to_dict() == {"error": "unauthenticated", "message": "the token has expired"}


# --------------------------------------------------------------------------- the JWKS cache


def test_key_rotation_a_new_kid_is_accepted_after_one_refetch(server: JwksServer) -> None:
    clock = Clock()
    verifier = verifier_for(server.url, clock=clock)
    assert verifier.verify(mint()) == "ann"
    server.serve({"keys": [*JWKS["keys"], rsa_jwk(RSA_NEXT, "rsa-2")]})
    clock.advance(300)
    assert verifier.verify(mint(RSA_NEXT, kid="rsa-2")) == "ann"
    assert server.request_count == 2
    assert verifier.verify(mint(RSA_NEXT, kid="rsa-2")) == "ann"
    assert verifier.verify(mint()) == "ann"
    assert server.request_count == 2  # both keys are cached now


def test_random_unknown_kids_cause_at_most_one_fetch_per_interval(server: JwksServer) -> None:
    clock = Clock()
    verifier = verifier_for(server.url, clock=clock)
    for _ in range(100):
        rejected(verifier, mint(kid=secrets.token_hex(8)), "unknown_key")
    assert server.request_count == 1  # the first load; no refetch within the interval
    clock.advance(299)
    for _ in range(100):
        rejected(verifier, mint(kid=secrets.token_hex(8)), "unknown_key")
    assert server.request_count == 1
    clock.advance(1)
    for _ in range(100):
        rejected(verifier, mint(kid=secrets.token_hex(8)), "unknown_key")
    assert server.request_count == 2
    assert verifier.verify(mint()) == "ann"


def test_concurrent_unknown_kids_share_one_fetch(server: JwksServer) -> None:
    verifier = verifier_for(server.url)
    tokens = [mint(kid=secrets.token_hex(8)) for _ in range(40)]

    def attempt(token: str) -> str:
        try:
            return verifier.verify(token)
        except AuthError as err:
            return err.reason

    with ThreadPoolExecutor(max_workers=8) as pool:
        reasons = set(pool.map(attempt, tokens))
    assert reasons == {"unknown_key"}
    assert server.request_count == 1


@pytest.mark.parametrize(
    "failure",
    [
        Reply(status=500, body=b"oops"),
        Reply(body=b"\x00not json"),
        json_reply({"keys": "nope"}),
        json_reply({"keys": [{"kty": "oct", "k": "c2VjcmV0", "kid": "rsa-1"}]}),
    ],
    ids=["http-500", "garbage", "wrong-shape", "symmetric-key"],
)
def test_a_failed_fetch_keeps_the_last_good_keys(server: JwksServer, failure: Reply) -> None:
    clock = Clock()
    verifier = verifier_for(server.url, clock=clock)
    assert verifier.verify(mint()) == "ann"
    server.reply_with(failure)
    clock.advance(3600)  # past the maximum age: a refresh is due, and it fails
    assert verifier.verify(mint()) == "ann"
    assert server.request_count == 2


def test_an_unreachable_jwks_refuses_every_token_without_hanging() -> None:
    verifier = verifier_for(closed_url("/certs"), jwks_timeout_s=2.0)
    rejected(verifier, mint(), "unknown_key")


def test_a_withdrawn_key_is_refused_once_the_keys_reach_their_maximum_age(
    server: JwksServer,
) -> None:
    clock = Clock()
    verifier = verifier_for(server.url, clock=clock)
    assert verifier.verify(mint()) == "ann"
    server.serve({"keys": [ec_jwk(EC_KEY, "ec-1")]})
    clock.advance(3599)
    assert verifier.verify(mint()) == "ann"  # still within the maximum age
    clock.advance(1)
    rejected(verifier, mint(), "unknown_key")


def test_a_jwks_with_a_symmetric_key_is_refused(server: JwksServer) -> None:
    server.serve({"keys": [*JWKS["keys"], {"kty": "oct", "k": "c2VjcmV0", "kid": "hs"}]})
    verifier = verifier_for(server.url)
    rejected(verifier, mint(), "unknown_key")  # no key from that document is trusted


def test_keys_that_do_not_fit_the_pinned_algorithms_are_ignored(server: JwksServer) -> None:
    server.serve(
        {
            "keys": [
                rsa_jwk(RSA_KEY, "rsa-1", alg="RS512"),  # declared for another algorithm
                rsa_jwk(RSA_OTHER, "enc", use="enc"),  # an encryption key
                ec_jwk(EC_KEY, "ec-1"),
            ]
        }
    )
    verifier = verifier_for(server.url, algorithms=("RS256",))
    rejected(verifier, mint(), "unknown_key")
    rejected(verifier, mint(RSA_OTHER, kid="enc"), "unknown_key")
    rejected(verifier, mint(EC_KEY, "ES256", "ec-1"), "algorithm_not_allowed")


def test_a_token_signed_with_a_weak_rsa_key_is_refused(server: JwksServer) -> None:
    weak = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    server.serve({"keys": [rsa_jwk(weak, "weak")]})
    verifier = verifier_for(server.url)
    with pytest.warns(InsecureKeyLengthWarning):  # PyJWT only warns when signing
        token = mint(weak, kid="weak")
    rejected(verifier, token, "bad_key")


def test_a_kid_published_twice_is_not_trusted(server: JwksServer) -> None:
    server.serve({"keys": [rsa_jwk(RSA_KEY, "rsa-1"), rsa_jwk(RSA_OTHER, "rsa-1")]})
    verifier = verifier_for(server.url)
    rejected(verifier, mint(), "unknown_key")


# --------------------------------------------------------------------------- settings


def test_parse_oidc_settings_reads_a_full_table() -> None:
    parsed = parse_oidc_settings(
        {
            "issuer": ISSUER,
            "audience": ["clearance", "clearance-web"],
            "jwks": "https://idp.example.test/certs",
            "algorithms": ["ES256"],
            "user_claim": "email",
            "leeway_s": 10,
            "jwks_refresh_s": 60,
            "jwks_timeout_s": 2.5,
            "max_token_bytes": 4096,
        }
    )
    assert parsed.audiences == ("clearance", "clearance-web")
    assert parsed.algorithms == ("ES256",)
    assert parsed.user_claim == "email"
    assert parsed.jwks_is_url


def test_parse_oidc_settings_defaults() -> None:
    parsed = parse_oidc_settings({"issuer": ISSUER, "audience": AUDIENCE, "jwks": "k.json"})
    assert parsed.algorithms == ("RS256", "ES256")
    assert parsed.user_claim == "sub"
    assert parsed.audiences == (AUDIENCE,)


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"issuer": 3}, "server.oidc.issuer"),
        ({"audience": []}, "server.oidc.audience"),
        ({"jwks": ""}, "server.oidc.jwks"),
        ({"jwks": "http://idp.example.test/certs"}, "server.oidc.jwks"),
        ({"jwks": "ftp://idp.example.test/certs"}, "server.oidc.jwks"),
        ({"algorithms": ["HS256"]}, "server.oidc.algorithms"),
        ({"algorithms": ["RS1"]}, "server.oidc.algorithms"),
        ({"algorithms": []}, "server.oidc.algorithms"),
        ({"leeway_s": "30"}, "server.oidc.leeway_s"),
        ({"jwks_refresh_s": -1}, "server.oidc.jwks_refresh_s"),
        ({"jwks_timeout_s": 0}, "server.oidc.jwks_timeout_s"),
        ({"max_token_bytes": True}, "server.oidc.max_token_bytes"),
        ({"user_claim": ""}, "server.oidc.user_claim"),
        ({"groups_claim": "groups"}, "server.oidc.groups_claim"),
    ],
)
def test_parse_oidc_settings_errors_name_the_key(change: dict[str, Any], key: str) -> None:
    data = {"issuer": ISSUER, "audience": AUDIENCE, "jwks": "k.json", **change}
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        parse_oidc_settings(data)


def test_parse_oidc_settings_errors_use_the_given_prefix() -> None:
    with pytest.raises(ConfigError, match=r"mcp\.oidc\.algorithms"):
        parse_oidc_settings(
            {"issuer": ISSUER, "audience": AUDIENCE, "jwks": "k.json", "algorithms": ["none"]},
            key_prefix="mcp.oidc",
        )


def test_http_jwks_is_allowed_only_to_loopback() -> None:
    assert settings("http://127.0.0.1:8080/certs").jwks_is_url
    assert settings("http://localhost/certs").jwks_is_url
    with pytest.raises(ConfigError, match="https"):
        settings("http://10.0.0.5/certs")
