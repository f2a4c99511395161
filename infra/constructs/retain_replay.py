"""RetainReplay: the function that delivers the retain queue to Hindsight, in the VPC, on the memory adapter layer.

``infra/functions/retain_replay`` (its handler, built with Powertools by ``make build`` into ``build/retain_replay``)
runs on arm64 with ``memory_adapter`` from the layer: the layer's first consumer in the stack. The queue triggers it
with partial batch failures (``ReportBatchItemFailures``): each message is delivered with the credential it carries,
or dead-lettered with the reason, or left alone for a later receive while Hindsight is unavailable. Its security
group reaches only Hindsight's load balancer and the VPC endpoints (SQS, KMS, logs, monitoring); it holds no
credential of its own for Hindsight. An alarm fires when invocations fail as a whole (a broken deployment, not an
outage, which shows as the queue's oldest-message alarm).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.constructs.alerts import Alerts
from infra.constructs.log_retention import retention
from infra.constructs.memory_service import MemoryService
from infra.constructs.network import Network
from infra.constructs.retain_queue import RetainQueue
from memory_adapter.constants import (
    HINDSIGHT_API_URL_ENV,
    RETAIN_DEAD_LETTER_QUEUE_URL_ENV,
    RETAIN_DELIVERY_TIMEOUT_ENV,
)

__all__ = ["VISIBILITY_TIMEOUT_FACTOR", "RetainReplay", "RetainReplayProps"]

#: AWS's advice for SQS event source mappings: a visibility timeout of six times the function's timeout.
VISIBILITY_TIMEOUT_FACTOR = 6
#: The Powertools variables the function reads (its log service name and metric namespace).
SERVICE_NAME_ENV = "POWERTOOLS_SERVICE_NAME"
METRICS_NAMESPACE_ENV = "POWERTOOLS_METRICS_NAMESPACE"


@dataclass(frozen=True)
class RetainReplayProps:
    """How the function runs.

    Attributes:
        bundle_path: Its code (``make build``: the handler and Powertools, for arm64).
        timeout_seconds: One invocation's limit (a batch of ``batch_size`` deliveries fits in it).
        delivery_timeout_seconds: Seconds per delivery to Hindsight.
        batch_size: Messages per invocation.
        max_concurrency: Concurrent invocations the queue may start (at least 2): how hard a backlog hits Hindsight.
        log_retention_days: Its log group's retention.
        metrics_namespace: Its metrics' namespace (the agent's).
    """

    bundle_path: Path
    timeout_seconds: int = 60
    delivery_timeout_seconds: int = 10
    batch_size: int = 10
    max_concurrency: int = 2
    log_retention_days: int = 90
    metrics_namespace: str = "AgentCoreMemory"

    @property
    def visibility_timeout_seconds(self) -> int:
        """What the queue's visibility timeout must be for this function."""
        return VISIBILITY_TIMEOUT_FACTOR * self.timeout_seconds


class RetainReplay(Construct):
    """Exposes ``function``, ``security_group``, ``log_group``, ``event_source`` and ``errors_alarm``."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        props: RetainReplayProps,
        queue: RetainQueue,
        layer: lambda_.ILayerVersion,
        network: Network,
        memory: MemoryService,
        logs_key: kms.IKey,
        alerts: Alerts,
    ) -> None:
        super().__init__(scope, construct_id)
        self.security_group = ec2.SecurityGroup(
            self,
            "SecurityGroup",
            vpc=network.vpc,
            description="Retain replay function: to the Hindsight load balancer and AWS endpoints only",
            allow_all_outbound=False,
        )
        self.security_group.add_egress_rule(ec2.Peer.any_ipv4(), ec2.Port.tcp(443), "HTTPS to AWS endpoints")
        network.allow_endpoints_from(self, self.security_group)
        # Written in this stack through an imported handle, so the memory stack never depends on this one.
        hindsight = ec2.SecurityGroup.from_security_group_id(
            self,
            "HindsightSecurityGroup",
            memory.load_balancer_security_group.security_group_id,
            allow_all_outbound=False,
        )
        self.security_group.connections.allow_to(
            hindsight, ec2.Port.tcp(memory.listener_port), "Retain replay to Hindsight's load balancer"
        )
        self.log_group = logs.LogGroup(
            self,
            "Logs",
            retention=retention(props.log_retention_days),
            encryption_key=logs_key,
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.function = lambda_.Function(
            self,
            "Function",
            description="Delivers the retain queue to Hindsight, each turn with its own credential",
            runtime=lambda_.Runtime.PYTHON_3_12,  # the layer's bytecode is compiled for 3.12
            architecture=lambda_.Architecture.ARM_64,
            handler="index.handler",
            code=lambda_.Code.from_asset(str(props.bundle_path)),
            layers=[layer],
            timeout=Duration.seconds(props.timeout_seconds),
            memory_size=256,
            vpc=network.vpc,
            vpc_subnets=network.subnets,
            security_groups=[self.security_group],
            log_group=self.log_group,
            environment={
                HINDSIGHT_API_URL_ENV: memory.url,
                RETAIN_DEAD_LETTER_QUEUE_URL_ENV: queue.dead_letters.queue_url,
                RETAIN_DELIVERY_TIMEOUT_ENV: str(props.delivery_timeout_seconds),
                SERVICE_NAME_ENV: "retain-replay",
                METRICS_NAMESPACE_ENV: props.metrics_namespace,
            },
        )
        self.event_source = sources.SqsEventSource(
            queue.queue,
            batch_size=props.batch_size,
            max_batching_window=Duration.seconds(5),
            report_batch_item_failures=True,
            max_concurrency=props.max_concurrency,
        )
        self.function.add_event_source(self.event_source)  # grants receive, delete and the key's decrypt
        queue.grant_send_dead_letters(self.function)
        self.errors_alarm = alerts.watch(
            cloudwatch.Alarm(
                self,
                "ErrorsAlarm",
                alarm_description="The retain replay function fails whole invocations (configuration, code or "
                "permissions): queued retains are not being delivered",
                metric=self.function.metric_errors(period=Duration.minutes(5), statistic="Sum"),
                threshold=1,
                evaluation_periods=1,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            )
        )
