"""Retain: one document per turn, idempotency key, background delivery, retries, spool, dead letters, flush."""

from __future__ import annotations

import asyncio
import contextlib
import threading

from memory_adapter import RetainHandle, RetainOutcome, TurnContext
from memory_adapter.kinds import MemoryKind, kind_of
from memory_adapter.observability import Metric
from memory_adapter.policies import RetentionPolicy
from memory_adapter.testing import Fault

BANK = "user:alice:agent:support"


def ctx(**kw) -> TurnContext:
    return TurnContext(runtime_session_id="s1", user_id="alice", agent_name="support", **kw)


async def test_each_turn_without_request_id_gets_its_own_document(make_adapter, fake):
    adapter = make_adapter()
    for n in range(3):
        await adapter.retain_for_turn(ctx(), result=f"answer {n}", query=f"question {n}")
    docs = fake.documents(BANK)
    assert len(docs) == 3
    assert sorted(d["content"] for d in docs.values()) == [
        f"User: question {n}\nAssistant: answer {n}" for n in range(3)
    ]


async def test_request_id_is_the_document_id(make_adapter, fake):
    adapter = make_adapter()
    assert await adapter.retain_for_turn(ctx(request_id="req-9"), result="ok") is RetainOutcome.DELIVERED
    assert list(fake.documents(BANK)) == ["req-9"]


async def test_retained_item_has_prior_art_content_tags_metadata(make_adapter, fake):
    policy = RetentionPolicy(context_label="lbl", extra_tags=["x"], extra_metadata={"k": "v"})
    adapter = make_adapter(retention_policy=policy, tags=["cfg"])
    await adapter.retain_for_turn(ctx(tenant_id="acme", request_id="r"), result="A", query="Q")
    (call,) = fake.calls("/memories")
    assert call.path == "/v1/default/banks/tenant:acme:user:alice:agent:support/memories"
    assert call.body["async"] is True
    (item,) = call.body["items"]
    assert item["content"] == "User: Q\nAssistant: A"
    assert item["context"] == "lbl"
    assert item["tags"] == ["tenant:acme", "user:alice", "agent:support", "session:s1", "kind:turn", "cfg", "x"]
    assert item["metadata"]["k"] == "v"
    assert item["metadata"]["kind"] == "turn"
    assert item["metadata"]["request_id"] == "r"
    assert item["timestamp"]


async def test_a_policy_kind_labels_the_retained_item(make_adapter, fake):
    # GIVEN a policy retaining plans
    adapter = make_adapter(retention_policy=RetentionPolicy(kind=MemoryKind.PLAN))
    # WHEN a turn is retained
    await adapter.retain_for_turn(ctx(), result="A", query="Q")
    # THEN the item carries the plan kind as tag and metadata (what expiry reads back)
    (item,) = fake.calls("/memories")[0].body["items"]
    assert kind_of(item["tags"], item["metadata"]) is MemoryKind.PLAN
    assert "kind:plan" in item["tags"]
    assert "kind:turn" not in item["tags"]


async def test_text_the_server_cannot_store_is_cleaned_not_lost(make_adapter, fake):
    # GIVEN a model reply with a NUL and a lone surrogate (the server refuses both with a 400)
    adapter = make_adapter()
    outcome = await adapter.retain_for_turn(ctx(request_id="r"), result="ok\x00 \ud800done", query="q\x00")
    # THEN the turn is delivered, with the NUL removed and the surrogate replaced
    assert outcome is RetainOutcome.DELIVERED
    assert fake.documents(BANK)["r"]["content"] == "User: q\nAssistant: ok \ufffddone"


async def test_include_user_message_false_stores_the_result_only(make_adapter, fake):
    adapter = make_adapter(retention_policy=RetentionPolicy(include_user_message=False))
    await adapter.retain_for_turn(ctx(), result="only this", query="Q")
    assert [d["content"] for d in fake.documents(BANK).values()] == ["only this"]


