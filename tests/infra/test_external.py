"""``hindsight.mode=external`` (bring your own Hindsight): no -Data or -MemoryService stack; every client of Hindsight
reads the configured URL and the given secrets (grants on exactly those ARNs); the deploy-time isolation probe runs in
the VPC; bad settings are refused before synthesis with one clear line each."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from infra.config import ConfigError, load_config_from_cdk_json
from memory_adapter.constants import CA_BUNDLE_ENV
from tests.infra.conftest import Synth, resources, synthesize
from tests.infra.external_variant import (
    AGENT_KEY_ARN,
    EXTERNAL_COGNITO,
    EXTERNAL_IAM,
    OPERATOR_KEY_ARN,
    PEERED_CIDR,
    SECRETS_KEY_ARN,
)
from tests.unit.private_ca import make_private_ca

SECRET_READ = "secretsmanager:GetSecretValue"


@pytest.fixture(scope="module")
def iam_synth(tmp_path_factory: pytest.TempPathFactory) -> tuple[Synth, str]:
    ca = make_private_ca(tmp_path_factory.mktemp("ca"))
    synth = synthesize(
        tmp_path_factory.mktemp("cdk-external-iam"), {**EXTERNAL_IAM, "hindsight.ca_bundle": str(ca.ca_file)}
    )
    return synth, ca.ca_pem


@pytest.fixture(scope="module")
def cognito_synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synthesize(tmp_path_factory.mktemp("cdk-external-cognito"), EXTERNAL_COGNITO)


def _statements(template: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(policy logical id, statement) for every IAM policy of the template."""
    out = []
    for logical_id, policy in resources(template, "AWS::IAM::Policy").items():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            out.append((logical_id, statement))
    return out


def _actions(statement: dict[str, Any]) -> list[str]:
    actions = statement["Action"]
    return [actions] if isinstance(actions, str) else list(actions)


def _secret_reads(synth: Synth) -> dict[str, set[str]]:
    """Policy logical id -> the secret ARNs it may read, over every stack."""
    reads: dict[str, set[str]] = {}
    for name, template in synth.templates.items():
        for logical_id, statement in _statements(template):
            if SECRET_READ in _actions(statement):
                resource = statement["Resource"]
                arns = {resource} if isinstance(resource, str) else set(map(str, resource))
                reads.setdefault(f"{name}/{logical_id}", set()).update(arns)
    return reads


def _function_envs(synth: Synth) -> dict[str, dict[str, str]]:
    envs = {}
    for name, template in synth.templates.items():
        for logical_id, fn in resources(template, "AWS::Lambda::Function").items():
            env = fn["Properties"].get("Environment", {}).get("Variables", {})
            envs[f"{name}/{logical_id}"] = env
    return envs


def test_no_data_or_memory_service_stack_and_nothing_unacknowledged(
    iam_synth: tuple[Synth, str], cognito_synth: Synth
) -> None:
    for synth in (iam_synth[0], cognito_synth):
        names = sorted(n.rsplit("-", 1)[-1] for n in synth.templates)
        assert "Data" not in names
        assert "MemoryService" not in names
        assert "ExternalMemory" in names
        assert synth.nag_error is None, synth.nag_error
        for template in synth.templates.values():  # no database, no backup plan, no ECS, no load balancer
            types = {r["Type"] for r in template["Resources"].values()}
            assert not types & {
                "AWS::RDS::DBInstance",
                "AWS::RDS::DBCluster",
                "AWS::Backup::BackupPlan",
                "AWS::ECS::Cluster",
                "AWS::ElasticLoadBalancingV2::LoadBalancer",
            }


def test_secret_grants_name_exactly_the_given_arns(iam_synth: tuple[Synth, str]) -> None:
    synth, _ = iam_synth
    reads = _secret_reads(synth)
    granted = set().union(*reads.values())
    assert OPERATOR_KEY_ARN in granted
    assert AGENT_KEY_ARN in granted
    assert not {arn for arn in granted if arn.startswith("arn:aws:secretsmanager")} - {OPERATOR_KEY_ARN, AGENT_KEY_ARN}
    agent_reads = set().union(*[arns for key, arns in reads.items() if key.startswith(stack_name(synth, "-Agent"))])
    assert OPERATOR_KEY_ARN not in agent_reads  # the agent never holds the operator key
    assert AGENT_KEY_ARN in agent_reads
    operations_reads = [arns for key, arns in reads.items() if key.startswith(stack_name(synth, "-Operations"))]
    assert operations_reads
    assert all(arns == {OPERATOR_KEY_ARN} for arns in operations_reads)
    # decrypt on the customer's key only through Secrets Manager
    decrypts = [
        statement
        for template in synth.templates.values()
        for _, statement in _statements(template)
        if statement.get("Resource") == SECRETS_KEY_ARN
    ]
    assert decrypts
    for statement in decrypts:
        assert _actions(statement) == ["kms:Decrypt"]
        assert statement["Condition"] == {"StringEquals": {"kms:ViaService": "secretsmanager.us-east-1.amazonaws.com"}}


