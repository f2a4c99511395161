"""JwtSettings: one definition read by every component under its own names, with the same rules and messages."""

from __future__ import annotations

import pytest

from hindsight_isolation.settings import JWT_NAMING, IsolationSettings
from memory_adapter.identity import IdentityConfigError, JwtSettings, jwt_settings_problems
from memory_adapter.identity.settings import ENV_NAMING as JWT_ENV
from memory_adapter.settings_reader import Naming

DISCOVERY = "https://idp.example/pool/.well-known/openid-configuration"
INFRA = Naming(seconds="_seconds", shown_prefix="auth.")


def test_the_agent_the_extension_and_the_stack_read_the_same_settings() -> None:
    # GIVEN one configuration spelled three ways
    agent = {"JWT_DISCOVERY_URL": DISCOVERY, "JWT_ALLOWED_CLIENTS": "app,cli", "JWT_LEEWAY_SECONDS": "10"}
    extension = {"jwt_discovery_url": DISCOVERY, "jwt_allowed_clients": "app,cli", "jwt_leeway_s": "10"}
    stack = {"discovery_url": DISCOVERY, "allowed_clients": ["app", "cli"], "leeway_seconds": 10}
    # THEN each reads the same settings
    expected = JwtSettings(discovery_url=DISCOVERY, allowed_clients=("app", "cli"), leeway_s=10.0)
    assert JwtSettings.from_mapping(agent, JWT_ENV) == expected
    assert JwtSettings.from_mapping(extension, JWT_NAMING) == expected
    assert JwtSettings.from_mapping(stack, INFRA) == expected
    assert IsolationSettings.from_config(extension).jwt == expected


def test_the_same_problems_named_per_component() -> None:
    bad = {"algorithms": "HS256", "leeway_s": "900"}
    agent = jwt_settings_problems({JWT_ENV.key(k): v for k, v in bad.items()}, JWT_ENV)
    stack = jwt_settings_problems({INFRA.key(k): v for k, v in bad.items()}, INFRA)
    assert [p.replace("JWT_", "").replace("auth.", "").lower() for p in agent] == [
        p.replace("auth.", "").lower() for p in stack
    ]
    assert any(p.startswith("auth.discovery_url is required") for p in stack)
    assert any(p.startswith("auth.leeway_seconds must be between 0 and 300") for p in stack)
    assert any("JWT_ALGORITHMS may list asymmetric algorithms only" in p for p in agent)


def test_from_mapping_raises_with_every_problem() -> None:
    with pytest.raises(IdentityConfigError) as info:
        JwtSettings.from_mapping({"jwt_token_use": "refresh", "jwt_user_claim": "  "}, JWT_NAMING)
    assert len(info.value.problems) == 3  # issuer source, client/audience, token_use (a blank claim means unset)
    assert "HINDSIGHT_API_TENANT_JWT_TOKEN_USE must be one of: access, id; got 'refresh'" in str(info.value)


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ({}, "discovery_url is required"),
        ({"issuer": "https://i"}, "discovery_url is required"),
        ({"discovery_url": DISCOVERY, "issuer": "https://i"}, "issuer is used only with"),
        ({"jwks_url": "https://i/jwks"}, "issuer (or discovery_url, naming the issuer) is required with jwks_url"),
        ({"issuer": "i", "jwks_url": "https://i/j", "jwks_parameter": "/p"}, "give one key source"),
        ({"discovery_url": "https://i/keys"}, "must end with /.well-known/openid-configuration"),
        ({"issuer": "i", "jwks_url": "ftp://i/j"}, "jwks_url must be an http(s) URL"),
        ({"issuer": "i", "static_jwks": {"no": "keys"}}, "static_jwks must be a JWKS JSON object with 'keys'"),
    ],
)
def test_key_source_rules(given: dict[str, object], problem: str) -> None:
    problems = JwtSettings(allowed_clients=("app",), **given).problems()  # type: ignore[arg-type]
    assert any(problem in p for p in problems), problems


@pytest.mark.parametrize(
    ("given", "issuer"),
    [
        ({"discovery_url": DISCOVERY}, None),  # learnt from the discovery document
        ({"discovery_url": DISCOVERY, "jwks_parameter": "/p"}, "https://idp.example/pool"),
        ({"issuer": "https://i", "static_jwks": {"keys": []}}, "https://i"),
    ],
)
def test_usable_key_sources_and_their_issuer(given: dict[str, object], issuer: str | None) -> None:
    settings = JwtSettings(allowed_clients=("app",), **given)  # type: ignore[arg-type]
    assert settings.problems() == []
    assert settings.expected_issuer == issuer
