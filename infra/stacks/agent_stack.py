"""AgentStack: the AgentCore Runtime agent and the reusable memory-adapter layer."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_kms as kms
from constructs import Construct

from infra.config import AppConfig
from infra.constructs.agent_runtime import AgentRuntime, make_runtime_name
from infra.constructs.identity import Identity
from infra.constructs.memory_layer import MemoryAdapterLayer
from infra.constructs.memory_service import MemoryService
from infra.constructs.network import Network


class AgentStack(Stack):
    """Exposes ``agent`` and ``layer``."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: AppConfig,
        network: Network,
        memory: MemoryService,
        identity: Identity | None,
        logs_key: kms.IKey,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.agent = AgentRuntime(
            self,
            "Agent",
            config=config.agent,
            auth=config.auth,
            network=network,
            memory=memory,
            identity=identity,
            runtime_name=make_runtime_name(config.prefix, config.env_name, config.agent.name),
            logs_key=logs_key,
        )
        self.layer = MemoryAdapterLayer(
            self,
            "MemoryAdapterLayer",
            config=config.layer,
            parameter_name=f"/{config.prefix}/{config.env_name}/memory-adapter-layer-arn",
        )
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
        CfnOutput(self, "AuthMode", value=config.auth.mode.value, description="How callers authenticate (smoke test)")