def stack_name(synth: Synth, suffix: str) -> str:
    (name,) = [n for n in synth.templates if n.endswith(suffix)]
    return name


def test_every_client_reads_the_external_url_and_the_private_ca(iam_synth: tuple[Synth, str]) -> None:
    synth, ca_pem = iam_synth
    url = EXTERNAL_IAM["hindsight.external_url"]
    clients = {key: env for key, env in _function_envs(synth).items() if "HINDSIGHT_API_URL" in env}
    # the replay function, the admin function, the expiry and the isolation probe (no gateway with IAM)
    assert len(clients) == 4, sorted(clients)
    for key, env in clients.items():
        assert env["HINDSIGHT_API_URL"] == url, key
        assert env[CA_BUNDLE_ENV] == ca_pem.strip() + "\n", key
    runtime = next(iter(resources(synth.template("-Agent"), "AWS::BedrockAgentCore::Runtime").values()))
    env = runtime["Properties"]["EnvironmentVariables"]
    assert env["HINDSIGHT_API_URL"] == url
    assert env["HINDSIGHT_API_KEY_SECRET_ARN"] == AGENT_KEY_ARN
    assert env[CA_BUNDLE_ENV] == ca_pem.strip() + "\n"


def test_clients_reach_the_endpoint_port_at_the_given_cidr(iam_synth: tuple[Synth, str]) -> None:
    synth, _ = iam_synth
    egress = [
        r["Properties"]
        for template in synth.templates.values()
        for r in template["Resources"].values()
        if r["Type"] == "AWS::EC2::SecurityGroupEgress"
        or (r["Type"] == "AWS::EC2::SecurityGroup" and r["Properties"].get("SecurityGroupEgress"))
    ]
    rules = []
    for props in egress:
        rules.extend(props.get("SecurityGroupEgress", [props]))
    to_hindsight = [r for r in rules if r.get("CidrIp") == PEERED_CIDR]
    assert to_hindsight
    assert all((r["FromPort"], r["ToPort"], r["IpProtocol"]) == (8443, 8443, "tcp") for r in to_hindsight)
    # the agent runtime, the replay function, the admin functions, the gateway-less IAM deployment's probe
    assert len(to_hindsight) >= 4


def test_the_probe_runs_in_the_vpc_with_the_given_settings(iam_synth: tuple[Synth, str], cognito_synth: Synth) -> None:
    synth, _ = iam_synth
    template = synth.template("-ExternalMemory")
    (resource,) = resources(template, "Custom::HindsightIsolationProbe").values()
    props = resource["Properties"]
    assert props["HINDSIGHT_API_URL"] == EXTERNAL_IAM["hindsight.external_url"]
    assert props["OPERATOR_KEY_SECRET_ARN"] == OPERATOR_KEY_ARN
    assert props["HINDSIGHT_API_KEY_SECRET_ARN"] == AGENT_KEY_ARN
    assert props["ON_LEAK"] == "fail"
    assert props["AGENT_NAME"] == "assistant"
    handlers = [f for f in resources(template, "AWS::Lambda::Function").values() if "VpcConfig" in f["Properties"]]
    assert len(handlers) == 1  # the probe inside the VPC; the provider framework's function outside it
    assert "IsolationProbeResult" in "".join(template["Outputs"])
    # the agent, the gateway and the operations deploy after the probe
    for suffix in ("-Agent", "-Operations"):
        stack = next(s for s in synth.stacks.all() if s.stack_name.endswith(suffix))
        assert synth.stacks.external in stack.dependencies
    (cognito_probe,) = resources(cognito_synth.template("-ExternalMemory"), "Custom::HindsightIsolationProbe").values()
    assert cognito_probe["Properties"]["ON_LEAK"] == "warn"
    assert "HINDSIGHT_API_KEY_SECRET_ARN" not in cognito_probe["Properties"]  # user tokens: no agent key


