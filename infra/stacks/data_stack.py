"""DataStack: the stateful database, kept apart from the stateless stacks so they can be replaced freely."""

from __future__ import annotations

from typing import Any

from aws_cdk import RemovalPolicy, Stack
from aws_cdk import aws_kms as kms
from constructs import Construct

from infra.config import AppConfig, DataRemoval
from infra.constructs.database import VectorDatabase
from infra.constructs.network import Network

REMOVAL_POLICIES = {
    DataRemoval.RETAIN: RemovalPolicy.RETAIN,
    DataRemoval.SNAPSHOT: RemovalPolicy.SNAPSHOT,
    DataRemoval.DESTROY: RemovalPolicy.DESTROY,
}


class DataStack(Stack):
    """Exposes ``database``."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: AppConfig,
        network: Network,
        logs_key: kms.IKey,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.database = VectorDatabase(
            self,
            "Database",
            config=config.database,
            network=network,
            removal_policy=REMOVAL_POLICIES[config.removal],
            logs_key=logs_key,
            parameter_prefix=f"/{config.prefix}/{config.env_name}",
        )
