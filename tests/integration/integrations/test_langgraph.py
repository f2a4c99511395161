"""A real LangGraph graph (deterministic chat model, no network) with the memory hooks, against the real local
Hindsight: as nodes of a ``StateGraph`` and as ``create_react_agent``'s pre/post-model hooks.

It remembers across sessions, keeps two users apart, and answers without memory when Hindsight hangs or refuses
(the turn is spooled, not lost).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import AnyMessage, HumanMessage
from langgraph.graph import END, START, MessagesState, StateGraph

from localdev.token_issuer import TokenIssuer
from memory_adapter.agentcore import AgentCoreMemory
from memory_adapter.identity import format_bank_id
from memory_adapter.integrations.langgraph import EchoChatModel, HindsightMemoryHooks, memory_report
from memory_adapter.tools.echo import NOTHING_RECALLED
from tests.integration.runtime_handler.test_agent_loop import wait_for_memory

from .conftest import AGENT, adapter_of, session_id, turn_for

pytestmark = pytest.mark.integration


class State(MessagesState):
    llm_input_messages: list[AnyMessage]


def state_graph(hooks: HindsightMemoryHooks) -> Any:
    """START -> recall -> model -> retain -> END: the hooks as nodes around a model node of one's own."""
    model = EchoChatModel()

    async def call_model(state: State) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["llm_input_messages"])]}

    graph = StateGraph(State)
    graph.add_node("recall", hooks.pre_model_hook)
    graph.add_node("model", call_model)
    graph.add_node("retain", hooks.post_model_hook)
    graph.add_edge(START, "recall")
    graph.add_edge("recall", "model")
    graph.add_edge("model", "retain")
    graph.add_edge("retain", END)
    return graph.compile()


def react_agent(hooks: HindsightMemoryHooks) -> Any:
    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():  # moved to langchain.agents in LangGraph 1.0, still LangGraph's prebuilt agent
        warnings.simplefilter("ignore")
        return create_react_agent(
            EchoChatModel(), [], pre_model_hook=hooks.pre_model_hook, post_model_hook=hooks.post_model_hook
        )


BUILDERS = {"state_graph": state_graph, "react_agent": react_agent}


async def ask(graph: Any, turn: Any, prompt: str) -> tuple[str, dict[str, Any], dict[str, Any]]:
    context = turn.state() if turn is not None else {}
    result = await graph.ainvoke({"messages": [HumanMessage(prompt)]}, context=context)
    return str(result["messages"][-1].content), memory_report(context).body(), result


@pytest.mark.parametrize("builder", sorted(BUILDERS))
async def test_a_langgraph_agent_remembers_across_sessions(
    builder: str, make_memory: Callable[..., AgentCoreMemory], local_hindsight: Any, token_issuer: TokenIssuer
) -> None:
    memory = make_memory()
    graph = BUILDERS[builder](HindsightMemoryHooks(memory))
    user = f"user-alex-{time.time_ns()}"
    first = turn_for(token_issuer, user, session_id("s1"))
    output, report, _ = await ask(graph, first, "I prefer email over phone.")
    assert report == {"recalled": 0, "degraded": False}
    assert NOTHING_RECALLED in output
    assert await adapter_of(memory).flush(30)
    wait_for_memory(local_hindsight.url, format_bank_id(user=user, agent=AGENT), first.caller.credential, "email")

    output, report, result = await ask(graph, turn_for(token_issuer, user, session_id("s2")), "How do I like contact?")
    assert report["degraded"] is False
    assert report["recalled"] >= 1
    assert "From earlier conversations I remember:" in output
    assert "email over phone" in output
    assert all("recalled_memories" not in str(m.content) for m in result["messages"])  # not in the graph's state
    await memory.aclose()


