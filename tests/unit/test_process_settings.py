"""One environment contract per process: what a settings class writes (``to_env``) is what it reads (``from_env``).

Each process is checked with settings that differ from every default they can (so a setting written under one name
and read under another, or not written at all, fails), and once at its defaults (a default is stated once: a setting
left at its default is not written, except the few the deployed environment states on purpose).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from hindsight_isolation.fading import FadingRules
from hindsight_isolation.settings import DEFAULT_EXPIRY_GRACE_S, IsolationSettings, fading_settings, server_env
from infra.config import load_config_from_cdk_json
from infra.functions.eks_restart.index import RestartSettings
from infra.functions.isolation_probe.index import ProbeSettings
from infra.functions.jwks_mirror.index import MirrorSettings
from infra.functions.memory_admin.index import FunctionSettings
from infra.functions.memory_gateway.interceptor import InterceptorSettings
from infra.functions.memory_gateway.target import TargetSettings
from infra.functions.redeploy_on_rotation.index import RedeploySettings
from memory_adapter.agentcore.settings import AgentMemorySettings, IdentitySource
from memory_adapter.config import HindsightAgentCoreConfig
from memory_adapter.identity.settings import JwtSettings
from memory_adapter.kinds import RetentionRules
from memory_adapter.missions import Missions
from memory_adapter.queue_replay import ReplaySettings
from memory_adapter.settings_fields import declared, secret_arn
from memory_adapter.settings_reader import env_text
from runtime_handler.settings import ModelProvider, Settings

URL = "https://memory.internal.example.com"
QUEUE = "https://sqs.us-east-1.amazonaws.com/111122223333/retains"
SECRET = "arn:aws:secretsmanager:us-east-1:111122223333:secret:agent-key"
CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"
JWKS = {"keys": [{"kty": "RSA", "kid": "k1", "n": "AQAB", "e": "AQAB"}]}


def _checks(**extra: object) -> JwtSettings:
    return JwtSettings(
        issuer="https://issuer.example.com/pool",
        jwks_parameter="/HindsightMemory/dev/identity/jwks",
        allowed_clients=("client-1", "client-2"),
        token_use="access",
        user_claim="uid",
        tenant_claim="tid",
        algorithms=("RS256", "ES256"),
        leeway_s=12.5,
        max_token_bytes=4096,
        **extra,  # type: ignore[arg-type]
    )


def _memory() -> HindsightAgentCoreConfig:
    return HindsightAgentCoreConfig(
        hindsight_api_url=URL,
        recall_budget="high",
        recall_max_tokens=900,
        recall_candidate_tokens=6000,
        recall_timeout=1.25,
        timeout=7.0,
        tags=["support", "eu"],
        breaker_slow_ratio=0.5,
        spool_queue_url=QUEUE,
        retain_workers=2,
        auto_replay=False,
        missions=Missions.from_mapping({"support": {"retain_mission": "Keep preferences."}}).to_json(),
        log_hash_salt="pepper",
    )


def _agent() -> Settings:
    return Settings(
        agent_name="support",
        auth_mode=IdentitySource.JWT,
        memory=_memory(),
        jwt=_checks(),
        allow_anonymous=True,
        ca_bundle=CA,
        retain_wait_s=12.0,
        model_provider=ModelProvider.BEDROCK,
        model_id="amazon.nova-lite-v1:0",
        model_max_tokens=2048,
        max_prompt_chars=9000,
        working_memory_max_turns=5,
        working_memory_max_chars=5000,
        working_memory_max_sessions=50,
        tool_rounds=2,
        gateway_url_parameter="/HindsightMemory/dev/gateway/url",
        gateway_target="memory",
    )


#: Every process's settings, away from their defaults: (name, settings, its from_env).
PROCESSES = {
    "agent": (_agent(), Settings.from_env),
    "agent you bring (iam)": (
        AgentMemorySettings(
            agent_name="support",
            auth_mode=IdentitySource.IAM,
            memory=HindsightAgentCoreConfig(hindsight_api_url=URL, recall_budget="low"),
            hindsight_api_key_secret_arn=SECRET,
            tenant_header="X-Amzn-Bedrock-AgentCore-Runtime-Custom-Tenant",
        ),
        AgentMemorySettings.from_env,
    ),
    "memory tools target": (
        TargetSettings(
            agent_name="support",
            hindsight_api_url=URL,
            ca_bundle=CA,
            recall_budget="low",
            recall_max_tokens=700,
            recall_candidate_tokens=2500,
            jwt=_checks(),
        ),
        TargetSettings.from_env,
    ),
    "interceptor": (InterceptorSettings(jwt=_checks()), InterceptorSettings.from_env),
    "replay": (
        ReplaySettings(
            hindsight_api_url=URL,
            dead_letter_queue_url=QUEUE + "-dlq",
            delivery_timeout_s=7.5,
            agent_key_secret_arn=SECRET,
        ),
        ReplaySettings.from_env,
    ),
    "admin": (
        FunctionSettings(
            hindsight_api_url=URL,
            operator_key_secret_arn=SECRET,
            bucket="admin-bucket",
            bucket_key_arn="arn:aws:kms:us-east-1:111122223333:key/k",
            rules=RetentionRules.from_mapping({"plan": 7, "turn": None}),
            expiry_batch_size=50,
            expiry_dry_run=True,
            recall_budget="high",
            recall_max_tokens=900,
            recall_candidate_tokens=0,
        ),
        FunctionSettings.from_env,
    ),
    "hindsight + extension": (
        IsolationSettings(
            jwt=JwtSettings(issuer="https://issuer.example.com/pool", static_jwks=JWKS, allowed_audience=("api://m",)),
            expiry_grace_s=600.0,
            operator_key="o" * 40,
            token_cache_ttl_s=5.0,
            token_cache_size=10,
            schema="emb_v2",
            events_queue_url=QUEUE + ".fifo",
            events_include_text=True,
            **fading_settings(FadingRules.from_mapping({"plan": 3, "fact": 90}, floor=0.2)),
            fading_clock=datetime(2026, 3, 1, 12, tzinfo=UTC),
            fading_clock_header=True,
        ),
        IsolationSettings.from_env,
    ),
    "isolation probe": (
        ProbeSettings(
            hindsight_api_url=URL,
            ca_bundle=CA,
            operator_key_secret_arn=SECRET + "-operator",
            agent_key_secret_arn=SECRET,
            agent_name="support",
            tenant_id="acme",
            on_leak="warn",
        ),
        ProbeSettings.from_env,
    ),
    "jwks mirror": (
        MirrorSettings(discovery_url=URL + "/.well-known/openid-configuration", parameter_name="/keys"),
        MirrorSettings.from_env,
    ),
    "rotation redeploy": (
        RedeploySettings(cluster_arn="arn:aws:ecs:c", service_arns=("arn:aws:ecs:s1", "arn:aws:ecs:s2")),
        RedeploySettings.from_env,
    ),
    "eks restart": (
        RestartSettings(
            cluster_name="memory",
            namespace="hindsight",
            workloads=("deployments/api", "statefulsets/worker"),
            annotation="example.com/restartedAt",
        ),
        RestartSettings.from_env,
    ),
}


@pytest.mark.parametrize("process", list(PROCESSES))
def test_each_process_reads_back_what_its_settings_write(process: str) -> None:
    # GIVEN a process's settings, none at its default WHEN written and read back THEN they are the same settings
    settings, from_env = PROCESSES[process]
    env = settings.to_env()  # type: ignore[attr-defined]
    assert all(isinstance(value, str) for value in env.values())
    assert from_env(env) == settings


def test_every_secret_a_process_reads_is_checked_as_an_arn() -> None:
    # GIVEN every field of a process that names a Secrets Manager secret
    secrets = [
        (cls.__name__, f.name, s)
        for cls in {type(settings) for settings, _ in PROCESSES.values()}
        for f, s in declared(cls)
        if (s.env or "").endswith("_SECRET_ARN")
    ]
    assert len(secrets) >= 5
    # THEN each reads it with the one rule (a name that is not an ARN is refused, naming the variable)
    assert [(cls, name) for cls, name, s in secrets if s.parse is not secret_arn] == []


def test_an_agent_at_its_defaults_writes_only_what_it_must_state() -> None:
    # GIVEN the agent with every optional setting at its default
    settings = Settings(
        agent_name="support",
        auth_mode=IdentitySource.IAM,
        memory=HindsightAgentCoreConfig(hindsight_api_url=URL),
        model_provider=ModelProvider.ECHO,
    )
    # WHEN written THEN only the required settings and the explicit security switch are, and it reads back
    env = settings.to_env()
    assert env == {
        "AGENT_NAME": "support",
        "HINDSIGHT_API_URL": URL,
        "ALLOW_ANONYMOUS": "false",
        "AUTH_MODE": "iam",
        "MODEL_PROVIDER": "echo",
    }
    assert Settings.from_env(env) == settings


def test_the_retain_grace_window_has_one_default_locally_and_deployed() -> None:
    # GIVEN cdk.json leaving auth.retain_grace_seconds unset, and a local server started without one
    deployed = load_config_from_cdk_json().auth.grace_seconds
    local = IsolationSettings.from_env(server_env(operator_key="o" * 40)).expiry_grace_s
    # THEN both are the extension's one default
    assert deployed == local == DEFAULT_EXPIRY_GRACE_S


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (True, "true"),
        (3600.0, "3600"),
        (1.25, "1.25"),
        (7, "7"),
        (("a", "b"), "a,b"),
        ((), None),
        (None, None),
        ({"keys": []}, json.dumps({"keys": []}, separators=(",", ":"))),
    ],
)
def test_values_are_written_the_way_the_reader_reads_them(value: object, text: str | None) -> None:
    assert env_text(value) == text