def test_operations_keep_export_forget_expiry_but_no_backup(iam_synth: tuple[Synth, str]) -> None:
    synth, _ = iam_synth
    operations = synth.stacks.operations
    assert operations.admin.backup_function is None
    assert operations.admin.backup_schedule is None
    assert operations.admin.expiry_schedule is not None
    rules = resources(synth.template("-Operations"), "AWS::Events::Rule")
    assert len(rules) == 1  # the expiry schedule
    alarms = resources(synth.template("-Operations"), "AWS::CloudWatch::Alarm")
    assert not [k for k in alarms if k.startswith(("MemoryAdminBackupFailing", "MemoryAdminBackupIncomplete"))]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"hindsight.external_url": None}, r"hindsight\.external_url is required"),
        ({"hindsight.external_url": "http://memory.corp.example.com"}, r"plain http: .*external_allow_http=true"),
        ({"hindsight.external_url": "ftp://memory.corp.example.com"}, r"must start with https://"),
        ({"hindsight.external_url": "https://memory.corp.example.com:99999"}, r"port that is not a number"),
        ({"hindsight.external_url": "https://localhost:8888"}, r"localhost is not reachable"),
        ({"hindsight.external_url": "https://169.254.169.254"}, r"not reachable from the isolated subnets"),
        ({"hindsight.external_url": "https://user:pw@memory.corp.example.com"}, r"no credentials, query or fragment"),
        ({"hindsight.external_url": "https://bad_host!"}, r"needs a host name"),
        ({"hindsight.external_operator_key_secret_arn": "hindsight/operator-key"}, r"complete Secrets Manager ARN"),
        (
            {"hindsight.external_agent_key_secret_arn": AGENT_KEY_ARN.replace("us-east-1", "eu-west-1")},
            r"agent_key_secret_arn is in eu-west-1, the deployment in us-east-1",
        ),
        ({"hindsight.external_secrets_key_arn": "alias/aws/secretsmanager"}, r"must be a KMS key ARN"),
        ({"hindsight.external_egress_cidrs": "0.0.0.0/0"}, r"at most /8"),
        ({"hindsight.external_egress_cidrs": "10.60.0.1/16"}, r"is not an IPv4 CIDR"),
        ({"hindsight.platform": "eks"}, r"hindsight\.platform=eks builds Hindsight"),
        (
            {"hindsight.certificate_arn": "arn:aws:acm:us-east-1:111122223333:certificate/x"},
            r"used only with .*managed",
        ),
        ({"hindsight.external_probe": "ignore"}, r"hindsight\.external_probe"),
        ({"events.enabled": "true"}, r"events\.enabled needs hindsight\.mode=managed"),
        ({"fading.enabled": "true"}, r"fading\.enabled needs hindsight\.mode=managed"),
        ({"hindsight.max_body_mib": "32"}, r"max_body_mib .* set HINDSIGHT_API_TENANT_MAX_BODY_MIB on your server"),
    ],
)
def test_bad_external_settings_are_refused_with_one_clear_line(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config_from_cdk_json({**EXTERNAL_IAM, **overrides})


def test_agent_key_is_refused_with_user_tokens_and_required_with_iam() -> None:
    with pytest.raises(ConfigError, match=r"external_agent_key_secret_arn is used only with auth\.mode=iam"):
        load_config_from_cdk_json({**EXTERNAL_COGNITO, "hindsight.external_agent_key_secret_arn": AGENT_KEY_ARN})
    with pytest.raises(ConfigError, match=r"external_agent_key_secret_arn is required"):
        load_config_from_cdk_json({**EXTERNAL_IAM, "hindsight.external_agent_key_secret_arn": None})


def test_plain_http_with_the_dev_flag_and_no_ca(tmp_path: Path) -> None:
    config = load_config_from_cdk_json(
        {**EXTERNAL_IAM, "hindsight.external_url": "http://10.60.1.5:8888", "hindsight.external_allow_http": "true"}
    )
    assert config.hindsight.external
    with pytest.raises(ConfigError, match=r"ca_bundle is the CA of an https server"):
        load_config_from_cdk_json(
            {
                **EXTERNAL_IAM,
                "hindsight.external_url": "http://10.60.1.5:8888",
                "hindsight.external_allow_http": "true",
                "hindsight.ca_bundle": str(make_private_ca(tmp_path).ca_file),
            }
        )


def test_managed_mode_refuses_external_settings() -> None:
    with pytest.raises(ConfigError, match=r"hindsight\.external_url.*used only with hindsight\.mode=external"):
        load_config_from_cdk_json({"hindsight.external_url": "https://memory.corp.example.com"})
