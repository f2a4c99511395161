"""A small thread-safe circuit breaker: turns skip memory at near-zero cost while Hindsight is down or hung.

Closed: calls go through; ``failure_threshold`` consecutive failures open it. Open: :meth:`allow` is ``False`` (one
read) until ``reset_timeout`` has passed (:meth:`probe_due`, also lock-free); then exactly one caller gets ``True``
from :meth:`begin_probe` and the breaker is half-open while that probe runs (the adapter claims and runs the probe on a
background thread, so no turn pays for the claim, its ``on_change`` callbacks or the probe). A successful probe or
call closes it; a failed probe re-opens it for another ``reset_timeout``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from enum import StrEnum

__all__ = ["BreakerState", "CircuitBreaker"]


class BreakerState(StrEnum):
    """Breaker states; the metric value is the index (0 closed, 1 open, 2 half-open)."""

    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"

    @property
    def metric_value(self) -> int:
        """0 closed, 1 open, 2 half-open."""
        return {BreakerState.CLOSED: 0, BreakerState.OPEN: 1, BreakerState.HALF_OPEN: 2}[self]


class CircuitBreaker:
    """Counts consecutive failures and short-circuits calls while the dependency looks unhealthy.

    Args:
        failure_threshold: Consecutive failures that open the breaker (>= 1).
        reset_timeout: Seconds to stay open before one probe is allowed.
        clock: Monotonic clock, injectable for tests.
        on_change: Called as ``on_change(old, new)`` after every state change (outside the lock).
    """

    def __init__(
        self,
        *,
        failure_threshold: int,
        reset_timeout: float,
        clock: Callable[[], float] = time.monotonic,
        on_change: Callable[[BreakerState, BreakerState], None] | None = None,
    ) -> None:
        if failure_threshold < 1:
            raise ValueError("failure_threshold must be >= 1")
        self._threshold = failure_threshold
        self._reset_timeout = reset_timeout
        self._clock = clock
        self._on_change = on_change
        self._lock = threading.Lock()
        self._state = BreakerState.CLOSED
        self._failures = 0
        self._opened_at = 0.0

    @property
    def state(self) -> BreakerState:
        """The current state."""
        return self._state

    def allow(self) -> bool:
        """Whether a call may go to the dependency now (only when closed)."""
        return self._state is BreakerState.CLOSED

    def probe_due(self) -> bool:
        """Whether the breaker is open and its reset timeout has passed (no lock: a hint for :meth:`begin_probe`).

        Cheap enough for every short-circuited call; a stale answer only costs one :meth:`begin_probe` that
        returns ``False``.
        """
        return self._state is BreakerState.OPEN and self._clock() - self._opened_at >= self._reset_timeout

    def begin_probe(self) -> bool:
        """Claim the single probe of an open breaker whose reset timeout has passed; ``True`` means "probe now"."""
        with self._lock:
            if self._state is not BreakerState.OPEN or self._clock() - self._opened_at < self._reset_timeout:
                return False
            old, self._state = self._state, BreakerState.HALF_OPEN
        self._changed(old, BreakerState.HALF_OPEN)
        return True

    def record_success(self) -> None:
        """A call or probe succeeded: close the breaker and reset the failure count."""
        with self._lock:
            self._failures = 0
            if self._state is BreakerState.CLOSED:
                return
            old, self._state = self._state, BreakerState.CLOSED
        self._changed(old, BreakerState.CLOSED)

    def record_failure(self) -> None:
        """A call or probe failed for a transient reason; may open (or re-open) the breaker."""
        with self._lock:
            self._failures += 1
            if self._state is BreakerState.OPEN:
                return
            if self._state is BreakerState.CLOSED and self._failures < self._threshold:
                return
            old, self._state = self._state, BreakerState.OPEN
            self._opened_at = self._clock()
        self._changed(old, BreakerState.OPEN)

    def _changed(self, old: BreakerState, new: BreakerState) -> None:
        if self._on_change is not None:
            self._on_change(old, new)
