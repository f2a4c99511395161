"""A small thread-safe circuit breaker: turns skip memory at near-zero cost while Hindsight is down or hung.

Two kinds of failure count apart. A *hard* failure (refused connection, 5xx: :meth:`record_failure`) means Hindsight
cannot answer: ``failure_threshold`` consecutive ones open the breaker for ``reset_timeout``. A *deadline miss* (a
call that timed out: :meth:`record_miss`) may only mean Hindsight is busy and still answering most calls, so misses
open the breaker only when they are sustained: at least ``slow_threshold`` misses within the last ``slow_window``
seconds that are also at least ``slow_ratio`` of the calls that ended in that window. An opening caused only by
misses is probed again after the shorter ``slow_reset_timeout``; a hard failure while open lengthens it to
``reset_timeout``.

Open: :meth:`allow` is ``False`` (one read) until the reset timeout has passed (:meth:`probe_due`, also lock-free);
then exactly one caller gets ``True`` from :meth:`begin_probe` and the breaker is half-open while that probe runs (the
adapter claims and runs the probe on a background thread, so no turn pays for the claim, its ``on_change`` callbacks
or the probe). A successful probe or call closes it; a failed probe re-opens it.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from enum import StrEnum

__all__ = ["BreakerState", "CircuitBreaker", "is_deadline_miss"]


class BreakerState(StrEnum):
    """Breaker states; the metric value is the index (0 closed, 1 open, 2 half-open)."""

    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"

    @property
    def metric_value(self) -> int:
        """0 closed, 1 open, 2 half-open."""
        return {BreakerState.CLOSED: 0, BreakerState.OPEN: 1, BreakerState.HALF_OPEN: 2}[self]


def is_deadline_miss(exc: BaseException) -> bool:
    """Whether a transport error was a timeout (Hindsight slow) rather than a refusal or a 5xx (Hindsight failing)."""
    return isinstance(exc, TimeoutError) or isinstance(exc.__cause__, TimeoutError)


class CircuitBreaker:
    """Counts failures and deadline misses, and short-circuits calls while the dependency looks unhealthy.

    Args:
        failure_threshold: Consecutive hard failures that open the breaker (>= 1).
        reset_timeout: Seconds to stay open after a hard failure before one probe is allowed.
        slow_threshold: Deadline misses within ``slow_window`` that may open the breaker (>= 1).
        slow_window: Seconds over which misses (and the calls that ended) are counted.
        slow_ratio: Share of the calls ended within ``slow_window`` that must be misses (0-1).
        slow_reset_timeout: Seconds to stay open after an opening caused only by misses.
        clock: Monotonic clock, injectable for tests.
        on_change: Called as ``on_change(old, new)`` after every state change (outside the lock).
    """

    def __init__(
        self,
        *,
        failure_threshold: int,
        reset_timeout: float,
        slow_threshold: int = 5,
        slow_window: float = 30.0,
        slow_ratio: float = 0.8,
        slow_reset_timeout: float = 3.0,
        clock: Callable[[], float] = time.monotonic,
        on_change: Callable[[BreakerState, BreakerState], None] | None = None,
    ) -> None:
        if failure_threshold < 1 or slow_threshold < 1:
            raise ValueError("failure_threshold and slow_threshold must be >= 1")
        self._threshold = failure_threshold
        self._reset_timeout = reset_timeout
        self._slow_threshold = slow_threshold
        self._slow_window = slow_window
        self._slow_ratio = slow_ratio
        self._slow_reset_timeout = slow_reset_timeout
        self._clock = clock
        self._on_change = on_change
        self._lock = threading.Lock()
        self._state = BreakerState.CLOSED
        self._failures = 0
        self._opened_at = 0.0
        self._open_for = reset_timeout
        # (ended_at, missed) of the calls ended within the last slow_window seconds, oldest first.
        self._recent: deque[tuple[float, bool]] = deque()
        self._misses = 0

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
        return self._state is BreakerState.OPEN and self._clock() - self._opened_at >= self._open_for

    def begin_probe(self) -> bool:
        """Claim the single probe of an open breaker whose reset timeout has passed; ``True`` means "probe now"."""
        with self._lock:
            if self._state is not BreakerState.OPEN or self._clock() - self._opened_at < self._open_for:
                return False
            old, self._state = self._state, BreakerState.HALF_OPEN
        self._changed(old, BreakerState.HALF_OPEN)
        return True

    def record_success(self) -> None:
        """A call or probe succeeded: close the breaker and reset the failure count."""
        with self._lock:
            self._failures = 0
            if self._state is BreakerState.CLOSED:
                self._note(missed=False)
                return
            old, self._state = self._state, BreakerState.CLOSED
            self._recent.clear()  # recovered: misses from before the opening do not count again
            self._misses = 0
        self._changed(old, BreakerState.CLOSED)

    def record_failure(self) -> None:
        """A call or probe failed hard (refused, 5xx); may open (or re-open) the breaker for ``reset_timeout``."""
        with self._lock:
            self._failures += 1
            if self._state is BreakerState.OPEN:
                self._open_for = self._reset_timeout  # not only slow after all
                return
            if self._state is BreakerState.CLOSED and self._failures < self._threshold:
                return
            old = self._open(self._reset_timeout)
        self._changed(old, BreakerState.OPEN)

    def record_miss(self) -> None:
        """A call or probe missed its deadline; opens the breaker only when misses are sustained (or a probe)."""
        with self._lock:
            if self._state is BreakerState.OPEN:
                return
            if self._state is BreakerState.CLOSED:
                self._note(missed=True)
                if self._misses < self._slow_threshold or self._misses < self._slow_ratio * len(self._recent):
                    return
            old = self._open(self._slow_reset_timeout)
        self._changed(old, BreakerState.OPEN)

    def record_error(self, exc: BaseException) -> None:
        """A transport error: :meth:`record_miss` when it was a timeout, else :meth:`record_failure`."""
        if is_deadline_miss(exc):
            self.record_miss()
        else:
            self.record_failure()

    def _note(self, *, missed: bool) -> None:
        """Record one ended call in the window and drop the ones older than ``slow_window`` (lock held)."""
        now = self._clock()
        recent = self._recent
        recent.append((now, missed))
        self._misses += missed
        horizon = now - self._slow_window
        while recent[0][0] < horizon:
            _, old_missed = recent.popleft()
            self._misses -= old_missed

    def _open(self, open_for: float) -> BreakerState:
        """Move to open for ``open_for`` seconds (lock held); returns the old state."""
        old, self._state = self._state, BreakerState.OPEN
        self._opened_at = self._clock()
        self._open_for = open_for
        return old

    def _changed(self, old: BreakerState, new: BreakerState) -> None:
        if self._on_change is not None:
            self._on_change(old, new)
