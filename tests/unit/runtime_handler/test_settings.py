"""Settings.from_env: typed values, defaults, and every problem reported at once."""

from __future__ import annotations

import pytest

from memory_adapter.agentcore.settings import IdentitySource, SettingsError
from runtime_handler.settings import ModelProvider, Settings

JWT = {
    "AGENT_NAME": "support",
    "HINDSIGHT_API_URL": "http://127.0.0.1:8888/",
    "AUTH_MODE": "jwt",
    "JWT_DISCOVERY_URL": "https://idp.example/pool/.well-known/openid-configuration",
    "JWT_ALLOWED_CLIENTS": "a, b,,",
    "MODEL_PROVIDER": "bedrock",
    "MODEL_ID": "anthropic.claude",
}


def _problems(env: dict[str, str]) -> str:
    with pytest.raises(SettingsError) as info:
        Settings.from_env(env)
    return "\n".join(info.value.problems)


def test_jwt_settings_parse_with_defaults() -> None:
    settings = Settings.from_env(JWT)
    assert settings.auth_mode is IdentitySource.JWT
    assert settings.model_provider is ModelProvider.BEDROCK
    assert settings.hindsight_api_url == "http://127.0.0.1:8888"
    assert settings.jwt is not None
    assert settings.jwt.allowed_clients == ("a", "b")
    assert (settings.jwt.user_claim, settings.jwt.algorithms, settings.allow_anonymous) == ("sub", ("RS256",), False)
    assert settings.max_prompt_chars == 16_000
    assert settings.recall_timeout_s == 2.0


def test_every_problem_is_listed_at_once() -> None:
    text = _problems(
        {"AUTH_MODE": "jwt", "JWT_ALGORITHMS": "HS256", "JWT_LEEWAY_SECONDS": "-1", "ALLOW_ANONYMOUS": "?"}
    )
    for expected in (
        "AGENT_NAME is required",
        "HINDSIGHT_API_URL is required",
        "JWT_DISCOVERY_URL is required",
        "JWT_ALLOWED_CLIENTS",
        "asymmetric",
        "JWT_LEEWAY_SECONDS",
        "ALLOW_ANONYMOUS",
        "MODEL_ID is required",
    ):
        assert expected in text


def test_jwt_mode_refuses_a_hindsight_key_and_a_fixed_tenant() -> None:
    text = _problems(JWT | {"HINDSIGHT_API_KEY": "k", "TENANT_ID": "acme"})
    assert "do not give the agent a Hindsight key" in text
    assert "TENANT_ID/TENANT_HEADER apply to AUTH_MODE=iam only" in text


def test_iam_mode_checks_the_tenant_header_name() -> None:
    base = {"AGENT_NAME": "a", "HINDSIGHT_API_URL": "http://h", "AUTH_MODE": "iam", "MODEL_PROVIDER": "echo"}
    assert "TENANT_HEADER must be" in _problems(base | {"TENANT_HEADER": "X-Tenant"})
    assert "not both" in _problems(
        base | {"TENANT_HEADER": "X-Amzn-Bedrock-AgentCore-Runtime-Custom-T", "TENANT_ID": "t"}
    )
    assert "JWT_* settings apply" in _problems(base | {"JWT_ALLOWED_CLIENTS": "x"})
    settings = Settings.from_env(base | {"HINDSIGHT_API_KEY_SECRET_ARN": "arn:aws:secretsmanager:r:1:secret:k"})
    assert settings.hindsight_api_key_secret_arn is not None


def test_mirrored_keys_take_the_issuer_from_the_discovery_url() -> None:
    settings = Settings.from_env(JWT | {"JWT_JWKS_PARAMETER": "/agent/jwks"})
    assert settings.jwt is not None
    assert settings.jwt.expected_issuer == "https://idp.example/pool"
    no_discovery = {k: v for k, v in JWT.items() if k != "JWT_DISCOVERY_URL"}
    assert "JWT_ISSUER (or JWT_DISCOVERY_URL" in _problems(no_discovery | {"JWT_JWKS_PARAMETER": "/agent/jwks"})
    explicit = Settings.from_env(no_discovery | {"JWT_JWKS_PARAMETER": "/p", "JWT_ISSUER": "https://idp.example/x"})
    assert explicit.jwt is not None
    assert explicit.jwt.expected_issuer == "https://idp.example/x"


def test_the_memory_adapter_settings_are_read_once_with_the_agents() -> None:
    # GIVEN the adapter's own variables next to the agent's
    settings = Settings.from_env(
        JWT | {"HINDSIGHT_ADAPTER_MAX_RETRIES": "7", "HINDSIGHT_ADAPTER_RECALL_TIMEOUT": "0.5"}
    )
    # THEN they reach the adapter's settings, and the adapter's recall deadline is the turn's
    assert (settings.memory.max_retries, settings.memory.recall_timeout) == (7, 0.5)
    assert settings.recall_timeout_s == 0.5
    # AND a bad adapter value is reported with every other problem
    text = _problems(JWT | {"HINDSIGHT_ADAPTER_MAX_RETRIES": "many", "MODEL_ID": ""})
    assert "HINDSIGHT_ADAPTER_MAX_RETRIES must be an integer" in text
    assert "MODEL_ID is required" in text


