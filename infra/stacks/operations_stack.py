"""OperationsStack: memory administration and the system's monitoring, deployed after everything it watches.

- :class:`~infra.constructs.admin_bucket.AdminBucket`: exports, erasure receipts and logical backups;
- :class:`~infra.constructs.memory_admin.MemoryAdmin`: the admin function (IAM function URL), the scheduled expiry
  and the scheduled logical backup, on the memory adapter layer, holding the operator key;
- the maintenance task's read of the bucket (the task itself is a Hindsight task of the ``-MemoryService`` stack;
  neither it nor the logical backup exists with ``hindsight.mode=external``);
- :class:`~infra.constructs.system_alarms.SystemAlarms` and :class:`~infra.constructs.dashboard.SystemDashboard`
  (with the ``-Agent`` stack's retain queue and replay function, and every other stack's alarms).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aws_cdk import CfnOutput
from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct

from infra.config import DataRemoval, LayerConfig, OperationsConfig, RetentionConfig
from infra.constructs.admin_bucket import AdminBucket, AdminBucketProps
from infra.constructs.dashboard import DashboardProps, SystemDashboard
from infra.constructs.database import VectorDatabase
from infra.constructs.external_memory import ExternalMemory
from infra.constructs.foundation import Foundation
from infra.constructs.memory_admin import MemoryAdmin, MemoryAdminProps
from infra.constructs.memory_events import MemoryEvents
from infra.constructs.memory_service import MemoryService
from infra.constructs.part import PartAwareStack
from infra.constructs.retain_queue import RetainQueue
from infra.constructs.retain_replay import RetainReplay
from infra.constructs.system_alarms import SystemAlarms, SystemAlarmsProps, WatchedSystem
from infra.stacks.removal import removal_policy


@dataclass(frozen=True)
class OperationsStackProps:
    """What the -Operations stack is built from.

    Args:
        config: The ``operations`` section.
        retention: The ``retention`` section (the expiry's rules).
        layer: The ``layer`` section (the functions run on their own version of the memory adapter layer).
        removal: What becomes of the administration bucket when the stack is deleted.
        bucket_name: The administration bucket's name (:func:`~infra.constructs.admin_bucket.admin_bucket_name`;
            the network's S3 gateway admits it by that name).
        agent_name: The agent whose metrics the dashboard and the alarms read.
        recall_settings: The agent's recall budget, block size and candidates (``AgentConfig.recall_settings``):
            the operator's recall uses them too.
        dashboard_name: The dashboard's name.
        foundation: The network, the logs key and the alerts.
        database: The database it watches (``None`` with ``hindsight.mode=external``).
        memory: The Hindsight it administers and watches.
        retain_queue, retain_replay: The agent's retain queue and its replay function (the dashboard's retains
            row; their alarms join the others).
        other_alarms: The other stacks' alarms, shown with these on the dashboard.
        memory_events: The -Data stack's memory events (``events.enabled``), whose alarms the dashboard shows.
    """

    config: OperationsConfig
    retention: RetentionConfig
    layer: LayerConfig
    removal: DataRemoval
    bucket_name: str
    agent_name: str
    recall_settings: Mapping[str, Any]
    dashboard_name: str
    foundation: Foundation
    database: VectorDatabase | None
    memory: MemoryService | ExternalMemory
    retain_queue: RetainQueue
    retain_replay: RetainReplay
    other_alarms: Sequence[cloudwatch.IAlarm]
    memory_events: MemoryEvents | None


class OperationsStack(PartAwareStack):
    """Exposes ``bucket``, ``admin``, ``alarms`` and ``dashboard``."""

    def __init__(self, scope: Construct, construct_id: str, *, props: OperationsStackProps, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        memory = props.memory
        bucket_props = AdminBucketProps(
            config=props.config,
            bucket_name=props.bucket_name,
            removal_policy=removal_policy(props.removal, snapshots=False),
        )
        self.bucket = AdminBucket(self, "AdminBucket", bucket_props)
        managed = isinstance(memory, MemoryService)  # hindsight.mode=external: no maintenance task, no backup
        if isinstance(memory, MemoryService):
            self.bucket.grant_read(memory.maintenance_role_in(self), tag=memory.maintenance_role_tag)
        admin_props = MemoryAdminProps(
            config=props.config,
            retention_rules=props.retention.rules,
            recall_settings=props.recall_settings,
            layer_path=props.layer.path,
            foundation=props.foundation,
            memory=memory,
            bucket=self.bucket,
            logical_backup=managed,
        )
        self.admin = MemoryAdmin(self, "MemoryAdmin", admin_props)
        system = WatchedSystem(agent_name=props.agent_name, database=props.database, memory=memory)
        self.alarms = SystemAlarms(self, "Alarms", SystemAlarmsProps(system=system, foundation=props.foundation))
        alarms = [
            *self.alarms.alarms,
            *self.admin.alarms,
            props.retain_queue.dead_letter_alarm,
            props.retain_queue.oldest_message_alarm,
            props.retain_replay.errors_alarm,
            *props.other_alarms,
            *([memory.restart_alarm_in(self)] if isinstance(memory, MemoryService) else []),
            *(props.memory_events.alarms_in(self) if props.memory_events is not None else []),
        ]
        dashboard_props = DashboardProps(
            name=props.dashboard_name,
            system=system,
            admin_functions=self.admin,
            retain_queue=props.retain_queue,
            retain_replay=props.retain_replay,
            alarms=alarms,
        )
        self.dashboard = SystemDashboard(self, "Dashboard", dashboard_props)
        CfnOutput(
            self,
            "MemoryAdminUrl",
            value=self.admin.url,
            description="python -m memory_adapter.admin --function-url <this> (IAM-signed; see OperatorPolicyArn)",
        )
        CfnOutput(
            self,
            "OperatorPolicyArn",
            value=self.admin.operator_policy.managed_policy_arn,
            description="Attach to the roles that administer memory: lets them call MemoryAdminUrl",
        )
        CfnOutput(
            self,
            "AdminBucketName",
            value=self.bucket.bucket_name,
            description="Exports, erasure receipts and logical backups (private, versioned, KMS)",
        )
        CfnOutput(
            self, "DashboardName", value=props.dashboard_name, description="The CloudWatch dashboard of the system"
        )
