"""The ``-ExternalMemory`` stack's acknowledgements (``hindsight.mode=external``)."""

from __future__ import annotations

from infra.nag import common
from infra.stacks.external_memory_stack import ExternalMemoryStack


def acknowledge(stack: ExternalMemoryStack) -> None:
    """The isolation probe: a function in the VPC behind the provider framework (hindsight.mode=external)."""
    probe = stack.memory.probe
    common.lambda_common(probe.function, "invoked by CloudFormation through the provider framework at deploy time")
    common.ack(
        probe.function,
        "AwsSolutions-L1",
        "it runs on the Python version the memory adapter layer is built for (infra.build.TARGET_PYTHON)",
    )
    role = probe.function.node.find_child("ServiceRole")
    common.ack(
        role,
        "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole]",
        "the AWS-managed policy a Lambda function in a VPC needs to manage its network interfaces",
    )
    common.ack(
        role.node.find_child("DefaultPolicy"),
        "AwsSolutions-IAM5[Resource::*]",
        "cloudwatch:PutMetricData has no resource type; the statement is limited to the probe's namespace",
    )
    framework = probe.provider.node.find_child("framework-onEvent")
    common.lambda_outside_vpc(
        framework,
        "CDK's custom resource framework answers CloudFormation's pre-signed S3 URL, which the isolated VPC "
        "cannot reach (the probe itself runs inside the VPC)",
    )
    function_id = stack.resolve(stack.get_logical_id(probe.function.node.default_child))  # type: ignore[arg-type]
    common.ack(
        framework.node.find_child("ServiceRole"),
        f"AwsSolutions-IAM5[Resource::<{function_id}.Arn>:*]",
        "the provider framework may invoke any version of the one probe function it fronts",
    )
