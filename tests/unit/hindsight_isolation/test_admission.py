"""Admission control of recalls (hindsight_isolation.admission) around an ASGI app whose recalls the test finishes
by hand, so queue lengths and service times are exact (no timing). The live server is in
tests/integration/isolation/test_admission.py."""

from __future__ import annotations

import asyncio
import itertools
import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from starlette.types import Message, Receive, Scope, Send

from hindsight_isolation import admission
from hindsight_isolation.admission import MAX_DEADLINE_S, MIN_DEADLINE_S, SHED_LOG, RecallGate
from hindsight_isolation.route import RequestKind
from hindsight_isolation.settings import AdmissionConfig, ConfigError, IsolationSettings
from memory_adapter.recall_deadline import DEADLINE_HEADER, OVERLOADED, REASON_FIELD


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@dataclass
class HeldApp:
    """An ASGI app whose requests stay open until the test releases them (with the status to answer)."""

    started: list[asyncio.Future[int]] = field(default_factory=list)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        gate: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self.started.append(gate)
        status = await gate
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": b"{}", "more_body": False})


@dataclass
class Call:
    """One request through :func:`admission.serve`, running as a task."""

    task: asyncio.Task[None]
    sent: list[Message]

    @property
    def status(self) -> int | None:
        return next((m["status"] for m in self.sent if m["type"] == "http.response.start"), None)

    @property
    def body(self) -> Any:
        return json.loads(b"".join(m.get("body", b"") for m in self.sent if m["type"] == "http.response.body"))

    @property
    def headers(self) -> dict[bytes, bytes]:
        start = next(m for m in self.sent if m["type"] == "http.response.start")
        return dict(start["headers"])


_banks = itertools.count()


def _start(
    app: HeldApp,
    deadline_ms: str | None = None,
    kind: RequestKind = RequestKind.RECALL,
    credential: str = "known",
    bank: str | None = None,
) -> Call:
    """One request, of its own bank unless ``bank`` is given."""
    headers = [] if deadline_ms is None else [(DEADLINE_HEADER.encode(), deadline_ms.encode())]
    headers.append((b"authorization", f"Bearer {credential}".encode()))
    path = f"/v1/default/banks/{bank or f'b{next(_banks)}'}/memories/recall"
    scope: Scope = {"type": "http", "method": "POST", "path": path, "headers": headers}
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    return Call(asyncio.ensure_future(admission.serve(kind, app, scope, receive, send)), sent)


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def gate(clock: Clock) -> Any:
    """A gate of 2 slots and 0.5 s of queueing at most, installed for the test."""
    admission.configure(AdmissionConfig(concurrency=2, max_wait_s=0.5))
    current = admission.gate()
    assert current is not None
    current.clock = clock
    yield current
    admission.configure(AdmissionConfig())


async def _serve_one(app: HeldApp, clock: Clock, seconds: float, status: int = 200) -> None:
    """One recall served alone, taking ``seconds``."""
    call = _start(app)
    await _settle()
    clock.now += seconds
    app.started[-1].set_result(status)
    await call.task


async def _saturate(app: HeldApp, count: int) -> list[Call]:
    """``count`` recalls without a deadline: two run, the rest queue."""
    calls = [_start(app) for _ in range(count)]
    await _settle()
    return calls


async def test_a_recall_that_would_miss_its_deadline_is_shed_at_once(gate: RecallGate, clock: Clock) -> None:
    app = HeldApp()
    await _serve_one(app, clock, 0.1)  # the recent recall time: 100 ms
    busy = await _saturate(app, 4)  # 2 running, 2 queued
    assert (gate.running, len(gate.waiters)) == (2, 2)

    # Queued ahead: 2; expected wait (2 + 1) x 100 ms / 2 slots = 150 ms, + 100 ms service = 250 ms > 200 ms.
    shed = _start(app, "200")
    await _settle()
    assert shed.task.done()  # answered without waiting for any slot
    assert shed.status == 503
    assert shed.body[REASON_FIELD] == OVERLOADED
    assert "150 ms" in shed.body["detail"]
    assert shed.headers[b"retry-after"] == b"1"
    assert len(app.started) == 3  # no work was started for it
    assert gate.shed == 1

    # With 300 ms it would make it: it queues, and runs when its turn comes.
    admitted = _start(app, "300")
    await _settle()
    assert not admitted.task.done()
    assert len(gate.waiters) == 3
    for _ in range(5):
        app.started[len([f for f in app.started if f.done()])].set_result(200)
        await _settle()
    await asyncio.gather(*(c.task for c in busy), admitted.task)
    assert admitted.status == 200
    assert (gate.running, len(gate.waiters)) == (0, 0)