def test_the_recall_deadline_has_one_name() -> None:
    # GIVEN the deadline's earlier, agent-only name (no alias is read: the stack writes every environment itself)
    settings = Settings.from_env(JWT | {"MEMORY_RECALL_TIMEOUT_SECONDS": "1.5"})
    # THEN it is not a setting: the deadline is the adapter's HINDSIGHT_ADAPTER_RECALL_TIMEOUT (default kept)
    assert settings.recall_timeout_s == Settings.from_env(JWT).recall_timeout_s != 1.5
    assert Settings.from_env(JWT | {"HINDSIGHT_ADAPTER_RECALL_TIMEOUT": "1.5"}).recall_timeout_s == 1.5


@pytest.mark.parametrize(("name", "value"), [("AUTH_MODE", "saml"), ("MODEL_PROVIDER", "gpt"), ("AGENT_NAME", "a:b")])
def test_bad_values_are_named(name: str, value: str) -> None:
    assert name in _problems(JWT | {name: value})


def test_env_names_lists_what_is_read() -> None:
    names = Settings.env_names()
    assert {"AGENT_NAME", "AUTH_MODE", "JWT_DISCOVERY_URL", "HINDSIGHT_API_KEY_SECRET_ARN", "MODEL_ID"} <= set(names)
    assert {"JWT_LEEWAY_SECONDS", "JWT_JWKS_CACHE_TTL_SECONDS", "HINDSIGHT_ADAPTER_MAX_RETRIES"} <= set(names)
    assert {"HINDSIGHT_CA_BUNDLE", "WORKING_MEMORY_MAX_TURNS"} <= set(names)
    assert len(names) == len(set(names))
    assert all(isinstance(name, str) and name.isupper() for name in names)


def test_the_memory_tools_can_go_through_the_gateway_with_the_callers_token() -> None:
    from memory_adapter.tools import GatewayTools
    from runtime_handler.main import create_app

    # GIVEN the stack's setting (the URL's SSM parameter and the target name)
    settings = Settings.from_env(
        JWT | {"MEMORY_TOOLS_GATEWAY_URL_PARAMETER": "/p/dev/gateway/mcp-url", "MEMORY_TOOLS_GATEWAY_TARGET": "memory"}
    )
    assert settings.tools_via_gateway
    # THEN the model's tools run through the gateway (the parameter is read on first use, not at start-up)
    assert isinstance(create_app(settings).state.agent.deps.tools, GatewayTools)
    assert not Settings.from_env(JWT).tools_via_gateway


def test_the_model_gets_the_wirings_tools_unless_memory_tools_are_off() -> None:
    from memory_adapter.tools import MemoryTools
    from runtime_handler.main import create_app

    # GIVEN the default settings, THEN the model's tools are the wiring's (the ones an agent you bring gets)
    agent = create_app(Settings.from_env(JWT)).state.agent
    assert isinstance(agent.deps.tools, MemoryTools)
    assert agent.deps.tools is agent.wiring.tools
    # GIVEN MEMORY_TOOLS=false, THEN the model gets none
    assert create_app(Settings.from_env(JWT | {"MEMORY_TOOLS": "false"})).state.agent.deps.tools is None


def test_gateway_settings_that_cannot_work_are_refused() -> None:
    url = "MEMORY_TOOLS_GATEWAY_URL"
    text = _problems(JWT | {url: "http://gateway.example.com/mcp", "MEMORY_TOOLS_GATEWAY_URL_PARAMETER": "x"})
    assert "MEMORY_TOOLS_GATEWAY_URL or MEMORY_TOOLS_GATEWAY_URL_PARAMETER, not both" in text
    assert "must be an https URL" in text
    assert "must be an SSM parameter name" in text
    iam = {"AGENT_NAME": "support", "HINDSIGHT_API_URL": "http://h", "AUTH_MODE": "iam", "MODEL_PROVIDER": "echo"}
    assert "need AUTH_MODE=jwt" in _problems(iam | {url: "https://gw.example.com/mcp"})
    assert "would never be used" in _problems(JWT | {url: "https://gw.example.com/mcp", "MEMORY_TOOLS": "false"})
    assert "applies only with a gateway URL" in _problems(JWT | {"MEMORY_TOOLS_GATEWAY_TARGET": "memory"})
    assert Settings.from_env(JWT | {url: "http://127.0.0.1:8891/mcp"}).gateway_url == "http://127.0.0.1:8891/mcp"
    # a name that merely starts like a loopback address is somewhere else: the caller's token never goes there
    assert "must be an https URL" in _problems(JWT | {url: "http://localhost.example.com/mcp"})
