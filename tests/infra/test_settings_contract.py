"""Values given in ``cdk.json`` reach what each process reads, through the synthesized templates.

Each ``cdk.json`` key that configures a process is given a value that is not its default; the stacks are synthesized;
each process's settings class reads the environment its template gives it (deploy-time tokens replaced by plausible
values) and must hold that value. Nothing here writes an environment (no ``to_env``): a setting the stack writes under
a name the process does not read, or does not write at all, fails. Then every variable in each environment must be
one the process reads (its ``env_names``), and bad recall values are refused with their ``cdk.json`` names.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from hindsight_isolation.settings import ENV_TENANT_PREFIX, SERVER_REQUIRED_ENV, IsolationSettings
from infra.config import ConfigError, load_config_from_cdk_json
from infra.functions.jwks_mirror.index import MirrorSettings
from infra.functions.memory_admin.index import FunctionSettings
from infra.functions.memory_gateway.interceptor import InterceptorSettings
from infra.functions.memory_gateway.target import TargetSettings
from infra.functions.redeploy_on_rotation.index import RedeploySettings
from memory_adapter.missions import Missions
from memory_adapter.queue_replay import ReplaySettings
from runtime_handler.settings import Settings
from tests.infra.conftest import ROOT, VARIANTS, Synth, resources, synthesize
from tests.unit.private_ca import make_private_ca

CDK_JSON = ROOT / "cdk.json"
MISSION = "Keep the user's invoices and the plans they pay for."
#: Non-default values of the cdk.json keys that configure a process (on top of the jwt-import variant: the
#: gateway's functions exist and the agent's tools go through it).
CHANGED = {
    "agent.model_id": "amazon.nova-pro-v1:0",
    "agent.allow_anonymous": "true",
    "agent.recall_budget": "high",
    "agent.recall_max_tokens": "800",
    "agent.recall_candidate_tokens": "6000",
    "agent.recall_timeout_seconds": "1.5",
    "auth.user_claim": "username",
    "auth.retain_grace_seconds": "600",
    "retain_queue.delivery_timeout_seconds": "25",
    "operations.expiry_batch_size": "50",
    "operations.expiry_dry_run": "true",
    "retention.plan": "7",
    "fading.enabled": "true",
    "fading.plan": "3",
    "events.enabled": "true",
    "events.include_text": "true",
    "hindsight.max_body_mib": "48",
}


def _with_mission(env: str) -> dict[str, Any]:
    """cdk.json's ``envs`` with the reference agent's mission changed in ``env`` (missions are not ``-c`` keys)."""
    envs = json.loads(CDK_JSON.read_text())["context"]["envs"]
    overlay = {**envs[env], "missions": {"assistant": {"retain_mission": MISSION}}}
    return {"envs": {**envs, env: overlay}}


IAM_CHANGED = {**VARIANTS["iam-aurora"], "auth.tenant_id": "globex"}

#: A process's settings, read from its environment.
Read = dict[str, Any]
#: What one cdk.json key must become: (process, the value as that process holds it, the expected value).
Expect = tuple[str, Callable[[Any], Any], Any]


def _stand_in(key: str) -> str:
    """A plausible deploy-time value for ``key`` (whose template value is a CloudFormation reference)."""
    if key.endswith("EVENTS_QUEUE_URL"):
        return "https://sqs.us-east-1.amazonaws.com/111122223333/events.fifo"
    if key.endswith(("_ARN", "_ARNS")):
        return "arn:aws:secretsmanager:us-east-1:111122223333:secret:x"
    if key.endswith(("_URL", "JWT_ISSUER")):
        return "https://deploy-time.example.com/x"
    if key.endswith(("_PARAMETER", "PARAMETER_NAME")):
        return "/HindsightMemory/dev/x"
    return "deploy-time-value"


def _concrete(env: dict[str, Any]) -> dict[str, str]:
    """``env`` as the process sees it: tokens replaced, Powertools' own variables left out."""
    return {
        key: value if isinstance(value, str) and "${Token" not in value else _stand_in(key)
        for key, value in env.items()
        if not key.startswith("POWERTOOLS_")
    }


def _function_env(synth: Synth, stack: str, prefix: str) -> dict[str, str]:
    functions = [
        f for k, f in resources(synth.template(stack), "AWS::Lambda::Function").items() if k.startswith(prefix)
    ]
    assert functions, f"no function {prefix}* in {stack}"
    return _concrete(functions[0]["Properties"]["Environment"]["Variables"])


def _agent_env(synth: Synth) -> dict[str, str]:
    (runtime,) = resources(synth.template("-Agent"), "AWS::BedrockAgentCore::Runtime").values()
    return _concrete(runtime["Properties"]["EnvironmentVariables"])


