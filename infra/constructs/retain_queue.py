"""RetainQueue: the agent's durable spool in SQS, its dead-letter queue, their customer key and their alarms.

While Hindsight is unreachable the agent sends each undeliverable retain here (``memory_adapter.sqs_spool``) instead
of to the microVM's disk, which AgentCore discards with the session. The replay function (:mod:`retain_replay`)
delivers the queue; what Hindsight refuses for good, and what could not be delivered within the retry window, ends
in the dead-letter queue for an operator to review (``python -m memory_adapter.redrive``).

- Both queues are standard queues encrypted with their own customer-managed key (the messages carry the turns'
  bearer tokens), TLS-only, with the largest message SQS accepts and the longest retention (14 days).
- A message is received at most ``max_receive_count`` times, one visibility timeout apart (six times the function's
  timeout, as AWS advises for event source mappings): about the retain grace window, after which the tokens the
  messages carry could not be delivered anyway. SQS then moves it to the dead-letter queue.
- Alarms (to the deployment's alert topic): any dead letter, and a message older than
  ``oldest_message_alarm_minutes`` (the replay is stalled: Hindsight down, or the function failing).
- Grants: :meth:`grant_send` (the agent: ``sqs:SendMessage`` on the queue and the key actions a producer needs,
  nothing else), :meth:`grant_send_dead_letters` (the function); the event source mapping grants the function's
  consumption.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.config import RetainQueueConfig
from infra.constructs.alerts import watch_queue
from infra.constructs.foundation import Foundation
from infra.constructs.props import raise_if_invalid
from infra.constructs.queues import encrypted_queue
from infra.permissions import SQS_EVENT_SOURCE_ACTIONS, SQS_PRODUCER_KEY_ACTIONS, SQS_SEND_ACTIONS
from memory_adapter.constants import SQS_MAX_MESSAGE_BYTES

__all__ = [
    "MIN_RECEIVE_COUNT",
    "VISIBILITY_TIMEOUT_FACTOR",
    "RetainQueue",
    "RetainQueueProps",
    "max_receive_count",
    "visibility_timeout",
]

#: Fewest receives before SQS gives up on a message, however short the grace window.
MIN_RECEIVE_COUNT = 3
#: AWS's advice for an SQS event source mapping: a visibility timeout of six times the function's timeout.
VISIBILITY_TIMEOUT_FACTOR = 6


def visibility_timeout(config: RetainQueueConfig) -> int:
    """Seconds a received message stays hidden: six times the replay function's timeout."""
    return VISIBILITY_TIMEOUT_FACTOR * config.replay_timeout_seconds


def max_receive_count(grace_seconds: int, visibility_timeout_seconds: int) -> int:
    """Receives that span the retain grace window (each one visibility timeout after the last), at least 3."""
    return max(MIN_RECEIVE_COUNT, math.ceil(grace_seconds / visibility_timeout_seconds))


@dataclass(frozen=True)
class RetainQueueProps:
    """What the retain queue is built from.

    Args:
        config: The ``retain_queue`` section (the replay function's timeout sets the visibility timeout).
        grace_seconds: The retain grace window (``auth.retain_grace_seconds``): the retry window's length.
        removal_policy: What becomes of the queues and their key when the stack is deleted (they hold undelivered
            turns).
        foundation: The alarms' topic.
    """

    config: RetainQueueConfig
    grace_seconds: int
    removal_policy: RemovalPolicy
    foundation: Foundation


class RetainQueue(Construct):
    """Exposes ``queue``, ``dead_letters``, ``key``, ``max_receive_count`` and the two alarms."""

    def __init__(self, scope: Construct, construct_id: str, props: RetainQueueProps) -> None:
        super().__init__(scope, construct_id)
        config, grace_seconds, removal = props.config, props.grace_seconds, props.removal_policy
        raise_if_invalid(
            self.node.path,
            [f"grace_seconds must be positive, got {grace_seconds}"] if grace_seconds <= 0 else [],
        )
        visibility = visibility_timeout(config)
        self.key = kms.Key(
            self,
            "Key",
            description="Encrypts the retain queue and its dead letters (they carry the turns' bearer tokens)",
            enable_key_rotation=True,
            removal_policy=removal,
        )
        self.dead_letters = encrypted_queue(
            self, "DeadLetters", key=self.key, removal=removal, max_message_size_bytes=SQS_MAX_MESSAGE_BYTES
        )
        self.max_receive_count = max_receive_count(grace_seconds, visibility)
        self.queue = encrypted_queue(
            self,
            "Queue",
            key=self.key,
            removal=removal,
            max_message_size_bytes=SQS_MAX_MESSAGE_BYTES,
            visibility_timeout=Duration.seconds(visibility),
            dead_letter_queue=sqs.DeadLetterQueue(max_receive_count=self.max_receive_count, queue=self.dead_letters),
        )
        self.dead_letter_alarm, self.oldest_message_alarm = watch_queue(
            self,
            props.foundation.alerts,
            queue=self.queue,
            dead_letters=self.dead_letters,
            dead_letters_description="Retains Hindsight refused for good, or could not take in time, wait in the "
            "dead-letter queue: review them (python -m memory_adapter.redrive list)",
            oldest_id="OldestMessageAlarm",
            oldest_description=f"A queued retain is older than {config.oldest_message_alarm_minutes} minutes: "
            "Hindsight is unreachable from the replay function, or the function fails",
            oldest_seconds=config.oldest_message_alarm_minutes * 60,
        )

    def grant_send(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` (the agent) send to the queue, and nothing else: no receive, no delete, no DLQ."""
        return self._grant_producer(grantee, self.queue)

    def grant_event_source(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` (the replay function's role, which its event source mapping uses) receive and delete the
        queue's messages: what Lambda documents for an SQS event source, and the queue key's decrypt."""
        self.key.grant_decrypt(grantee)
        return self.queue.grant(grantee, *SQS_EVENT_SOURCE_ACTIONS)

    def grant_send_dead_letters(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` (the replay function) send a refused message, with its reason, to the dead letters."""
        return self._grant_producer(grantee, self.dead_letters)

    def _grant_producer(self, grantee: iam.IGrantable, queue: sqs.Queue) -> iam.Grant:
        # SendMessage to an SSE-KMS queue needs the data key (GenerateDataKey) and, to reuse it, Decrypt.
        self.key.grant(grantee, *SQS_PRODUCER_KEY_ACTIONS)
        return iam.Grant.add_to_principal(
            grantee=grantee, actions=list(SQS_SEND_ACTIONS), resource_arns=[queue.queue_arn]
        )