async def test_a_recall_without_a_deadline_is_never_shed(gate: RecallGate, clock: Clock) -> None:
    app = HeldApp()
    await _serve_one(app, clock, 0.1)
    busy = await _saturate(app, 40)  # an expected wait of 2 s
    late = [_start(app), _start(app, "not a number"), _start(app, "nan"), _start(app, "")]
    await _settle()
    assert not any(c.task.done() for c in late)
    assert gate.shed == 0
    while not all(c.task.done() for c in [*busy, *late]):
        for future in app.started:
            if not future.done():
                future.set_result(200)
        await _settle()
    assert {c.status for c in [*busy, *late]} == {200}


async def test_other_requests_never_pass_through_the_gate(gate: RecallGate, clock: Clock) -> None:
    app = HeldApp()
    await _serve_one(app, clock, 0.1)
    await _saturate(app, 10)
    retain = _start(app, "1", kind=RequestKind.RETAIN)
    other = _start(app, "1", kind=RequestKind.OTHER)
    mcp = _start(app, "1", kind=RequestKind.MCP)
    await _settle()
    assert len(app.started) == 1 + 2 + 3  # each of them started at once, past the queue
    for future in app.started[-3:]:
        future.set_result(200)
    await asyncio.gather(retain.task, other.task, mcp.task)
    assert {retain.status, other.status, mcp.status} == {200}
    assert gate.shed == 0


async def test_queueing_past_max_wait_is_shed_even_when_the_deadline_allows_it(gate: RecallGate, clock: Clock) -> None:
    app = HeldApp()
    await _serve_one(app, clock, 0.1)
    await _saturate(app, 2 + 10)  # 10 queued: an expected wait of 550 ms > 500 ms
    shed = _start(app, str(MAX_DEADLINE_S * 1000))
    await _settle()
    assert shed.status == 503


async def test_an_admitted_recall_is_served_however_long_it_queues(gate: RecallGate, clock: Clock) -> None:
    app = HeldApp()
    await _serve_one(app, clock, 0.01)  # 10 ms recalls: the estimate admits it
    busy = await _saturate(app, 3)
    call = _start(app, "2000")
    await _settle()
    assert not call.task.done()
    clock.now += 1.99  # the running recalls take far longer than estimated: it is not shed for that
    await _settle()
    assert not call.task.done()
    while not call.task.done():
        for future in app.started:
            if not future.done():
                future.set_result(200)
        await _settle()
    await asyncio.gather(*(c.task for c in busy))
    assert call.status == 200
    assert gate.shed == 0


async def test_a_recall_still_queued_when_its_caller_gave_up_is_answered(gate: RecallGate, clock: Clock) -> None:
    app = HeldApp()
    await _serve_one(app, clock, 0.001)  # 1 ms recalls: a 10 ms deadline is admitted
    await _saturate(app, 3)
    call = _start(app, "10")
    await asyncio.wait_for(call.task, timeout=30)  # the running recalls never finish; its caller stops waiting
    assert call.status == 503
    assert len(app.started) == 3  # no work was started for it
    assert len(gate.waiters) == 1  # the one queued before it is still waiting; this one is gone


async def test_callers_that_do_not_authenticate_pass_the_gate_untouched(clock: Clock) -> None:
    """A credential that does not authenticate never holds a slot, never queues and never gets a shed answer
    (Hindsight answers it: a 401)."""

    async def identify(credential: str | None) -> object | None:
        return object() if credential == "known" else None

    admission.configure(AdmissionConfig(concurrency=2, max_wait_s=0.5), identify=identify)
    current = admission.gate()
    assert current is not None
    current.clock = clock
    try:
        app = HeldApp()
        await _serve_one(app, clock, 0.1)
        await _saturate(app, 4)  # 2 running, 2 queued: a known caller stating 200 ms is shed
        shed = _start(app, "200")
        strangers = [_start(app, "200", credential=c) for c in ("forged", "", "known-not")]
        await _settle()
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
    first = _start(app, "10")  # no recall time known yet
    await _settle()
    assert len(app.started) == 1
    clock.now += 5.0  # very slow
    app.started[0].set_result(200)
    await first.task
    second = _start(app, "10")  # the estimate says 5 s > 10 ms, but a slot is free: it runs (and teaches the gate)
    await _settle()
    assert len(app.started) == 2
    app.started[1].set_result(200)
    await second.task
    assert gate.shed == 0


