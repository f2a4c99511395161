"""Parsing the ``HINDSIGHT_API_TENANT_*`` dict Hindsight's loader hands the tenant extension."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hindsight_isolation.settings import (
    DEFAULT_EXPIRY_GRACE_S,
    ENV_OPERATION_VALIDATOR_EXTENSION,
    ENV_TENANT_EXTENSION,
    ENV_TENANT_PREFIX,
    OPERATION_VALIDATOR_CLASS,
    TENANT_CLASS,
    ConfigError,
    IsolationSettings,
    server_env,
)
from memory_adapter.kinds import MemoryKind
from memory_adapter.missions import Mission, Missions

OPERATOR_KEY = "o" * 40
AGENT_KEY = "a" * 40
ISSUER = {"jwt_issuer": "https://i", "jwt_jwks_url": "https://i/jwks", "jwt_allowed_clients": "app"}


def _loader_view(env: dict[str, str]) -> dict[str, str]:
    """What hindsight_api.extensions.loader._collect_config makes of an environment."""
    return {
        k[len(ENV_TENANT_PREFIX) :].lower(): v
        for k, v in env.items()
        if k.startswith(ENV_TENANT_PREFIX) and k != ENV_TENANT_EXTENSION
    }


def test_server_env_round_trips_through_the_loader() -> None:
    # GIVEN the environment built for a local server
    env = server_env(
        discovery_url="http://127.0.0.1:1/.well-known/openid-configuration",
        allowed_clients=("app", "cli"),
        tenant_claim="custom:tenant",
        operator_key=OPERATOR_KEY,
        agent_key=AGENT_KEY,
        agent_name="support",
        agent_tenant="acme",
        expiry_grace_s=600,
    )
    # WHEN Hindsight's loader hands it to the extension
    settings = IsolationSettings.from_config(_loader_view(env))
    # THEN every value arrives
    assert env[ENV_TENANT_EXTENSION] == TENANT_CLASS
    assert env[ENV_OPERATION_VALIDATOR_EXTENSION] == OPERATION_VALIDATOR_CLASS
    assert settings.verifier == {
        "discovery_url": "http://127.0.0.1:1/.well-known/openid-configuration",
        "allowed_clients": ("app", "cli"),
        "tenant_claim": "custom:tenant",
    }
    assert (settings.operator_key, settings.agent_key) == (OPERATOR_KEY, AGENT_KEY)
    assert (settings.agent_name, settings.agent_tenant, settings.expiry_grace_s) == ("support", "acme", 600.0)


def test_defaults() -> None:
    settings = IsolationSettings.from_config(ISSUER)
    assert settings.expiry_grace_s == DEFAULT_EXPIRY_GRACE_S
    assert settings.operator_key is None
    assert settings.agent_key is None
    assert "o" * 40 not in repr(IsolationSettings.from_config(ISSUER | {"operator_key": "o" * 40}))


def test_static_jwks_is_parsed() -> None:
    static = {"jwt_issuer": "https://i", "jwt_static_jwks": '{"keys": []}', "jwt_allowed_clients": "app"}
    settings = IsolationSettings.from_config(static)
    assert settings.verifier["static_jwks"] == {"keys": []}


def test_the_old_global_key_is_refused() -> None:
    with pytest.raises(ConfigError, match="HINDSIGHT_API_TENANT_API_KEY"):
        IsolationSettings.from_config({"jwt_issuer": "https://i", "api_key": "k" * 40})


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(ConfigError) as caught:
        IsolationSettings.from_config(
            {
                "jwt_allowd_clients": "typo",
                "operator_key": "short",
                "agent_key": "b" * 40,
                "expiry_grace_s": "999999",
                "jwt_leeway_s": "soon",
                "jwt_static_jwks": "[]",
            }
        )
    message = str(caught.value)
    for expected in (
        "unknown settings: HINDSIGHT_API_TENANT_JWT_ALLOWD_CLIENTS",
        "HINDSIGHT_API_TENANT_OPERATOR_KEY must be at least 32 characters",
        "needs HINDSIGHT_API_TENANT_AGENT_NAME",
        "EXPIRY_GRACE_S must be between 0 and 86400",
        "JWT_LEEWAY_S must be a number",
        "JWT_STATIC_JWKS must be a JWKS JSON object",
    ):
        assert expected in message


def test_something_must_be_able_to_authenticate() -> None:
    with pytest.raises(ConfigError, match="nothing could ever authenticate"):
        IsolationSettings.from_config({"expiry_grace_s": "60"})


def test_token_settings_need_an_issuer() -> None:
    with pytest.raises(ConfigError, match="token settings without an issuer"):
        IsolationSettings.from_config({"jwt_allowed_clients": "app", "operator_key": OPERATOR_KEY})


def test_iam_only_deployment_needs_no_issuer() -> None:
    # GIVEN an IAM runtime: no user tokens, an agent key and an operator key
    settings = IsolationSettings.from_config(
        {"agent_key": AGENT_KEY, "agent_name": "support", "operator_key": OPERATOR_KEY}
    )
    # THEN no verifier is configured (user tokens will be refused)
    assert settings.verifier == {}


def test_operator_and_agent_keys_must_differ() -> None:
    with pytest.raises(ConfigError, match="must differ"):
        IsolationSettings.from_config(
            ISSUER | {"operator_key": OPERATOR_KEY, "agent_key": OPERATOR_KEY, "agent_name": "a"}
        )


def test_memory_events_are_off_unless_a_sink_is_set() -> None:
    settings = IsolationSettings.from_config(ISSUER)
    assert (settings.events_file, settings.events_queue_url, settings.events_include_text) == (None, None, False)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"events_file": "/tmp/e.jsonl", "events_queue_url": "https://sqs/q.fifo"}, "not both"),
        ({"events_queue_url": "https://sqs.eu-west-1.amazonaws.com/1/q"}, "ending in .fifo"),
        ({"events_queue_url": "http://sqs/q.fifo"}, "https:// SQS FIFO"),
        ({"events_include_text": "true"}, "no events sink"),
    ],
)
def test_bad_memory_events_settings_are_refused_with_the_reason(extra: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        IsolationSettings.from_config(ISSUER | extra)


def test_fading_is_off_by_default() -> None:
    settings = IsolationSettings.from_config(ISSUER)
    assert (settings.fading, settings.fading_clock, settings.fading_clock_header) == (None, None, False)


def test_fading_settings_are_parsed() -> None:
    settings = IsolationSettings.from_config(
        ISSUER
        | {
            "fading": "true",
            "fading_half_life_days": '{"turn": 7, "fact": 365}',
            "fading_floor": "0.2",
            "fading_clock": "2023-08-17",
            "fading_clock_header": "true",
        }
    )
    assert settings.fading is not None
    assert settings.fading.half_life_days[MemoryKind.TURN] == 7
    assert settings.fading.half_life_days[MemoryKind.FACT] == 365
    assert settings.fading.half_life_days[MemoryKind.PREFERENCE] is None  # a default: never fades
    assert settings.fading.floor == 0.2
    assert settings.fading_clock == datetime(2023, 8, 17, tzinfo=UTC)
    assert settings.fading_clock_header


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"fading": "true", "fading_half_life_days": '{"note": 3}'}, "'note' is not a memory kind"),
        ({"fading": "true", "fading_half_life_days": '{"turn": 0}'}, "half-life of turn must be days above 0"),
        ({"fading": "true", "fading_half_life_days": "[1]"}, "JSON object of memory kind"),
        ({"fading": "true", "fading_floor": "1"}, "FADING_FLOOR"),
        ({"fading": "true", "fading_clock": "tomorrow"}, "not an ISO 8601 instant"),
        ({"fading_clock_header": "true"}, "FADING is off"),
        ({"fading_floor": "0.3"}, "FADING is off"),
    ],
)
def test_bad_fading_settings_are_refused_with_the_reason(extra: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        IsolationSettings.from_config(ISSUER | extra)


def test_the_missions_the_server_applies_round_trip_through_the_loader() -> None:
    missions = Missions({"support": Mission(retain_mission="Keep decisions.", retain_extraction_mode="verbose")})
    env = server_env(operator_key=OPERATOR_KEY, missions=missions)
    assert env[ENV_TENANT_PREFIX + "MISSIONS"] == missions.to_json()
    assert IsolationSettings.from_config(_loader_view(env)).missions == missions
    assert IsolationSettings.from_config(ISSUER).missions == Missions()  # none by default


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("[1]", "HINDSIGHT_API_TENANT_MISSIONS must be a JSON object of agent name -> mission"),
        ('{"support": {"retain_mision": "x"}}', r"HINDSIGHT_API_TENANT_MISSIONS\.support\.retain_mision is not"),
        ('{"support": {"retain_extraction_mode": "fast"}}', "retain_extraction_mode must be one of"),
    ],
)
def test_bad_missions_are_refused_with_the_reason(value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        IsolationSettings.from_config(ISSUER | {"missions": value})
