"""The one way this app's queues are made (the retain queue, the memory events, each with its dead letters)."""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sqs as sqs
from constructs import Construct

#: SQS's longest retention: messages and dead letters wait two weeks at most.
RETENTION = Duration.days(14)


def encrypted_queue(
    scope: Construct, construct_id: str, *, key: kms.IKey, removal: RemovalPolicy, **options: Any
) -> sqs.Queue:
    """A queue under ``key`` (what it carries is the owner's to protect), TLS only, kept :data:`RETENTION`;
    ``options`` are what the owner's queue has of its own (FIFO, size, visibility, its dead letters)."""
    return sqs.Queue(
        scope,
        construct_id,
        encryption=sqs.QueueEncryption.KMS,
        encryption_master_key=key,
        enforce_ssl=True,
        retention_period=RETENTION,
        removal_policy=removal,
        **options,
    )
