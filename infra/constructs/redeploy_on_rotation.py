"""RedeployOnRotation: restart services when something they read once at start has changed.

The Hindsight tasks read the database password and the mirrored signing keys when they start; after Secrets Manager
rotates the login, or the key mirror writes new keys, a function (``infra/functions/redeploy_on_rotation``, outside
the VPC: it calls only the ECS API) forces a new deployment of every service. An alarm fires when it fails.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

from infra.constructs.alerts import Alerts
from infra.constructs.functions import FUNCTIONS_DIR, python_function, settings_code
from infra.constructs.part import HIDDEN_ID, Part
from infra.constructs.props import raise_if_invalid
from infra.functions.redeploy_on_rotation.index import RedeploySettings
from infra.permissions import ECS_REDEPLOY_ACTIONS


@dataclass(frozen=True)
class RestartTrigger:
    """An event after which the services must restart; ``construct_id`` names its EventBridge rule."""

    construct_id: str
    description: str
    pattern: events.EventPattern


@dataclass(frozen=True)
class RedeployProps:
    """What the restarts are built from (the ECS half of the memory service builds it).

    Args:
        services: Every service to restart, in ``cluster``.
        triggers: The events after which they restart.
        logs_key: The key of the function's log group.
        alerts: The topic the failure alarm notifies.
    """

    cluster: ecs.ICluster
    services: Sequence[ecs.BaseService]
    triggers: Sequence[RestartTrigger]
    logs_key: kms.IKey
    alerts: Alerts


class RedeployOnRotation(Construct):
    """Exposes ``function`` and ``failing_alarm``.

    The function is this construct's default child and its rules, log group and alarm sit in a :class:`Part` homed
    in this construct's scope, so every logical id (and the id of each rule's invoke permission, which CDK derives
    from the function's path) is what it was when they were the memory service's own children.
    """

    def __init__(self, scope: Construct, construct_id: str, props: RedeployProps) -> None:
        super().__init__(scope, construct_id)
        services, triggers = props.services, props.triggers
        ids = [t.construct_id for t in triggers]
        raise_if_invalid(
            self.node.path,
            [
                problem
                for problem, bad in (
                    ("services must name at least one service to restart", not services),
                    ("triggers must name at least one event (else nothing ever restarts the services)", not triggers),
                    (f"trigger ids must be distinct, got {ids}", len(set(ids)) != len(ids)),
                )
                if bad
            ],
        )
        parts = Part(self, "Parts", home=scope)
        self.function = python_function(
            self,
            HIDDEN_ID,
            log_scope=parts,
            log_group_id="RedeployLogs",
            source=FUNCTIONS_DIR / "redeploy_on_rotation",
            description="Restarts the Hindsight services after their database secret rotated",
            timeout=Duration.seconds(30),
            logs_key=props.logs_key,
            code=settings_code(FUNCTIONS_DIR / "redeploy_on_rotation"),
            environment=RedeploySettings(
                cluster_arn=props.cluster.cluster_arn, service_arns=tuple(s.service_arn for s in services)
            ).to_env(),
        )
        self.function.add_to_role_policy(
            iam.PolicyStatement(actions=list(ECS_REDEPLOY_ACTIONS), resources=[s.service_arn for s in services])
        )
        for trigger in triggers:
            rule = events.Rule(
                parts, trigger.construct_id, description=trigger.description, event_pattern=trigger.pattern
            )
            rule.add_target(targets.LambdaFunction(self.function, retry_attempts=2))
        self.failing_alarm = props.alerts.watch(
            cloudwatch.Alarm(
                parts,
                "RedeployFailing",
                alarm_description="Restarting the Hindsight services after a credential or key change failed",
                metric=self.function.metric_errors(period=Duration.minutes(5)),
                threshold=1,
                evaluation_periods=1,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            )
        )