def _hindsight_env(synth: Synth) -> dict[str, str]:
    """The Hindsight container's plain environment, with stand-ins for the secrets ECS injects."""
    (task,) = [
        v
        for k, v in resources(synth.template("-MemoryService"), "AWS::ECS::TaskDefinition").items()
        if k.startswith("MemoryApiTask")
    ]
    (main,) = [c for c in task["Properties"]["ContainerDefinitions"] if c["Name"] == "Hindsight"]
    plain = _concrete({item["Name"]: item["Value"] for item in main["Environment"]})
    secrets = {item["Name"] for item in main.get("Secrets", [])}
    stand_ins = {
        ENV_TENANT_PREFIX + "OPERATOR_KEY": "o" * 40,
        ENV_TENANT_PREFIX + "AGENT_KEY": "a" * 40,
        ENV_TENANT_PREFIX + "JWT_STATIC_JWKS": json.dumps({"keys": [{"kty": "RSA", "kid": "k"}]}),
    }
    tenant = {k: v for k, v in plain.items() if k.startswith(ENV_TENANT_PREFIX) or k in SERVER_REQUIRED_ENV}
    return {**tenant, **{k: v for k, v in stand_ins.items() if k in secrets}}


def _processes(synth: Synth) -> dict[str, tuple[dict[str, str], Any]]:
    """Each process's environment and its settings class."""
    processes: dict[str, tuple[dict[str, str], Any]] = {
        "agent": (_agent_env(synth), Settings),
        "replay": (_function_env(synth, "-Agent", "RetainReplayFunction"), ReplaySettings),
        "admin": (_function_env(synth, "-Operations", "MemoryAdminFunction"), FunctionSettings),
        "extension": (_hindsight_env(synth), IsolationSettings),
    }
    if any(name.endswith("-Gateway") for name in synth.templates):
        processes["target"] = (_function_env(synth, "-Gateway", "MemoryGatewayTarget"), TargetSettings)
        processes["interceptor"] = (_function_env(synth, "-Gateway", "MemoryGatewayInterceptor"), InterceptorSettings)
    if any(name.endswith("-Identity") for name in synth.templates):
        processes["jwks mirror"] = (_function_env(synth, "-Identity", "IdentityMirror"), MirrorSettings)
    return processes


def _read(synth: Synth) -> Read:
    return {name: cls.from_env(env) for name, (env, cls) in _processes(synth).items()}


@pytest.fixture(scope="module")
def changed(tmp_path_factory: pytest.TempPathFactory) -> Read:
    ca = make_private_ca(tmp_path_factory.mktemp("ca"))
    overrides = {
        **VARIANTS["jwt-import"],
        **CHANGED,
        **_with_mission(VARIANTS["jwt-import"]["env"]),
        "hindsight.ca_bundle": str(ca.ca_file),
    }
    synth = synthesize(tmp_path_factory.mktemp("cdk-changed"), overrides, nag=False)
    return {**_read(synth), "ca": ca.ca_pem.strip()}


@pytest.fixture(scope="module")
def iam(tmp_path_factory: pytest.TempPathFactory) -> Read:
    return _read(synthesize(tmp_path_factory.mktemp("cdk-iam-changed"), IAM_CHANGED, nag=False))


def _retain_mission(missions: Missions) -> str | None:
    mission = missions.for_agent("assistant")
    return mission.retain_mission if mission is not None else None


def _memory(name: str) -> Callable[[Any], Any]:
    return lambda s: getattr(s.memory, name)


#: cdk.json key -> what each process that reads it must hold.
EXPECTED: dict[str, list[Expect]] = {
    "agent.model_id": [("agent", lambda s: s.model_id, "amazon.nova-pro-v1:0")],
    "agent.allow_anonymous": [("agent", lambda s: s.allow_anonymous, True)],
    "agent.recall_budget": [
        ("agent", _memory("recall_budget"), "high"),
        ("target", lambda s: s.recall_budget, "high"),
        ("admin", lambda s: s.recall_budget, "high"),
    ],
    "agent.recall_max_tokens": [
        ("agent", _memory("recall_max_tokens"), 800),
        ("target", lambda s: s.recall_max_tokens, 800),
        ("admin", lambda s: s.recall_max_tokens, 800),
    ],
    "agent.recall_candidate_tokens": [
        ("agent", _memory("recall_candidate_tokens"), 6000),
        ("target", lambda s: s.recall_candidate_tokens, 6000),
        ("admin", lambda s: s.recall_candidate_tokens, 6000),
    ],
    "agent.recall_timeout_seconds": [("agent", _memory("recall_timeout"), 1.5)],
    "agent.tools_via_gateway": [("agent", lambda s: s.tools_via_gateway, True)],
    "auth.user_claim": [
        ("agent", lambda s: s.jwt.user_claim, "username"),
        ("target", lambda s: s.jwt.user_claim, "username"),
        ("interceptor", lambda s: s.jwt.user_claim, "username"),
        ("extension", lambda s: s.jwt.user_claim, "username"),
    ],
    "auth.tenant_claim": [
        ("agent", lambda s: s.jwt.tenant_claim, "tid"),
        ("target", lambda s: s.jwt.tenant_claim, "tid"),
        ("extension", lambda s: s.jwt.tenant_claim, "tid"),
    ],
    "auth.allowed_audience": [
        ("agent", lambda s: s.jwt.allowed_audience, ("api://memory-agent",)),
        ("interceptor", lambda s: s.jwt.allowed_audience, ("api://memory-agent",)),
    ],
    "auth.discovery_url": [("jwks mirror", lambda s: s.discovery_url, VARIANTS["jwt-import"]["auth.discovery_url"])],
    "auth.retain_grace_seconds": [("extension", lambda s: s.expiry_grace_s, 600.0)],
    "retain_queue.delivery_timeout_seconds": [("replay", lambda s: s.delivery_timeout_s, 25.0)],
    "operations.expiry_batch_size": [("admin", lambda s: s.expiry_batch_size, 50)],
    "operations.expiry_dry_run": [("admin", lambda s: s.expiry_dry_run, True)],
    "retention.plan": [("admin", lambda s: json.loads(s.rules.to_json())["plan"], 7)],
    "fading.plan": [("extension", lambda s: s.fading is not None and s.fading.half_life_days.get("plan"), 3.0)],
    "events.include_text": [
        ("extension", lambda s: (s.events_queue_url is not None, s.events_include_text), (True, True))
    ],
    "hindsight.max_body_mib": [("extension", lambda s: s.max_body_mib, 48)],
    "missions.assistant.retain_mission (envs.prod)": [
        ("agent", lambda s: _retain_mission(Missions.from_json(s.memory.missions)), MISSION),
        ("extension", lambda s: _retain_mission(s.missions), MISSION),
    ],
}


