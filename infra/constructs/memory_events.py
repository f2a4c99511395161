"""MemoryEvents: the memory event stream (issue 24): an SQS FIFO queue, an EventBridge pipe, a bus, its archive.

The isolation extension inside every Hindsight task builds one event per change to what a bank holds
(``hindsight_isolation.events``, docs/events.md) and sends it to :attr:`queue`, a FIFO queue whose message group is
the bank: SQS hands one bank's events out in order, and the pipe keeps that order (a FIFO source is read one
message group at a time) while it puts them on :attr:`bus` with the source ``agentcore.memory`` and the event's
``memory.<change>`` as detail-type. Delivery is at least once: a batch the bus refuses comes back after the
visibility timeout, :data:`MAX_RECEIVE_COUNT` times, then waits in :attr:`dead_letters` (FIFO too) behind an alarm.

- :attr:`key` encrypts both queues; with ``include_text`` (events carry memory text) the bus and its archive too.
- The bus's policy lets this account's principals put events and nobody else; IAM inside the account decides who
  (the pipe's role, by :meth:`~aws_cdk.aws_events.EventBus.grant_put_events_to`).
- :attr:`archive` keeps every event for replay (``aws events start-replay``).
- The example rule sends every event to :attr:`audit_log` (CloudWatch Logs, the logs key), searchable with Logs
  Insights; customers add their own rules to the bus (docs/events.md).
- Grants: :meth:`grant_send` (each Hindsight task role or pod role: ``sqs:SendMessage`` on the queue and the key
  actions a producer needs, nothing else), from any later stack, through SSM handoffs (so turning events off later
  never blocks on a CloudFormation export).
"""

from __future__ import annotations

from dataclasses import dataclass

import jsii
from aws_cdk import ArnFormat, Duration, RemovalPolicy, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_pipes as pipes
from aws_cdk import aws_sqs as sqs
from aws_cdk.interfaces import aws_events as events_refs
from constructs import Construct

from hindsight_isolation import settings as iso
from hindsight_isolation.events import EVENT_SOURCE
from infra.config import EventsConfig
from infra.constructs.alerts import Alerts, watch_queue
from infra.constructs.creation import instance_id
from infra.constructs.foundation import Foundation
from infra.constructs.handoff import Handoff
from infra.constructs.log_retention import retention
from infra.constructs.queues import encrypted_queue
from infra.permissions import (
    EVENTS_KEY_SERVICE_ACTIONS,
    LOG_DELIVERY_ACTIONS,
    PIPES_SQS_SOURCE_ACTIONS,
    SQS_PRODUCER_KEY_ACTIONS,
    SQS_SEND_ACTIONS,
)

__all__ = ["AUDIT_RULE_NAME", "MAX_RECEIVE_COUNT", "VISIBILITY_TIMEOUT", "MemoryEvents"]

#: How long a batch the pipe could not deliver stays hidden before the pipe tries again.
VISIBILITY_TIMEOUT = Duration.minutes(5)
#: Deliveries before a message goes to the dead letters: about an hour of retries (FIFO: the bank's later events
#: wait behind it meanwhile, which keeps them in order).
MAX_RECEIVE_COUNT = 12
#: Largest batch SQS hands a pipe from a FIFO queue.
BATCH_SIZE = 10
#: The pipe turns each message (``{"detail-type", "detail"}``, what ``QueueSink`` sends) into one bus event.
PIPE_INPUT_TEMPLATE = "<$.body.detail>"
PIPE_DETAIL_TYPE = "$.body.detail-type"
PIPE_TIME = "$.body.detail.time"
#: The example rule's name on the bus: its ARN, which the audit log group's policy names, follows from it.
AUDIT_RULE_NAME = "memory-events-audit"


#: The extension's settings this construct sets in the Hindsight tasks (hindsight_isolation.settings names them).
ENV_EVENTS_QUEUE_URL = iso.tenant_env("events_queue_url")
ENV_EVENTS_INCLUDE_TEXT = iso.tenant_env("events_include_text")


@jsii.implements(events.IRuleTarget)
class _LogGroupTarget:
    """A rule target writing to a log group whose own resource policy lets the rule write (the stock target installs
    an account-level Logs policy with a custom-resource function instead)."""

    def __init__(self, log_group: logs.ILogGroup) -> None:
        self._arn = log_group.log_group_arn

    def bind(self, rule: events_refs.IRuleRef, id: str | None = None) -> events.RuleTargetConfig:
        return events.RuleTargetConfig(arn=self._arn)


