"""Names and ARNs: every named resource meets its service's own constraints, and every policy condition built from a
name can match the ARN the service will form.

CloudFormation accepts names its services refuse, and a service may accept a name yet form its id and ARN from it
differently (AgentCore gateways accept upper case; their ids and ARNs are lower case only). Neither cdk-nag nor
cfn-lint sees this; botocore's service models state it:

- a name (literal, or built from pseudo parameters and the stack id) is checked against the input member of the
  operation that creates the resource (``pattern``, ``min``, ``max``), plus the few rules a service documents but
  its model does not carry (:data:`DOCUMENTED_RULES`);
- where the service forms an id as ``<name>-<10 characters>`` (:data:`NAME_RULES`' ``id_shape``), that id must
  match the model's id pattern;
- an ``ArnLike``/``ArnEquals``/``StringLike``/``StringEquals`` condition value that is an ARN of a service in
  :data:`CONDITION_ARNS` must match at least one ARN the model's pattern allows, a wildcard standing for what the
  service appends to the name (the id suffix).

Names that refer to another resource (``Ref``, ``Fn::GetAtt``) are that resource's own, formed by its service, and
are not checked.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Final

import botocore.session

from tests.infra.intrinsics import UNRESOLVED, pseudo_parameters, resolve

#: What every service appends to a name to form an id (``<name>-<suffix>``): ten lower-case letters and digits.
ID_SUFFIX: Final = "a1b2c3d4e5"


@dataclass(frozen=True)
class NameRule:
    """Where a template name goes: the creating operation's input member, and the id shape formed from it."""

    service: str
    operation: str
    member: str
    id_shape: str | None = None


#: (resource type, property) -> the botocore input member its value is sent as.
NAME_RULES: Final[dict[tuple[str, str], NameRule]] = {
    ("AWS::BedrockAgentCore::Gateway", "Name"): NameRule(
        "bedrock-agentcore-control", "CreateGateway", "name", id_shape="GatewayId"
    ),
    ("AWS::BedrockAgentCore::GatewayTarget", "Name"): NameRule(
        "bedrock-agentcore-control", "CreateGatewayTarget", "name"
    ),
    ("AWS::BedrockAgentCore::Runtime", "AgentRuntimeName"): NameRule(
        "bedrock-agentcore-control", "CreateAgentRuntime", "agentRuntimeName", id_shape="AgentRuntimeId"
    ),
    ("AWS::BedrockAgentCore::RuntimeEndpoint", "Name"): NameRule(
        "bedrock-agentcore-control", "CreateAgentRuntimeEndpoint", "name"
    ),
    ("AWS::Logs::LogGroup", "LogGroupName"): NameRule("logs", "CreateLogGroup", "logGroupName"),
    ("Custom::ServiceLogGroup", "LogGroupName"): NameRule("logs", "CreateLogGroup", "logGroupName"),
    ("AWS::Logs::DeliverySource", "Name"): NameRule("logs", "PutDeliverySource", "name"),
    ("AWS::Logs::DeliveryDestination", "Name"): NameRule("logs", "PutDeliveryDestination", "name"),
    ("AWS::Logs::ResourcePolicy", "PolicyName"): NameRule("logs", "PutResourcePolicy", "policyName"),
    ("AWS::Events::EventBus", "Name"): NameRule("events", "CreateEventBus", "Name"),
    ("AWS::Events::Rule", "Name"): NameRule("events", "PutRule", "Name"),
    ("AWS::Events::Archive", "ArchiveName"): NameRule("events", "CreateArchive", "ArchiveName"),
    ("AWS::Pipes::Pipe", "Name"): NameRule("pipes", "CreatePipe", "Name"),
    ("AWS::SSM::Parameter", "Name"): NameRule("ssm", "PutParameter", "Name"),
    ("Custom::MirroredSigningKeys", "ParameterName"): NameRule("ssm", "PutParameter", "Name"),
    ("Custom::RdsCaBundle", "ParameterName"): NameRule("ssm", "PutParameter", "Name"),
    ("AWS::Backup::BackupVault", "BackupVaultName"): NameRule("backup", "CreateBackupVault", "BackupVaultName"),
    ("AWS::IAM::Role", "RoleName"): NameRule("iam", "CreateRole", "RoleName"),
    ("AWS::IAM::Policy", "PolicyName"): NameRule("iam", "PutRolePolicy", "PolicyName"),
    ("AWS::IAM::ManagedPolicy", "ManagedPolicyName"): NameRule("iam", "CreatePolicy", "PolicyName"),
    ("AWS::XRay::ResourcePolicy", "PolicyName"): NameRule("xray", "PutResourcePolicy", "PolicyName"),
    ("AWS::ApplicationAutoScaling::ScalingPolicy", "PolicyName"): NameRule(
        "application-autoscaling", "PutScalingPolicy", "PolicyName"
    ),
    ("AWS::SQS::Queue", "QueueName"): NameRule("sqs", "CreateQueue", "QueueName"),
    ("AWS::SecretsManager::Secret", "Name"): NameRule("secretsmanager", "CreateSecret", "Name"),
    ("AWS::Lambda::Function", "FunctionName"): NameRule("lambda", "CreateFunction", "FunctionName"),
    ("AWS::S3::Bucket", "BucketName"): NameRule("s3", "CreateBucket", "Bucket"),
    ("AWS::CloudWatch::Dashboard", "DashboardName"): NameRule("cloudwatch", "PutDashboard", "DashboardName"),
    ("AWS::CloudWatch::Alarm", "AlarmName"): NameRule("cloudwatch", "PutMetricAlarm", "AlarmName"),
    ("AWS::KMS::Alias", "AliasName"): NameRule("kms", "CreateAlias", "AliasName"),
}