async def test_blank_result_and_bad_identity_are_skipped(make_adapter, fake):
    adapter = make_adapter()
    assert await adapter.retain_for_turn(ctx(), result="  ") is RetainOutcome.SKIPPED
    bad = TurnContext(runtime_session_id="s", user_id="", agent_name="support")
    assert await adapter.retain_for_turn(bad, result="x") is RetainOutcome.SKIPPED
    assert fake.requests == []


async def test_same_turn_gets_the_same_operation_id(make_adapter, fake):
    adapter = make_adapter()
    first = adapter.retain_for_turn(ctx(request_id="r1"), result="A", query="Q")
    second = adapter.retain_for_turn(ctx(request_id="r1"), result="A", query="Q")
    other = adapter.retain_for_turn(ctx(request_id="r2"), result="A", query="Q")
    await asyncio.gather(first, second, other)
    assert first.operation_id == second.operation_id != other.operation_id
    assert len(fake.documents(BANK)) == 2


async def test_transient_errors_are_retried_then_delivered(make_adapter, fake, metrics):
    fake.fault = Fault.STATUS
    adapter = make_adapter(max_retries=5, retry_base_delay=0.05, retry_max_delay=0.05, breaker_failure_threshold=10)
    handle = adapter.retain_for_turn(ctx(), result="A")
    for _ in range(500):  # poll: the retries run on a background thread
        if len(fake.calls("/memories")) >= 2:
            break
        await asyncio.sleep(0.01)
    fake.fault = Fault.NONE
    assert await handle is RetainOutcome.DELIVERED
    assert len(fake.documents(BANK)) == 1
    assert metrics.total(Metric.RETAIN_RETRIED) >= 1
    assert metrics.total(Metric.RETAIN_DELIVERED) == 1


async def test_undeliverable_retain_is_spooled_with_its_credential_then_replayed_once(make_adapter, fake, metrics):
    fake.fault = Fault.DOWN
    adapter = make_adapter(max_retries=2, breaker_failure_threshold=100)
    handle = adapter.retain_for_turn(ctx(credential="user-jwt"), result="A")
    assert await handle is RetainOutcome.SPOOLED
    assert len(fake.calls("/memories")) == 3  # first attempt + 2 retries, all with the turn's credential
    assert {c.bearer for c in fake.calls("/memories")} == {"user-jwt"}
    assert adapter.spooled_retains == 1
    assert metrics.total(Metric.RETAIN_SPOOLED) == 1
    fake.fault = Fault.NONE
    result = await adapter.replay()
    assert (result.delivered, result.rejected, result.remaining) == (1, 0, 0)
    assert fake.calls("/memories")[-1].bearer == "user-jwt"
    assert len(fake.documents(BANK)) == 1
    again = await adapter.replay()
    assert again.delivered == 0


async def test_replay_of_something_already_delivered_is_a_no_op(make_adapter, fake, tmp_path):
    # GIVEN a turn that reached Hindsight although the adapter believed it failed (lost acknowledgement)
    adapter = make_adapter()
    handle = adapter.retain_for_turn(ctx(request_id="r"), result="A")
    await handle
    from memory_adapter.spool import DirectorySpool

    spool = DirectorySpool(tmp_path / "spool")
    (call,) = fake.calls("/memories")
    from memory_adapter.spool import RetainRecord

    spool.put(RetainRecord(call.body["operation_id"], BANK, call.body["items"][0]))
    # WHEN the spool is replayed
    result = await adapter.replay()
    # THEN the server sees the same operation id and the bank still holds one document
    assert result.delivered == 1
    assert len(fake.documents(BANK)) == 1
    assert len(fake.operations) == 1