async def test_before_any_estimate_only_free_slots_are_taken(gate: RecallGate, clock: Clock) -> None:
    app = HeldApp()
    burst = [_start(app, "2000") for _ in range(5)]  # a new process, a burst: nothing measured yet
    patient = _start(app)  # no deadline: queues as ever
    await _settle()
    assert len(app.started) == 2  # the two slots
    assert [c.status for c in burst[2:]] == [503, 503, 503]  # at once, not queued on a guess
    assert not patient.task.done()
    assert gate.shed == 3


async def test_refused_recalls_do_not_make_the_estimate(gate: RecallGate, clock: Clock) -> None:
    app = HeldApp()
    await _serve_one(app, clock, 0.2)
    for _ in range(10):
        await _serve_one(app, clock, 0.001, status=401)  # a flood of fast refusals
    assert gate.service_s() == pytest.approx(0.2)


async def test_a_client_gone_while_queued_gives_its_place_up(gate: RecallGate, clock: Clock) -> None:
    app = HeldApp()
    await _serve_one(app, clock, 0.1)
    busy = await _saturate(app, 2)
    queued = _start(app)
    await _settle()
    queued.task.cancel()
    await _settle()
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
    await _serve_one(app, clock, 0.1)
    await _saturate(app, 2)
    patient = _start(app)  # queued first, no deadline
    await _settle()
    hurried = _start(app, "400")  # queued second: a shorter deadline does not put it first
    await _settle()
    app.started[1].set_result(200)
    await _settle()
    assert patient.status is None
    assert hurried.status is None
    assert len(app.started) == 4  # the slot went to the first in line
    app.started[3].set_result(200)
    await patient.task
    assert patient.status == 200


async def test_a_shed_is_logged(gate: RecallGate, clock: Clock, caplog: pytest.LogCaptureFixture) -> None:
    app = HeldApp()
    await _serve_one(app, clock, 0.1)
    await _saturate(app, 4)
    shed = _start(app, "100")
    await _settle()
    assert shed.status == 503
    assert any(r.getMessage().startswith(SHED_LOG) for r in caplog.records)


async def test_concurrency_zero_turns_the_gate_off() -> None:
    admission.configure(AdmissionConfig(concurrency=0))
    try:
        assert admission.gate() is None
        app = HeldApp()
        calls = [_start(app, "1") for _ in range(20)]
        await _settle()
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
        base | {"recall_concurrency": "0", "recall_max_wait_ms": "350", "recall_latency_tolerance": "2.5"}
    )
    assert tuned.admission == AdmissionConfig(concurrency=0, max_wait_s=0.35, tolerance=2.5)
    assert IsolationSettings.from_env(tuned.to_env()).admission == tuned.admission
    assert "HINDSIGHT_API_TENANT_RECALL_CONCURRENCY" not in IsolationSettings.from_config(base).to_env()
    with pytest.raises(ConfigError, match="RECALL_CONCURRENCY"):
        IsolationSettings.from_config(base | {"recall_concurrency": "-1"})


@pytest.fixture
def adaptive(clock: Clock) -> Any:
    """A gate of 4 slots at most that lets in fewer while recalls run over 1.5x a recall served alone; no queue."""
    admission.configure(AdmissionConfig(concurrency=4, max_wait_s=0.0, tolerance=1.5))
    current = admission.gate()
    assert current is not None
    current.clock = clock
    yield current
    admission.configure(AdmissionConfig())


async def _rounds(app: HeldApp, clock: Clock, *, rounds: int, at_once: int, seconds: float) -> None:
    """``rounds`` times: ``at_once`` recalls without a deadline arrive together; the ones the gate lets in share one
    CPU (each takes ``seconds`` times as many as run together), the rest queue."""
    for _ in range(rounds):
        calls = await _saturate(app, at_once)
        while not all(c.task.done() for c in calls):
            running = [f for f in app.started if not f.done()]
            clock.now += seconds * len(running)
            for future in running:
                future.set_result(200)
            await _settle()


async def test_the_limit_comes_down_while_recalls_run_slower_than_alone(adaptive: RecallGate, clock: Clock) -> None:
    app = HeldApp()
    await _serve_one(app, clock, 0.1)  # served alone: 100 ms
    assert adaptive.slots() == 4
    seen = []
    for _ in range(8):  # four at once share the CPU: 400 ms each; two, 200 ms: both over 1.5 x 100 ms
        await _rounds(app, clock, rounds=1, at_once=4, seconds=0.1)
        seen.append(adaptive.slots())
    assert seen[0] == 2  # down in proportion (1.5 x 100 ms / 400 ms, halved at most)
    assert 1 in seen  # down to one at once ...
    assert max(seen) < 4  # ... probing above it, never back to where recalls were slow
    assert adaptive.baseline_s() == pytest.approx(0.1)  # slow recalls that shared the CPU do not move the baseline
    running = [_start(app, "2000") for _ in range(adaptive.slots())]
    await _settle()
    shed = _start(app, "2000")  # one more waits for a slot, beyond a max wait of 0: shed at once
    await _settle()
    assert shed.status == 503
    for future in app.started[-len(running) :]:
        future.set_result(200)
    await asyncio.gather(*(c.task for c in running))
    assert {c.status for c in running} == {200}