#: Rules the services document that their models do not carry: (service, member) -> (pattern, what it means).
DOCUMENTED_RULES: Final[dict[tuple[str, str], tuple[str, str]]] = {
    # https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html
    ("s3", "Bucket"): (
        r"(?!xn--|sthree-|amzn-s3-demo-)(?!.*(-s3alias|--ol-s3|\.mrap|--x-s3|--table-s3)$)(?!.*\.\.)"
        r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]",
        "3-63 lower-case letters, digits, dots and hyphens, a letter or digit at each end",
    ),
    # https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_CreateQueue.html
    ("sqs", "QueueName"): (r"[A-Za-z0-9_-]{1,80}|[A-Za-z0-9_-]{1,75}\.fifo", "up to 80 letters, digits, - and _"),
    # The model's pattern admits ARNs (up to 140); a function's own name is at most 64.
    ("lambda", "FunctionName"): (r"[a-zA-Z0-9_-]{1,64}", "up to 64 letters, digits, - and _"),
    ("cloudwatch", "DashboardName"): (r"[A-Za-z0-9_-]{1,255}", "up to 255 letters, digits, - and _"),
}


@dataclass(frozen=True)
class ArnShape:
    """The model shape of the ARNs a service forms for one resource type."""

    service: str
    shape: str


#: (ARN service, resource type) -> the model shape of the ARNs the service forms.
CONDITION_ARNS: Final[dict[tuple[str, str], ArnShape]] = {
    ("bedrock-agentcore", "gateway"): ArnShape("bedrock-agentcore-control", "GatewayArn"),
    ("bedrock-agentcore", "runtime"): ArnShape("bedrock-agentcore-control", "AgentRuntimeArn"),
}
CONDITION_OPERATORS: Final = frozenset({"ArnLike", "ArnEquals", "StringLike", "StringEquals"})
#: What a wildcard in a condition may stand for: nothing, the id suffix, or a whole name and suffix.
_WILDCARD_SAMPLES: Final = ("", ID_SUFFIX, f"-{ID_SUFFIX}", f"a-{ID_SUFFIX}")


@cache
def _model(service: str) -> Any:
    return botocore.session.get_session().get_service_model(service)


def _java_regex(pattern: str) -> str:
    """A model pattern (Java syntax) in Python's."""
    return pattern.replace(r"\p{Print}", r"[\x20-\x7e]")


def member_constraints(rule: NameRule) -> dict[str, Any]:
    """The member's ``pattern``, ``min`` and ``max`` from the service model (what it has of them)."""
    shape = _model(rule.service).operation_model(rule.operation).input_shape.members[rule.member]
    return {k: v for k, v in shape.metadata.items() if k in ("pattern", "min", "max")}


