"""Circuit breaker: opens after N consecutive failures, skips memory for free while open, probes in the background."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from memory_adapter import TurnContext
from memory_adapter.breaker import BreakerState, CircuitBreaker, is_deadline_miss
from memory_adapter.config import ENV_VARS
from memory_adapter.exceptions import HindsightUnavailableError
from memory_adapter.observability import Metric
from memory_adapter.testing import Fault

from .conftest import MetricsRecorder


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def state(breaker: CircuitBreaker) -> BreakerState:
    """Read the state through a call, so the type checker does not narrow it across transitions."""
    return breaker.state


def test_state_machine():
    clock = Clock()
    changes: list[tuple[str, str]] = []
    breaker = CircuitBreaker(
        failure_threshold=2, reset_timeout=10, clock=clock, on_change=lambda a, b: changes.append((a, b))
    )
    breaker.record_failure()
    assert breaker.allow()
    breaker.record_success()  # resets the count: failures must be consecutive
    breaker.record_failure()
    assert breaker.allow()
    breaker.record_failure()
    assert not breaker.allow()
    assert state(breaker) is BreakerState.OPEN
    assert not breaker.probe_due()
    assert not breaker.begin_probe()  # too early
    clock.now = 10
    assert breaker.probe_due()
    assert breaker.begin_probe()
    assert not breaker.probe_due()  # claimed: half-open
    assert not breaker.begin_probe()  # one probe at a time
    assert state(breaker) is BreakerState.HALF_OPEN
    assert not breaker.allow()
    breaker.record_failure()  # probe failed: open again for another reset_timeout
    assert state(breaker) is BreakerState.OPEN
    clock.now = 15
    assert not breaker.begin_probe()
    clock.now = 20
    assert breaker.begin_probe()
    breaker.record_success()
    assert breaker.allow()
    assert changes == [
        ("closed", "open"),
        ("open", "half_open"),
        ("half_open", "open"),
        ("open", "half_open"),
        ("half_open", "closed"),
    ]


def slow_breaker(clock: Clock, **kwargs: Any) -> CircuitBreaker:
    options: dict[str, Any] = {
        "failure_threshold": 3,
        "reset_timeout": 30,
        "slow_threshold": 5,
        "slow_window": 30,
        "slow_ratio": 0.8,
        "slow_reset_timeout": 3,
    }
    return CircuitBreaker(clock=clock, **(options | kwargs))


def test_three_deadline_misses_do_not_open_it():
    # GIVEN a breaker with the default thresholds: 3 hard failures, or 5 misses making 80% of 30 s
    clock = Clock()
    breaker = slow_breaker(clock)
    # WHEN three recalls miss their deadline in a row (Hindsight busy, not down)
    for _ in range(3):
        clock.now += 0.5
        breaker.record_miss()
    # THEN memory is still used (today's breaker opened here, for 30 s)
    assert state(breaker) is BreakerState.CLOSED


def test_three_refused_connections_open_it_for_the_full_reset_timeout():
    clock = Clock()
    breaker = slow_breaker(clock)
    for _ in range(3):
        breaker.record_error(ConnectionRefusedError())
    assert state(breaker) is BreakerState.OPEN
    clock.now = 29
    assert not breaker.probe_due()
    clock.now = 30
    assert breaker.begin_probe()


def test_5xx_failures_count_apart_from_misses():
    # Misses interleaved with hard failures neither reset nor feed the hard count: three 5xx still open it.
    clock = Clock()
    breaker = slow_breaker(clock)
    for _ in range(3):
        breaker.record_failure()
        breaker.record_miss()
    assert state(breaker) is BreakerState.OPEN


def test_sustained_misses_open_it_and_it_is_probed_sooner():
    clock = Clock()
    changes: list[tuple[str, str]] = []
    breaker = slow_breaker(clock, on_change=lambda a, b: changes.append((a, b)))
    for _ in range(5):
        clock.now += 1
        breaker.record_error(TimeoutError())
    assert state(breaker) is BreakerState.OPEN
    clock.now += 2.9
    assert not breaker.probe_due()
    clock.now += 0.1  # slow_reset_timeout (3 s), not reset_timeout (30 s)
    assert breaker.probe_due()
    assert breaker.begin_probe()
    breaker.record_miss()  # the probe was slow too: open again, still for the short time
    assert state(breaker) is BreakerState.OPEN
    clock.now += 3
    assert breaker.begin_probe()
    breaker.record_success()
    assert breaker.allow()
    # the metric's states are the same as for hard failures
    assert [b for _, b in changes] == ["open", "half_open", "open", "half_open", "closed"]


def test_a_hard_failure_while_miss_opened_waits_the_full_reset_timeout():
    clock = Clock()
    breaker = slow_breaker(clock)
    for _ in range(5):
        breaker.record_miss()
    breaker.record_failure()  # e.g. a retain in flight was refused: Hindsight is down, not busy
    clock.now = 3
    assert not breaker.probe_due()
    clock.now = 30
    assert breaker.probe_due()


def test_misses_open_it_only_when_most_calls_miss():
    # GIVEN a busy Hindsight: every other recall misses its deadline, the rest answer
    clock = Clock()
    breaker = slow_breaker(clock)
    for _ in range(20):
        clock.now += 0.1
        breaker.record_miss()
        breaker.record_success()
    # THEN ten misses (over the count) at 50% (under the ratio) keep it closed: memory degrades one turn at a time
    assert state(breaker) is BreakerState.CLOSED


def test_misses_older_than_the_window_do_not_count():
    clock = Clock()
    breaker = slow_breaker(clock, slow_window=10)
    for _ in range(4):
        breaker.record_miss()
    clock.now = 10.5
    breaker.record_miss()
    assert state(breaker) is BreakerState.CLOSED
    for _ in range(4):
        breaker.record_miss()
    assert state(breaker) is BreakerState.OPEN


def test_a_socket_timeout_is_a_deadline_miss():
    # The transport raises HindsightUnavailableError from the socket's TimeoutError (``raise ... from exc``).
    timed_out = HindsightUnavailableError("Hindsight did not answer within 2 s")
    timed_out.__cause__ = TimeoutError("timed out")
    assert is_deadline_miss(timed_out)
    assert not is_deadline_miss(HindsightUnavailableError("cannot reach Hindsight: ConnectionRefusedError"))


def ctx() -> TurnContext:
    return TurnContext(runtime_session_id="s", user_id="alice", agent_name="support")


async def test_open_breaker_skips_recall_without_network_then_recovers(make_adapter, fake, metrics, monkeypatch):
    # Settings without an argument of their own come from their environment variable.
    monkeypatch.setenv(ENV_VARS["breaker_slow_threshold"], "2")
    monkeypatch.setenv(ENV_VARS["breaker_slow_reset_timeout"], "0.3")
    fake.fault = Fault.HANG
    adapter = make_adapter(recall_timeout=0.1, breaker_reset_timeout=30)
    for _ in range(2):
        assert (await adapter.recall_for_turn(ctx(), "hello")).reason == "timeout"
    assert adapter.breaker_state == "open"
    calls = len(fake.requests)
    skipped = await adapter.recall_for_turn(ctx(), "hello")
    assert (skipped.degraded, skipped.reason) == (True, "breaker_open")
    assert len(fake.requests) == calls  # no network while open
    assert metrics.total(Metric.BREAKER_OPENED) == 1
    # Hindsight comes back: after the reset timeout a background probe closes the breaker
    fake.fault = Fault.NONE
    fake.release()
    await asyncio.sleep(0.35)
    assert (await adapter.recall_for_turn(ctx(), "hello")).reason == "breaker_open"  # triggers the probe
    for _ in range(500):
        if adapter.breaker_state == "closed":
            break
        await asyncio.sleep(0.02)
    assert adapter.breaker_state == "closed"
    assert fake.calls("/health")
    assert not (await adapter.recall_for_turn(ctx(), "hello")).degraded
    assert metrics.values(Metric.BREAKER_STATE)[-1] == 0


async def test_failed_probe_keeps_the_breaker_open(make_adapter, fake):
    fake.fault = Fault.DOWN
    adapter = make_adapter(breaker_failure_threshold=1, breaker_reset_timeout=0.05)
    await adapter.recall_for_turn(ctx(), "hello")
    await asyncio.sleep(0.06)
    await adapter.recall_for_turn(ctx(), "hello")  # starts a probe that fails
    for _ in range(500):
        if fake.calls("/health") and adapter.breaker_state == "open":
            break
        await asyncio.sleep(0.02)
    assert adapter.breaker_state == "open"


async def test_auto_replay_after_recovery(make_adapter, fake):
    fake.fault = Fault.DOWN
    adapter = make_adapter(breaker_failure_threshold=1, breaker_reset_timeout=0.05, max_retries=0, auto_replay=True)
    await adapter.retain_for_turn(ctx(), result="during the outage")
    assert adapter.spooled_retains == 1
    fake.fault = Fault.NONE
    await asyncio.sleep(0.06)
    await adapter.recall_for_turn(ctx(), "hello")  # probe -> closed -> background replay
    for _ in range(500):
        if adapter.spooled_retains == 0:
            break
        await asyncio.sleep(0.02)
    assert adapter.spooled_retains == 0
    assert len(fake.documents("user:alice:agent:support")) == 1


class ThreadRecordingMetrics(MetricsRecorder):
    """Records which thread emitted each breaker-state point."""

    def __init__(self) -> None:
        super().__init__()
        self.state_threads: list[tuple[float, int]] = []

    def add_metric(self, name: str, unit: Any, value: float) -> None:
        super().add_metric(name, unit, value)
        if name == Metric.BREAKER_STATE:
            self.state_threads.append((value, threading.get_ident()))


async def test_probe_is_claimed_off_the_turn_thread(make_adapter, fake):
    # GIVEN an open breaker whose reset timeout has passed, with a metrics sink that notes the emitting thread
    recorder = ThreadRecordingMetrics()
    fake.fault = Fault.DOWN
    adapter = make_adapter(breaker_failure_threshold=1, breaker_reset_timeout=0.05, metrics=recorder)
    await adapter.recall_for_turn(ctx(), "hello")
    assert adapter.breaker_state == "open"
    fake.fault = Fault.NONE
    await asyncio.sleep(0.06)
    # WHEN a turn finds the breaker open and a probe due
    skipped = await adapter.recall_for_turn(ctx(), "hello")
    assert skipped.reason == "breaker_open"
    for _ in range(500):
        if adapter.breaker_state == "closed":
            break
        await asyncio.sleep(0.02)
    # THEN the probe ran and closed the breaker, and the half-open and closed transitions (metric and log
    # callbacks) ran on a pool thread, never on the turn's thread
    assert adapter.breaker_state == "closed"
    turn_thread = threading.get_ident()
    transitions = [(value, thread) for value, thread in recorder.state_threads if value != 1]
    assert [value for value, _ in transitions] == [2, 0]
    assert all(thread != turn_thread for _, thread in transitions)
