"""Admission control's adaptive limit, each caller's share, and the queue bound a slow machine gets."""

from __future__ import annotations

import asyncio

import pytest
from starlette.types import Message, Receive, Scope, Send

from hindsight_isolation import admission
from hindsight_isolation.admission import RecallGate
from hindsight_isolation.principal import Kind, Principal
from hindsight_isolation.route import RequestKind
from hindsight_isolation.settings import AdmissionConfig
from memory_adapter.identity.bank_ids import format_bank_id
from memory_adapter.recall_deadline import OVERLOADED, REASON_FIELD, RETRY_AFTER_FIELD
from tests.unit.hindsight_isolation.admission_harness import (
    Clock,
    HeldApp,
    installed_gate,
    rounds_of,
    saturate,
    serve_one,
    settle,
    start,
)


async def test_the_limit_comes_down_while_recalls_run_slower_than_alone(adaptive: RecallGate, clock: Clock) -> None:
    app = HeldApp()
    await serve_one(app, clock, 0.1)  # served alone: 100 ms
    assert adaptive.slots() == 4
    seen = []
    for _ in range(8):  # four at once share the CPU: 400 ms each; two, 200 ms: both over 1.5 x 100 ms
        await rounds_of(app, clock, rounds=1, at_once=4, seconds=0.1)
        seen.append(adaptive.slots())
    assert seen[0] == 2  # down in proportion (1.5 x 100 ms / 400 ms, halved at most)
    assert 1 in seen  # down to one at once ...
    assert max(seen) < 4  # ... probing above it, never back to where recalls were slow
    assert adaptive.baseline_s() == pytest.approx(0.1)  # slow recalls that shared the CPU do not move the baseline
    running = [start(app, "2000") for _ in range(adaptive.slots())]
    await settle()
    shed = start(app, "2000")  # one more waits for a slot, beyond a max wait of 0: shed at once
    await settle()
    assert shed.status == 503
    for future in app.started[-len(running) :]:
        future.set_result(200)
    await asyncio.gather(*(c.task for c in running))
    assert {c.status for c in running} == {200}


async def test_the_limit_climbs_back_while_a_full_gate_serves_fast_recalls(adaptive: RecallGate, clock: Clock) -> None:
    app = HeldApp()
    await serve_one(app, clock, 0.1)
    await rounds_of(app, clock, rounds=6, at_once=4, seconds=0.1)
    assert adaptive.slots() <= 2
    await rounds_of(app, clock, rounds=10, at_once=4, seconds=0.02)  # recalls got cheaper: four at once are fast
    assert adaptive.slots() == 4  # back to the ceiling, never above it
    assert adaptive.limit == pytest.approx(4.0)


async def test_a_gate_that_is_not_full_does_not_raise_its_limit(adaptive: RecallGate, clock: Clock) -> None:
    app = HeldApp()
    await serve_one(app, clock, 0.1)
    await rounds_of(app, clock, rounds=6, at_once=4, seconds=0.1)
    limit = adaptive.limit
    for _ in range(20):
        await serve_one(app, clock, 0.1)  # one at a time: the limit is not what holds recalls back
    assert adaptive.limit == pytest.approx(limit)


async def test_tolerance_zero_keeps_the_limit_fixed(clock: Clock) -> None:
    with installed_gate(clock, AdmissionConfig(concurrency=4, max_wait_s=0.0, tolerance=0.0)) as current:
        app = HeldApp()
        await serve_one(app, clock, 0.1)
        await rounds_of(app, clock, rounds=6, at_once=4, seconds=0.1)
        assert current.slots() == 4


async def test_one_bank_cannot_take_every_place_in_the_gate(gate: RecallGate, clock: Clock) -> None:
    app = HeldApp()
    await serve_one(app, clock, 0.01)
    mine = start(app, "2000", bank="greedy")  # its share of 2 slots: one place
    await settle()
    again = start(app, "2000", bank="greedy")  # over its share, but a slot is free and nobody waits: served
    await settle()
    other = start(app, "2000", bank="polite")  # the gate is full: another caller queues for the next slot
    more = start(app, "2000", bank="greedy")  # over its share and it would wait: shed at once
    patient = start(app, bank="greedy")  # without a deadline, likewise: its share is its share either way
    await settle()
    assert (more.status, patient.status) == (503, 503)
    assert more.body[REASON_FIELD] == patient.body[REASON_FIELD] == OVERLOADED
    assert more.body[RETRY_AFTER_FIELD] == pytest.approx(0.01)  # its own running recall's end: one recall time
    assert "holds its share" in more.body["detail"]  # the reason is the share, not a deadline it would have met
    assert "deadline" not in more.body["detail"]
    assert not any(c.task.done() for c in (mine, again, other))
    assert gate.held == {"/v1/default/banks/greedy/memories/recall": 2, "/v1/default/banks/polite/memories/recall": 1}
    for _ in range(3):
        app.started[len([f for f in app.started if f.done()])].set_result(200)
        await settle()
    await asyncio.gather(mine.task, again.task, other.task)
    assert {mine.status, again.status, other.status} == {200}
    assert not gate.held  # every place given back


