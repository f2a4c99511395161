"""Metrics hooks and log helpers. Identities are never logged raw: bank and user ids appear as a short hash.

Metrics go to any object with Powertools' ``add_metric(name=, unit=, value=)`` method, so an
``aws_lambda_powertools.Metrics`` instance can be passed as is. Calls come from background threads too (retain
delivery), so they are serialised by a lock, and a failing sink never affects a turn.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from typing import Any, Final, Protocol

from memory_adapter.constants import LOG_HASH_SALT_ENV

__all__ = ["Metric", "MetricsSink", "Observer", "logger", "short_hash"]

logger = logging.getLogger("memory_adapter")


class Metric:
    """Metric names emitted by the adapter (units: ``Milliseconds`` for latency, ``Count`` otherwise)."""

    RECALL_LATENCY: Final = "MemoryRecallLatency"
    RECALL_HITS: Final = "MemoryRecallHits"
    DEGRADED_TURNS: Final = "MemoryDegradedTurns"
    RECALL_SHED: Final = "MemoryRecallShed"
    """Recalls Hindsight shed (overloaded, answered at once): those turns ran without memory (also degraded)."""
    RETAIN_QUEUED: Final = "MemoryRetainQueued"
    RETAIN_DELIVERED: Final = "MemoryRetainDelivered"
    RETAIN_RETRIED: Final = "MemoryRetainRetried"
    RETAIN_FAILED: Final = "MemoryRetainFailed"
    RETAIN_SPOOLED: Final = "MemoryRetainSpooled"
    RETAIN_REPLAYED: Final = "MemoryRetainReplayed"
    RETAIN_TOO_LARGE: Final = "MemoryRetainTooLarge"
    """A retain that could be neither delivered nor spooled because it exceeds the spool's size limit."""
    QUEUE_DELIVERED: Final = "MemoryQueueDelivered"
    """The replay function delivered a queued retain."""
    QUEUE_DEAD_LETTERED: Final = "MemoryQueueDeadLettered"
    """The replay function moved a queued retain to the dead-letter queue (with its reason)."""
    QUEUE_RETRIED: Final = "MemoryQueueRetried"
    """The replay function left a queued retain for a later receive (Hindsight unavailable)."""
    BREAKER_OPENED: Final = "MemoryBreakerOpened"
    BREAKER_STATE: Final = "MemoryBreakerState"
    """0 closed, 1 open, 2 half-open (a probe is running)."""


class MetricsSink(Protocol):
    """Anything with Powertools Metrics' ``add_metric``; ``unit`` is ``"Milliseconds"`` or ``"Count"``."""

    def add_metric(self, name: str, unit: Any, value: float) -> None:
        """Record one data point."""
        ...


def short_hash(value: str) -> str:
    """A 12-hex-digit SHA-256 digest of ``value`` for logs (salted with ``HINDSIGHT_ADAPTER_LOG_HASH_SALT`` if set)."""
    salt = os.environ.get(LOG_HASH_SALT_ENV, "")
    return hashlib.sha256(f"{salt}\x00{value}".encode("utf-8", "surrogatepass")).hexdigest()[:12]


class Observer:
    """Emits the adapter's metrics and structured log records."""

    def __init__(self, metrics: MetricsSink | None, *, verbose: bool) -> None:
        self._metrics = metrics
        self._verbose = verbose
        self._lock = threading.Lock()

    def count(self, name: str, value: float = 1.0) -> None:
        """Add ``value`` to a ``Count`` metric."""
        self._emit(name, "Count", value)

    def latency(self, name: str, milliseconds: float) -> None:
        """Record a ``Milliseconds`` metric."""
        self._emit(name, "Milliseconds", milliseconds)

    def _emit(self, name: str, unit: str, value: float) -> None:
        if self._metrics is None:
            return
        try:
            with self._lock:
                self._metrics.add_metric(name=name, unit=unit, value=value)
        except Exception:  # a metrics backend must never break a turn
            logger.debug("memory metrics sink failed", exc_info=True)

    def event(self, level: int, message: str, *, event: str, **fields: Any) -> None:
        """Log ``message`` with ``extra`` fields (``memory_event`` plus ``fields``); routine events need ``verbose``."""
        if level <= logging.INFO and not self._verbose:
            level = logging.DEBUG
        if logger.isEnabledFor(level):
            logger.log(level, message, extra={"memory_event": event, **fields})
