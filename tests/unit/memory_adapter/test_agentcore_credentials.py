"""The IAM-mode Hindsight key: static, from Secrets Manager (moto), through Powertools parameters."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from memory_adapter.agentcore.credentials import AgentKey, KeyUnavailableError


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
