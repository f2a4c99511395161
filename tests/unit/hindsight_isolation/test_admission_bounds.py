"""Admission control's latency target (a recall that states a deadline is admitted only when it is expected to be
answered within ``target`` times a recall served alone, and within its deadline, however long the deadline) and the
rate at which one user may queue recalls that state none (hindsight_isolation/rate.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from hindsight_isolation.admission import RecallGate
from hindsight_isolation.rate import TokenBuckets
from hindsight_isolation.settings import DEFAULT_RECALL_LATENCY_TARGET, AdmissionConfig
from memory_adapter.identity.bank_ids import format_bank_id
from tests.unit.hindsight_isolation import admission_harness
from tests.unit.hindsight_isolation.admission_harness import Clock, saturate, serve_one, settle, start


@pytest.fixture
def targeted(clock: Clock) -> Iterator[RecallGate]:
    """2 slots, 0.5 s of queueing at most, a fixed limit, and the default latency target (2x a recall alone)."""
    with admission_harness.installed_gate(
        clock, AdmissionConfig(concurrency=2, max_wait_s=0.5, tolerance=0.0)
    ) as current:
        yield current


async def test_a_recall_expected_past_twice_a_recall_alone_is_shed_though_its_deadline_allows_it(
    targeted: RecallGate, clock: Clock
) -> None:
    assert DEFAULT_RECALL_LATENCY_TARGET == 2.0
    app = admission_harness.HeldApp()
    await serve_one(app, clock, 0.1)  # alone: 100 ms, the baseline and the recent recall time
    busy = await saturate(app, 2)  # both slots busy, nobody queued
    # Queued ahead 0: a wait of 1 x 100 ms / 2 slots = 50 ms + 100 ms = 150 ms <= 200 ms: admitted.
    # Queued ahead 1: 100 ms + 100 ms = 200 ms: admitted (at the bound).
    admitted = [start(app, "2000"), start(app, "2000")]
    await settle()
    assert len(targeted.waiters) == 2
    # Queued ahead 2: 150 ms + 100 ms = 250 ms > 200 ms: shed, though 2 s and max_wait (500 ms) allow it.
    late = start(app, "2000")
    await settle()
    assert late.status == 503
    assert late.body["retry_after_s"] == pytest.approx(0.15)  # the expected wait it was shed on
    assert targeted.shed == 1
    assert len(app.started) == 3  # no work started for it
    # A recall that states no deadline is not held to the target: it queues (the shares and its rate bound it).
    patient = start(app)
    await settle()
    assert not patient.task.done()
    for _ in range(5):
        next(f for f in app.started if not f.done()).set_result(200)
        await settle()
    await asyncio.gather(*(c.task for c in [*busy, *admitted, patient]))
    assert [c.status for c in admitted] == [200, 200]


async def test_while_recalls_run_slow_only_a_free_slot_admits(targeted: RecallGate, clock: Clock) -> None:
    app = admission_harness.HeldApp()
    await serve_one(app, clock, 0.1)  # the baseline: 100 ms alone
    for _ in range(16):  # then the recent recalls take 250 ms (the CPU contended): over 2x alone by themselves
        calls = await saturate(app, 2)
        clock.now += 0.25
        for future in app.started[-2:]:
            future.set_result(200)
        await asyncio.gather(*(c.task for c in calls))
    assert targeted.service_s() == pytest.approx(0.25)
    assert targeted.baseline_s() == pytest.approx(0.1)  # recalls that shared the CPU do not move the baseline
    busy = await saturate(app, 2)
    waiting = start(app, "2000")  # 125 ms wait + 250 ms > 200 ms: shed
    await settle()
    assert waiting.status == 503
    for future in app.started[-2:]:
        future.set_result(200)
    await asyncio.gather(*(c.task for c in busy))
    free = start(app, "2000")  # a free slot: served, so the estimate keeps learning
    await settle()
    assert not free.task.done()
    app.started[-1].set_result(200)
    await free.task
    assert free.status == 200


async def test_the_target_never_admits_past_the_deadline_and_zero_turns_it_off(clock: Clock) -> None:
    config = AdmissionConfig(concurrency=2, max_wait_s=0.5, tolerance=0.0, target=0.0)
    with admission_harness.installed_gate(clock, config) as gate:
        app = admission_harness.HeldApp()
        await serve_one(app, clock, 0.1)
        await saturate(app, 2 + 2)
        far = start(app, "2000")  # 150 ms + 100 ms: over 2x alone, but no target: admitted
        await settle()
        assert not far.task.done()
        assert gate.bound_s(2.0) == 2.0
    with admission_harness.installed_gate(clock, AdmissionConfig(concurrency=2, target=10.0)) as gate:
        await serve_one(admission_harness.HeldApp(), clock, 0.1)
        assert gate.bound_s(0.3) == pytest.approx(0.3)  # 10 x 100 ms is longer than the deadline: the deadline
        assert gate.bound_s(5.0) == pytest.approx(1.0)


def test_a_bucket_holds_one_seconds_worth_and_says_when_the_next_token_comes(clock: Clock) -> None:
    buckets = TokenBuckets(2.0, clock)
    assert [buckets.take("alice"), buckets.take("alice")] == [0.0, 0.0]  # two a second, both at once
    assert buckets.take("alice") == pytest.approx(0.5)  # none left: the next in 500 ms, nothing taken
    assert buckets.take("bob") == 0.0  # another user's bucket is full
    clock.now += 0.25
    assert buckets.take("alice") == pytest.approx(0.25)
    clock.now += 0.25
    assert buckets.take("alice") == 0.0
    clock.now += 60
    assert [buckets.take("alice"), buckets.take("alice"), buckets.take("alice")] == [0.0, 0.0, pytest.approx(0.5)]
    assert TokenBuckets(0.0, clock).take("alice") == 0.0  # 0: no limit
    slow = TokenBuckets(0.5, clock)  # under one a second: one token held at most, the next in two seconds
    assert slow.take("alice") == 0.0
    assert slow.take("alice") == pytest.approx(2.0)


async def test_a_user_queueing_recalls_without_a_deadline_faster_than_its_rate_is_shed(clock: Clock) -> None:
    config = AdmissionConfig(concurrency=4, max_wait_s=0.5, tolerance=0.0, user_rate=1.0)  # a user's share: 2
    alice = format_bank_id(user="alice", agent="support")
    with admission_harness.installed_gate(clock, config) as gate:
        app = admission_harness.HeldApp()
        idle = [start(app, bank=alice), start(app, bank=alice)]  # free slots: served, no token taken
        await settle()
        assert len(app.started) == 2
        for future in app.started:
            future.set_result(200)
        await asyncio.gather(*(c.task for c in idle))
        busy = await saturate(app, 4)  # other users hold every slot: recalls contend
        first = start(app, bank=alice)  # queues: alice's one token (one a second)
        await settle()
        assert not first.task.done()
        next(f for f in app.started if not f.done()).set_result(200)  # a slot frees: alice's recall runs
        await settle()
        again = start(app, bank=alice)  # at once again, no token left: shed, told when the next comes
        await settle()
        assert again.status == 503
        assert again.body["retry_after_s"] == pytest.approx(1.0)
        assert "without a deadline" in again.body["detail"]
        assert gate.shed == 1
        clock.now += 1.0
        later = start(app, bank=alice)  # a second on: a token again, it queues
        await settle()
        assert not later.task.done()
        while not later.task.done():
            for future in [f for f in app.started if not f.done()]:
                future.set_result(200)
            await settle()
        await asyncio.gather(*(c.task for c in [*busy, first, later]))
        assert (first.status, later.status) == (200, 200)