async def test_the_limit_climbs_back_while_a_full_gate_serves_fast_recalls(adaptive: RecallGate, clock: Clock) -> None:
    app = HeldApp()
    await _serve_one(app, clock, 0.1)
    await _rounds(app, clock, rounds=6, at_once=4, seconds=0.1)
    assert adaptive.slots() <= 2
    await _rounds(app, clock, rounds=10, at_once=4, seconds=0.02)  # recalls got cheaper: four at once are fast
    assert adaptive.slots() == 4  # back to the ceiling, never above it
    assert adaptive.limit == pytest.approx(4.0)


async def test_a_gate_that_is_not_full_does_not_raise_its_limit(adaptive: RecallGate, clock: Clock) -> None:
    app = HeldApp()
    await _serve_one(app, clock, 0.1)
    await _rounds(app, clock, rounds=6, at_once=4, seconds=0.1)
    limit = adaptive.limit
    for _ in range(20):
        await _serve_one(app, clock, 0.1)  # one at a time: the limit is not what holds recalls back
    assert adaptive.limit == pytest.approx(limit)


async def test_tolerance_zero_keeps_the_limit_fixed(clock: Clock) -> None:
    admission.configure(AdmissionConfig(concurrency=4, max_wait_s=0.0, tolerance=0.0))
    current = admission.gate()
    assert current is not None
    current.clock = clock
    try:
        app = HeldApp()
        await _serve_one(app, clock, 0.1)
        await _rounds(app, clock, rounds=6, at_once=4, seconds=0.1)
        assert current.slots() == 4
    finally:
        admission.configure(AdmissionConfig())


async def test_one_bank_cannot_take_every_place_in_the_gate(gate: RecallGate, clock: Clock) -> None:
    app = HeldApp()
    await _serve_one(app, clock, 0.01)
    mine = _start(app, "2000", bank="greedy")  # its share of 2 slots: one place
    await _settle()
    again = _start(app, "2000", bank="greedy")  # a second at once: shed, though a slot is free
    other = _start(app, "2000", bank="polite")  # another caller takes the free slot
    patient = _start(app, bank="greedy")  # without a deadline never shed: it queues
    await _settle()
    assert again.status == 503
    assert not other.task.done()
    assert not patient.task.done()
    assert gate.held == {"/v1/default/banks/greedy/memories/recall": 2, "/v1/default/banks/polite/memories/recall": 1}
    for _ in range(3):
        app.started[len([f for f in app.started if f.done()])].set_result(200)
        await _settle()
    await asyncio.gather(mine.task, other.task, patient.task)
    assert {mine.status, other.status, patient.status} == {200}
    assert not gate.held  # every place given back


async def test_a_slow_machine_may_queue_half_a_recall_served_alone(clock: Clock) -> None:
    admission.configure(AdmissionConfig(concurrency=2, max_wait_s=0.05, tolerance=0.0))
    current = admission.gate()
    assert current is not None
    current.clock = clock
    try:
        app = HeldApp()
        await _serve_one(app, clock, 0.4)  # a recall alone takes 400 ms here: 50 ms of queueing would shed at once
        await _saturate(app, 2)
        queued = _start(app, "2000")  # expected wait 400 ms / 2 slots = 200 ms: half a recall alone, admitted
        await _settle()
        shed = _start(app, "2000")  # one more ahead: 400 ms, shed
        await _settle()
        assert queued.status is None
        assert shed.status == 503
        assert current.max_wait_s() == pytest.approx(0.2)
    finally:
        admission.configure(AdmissionConfig())


async def test_the_service_estimate_follows_the_load(clock: Clock) -> None:
    admission.configure(AdmissionConfig(concurrency=4, max_wait_s=0.0, tolerance=0.0))
    current = admission.gate()
    assert current is not None
    current.clock = clock
    try:
        app = HeldApp()
        await _rounds(app, clock, rounds=5, at_once=4, seconds=0.1)  # 20 recalls four at once: 400 ms each
        for _ in range(17):
            await _serve_one(app, clock, 0.1)  # then one at a time
        assert current.service_s() == pytest.approx(0.1)  # the slow ones no longer make the expected wait
    finally:
        admission.configure(AdmissionConfig())
