"""Key sources behind the one cache: an SSM parameter (a fake read), rotation, throttling, outages."""

from __future__ import annotations

import json

import pytest

from memory_adapter.agentcore.keys import MirroredKeysVerifier
from memory_adapter.identity import JwtSettings, JwtVerifier, RejectReason, SigningKeys, TokenRejectedError
from memory_adapter.identity.errors import IdentityConfigError
from memory_adapter.identity.keys import SsmParameterJwks, StaticJwks
from tests.unit.issuers import CLIENT_ID, UnitIssuer, jwk_of


class FakeParameter:
    """An SSM parameter: ``value`` is what a read returns; ``broken`` makes reads fail; every read is counted."""

    def __init__(self, value: str) -> None:
        self.value = value
        self.reads = 0
        self.broken = False

    def __call__(self, name: str) -> str:
        assert name == "/agent/jwks"
        self.reads += 1
        if self.broken:
            raise ConnectionError("no SSM endpoint")
        return self.value


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _verifier(issuer: UnitIssuer, parameter: FakeParameter, clock: Clock) -> JwtVerifier:
    settings = JwtSettings(issuer=issuer.issuer, jwks_parameter="/agent/jwks", allowed_clients=(CLIENT_ID,))
    keys = SigningKeys(
        SsmParameterJwks("/agent/jwks", read=parameter),
        ttl_s=settings.jwks_cache_ttl_s,
        refetch_interval_s=settings.jwks_refetch_interval_s,
        max_stale_s=settings.jwks_max_stale_s,
        clock=clock,
    )
    return MirroredKeysVerifier(settings, keys=keys)


def _rejected(verifier: JwtVerifier, token: str) -> RejectReason:
    with pytest.raises(TokenRejectedError) as info:
        verifier.verify(token)
    return info.value.reason


def test_mirrored_keys_verify_and_pick_up_rotation(unit_issuer: UnitIssuer) -> None:
    # GIVEN keys mirrored into a parameter
    parameter, clock = FakeParameter(json.dumps({"keys": [jwk_of(unit_issuer.key, unit_issuer.kid)]})), Clock()
    verifier = _verifier(unit_issuer, parameter, clock)
    assert verifier.verify(unit_issuer.mint()).user == "user-alex"
    # WHEN the issuer rotates THEN an unknown kid forces one early re-read, throttled afterwards
    parameter.value = json.dumps({"keys": [jwk_of(unit_issuer.key, "key-2")]})
    assert verifier.verify(unit_issuer.mint(kid="key-2")).user == "user-alex"
    assert parameter.reads == 2
    assert _rejected(verifier, unit_issuer.mint(kid="key-3")) is RejectReason.UNKNOWN_KEY
    assert parameter.reads == 2
    # AND the cached keys are re-read once their time to live has passed
    clock.now += 301
    verifier.verify(unit_issuer.mint(kid="key-2"))
    assert parameter.reads == 3
    assert unit_issuer.jwks_hits == []  # never fetched from the issuer


def test_mirrored_keys_fail_closed_without_keys_and_keep_the_last_good_ones(unit_issuer: UnitIssuer) -> None:
    # GIVEN the stack's placeholder before the first mirror run
    parameter, clock = FakeParameter('{"keys":[]}'), Clock()
    verifier = _verifier(unit_issuer, parameter, clock)
    assert _rejected(verifier, unit_issuer.mint()) is RejectReason.KEYS_UNAVAILABLE
    # WHEN the mirror has run THEN the keys are picked up at the next attempt (at most one per interval)
    parameter.value = json.dumps({"keys": [jwk_of(unit_issuer.key, unit_issuer.kid)]})
    assert _rejected(verifier, unit_issuer.mint()) is RejectReason.KEYS_UNAVAILABLE
    assert parameter.reads == 1
    clock.now += 61
    assert verifier.verify(unit_issuer.mint()).user == "user-alex"
    # AND while SSM is unreachable the last good keys stay in use
    parameter.broken = True
    clock.now += 301
    assert verifier.verify(unit_issuer.mint()).user == "user-alex"
    clock.now += 86400
    assert _rejected(verifier, unit_issuer.mint()) is RejectReason.KEYS_UNAVAILABLE


def test_a_mirrored_verifier_needs_the_parameter(unit_issuer: UnitIssuer) -> None:
    with pytest.raises(IdentityConfigError, match="jwks_parameter"):
        MirroredKeysVerifier(JwtSettings(discovery_url=unit_issuer.discovery_url, allowed_clients=(CLIENT_ID,)))


def test_an_unusable_static_jwks_is_refused_at_construction() -> None:
    with pytest.raises(IdentityConfigError, match="static_jwks"):
        StaticJwks({"keys": [{"kty": "nonsense"}]})
