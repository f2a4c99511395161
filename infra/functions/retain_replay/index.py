"""Deliver the retain queue to Hindsight: the consumer of the agent's durable spool.

Runs in the VPC (it reaches Hindsight's internal load balancer, and SQS through the interface endpoint), on arm64,
with ``memory_adapter`` from the memory adapter layer. The queue triggers it with partial batch failures
(``ReportBatchItemFailures``) through Powertools' ``BatchProcessor``: each message is delivered with its own
credential, or moved to the dead-letter queue with the reason, or (Hindsight unavailable) reported as failed alone and
received again later. What happens to a message is :mod:`memory_adapter.queue_replay`; this module is the wiring.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from memory_adapter.constants import METRICS_NAMESPACE
from memory_adapter.queue_replay import QueueReplayer, ReplaySettings
from memory_adapter.sqs_codec import QueueMessage

__all__ = ["handler", "make_handler"]

#: Kept back from the invocation's remaining time when deciding whether one more delivery fits.
SAFETY_MARGIN_S = 2.0

logger = Logger()
#: Without the stack's POWERTOOLS_METRICS_NAMESPACE, metrics still flush (a missing namespace would fail every
#: invocation after its batch was processed, and SQS would hand the whole batch out again).
metrics = Metrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE") or METRICS_NAMESPACE)
copy_config_to_registered_loggers(source_logger=logger, include={"memory_adapter"})

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


def make_handler(replayer: Callable[[], QueueReplayer]) -> Handler:
    """The Lambda handler around the replayer ``replayer()`` builds (once, on the first event)."""
    built: list[QueueReplayer] = []
    processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)

    def record_handler(record: SQSRecord) -> str:
        return built[0].handle(QueueMessage.from_lambda(record.raw_event)).verdict.value

    @logger.inject_lambda_context
    @metrics.log_metrics
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        if not built:
            built.append(replayer())
        remaining = context.get_remaining_time_in_millis() / 1000 if context is not None else None
        built[0].start_batch(seconds_left=None if remaining is None else remaining - SAFETY_MARGIN_S)
        response = process_partial_response(
            event=event, record_handler=record_handler, processor=processor, context=context
        )
        return dict(response)

    return handler


handler = make_handler(lambda: QueueReplayer.from_settings(ReplaySettings.from_env(os.environ), metrics=metrics))
