"""Configuration: defaults load, overrides coerce, every problem is reported at once."""

from __future__ import annotations

import re

import pytest

from infra.config import AuthMode, ConfigError, VpcMode, load_config_from_cdk_json
from infra.config.__main__ import main
from tests.infra.config_helpers import load_config_from_cdk_json_with_section_key
from tests.infra.conftest import IMPORTED_NETWORK


def _load(**overrides: str):
    return load_config_from_cdk_json(overrides)


def _names(errors: list[str]) -> set[str]:
    """The setting each problem names first (``auth.mode`` in ``auth.mode must be one of ...``)."""
    return {m.group(0) for e in errors if (m := re.search(r"[a-z_]+\.[a-z_/]+", e))}


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
            "network.az_ids": "use1-az4,use1-az1",
            "tags": '{"team": "ai"}',
        }
    )
    assert cfg.hindsight.api_max_count == 5
    assert cfg.database.multi_az is True
    assert cfg.network.az_ids == ("use1-az4", "use1-az1")
    assert cfg.tags == {"team": "ai"}


def test_every_problem_is_reported_in_one_error() -> None:
    with pytest.raises(ConfigError) as err:
        _load(**{"auth.mode": "jwt", "network.mode": "import", "hindsight.cpu": "300", "database.multi_az": "maybe"})
    message = str(err.value)
    assert "database.multi_az must be true or false, got 'maybe'" in message
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
    assert any("auth.allowed_clients and/or auth.allowed_audience" in e for e in errors)
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


def test_az_ids_outside_agentcores_supported_zones_are_refused_before_synthesis() -> None:
    # GIVEN well-formed AZ ids that AgentCore does not support in us-east-1 (the stack would roll back)
    with pytest.raises(ConfigError) as err:
        _load(**{"network.az_ids": "use1-az3,use1-az9"})
    # THEN both are named, with the supported list and its source
    errors = err.value.errors
    assert [e for e in errors if "'use1-az3' is not an AgentCore-supported AZ id" in e]
    assert [e for e in errors if "'use1-az9' is not an AgentCore-supported AZ id" in e]
    assert "use1-az1, use1-az2, use1-az4" in errors[0]
    assert "agentcore-vpc.html" in errors[0]


def test_imported_subnets_name_their_az_ids_and_are_checked_too() -> None:
    with pytest.raises(ConfigError, match="'use1-az6' is not an AgentCore-supported"):
        _load(**IMPORTED_NETWORK, **{"network.az_ids": "use1-az1,use1-az6"})
    with pytest.raises(ConfigError, match="the AZ id of each subnet"):
        _load(**IMPORTED_NETWORK, **{"network.az_ids": "use1-az1"})
    assert _load(**IMPORTED_NETWORK).network.az_ids == ("use1-az1", "use1-az2")


def test_a_region_missing_from_the_table_needs_an_explicit_override() -> None:
    with pytest.raises(ConfigError, match=r"set network\.supported_az_ids"):
        _load(region="eu-west-1", **{"network.az_ids": "euw1-az1,euw1-az2"})
    cfg = _load(
        region="eu-west-1",
        **{"network.az_ids": "euw1-az1,euw1-az2", "network.supported_az_ids": "euw1-az1,euw1-az2,euw1-az3"},
    )
    assert cfg.network.az_ids == ("euw1-az1", "euw1-az2")
    # The override replaces the table's entry for a listed region as well.
    with pytest.raises(ConfigError, match="'use1-az1' is not an AgentCore-supported"):
        _load(**{"network.supported_az_ids": "use1-az2,use1-az4"})


def test_a_bad_enum_value_does_not_hide_the_other_problems() -> None:
    # GIVEN an unknown engine, unsupported zones, a bad Fargate size and a bad database setting in one run
    with pytest.raises(ConfigError) as err:
        _load(
            **{
                "database.engine": "mysql",
                "database.rotation_days": "0",
                "network.az_ids": "use1-az3,use1-az9",
                "hindsight.cpu": "300",
                "auth.mode": "saml",
            }
        )
    # THEN every problem is listed at once, including the other settings of the sections holding a bad enum
    assert {"database.engine", "database.rotation_days", "network.az_ids", "hindsight.cpu/memory_mib", "auth.mode"} <= (
        _names(err.value.errors)
    )


