"""The stack's settings are accepted by the code that reads them: the isolation extension inside Hindsight."""

from __future__ import annotations

import json
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from hindsight_isolation import settings as iso
from tests.infra.conftest import VARIANTS, Synth, resources


def _public_jwks() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048).public_key()
    return json.dumps({"keys": [{**json.loads(RSAAlgorithm.to_jwk(key)), "kid": "k1", "use": "sig"}]})


def _hindsight_env(synth: Synth) -> dict[str, str]:
    """The Hindsight container's environment at start, with deploy-time values filled in."""
    (task,) = [
        v
        for k, v in resources(synth.template("-MemoryService"), "AWS::ECS::TaskDefinition").items()
        if k.startswith("MemoryApiTask")
    ]
    (main,) = [c for c in task["Properties"]["ContainerDefinitions"] if c["Name"] == "Hindsight"]
    env: dict[str, str] = {}
    for item in main["Environment"]:
        value: Any = item["Value"]
        env[item["Name"]] = value if isinstance(value, str) else "https://cognito-idp.us-east-1.amazonaws.com/pool"
    for secret in main["Secrets"]:
        name = secret["Name"]
        env[name] = (
            _public_jwks() if name.endswith("STATIC_JWKS") else f"{name.lower()}-value-0123456789abcdef0123456789"
        )
    return env


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_isolation_extension_accepts_the_stacks_settings(synths: dict[str, Synth], variant: str) -> None:
    env = _hindsight_env(synths[variant])
    # What hindsight_api/extensions/loader.py hands the tenant extension: prefix stripped, lowercased.
    config = {
        k.removeprefix(iso.ENV_TENANT_PREFIX).lower(): v
        for k, v in env.items()
        if k.startswith(iso.ENV_TENANT_PREFIX) and k != iso.ENV_TENANT_EXTENSION
    }
    settings = iso.IsolationSettings.from_config(config)
    assert settings.operator_key
    if synths[variant].config.auth.mode.value == "iam":
        assert settings.agent_key
        assert settings.agent_name == "assistant"
        assert settings.agent_tenant == "acme"
    else:
        assert settings.verifier["static_jwks"]["keys"]
        assert settings.verifier["issuer"].startswith("https://")
        assert settings.agent_key is None
    from memory_adapter.identity import JwtSettings

    if settings.verifier:
        assert JwtSettings(**settings.verifier).problems() == []  # the shared verifier accepts it too
    assert not [k for k in env if k.startswith("HINDSIGHT_API_OPERATION_VALIDATOR_") and not k.endswith("_EXTENSION")]
