"""The ``-Agent`` stack's acknowledgements: the runtime's role and the retain replay function."""

from __future__ import annotations

from infra.config import AppConfig
from infra.nag import common
from infra.stacks.agent_stack import AgentStack


def acknowledge(stack: AgentStack, config: AppConfig) -> None:
    """The runtime's role (what AgentCore names at deploy time) and the replay function."""
    runtime = stack.agent.runtime
    region = config.region
    reasons = {
        f"AwsSolutions-IAM5[Resource::arn:aws:logs:{region}:<AWS::AccountId>:log-group:/aws/bedrock-agentcore/"
        "runtimes/*]": "AgentCore names the runtime's log groups at deploy time under this prefix",
        f"AwsSolutions-IAM5[Resource::arn:aws:logs:{region}:<AWS::AccountId>:log-group:/aws/bedrock-agentcore/"
        "runtimes/*:log-stream:*]": "log streams are created per session under the runtime's log groups",
        f"AwsSolutions-IAM5[Resource::arn:aws:logs:{region}:<AWS::AccountId>:log-group:*]": "logs:DescribeLogGroups "
        "(set by the AgentCore L2) is a list action without resource scoping",
        "AwsSolutions-IAM5[Resource::*]": "X-Ray segment upload and cloudwatch:PutMetricData (namespace-"
        "conditioned by the L2) support no resource ARNs",
        f"AwsSolutions-IAM5[Resource::arn:aws:bedrock-agentcore:{region}:<AWS::AccountId>:workload-identity-"
        "directory/default/workload-identity/*]": "workload access tokens for this runtime's identity, whose name "
        "AgentCore assigns at deploy time",
    }
    for finding in common.asset_read_findings(stack):
        reasons[finding] = "AgentCore reads the agent's code bundle (a CDK asset) through CDK's asset grant"
    for finding, reason in reasons.items():
        common.ack(runtime.role, finding, reason)
    _retain_replay(stack)


def _retain_replay(stack: AgentStack) -> None:
    function = stack.retain_replay.function
    common.ack(
        function,
        "AwsSolutions-L1",
        "it runs on the Python version the memory adapter layer is built for (its bytecode and compiled wheels, "
        "infra.build.TARGET_PYTHON); the layer and this runtime move to a newer version together",
    )
    common.ack(
        function,
        "NIST.800.53.R5-LambdaConcurrency",
        "the queue's event source mapping caps its concurrency (retain_queue.max_concurrency); reserved concurrency "
        "would fail the first deploy in accounts at the default 10-execution limit",
    )
    common.ack(
        function,
        "NIST.800.53.R5-LambdaDLQ",
        "invoked synchronously by the SQS event source mapping: a message it does not process stays on the retain "
        "queue, whose own dead-letter queue (alarmed) receives it after its last allowed receive",
    )
    role = function.role
    assert role is not None
    common.ack(
        role,
        "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
        "the AWS-managed basic execution policy grants only log writes",
    )
    common.ack(
        role,
        "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole]",
        "the AWS-managed policy a Lambda function in a VPC needs to manage its network interfaces",
    )
