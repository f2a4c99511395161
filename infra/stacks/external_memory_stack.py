"""ExternalMemoryStack (``hindsight.mode=external``): the customer's Hindsight instead of the -Data and
-MemoryService stacks; holds only the deploy-time isolation probe, which runs before the agent is pointed there."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput
from constructs import Construct

from infra.constructs.external_memory import ExternalMemory
from infra.constructs.memory_props import ExternalMemoryProps
from infra.constructs.part import PartAwareStack


class ExternalMemoryStack(PartAwareStack):
    """Exposes ``memory`` (:class:`~infra.constructs.external_memory.ExternalMemory`)."""

    def __init__(self, scope: Construct, construct_id: str, *, props: ExternalMemoryProps, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.memory = ExternalMemory(self, "Memory", props)
        CfnOutput(self, "HindsightUrl", value=self.memory.url, description="The external Hindsight (your server)")