def test_prod_refuses_to_synthesize_without_tls_and_names_the_settings() -> None:
    with pytest.raises(ConfigError) as err:
        _load(env="prod")
    (message,) = err.value.errors
    assert "hindsight.certificate_arn, hindsight.domain_name" in message
    assert "hindsight.require_tls" in message
    cfg = _load(
        env="prod",
        **{
            "hindsight.certificate_arn": "arn:aws:acm:us-east-1:111122223333:certificate/abcd-1234",
            "hindsight.domain_name": "memory.internal.example.com",
        },
    )
    assert cfg.hindsight.require_tls
    assert not _load().hindsight.require_tls  # dev may stay HTTP (docs/deploying.md says so)
    assert _load(env="prod", **{"hindsight.require_tls": "false"}).hindsight.certificate_arn is None


def test_endpoints_can_be_skipped_one_by_one_in_an_imported_vpc() -> None:
    cfg = _load(**IMPORTED_NETWORK, **{"network.skip_endpoints": "Ssm,XRay"})
    assert cfg.network.skip_endpoints == ("Ssm", "XRay")
    with pytest.raises(ConfigError, match="'Nope' is not an endpoint"):
        _load(**IMPORTED_NETWORK, **{"network.skip_endpoints": "Nope"})
    with pytest.raises(ConfigError, match="applies to an imported VPC only"):
        _load(**{"network.skip_endpoints": "Ssm"})
    # Without the S3 gateway endpoint no route tables are needed.
    no_rt = {k: v for k, v in IMPORTED_NETWORK.items() if k != "network.route_table_ids"}
    assert _load(**no_rt, **{"network.skip_endpoints": "S3"}).network.route_table_ids == ()


def test_alarm_email_and_image_digest_are_checked() -> None:
    with pytest.raises(ConfigError) as err:
        _load(**{"alarms.email": "not-an-address", "hindsight.image_digest": "latest"})
    assert _names(err.value.errors) == {"alarms.email", "hindsight.image_digest"}
    cfg = _load(**{"alarms.email": "oncall@example.com", "hindsight.image_digest": "sha256:" + "a" * 64})
    assert cfg.alarms.email == "oncall@example.com"


JWT = {"auth.mode": "jwt", "auth.allowed_audience": "api://memory-agent"}


def test_jwt_settings_are_checked_by_the_identity_contract_with_the_deployments_names() -> None:
    # GIVEN a discovery URL that is no discovery URL, and no accepted client or audience
    with pytest.raises(ConfigError) as err:
        _load(**{"auth.mode": "jwt", "auth.discovery_url": "https://login.example.com/tenant"})
    # THEN the contract's rules report it, naming the settings as cdk.json spells them
    assert "auth.discovery_url must end with /.well-known/openid-configuration" in err.value.errors
    assert [e for e in err.value.errors if "auth.allowed_clients and/or auth.allowed_audience" in e]
    ok = _load(**JWT, **{"auth.discovery_url": "https://login.example.com/t/.well-known/openid-configuration"})
    assert ok.auth.allowed_audience == ("api://memory-agent",)


def test_jwt_mode_needs_a_discovery_url_and_still_lists_the_other_problems() -> None:
    with pytest.raises(ConfigError) as err:
        _load(**{"auth.mode": "jwt"})
    (required,) = [e for e in err.value.errors if e.startswith("auth.discovery_url")]
    assert "required with auth.mode=jwt" in required
    assert "auth.issuer" not in required  # the deployment has no such setting
    assert [e for e in err.value.errors if "auth.allowed_clients and/or auth.allowed_audience" in e]


def test_the_deployment_adds_its_stricter_rules_to_the_contracts() -> None:
    # GIVEN an http issuer (the contract accepts it for local issuers) and a claim name CloudFormation cannot carry
    with pytest.raises(ConfigError) as err:
        _load(
            **JWT,
            **{
                "auth.discovery_url": "http://login.example.com/.well-known/openid-configuration",
                "auth.user_claim": "a b",
            },
        )
    assert _names(err.value.errors) == {"auth.discovery_url", "auth.user_claim"}
    assert any("https" in e for e in err.value.errors)


def test_skip_endpoints_names_exactly_the_endpoints_the_network_creates() -> None:
    from infra.config import ENDPOINT_NAMES
    from infra.constructs.network import INTERFACE_ENDPOINTS, ON_DEMAND_ENDPOINTS, UNAUTHENTICATED_ENDPOINTS

    assert set(ENDPOINT_NAMES) == {"S3", *INTERFACE_ENDPOINTS, *UNAUTHENTICATED_ENDPOINTS, *ON_DEMAND_ENDPOINTS}