def shape_pattern(service: str, shape: str) -> str:
    """The model's pattern of a shape (an id, an ARN)."""
    return _java_regex(_model(service).shape_for(shape).metadata["pattern"])


def name_problems(rule: NameRule, name: str) -> list[str]:
    """What the service refuses about ``name``, or the id it would form from it: empty if nothing."""
    problems = []
    limits = member_constraints(rule)
    where = f"{rule.service} {rule.operation} {rule.member}"
    if "min" in limits and len(name) < limits["min"]:
        problems.append(f"shorter than {where}'s minimum {limits['min']}")
    if "max" in limits and len(name) > limits["max"]:
        problems.append(f"longer than {where}'s maximum {limits['max']}")
    if "pattern" in limits and not re.fullmatch(_java_regex(limits["pattern"]), name):
        problems.append(f"does not match {where}'s pattern {limits['pattern']}")
    documented = DOCUMENTED_RULES.get((rule.service, rule.member))
    if documented is not None and not re.fullmatch(documented[0], name):
        problems.append(f"breaks {rule.service}'s documented rule: {documented[1]}")
    if rule.id_shape is not None:
        formed = f"{name}-{ID_SUFFIX}"
        pattern = shape_pattern(rule.service, rule.id_shape)
        if not re.fullmatch(pattern, formed):
            problems.append(f"the id it forms ({formed}) does not match {rule.id_shape}'s pattern {pattern}")
    return problems


def condition_can_match(shape: ArnShape, value: str, operator: str) -> bool:
    """Whether an ARN the service forms (the model's pattern) can satisfy the condition value."""
    pattern = shape_pattern(shape.service, shape.shape)
    if not operator.endswith("Like"):
        return re.fullmatch(pattern, value) is not None
    return any(
        re.fullmatch(pattern, value.replace("*", sample).replace("?", "a")) is not None for sample in _WILDCARD_SAMPLES
    )


@dataclass
class NameReport:
    """What the check saw: every name and ARN condition it could resolve, and what is wrong with them."""

    names: list[tuple[str, str]] = field(default_factory=list)
    conditions: list[tuple[str, str]] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)


def _conditions(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        condition = node.get("Condition")
        if isinstance(condition, dict) and "Effect" in node:
            yield condition
        for value in node.values():
            yield from _conditions(value)
    elif isinstance(node, list):
        for value in node:
            yield from _conditions(value)


def check(templates: dict[str, dict[str, Any]], *, region: str) -> NameReport:
    """Check every template of one synthesized app (stack name -> template)."""
    report = NameReport()
    for stack, template in templates.items():
        pseudo = pseudo_parameters(stack.removesuffix(".nested"), region)
        for logical_id, resource in template.get("Resources", {}).items():
            properties = resource.get("Properties") or {}
            where = f"{stack}/{logical_id}"
            for prop, value in properties.items():
                rule = NAME_RULES.get((resource["Type"], prop))
                name = resolve(value, pseudo) if rule is not None else UNRESOLVED
                if rule is None or not isinstance(name, str):
                    continue
                report.names.append((where, name))
                report.findings += [f"{where} {prop} {name!r}: {p}" for p in name_problems(rule, name)]
            for condition in _conditions(properties):
                for operator, pairs in condition.items():
                    if operator not in CONDITION_OPERATORS:
                        continue
                    for key, raw in pairs.items():
                        values = resolve(raw, pseudo)
                        for value in values if isinstance(values, list) else [values]:
                            if not isinstance(value, str) or not value.startswith("arn:"):
                                continue
                            parts = value.split(":", 5)
                            if len(parts) < 6:
                                continue
                            shape = CONDITION_ARNS.get((parts[2], re.split("[/:]", parts[5])[0]))
                            if shape is None:
                                continue
                            report.conditions.append((where, value))
                            if not condition_can_match(shape, value, operator):
                                report.findings.append(
                                    f"{where} {operator} {key} {value!r} can never match: the ARNs "
                                    f"{shape.service} forms match {shape.shape} "
                                    f"{shape_pattern(shape.service, shape.shape)}"
                                )
    return report
