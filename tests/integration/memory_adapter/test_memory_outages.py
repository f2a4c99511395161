"""Hindsight stopped, hung or failing: turns answer without memory, and after recovery every turn is stored once."""

from __future__ import annotations

import time

import pytest

from memory_adapter import RetainOutcome
from memory_adapter.config import ENV_VARS
from memory_adapter.identity.bank_ids import format_bank_id

from .conftest import deliver_directly, wait_until_spool_empty

pytestmark = pytest.mark.integration

TURNS = 5


async def _agent(payload: dict[str, str], memory_context: str) -> dict[str, str]:
    return {"output": f"answered: {payload['prompt']}"}


@pytest.mark.parametrize("fault", ["refused_url", "hung_url", "failing_url"])
async def test_outage_then_recovery_keeps_every_turn_exactly_once(
    fault, request, local_hindsight, make_adapter, user_ctx, run_id, bank, spool, monkeypatch
):
    fault_url = request.getfixturevalue(fault)
    user = f"outage-{fault.split('_')[0]}-{run_id}"
    bank_id = format_bank_id(user=user, agent="support")
    expected = {f"turn-{n}" for n in range(TURNS)}
    # GIVEN an agent whose Hindsight is down (same spool directory as the recovered one below); a hung one opens
    # its breaker after two deadline misses here, as a refusing or failing one does after two failures
    monkeypatch.setenv(ENV_VARS["breaker_slow_threshold"], "2")
    down = make_adapter(fault_url, recall_timeout=0.3, timeout=0.5, max_retries=1, breaker_failure_threshold=2)
    durations, reasons, handles = [], [], []
    for n in range(TURNS):
        ctx = user_ctx(user, "session-down", request_id=f"turn-{n}")
        started = time.perf_counter()
        recollection = await down.recall_for_turn(ctx, f"question {n}")
        result = await _agent({"prompt": f"question {n}"}, recollection.text)
        handles.append(down.retain_for_turn(ctx, result=result["output"], query=f"question {n}"))
        durations.append(time.perf_counter() - started)
        reasons.append(recollection.reason)
        # THEN each turn answers, without memory
        assert result["output"] == f"answered: question {n}"
        assert recollection.degraded
    # the breaker opened after two failures (or misses): the remaining turns did not touch the network
    assert reasons[2:] == ["breaker_open"] * (TURNS - 2)
    assert down.breaker_state == "open"
    assert await down.flush(timeout=30) is True
    assert {h.outcome for h in handles} == {RetainOutcome.SPOOLED}
    print(f"\n{fault}: per-turn seconds {[round(d, 3) for d in durations]}")
    # GIVEN the first of them reached Hindsight anyway (its acknowledgement was lost)
    deliver_directly(local_hindsight.url, spool.items(limit=1)[0])
    # WHEN Hindsight is back and the spool is replayed (twice, as after a crash mid-replay)
    up = make_adapter(local_hindsight.url)
    result = await up.replay()
    again = await up.replay()
    # THEN every turn is delivered, with its own credential, and stored exactly once
    assert (result.delivered, result.rejected, result.remaining) == (TURNS, 0, 0)
    assert again.delivered == 0
    assert up.spooled_retains == 0
    ids = bank.wait_for_documents(bank_id, expected)
    assert sorted(ids) == sorted(expected)


async def test_breaker_recovers_and_auto_replays(refused_url, local_hindsight, make_adapter, user_ctx, run_id, bank):
    """Recovery without an explicit replay: the spool left by an outage drains by itself once Hindsight answers."""
    user = f"auto-{run_id}"
    # GIVEN a turn spooled during an outage
    down = make_adapter(refused_url, max_retries=0)
    ctx = user_ctx(user, "s", request_id="outage-turn")
    assert await down.retain_for_turn(ctx, result="Noted.", query="remember the red car") is RetainOutcome.SPOOLED
    # WHEN the next turn is delivered by an adapter that reaches Hindsight (auto_replay is the default)
    up = make_adapter(local_hindsight.url, auto_replay=True)
    next_turn = user_ctx(user, "s", request_id="next-turn")
    assert await up.retain_for_turn(next_turn, result="ok", query="hello") is RetainOutcome.DELIVERED
    # THEN the spooled turn follows in the background, and both are stored once
    ids = bank.wait_for_documents(format_bank_id(user=user, agent="support"), {"outage-turn", "next-turn"})
    assert sorted(ids) == ["next-turn", "outage-turn"]
    assert await wait_until_spool_empty(up) == 0
