"""One adapter, one URL: Hindsight fails (refused, hung, 503) and comes back. The turns during the outage answer
without memory, the breaker opens, a background probe closes it after recovery, the spool drains by itself, and every
turn is in the bank exactly once."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

from memory_adapter import RetainOutcome
from memory_adapter.config import ENV_VARS
from memory_adapter.identity.bank_ids import format_bank_id

from .conftest import wait_until_spool_empty
from .switchable_proxy import SwitchableProxy

pytestmark = pytest.mark.integration


@pytest.fixture
def proxy(local_hindsight: Any) -> Iterator[SwitchableProxy]:
    with SwitchableProxy(local_hindsight.url) as running:
        yield running


@pytest.mark.parametrize("outage", ["refused", "hung", "failing"])
async def test_same_adapter_recovers_by_itself(outage, proxy, make_adapter, user_ctx, run_id, bank, monkeypatch):
    user = f"recover-{outage}-{run_id}"
    # deadline misses (hung) open the breaker as failures do (refused, failing): after two that are half of the
    # calls in the window (the healthy turn counts), probed after 0.5 s
    monkeypatch.setenv(ENV_VARS["breaker_slow_threshold"], "2")
    monkeypatch.setenv(ENV_VARS["breaker_slow_ratio"], "0.5")
    monkeypatch.setenv(ENV_VARS["breaker_slow_reset_timeout"], "0.5")
    adapter = make_adapter(
        proxy.url,
        recall_timeout=2.0,  # generous: the healthy phases must not time out on a loaded CI machine
        timeout=2.0,
        max_retries=1,
        breaker_failure_threshold=2,
        breaker_reset_timeout=0.5,
        auto_replay=True,
    )
    turn = 0

    async def run_turn() -> tuple[Any, Any]:
        nonlocal turn
        ctx = user_ctx(user, "session", request_id=f"turn-{turn}")
        turn += 1
        recollection = await adapter.recall_for_turn(ctx, f"question {turn}")
        handle = adapter.retain_for_turn(ctx, result=f"answer {turn}", query=f"question {turn}")
        return recollection, handle

    # GIVEN a healthy start
    recollection, handle = await run_turn()
    assert not recollection.degraded
    assert await handle is RetainOutcome.DELIVERED
    # WHEN Hindsight fails
    proxy.set_mode(outage)
    outage_turns = [await run_turn() for _ in range(4)]
    # THEN every turn answers without memory, the breaker opens and the retains are spooled
    assert all(r.degraded for r, _ in outage_turns)
    assert outage_turns[-1][0].reason == "breaker_open"
    assert await adapter.flush(timeout=30) is True
    assert {h.outcome for _, h in outage_turns} == {RetainOutcome.SPOOLED}
    # WHEN it comes back, the next turns trigger a background probe; memory returns without a restart
    proxy.set_mode("up")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        recollection, handle = await run_turn()
        if not recollection.degraded:
            break
        await asyncio.sleep(0.2)
    assert not recollection.degraded
    assert adapter.breaker_state == "closed"
    # THEN the spool drains by itself and every turn is in the bank exactly once
    await adapter.flush(timeout=30)
    expected = {f"turn-{n}" for n in range(turn)}
    ids = bank.wait_for_documents(format_bank_id(user=user, agent="support"), expected)
    assert sorted(ids) == sorted(expected)
    assert await wait_until_spool_empty(adapter) == 0
