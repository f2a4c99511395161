"""Configuration: defaults load, overrides coerce, every problem is reported at once."""

from __future__ import annotations

import pytest

from infra.config import AuthMode, ConfigError, VpcMode, _DictContext, context_from_cdk_json, load_config, main


def _load(**overrides: str):
    return load_config(_DictContext(context_from_cdk_json(overrides)))


def test_defaults_are_a_private_cognito_deployment() -> None:
    cfg = _load()
    assert cfg.network.mode is VpcMode.CREATE
    assert cfg.network.create_endpoints
    assert cfg.auth.mode is AuthMode.COGNITO
    assert cfg.hindsight.image_tag == "1.1.0-slim"
    assert cfg.hindsight.image_source.value == "mirror"
    assert cfg.removal.value == "retain"


def test_command_line_strings_are_coerced() -> None:
    cfg = _load(
        **{
            "hindsight.api_max_count": "5",
            "database.multi_az": "true",
            "network.az_ids": "use1-az4,use1-az6",
            "tags": '{"team": "ai"}',
        }
    )
    assert cfg.hindsight.api_max_count == 5
    assert cfg.database.multi_az is True
    assert cfg.network.az_ids == ("use1-az4", "use1-az6")
    assert cfg.tags == {"team": "ai"}


def test_every_problem_is_reported_in_one_error() -> None:
    with pytest.raises(ConfigError) as err:
        _load(**{"auth.mode": "jwt", "network.mode": "import", "hindsight.cpu": "300", "database.multi_az": "maybe"})
    message = str(err.value)
    assert "database.multi_az: expected true or false" in message
    assert "hindsight.cpu" not in message or "Fargate" in message


def test_cross_field_rules() -> None:
    with pytest.raises(ConfigError) as err:
        _load(
            **{
                "auth.mode": "jwt",
                "network.mode": "import",
                "hindsight.memory_mib": "3000",
                "hindsight.certificate_arn": "arn:aws:acm:us-east-1:111122223333:certificate/x",
            }
        )
    errors = err.value.errors
    assert any(e.startswith("auth.discovery_url") for e in errors)
    assert any(e.startswith("auth.allowed_clients") for e in errors)
    assert any(e.startswith("network.vpc_id") for e in errors)
    assert any(e.startswith("network.subnet_ids") for e in errors)
    assert any(e.startswith("hindsight.cpu/memory_mib") for e in errors)
    assert any(e.startswith("hindsight.domain_name") for e in errors)


def test_unknown_settings_and_envs_are_refused() -> None:
    with pytest.raises(ConfigError, match="env 'staging' is not defined"):
        _load(env="staging")
    with pytest.raises(ConfigError, match=r"auth\.mode"):
        _load(**{"auth.mode": "saml"})


def test_az_ids_must_be_ids_not_names() -> None:
    with pytest.raises(ConfigError, match="not an AZ id"):
        _load(**{"network.az_ids": "us-east-1a,us-east-1b"})


def test_cli_checks_offline(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-c", "auth.mode=iam"]) == 0
    assert '"mode": "iam"' in capsys.readouterr().out
    assert main(["-c", "auth.mode=nope"]) == 1
    assert main(["bogus"]) == 2