def test_the_gateway_follows_the_auth_mode_unless_told_otherwise() -> None:
    # GIVEN the default (gateway.enabled null): a gateway with user tokens, none with iam
    assert _load().gateway_enabled
    assert _load(
        **{
            "auth.mode": "jwt",
            "auth.discovery_url": "https://idp.example.com/.well-known/openid-configuration",
            "auth.allowed_audience": "api",
        }
    ).gateway_enabled
    assert not _load(**{"auth.mode": "iam"}).gateway_enabled
    assert not _load(**{"gateway.enabled": "false"}).gateway_enabled
    # WHEN it is asked for where it cannot work THEN each contradiction is named, with what to do
    with pytest.raises(ConfigError) as err:
        _load(**{"auth.mode": "iam", "gateway.enabled": "true", "agent.tools_via_gateway": "true"})
    errors = err.value.errors
    assert any(e.startswith("gateway.enabled=true: the gateway's tools act for the user") for e in errors)
    assert any(e.startswith("agent.tools_via_gateway needs the memory gateway") for e in errors)
    with pytest.raises(ConfigError, match=r"agent\.tools_via_gateway needs the memory gateway"):
        _load(**{"gateway.enabled": "false", "agent.tools_via_gateway": "true"})
    with pytest.raises(ConfigError, match=r"agent\.tools_via_gateway applies to the reference agent"):
        _load(**{"agent.project": "examples/strands_agent", "agent.tools_via_gateway": "true"})


