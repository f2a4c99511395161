"""Names and ARNs as the services form them (``tests/infra/name_check.py``, run on every synthesis of the suite)."""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from typing import Any

import pytest

from infra.config import ConfigError, load_config_from_cdk_json
from infra.constructs.memory_gateway import default_gateway_name
from tests.infra import name_check
from tests.infra.conftest import Synth, resources
from tests.infra.intrinsics import ACCOUNT, pseudo_parameters, resolve

GATEWAY_VARIANTS = ("default", "jwt-import")


def _gateway_template(name: str, source_arn: Any) -> dict[str, dict[str, Any]]:
    """A gateway and its role, written as the stack writes them."""
    return {
        "S-Gateway": {
            "Resources": {
                "Gateway": {"Type": "AWS::BedrockAgentCore::Gateway", "Properties": {"Name": name}},
                "Role": {
                    "Type": "AWS::IAM::Role",
                    "Properties": {
                        "AssumeRolePolicyDocument": {
                            "Statement": [
                                {
                                    "Effect": "Allow",
                                    "Principal": {"Service": "bedrock-agentcore.amazonaws.com"},
                                    "Action": "sts:AssumeRole",
                                    "Condition": {"ArnLike": {"aws:SourceArn": source_arn}},
                                }
                            ]
                        }
                    },
                },
            }
        }
    }


def _arn(resource: str) -> dict[str, Any]:
    return {"Fn::Join": ["", ["arn:aws:bedrock-agentcore:us-east-1:", {"Ref": "AWS::AccountId"}, f":{resource}"]]}


def test_a_mixed_case_gateway_name_and_the_condition_built_from_it_are_found() -> None:
    # GIVEN the gateway as the L2 named it by default (upper case is valid for CreateGateway's GatewayName)
    name = "HindsightMemorydevGatewayMemoryGatewayB4A54860"
    # WHEN the check reads it THEN the id AgentCore forms and the trust condition are both refused
    findings = name_check.check(_gateway_template(name, _arn(f"gateway/{name}*")), region="us-east-1").findings
    assert len(findings) == 2
    assert "Name" in findings[0]
    assert "GatewayId's pattern" in findings[0]
    assert "ArnLike aws:SourceArn" in findings[1]
    assert "can never match" in findings[1]
    # AND the same in lower case passes
    lower = name.lower()
    assert name_check.check(_gateway_template(lower, _arn(f"gateway/{lower}-*")), region="us-east-1").findings == []


@pytest.mark.parametrize(
    ("resource_type", "prop", "value", "problem"),
    [
        ("AWS::S3::Bucket", "BucketName", "Admin-Bucket", "documented rule"),
        ("AWS::Logs::DeliverySource", "Name", "x" * 61, "maximum 60"),
        ("AWS::BedrockAgentCore::Runtime", "AgentRuntimeName", "memory-agent", "pattern"),
        ("AWS::Backup::BackupVault", "BackupVaultName", "vault/1", "pattern"),
        ("AWS::SQS::Queue", "QueueName", "q" * 81, "documented rule"),
    ],
)
def test_names_a_service_refuses_are_found(resource_type: str, prop: str, value: str, problem: str) -> None:
    template = {"S": {"Resources": {"R": {"Type": resource_type, "Properties": {prop: value}}}}}
    findings = name_check.check(template, region="us-east-1").findings
    assert findings
    assert all(f.startswith(f"S/R {prop} {value!r}: ") for f in findings)
    assert any(problem in f for f in findings)


def test_names_built_from_the_stack_id_are_resolved_and_checked() -> None:
    # GIVEN a bucket name built as the admin bucket's is (account, region, the stack id's first UUID part)
    stack_uuid_part = {
        "Fn::Select": [0, {"Fn::Split": ["-", {"Fn::Select": [2, {"Fn::Split": ["/", {"Ref": "AWS::StackId"}]}]}]}]
    }
    name = {"Fn::Join": ["", ["Admin-", {"Ref": "AWS::AccountId"}, "-", stack_uuid_part]]}
    template = {"S": {"Resources": {"B": {"Type": "AWS::S3::Bucket", "Properties": {"BucketName": name}}}}}
    report = name_check.check(template, region="us-east-1")
    # THEN the check sees the name the account would (and refuses its upper case)
    assert report.names == [("S/B", f"Admin-{ACCOUNT}-51af3dc0")]
    assert len(report.findings) == 1


@pytest.mark.parametrize("variant", ["default", "jwt-import", "iam-aurora"])
def test_every_variant_names_its_resources_as_the_services_accept(synths: dict[str, Synth], variant: str) -> None:
    synth = synths[variant]
    report = name_check.check(synth.templates, region=synth.config.region)
    assert report.findings == []
    # the check saw the names that matter (it cannot pass by skipping them)
    checked = {where.split("/")[1] for where, _ in report.names}
    assert any(c.startswith("AgentRuntime") for c in checked)
    assert any(c.startswith("AdminBucket") for c in checked)
    assert any(where.split("/")[1].startswith("AgentRuntimeExecutionRole") for where, _ in report.conditions)
    if variant in GATEWAY_VARIANTS:
        assert any(c.startswith("MemoryGateway") for c in checked)


@pytest.mark.parametrize("variant", GATEWAY_VARIANTS)
def test_the_gateway_role_trusts_exactly_the_arn_agentcore_forms_for_its_gateway(
    synths: dict[str, Synth], variant: str
) -> None:
    synth = synths[variant]
    stack = next(n for n in synth.templates if n.endswith("-Gateway"))
    t = synth.templates[stack]
    pseudo = pseudo_parameters(stack, synth.config.region)
    (gateway,) = resources(t, "AWS::BedrockAgentCore::Gateway").values()
    name = gateway["Properties"]["Name"]
    assert name == (synth.config.gateway.name or default_gateway_name(stack))
    (role,) = [r for lid, r in resources(t, "AWS::IAM::Role").items() if lid.startswith("MemoryGatewayServiceRole")]
    (statement,) = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert statement["Principal"] == {"Service": "bedrock-agentcore.amazonaws.com"}
    assert statement["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    condition = resolve(statement["Condition"]["ArnLike"]["aws:SourceArn"], pseudo)
    # GIVEN the ARN AgentCore forms for this gateway: its name and ten lower-case characters (the model's pattern)
    arn = f"arn:aws:bedrock-agentcore:{synth.config.region}:{ACCOUNT}:gateway/{name}-x7k2m9q4w1"
    assert re.fullmatch(name_check.shape_pattern("bedrock-agentcore-control", "GatewayArn"), arn)
    # THEN the trust condition matches it (ArnLike: case-sensitive, * and ? wildcards) ...
    assert fnmatchcase(arn, condition)
    # ... and not the ARN of a gateway whose name merely starts with this one's, nor another account's
    assert not fnmatchcase(arn.replace(f"gateway/{name}-", f"gateway/{name}-2-"), condition)
    assert not fnmatchcase(arn.replace(ACCOUNT, "444455556666"), condition)


def test_a_gateway_name_with_upper_case_is_refused_before_synthesis() -> None:
    with pytest.raises(ConfigError, match=re.escape("gateway.name must be at most 48 lower-case letters")):
        load_config_from_cdk_json({"gateway.name": "MemoryTools"})
    assert load_config_from_cdk_json({"gateway.name": "memory-tools"}).gateway.name == "memory-tools"
