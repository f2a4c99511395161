"""Credentials to principals, with a real ``memory_adapter.identity.JwtVerifier`` on a static JWKS.

Token expiry is PyJWT's check against the real clock, so tokens are minted relative to now; ``Clock`` drives only the
authenticator's token cache.
"""

from __future__ import annotations

import json
import time
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from hindsight_isolation.authn import Authenticator, UnauthenticatedError
from hindsight_isolation.principal import Kind, Principal
from hindsight_isolation.settings import IsolationSettings
from memory_adapter.identity import JwtVerifier, VerifiedIdentity

ISSUER = "https://issuer.test"
OPERATOR_KEY = "operator-" + "x" * 40
AGENT_KEY = "agent-" + "y" * 40
#: "Now" for the test that is running (reset before each test: PyJWT checks expiry against the real clock, so
#: tokens must be minted relative to the moment the test runs, not to when the module was imported).
NOW = time.time()


@pytest.fixture(autouse=True)
def _now() -> None:
    global NOW
    NOW = time.time()


def _key(kid: str) -> tuple[rsa.RSAPrivateKey, dict[str, Any]]:
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(RSAAlgorithm.to_jwk(private.public_key()))
    jwk.update(kid=kid, use="sig", alg="RS256")
    return private, jwk


SIGNING, SIGNING_JWK = _key("k1")
FORGER, _ = _key("k1")  # same kid, different key


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


def _token(user: str = "alice", *, exp: float | None = None, tenant: str | None = "acme") -> str:
    exp = NOW + 300 if exp is None else exp
    payload: dict[str, Any] = {"iss": ISSUER, "sub": user, "client_id": "app", "token_use": "access", "exp": exp}
    if tenant is not None:
        payload["custom:tenant"] = tenant
    return jwt.encode(payload, SIGNING, algorithm="RS256", headers={"kid": "k1"})


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def authn(clock: Clock) -> Authenticator:
    settings = IsolationSettings.from_config(
        {
            "jwt_issuer": ISSUER,
            "jwt_static_jwks": json.dumps({"keys": [SIGNING_JWK]}),
            "jwt_allowed_clients": "app",
            "jwt_tenant_claim": "custom:tenant",
            "jwt_leeway_s": "0",
            "expiry_grace_s": "600",
            "operator_key": OPERATOR_KEY,
            "agent_key": AGENT_KEY,
            "agent_name": "support",
            "agent_tenant": "acme",
        }
    )
    return Authenticator(settings, clock=clock)


def test_user_token_gives_its_tenant_and_user(authn: Authenticator) -> None:
    principal = authn.authenticate(_token())
    assert principal == Principal(Kind.USER, tenant="acme", user="alice")


def test_operator_and_agent_keys(authn: Authenticator) -> None:
    assert authn.authenticate(OPERATOR_KEY) == Principal(Kind.OPERATOR)
    assert authn.authenticate(AGENT_KEY) == Principal(Kind.AGENT, tenant="acme", agent="support")


def test_expired_token_within_grace_is_a_grace_principal(authn: Authenticator, clock: Clock) -> None:
    token = _token(exp=NOW - 60)
    assert authn.authenticate(token).kind is Kind.USER_GRACE


def test_token_past_the_grace_window_is_refused(authn: Authenticator) -> None:
    with pytest.raises(UnauthenticatedError, match="expired"):
        authn.authenticate(_token(exp=NOW - 601))


def _claims(**overrides: Any) -> dict[str, Any]:
    claims: dict[str, Any] = {
        "iss": ISSUER,
        "sub": "alice",
        "client_id": "app",
        "token_use": "access",
        "custom:tenant": "acme",
        "exp": NOW + 300,
    }
    claims.update(overrides)
    return {k: v for k, v in claims.items() if v is not None}


@pytest.mark.parametrize(
    ("overrides", "key", "reason"),
    [
        ({}, FORGER, "signature"),
        ({"client_id": "someone-else"}, SIGNING, "client"),
        ({"iss": "https://evil.test"}, SIGNING, "issuer"),
        ({"exp": None}, SIGNING, "expired"),
        ({"custom:tenant": None}, SIGNING, "tenant_claim"),
    ],
    ids=["forged", "wrong-client", "wrong-issuer", "no-exp", "no-tenant"],
)
def test_bad_tokens_are_refused(authn: Authenticator, overrides: dict[str, Any], key: Any, reason: str) -> None:
    token = jwt.encode(_claims(**overrides), key, algorithm="RS256", headers={"kid": "k1"})
    with pytest.raises(UnauthenticatedError) as caught:
        authn.authenticate(token)
    assert reason in caught.value.reason


def test_symmetric_token_signed_with_the_public_key_is_refused(authn: Authenticator) -> None:
    token = jwt.encode(_claims(), "public-key-as-secret-" + "z" * 32, algorithm="HS256", headers={"kid": "k1"})
    with pytest.raises(UnauthenticatedError, match="algorithm"):
        authn.authenticate(token)


@pytest.mark.parametrize("credential", [None, "", "not-a-token", "o" * 40, OPERATOR_KEY + " "])
def test_non_credentials_are_refused(authn: Authenticator, credential: str | None) -> None:
    with pytest.raises(UnauthenticatedError):
        authn.authenticate(credential)


class CountingVerifier(JwtVerifier):
    calls = 0

    def verify(self, token: str, *, expiry_grace: float = 0.0) -> VerifiedIdentity:
        self.calls += 1
        return super().verify(token, expiry_grace=expiry_grace)


def test_verified_tokens_are_cached_but_never_past_exp(authn: Authenticator, clock: Clock) -> None:
    # GIVEN a token verified once
    settings = authn._settings
    assert settings.jwt is not None
    verifier = CountingVerifier(settings.jwt)
    authn = Authenticator(settings, verifier=verifier, clock=clock)
    token = _token(exp=NOW + 30)
    authn.authenticate(token)
    # THEN it is known without verification while valid
    assert authn.cached(token) == Principal(Kind.USER, tenant="acme", user="alice")
    assert authn.authenticate(token) == Principal(Kind.USER, tenant="acme", user="alice")
    assert verifier.calls == 1
    # AND forgotten at exp: the next request is verified again
    clock.now = NOW + 31
    assert authn.cached(token) is None
    authn.authenticate(token)
    assert verifier.calls == 2


def test_grace_principals_are_not_cached(authn: Authenticator) -> None:
    token = _token(exp=NOW - 60)
    authn.authenticate(token)
    assert authn.cached(token) is None


def test_without_an_issuer_only_keys_authenticate(clock: Clock) -> None:
    settings = IsolationSettings.from_config({"agent_key": AGENT_KEY, "agent_name": "support"})
    authn = Authenticator(settings, clock=clock)
    assert authn.verifier is None
    assert authn.authenticate(AGENT_KEY) == Principal(Kind.AGENT, agent="support")
    with pytest.raises(UnauthenticatedError, match="no token issuer"):
        authn.authenticate(_token())


def test_cache_is_bounded(clock: Clock) -> None:
    settings = IsolationSettings.from_config(
        {
            "jwt_issuer": ISSUER,
            "jwt_static_jwks": json.dumps({"keys": [SIGNING_JWK]}),
            "jwt_allowed_clients": "app",
            "token_cache_size": "2",
        }
    )
    authn = Authenticator(settings, clock=clock)
    tokens = [_token(f"user{i}") for i in range(3)]
    for token in tokens:
        authn.authenticate(token)
    assert authn.cached(tokens[0]) is None
    assert authn.cached(tokens[2]) is not None
