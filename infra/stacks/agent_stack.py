"""AgentStack: the AgentCore Runtime agent and the reusable memory-adapter layer."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput
from constructs import Construct

from infra.config import AgentConfig, AuthConfig, LayerConfig
from infra.constructs.agent_runtime import AgentRuntime, GatewayAccess
from infra.constructs.identity import Identity
from infra.constructs.memory_layer import MemoryAdapterLayer
from infra.constructs.memory_service import MemoryService
from infra.constructs.part import PartAwareStack
from infra.stacks.network_stack import Foundation


class AgentStack(PartAwareStack):
    """Exposes ``agent`` and ``layer``.

    Args:
        runtime_name: The AgentCore runtime's name (AgentCore requires one).
        layer_parameter_name: The SSM name publishing the layer's ARN unless ``layer.parameter_name`` is set.
        gateway: Where the agent finds the memory gateway its tools go through (``agent.tools_via_gateway``).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: AgentConfig,
        auth: AuthConfig,
        layer: LayerConfig,
        gateway: GatewayAccess | None,
        runtime_name: str,
        layer_parameter_name: str,
        foundation: Foundation,
        memory: MemoryService,
        identity: Identity | None,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.agent = AgentRuntime(
            self,
            "Agent",
            config=config,
            auth=auth,
            network=foundation.network,
            memory=memory,
            identity=identity,
            gateway=gateway,
            runtime_name=runtime_name,
            logs_key=foundation.logs_key,
        )
        self.layer = MemoryAdapterLayer(self, "MemoryAdapterLayer", config=layer, parameter_name=layer_parameter_name)
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
        CfnOutput(self, "AuthMode", value=auth.mode.value, description="How callers authenticate (smoke test)")
