"""Admission control of recalls (hindsight_isolation.admission) around an ASGI app whose recalls the test finishes
by hand, so queue lengths and service times are exact (no timing). The live server is in
tests/integration/isolation/test_admission.py."""

from __future__ import annotations

import asyncio

import pytest
from starlette.types import Receive, Scope, Send

from hindsight_isolation import admission
from hindsight_isolation.admission import MAX_DEADLINE_S, MIN_DEADLINE_S, RecallGate
from hindsight_isolation.principal import Kind, Principal
from hindsight_isolation.route import RequestKind
from hindsight_isolation.settings import AdmissionConfig, ConfigError, IsolationSettings
from hindsight_isolation.shed import MAX_RETRY_AFTER_S, MIN_RETRY_AFTER_S, SHED_LOG, UNMEASURED_RETRY_AFTER_S
from memory_adapter.recall_deadline import DEADLINE_HEADER, OVERLOADED, REASON_FIELD, RETRY_AFTER_FIELD
from tests.unit.hindsight_isolation.admission_harness import (
    Clock,
    HeldApp,
    installed_gate,
    saturate,
    serve_one,
    settle,
    start,
)


async def test_a_recall_that_would_miss_its_deadline_is_shed_at_once(gate: RecallGate, clock: Clock) -> None:
    app = HeldApp()
    await serve_one(app, clock, 0.1)  # the recent recall time: 100 ms
    busy = await saturate(app, 4)  # 2 running, 2 queued
    assert (gate.running, len(gate.waiters)) == (2, 2)

    # Queued ahead: 2; expected wait (2 + 1) x 100 ms / 2 slots = 150 ms, + 100 ms service = 250 ms > 200 ms.
    shed = start(app, "200")
    await settle()
    assert shed.task.done()  # answered without waiting for any slot
    assert shed.status == 503
    assert shed.body[REASON_FIELD] == OVERLOADED
    assert "150 ms" in shed.body["detail"]
    assert shed.body[RETRY_AFTER_FIELD] == pytest.approx(0.15)  # the expected wait, not a whole second
    assert shed.headers[b"retry-after"] == b"1"  # HTTP's header: whole seconds, rounded up
    assert len(app.started) == 3  # no work was started for it
    assert gate.shed == 1

    # With 300 ms it would make it: it queues, and runs when its turn comes.
    admitted = start(app, "300")
    await settle()
    assert not admitted.task.done()
    assert len(gate.waiters) == 3
    for _ in range(5):
        app.started[len([f for f in app.started if f.done()])].set_result(200)
        await settle()
    await asyncio.gather(*(c.task for c in busy), admitted.task)
    assert admitted.status == 200
    assert (gate.running, len(gate.waiters)) == (0, 0)


async def test_a_recall_without_a_deadline_is_never_shed(gate: RecallGate, clock: Clock) -> None:
    app = HeldApp()
    await serve_one(app, clock, 0.1)
    busy = await saturate(app, 40)  # an expected wait of 2 s
    late = [start(app), start(app, "not a number"), start(app, "nan"), start(app, "")]
    await settle()
    assert not any(c.task.done() for c in late)
    assert gate.shed == 0
    while not all(c.task.done() for c in [*busy, *late]):
        for future in app.started:
            if not future.done():
                future.set_result(200)
        await settle()
    assert {c.status for c in [*busy, *late]} == {200}


async def test_other_requests_never_pass_through_the_gate(gate: RecallGate, clock: Clock) -> None:
    app = HeldApp()
    await serve_one(app, clock, 0.1)
    await saturate(app, 10)
    retain = start(app, "1", kind=RequestKind.RETAIN)
    other = start(app, "1", kind=RequestKind.OTHER)
    mcp = start(app, "1", kind=RequestKind.MCP)
    await settle()
    assert len(app.started) == 1 + 2 + 3  # each of them started at once, past the queue
    for future in app.started[-3:]:
        future.set_result(200)
    await asyncio.gather(retain.task, other.task, mcp.task)
    assert {retain.status, other.status, mcp.status} == {200}
    assert gate.shed == 0


async def test_queueing_past_max_wait_is_shed_even_when_the_deadline_allows_it(gate: RecallGate, clock: Clock) -> None:
    app = HeldApp()
    await serve_one(app, clock, 0.1)
    await saturate(app, 2 + 10)  # 10 queued: an expected wait of 550 ms > 500 ms
    shed = start(app, str(MAX_DEADLINE_S * 1000))
    await settle()
    assert shed.status == 503


