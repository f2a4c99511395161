"""Mirrored signing keys from SSM (fake fetch) and the IAM-mode Hindsight key (moto Secrets Manager)."""

from __future__ import annotations

import json

import boto3
import pytest
from moto import mock_aws

from memory_adapter.tokens import JwtVerifierConfig, RejectReason, TokenRejected
from runtime_handler.credentials import AgentKey, KeyUnavailableError
from runtime_handler.keys import MirroredKeysVerifier

from .conftest import CLIENT_ID, UnitIssuer, _jwk


class FakeParameter:
    """Behaves like a cached parameter read: a new value is seen only when forced (or on the first read)."""

    def __init__(self, value: str) -> None:
        self.value = value
        self.cached: str | None = None
        self.reads: list[bool] = []
        self.broken = False

    def __call__(self, name: str, force: bool) -> str:
        self.reads.append(force)
        if self.broken:
            raise ConnectionError("no SSM endpoint")
        if force or self.cached is None:
            self.cached = self.value
        return self.cached


def _verifier(issuer: UnitIssuer, parameter: FakeParameter) -> MirroredKeysVerifier:
    config = JwtVerifierConfig(issuer=issuer.issuer, allowed_clients=(CLIENT_ID,))
    return MirroredKeysVerifier(config, "/agent/jwks", fetch=parameter)


def test_mirrored_keys_verify_and_pick_up_rotation(unit_issuer: UnitIssuer) -> None:
    parameter = FakeParameter(json.dumps({"keys": [_jwk(unit_issuer.key, unit_issuer.kid)]}))
    verifier = _verifier(unit_issuer, parameter)
    assert verifier.verify(unit_issuer.mint()).user == "user-alex"
    parameter.value = json.dumps({"keys": [_jwk(unit_issuer.key, "key-2")]})
    assert verifier.verify(unit_issuer.mint(kid="key-2")).user == "user-alex"  # unknown kid: one forced re-read
    assert parameter.reads[-1] is True
    with pytest.raises(TokenRejected) as info:
        verifier.verify(unit_issuer.mint(kid="key-3"))
    assert info.value.reason is RejectReason.UNKNOWN_KEY
    assert parameter.reads.count(True) == 1  # throttled
    assert unit_issuer.jwks_hits == []  # never fetched from the issuer


def test_mirrored_keys_fail_closed_without_keys_and_keep_the_last_good_ones(unit_issuer: UnitIssuer) -> None:
    parameter = FakeParameter('{"keys":[]}')  # the stack's placeholder before the first mirror run
    verifier = _verifier(unit_issuer, parameter)
    with pytest.raises(TokenRejected) as info:
        verifier.verify(unit_issuer.mint())
    assert info.value.reason is RejectReason.KEYS_UNAVAILABLE
    parameter.value = parameter.cached = json.dumps({"keys": [_jwk(unit_issuer.key, unit_issuer.kid)]})
    assert verifier.verify(unit_issuer.mint()).user == "user-alex"
    parameter.broken = True
    assert verifier.verify(unit_issuer.mint()).user == "user-alex"


def test_agent_key_static_and_absent() -> None:
    assert AgentKey(static_key="k").get() == "k"
    assert AgentKey().get() is None
    assert not AgentKey().configured


@mock_aws
def test_agent_key_from_secrets_manager() -> None:
    client = boto3.client("secretsmanager", region_name="us-east-1")
    arn = client.create_secret(Name="agent-key", SecretString="s" * 40)["ARN"]

    def fetch(secret_arn: str) -> str:
        value = client.get_secret_value(SecretId=secret_arn)["SecretString"]
        return str(value)

    assert AgentKey(secret_arn=arn, fetch=fetch).get() == "s" * 40
    missing = arn.replace("agent-key", "gone")
    with pytest.raises(KeyUnavailableError):
        AgentKey(secret_arn=missing, fetch=fetch).get()


@mock_aws
def test_agent_key_through_powertools_parameters(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    client = boto3.client("secretsmanager", region_name="us-east-1")
    arn = client.create_secret(Name="agent-key-2", SecretString="p" * 40)["ARN"]
    assert AgentKey(secret_arn=arn).get() == "p" * 40
