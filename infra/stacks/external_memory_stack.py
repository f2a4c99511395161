"""ExternalMemoryStack (``hindsight.mode=external``): the customer's Hindsight instead of the -Data and
-MemoryService stacks; holds only the deploy-time isolation probe, which runs before the agent is pointed there."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput
from constructs import Construct

from infra.config import AuthConfig, HindsightConfig, LayerConfig
from infra.constructs.external_memory import ExternalMemory
from infra.constructs.part import PartAwareStack
from infra.stacks.network_stack import Foundation


class ExternalMemoryStack(PartAwareStack):
    """Exposes ``memory`` (:class:`~infra.constructs.external_memory.ExternalMemory`).

    Args:
        agent_name: The agent whose banks the agent key opens (the probe's canary is another agent's).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: HindsightConfig,
        auth: AuthConfig,
        agent_name: str,
        layer: LayerConfig,
        foundation: Foundation,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.memory = ExternalMemory(
            self,
            "Memory",
            config=config,
            auth=auth,
            agent_name=agent_name,
            layer=layer,
            network=foundation.network,
            alerts=foundation.alerts,
            logs_key=foundation.logs_key,
        )
        CfnOutput(self, "HindsightUrl", value=self.memory.url, description="The external Hindsight (your server)")