@pytest.mark.parametrize(("key", "process"), [(k, e[0]) for k, expects in EXPECTED.items() for e in expects])
def test_a_changed_cdk_json_value_reaches_the_process(changed: Read, key: str, process: str) -> None:
    # GIVEN cdk.json with a non-default value for key, WHEN the process reads its synthesized environment
    ((_, held, expected),) = [e for e in EXPECTED[key] if e[0] == process]
    # THEN it holds that value
    assert held(changed[process]) == expected


def test_the_private_ca_reaches_every_client_of_hindsight(changed: Read) -> None:
    for process in ("agent", "replay", "admin", "target"):
        assert changed[process].ca_bundle == changed["ca"], process


def test_the_iam_tenant_and_agent_reach_the_agent_and_the_extension(iam: Read) -> None:
    # GIVEN auth.mode=iam with auth.tenant_id, WHEN the agent and the extension read their environments
    agent, extension = iam["agent"], iam["extension"]
    # THEN the agent's tenant and the extension's agent credential scope are the configured ones
    assert agent.tenant_id == "globex"
    assert (extension.agent_name, extension.agent_tenant) == (agent.agent_name, "globex")
    assert json.loads(iam["admin"].rules.to_json())["turn"] is None
    assert iam["admin"].expiry_dry_run is True


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_variable_the_stack_writes_is_read(synths: dict[str, Synth], variant: str) -> None:
    # GIVEN each process's synthesized environment WHEN compared with what its settings class reads
    for name, (env, cls) in _processes(synths[variant]).items():
        names = set(cls.env_names())
        # THEN nothing is written that no field reads (a misspelled name would be silently ignored)
        assert set(env) <= names, (name, set(env) - names)
        cls.from_env(env)


def test_the_rotation_redeploy_reads_its_services(default: Synth) -> None:
    (env,) = [
        _concrete(variables)
        for template in default.templates.values()
        for function in resources(template, "AWS::Lambda::Function").values()
        if "SERVICE_ARNS" in (variables := function["Properties"].get("Environment", {}).get("Variables", {}))
    ]
    settings = RedeploySettings.from_env(env)
    assert settings.service_arns
    assert settings.cluster_arn


def test_bad_recall_settings_are_refused_with_their_cdk_json_names() -> None:
    with pytest.raises(ConfigError) as err:
        load_config_from_cdk_json(
            {
                "agent.recall_budget": "huge",
                "agent.recall_max_tokens": "0",
                "agent.recall_candidate_tokens": "40000",
                "agent.recall_timeout_seconds": "-1",
            }
        )
    message = str(err.value)
    assert "agent.recall_budget must be one of: low, mid, high; got 'huge'" in message
    assert "agent.recall_max_tokens must be at least 1" in message
    assert "agent.recall_candidate_tokens must be between 0 and 32000, got 40000" in message
    assert "agent.recall_timeout_seconds must be greater than 0" in message


def test_the_changed_values_are_not_the_defaults() -> None:
    # The test above proves something only if each value differs from what the process holds by default.
    defaults = load_config_from_cdk_json({})
    changed = load_config_from_cdk_json({**VARIANTS["jwt-import"], **CHANGED})
    assert changed.agent.memory_settings
    assert not defaults.agent.memory_settings
    assert changed.agent.model_id != defaults.agent.model_id
    assert changed.operations.expiry_batch_size != defaults.operations.expiry_batch_size
