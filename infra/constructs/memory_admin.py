"""MemoryAdmin: the memory administration functions (``infra/functions/memory_admin``) and their schedules.

Three functions of one bundle (``make build``: ``build/memory_admin``, the handlers and Powertools) on their own
version of the memory adapter layer, arm64, inside the VPC, each with its own role holding the **operator key**
(never the agent's):

- ``function``: every administrative action behind an IAM-authorized function URL (``python -m
  memory_adapter.admin --function-url``); the caller's principal is the one AWS verified for the URL request.
  ``operator_policy`` lets the roles it is attached to call it (both actions a function URL needs since October
  2025; ``lambda:InvokeFunction`` only through the URL, so no direct invoke can hand the function a forged caller);
- ``expiry_function``: expiry by kind on ``operations.expiry_schedule``, one batch per run, dry-run with
  ``operations.expiry_dry_run``; emits ``MemoriesExpired`` (and per kind), ``MemoriesDue``, ``ExpiryMoreDue``,
  ``ExpiryBanksFailed`` (banks it skipped because Hindsight failed on them);
- ``backup_function``: every bank's transfer archive and a manifest on ``operations.backup_schedule``
  (``BanksBackedUp``; ``BanksBackupFailed``: banks it skipped because their export failed).

The URL and backup functions may write to the administration bucket; the expiry function touches no bucket. The
security group reaches only Hindsight's load balancer and the VPC endpoints (and the S3 gateway). Their log groups
are the administration's audit trail (one JSON line per action with the caller's principal), kept
``operations.audit_log_retention_days``. Alarms (to the alerts topic): the URL function failing, the expiry or the
backup failing, an expiry or a backup that skipped banks (``ExpiryIncomplete``, ``BackupIncomplete``), and an expiry
that falls behind (every run for a day left due memories).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_lambda_powertools.shared.constants import METRICS_NAMESPACE_ENV
from constructs import Construct

from infra.config import OperationsConfig
from infra.constructs.admin_bucket import AdminBucket
from infra.constructs.foundation import Foundation
from infra.constructs.functions import python_function
from infra.constructs.log_retention import retention
from infra.constructs.memory_endpoint import MemoryEndpoint
from infra.constructs.memory_layer import RUNTIME as LAYER_RUNTIME
from infra.constructs.memory_layer import adapter_layer_version
from infra.functions.memory_admin import index
from infra.permissions import FUNCTION_INVOKE_ACTION, FUNCTION_URL_INVOKE_ACTION
from memory_adapter.constants import METRICS_NAMESPACE
from memory_adapter.kinds import RetentionRules

#: Lambda's longest run: a backup of every bank, or an export of a whole tenant, fits in one invocation.
TIMEOUT = Duration.minutes(15)
#: How often the failure alarms look (a scheduled run fails at most once per schedule period).
ALARM_PERIOD = Duration.hours(1)
#: The expiry is "behind" when every run of this many hours left due memories.
EXPIRY_BEHIND_HOURS = 24


@dataclass(frozen=True)
class MemoryAdminProps:
    """What the administration functions are built from.

    Args:
        config: The ``operations`` section.
        retention_rules: How long each kind of memory is kept (``retention.rules``), for the expiry.
        recall_settings: The agent's recall budget, block size and candidates (``AgentConfig.recall_settings``):
            the operator's recall uses them too.
        layer_path: The memory adapter layer's build (``layer.path``): the functions run on their own version.
        foundation: Their network, logs key and alarm topic.
        memory: The Hindsight they administer (with the operator key).
        bucket: Where exports, erasure receipts and logical backups go.
        logical_backup: Whether the scheduled logical backup exists (not with ``hindsight.mode=external``: the
            server's owner backs its data up).
    """

    config: OperationsConfig
    retention_rules: RetentionRules
    recall_settings: Mapping[str, Any]
    layer_path: Path
    foundation: Foundation
    memory: MemoryEndpoint
    bucket: AdminBucket
    logical_backup: bool = True


class MemoryAdmin(Construct):
    """Exposes ``layer``, ``security_group``, ``connections``, ``function``, ``function_url``, ``operator_policy``,
    ``expiry_function``, ``backup_function``, ``expiry_schedule``, ``backup_schedule``, ``environment``, ``alarms``
    and ``metric(name)`` (the functions' own metrics, in the agent's namespace
    :data:`~memory_adapter.constants.METRICS_NAMESPACE`, so one dashboard shows both)."""

    def __init__(self, scope: Construct, construct_id: str, props: MemoryAdminProps) -> None:
        super().__init__(scope, construct_id)
        config, memory, bucket = props.config, props.memory, props.bucket
        network, logs_key, alerts = props.foundation.network, props.foundation.logs_key, props.foundation.alerts
        self._alerts = alerts
        self.layer = adapter_layer_version(self, "MemoryAdapterLayer", path=props.layer_path)
        self.security_group = network.workload_security_group(
            self,
            "SecurityGroup",
            description="Memory admin functions: to the Hindsight load balancer and AWS endpoints only",
        )
        self.connections = self.security_group.connections
        memory.allow_from(self)
        #: Exactly the variables ``index.FunctionSettings`` reads, plus Powertools' namespace.
        self.environment = {
            **index.FunctionSettings(
                hindsight_api_url=memory.url_in(self),
                ca_bundle=memory.ca_bundle,
                operator_key_secret_arn=memory.operator_key_secret_arn,
                bucket=bucket.bucket_name,
                bucket_key_arn=bucket.key.key_arn,
                rules=props.retention_rules,
                expiry_batch_size=config.expiry_batch_size,
                expiry_dry_run=config.expiry_dry_run,
                **props.recall_settings,
            ).to_env(),
            METRICS_NAMESPACE_ENV: METRICS_NAMESPACE,
        }

        def function(construct_id: str, handler: str, description: str, memory_size: int) -> lambda_.Function:
            fn = python_function(
                self,
                construct_id,
                log_group_id=f"{construct_id}Logs",
                source=config.admin_function_path,
                handler=handler,
                layers=[self.layer],
                runtime=LAYER_RUNTIME,
                description=description,
                timeout=TIMEOUT,
                memory_size=memory_size,
                logs_key=logs_key,
                log_retention=retention(config.audit_log_retention_days),
                environment=self.environment,
                vpc=network.vpc,
                vpc_subnets=network.subnets,
                security_groups=[self.security_group],
            )
            memory.grant_operator_key_read(fn)
            return fn

        self.function = function(
            "Function",
            "index.handler",
            "Memory administration (operator key): banks, export, forget, expire, backup; IAM function URL",
            1024,
        )
        bucket.grant_write(self.function)
        self.function_url = self.function.add_function_url(auth_type=lambda_.FunctionUrlAuthType.AWS_IAM)
        self.operator_policy = iam.ManagedPolicy(
            self,
            "OperatorPolicy",
            description="Call the memory administration function URL (attach to the roles of memory operators)",
            statements=[
                iam.PolicyStatement(
                    actions=[FUNCTION_URL_INVOKE_ACTION],
                    resources=[self.function.function_arn],
                    conditions={"StringEquals": {"lambda:FunctionUrlAuthType": "AWS_IAM"}},
                ),
                iam.PolicyStatement(
                    actions=[FUNCTION_INVOKE_ACTION],
                    resources=[self.function.function_arn],
                    conditions={"Bool": {"lambda:InvokedViaFunctionUrl": "true"}},
                ),
            ],
        )
        self.expiry_function = function(
            "Expiry", "index.expire_handler", "Scheduled expiry of memories past their kind's retention", 512
        )
        #: The scheduled logical backup; none with hindsight.mode=external (the server's owner backs its data up).
        self.backup_function: lambda_.Function | None = None
        self.backup_schedule: events.Rule | None = None
        if props.logical_backup:
            self.backup_function = function(
                "Backup",
                "index.backup_handler",
                "Scheduled logical backup of every bank to the administration bucket",
                1024,
            )
            bucket.grant_write(self.backup_function)
        self.expiry_schedule = events.Rule(
            self,
            "ExpirySchedule",
            description="Expire memories past their kind's retention (one batch per run)",
            schedule=events.Schedule.expression(config.expiry_schedule),
        )
        self.expiry_schedule.add_target(targets.LambdaFunction(self.expiry_function, retry_attempts=2))
        if self.backup_function is not None:
            self.backup_schedule = events.Rule(
                self,
                "BackupSchedule",
                description="Back up every bank (transfer archives and a manifest) to the administration bucket",
                schedule=events.Schedule.expression(config.backup_schedule),
            )
            self.backup_schedule.add_target(targets.LambdaFunction(self.backup_function, retry_attempts=1))
        self.alarms = [
            self._errors_alarm(
                "FunctionFailing",
                self.function,
                "The memory administration function failed a request outright (timeout, crash, configuration): "
                "read its log group",
            ),
            self._errors_alarm(
                "ExpiryFailing",
                self.expiry_function,
                "The scheduled expiry failed: memories past their retention are not being deleted",
            ),
        ]
        if self.backup_function is not None:
            self.alarms.append(
                self._errors_alarm(
                    "BackupFailing",
                    self.backup_function,
                    "The scheduled logical backup failed: no new backup of the banks in the administration bucket",
                )
            )
            self.alarms.append(
                alerts.alarm(
                    self,
                    "BackupIncomplete",
                    description="The scheduled logical backup skipped banks whose export failed (the others are "
                    "backed up): its manifest's 'failed' names each with its error; see docs/operating.md, "
                    "'A partial backup'",
                    metric=self.metric(index.METRIC_BACKUP_FAILED, period=ALARM_PERIOD, statistic="Sum"),
                )
            )
        self.alarms.append(
            alerts.alarm(
                self,
                "ExpiryIncomplete",
                description="The scheduled expiry skipped banks Hindsight failed to list or delete from (the others "
                "expired; the next run tries them again): its log's expiry.bank_failed lines name each by hash",
                metric=self.metric(index.METRIC_EXPIRY_FAILED, period=ALARM_PERIOD, statistic="Sum"),
            )
        )
        behind_period = Duration.hours(6)
        self.alarms.append(
            alerts.alarm(
                self,
                "ExpiryBehind",
                description=f"Every expiry run of the last {EXPIRY_BEHIND_HOURS} hours left memories due: "
                "raise operations.expiry_batch_size or run the expiry more often (operations.expiry_schedule)",
                metric=self.metric(index.METRIC_MORE_DUE, period=behind_period, statistic="Minimum"),
                periods=EXPIRY_BEHIND_HOURS // 6,
            )
        )

    @property
    def url(self) -> str:
        """The function URL (``python -m memory_adapter.admin --function-url``)."""
        return self.function_url.url

    @property
    def functions(self) -> list[lambda_.Function]:
        """The functions: URL, expiry and (unless external) backup."""
        return [f for f in (self.function, self.expiry_function, self.backup_function) if f is not None]

    def metric(self, metric_name: str, **props: object) -> cloudwatch.Metric:
        """One of the functions' own metrics (``index.METRIC_*``; Powertools' ``service`` dimension)."""
        return cloudwatch.Metric(
            namespace=METRICS_NAMESPACE,
            metric_name=metric_name,
            dimensions_map={"service": index.SERVICE},
            **props,  # type: ignore[arg-type]
        )

    def _errors_alarm(self, construct_id: str, function: lambda_.Function, description: str) -> cloudwatch.Alarm:
        return self._alerts.alarm(
            self,
            construct_id,
            description=description,
            metric=function.metric_errors(period=ALARM_PERIOD, statistic="Sum"),
        )
