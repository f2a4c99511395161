"""DataStack: the stateful database and its AWS Backup plan, kept apart from the stateless stacks so they can be
replaced freely; with ``events.enabled`` also the memory event stream (its bus, which customers' rules name, and its
archive outlive any replacement of the service)."""

from __future__ import annotations

from dataclasses import dataclass
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


@dataclass(frozen=True)
class DataStackProps:
    """What the -Data stack is built from.

    Args:
        config: The ``database`` section.
        removal: What becomes of the database, its backups and the event stream when the stack is deleted.
        parameter_prefix: The start of every SSM name the stack writes (the database's and the events' handoffs).
        foundation: The network, the logs key and the alerts.
        events: The ``events`` section (the memory event stream exists only with ``events.enabled``).
    """

    config: DatabaseConfig
    removal: DataRemoval
    parameter_prefix: str
    foundation: Foundation
    events: EventsConfig


class DataStack(PartAwareStack):
    """Exposes ``database``, ``backup_plan`` and ``events`` (None unless ``events.enabled``)."""

    def __init__(self, scope: Construct, construct_id: str, *, props: DataStackProps, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        database_props = DatabaseProps(
            config=props.config,
            foundation=props.foundation,
            removal_policy=removal_policy(props.removal),
            parameter_prefix=props.parameter_prefix,
        )
        self.database = VectorDatabase(self, "Database", database_props)
        backup_props = DatabaseBackupProps(config=props.config, database=self.database, foundation=props.foundation)
        self.backup_plan = DatabaseBackupPlan(self, "BackupPlan", backup_props)
        self.events: MemoryEvents | None = None
        if props.events.enabled:
            events_props = MemoryEventsProps(
                config=props.events,
                foundation=props.foundation,
                removal_policy=removal_policy(props.removal, snapshots=False),
                parameter_prefix=props.parameter_prefix,
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
