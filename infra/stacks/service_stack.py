"""MemoryServiceStack: Hindsight on Fargate (stateless; its data lives in the DataStack)."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_kms as kms
from constructs import Construct

from infra.config import AppConfig
from infra.constructs.alerts import Alerts
from infra.constructs.database import VectorDatabase
from infra.constructs.identity import Identity
from infra.constructs.memory_service import MemoryService
from infra.constructs.network import Network


class MemoryServiceStack(Stack):
    """Exposes ``memory``."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: AppConfig,
        network: Network,
        database: VectorDatabase,
        identity: Identity | None,
        logs_key: kms.IKey,
        alerts: Alerts,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.memory = MemoryService(
            self,
            "Memory",
            config=config.hindsight,
            auth=config.auth,
            network=network,
            database=database,
            identity=identity,
            agent_name=config.agent.name,
            logs_key=logs_key,
            alerts=alerts,
        )
        CfnOutput(self, "HindsightUrl", value=self.memory.url, description="Hindsight API (inside the VPC)")
        CfnOutput(
            self,
            "OperatorKeySecretArn",
            value=self.memory.secrets.operator_key.secret_arn,
            description="Hindsight operator credential (administration only; never give it to the agent)",
        )
