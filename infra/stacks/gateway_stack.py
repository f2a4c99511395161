"""GatewayStack: the memory tools over MCP on an AgentCore Gateway, for any agent or MCP client (user tokens only)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aws_cdk import CfnOutput
from constructs import Construct

from infra.config import GatewayConfig, LayerConfig
from infra.constructs.identity import Identity
from infra.constructs.memory_endpoint import MemoryEndpoint
from infra.constructs.memory_gateway import MemoryGateway
from infra.constructs.part import PartAwareStack
from infra.stacks.network_stack import Foundation


class GatewayStack(PartAwareStack):
    """Exposes ``gateway``. After ``-Agent`` (the agent finds the gateway by its URL parameter); the functions run on
    this stack's own version of the memory adapter layer.

    Args:
        agent_name: Whose banks the tools act on (the runtime agent's).
        recall_settings: The agent's recall budget and block size (``AgentConfig.recall_settings``).
        url_parameter_name: The SSM name publishing the MCP URL.
        private_access: Create the VPC endpoint the agent reaches the gateway through (``agent.tools_via_gateway``).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: GatewayConfig,
        agent_name: str,
        recall_settings: Mapping[str, Any],
        url_parameter_name: str,
        private_access: bool,
        foundation: Foundation,
        memory: MemoryEndpoint,
        identity: Identity,
        layer: LayerConfig,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.gateway = MemoryGateway(
            self,
            "MemoryGateway",
            config=config,
            agent_name=agent_name,
            recall_settings=recall_settings,
            url_parameter_name=url_parameter_name,
            private_access=private_access,
            network=foundation.network,
            memory=memory,
            identity=identity,
            layer_path=Path(layer.path),
            logs_key=foundation.logs_key,
            alerts=foundation.alerts,
        )
        gateway = self.gateway.gateway
        CfnOutput(
            self,
            "GatewayUrl",
            value=self.gateway.url,
            description="MCP endpoint (streamable HTTP): connect with Authorization: Bearer <user access token>",
        )
        CfnOutput(self, "GatewayId", value=gateway.gateway_id)
        CfnOutput(
            self,
            "GatewayToolPrefix",
            value=self.gateway.tool_prefix,
            description="Every tool's name starts with this (memory___recall, ...)",
        )
        CfnOutput(
            self,
            "GatewayUrlParameter",
            value=self.gateway.url_parameter.parameter_name,
            description="SSM parameter holding the MCP endpoint",
        )
