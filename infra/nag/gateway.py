"""The ``-Gateway`` stack's acknowledgements: the interceptor and target functions and the gateway's role."""

from __future__ import annotations

from aws_cdk import CfnElement, Stack

from infra.nag import common
from infra.stacks.gateway_stack import GatewayStack


def acknowledge(gateway_stack: GatewayStack) -> None:
    """The gateway's two functions and its role's grants on them and on its key."""
    gateway = gateway_stack.gateway
    for function in (gateway.interceptor, gateway.target_function):
        common.ack(
            function,
            "AwsSolutions-L1",
            "runs on the memory adapter layer, whose compiled wheels (cryptography, cffi) are built for CPython 3.12 "
            "(infra.build TARGET_PYTHON, the agent's AgentCore runtime too)",
        )
        common.ack(
            function,
            "NIST.800.53.R5-LambdaConcurrency",
            "runs for every MCP request: reserved concurrency would cap every user's calls (and fail the first "
            "deploy in accounts at the default 10-execution limit); the gateway throttles in front of it",
        )
        common.ack(
            function,
            "NIST.800.53.R5-LambdaDLQ",
            "invoked synchronously by the gateway, which answers the MCP client with the outcome; a dead-letter "
            "queue applies to asynchronous invocations only, and failures raise the function's alarm",
        )
        assert function.role is not None
        common.ack(
            function.role,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
            "the AWS-managed basic execution policy grants only log writes",
        )
    common.ack(
        gateway.interceptor,
        "NIST.800.53.R5-LambdaInsideVPC",
        "runs outside the VPC because it touches no data: it only verifies tokens with the mirrored keys it reads "
        "from SSM, and a VPC would add network interfaces to the path of every MCP request",
    )
    target_role = gateway.target_function.role
    assert target_role is not None
    common.ack(
        target_role,
        "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole]",
        "the AWS-managed policy a Lambda function in a VPC needs to manage its network interfaces",
    )
    role = gateway.gateway.role
    stack = Stack.of(gateway)
    for function in (gateway.interceptor, gateway.target_function):
        cfn_function = function.node.default_child
        assert isinstance(cfn_function, CfnElement)
        function_id = stack.resolve(stack.get_logical_id(cfn_function))
        common.ack(
            role,
            f"AwsSolutions-IAM5[Resource::<{function_id}.Arn>:*]",
            "the gateway may invoke any version of its one interceptor and one target function (the L2's grant)",
        )
