"""The adapter driven by a verified Caller (the agent's path) agrees with the prior art's TurnContext path."""

from __future__ import annotations

from typing import Any

from memory_adapter import Caller, RetainOutcome, TurnContext
from memory_adapter.testing import FakeHindsight


def _stored(fake: FakeHindsight, bank_id: str) -> dict[str, Any]:
    (item,) = fake.documents(bank_id).values()
    return item


async def test_a_caller_and_a_turn_context_store_the_same_turn(make_adapter, fake):
    # GIVEN the same turn described both ways
    adapter = make_adapter()
    caller = Caller.of(user="alice", agent="support", tenant="acme", credential="token-a")
    ctx = TurnContext("s1", "bob", "support", "acme", "req-2", credential="token-b")
    # WHEN both are retained
    first = adapter.retain_for_turn(caller, result="ok", query="hi", session_id="s1", request_id="req-1")
    second = adapter.retain_for_turn(ctx, result="ok", query="hi")
    assert (await first, await second) == (RetainOutcome.DELIVERED, RetainOutcome.DELIVERED)
    # THEN the caller's bank is used as it is, and both items carry the same labels
    alice, bob = _stored(fake, caller.bank_id), _stored(fake, ctx.caller().bank_id)
    assert alice["metadata"] == {**bob["metadata"], "user_id": "alice", "request_id": "req-1"}
    assert alice["tags"] == [tag.replace("bob", "alice") for tag in bob["tags"]]
    assert alice["document_id"] == "req-1"
    assert {r.bearer for r in fake.calls("/memories")} == {"token-a", "token-b"}


async def test_recall_uses_the_callers_bank_and_credential(make_adapter, fake):
    caller = Caller(user="alice", agent="support", bank_id="custom-bank", credential="token-a")
    fake.banks["custom-bank"] = {"d0": {"content": "alice prefers email"}}
    recollection = await make_adapter().recall_for_turn(caller, "email?")
    assert recollection.count == 1
    (call,) = fake.calls("/memories/recall")
    assert (call.path, call.bearer) == ("/v1/default/banks/custom-bank/memories/recall", "token-a")


async def test_a_caller_without_a_session_is_not_retained(make_adapter, fake):
    caller = Caller.of(user="alice", agent="support")
    handle = make_adapter().retain_for_turn(caller, result="ok", session_id=None)
    assert await handle is RetainOutcome.SKIPPED
    assert fake.requests == []