async def test_open_breaker_spools_without_calling_hindsight(make_adapter, fake):
    fake.fault = Fault.DOWN
    adapter = make_adapter(breaker_failure_threshold=1, max_retries=0, breaker_reset_timeout=60)
    assert await adapter.retain_for_turn(ctx(), result="A") is RetainOutcome.SPOOLED
    calls = len(fake.requests)
    assert adapter.breaker_state == "open"
    assert await adapter.retain_for_turn(ctx(), result="B") is RetainOutcome.SPOOLED
    assert len(fake.requests) == calls
    assert adapter.spooled_retains == 2


async def test_refused_retain_goes_to_dead_letters(make_adapter, fake, metrics, tmp_path):
    fake.deny.add((None, BANK))
    adapter = make_adapter()
    assert await adapter.retain_for_turn(ctx(), result="A") is RetainOutcome.REJECTED
    assert len(fake.calls("/memories")) == 1  # never retried
    from memory_adapter.spool import DirectorySpool

    assert DirectorySpool(tmp_path / "spool").count(dead=True) == 1
    assert metrics.total(Metric.RETAIN_FAILED) == 1
    # an operator can replay dead letters with another credential
    result = await adapter.replay(dead_letters=True, credential="operator")
    assert result.delivered == 1
    assert fake.calls("/memories")[-1].bearer == "operator"


async def test_after_turn_never_raises_and_waits_only_when_retain_async_is_false(make_adapter, fake):
    fake.fault = Fault.HANG
    adapter = make_adapter(timeout=0.2, max_retries=0)
    await asyncio.wait_for(adapter.after_turn(ctx(), result="A"), timeout=0.1)  # returns at once
    assert adapter.pending_retains == 1
    sync_adapter = make_adapter(retain_async=False, timeout=0.2, max_retries=0)
    await sync_adapter.after_turn(ctx(), result="B")
    assert sync_adapter.pending_retains == 0


async def test_flush_waits_for_pending_retains(make_adapter, fake):
    fake.fault = Fault.HANG
    adapter = make_adapter(timeout=0.3, max_retries=0, breaker_failure_threshold=100)
    handles = [adapter.retain_for_turn(ctx(), result=f"A{n}") for n in range(3)]
    assert await adapter.flush(timeout=0.01) is False
    assert await adapter.flush(timeout=10) is True
    assert {h.outcome for h in handles} == {RetainOutcome.SPOOLED}


async def test_aclose_spools_what_is_still_pending(make_adapter, fake):
    fake.fault = Fault.HANG
    adapter = make_adapter(timeout=30, max_retries=0)
    handle = adapter.retain_for_turn(ctx(), result="A")
    await asyncio.sleep(0.05)
    await adapter.aclose(timeout=0.05)
    assert handle.outcome is RetainOutcome.SPOOLED
    fake.fault = Fault.NONE
    fake.release()
    assert (await adapter.replay()).delivered == 1
    assert len(fake.documents(BANK)) == 1


async def test_the_record_is_built_off_the_turns_thread(make_adapter, fake):
    # GIVEN an adapter whose record construction notes the thread it runs on
    adapter = make_adapter()
    threads: list[int] = []
    build = adapter._record

    def spy(*args: object) -> object:
        threads.append(threading.get_ident())
        return build(*args)

    adapter._record = spy
    # WHEN a turn is retained
    handle = adapter.retain_for_turn(ctx(request_id="r-off"), result="A", query="Q")
    assert adapter.pending_retains == 1  # accepted at once: pending (so /ping is busy) before it is built
    # THEN it is delivered, and its record was built once, on a delivery thread
    assert await handle is RetainOutcome.DELIVERED
    assert threads
    assert threading.get_ident() not in threads
    assert len(threads) == 1
    assert list(fake.documents(BANK)) == ["r-off"]


