"""AgentStack: the AgentCore Runtime agent, the reusable memory-adapter layer, and the retain queue with its replay
function (the turns the agent could not deliver, and what delivers them once Hindsight is back)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_cdk import CfnOutput
from constructs import Construct

from infra.config import DataRemoval, LayerConfig, RetainQueueConfig
from infra.constructs.agent_runtime import AgentRuntime, AgentRuntimeProps
from infra.constructs.memory_layer import MemoryAdapterLayer, MemoryLayerProps
from infra.constructs.part import PartAwareStack
from infra.constructs.retain_queue import RetainQueue, RetainQueueProps
from infra.constructs.retain_replay import RetainReplay, RetainReplayProps
from infra.stacks.removal import removal_policy


@dataclass(frozen=True)
class AgentStackProps:
    """What the -Agent stack is built from.

    Args:
        runtime: The agent runtime's (:class:`~infra.constructs.agent_runtime.AgentRuntimeProps`); its auth,
            foundation and memory serve the retain queue and the replay function too.
        layer: The ``layer`` section.
        retain_queue: The ``retain_queue`` section (the queue and its replay function).
        removal: What becomes of the retain queues when the stack is deleted (they may hold undelivered turns).
        layer_parameter_name: The SSM name publishing the layer's ARN unless ``layer.parameter_name`` is set.
    """

    runtime: AgentRuntimeProps
    layer: LayerConfig
    retain_queue: RetainQueueConfig
    removal: DataRemoval
    layer_parameter_name: str


class AgentStack(PartAwareStack):
    """Exposes ``agent``, ``layer``, ``retain_queue`` and ``retain_replay``."""

    def __init__(self, scope: Construct, construct_id: str, *, props: AgentStackProps, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        runtime_props = props.runtime
        queue_props = RetainQueueProps(
            config=props.retain_queue,
            grace_seconds=runtime_props.auth.grace_seconds,
            removal_policy=removal_policy(props.removal, snapshots=False),
            foundation=runtime_props.foundation,
        )
        self.retain_queue = RetainQueue(self, "RetainQueue", queue_props)
        self.agent = AgentRuntime(self, "Agent", runtime_props, retain_queue=self.retain_queue)
        layer_props = MemoryLayerProps(config=props.layer, parameter_name=props.layer_parameter_name)
        self.layer = MemoryAdapterLayer(self, "MemoryAdapterLayer", layer_props)
        replay_props = RetainReplayProps(
            config=props.retain_queue,
            queue=self.retain_queue,
            layer=self.layer,
            foundation=runtime_props.foundation,
            memory=runtime_props.memory,
        )
        self.retain_replay = RetainReplay(self, "RetainReplay", replay_props)
        runtime = self.agent.runtime
        CfnOutput(self, "AgentRuntimeArn", value=runtime.agent_runtime_arn, description="Invoke this runtime")
        CfnOutput(self, "AgentRuntimeId", value=runtime.agent_runtime_id)
        CfnOutput(
            self,
            "AgentEndpointName",
            value=self.agent.endpoint.endpoint_name,
            description="Qualifier for invoke-agent-runtime",
        )
        CfnOutput(self, "AgentRoleArn", value=runtime.role.role_arn)
        CfnOutput(
            self, "AuthMode", value=runtime_props.auth.mode.value, description="How callers authenticate (smoke test)"
        )
        CfnOutput(
            self,
            "RetainQueueUrl",
            value=self.retain_queue.queue.queue_url,
            description="Turns the agent could not deliver, waiting for the replay function",
        )
        CfnOutput(
            self,
            "RetainDeadLetterQueueUrl",
            value=self.retain_queue.dead_letters.queue_url,
            description="Turns Hindsight refused, with the reason: python -m memory_adapter.redrive list",
        )
        CfnOutput(
            self,
            "RetainDeadLetterQueueArn",
            value=self.retain_queue.dead_letters.queue_arn,
            description="For aws sqs start-message-move-task (back to the retain queue)",
        )
