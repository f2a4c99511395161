"""memory_adapter.identity.JwtVerifier: every way a token can fail, and the key fetch discipline."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import socket
import time
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from memory_adapter.identity import (
    IdentityConfigError,
    JwtSettings,
    JwtVerifier,
    RejectReason,
    TokenRejectedError,
    bearer_token,
)
from tests.unit.issuers import CLIENT_ID, UnitIssuer, jwk_of


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _forge(header: dict[str, Any], claims: dict[str, Any], secret: bytes | None) -> str:
    signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
    if secret is None:
        return signing_input + "."
    return signing_input + "." + _b64(hmac.new(secret, signing_input.encode(), hashlib.sha256).digest())


def _rejected(verifier: JwtVerifier, token: str, **kwargs: Any) -> RejectReason:
    with pytest.raises(TokenRejectedError) as info:
        verifier.verify(token, **kwargs)
    return info.value.reason


def test_valid_access_token_gives_user_and_client(unit_issuer: UnitIssuer) -> None:
    identity = unit_issuer.verifier().verify(unit_issuer.mint("user-alex"))
    assert (identity.user, identity.tenant, identity.client_id, identity.token_use) == (
        "user-alex",
        None,
        CLIENT_ID,
        "access",
    )
    assert not identity.within_grace


def test_tenant_comes_from_the_configured_claim(unit_issuer: UnitIssuer) -> None:
    verifier = unit_issuer.verifier(tenant_claim="custom:tenant")
    assert verifier.verify(unit_issuer.mint(extra={"custom:tenant": "acme"})).tenant == "acme"
    assert _rejected(verifier, unit_issuer.mint()) is RejectReason.TENANT_CLAIM
    assert _rejected(verifier, unit_issuer.mint(extra={"custom:tenant": "  "})) is RejectReason.TENANT_CLAIM


@pytest.mark.parametrize("user", [None, "", "   ", 42, "x" * 300])
def test_unusable_user_claim_is_rejected(unit_issuer: UnitIssuer, user: Any) -> None:
    token = jwt.encode(
        {**unit_issuer.claims(), "sub": user} if user is not None else {**unit_issuer.claims(), "sub": None},
        unit_issuer.key,
        algorithm="RS256",
        headers={"kid": unit_issuer.kid},
    )
    assert _rejected(unit_issuer.verifier(), token) is RejectReason.USER_CLAIM


def test_expiry_leeway_and_grace(unit_issuer: UnitIssuer) -> None:
    verifier = unit_issuer.verifier(leeway_s=10)
    now = time.time()
    token = unit_issuer.mint(exp=now - 5)
    assert verifier.verify(token).user == "user-alex"  # within the leeway
    token = unit_issuer.mint(exp=now - 60)
    assert _rejected(verifier, token) is RejectReason.EXPIRED
    graced = verifier.verify(token, expiry_grace=300)
    assert graced.within_grace
    assert _rejected(verifier, token, expiry_grace=30) is RejectReason.EXPIRED


def test_exp_is_required(unit_issuer: UnitIssuer) -> None:
    token = jwt.encode(
        {k: v for k, v in unit_issuer.claims().items() if k != "exp"},
        unit_issuer.key,
        algorithm="RS256",
        headers={"kid": unit_issuer.kid},
    )
    assert _rejected(unit_issuer.verifier(), token) is RejectReason.EXPIRED


def test_non_numeric_exp_is_malformed(unit_issuer: UnitIssuer) -> None:
    assert _rejected(unit_issuer.verifier(), unit_issuer.mint(exp="tomorrow")) is RejectReason.MALFORMED


def _not_numeric_dates() -> list[tuple[str, Any]]:
    """Correctly signed time claims that PyJWT would accept (``int()`` converts them) but RFC 7519 does not."""
    later, earlier = int(time.time()) + 30 * 86400, int(time.time()) - 10  # far: parametrized at collection
    return [
        ("exp", str(later)),
        ("exp", 10**400),  # an integer no float can hold
        ("nbf", str(earlier)),
        ("nbf", False),
        ("iat", str(earlier)),
        ("iat", True),
    ]


def _kind(value: Any) -> str:
    """A test id that is the same in every process (pytest-xdist's workers collect apart): the value's type."""
    return value if value in ("exp", "nbf", "iat") else f"{type(value).__name__}"


@pytest.mark.parametrize(("claim", "value"), _not_numeric_dates(), ids=_kind)
def test_time_claims_must_be_json_numbers(unit_issuer: UnitIssuer, claim: str, value: Any) -> None:
    verifier = unit_issuer.verifier()
    token = unit_issuer.mint(extra={claim: value})
    assert _rejected(verifier, token) is RejectReason.MALFORMED
    assert _rejected(verifier, token, expiry_grace=3600) is RejectReason.MALFORMED


@pytest.mark.parametrize("exp", [str(int(time.time()) - 60), True], ids=_kind)  # True is 1 to int(): long expired
def test_an_expired_non_numeric_exp_is_refused_within_the_grace_window_too(unit_issuer: UnitIssuer, exp: Any) -> None:
    token = unit_issuer.mint(exp=exp)
    assert _rejected(unit_issuer.verifier(), token) is RejectReason.EXPIRED  # PyJWT's expiry check comes first
    assert _rejected(unit_issuer.verifier(), token, expiry_grace=10**9) is RejectReason.MALFORMED


def test_fractional_time_claims_are_numeric_dates(unit_issuer: UnitIssuer) -> None:
    now = time.time()
    token = unit_issuer.mint(exp=now + 300.5, iat=now - 0.25, extra={"nbf": now - 1.5})
    assert unit_issuer.verifier().verify(token).user == "user-alex"


@pytest.mark.parametrize("claim", ["nbf", "iat"])
def test_not_yet_valid(unit_issuer: UnitIssuer, claim: str) -> None:
    token = unit_issuer.mint(extra={claim: time.time() + 3600})
    assert _rejected(unit_issuer.verifier(), token) is RejectReason.NOT_YET_VALID


def test_nbf_within_leeway_is_accepted(unit_issuer: UnitIssuer) -> None:
    assert unit_issuer.verifier(leeway_s=30).verify(unit_issuer.mint(nbf=time.time() + 10)).user == "user-alex"


def test_wrong_issuer(unit_issuer: UnitIssuer) -> None:
    token = unit_issuer.mint(iss="https://evil.example/pool")
    assert _rejected(unit_issuer.verifier(), token) is RejectReason.ISSUER


def test_wrong_client_and_missing_client(unit_issuer: UnitIssuer) -> None:
    verifier = unit_issuer.verifier()
    assert _rejected(verifier, unit_issuer.mint(client_id="other-app")) is RejectReason.CLIENT
    assert _rejected(verifier, unit_issuer.mint(client_id=None)) is RejectReason.CLIENT


def test_id_token_client_is_its_audience(unit_issuer: UnitIssuer) -> None:
    verifier = unit_issuer.verifier()
    identity = verifier.verify(unit_issuer.mint(token_use="id", client_id=None, aud=CLIENT_ID))
    assert identity.client_id == CLIENT_ID
    assert _rejected(verifier, unit_issuer.mint(token_use="id", client_id=None, aud="other")) is RejectReason.CLIENT
    # an ID token cannot smuggle an allowed client_id past a foreign audience
    token = unit_issuer.mint(token_use="id", client_id=CLIENT_ID, aud="other")
    assert _rejected(verifier, token) is RejectReason.CLIENT


def test_allowed_audience(unit_issuer: UnitIssuer) -> None:
    verifier = unit_issuer.verifier(allowed_clients=(), allowed_audience=("api://memory",))
    assert verifier.verify(unit_issuer.mint(aud=["x", "api://memory"])).user == "user-alex"
    assert _rejected(verifier, unit_issuer.mint(aud="api://other")) is RejectReason.AUDIENCE
    assert _rejected(verifier, unit_issuer.mint()) is RejectReason.AUDIENCE


def test_audience_and_client_both_checked_when_both_set(unit_issuer: UnitIssuer) -> None:
    verifier = unit_issuer.verifier(allowed_audience=("api://memory",))
    assert verifier.verify(unit_issuer.mint(aud="api://memory")).user == "user-alex"
    assert _rejected(verifier, unit_issuer.mint(aud="api://memory", client_id="x")) is RejectReason.CLIENT


def test_token_use(unit_issuer: UnitIssuer) -> None:
    assert _rejected(unit_issuer.verifier(), unit_issuer.mint(token_use="refresh")) is RejectReason.TOKEN_USE
    strict = unit_issuer.verifier(token_use="access")
    assert _rejected(strict, unit_issuer.mint(token_use=None)) is RejectReason.TOKEN_USE
    id_token = unit_issuer.mint(token_use="id", client_id=None, aud=CLIENT_ID)
    assert _rejected(strict, id_token) is RejectReason.TOKEN_USE
    assert unit_issuer.verifier().verify(unit_issuer.mint(token_use=None)).token_use is None


def test_alg_none_is_rejected(unit_issuer: UnitIssuer) -> None:
    token = _forge({"alg": "none", "kid": unit_issuer.kid, "typ": "JWT"}, unit_issuer.claims(), None)
    assert _rejected(unit_issuer.verifier(), token + "AA") is RejectReason.ALGORITHM
    assert _rejected(unit_issuer.verifier(), token) is RejectReason.MALFORMED


def test_hs256_signed_with_the_public_key_is_rejected(unit_issuer: UnitIssuer) -> None:
    pem = unit_issuer.key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    token = _forge({"alg": "HS256", "kid": unit_issuer.kid}, unit_issuer.claims(), pem)
    assert _rejected(unit_issuer.verifier(), token) is RejectReason.ALGORITHM
    # even if someone lists both families, configuration refuses HMAC
    with pytest.raises(IdentityConfigError, match="asymmetric"):
        unit_issuer.verifier(algorithms=("RS256", "HS256"))


def test_header_alg_must_match_the_key(unit_issuer: UnitIssuer) -> None:
    verifier = unit_issuer.verifier(algorithms=("RS256", "PS256"))
    token = unit_issuer.mint(alg="PS256")
    assert _rejected(verifier, token) is RejectReason.ALGORITHM


def test_unknown_kid_refetches_at_most_once_per_interval(unit_issuer: UnitIssuer) -> None:
    verifier = unit_issuer.verifier(jwks_refetch_interval_s=3600)
    verifier.verify(unit_issuer.mint())
    hits = len(unit_issuer.jwks_hits)
    for _ in range(5):
        assert _rejected(verifier, unit_issuer.mint(kid="made-up")) is RejectReason.UNKNOWN_KEY
    assert len(unit_issuer.jwks_hits) == hits + 1


def test_rotated_key_is_picked_up_by_the_refetch(unit_issuer: UnitIssuer) -> None:
    verifier = unit_issuer.verifier()
    verifier.verify(unit_issuer.mint())
    unit_issuer.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    unit_issuer.kid = "key-2"
    assert verifier.verify(unit_issuer.mint()).user == "user-alex"


def test_signature_by_another_key_with_a_known_kid(unit_issuer: UnitIssuer) -> None:
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    assert _rejected(unit_issuer.verifier(), unit_issuer.mint(key=other)) is RejectReason.SIGNATURE


def test_tampered_payload_and_signature(unit_issuer: UnitIssuer) -> None:
    verifier = unit_issuer.verifier()
    header, payload, signature = unit_issuer.mint().split(".")
    evil = _b64(json.dumps(unit_issuer.claims("user-bob")).encode())
    assert _rejected(verifier, f"{header}.{evil}.{signature}") is RejectReason.SIGNATURE
    flipped = ("A" if signature[0] != "A" else "B") + signature[1:]
    assert _rejected(verifier, f"{header}.{payload}.{flipped}") is RejectReason.SIGNATURE


@pytest.mark.parametrize(
    "token", ["", "garbage", "a.b", "a.b.c.d", "####.$$$$.%%%%", "e30.e30.e30", "eyJhbGciOiJSUzI1NiJ9.e30.e30"]
)
def test_garbage_is_rejected(unit_issuer: UnitIssuer, token: str) -> None:
    assert _rejected(unit_issuer.verifier(), token) in {
        RejectReason.MALFORMED,
        RejectReason.MISSING,
        RejectReason.ALGORITHM,
    }


def test_oversized_token_is_rejected_before_parsing(unit_issuer: UnitIssuer) -> None:
    verifier = unit_issuer.verifier(max_token_bytes=1024)
    token = unit_issuer.mint(padding="x" * 2000)
    assert _rejected(verifier, token) is RejectReason.OVERSIZED
    assert unit_issuer.jwks_hits == []


def test_unreachable_issuer_fails_closed(unit_issuer: UnitIssuer) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    verifier = JwtVerifier(
        JwtSettings(
            discovery_url=f"http://127.0.0.1:{port}/.well-known/openid-configuration",
            allowed_clients=(CLIENT_ID,),
            http_timeout_s=1,
        )
    )
    assert _rejected(verifier, unit_issuer.mint()) is RejectReason.KEYS_UNAVAILABLE


def test_discovery_issuer_must_match_its_url(unit_issuer: UnitIssuer) -> None:
    unit_issuer.server.expect_request("/fake/.well-known/openid-configuration").respond_with_json(
        {"issuer": unit_issuer.issuer, "jwks_uri": unit_issuer.issuer + "/jwks.json"}
    )
    verifier = JwtVerifier(
        JwtSettings(
            discovery_url=unit_issuer.server.url_for("/fake/.well-known/openid-configuration"),
            allowed_clients=(CLIENT_ID,),
        )
    )
    assert _rejected(verifier, unit_issuer.mint()) is RejectReason.KEYS_UNAVAILABLE


def test_static_jwks_needs_no_fetch(unit_issuer: UnitIssuer) -> None:
    verifier = JwtVerifier(
        JwtSettings(
            issuer=unit_issuer.issuer,
            static_jwks={"keys": [jwk_of(unit_issuer.key, unit_issuer.kid)]},
            allowed_clients=(CLIENT_ID,),
        )
    )
    assert verifier.verify(unit_issuer.mint()).user == "user-alex"
    assert unit_issuer.jwks_hits == []


def test_configuration_lists_every_problem() -> None:
    problems = JwtSettings(algorithms=("HS256",), leeway_s=-1, token_use="refresh").problems()
    text = " | ".join(problems)
    for expected in ("discovery_url is required", "allowed_clients", "asymmetric", "leeway_s", "token_use"):
        assert expected in text


@pytest.mark.parametrize(
    ("header", "expected"),
    [("Bearer abc", "abc"), ("bearer  abc ", "abc"), ("BEARER abc", "abc")],
)
def test_bearer_token(header: str, expected: str) -> None:
    assert bearer_token(header) == expected


@pytest.mark.parametrize("header", [None, "", "Basic abc", "Bearer", "Bearer   ", "abc"])
def test_bearer_token_rejects(header: str | None) -> None:
    with pytest.raises(TokenRejectedError):
        bearer_token(header)


def test_issuer_outage_keeps_the_last_keys_and_does_not_hammer_it(unit_issuer: UnitIssuer) -> None:
    verifier = unit_issuer.verifier(jwks_cache_ttl_s=0.01, jwks_refetch_interval_s=3600)
    token = unit_issuer.mint()
    assert verifier.verify(token).user == "user-alex"
    unit_issuer.server.clear()  # the JWKS endpoint now answers 500
    time.sleep(0.05)  # the cached key set has expired
    for _ in range(5):
        assert verifier.verify(token).user == "user-alex"  # last good keys
    assert len(unit_issuer.server.log) == 1  # one failed fetch, then no retry within the interval


def test_issuer_outage_without_any_keys_fails_closed_fast(unit_issuer: UnitIssuer) -> None:
    verifier = unit_issuer.verifier(jwks_refetch_interval_s=3600)
    unit_issuer.server.clear()
    unit_issuer.server.expect_request("/pool/.well-known/openid-configuration").respond_with_json(
        {"issuer": unit_issuer.issuer, "jwks_uri": unit_issuer.issuer + "/jwks.json"}
    )
    for _ in range(3):
        assert _rejected(verifier, unit_issuer.mint()) is RejectReason.KEYS_UNAVAILABLE
    jwks_requests = [entry for entry in unit_issuer.server.log if entry[0].path.endswith("jwks.json")]
    assert len(jwks_requests) == 1


@pytest.mark.parametrize(
    ("user", "extra"),
    [
        (CLIENT_ID, {}),  # Cognito / Okta client credentials: sub is the client id
        ("svc-app", {"idtyp": "app"}),  # Entra ID application token
        ("svc-app@clients", {"gty": "client-credentials"}),  # Auth0 client credentials
    ],
    ids=["sub-is-client", "entra-app", "auth0-client-credentials"],
)
def test_machine_tokens_name_no_user_and_are_refused(unit_issuer: UnitIssuer, user: str, extra: dict[str, Any]) -> None:
    # GIVEN a well-signed client-credentials token (it speaks for a client, not for a user)
    verifier = JwtVerifier(unit_issuer.settings())
    # THEN it opens no memory anywhere: every component verifies with this class
    assert _rejected(verifier, unit_issuer.mint(user, extra=extra)) is RejectReason.MACHINE