async def test_a_flood_without_deadlines_cannot_shed_another_user_s_recalls(
    gate: RecallGate, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    """An attacker need not send the deadline the adapter always sends: its recalls that state none count against its
    share all the same, so they cannot fill the queue and make the gate shed everyone else's (the old rule queued
    them all: Bob's recall, forty recalls of 100 ms behind on 2 slots, was shed)."""
    app = HeldApp()
    await serve_one(app, clock, 0.1)
    flood = [start(app, bank=format_bank_id(user="mallory", agent=f"a{n}")) for n in range(40)]
    await settle()
    bob = start(app, "2000", bank=format_bank_id(user="bob", agent="support"))
    await settle()
    shed = [c for c in flood if c.status == 503]
    assert len(shed) == 38  # two took the free slots (a free slot is never refused); the rest are over her share
    assert {c.body[REASON_FIELD] for c in shed} == {OVERLOADED}
    assert any("stage=share" in r.message and "deadline_ms=none" in r.message for r in caplog.records)
    assert (gate.running, len(gate.waiters), bob.status) == (2, 1, None)  # Bob queues for the next slot
    for future in app.started[1:]:
        future.set_result(200)
    await settle()
    app.started[-1].set_result(200)
    await asyncio.gather(bob.task, *(c.task for c in flood))
    assert bob.status == 200
    assert (gate.shed, dict(gate.held)) == (38, {})


async def test_a_tenant_s_flood_without_deadlines_is_held_to_its_fair_share(clock: Clock) -> None:
    with installed_gate(clock, AdmissionConfig(concurrency=4, max_wait_s=0.5, tolerance=0.0)) as gate:
        app = HeldApp()
        await serve_one(app, clock, 0.01)
        big = [start(app, bank=_bank("big", n)) for n in range(4)]  # alone in the gate: every slot is its to take
        await settle()
        small = start(app, "2000", bank=_bank("small", 0))  # another tenant arrives: queued for the next slot
        more = start(app, bank=_bank("big", 4))  # no deadline, a user within its share, but big is over 4 // 2
        await settle()
        assert (more.status, small.status) == (503, None)
        assert more.body[REASON_FIELD] == OVERLOADED
        assert "its tenant already holds its fair share" in more.body["detail"]
        for _ in range(5):
            app.started[len([f for f in app.started if f.done()])].set_result(200)
            await settle()
        await asyncio.gather(small.task, *(c.task for c in big))
        assert small.status == 200
        assert not gate.tenants


async def test_an_idle_gate_serves_one_caller_s_recalls_in_parallel(clock: Clock) -> None:
    with installed_gate(clock, AdmissionConfig(concurrency=3, max_wait_s=0.05, tolerance=0.0)):
        app = HeldApp()
        await serve_one(app, clock, 0.03)
        calls = [start(app, "2000", bank="agent") for _ in range(3)]  # a turn's recall and its follow-ups
        await settle()
        assert not any(c.task.done() for c in calls)  # all three run: nothing else wanted a slot
        for future in app.started[1:]:
            future.set_result(200)
        await asyncio.gather(*(c.task for c in calls))
        assert {c.status for c in calls} == {200}


async def test_a_slow_machine_may_queue_half_a_recall_served_alone(clock: Clock) -> None:
    with installed_gate(clock, AdmissionConfig(concurrency=2, max_wait_s=0.05, tolerance=0.0)) as current:
        app = HeldApp()
        await serve_one(app, clock, 0.4)  # a recall alone takes 400 ms here: 50 ms of queueing would shed at once
        await saturate(app, 2)
        queued = start(app, "2000")  # expected wait 400 ms / 2 slots = 200 ms: half a recall alone, admitted
        await settle()
        shed = start(app, "2000")  # one more ahead: 400 ms, shed
        await settle()
        assert queued.status is None
        assert shed.status == 503
        assert current.max_wait_s() == pytest.approx(0.2)


async def test_the_service_estimate_follows_the_load(clock: Clock) -> None:
    with installed_gate(clock, AdmissionConfig(concurrency=4, max_wait_s=0.0, tolerance=0.0)) as current:
        app = HeldApp()
        await rounds_of(app, clock, rounds=5, at_once=4, seconds=0.1)  # 20 recalls four at once: 400 ms each
        for _ in range(17):
            await serve_one(app, clock, 0.1)  # then one at a time
        assert current.service_s() == pytest.approx(0.1)  # the slow ones no longer make the expected wait


def _bank(tenant: str | None, user: int) -> str:
    return format_bank_id(user=f"u{user}", agent="support", tenant=tenant)


async def test_a_tenant_of_many_users_cannot_crowd_out_another(clock: Clock) -> None:
    with installed_gate(clock, AdmissionConfig(concurrency=4, max_wait_s=0.5, tolerance=0.0)) as gate:
        app = HeldApp()
        await serve_one(app, clock, 0.01)
        big = [start(app, "2000", bank=_bank("big", n)) for n in range(4)]  # alone: every slot is its to take
        await settle()
        assert gate.running == 4
        small = start(app, "2000", bank=_bank("small", 0))  # another tenant arrives: queued for the next slot
        more = start(app, "2000", bank=_bank("big", 4))  # big holds 4 places of its fair 4 // 2: shed at once
        await settle()
        assert more.status == 503
        assert more.body[REASON_FIELD] == OVERLOADED
        assert not small.task.done()
        assert gate.tenants == {"big": 4, "small": 1}
        for _ in range(5):
            app.started[len([f for f in app.started if f.done()])].set_result(200)
            await settle()
        await asyncio.gather(small.task, *(c.task for c in big))
        assert small.status == 200
        assert not gate.tenants  # every place given back


async def test_a_tenant_alone_and_banks_without_a_tenant_are_not_capped(clock: Clock) -> None:
    for tenant in ("only", None):
        with installed_gate(clock, AdmissionConfig(concurrency=4, max_wait_s=0.5, tolerance=0.0)) as gate:
            app = HeldApp()
            await serve_one(app, clock, 0.01)
            calls = [start(app, "2000", bank=_bank(tenant, n)) for n in range(6)]  # 4 run, 2 queue
            await settle()
            assert (gate.running, len(gate.waiters), gate.shed) == (4, 2, 0)
            while not all(c.task.done() for c in calls):
                for future in app.started:
                    if not future.done():
                        future.set_result(200)
                await settle()
            assert {c.status for c in calls} == {200}


@pytest.mark.parametrize(
    ("bank", "owner", "tenant"),
    [
        ("tenant:acme:user:u1:agent:a", '["user", "acme", "u1"]', "acme"),
        ("user:u1:agent:a", '["user", null, "u1"]', None),
        ("free-form", "/v1/default/banks/free-form/memories/recall", None),
    ],
)
async def test_a_recall_counts_against_its_bank_s_owner_and_tenant(
    gate: RecallGate, bank: str, owner: str, tenant: str | None
) -> None:
    app = HeldApp()
    call = start(app, "2000", bank=bank)
    await settle()
    assert (dict(gate.held), dict(gate.tenants)) == ({owner: 1}, {tenant: 1} if tenant else {})
    app.started[0].set_result(200)
    await call.task
    assert (dict(gate.held), dict(gate.tenants)) == ({}, {})


async def test_a_recall_of_another_tenant_s_bank_holds_no_place_of_either_tenant(clock: Clock) -> None:
    """A user of one tenant naming another tenant's banks (Hindsight refuses them: 403) takes no part in the gate, so
    it cannot make the other tenant's recalls shed (nor spend its own tenant's share)."""
    users = {
        "big": Principal(Kind.USER, tenant="big", user="u0"),
        "small": Principal(Kind.USER, tenant="small", user="u9"),
    }

    async def identify(credential: str | None) -> Principal | None:
        return users.get(credential or "")

    with installed_gate(clock, AdmissionConfig(concurrency=4, max_wait_s=0.5, tolerance=0.0), identify) as current:
        app = HeldApp()
        await serve_one(app, clock, 0.01)
        spoof = [start(app, "2000", bank=_bank("small", n), credential="big") for n in range(4)]
        small = start(app, "2000", bank=_bank("small", 9), credential="small")
        await settle()
        assert (current.running, dict(current.tenants)) == (1, {"small": 1})  # the spoofs went straight through
        for future in app.started[1:]:
            future.set_result(403 if future is not app.started[-1] else 200)
        await asyncio.gather(small.task, *(c.task for c in spoof))
        assert ({c.status for c in spoof}, small.status) == ({403}, 200)


async def test_a_recall_of_a_bank_its_caller_may_not_read_takes_no_part(clock: Clock) -> None:
    """Mallory, authenticated, recalls Bob's bank: Hindsight refuses it (403) as before the gate. It never counts
    against Bob's share (it cannot make Bob's recalls shed) and never gets a shed answer (which would tell her Bob's
    bank is busy)."""
    bob, mallory = (Principal(Kind.USER, user=user) for user in ("bob", "mallory"))
    tokens = {"bob-token": bob, "mallory-token": mallory, "known": Principal(Kind.OPERATOR)}

    async def identify(credential: str | None) -> Principal | None:
        return tokens.get(credential or "")

    bobs = format_bank_id(user="bob", agent="support")
    with installed_gate(clock, AdmissionConfig(concurrency=2, max_wait_s=0.5), identify) as current:
        app = HeldApp()
        await serve_one(app, clock, 0.01)  # the operator's: the gate has an estimate
        running = [start(app, credential="bob-token", bank=bobs)]  # Bob's turn: one recall running
        await settle()
        probes = [start(app, "60000", credential="mallory-token", bank=bobs) for _ in range(3)]
        await settle()
        # Mallory's probes reach Hindsight at once (which answers 403), never a shed, and hold no place of Bob's
        assert not any(p.task.done() for p in probes)
        assert len(app.started) == 1 + 1 + 3
        assert (current.running, current.shed) == (1, 0)
        bobs_next = start(app, "2000", credential="bob-token", bank=bobs)  # a free slot: Bob is served
        await settle()
        assert not bobs_next.sent  # no answer yet: it runs
        assert current.running == 2
        for future in app.started[1:]:
            future.set_result(403 if future in app.started[2:5] else 200)
        await asyncio.gather(*(c.task for c in [*running, *probes, bobs_next]))
        assert {p.status for p in probes} == {403}
        assert bobs_next.status == 200
        assert (current.shed, dict(current.held)) == (0, {})


async def test_one_user_cannot_take_every_place_through_many_banks(gate: RecallGate, clock: Clock) -> None:
    """The share is the user's, whichever agent's bank a recall names: a recall per bank of a fresh agent name is
    still one user's recalls."""
    app = HeldApp()
    await serve_one(app, clock, 0.01)
    banks = [format_bank_id(user="greedy", agent=f"agent-{i}") for i in range(4)]
    first = start(app, "2000", bank=banks[0])
    await settle()
    other = start(app, "2000", bank=format_bank_id(user="polite", agent="support"))
    await settle()  # the gate is full (2 slots)
    more = [start(app, "2000", bank=bank) for bank in banks[1:]]
    await settle()
    assert [c.status for c in more] == [503, 503, 503]  # over the user's share (one place of two) and would wait
    for future in app.started[1:]:
        future.set_result(200)
    await asyncio.gather(first.task, other.task)
    assert not gate.held


@pytest.mark.parametrize("how", ["cancelled", "send fails"])
async def test_a_client_gone_mid_answer_gives_its_slot_and_place_back(clock: Clock, how: str) -> None:
    """The answer's first bytes are out when the client goes (the request is cancelled, or sending fails): the slot and
    the user's place come back, so a flood of callers that hang up mid-answer leaks nothing."""
    mid_answer: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def half_answer(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{", "more_body": True})
        await mid_answer
        await send({"type": "http.response.body", "body": b"}", "more_body": False})

    async def gone(message: Message) -> None:
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            raise OSError("client disconnected")

    with installed_gate(clock, AdmissionConfig(concurrency=1, max_wait_s=0.05)) as current:
        scope: Scope = {"type": "http", "method": "POST", "path": "/v1/default/banks/user:a:agent:b/memories/recall"}

        async def receive() -> Message:
            return {"type": "http.disconnect"}

        task = asyncio.ensure_future(admission.serve(RequestKind.RECALL, half_answer, scope, receive, gone))
        await settle()
        assert (current.running, sum(current.held.values())) == (1, 1)
        if how == "cancelled":
            task.cancel()
        else:
            mid_answer.set_result(None)
        await asyncio.gather(task, return_exceptions=True)
        assert (current.running, dict(current.held), list(current.waiters)) == (0, {}, [])