@pytest.mark.parametrize(
    ("setting", "value", "message"),
    [
        ("gateway.name", "-memory", "gateway.name must be at most 48 lower-case letters"),
        ("gateway.name", "m" * 49, "gateway.name must be at most 48 lower-case letters"),
        ("gateway.target_name", "memory_tools", "gateway.target_name must be letters, digits and single hyphens"),
        ("gateway.target_name", "t" * 60, "clients see 'tttt"),
    ],
)
def test_gateway_names_are_checked_before_synthesis(setting: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        _load(**{setting: value})


def test_the_retain_queue_settings_are_checked_against_lambdas_limits() -> None:
    assert _load().retain_queue.replay_timeout_seconds == 60
    with pytest.raises(ConfigError) as err:
        _load(
            **{
                "retain_queue.replay_timeout_seconds": "1000",
                "retain_queue.delivery_timeout_seconds": "1000",
                "retain_queue.max_concurrency": "1",
                "retain_queue.batch_size": "0",
            }
        )
    errors = err.value.errors
    for name in ("replay_timeout_seconds", "max_concurrency", "batch_size"):
        assert any(e.startswith(f"retain_queue.{name} must be between") for e in errors), name
    assert "retain_queue.delivery_timeout_seconds must be less than retain_queue.replay_timeout_seconds" in errors


def test_retention_days_per_kind_overlay_the_memory_models_defaults() -> None:
    from memory_adapter.kinds import DEFAULT_RETENTION_DAYS, MemoryKind, RetentionRules

    assert _load().retention.rules == RetentionRules()  # cdk.json's "retention": {} keeps every default
    rules = _load(**{"retention.plan": "14", "retention.turn": "null", "retention.fact": "30"}).retention.rules
    assert rules.days_for(MemoryKind.PLAN) == 14
    assert rules.days_for(MemoryKind.TURN) is None
    assert rules.days_for(MemoryKind.FACT) == 30
    assert rules.days_for(MemoryKind.PROBLEM) == DEFAULT_RETENTION_DAYS[MemoryKind.PROBLEM]


def test_bad_retention_names_the_setting_and_its_value_with_the_other_problems() -> None:
    with pytest.raises(ConfigError) as err:
        _load(**{"retention.plan": "0", "retention.problem": "soon", "operations.expiry_batch_size": "0"})
    errors = err.value.errors
    assert "retention.plan must be whole days from 1 to 36500, or null to keep, got 0" in errors
    assert "retention.problem must be whole days from 1 to 36500, or null to keep, got 'soon'" in errors
    assert "operations.expiry_batch_size must be between 1 and 10000, got 0" in errors
    with pytest.raises(ConfigError) as err:
        load_config_from_cdk_json_with_section_key("retention", "plans", "7")
    (error,) = err.value.errors
    assert error.startswith("retention.plans is not a memory kind (known: preference, decision, fact, plan,")


def test_operations_schedules_and_lifecycles_are_checked() -> None:
    cfg = _load(**{"operations.expiry_schedule": "rate(6 hours)", "operations.expiry_dry_run": "true"})
    assert cfg.operations.expiry_schedule == "rate(6 hours)"
    assert cfg.operations.expiry_dry_run is True
    with pytest.raises(ConfigError) as err:
        _load(
            **{
                "operations.expiry_schedule": "every hour",
                "operations.backup_schedule": "cron(0 3 * *)",
                "operations.logical_backup_retention_days": "0",
                "operations.export_retention_days": "5000",
                "operations.audit_log_retention_days": "42",
                "operations.expiry_dry_run": "maybe",
            }
        )
    errors = err.value.errors
    for name in ("expiry_schedule", "backup_schedule"):
        assert (
            f"operations.{name} must be an EventBridge schedule: rate(1 hour), rate(6 hours) or cron(0 3 * * ? *)"
            in (errors)
        )
    assert "operations.logical_backup_retention_days must be between 1 and 3650, got 0" in errors
    assert "operations.export_retention_days must be between 1 and 3650, got 5000" in errors
    assert _names(errors) >= {"operations.audit_log_retention_days", "operations.expiry_dry_run"}


def test_the_database_backup_plan_and_the_re_embedding_settings_are_checked() -> None:
    cfg = _load()
    assert (cfg.database.backup_plan_schedule, cfg.database.backup_plan_retention_days) == ("cron(0 5 * * ? *)", 35)
    assert _load(env="prod", **{"hindsight.require_tls": "false"}).database.backup_plan_retention_days == 90
    assert (cfg.hindsight.database_schema, cfg.hindsight.maintenance_embeddings_model) == ("public", None)
    with pytest.raises(ConfigError) as err:
        _load(
            **{
                "database.backup_plan_schedule": "rate(1 day)",
                "database.backup_plan_retention_days": "0",
                "hindsight.database_schema": "Emb-V2",
                "hindsight.maintenance_embeddings_model": "cohere.embed-english-v3",
            }
        )
    errors = err.value.errors
    assert "database.backup_plan_schedule must be an AWS Backup cron expression like cron(0 5 * * ? *) (UTC)" in errors
    assert "database.backup_plan_retention_days must be between 1 and 36500, got 0" in errors
    assert _names(errors) >= {"hindsight.database_schema", "hindsight.maintenance_embeddings_model"}


def test_each_agent_has_its_mission_and_a_misnamed_or_bad_one_is_reported() -> None:
    from memory_adapter.missions import MISSION_KEYS

    mission = _load().missions.for_agent("assistant")  # cdk.json's reference agent keeps what a user will want
    assert mission is not None
    assert "small talk" in (mission.retain_mission or "")
    assert set(mission.updates()) <= set(MISSION_KEYS)
    with pytest.raises(ConfigError) as err:
        _load(**{"agent.name": "helpdesk"})
    assert err.value.errors == [
        "missions.assistant names no agent of this deployment (agent.name is 'helpdesk'): fix its spelling"
    ]
    with pytest.raises(ConfigError) as err:
        load_config_from_cdk_json_with_section_key("missions", "assistant", {"retain_extraction_mode": "fast"})
    assert err.value.errors == [
        "missions.assistant.retain_extraction_mode must be one of concise, verbose, verbatim, chunks, got 'fast'"
    ]


def test_the_agent_section_gives_the_adapter_and_the_recalling_clients_their_settings() -> None:
    from memory_adapter.config import HindsightAgentCoreConfig
    from memory_adapter.settings_fields import RecallClientSettings

    # GIVEN every recall setting of the agent section
    agent = load_config_from_cdk_json(
        {
            "agent.recall_budget": "high",
            "agent.recall_max_tokens": "800",
            "agent.recall_candidate_tokens": "6000",
            "agent.recall_timeout_seconds": "1.5",
        }
    ).agent
    # THEN the adapter gets each under its own name, and the tools' and operator's clients the ones they share
    memory = {"recall_budget": "high", "recall_max_tokens": 800, "recall_candidate_tokens": 6000}
    assert agent.memory_settings == {**memory, "recall_timeout": 1.5}
    assert agent.recall_settings == memory
    assert HindsightAgentCoreConfig(hindsight_api_url="http://h", **agent.memory_settings).recall_timeout == 1.5
    assert RecallClientSettings(hindsight_api_url="http://h", **agent.recall_settings).recall_max_tokens == 800
