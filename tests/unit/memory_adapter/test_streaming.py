"""Streaming: chunks are relayed as they come and the full output is retained once, when the stream ends."""

from __future__ import annotations

import pytest

from memory_adapter import TurnContext

BANK = "user:alice:agent:support"


def ctx() -> TurnContext:
    return TurnContext(runtime_session_id="s", user_id="alice", agent_name="support")


async def agent(payload, memory_context):
    for word in ("Hello", ", ", "world"):
        yield word


async def test_stream_is_relayed_and_retained_once(make_adapter, fake):
    adapter = make_adapter()
    chunks = [c async for c in adapter.stream_turn(ctx(), {"prompt": "greet me"}, agent_stream=agent)]
    assert chunks == ["Hello", ", ", "world"]
    await adapter.flush(timeout=5)
    assert [d["content"] for d in fake.documents(BANK).values()] == ["User: greet me\nAssistant: Hello, world"]


async def test_memory_context_reaches_the_agent(make_adapter, fake):
    fake.banks[BANK] = {"d": {"content": "alice greets in French"}}
    seen = []

    async def recording(payload, memory_context):
        seen.append(memory_context)
        yield "ok"

    adapter = make_adapter()
    [c async for c in adapter.stream_turn(ctx(), {"prompt": "greet alice"}, agent_stream=recording)]
    assert "alice greets in French" in seen[0]


async def test_text_of_extracts_text_from_structured_chunks(make_adapter, fake):
    async def events(payload, memory_context):
        yield {"delta": "a"}
        yield {"delta": "b"}

    adapter = make_adapter()
    [c async for c in adapter.stream_turn(ctx(), {"prompt": "q"}, agent_stream=events, text_of=lambda e: e["delta"])]
    await adapter.flush(timeout=5)
    assert [d["content"] for d in fake.documents(BANK).values()] == ["User: q\nAssistant: ab"]


async def test_abandoned_or_failed_streams_are_not_retained_by_default(make_adapter, fake):
    adapter = make_adapter()
    stream = adapter.stream_turn(ctx(), {"prompt": "q"}, agent_stream=agent)
    assert await stream.__anext__() == "Hello"
    await stream.aclose()

    async def failing(payload, memory_context):
        yield "partial"
        raise RuntimeError("model failed")

    with pytest.raises(RuntimeError):
        [c async for c in adapter.stream_turn(ctx(), {"prompt": "q"}, agent_stream=failing)]
    await adapter.flush(timeout=5)
    assert fake.documents(BANK) == {}
    partial = make_adapter()
    with pytest.raises(RuntimeError):
        [c async for c in partial.stream_turn(ctx(), {"prompt": "q"}, agent_stream=failing, retain_partial=True)]
    await partial.flush(timeout=5)
    assert [d["content"] for d in fake.documents(BANK).values()] == ["User: q\nAssistant: partial"]


async def test_run_turn_recalls_runs_and_retains(make_adapter, fake):
    adapter = make_adapter()

    async def call(payload, memory_context):
        return {"output": "done", "other": 1}

    no_agent = TurnContext(runtime_session_id="s", user_id="alice", agent_name="")
    result = await adapter.run_turn(no_agent, {"prompt": "do it"}, agent_callable=call)
    assert result == {"output": "done", "other": 1}
    await adapter.flush(timeout=5)
    # agent_name was filled from the adapter default ("support")
    assert [d["content"] for d in fake.documents(BANK).values()] == ["User: do it\nAssistant: done"]