async def test_a_shed_says_when_a_slot_is_expected_within_bounds(gate: RecallGate, clock: Clock) -> None:
    app = HeldApp()
    unmeasured = [start(app, "2000") for _ in range(3)]  # nothing measured yet: the third is shed on no estimate
    await settle()
    assert unmeasured[2].body[RETRY_AFTER_FIELD] == UNMEASURED_RETRY_AFTER_S
    clock.now += 0.008
    for future in app.started:
        future.set_result(200)
    await asyncio.gather(*(c.task for c in unmeasured))  # 8 ms recalls from here on
    await saturate(app, 2)  # both slots busy, nobody queued: a slot frees in ~4 ms
    short = start(app, "10")  # 4 ms wait + 8 ms recall > 10 ms: shed
    await settle()
    assert short.status == 503
    assert short.body[RETRY_AFTER_FIELD] == MIN_RETRY_AFTER_S  # 4 ms is below the floor
    assert short.headers[b"retry-after"] == b"1"
    await saturate(app, 1000)  # an expected wait of 1001 x 8 ms / 2 slots
    long = start(app, "60000")
    await settle()
    assert long.body[RETRY_AFTER_FIELD] == pytest.approx(4.004)
    assert long.headers[b"retry-after"] == b"5"
    await saturate(app, 2000)  # 12 s: past the ceiling
    longer = start(app, "60000")
    await settle()
    assert longer.body[RETRY_AFTER_FIELD] == MAX_RETRY_AFTER_S
    assert longer.headers[b"retry-after"] == b"10"


async def test_an_admitted_recall_is_served_however_long_it_queues(gate: RecallGate, clock: Clock) -> None:
    app = HeldApp()
    await serve_one(app, clock, 0.01)  # 10 ms recalls: the estimate admits it
    busy = await saturate(app, 3)
    call = start(app, "2000")
    await settle()
    assert not call.task.done()
    clock.now += 1.99  # the running recalls take far longer than estimated: it is not shed for that
    await settle()
    assert not call.task.done()
    while not call.task.done():
        for future in app.started:
            if not future.done():
                future.set_result(200)
        await settle()
    await asyncio.gather(*(c.task for c in busy))
    assert call.status == 200
    assert gate.shed == 0


async def test_a_recall_still_queued_when_its_caller_gave_up_is_answered(gate: RecallGate, clock: Clock) -> None:
    app = HeldApp()
    await serve_one(app, clock, 0.001)  # 1 ms recalls: a 10 ms deadline is admitted
    await saturate(app, 3)
    call = start(app, "10")
    await asyncio.wait_for(call.task, timeout=30)  # the running recalls never finish; its caller stops waiting
    assert call.status == 503
    assert len(app.started) == 3  # no work was started for it
    assert len(gate.waiters) == 1  # the one queued before it is still waiting; this one is gone


async def test_callers_that_do_not_authenticate_pass_the_gate_untouched(clock: Clock) -> None:
    """A credential that does not authenticate never holds a slot, never queues and never gets a shed answer
    (Hindsight answers it: a 401)."""

    async def identify(credential: str | None) -> Principal | None:
        return Principal(Kind.OPERATOR) if credential == "known" else None

    admission.configure(AdmissionConfig(concurrency=2, max_wait_s=0.5), identify=identify)
    current = admission.gate()
    assert current is not None
    current.clock = clock
    try:
        app = HeldApp()
        await serve_one(app, clock, 0.1)
        await saturate(app, 4)  # 2 running, 2 queued: a known caller stating 200 ms is shed
        shed = start(app, "200")
        strangers = [start(app, "200", credential=c) for c in ("forged", "", "known-not")]
        await settle()
        assert shed.status == 503
        assert not any(c.task.done() for c in strangers)  # handed to the app at once: no shed answer
        assert len(app.started) == 3 + 3
        assert (current.running, len(current.waiters), current.shed) == (2, 2, 1)  # they took no place
        for future in app.started[-3:]:
            future.set_result(401)
        await asyncio.gather(*(c.task for c in strangers))
        assert {c.status for c in strangers} == {401}
        assert current.service_s() == pytest.approx(0.1)  # and taught the estimate nothing
    finally:
        admission.configure(AdmissionConfig())


@pytest.mark.parametrize(
    ("header", "expected"),
    [(b"Bearer abc", "abc"), (b"bearer  abc ", "abc"), (b"abc", "abc"), (b"", None)],
)
def test_the_credential_is_read_as_hindsight_reads_it(header: bytes, expected: str | None) -> None:
    assert admission.credential({"headers": [(b"Authorization", header)]}) == expected
    assert admission.credential({"headers": []}) is None


async def test_the_first_recall_and_a_free_slot_are_always_admitted(gate: RecallGate, clock: Clock) -> None:
    app = HeldApp()
    first = start(app, "10")  # no recall time known yet
    await settle()
    assert len(app.started) == 1
    clock.now += 5.0  # very slow
    app.started[0].set_result(200)
    await first.task
    second = start(app, "10")  # the estimate says 5 s > 10 ms, but a slot is free: it runs (and teaches the gate)
    await settle()
    assert len(app.started) == 2
    app.started[1].set_result(200)
    await second.task
    assert gate.shed == 0


