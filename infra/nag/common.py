"""What every stack's acknowledgements share: the acknowledgement itself, the findings of Lambda functions and of
CDK's asset grant, and the acknowledgements every stack may need (inline policies, claimed service log groups)."""

from __future__ import annotations

import json
from typing import Any

from aws_cdk import Acknowledgment, ArnFormat, Stack, Validations
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import IConstruct

from infra.bootstrap import asset_bucket_name
from infra.constructs.service_log_group import FUNCTION_ID as LOG_GROUPS_FUNCTION_ID
from infra.constructs.service_log_group import ServiceLogGroup, rollback_stable_name

#: The AWS-managed policy a Lambda function in a VPC is given (its finding's id).
VPC_ACCESS_POLICY = (
    "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole]"
)


def ack(scope: IConstruct, rule: str, reason: str) -> None:
    """Acknowledge ``rule`` on ``scope`` (and its children), the reason naming the construct."""
    Validations.of(scope).acknowledge(Acknowledgment(id=rule, reason=f"{scope.node.path}: {reason}"))


def asset_read_findings(stack: Stack) -> list[str]:
    """The findings CDK's asset grant (read of the bootstrap bucket's objects) produces, for this stack's bucket.

    The bucket's name comes from the stack's synthesizer, so a custom bootstrap qualifier
    (``-c @aws-cdk/core:bootstrapQualifier=...``) names its own bucket here.
    """
    bucket = asset_bucket_name(stack, account="<AWS::AccountId>")
    return [
        "AwsSolutions-IAM5[Action::s3:GetBucket*]",
        "AwsSolutions-IAM5[Action::s3:GetObject*]",
        "AwsSolutions-IAM5[Action::s3:List*]",
        f"AwsSolutions-IAM5[Resource::arn:aws:s3:::{bucket}/*]",
    ]


def inline_policies(stack: Stack) -> None:
    """The statements CDK's grants write inline on one role (every stack has some)."""
    for construct in stack.node.find_all():
        if isinstance(construct, iam.Policy | iam.CfnPolicy) and construct.node.id in ("DefaultPolicy", "Resource"):
            target = construct if isinstance(construct, iam.Policy) else construct.node.scope
            assert target is not None
            ack(
                target,
                "NIST.800.53.R5-IAMNoInlinePolicy",
                "CDK grant methods write least-privilege statements inline on this one role; a customer-managed "
                "policy would only be attached to the same single role",
            )


def lambda_outside_vpc(function: IConstruct, why: str) -> None:
    """A function outside the VPC, and why it must be."""
    ack(function, "NIST.800.53.R5-LambdaInsideVPC", f"runs outside the VPC because {why}")
    lambda_common(function, "invoked by EventBridge/CloudFormation with retries")


def lambda_common(function: IConstruct, invoked: str) -> None:
    """What every rarely run function shares: no reserved concurrency, no dead-letter queue, the basic role."""
    ack(
        function,
        "NIST.800.53.R5-LambdaConcurrency",
        "reserved concurrency would fail the first deploy in accounts "
        "at the default 10-execution limit (Lambda keeps 10 unreserved); the function runs rarely and briefly",
    )
    ack(
        function,
        "NIST.800.53.R5-LambdaDLQ",
        f"{invoked}; a failure raises an alarm or fails the deploy, and there is no payload worth keeping",
    )
    role = function.node.try_find_child("ServiceRole")
    if role is not None:
        ack(
            role,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
            "the AWS-managed basic execution policy grants only log writes",
        )


def rendered(stack: Stack, value: Any) -> str:
    """A resolved template value as cdk-nag writes it into a finding's id: literals as they are, ``<AWS::...>`` and
    ``<LogicalId>`` for Refs, ``<LogicalId.Attr>`` for GetAtts, other intrinsics as compact JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and len(value) == 1:
        ((key, arg),) = value.items()
        if key == "Fn::Join":
            return str(arg[0]).join(rendered(stack, v) for v in arg[1])
        if key == "Ref":
            return f"<{arg}>"
        if key == "Fn::GetAtt":
            return f"<{arg[0]}.{arg[1]}>"
    return json.dumps(value, separators=(",", ":"))


def service_log_groups(stack: Stack) -> None:
    """The function that claims log groups services create themselves (constructs/service_log_group.py)."""
    function = stack.node.try_find_child(LOG_GROUPS_FUNCTION_ID)
    if not isinstance(function, lambda_.Function):
        return
    lambda_outside_vpc(
        function, "it only calls the CloudWatch Logs API at deploy time and answers CloudFormation's pre-signed URL"
    )
    role = function.node.find_child("ServiceRole")
    reasons = {
        "*": "logs:DescribeLogGroups (reading a claimed group's key) is authorized only on every log group",
    }
    for claim in (c for c in stack.node.find_all() if isinstance(c, ServiceLogGroup)):
        name = rollback_stable_name(claim.log_group_name)
        reasons[f"{name}:*"] = (
            "a log group's ARN in the form IAM matches log-group actions against (':*' ends every log-group ARN "
            "CloudFormation reports); the claim's own group only"
        )
        if "*" in name:
            reasons[name] = (
                "the claim's own group, with the part a replacement changes (the runtime's id, the instance's "
                "identifier) as '*': a rollback after a replacement claims the previous group under the new policy"
            )
    for name, reason in reasons.items():
        arn = stack.format_arn(
            service="logs", resource="log-group", resource_name=name, arn_format=ArnFormat.COLON_RESOURCE_NAME
        )
        ack(role, f"AwsSolutions-IAM5[Resource::{rendered(stack, stack.resolve(arn))}]", reason)