async def test_a_langgraph_agent_keeps_users_apart(
    make_memory: Callable[..., AgentCoreMemory], local_hindsight: Any, token_issuer: TokenIssuer
) -> None:
    memory = make_memory()
    graph = state_graph(HindsightMemoryHooks(memory))
    alex = f"user-alex-{time.time_ns()}"
    alex_turn = turn_for(token_issuer, alex, session_id("a"))
    await ask(graph, alex_turn, "My locker code is 4711.")
    assert await adapter_of(memory).flush(30)
    wait_for_memory(local_hindsight.url, format_bank_id(user=alex, agent=AGENT), alex_turn.caller.credential, "locker")

    output, report, _ = await ask(
        graph, turn_for(token_issuer, f"user-bob-{time.time_ns()}", session_id("b")), "My code?"
    )
    assert report == {"recalled": 0, "degraded": False}
    assert "4711" not in output
    output, _, _ = await ask(graph, turn_for(token_issuer, alex, session_id("a2")), "What is my locker code?")
    assert "4711" in output
    await memory.aclose()


async def test_without_a_verified_caller_nothing_is_recalled_or_retained(
    make_memory: Callable[..., AgentCoreMemory],
) -> None:
    memory = make_memory()
    output, report, _ = await ask(state_graph(HindsightMemoryHooks(memory)), None, "I prefer email over phone.")
    assert report == {"recalled": 0, "degraded": False}
    assert NOTHING_RECALLED in output
    assert adapter_of(memory).pending_retains == 0
    await memory.aclose()


@pytest.mark.parametrize("fault", ["hung_url", "refused_url"])
async def test_a_langgraph_agent_answers_without_memory_when_hindsight_is_down(
    fault: str, make_memory: Callable[..., AgentCoreMemory], token_issuer: TokenIssuer, request: pytest.FixtureRequest
) -> None:
    memory = make_memory(
        request.getfixturevalue(fault), HINDSIGHT_ADAPTER_RECALL_TIMEOUT="0.3", HINDSIGHT_ADAPTER_TIMEOUT="0.5"
    )
    turn = turn_for(token_issuer, f"user-down-{time.time_ns()}", session_id("d"))
    output, report, _ = await ask(state_graph(HindsightMemoryHooks(memory)), turn, "My shoe size is 44.")
    assert report["degraded"] is True
    assert report["recalled"] == 0
    assert output.startswith("You said: My shoe size is 44.")
    assert await adapter_of(memory).flush(30)
    assert adapter_of(memory).spooled_retains == 1  # kept for replay, not lost
    await memory.aclose()


async def test_a_langgraph_agent_forgets_with_the_memory_tools(
    make_memory: Callable[..., AgentCoreMemory], local_hindsight: Any, token_issuer: TokenIssuer
) -> None:
    from langgraph.prebuilt import create_react_agent

    from memory_adapter.integrations.langgraph import memory_tools

    memory = make_memory()
    hooks = HindsightMemoryHooks(memory)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = create_react_agent(
            EchoChatModel(),
            memory_tools(memory),
            pre_model_hook=hooks.pre_model_hook,
            post_model_hook=hooks.post_model_hook,
        )
    user = f"user-forget-{time.time_ns()}"
    bank = format_bank_id(user=user, agent=AGENT)
    first = turn_for(token_issuer, user, session_id("f1"))
    await ask(graph, first, "I prefer email over phone.")
    await ask(graph, turn_for(token_issuer, user, first.session_id), "My locker code is 4711.")  # its own request
    assert await adapter_of(memory).flush(30)
    wait_for_memory(local_hindsight.url, bank, first.caller.credential, "email over phone")
    wait_for_memory(local_hindsight.url, bank, first.caller.credential, "locker code")

    output, _, _ = await ask(graph, turn_for(token_issuer, user, session_id("f2")), "forget that I prefer email")
    assert "email over phone" in output  # the answer says what was forgotten
    assert await adapter_of(memory).flush(30)
    output, _, _ = await ask(graph, turn_for(token_issuer, user, session_id("f3")), "How should you contact me? email?")
    assert "email over phone" not in output
    output, _, _ = await ask(graph, turn_for(token_issuer, user, session_id("f4")), "What is my locker code?")
    assert "4711" in output
    await memory.aclose()
