"""RetainReplay: the function that delivers the retain queue to Hindsight, in the VPC, on the memory adapter layer.

``infra/functions/retain_replay`` (its handler, bundled with Powertools by ``make build`` into
``retain_queue.replay_path``) runs on arm64 with ``memory_adapter`` from the layer: the layer's first consumer in
the stack, on the runtime the layer is built for. The queue triggers it with partial batch failures
(``ReportBatchItemFailures``): each message is delivered with the credential it carries, or dead-lettered with the
reason, or left alone for a later receive while Hindsight is unavailable. Its security group reaches only
Hindsight's load balancer and the VPC endpoints (SQS, Secrets Manager, KMS, logs, monitoring). In IAM mode it may
read the agent key, and only that secret (``auth.mode=iam``: the agent queues its retains without the key, see
:mod:`memory_adapter.queue_replay`); otherwise it holds no credential of its own for Hindsight. An alarm fires
when whole invocations fail (a broken deployment; an outage shows as the queue's oldest-message alarm instead).
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration, Names
from aws_cdk import aws_ec2 as ec2
from aws_lambda_powertools.shared.constants import METRICS_NAMESPACE_ENV, SERVICE_NAME_ENV
from constructs import Construct

from infra.config import RetainQueueConfig
from infra.constructs import memory_layer
from infra.constructs.foundation import Foundation
from infra.constructs.functions import FUNCTIONS_DIR, python_function
from infra.constructs.memory_endpoint import MemoryEndpoint
from infra.constructs.memory_layer import MemoryAdapterLayer
from infra.constructs.retain_queue import RetainQueue
from memory_adapter.constants import METRICS_NAMESPACE
from memory_adapter.queue_replay import ReplaySettings

__all__ = ["REPLAY_SRC", "SERVICE_NAME", "RetainReplay", "RetainReplayProps"]

#: The function's source (``make build`` bundles it with Powertools into ``retain_queue.replay_path``).
REPLAY_SRC = FUNCTIONS_DIR / "retain_replay"
#: Its Powertools service name (log key ``service``).
SERVICE_NAME = "retain-replay"
#: Seconds the event source mapping waits to fill a batch.
BATCHING_WINDOW = Duration.seconds(5)


@dataclass(frozen=True)
class RetainReplayProps:
    """What the replay function is built from.

    Args:
        config: The ``retain_queue`` section.
        queue: The queue it consumes and dead-letters into.
        layer: The memory adapter layer (``memory_adapter``).
        foundation: Its network, logs key and alarm topic.
        memory: The Hindsight it delivers to.
    """

    config: RetainQueueConfig
    queue: RetainQueue
    layer: MemoryAdapterLayer
    foundation: Foundation
    memory: MemoryEndpoint


class RetainReplay(Construct):
    """Exposes ``function``, ``security_group``, ``connections``, ``event_source_mapping`` and ``errors_alarm``; its
    metrics are in the agent's namespace (:data:`~memory_adapter.constants.METRICS_NAMESPACE`), so one dashboard
    shows both."""

    def __init__(self, scope: Construct, construct_id: str, props: RetainReplayProps) -> None:
        super().__init__(scope, construct_id)
        config, queue, memory, network = props.config, props.queue, props.memory, props.foundation.network
        self.security_group = network.workload_security_group(
            self,
            "SecurityGroup",
            description="Retain replay function: to the Hindsight load balancer and AWS endpoints",
        )
        self.connections: ec2.Connections = self.security_group.connections
        memory.allow_from(self)
        agent_key_arn = memory.agent_key_secret_arn  # IAM mode only: queued retains leave the key out
        self.function = python_function(
            self,
            "Function",
            source=config.replay_path,
            description="Delivers the retain queue to Hindsight, each turn with its own credential",
            timeout=Duration.seconds(config.replay_timeout_seconds),
            logs_key=props.foundation.logs_key,
            log_group_id="Logs",
            memory_size=256,
            environment={
                **ReplaySettings(
                    hindsight_api_url=memory.url_in(self),
                    dead_letter_queue_url=queue.dead_letters.queue_url,
                    delivery_timeout_s=config.delivery_timeout_seconds,
                    agent_key_secret_arn=agent_key_arn,
                    ca_bundle=memory.ca_bundle,
                ).to_env(),
                SERVICE_NAME_ENV: SERVICE_NAME,
                METRICS_NAMESPACE_ENV: METRICS_NAMESPACE,
            },
            vpc=network.vpc,
            vpc_subnets=network.subnets,
            security_groups=[self.security_group],
            layers=[props.layer.layer],
            runtime=memory_layer.RUNTIME,
        )
        # Not SqsEventSource: it grants grantConsumeMessages (GetQueueUrl, ChangeMessageVisibility too), which neither
        # the mapping nor the code uses. Same construct id, so the mapping is not replaced.
        self.event_source_mapping = self.function.add_event_source_mapping(
            f"SqsEventSource:{Names.node_unique_id(queue.queue.node)}",
            event_source_arn=queue.queue.queue_arn,
            batch_size=config.batch_size,
            max_batching_window=BATCHING_WINDOW,
            report_batch_item_failures=True,
            max_concurrency=config.max_concurrency,
        )
        queue.grant_event_source(self.function)
        queue.grant_send_dead_letters(self.function)
        memory.grant_agent_key_read(self.function)  # that one secret, nothing outside IAM mode
        self.errors_alarm = props.foundation.alerts.alarm(
            self,
            "ErrorsAlarm",
            description="The retain replay function fails whole invocations (configuration, code or "
            "permissions): queued retains are not being delivered",
            metric=self.function.metric_errors(period=Duration.minutes(5), statistic="Sum"),
        )
