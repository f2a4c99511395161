"""DataStack: the stateful database and its AWS Backup plan, kept apart from the stateless stacks so they can be
replaced freely; with ``events.enabled`` also the memory event stream (its bus, which customers' rules name, and its
archive outlive any replacement of the service)."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput
from constructs import Construct

from infra.config import DatabaseConfig, DataRemoval, EventsConfig
from infra.constructs.database import VectorDatabase
from infra.constructs.database_backup import DatabaseBackupPlan, DatabaseBackupProps
from infra.constructs.database_props import DatabaseProps
from infra.constructs.foundation import Foundation
from infra.constructs.memory_events import MemoryEvents, MemoryEventsProps
from infra.constructs.part import PartAwareStack
from infra.stacks.removal import removal_policy


class DataStack(PartAwareStack):
    """Exposes ``database``, ``backup_plan`` and ``events`` (None unless ``events.enabled``)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DatabaseConfig,
        removal: DataRemoval,
        parameter_prefix: str,
        foundation: Foundation,
        events: EventsConfig | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        database_props = DatabaseProps(
            config=config,
            foundation=foundation,
            removal_policy=removal_policy(removal),
            parameter_prefix=parameter_prefix,
        )
        self.database = VectorDatabase(self, "Database", database_props)
        backup_props = DatabaseBackupProps(config=config, database=self.database, foundation=foundation)
        self.backup_plan = DatabaseBackupPlan(self, "BackupPlan", backup_props)
        self.events: MemoryEvents | None = None
        if events is not None and events.enabled:
            events_props = MemoryEventsProps(
                config=events,
                foundation=foundation,
                removal_policy=removal_policy(removal, snapshots=False),
                parameter_prefix=parameter_prefix,
            )
            self.events = MemoryEvents(self, "MemoryEvents", events_props)
            CfnOutput(
                self,
                "MemoryEventBusName",
                value=self.events.bus.event_bus_name,
                description="Memory events (source agentcore.memory): add your rules to this bus (docs/events.md)",
            )
            CfnOutput(
                self,
                "MemoryEventsDeadLetterQueueUrl",
                value=self.events.dead_letters.queue_url,
                description="Memory events the pipe could not deliver (docs/events.md: redrive)",
            )
