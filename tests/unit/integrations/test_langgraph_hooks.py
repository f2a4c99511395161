"""The LangGraph hooks and tools in real graphs on the fake Hindsight: memories in ``llm_input_messages`` only, one
recall per human message across a tool loop, and tools that run only for the verified turn in the run's context."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage

from memory_adapter.agentcore import AgentCoreMemory
from memory_adapter.formatting import MEMORY_BLOCK_OPEN
from memory_adapter.integrations.langgraph import EchoChatModel, HindsightMemoryHooks, memory_report, memory_tools
from memory_adapter.integrations.tools import NO_VERIFIED_CALLER
from memory_adapter.testing import FakeHindsight

from .conftest import RecordingTools, turn_of


def react_agent(memory: AgentCoreMemory, tools: list[Any]) -> Any:
    from langgraph.prebuilt import create_react_agent

    hooks = HindsightMemoryHooks(memory)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return create_react_agent(
            EchoChatModel(), tools, pre_model_hook=hooks.pre_model_hook, post_model_hook=hooks.post_model_hook
        )


async def test_the_model_sees_the_memories_the_state_does_not(
    make_memory: Callable[..., AgentCoreMemory], fake: FakeHindsight
) -> None:
    memory = make_memory()
    handle = memory.retain(turn_of("user-alex"), query="I prefer email over phone", result="ok")
    assert handle is not None
    await handle
    hooks = HindsightMemoryHooks(memory)
    messages = [HumanMessage("how should you contact me by email", id="h1")]
    context = turn_of("user-alex").state()
    model_input = await hooks.model_input(messages, context)
    assert isinstance(model_input[0], SystemMessage)
    assert MEMORY_BLOCK_OPEN in str(model_input[0].content)
    assert model_input[1:] == messages
    assert memory_report(context).body() == {"recalled": 1, "degraded": False}
    assert await hooks.model_input(messages, {}) == messages  # no turn, no memory
    recalls = len(fake.calls("/memories/recall"))
    await hooks.model_input(messages, context)  # the next model call for the same human message
    assert len(fake.calls("/memories/recall")) == recalls


async def test_a_tool_loop_recalls_once_tools_get_the_turn_and_a_forget_is_not_retained(
    make_memory: Callable[..., AgentCoreMemory], fake: FakeHindsight
) -> None:
    recording = RecordingTools()
    memory = make_memory(tools=recording)
    graph = react_agent(memory, memory_tools(memory))
    turn = turn_of("user-alex")
    result = await graph.ainvoke({"messages": [HumanMessage("forget my old address")]}, context=turn.state())
    assert recording.calls == [(turn.caller, "forget", {"query": "my old address"})]
    expected = f"You said: forget my old address\nforget done for {turn.caller.bank_id}"
    assert result["messages"][-1].content == expected
    assert len(fake.calls("/memories/recall")) == 1  # two model calls, one recall
    await memory.memory.aclose()
    assert fake.calls("/memories") == []  # the tool wrote memory: the run is not retained on top


async def test_without_a_turn_tools_refuse(make_memory: Callable[..., AgentCoreMemory], fake: FakeHindsight) -> None:
    recording = RecordingTools()
    memory = make_memory(tools=recording)
    graph = react_agent(memory, memory_tools(memory))
    result = await graph.ainvoke({"messages": [HumanMessage("forget my old address")]}, context={})
    assert result["messages"][-1].content == f"You said: forget my old address\n{NO_VERIFIED_CALLER}"
    assert recording.calls == []
    assert fake.requests == []
    tool = memory_tools(memory)[0]
    assert await tool.ainvoke({"query": "anything"}) == NO_VERIFIED_CALLER  # outside any graph run
