"""What the stack puts in each process's environment is what that process's settings class reads, and nothing else.

For every variant and every process (agent, memory tools target, interceptor, replay, admin, Hindsight with the
isolation extension): the synthesized environment, deploy-time tokens replaced by plausible values, is read by the
process's ``from_env``, and writing those settings back (``to_env``) gives the same environment. Then the new
``cdk.json`` keys (``agent.recall_*``) reach the agent's settings, and bad values are refused with their cdk.json
names.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from hindsight_isolation import settings as iso
from infra.config import ConfigError, load_config_from_cdk_json
from infra.functions.memory_admin.index import FunctionSettings
from infra.functions.memory_gateway.interceptor import InterceptorSettings
from infra.functions.memory_gateway.target import TargetSettings
from memory_adapter.constants import CA_BUNDLE_ENV
from memory_adapter.queue_replay import ReplaySettings
from runtime_handler.settings import Settings
from tests.infra.conftest import VARIANTS, Synth, resources, synthesize

#: Variables set for the platform's own libraries (Powertools) and the Hindsight clients' TLS, not by a settings class.
_NOT_SETTINGS = ("POWERTOOLS_", CA_BUNDLE_ENV)


def _stand_in(key: str) -> str:
    """A plausible deploy-time value for ``key`` (whose template value is a CloudFormation reference)."""
    if key.endswith("_ARN"):
        return "arn:aws:secretsmanager:us-east-1:111122223333:secret:x"
    if key.endswith(("_URL", "JWT_ISSUER")):
        return "https://deploy-time.example.com/x"
    if key.endswith("_PARAMETER"):
        return "/HindsightMemory/dev/x"
    if key.endswith("ALLOWED_CLIENTS"):
        return "client-1"
    return "deploy-time-value"


def _concrete(env: dict[str, Any]) -> dict[str, str]:
    """``env`` as the process sees it: tokens replaced, the variables no settings class owns left out."""
    return {
        key: value if isinstance(value, str) and "${Token" not in value else _stand_in(key)
        for key, value in env.items()
        if not key.startswith(_NOT_SETTINGS)
    }


def _function_env(template: dict[str, Any], prefix: str) -> dict[str, str]:
    (function,) = [v for k, v in resources(template, "AWS::Lambda::Function").items() if k.startswith(prefix)]
    return _concrete(function["Properties"]["Environment"]["Variables"])


def _agent_env(synth: Synth) -> dict[str, str]:
    (runtime,) = resources(synth.template("-Agent"), "AWS::BedrockAgentCore::Runtime").values()
    return _concrete(runtime["Properties"]["EnvironmentVariables"])


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_process_reads_exactly_the_environment_the_stack_writes(synths: dict[str, Synth], variant: str) -> None:
    synth = synths[variant]
    agent = _agent_env(synth)
    processes: dict[str, tuple[dict[str, str], Any]] = {
        "agent": (agent, Settings.from_env),
        "replay": (_function_env(synth.template("-Agent"), "RetainReplayFunction"), ReplaySettings.from_env),
        "admin": (_function_env(synth.template("-Operations"), "MemoryAdminFunction"), FunctionSettings.from_env),
    }
    if any(name.endswith("-Gateway") for name in synth.templates):
        gateway = synth.template("-Gateway")
        processes["memory tools target"] = (_function_env(gateway, "MemoryGatewayTarget"), TargetSettings.from_env)
        processes["interceptor"] = (_function_env(gateway, "MemoryGatewayInterceptor"), InterceptorSettings.from_env)
    for name, (env, from_env) in processes.items():
        settings = from_env(env)  # GIVEN the template's environment WHEN the process reads it
        assert settings.to_env() == env, name  # THEN it holds every variable, each read under the written name
    assert Settings.from_env(agent).agent_name == synth.config.agent.name


def _hindsight_env(synth: Synth) -> dict[str, str]:
    """The Hindsight container's plain environment (its secrets are ECS secrets, listed apart)."""
    (task,) = [
        v
        for k, v in resources(synth.template("-MemoryService"), "AWS::ECS::TaskDefinition").items()
        if k.startswith("MemoryApiTask")
    ]
    (main,) = [c for c in task["Properties"]["ContainerDefinitions"] if c["Name"] == "Hindsight"]
    plain = _concrete({item["Name"]: item["Value"] for item in main["Environment"]})
    return {k: v for k, v in plain.items() if k.startswith(iso.ENV_TENANT_PREFIX) or k in iso.SERVER_REQUIRED_ENV}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_the_extension_reads_exactly_the_plain_settings_the_stack_writes(
    synths: dict[str, Synth], variant: str
) -> None:
    synth = synths[variant]
    env = _hindsight_env(synth)
    # GIVEN the plain settings, and stand-ins for the secrets the task gets from Secrets Manager and SSM
    secrets = {iso.ENV_TENANT_PREFIX + "OPERATOR_KEY": "o" * 40}
    if synth.config.auth.mode.value == "iam":
        secrets[iso.ENV_TENANT_PREFIX + "AGENT_KEY"] = "a" * 40
    else:
        secrets[iso.ENV_TENANT_PREFIX + "JWT_STATIC_JWKS"] = json.dumps({"keys": [{"kty": "RSA", "kid": "k"}]})
    settings = iso.IsolationSettings.from_env({**env, **secrets})
    # WHEN written back without the secrets THEN the stack's plain environment comes out
    jwt = dataclasses.replace(settings.jwt, static_jwks=None) if settings.jwt is not None else None
    plain = dataclasses.replace(settings, operator_key=None, agent_key=None, jwt=jwt)
    assert plain.to_env() == env
    assert settings.expiry_grace_s == synth.config.auth.grace_seconds


def test_the_recall_settings_in_cdk_json_reach_the_agent(tmp_path: Path) -> None:
    # GIVEN cdk.json giving the recall budget, block size and deadline
    synth = synthesize(
        tmp_path,
        {"agent.recall_budget": "high", "agent.recall_max_tokens": "800", "agent.recall_timeout_seconds": "1.5"},
        nag=False,
    )
    # WHEN the agent reads its deployed environment THEN its memory adapter uses them
    memory = Settings.from_env(_agent_env(synth)).memory
    assert (memory.recall_budget, memory.recall_max_tokens, memory.recall_timeout) == ("high", 800, 1.5)


def test_bad_recall_settings_are_refused_with_their_cdk_json_names() -> None:
    with pytest.raises(ConfigError) as err:
        load_config_from_cdk_json(
            {"agent.recall_budget": "huge", "agent.recall_max_tokens": "0", "agent.recall_timeout_seconds": "-1"}
        )
    message = str(err.value)
    assert "agent.recall_budget must be one of low, mid, high, got 'huge'" in message
    assert "agent.recall_max_tokens must be at least 1" in message
    assert "agent.recall_timeout_seconds must be greater than 0" in message
