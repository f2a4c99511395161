"""GatewayStack: the memory tools over MCP on an AgentCore Gateway, for any agent or MCP client (user tokens only)."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput
from constructs import Construct

from infra.constructs.memory_gateway import MemoryGateway, MemoryGatewayProps
from infra.constructs.part import PartAwareStack


class GatewayStack(PartAwareStack):
    """Exposes ``gateway``. After ``-Agent`` (the agent finds the gateway by its URL parameter); the functions run on
    this stack's own version of the memory adapter layer."""

    def __init__(self, scope: Construct, construct_id: str, *, props: MemoryGatewayProps, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.gateway = MemoryGateway(self, "MemoryGateway", props)
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