async def test_a_recall_answered_leaves_the_gate_though_its_server_works_on(clock: Clock) -> None:
    """Hindsight answers, then runs its after-recall hooks: the caller's next recall (sent the moment it has its
    answer) must not find its own finished recall still holding the slot and its user's share (the CI run's
    'share' shed on an idle server: slots=1, queued=0)."""
    after_answer: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def hooks_after_answer(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}", "more_body": False})
        await after_answer  # work after the answer (usage records, background tasks)

    with installed_gate(clock, AdmissionConfig(concurrency=1, max_wait_s=0.05)) as gate:
        first = start(hooks_after_answer, "10000", bank="user:a")
        await settle()
        assert first.status == 200
        assert not first.task.done()
        second = start(hooks_after_answer, "10000", bank="user:a")
        await settle()
        assert second.status == 200  # admitted at once, not shed
        assert gate.shed == 0
        assert gate.running == 0
        assert not gate.held
        after_answer.set_result(None)
        await asyncio.gather(first.task, second.task)
        assert gate.running == 0
        assert not gate.held


async def test_before_any_estimate_only_free_slots_are_taken(gate: RecallGate, clock: Clock) -> None:
    app = HeldApp()
    burst = [start(app, "2000") for _ in range(5)]  # a new process, a burst: nothing measured yet
    patient = start(app)  # no deadline: queues as ever
    await settle()
    assert len(app.started) == 2  # the two slots
    assert [c.status for c in burst[2:]] == [503, 503, 503]  # at once, not queued on a guess
    assert not patient.task.done()
    assert gate.shed == 3


async def test_refused_recalls_do_not_make_the_estimate(gate: RecallGate, clock: Clock) -> None:
    app = HeldApp()
    await serve_one(app, clock, 0.2)
    for _ in range(10):
        await serve_one(app, clock, 0.001, status=401)  # a flood of fast refusals
    assert gate.service_s() == pytest.approx(0.2)


async def test_a_client_gone_while_queued_gives_its_place_up(gate: RecallGate, clock: Clock) -> None:
    app = HeldApp()
    await serve_one(app, clock, 0.1)
    busy = await saturate(app, 2)
    queued = start(app)
    await settle()
    queued.task.cancel()
    await settle()
    assert not gate.waiters
    for future in app.started[1:]:
        future.set_result(200)
    await asyncio.gather(*(c.task for c in busy))
    assert gate.running == 0


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [
        ("2000", 2.0),
        ("1500.5", 1.5005),
        ("0", MIN_DEADLINE_S),
        ("-5", MIN_DEADLINE_S),
        ("1e12", MAX_DEADLINE_S),
        ("inf", None),
        ("abc", None),
        ("", None),
    ],
)
def test_stated_deadlines_are_clamped_or_ignored(raw: str, seconds: float | None) -> None:
    scope: Scope = {"headers": [(DEADLINE_HEADER.upper().encode(), raw.encode())]}
    assert admission.stated_deadline(scope) == (pytest.approx(seconds) if seconds is not None else None)
    assert admission.stated_deadline({"headers": []}) is None


async def test_a_stated_deadline_never_reorders_the_queue(gate: RecallGate, clock: Clock) -> None:
    app = HeldApp()
    await serve_one(app, clock, 0.1)
    await saturate(app, 2)
    patient = start(app)  # queued first, no deadline
    await settle()
    hurried = start(app, "400")  # queued second: a shorter deadline does not put it first
    await settle()
    app.started[1].set_result(200)
    await settle()
    assert patient.status is None
    assert hurried.status is None
    assert len(app.started) == 4  # the slot went to the first in line
    app.started[3].set_result(200)
    await patient.task
    assert patient.status == 200


async def test_a_shed_is_logged(gate: RecallGate, clock: Clock, caplog: pytest.LogCaptureFixture) -> None:
    app = HeldApp()
    await serve_one(app, clock, 0.1)
    await saturate(app, 4)
    shed = start(app, "100")
    await settle()
    assert shed.status == 503
    assert any(r.getMessage().startswith(SHED_LOG) for r in caplog.records)


async def test_concurrency_zero_turns_the_gate_off() -> None:
    admission.configure(AdmissionConfig(concurrency=0))
    try:
        assert admission.gate() is None
        app = HeldApp()
        calls = [start(app, "1") for _ in range(20)]
        await settle()
        assert len(app.started) == 20
        for future in app.started:
            future.set_result(200)
        await asyncio.gather(*(c.task for c in calls))
    finally:
        admission.configure(AdmissionConfig())


def test_settings_defaults_parse_and_round_trip() -> None:
    base = {"operator_key": "k" * 32}
    assert IsolationSettings.from_config(base).admission == AdmissionConfig()
    tuned = IsolationSettings.from_config(
        base
        | {
            "recall_concurrency": "0",
            "recall_max_wait_ms": "350",
            "recall_latency_tolerance": "2.5",
            "recall_latency_target": "3",
        }
    )
    assert tuned.admission == AdmissionConfig(concurrency=0, max_wait_s=0.35, tolerance=2.5, target=3.0)
    assert IsolationSettings.from_env(tuned.to_env()).admission == tuned.admission
    assert "HINDSIGHT_API_TENANT_RECALL_CONCURRENCY" not in IsolationSettings.from_config(base).to_env()
    with pytest.raises(ConfigError, match="RECALL_CONCURRENCY"):
        IsolationSettings.from_config(base | {"recall_concurrency": "-1"})
