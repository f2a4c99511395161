"""The ``retain_queue`` section: the queue the agent spools undeliverable turns to, and the function delivering them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from infra.config.checks import bounded, require


@dataclass(frozen=True)
class RetainQueueConfig:
    """The retain queue (SQS) the agent spools undeliverable turns to, and the function that delivers them."""

    replay_path: Path
    replay_timeout_seconds: int
    delivery_timeout_seconds: int
    batch_size: int
    max_concurrency: int
    oldest_message_alarm_minutes: int


def retain_queue_problems(q: RetainQueueConfig) -> list[str]:
    """The retain queue and its replay function (Lambda's limits; a batch's deliveries must fit an invocation)."""
    errors: list[str] = []
    bounded(errors, "retain_queue.replay_timeout_seconds", q.replay_timeout_seconds, low=10, high=900)
    bounded(errors, "retain_queue.delivery_timeout_seconds", q.delivery_timeout_seconds, low=1, high=120)
    require(
        errors,
        q.delivery_timeout_seconds < q.replay_timeout_seconds,
        "retain_queue.delivery_timeout_seconds must be less than retain_queue.replay_timeout_seconds",
    )
    bounded(errors, "retain_queue.batch_size", q.batch_size, low=1, high=100)
    bounded(errors, "retain_queue.max_concurrency", q.max_concurrency, low=2, high=1000)
    bounded(errors, "retain_queue.oldest_message_alarm_minutes", q.oldest_message_alarm_minutes, low=1, high=1440)
    return errors