@dataclass(frozen=True)
class MemoryEventsProps:
    """What the memory event stream is built from.

    Args:
        config: The ``events`` section (``include_text``, the archive's and the audit log's retention).
        foundation: The audit log's key and the alarms' topic.
        removal_policy: What becomes of what holds events (key, queues, archive, audit log) when the stack is
            deleted.
        parameter_prefix: Where the handoffs of the queue and key are published for later stacks.
    """

    config: EventsConfig
    foundation: Foundation
    removal_policy: RemovalPolicy
    parameter_prefix: str


class MemoryEvents(Construct):
    """Exposes ``key``, ``queue``, ``dead_letters``, ``bus``, ``archive``, ``pipe``, ``audit_log``, ``audit_rule``
    and ``alarms`` (the dead letters', the stalled queue's)."""

    def __init__(self, scope: Construct, construct_id: str, props: MemoryEventsProps) -> None:
        super().__init__(scope, construct_id)
        config, removal, parameter_prefix = props.config, props.removal_policy, props.parameter_prefix
        stack = Stack.of(self)
        self.include_text = config.include_text
        self.key = kms.Key(
            self,
            "Key",
            description="Encrypts the memory events: their queue and dead letters (and, with text, bus and archive)",
            enable_key_rotation=True,
            removal_policy=removal,
        )
        if config.include_text:
            # EventBridge encrypts the bus and its archive with it, for this account's resources only (a statement
            # bound to the bus's ARN is impossible: the bus's name holds the key's id).
            self.key.add_to_resource_policy(
                iam.PolicyStatement(
                    principals=[iam.ServicePrincipal("events.amazonaws.com")],
                    actions=list(EVENTS_KEY_SERVICE_ACTIONS),
                    resources=["*"],  # in a key policy, "*" means this key
                    conditions={"StringEquals": {"aws:SourceAccount": stack.account}},
                )
            )
        #: Ends the names of what outlives the events being turned off (bus, audit log): the events key's id, new
        #: each time events are turned on, so turning them on again never meets the names of the kept ones.
        self.instance = instance_id(self.key.key_id)
        self.dead_letters = self._fifo_queue("DeadLetters", removal)
        self.queue = self._fifo_queue(
            "Queue",
            removal,
            dead_letter_queue=sqs.DeadLetterQueue(max_receive_count=MAX_RECEIVE_COUNT, queue=self.dead_letters),
        )
        self.bus = events.EventBus(
            self,
            "Bus",
            event_bus_name=f"{stack.stack_name}-memory-events-{self.instance}",
            description="Memory events: one per change to what a bank holds (docs/events.md)",
        )
        if config.include_text:
            # Set on the L1, as for the archive: the L2's kms_key writes the bus's ARN, which holds the key's id
            # (self.instance), into the key policy (a cycle); the key policy's EventBridge statement covers the bus.
            cfn_bus = self.bus.node.default_child
            assert isinstance(cfn_bus, events.CfnEventBus)
            cfn_bus.kms_key_identifier = self.key.key_arn
        self.bus.apply_removal_policy(removal)
        # The L1 (the L2's add_to_resource_policy sets a deprecated property, which synthesis warns about).
        events.CfnEventBusPolicy(
            self,
            "BusPolicy",
            event_bus_name=self.bus.event_bus_name,
            statement_id="ThisAccountOnly",
            statement=iam.PolicyStatement(
                principals=[iam.AccountRootPrincipal()],
                actions=["events:PutEvents"],
                resources=[self.bus.event_bus_arn],
            ).to_statement_json(),
        )
        self.archive = events.Archive(
            self,
            "Archive",
            source_event_bus=self.bus,
            event_pattern=events.EventPattern(source=[EVENT_SOURCE]),
            description="Every memory event, for replay",
            retention=Duration.days(config.archive_retention_days) if config.archive_retention_days else None,
        )
        if config.include_text:
            # Set on the L1: the L2's kms_key writes the bus's ARN into the key policy, and the bus names the key
            # (a cycle); the key policy's EventBridge statement above covers the archive.
            cfn_archive = self.archive.node.default_child
            assert isinstance(cfn_archive, events.CfnArchive)
            cfn_archive.kms_key_identifier = self.key.key_arn
        self.archive.apply_removal_policy(removal)
        self.pipe = self._pipe()
        self.audit_log, self.audit_rule = self._audit_rule(config, props.foundation.logs_key, removal)
        self.alarms = self._alarms(props.foundation.alerts)
        self._queue_url = Handoff(
            self,
            "QueueUrlHandoff",
            parameter_name=f"{parameter_prefix}/events/queue-url",
            value=self.queue.queue_url,
            description="The memory events queue the Hindsight tasks send to",
        )
        self._queue_arn = Handoff(
            self,
            "QueueArnHandoff",
            parameter_name=f"{parameter_prefix}/events/queue-arn",
            value=self.queue.queue_arn,
            description="The memory events queue's ARN (the Hindsight roles' grant)",
        )
        # The dashboard (-Operations) shows the alarms by ARN, not by export: turning events off must not block on it.
        self._alarm_arns = [
            Handoff(
                self,
                f"{alarm.node.id}Handoff",
                parameter_name=f"{parameter_prefix}/events/alarm-{i}-arn",
                value=alarm.alarm_arn,
                description="A memory events alarm, for the operations dashboard",
            )
            for i, alarm in enumerate(self.alarms, 1)
        ]
        self._key_arn = Handoff(
            self,
            "KeyArnHandoff",
            parameter_name=f"{parameter_prefix}/events/key-arn",
            value=self.key.key_arn,
            description="The memory events key's ARN (the Hindsight roles' grant)",
        )

    def _fifo_queue(
        self, construct_id: str, removal: RemovalPolicy, *, dead_letter_queue: sqs.DeadLetterQueue | None = None
    ) -> sqs.Queue:
        """A FIFO queue under the events key; the sender sets each message's deduplication id (the event id), and
        throughput is per message group (per bank: high-throughput FIFO)."""
        return encrypted_queue(
            self,
            construct_id,
            key=self.key,
            removal=removal,
            fifo=True,
            content_based_deduplication=False,
            deduplication_scope=sqs.DeduplicationScope.MESSAGE_GROUP,
            fifo_throughput_limit=sqs.FifoThroughputLimit.PER_MESSAGE_GROUP_ID,
            visibility_timeout=VISIBILITY_TIMEOUT,
            dead_letter_queue=dead_letter_queue,
        )

    def _pipe(self) -> pipes.CfnPipe:
        """Queue -> bus: the pipe's role reads and deletes the queue's messages (what EventBridge Pipes documents for
        an SQS source, and the queue key's decrypt) and puts events on this bus only."""
        role = iam.Role(
            self,
            "PipeRole",
            assumed_by=iam.ServicePrincipal(
                "pipes.amazonaws.com", conditions={"StringEquals": {"aws:SourceAccount": Stack.of(self).account}}
            ),
            description="The memory events pipe: from its queue to its bus",
        )
        self.key.grant_decrypt(role)
        self.queue.grant(role, *PIPES_SQS_SOURCE_ACTIONS)
        self.bus.grant_put_events_to(role)
        pipe = pipes.CfnPipe(
            self,
            "Pipe",
            role_arn=role.role_arn,
            description="Memory events: queue (FIFO, grouped by bank) to the bus, in order per bank",
            source=self.queue.queue_arn,
            source_parameters=pipes.CfnPipe.PipeSourceParametersProperty(
                sqs_queue_parameters=pipes.CfnPipe.PipeSourceSqsQueueParametersProperty(batch_size=BATCH_SIZE)
            ),
            target=self.bus.event_bus_arn,
            target_parameters=pipes.CfnPipe.PipeTargetParametersProperty(
                input_template=PIPE_INPUT_TEMPLATE,
                event_bridge_event_bus_parameters=pipes.CfnPipe.PipeTargetEventBridgeEventBusParametersProperty(
                    source=EVENT_SOURCE, detail_type=PIPE_DETAIL_TYPE, time=PIPE_TIME
                ),
            ),
        )
        # The role's policy must exist before the pipe first polls the queue.
        pipe.node.add_dependency(role)
        return pipe

    def _audit_rule(
        self, config: EventsConfig, logs_key: kms.IKey, removal: RemovalPolicy
    ) -> tuple[logs.LogGroup, events.Rule]:
        """The example rule: every memory event into a log group (EventBridge requires names under /aws/events/).

        The group carries its own resource policy (``ResourcePolicyDocument``: one per group, not one of the ten
        account-level Logs policies an account may have, which ``AWS::Logs::ResourcePolicy`` would take), letting
        EventBridge write for this rule only: the rule's ARN follows from its fixed name on this bus, so neither
        refers to the other."""
        stack = Stack.of(self)
        name = f"/aws/events/{stack.stack_name}/memory-events-{self.instance}"
        rule_arn = stack.format_arn(
            service="events",
            resource="rule",
            resource_name=f"{self.bus.event_bus_name}/{AUDIT_RULE_NAME}",
            arn_format=ArnFormat.SLASH_RESOURCE_NAME,
        )
        group_arn = stack.format_arn(
            service="logs", resource="log-group", resource_name=f"{name}:*", arn_format=ArnFormat.COLON_RESOURCE_NAME
        )
        log_group = logs.LogGroup(
            self,
            "AuditLog",
            log_group_name=name,
            retention=retention(config.audit_log_retention_days),
            encryption_key=logs_key,
            removal_policy=removal,
        )
        cfn_group = log_group.node.default_child
        assert isinstance(cfn_group, logs.CfnLogGroup)
        cfn_group.resource_policy_document = iam.PolicyDocument(
            statements=[
                iam.PolicyStatement(
                    principals=[iam.ServicePrincipal("events.amazonaws.com")],
                    actions=list(LOG_DELIVERY_ACTIONS),
                    resources=[group_arn],
                    conditions={"ArnEquals": {"aws:SourceArn": rule_arn}},
                )
            ]
        ).to_json()
        rule = events.Rule(
            self,
            "AuditRule",
            event_bus=self.bus,
            rule_name=AUDIT_RULE_NAME,
            description="Example rule: every memory event into the audit log group",
            event_pattern=events.EventPattern(source=[EVENT_SOURCE]),
            targets=[_LogGroupTarget(log_group)],
        )
        return log_group, rule

    def _alarms(self, alerts: Alerts) -> list[cloudwatch.Alarm]:
        dead, stalled = watch_queue(
            self,
            alerts,
            queue=self.queue,
            dead_letters=self.dead_letters,
            dead_letters_description="Memory events the pipe could not put on the bus for an hour wait in the "
            "dead-letter queue (later events of their banks went on): docs/events.md, redrive",
            oldest_id="OldestEventAlarm",
            oldest_description="A memory event has waited in its queue for 15 minutes: the pipe is stopped or "
            "the bus refuses it (see the pipe's state and the dead letters)",
            oldest_seconds=15 * 60,
        )
        return [dead, stalled]

    def alarms_in(self, scope: Construct) -> list[cloudwatch.IAlarm]:
        """:attr:`alarms` as scope's stack sees them (the dashboard's alarm widget)."""
        return [
            cloudwatch.Alarm.from_alarm_arn(scope, f"MemoryEvents{alarm.node.id}", handoff.value_in(scope))
            for alarm, handoff in zip(self.alarms, self._alarm_arns, strict=True)
        ]

    def environment_in(self, scope: Construct) -> dict[str, str]:
        """What the Hindsight tasks in scope's stack add to their environment: the queue's URL (and the text
        switch, when on)."""
        env = {ENV_EVENTS_QUEUE_URL: self._queue_url.value_in(scope)}
        if self.include_text:
            env[ENV_EVENTS_INCLUDE_TEXT] = "true"
        return env

    def grant_send(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` (a Hindsight task or pod role) send events to the queue, and nothing else: no receive, no
        delete, no dead letters; the key only for what a producer of an SSE-KMS queue needs. Both ARNs come by
        handoff, in grantee's account and region whatever the parameters say (:meth:`Handoff.arn_in`)."""
        scope = grantee if isinstance(grantee, Construct) else self
        iam.Grant.add_to_principal(
            grantee=grantee,
            actions=list(SQS_PRODUCER_KEY_ACTIONS),
            resource_arns=[self._key_arn.arn_in(scope, "kms")],
        )
        return iam.Grant.add_to_principal(
            grantee=grantee, actions=list(SQS_SEND_ACTIONS), resource_arns=[self._queue_arn.arn_in(scope, "sqs")]
        )
