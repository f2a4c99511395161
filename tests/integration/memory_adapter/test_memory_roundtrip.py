"""Through memory_adapter against the real local Hindsight: cross-session recall and isolation between identities."""

from __future__ import annotations

import asyncio
import time

import pytest

from memory_adapter import RetainOutcome, TurnContext
from memory_adapter.identity.bank_ids import format_bank_id

pytestmark = pytest.mark.integration


async def _recall_until(adapter, ctx, query: str, needle: str, wait_s: float = 90.0):
    """Fact extraction runs asynchronously on the server: poll recall until ``needle`` shows up (or time out)."""
    deadline = time.monotonic() + wait_s
    while True:
        recollection = await adapter.recall_for_turn(ctx, query)
        if needle in recollection.text.lower() or time.monotonic() > deadline:
            return recollection
        await asyncio.sleep(0.5)


async def test_a_preference_from_session_one_is_recalled_in_session_two(
    local_hindsight, make_adapter, user_ctx, run_id
):
    user = f"user-alex-{run_id}"
    # GIVEN session 1 where the user states a preference
    session_one = make_adapter(local_hindsight.url)
    handle = session_one.retain_for_turn(
        user_ctx(user, "session-1"),
        result="Noted: I will contact you by email rather than phone.",
        query="user-alex prefers email over phone.",
    )
    assert await handle is RetainOutcome.DELIVERED
    # WHEN a later session (new session id, new adapter as in a fresh microVM) asks in other words
    session_two = make_adapter(local_hindsight.url)
    recollection = await _recall_until(
        session_two, user_ctx(user, "session-2"), "How does this user like to be contacted?", "email"
    )
    # THEN the preference is recalled, as delimited data
    assert not recollection.degraded
    assert "email over phone" in recollection.text
    assert recollection.text.startswith("<recalled_memories>")


async def test_two_users_see_none_of_each_others_memories(local_hindsight, make_adapter, user_ctx, run_id, bank):
    adapter = make_adapter(local_hindsight.url)
    alice, bob = f"alice-{run_id}", f"bob-{run_id}"
    secrets = {alice: "alice keeps a purple notebook.", bob: "bob keeps a green notebook."}
    for user, secret in secrets.items():
        ctx = user_ctx(user, "s", request_id=f"{user}-turn")
        assert await adapter.retain_for_turn(ctx, result="Noted.", query=secret) is RetainOutcome.DELIVERED
    for user in secrets:
        bank.wait_for_documents(format_bank_id(user=user, agent="support"), {f"{user}-turn"})
    for user, other in ((alice, bob), (bob, alice)):
        own = await _recall_until(adapter, user_ctx(user, "s2"), "What color is the notebook?", "notebook")
        assert secrets[user].split()[3] in own.text  # "purple" / "green"
        assert secrets[other].split()[3] not in own.text
        assert all(m.document_id in (None, f"{user}-turn") for m in own.memories)


async def test_a_user_token_cannot_read_another_users_bank(local_hindsight, make_adapter, token_issuer, run_id):
    if local_hindsight.operator_key is None:
        pytest.skip("this Hindsight runs without per-user isolation")
    adapter = make_adapter(local_hindsight.url)
    victim = f"victim-{run_id}"
    ctx = TurnContext("s", victim, "support", credential=token_issuer.mint(victim))
    assert await adapter.retain_for_turn(ctx, result="ok", query="victim secret") is RetainOutcome.DELIVERED
    # the attacker's token, but a context naming the victim (as a compromised or buggy caller would)
    forged = TurnContext("s", victim, "support", credential=token_issuer.mint(f"attacker-{run_id}"))
    recollection = await adapter.recall_for_turn(forged, "victim secret")
    assert (recollection.count, recollection.degraded, recollection.reason) == (0, True, "rejected")
    assert adapter.breaker_state == "closed"  # a refusal is not an outage


async def test_two_tenants_see_none_of_each_others_memories(local_hindsight, make_adapter, run_id, bank):
    # Tenant-qualified banks through the operator credential (the fixture's issuer puts no tenant in user tokens):
    # this checks that the adapter keeps tenants apart by bank id alone.
    adapter = make_adapter(local_hindsight.url, api_key=local_hindsight.operator_key)
    texts = {"acme": "the acme launch code is orange.", "globex": "the globex launch code is teal."}
    for tenant, text in texts.items():
        ctx = TurnContext("s", f"same-user-{run_id}", "support", tenant_id=f"{tenant}-{run_id}", request_id=tenant)
        assert await adapter.retain_for_turn(ctx, result="Noted.", query=text) is RetainOutcome.DELIVERED
    for tenant in texts:
        bank.wait_for_documents(
            format_bank_id(user=f"same-user-{run_id}", agent="support", tenant=f"{tenant}-{run_id}"), {tenant}
        )
    for tenant, other in (("acme", "globex"), ("globex", "acme")):
        ctx = TurnContext("s2", f"same-user-{run_id}", "support", tenant_id=f"{tenant}-{run_id}")
        own = await _recall_until(adapter, ctx, "What is the launch code?", texts[tenant].split()[-1].rstrip("."))
        assert texts[tenant].split()[-1].rstrip(".") in own.text
        assert texts[other].split()[-1].rstrip(".") not in own.text


def test_sync_entrypoint_with_asyncio_run_per_turn_loses_nothing(local_hindsight, make_adapter, user_ctx, run_id, bank):
    # GIVEN a sync handler that runs every turn in its own event loop (the prior art lost retains here)
    adapter = make_adapter(local_hindsight.url)
    user = f"sync-{run_id}"

    async def turn(n: int) -> dict[str, object]:
        async def agent(payload: dict[str, object], memory: str) -> dict[str, object]:
            return {"output": f"answer {n}"}

        ctx = user_ctx(user, f"session-{n}", request_id=f"req-{n}")
        result: dict[str, object] = await adapter.run_turn(ctx, {"prompt": f"question {n}"}, agent_callable=agent)
        return result

    for n in range(3):
        assert asyncio.run(turn(n)) == {"output": f"answer {n}"}
    # WHEN a final loop flushes
    assert asyncio.run(adapter.flush(timeout=30)) is True
    # THEN every turn is in the bank exactly once
    ids = bank.wait_for_documents(format_bank_id(user=user, agent="support"), {"req-0", "req-1", "req-2"})
    assert sorted(ids) == ["req-0", "req-1", "req-2"]


async def test_a_turn_is_remembered_with_the_date_it_took_place(local_hindsight, make_adapter, user_ctx, run_id):
    from datetime import UTC, datetime

    user = f"user-dana-{run_id}"
    adapter = make_adapter(local_hindsight.url)
    # GIVEN a turn from May 2023 retained today (imported history, or a replayed spool)
    handle = adapter.retain_for_turn(
        user_ctx(user, "session-1"),
        result="Noted.",
        query="I adopted a greyhound called Biscuit.",
        occurred_at=datetime(2023, 5, 8, 13, 56, tzinfo=UTC),
    )
    assert await handle is RetainOutcome.DELIVERED
    # WHEN it is recalled
    recollection = await _recall_until(adapter, user_ctx(user, "session-2"), "What is my dog called?", "biscuit")
    # THEN the memory is dated by the turn, not by the day it was retained
    assert "Biscuit" in recollection.text
    assert "2023-05-08" in recollection.text
    assert datetime.now(UTC).date().isoformat() not in recollection.text
