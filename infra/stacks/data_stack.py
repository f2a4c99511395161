"""DataStack: the stateful database and its AWS Backup plan, kept apart from the stateless stacks so they can be
replaced freely."""

from __future__ import annotations

from typing import Any

from constructs import Construct

from infra.config import DatabaseConfig, DataRemoval
from infra.constructs.database import VectorDatabase
from infra.constructs.database_backup import DatabaseBackupPlan
from infra.constructs.part import PartAwareStack
from infra.stacks.network_stack import Foundation
from infra.stacks.removal import removal_policy


class DataStack(PartAwareStack):
    """Exposes ``database`` and ``backup_plan``."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DatabaseConfig,
        removal: DataRemoval,
        parameter_prefix: str,
        foundation: Foundation,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.database = VectorDatabase(
            self,
            "Database",
            config=config,
            network=foundation.network,
            removal_policy=removal_policy(removal),
            logs_key=foundation.logs_key,
            parameter_prefix=parameter_prefix,
            alerts=foundation.alerts,
        )
        self.backup_plan = DatabaseBackupPlan(
            self,
            "BackupPlan",
            database=self.database,
            schedule=config.backup_plan_schedule,
            retention_days=config.backup_plan_retention_days,
            alerts=foundation.alerts,
        )
