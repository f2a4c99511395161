"""Circuit breaker: opens after N consecutive failures, skips memory for free while open, probes in the background."""

from __future__ import annotations

import asyncio

from memory_adapter import TurnContext
from memory_adapter.breaker import BreakerState, CircuitBreaker
from memory_adapter.observability import Metric
from memory_adapter.testing import Fault


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
    assert not breaker.begin_probe()  # too early
    clock.now = 10
    assert breaker.begin_probe()
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


def ctx() -> TurnContext:
    return TurnContext(runtime_session_id="s", user_id="alice", agent_name="support")


async def test_open_breaker_skips_recall_without_network_then_recovers(make_adapter, fake, metrics):
    fake.fault = Fault.HANG
    adapter = make_adapter(recall_timeout=0.1, breaker_failure_threshold=2, breaker_reset_timeout=0.3)
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