async def test_aclose_spools_retains_whose_record_was_not_built_yet(make_adapter, fake):
    # GIVEN one delivery thread stuck on a hung Hindsight, so the next two retains wait in the queue unbuilt
    fake.fault = Fault.HANG
    adapter = make_adapter(timeout=30, max_retries=0, retain_workers=1)
    stuck = adapter.retain_for_turn(ctx(request_id="r-0"), result="A")
    await asyncio.sleep(0.05)
    waiting = [adapter.retain_for_turn(ctx(), result=f"B{n}") for n in range(2)]
    # WHEN the adapter closes before they were sent
    await adapter.aclose(timeout=0.05)
    # THEN every accepted turn is spooled, under the operation id its handle reports
    assert [h.outcome for h in (stuck, *waiting)] == [RetainOutcome.SPOOLED] * 3
    spooled = {r.operation_id for r in adapter.spool.items()}
    assert spooled == {h.operation_id for h in (stuck, *waiting)}
    fake.fault = Fault.NONE
    fake.release()
    assert (await adapter.replay()).delivered == 3
    assert len(fake.documents(BANK)) == 3


async def test_cancelling_a_waiter_does_not_cancel_the_delivery(make_adapter, fake):
    fake.fault = Fault.HANG
    adapter = make_adapter(timeout=0.3, max_retries=0, breaker_failure_threshold=100)
    handle = adapter.retain_for_turn(ctx(), result="A")
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(_await(handle), 0.01)
    assert handle.result(timeout=10) is RetainOutcome.SPOOLED


async def _await(handle: RetainHandle) -> RetainOutcome:
    return await handle


def test_retains_survive_the_end_of_their_event_loop(make_adapter, fake):
    # GIVEN a sync entrypoint that runs every turn in its own asyncio.run (the prior art lost these retains)
    fake.fault = Fault.HANG
    adapter = make_adapter(timeout=5, max_retries=1)

    async def turn(n: int) -> None:
        await adapter.before_turn(ctx(), query="hello")
        await adapter.after_turn(ctx(), result=f"answer {n}")

    asyncio.run(turn(1))
    fake.fault = Fault.NONE
    fake.release()
    asyncio.run(turn(2))
    # WHEN a later loop flushes
    assert asyncio.run(adapter.flush(timeout=10)) is True
    # THEN both turns are in the bank (the first one was still in flight when its loop ended)
    assert len(fake.documents(BANK)) == 2


def test_retains_pending_at_interpreter_exit_are_spooled(tmp_path):
    """A process that ends (AgentCore gives no shutdown signal) right after a turn: the exit hook spools it."""
    import json
    import socket
    import subprocess
    import sys

    # GIVEN a Hindsight that accepts connections and never answers
    with socket.create_server(("127.0.0.1", 0)) as hung:
        url = f"http://127.0.0.1:{hung.getsockname()[1]}"
        code = f"""
import asyncio
from memory_adapter import HindsightRuntimeAdapter, TurnContext
adapter = HindsightRuntimeAdapter("support", hindsight_api_url={url!r}, spool_dir={str(tmp_path)!r},
                                  timeout=30, exit_flush_timeout=0.5)
ctx = TurnContext("s", "alice", "support", credential="user-jwt")
asyncio.run(adapter.after_turn(ctx, result="the answer", query="the question"))
"""
        # WHEN the process ends with the retain still in flight
        subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    # THEN it is in the spool, credential included, ready for replay
    (path,) = (tmp_path / "pending").glob("*.json")
    saved = json.loads(path.read_text())
    assert saved["item"]["content"] == "User: the question\nAssistant: the answer"
    assert saved["credential"] == "user-jwt"


def test_a_flush_that_times_out_in_a_finished_loop_leaves_the_delivery_running(make_adapter, fake, caplog):
    fake.fault = Fault.HANG
    adapter = make_adapter(timeout=0.3, max_retries=0, breaker_failure_threshold=100)
    handle = adapter.retain_for_turn(ctx(), result="A")
    assert asyncio.run(adapter.flush(timeout=0.01)) is False
    assert handle.result(timeout=10) is RetainOutcome.SPOOLED
    assert "exception calling callback" not in caplog.text
