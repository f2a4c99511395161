"""DatabaseBackupPlan: an AWS Backup plan for Hindsight's database, beside RDS's own automated backups.

RDS keeps automated backups (point-in-time restore) for ``database.backup_retention_days`` (at most 35 days). The
plan adds snapshots on ``database.backup_plan_schedule`` kept ``database.backup_plan_retention_days`` in a vault of
its own (its own customer-managed key; retained with its recovery points), which AWS Backup's reports, vault locks
and cross-account copies can build on. The database's snapshots stay encrypted with the database's key. An alarm
tells the alerts topic when a backup job of the vault fails or is aborted (it could not start in its window).

It lives in the ``-Data`` stack with the database it protects: the plan's lifecycle is the data's.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_backup as backup
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_events as events
from aws_cdk import aws_kms as kms
from constructs import Construct

from infra.config import DatabaseConfig
from infra.constructs.creation import creation_id
from infra.constructs.database import VectorDatabase
from infra.constructs.foundation import Foundation
from infra.constructs.props import raise_if_any

#: How soon a scheduled job must start, and finish, before AWS Backup gives up (it then counts as aborted/failed).
START_WINDOW = Duration.hours(1)
COMPLETION_WINDOW = Duration.hours(8)
#: AWS Backup's metrics of a vault's jobs (namespace ``AWS/Backup``, dimension ``BackupVaultName``).
FAILED_JOBS_METRICS = ("NumberOfBackupJobsFailed", "NumberOfBackupJobsAborted")


@dataclass(frozen=True)
class DatabaseBackupProps:
    """What the backup plan is built from: the database section (``backup_plan_schedule``,
    ``backup_plan_retention_days``), the database it selects, and the foundation (its alarm's topic)."""

    config: DatabaseConfig
    database: VectorDatabase
    foundation: Foundation


class DatabaseBackupPlan(Construct):
    """Exposes ``key``, ``vault``, ``plan``, ``selection`` and ``failed_alarm``."""

    def __init__(self, scope: Construct, construct_id: str, props: DatabaseBackupProps) -> None:
        super().__init__(scope, construct_id)
        schedule, retention_days = props.config.backup_plan_schedule, props.config.backup_plan_retention_days
        raise_if_any(
            self.node.path,
            (f"schedule must be a cron(...) expression, got {schedule!r}", not schedule.startswith("cron(")),
            (f"retention_days must be at least 1, got {retention_days}", retention_days < 1),
        )
        self.key = kms.Key(
            self,
            "Key",
            description="AWS Backup vault of the Hindsight database",
            enable_key_rotation=True,
            removal_policy=RemovalPolicy.RETAIN,
        )
        # Named per stack creation: the vault is retained, so a deployment created again after cdk destroy would
        # otherwise fail on the old vault's name.
        self.vault = backup.BackupVault(
            self,
            "Vault",
            backup_vault_name=f"{Stack.of(self).stack_name[:30]}-Vault-{creation_id()}",
            encryption_key=self.key,
            removal_policy=RemovalPolicy.RETAIN,  # it holds recovery points; AWS Backup refuses to delete it anyway
        )
        # Named after the stack (prefix and env): a plan's name is unique per account and region, and the L2 would
        # name every deployment's plan "Plan" (aws/aws-cdk#38318), so a second deployment would fail.
        self.plan = backup.BackupPlan(
            self, "Plan", backup_plan_name=f"{Stack.of(self).stack_name}-Database", backup_vault=self.vault
        )
        self.plan.add_rule(
            backup.BackupPlanRule(
                rule_name="Database",
                schedule_expression=events.Schedule.expression(schedule),
                start_window=START_WINDOW,
                completion_window=COMPLETION_WINDOW,
                delete_after=Duration.days(retention_days),
            )
        )
        self.selection = self.plan.add_selection("Database", resources=[props.database.backup_resource()])
        failed = cloudwatch.MathExpression(
            # FILL: AWS Backup publishes a metric only when it counts something; a sum with one side missing is
            # missing too (and missing data does not breach), so an unfilled sum would never fire.
            expression=" + ".join(f"FILL(m{i}, 0)" for i in range(len(FAILED_JOBS_METRICS))),
            using_metrics={
                f"m{i}": cloudwatch.Metric(
                    namespace="AWS/Backup",
                    metric_name=name,
                    dimensions_map={"BackupVaultName": self.vault.backup_vault_name},
                    statistic="Sum",
                    period=Duration.hours(1),
                )
                for i, name in enumerate(FAILED_JOBS_METRICS)
            },
            label="Failed or aborted backup jobs",
            period=Duration.hours(1),
        )
        self.failed_alarm = props.foundation.alerts.alarm(
            self,
            "FailedAlarm",
            description="An AWS Backup job of the Hindsight database failed or could not start: check the "
            "vault's jobs in the AWS Backup console",
            metric=failed,
        )
