"""Alerts: the one SNS topic every alarm of the deployment notifies (KMS-encrypted), with an optional e-mail."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct

#: What CloudWatch needs on the topic's key to publish an alarm into an encrypted topic (EventBridge too).
CLOUDWATCH_PUBLISH_KEY_ACTIONS = ("kms:Decrypt", "kms:GenerateDataKey*")
#: The services that publish into the topic: alarms (CloudWatch) and routed events (EventBridge, :meth:`route`).
PUBLISHERS = ("cloudwatch.amazonaws.com", "events.amazonaws.com")


class Alerts(Construct):
    """Exposes ``topic`` and ``action``; ``watch(alarm)`` makes an alarm notify the topic, ``route(rule)`` an
    EventBridge rule (for failures that are events, not metrics)."""

    def __init__(self, scope: Construct, construct_id: str, *, email: str | None) -> None:
        super().__init__(scope, construct_id)
        self.key = kms.Key(
            self,
            "Key",
            description="Encrypts the deployment's alarm notifications",
            enable_key_rotation=True,
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.ServicePrincipal(service) for service in PUBLISHERS],
                actions=list(CLOUDWATCH_PUBLISH_KEY_ACTIONS),
                resources=["*"],  # in a key policy, "*" means this key
            )
        )
        self.topic = sns.Topic(self, "Topic", display_name="Hindsight memory alarms", master_key=self.key)
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                effect=iam.Effect.DENY,
                principals=[iam.AnyPrincipal()],
                actions=["sns:Publish"],
                resources=[self.topic.topic_arn],
                conditions={"Bool": {"aws:SecureTransport": "false"}},
            )
        )
        if email is not None:
            self.topic.add_subscription(subscriptions.EmailSubscription(email))
        self.action: cloudwatch.IAlarmAction = cw_actions.SnsAction(self.topic)

    def watch(self, alarm: cloudwatch.Alarm) -> cloudwatch.Alarm:
        """Notify the topic when alarm fires and when it recovers."""
        alarm.add_alarm_action(self.action)
        alarm.add_ok_action(self.action)
        return alarm

    def alarm(
        self,
        scope: Construct,
        construct_id: str,
        *,
        description: str,
        metric: cloudwatch.IMetric,
        threshold: float = 1,
        periods: int = 1,
        comparison: cloudwatch.ComparisonOperator = cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    ) -> cloudwatch.Alarm:
        """An alarm in ``scope`` that notifies the topic: by default, any of ``metric`` in one period. No data is
        not a breach (an idle queue or function sends none)."""
        return self.watch(
            cloudwatch.Alarm(
                scope,
                construct_id,
                alarm_description=description,
                metric=metric,
                threshold=threshold,
                evaluation_periods=periods,
                comparison_operator=comparison,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            )
        )

    def route(self, rule: events.Rule) -> events.Rule:
        """Send the events rule matches to the topic (the topic's policy admits EventBridge; no reference to the
        rule's stack is written into this one)."""
        rule.add_target(targets.SnsTopic(self.topic))
        return rule


def watch_queue(
    scope: Construct,
    alerts: Alerts,
    *,
    queue: sqs.IQueue,
    dead_letters: sqs.IQueue,
    dead_letters_description: str,
    oldest_id: str,
    oldest_description: str,
    oldest_seconds: int,
) -> tuple[cloudwatch.Alarm, cloudwatch.Alarm]:
    """The two alarms every queue of ours has, both notifying ``alerts``: anything in its dead letters
    (``DeadLettersAlarm``), and its oldest message waiting longer than ``oldest_seconds`` (the consumer is stalled)."""
    period = Duration.minutes(5)
    dead = alerts.alarm(
        scope,
        "DeadLettersAlarm",
        description=dead_letters_description,
        metric=dead_letters.metric_approximate_number_of_messages_visible(period=period, statistic="Maximum"),
    )
    oldest = alerts.alarm(
        scope,
        oldest_id,
        description=oldest_description,
        metric=queue.metric_approximate_age_of_oldest_message(period=period, statistic="Maximum"),
        threshold=oldest_seconds,
        comparison=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    )
    return dead, oldest
