"""A real Strands ``Agent`` and a real LangGraph graph (deterministic models, no network) with the memory hooks,
against the real local Hindsight; LangGraph's hooks both as nodes of a ``StateGraph`` and as ``create_react_agent``'s
pre/post-model hooks.

The same scenario for each framework: it remembers across sessions, keeps two users apart, recalls and retains
nothing without a verified caller, and answers without memory when Hindsight hangs or refuses (the turn is spooled,
not lost). LangGraph's memory tools forget on request.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from langchain_core.messages import AnyMessage, HumanMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from strands import Agent

from localdev.token_issuer import TokenIssuer
from memory_adapter.agentcore import AgentCoreMemory, MemoryTurn
from memory_adapter.identity import format_bank_id
from memory_adapter.integrations import langgraph as langgraph_memory
from memory_adapter.integrations import strands as strands_memory
from memory_adapter.integrations.run_state import memory_report
from memory_adapter.tools.echo import NOTHING_RECALLED
from tests.integration.runtime_handler.test_agent_loop import wait_for_memory

from .conftest import AGENT, adapter_of, session_id, turn_for

pytestmark = pytest.mark.integration

SYSTEM = "You are a helpful assistant."


@dataclass(frozen=True)
class Answer:
    """One invocation's answer, its memory report and what the framework keeps of the turn afterwards."""

    text: str
    report: dict[str, Any]
    #: The graph's messages, or the Strands agent's history: the recalled memories must never be among them.
    kept: list[str]


#: ``ask(turn, prompt)``: one invocation for the verified caller of ``turn`` (``None``: no verified caller).
Ask = Callable[[MemoryTurn | None, str], Awaitable[Answer]]


def strands_agent(memory: AgentCoreMemory) -> Ask:
    async def ask(turn: MemoryTurn | None, prompt: str) -> Answer:
        # A fresh agent each invocation (a new session: nothing carried over but memory).
        hooks = strands_memory.HindsightMemoryHooks(memory)
        agent = Agent(model=strands_memory.EchoModel(), system_prompt=SYSTEM, hooks=[hooks], callback_handler=None)
        state = turn.state() if turn is not None else {}
        result = await agent.invoke_async(prompt, invocation_state=state)
        assert agent.system_prompt == SYSTEM  # the memory block lives only for the invocation
        return Answer(str(result), memory_report(state).body(), [str(message) for message in agent.messages])

    return ask


class State(MessagesState):
    llm_input_messages: list[AnyMessage]


def state_graph(hooks: langgraph_memory.HindsightMemoryHooks) -> Any:
    """START -> recall -> model -> retain -> END: the hooks as nodes around a model node of one's own."""
    model = langgraph_memory.EchoChatModel()

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


def react_agent(hooks: langgraph_memory.HindsightMemoryHooks, tools: list[Any] | None = None) -> Any:
    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():  # moved to langchain.agents in LangGraph 1.0, still LangGraph's prebuilt agent
        warnings.simplefilter("ignore")
        return create_react_agent(
            langgraph_memory.EchoChatModel(),
            tools or [],
            pre_model_hook=hooks.pre_model_hook,
            post_model_hook=hooks.post_model_hook,
        )


def langgraph_graph(graph: Any) -> Ask:
    async def ask(turn: MemoryTurn | None, prompt: str) -> Answer:
        context = turn.state() if turn is not None else {}
        result = await graph.ainvoke({"messages": [HumanMessage(prompt)]}, context=context)
        messages = result["messages"]
        return Answer(str(messages[-1].content), memory_report(context).body(), [str(m.content) for m in messages])

    return ask


#: Each framework's agent on a memory.
FRAMEWORKS: dict[str, Callable[[AgentCoreMemory], Ask]] = {
    "strands": strands_agent,
    "langgraph": lambda memory: langgraph_graph(state_graph(langgraph_memory.HindsightMemoryHooks(memory))),
    "langgraph-react": lambda memory: langgraph_graph(react_agent(langgraph_memory.HindsightMemoryHooks(memory))),
}


@dataclass(frozen=True)
class Remembering:
    """An agent on a fresh memory against the local Hindsight, and how a test tells it what it must remember."""

    ask: Ask
    memory: AgentCoreMemory
    url: str

    async def told(self, turn: MemoryTurn, prompt: str, *facts: str) -> Answer:
        """``ask(turn, prompt)``, then deliver every retain so far and wait until recall finds each of ``facts`` in
        the caller's bank (extraction is asynchronous), so the next question may rely on them."""
        answer = await self.ask(turn, prompt)
        assert await adapter_of(self.memory).flush(30)
        bank = format_bank_id(user=turn.caller.user, agent=AGENT)
        for fact in facts:
            wait_for_memory(self.url, bank, turn.caller.credential, fact)
        return answer


def remembering(framework: str, memory: AgentCoreMemory, url: str) -> Remembering:
    """``framework``'s agent on ``memory``."""
    return Remembering(FRAMEWORKS[framework](memory), memory, url)


#: One agent a framework: the react agent differs from the state graph only in where the hooks sit, which
#: remembering across sessions shows.
ONE_EACH = ["strands", "langgraph"]


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
async def test_an_agent_remembers_across_sessions(
    framework: str, make_memory: Callable[..., AgentCoreMemory], local_hindsight: Any, token_issuer: TokenIssuer
) -> None:
    agent = remembering(framework, make_memory(), local_hindsight.url)
    user = f"user-alex-{time.time_ns()}"
    answer = await agent.told(turn_for(token_issuer, user, session_id("s1")), "I prefer email over phone.", "email")
    assert answer.report == {"recalled": 0, "degraded": False}
    assert NOTHING_RECALLED in answer.text

    answer = await agent.ask(turn_for(token_issuer, user, session_id("s2")), "How should you contact me?")
    assert answer.report["degraded"] is False
    assert answer.report["recalled"] >= 1
    assert "From earlier conversations I remember:" in answer.text
    assert "email over phone" in answer.text
    assert all("recalled_memories" not in kept for kept in answer.kept)  # never in the state or the history
    await agent.memory.aclose()


@pytest.mark.parametrize("framework", ONE_EACH)
async def test_an_agent_keeps_users_apart(
    framework: str, make_memory: Callable[..., AgentCoreMemory], local_hindsight: Any, token_issuer: TokenIssuer
) -> None:
    agent = remembering(framework, make_memory(), local_hindsight.url)
    alex = f"user-alex-{time.time_ns()}"
    await agent.told(turn_for(token_issuer, alex, session_id("a")), "My locker code is 4711.", "locker")

    bob = turn_for(token_issuer, f"user-bob-{time.time_ns()}", session_id("b"))
    answer = await agent.ask(bob, "What is my locker code?")
    assert answer.report == {"recalled": 0, "degraded": False}
    assert "4711" not in answer.text
    answer = await agent.ask(turn_for(token_issuer, alex, session_id("a2")), "What is my locker code?")
    assert "4711" in answer.text
    await agent.memory.aclose()


@pytest.mark.parametrize("framework", ONE_EACH)
async def test_without_a_verified_caller_nothing_is_recalled_or_retained(
    framework: str, make_memory: Callable[..., AgentCoreMemory]
) -> None:
    memory = make_memory()
    answer = await FRAMEWORKS[framework](memory)(None, "I prefer email over phone.")
    assert answer.report == {"recalled": 0, "degraded": False}
    assert NOTHING_RECALLED in answer.text
    assert adapter_of(memory).pending_retains == 0
    await memory.aclose()


@pytest.mark.parametrize("fault", ["hung_url", "refused_url"])
@pytest.mark.parametrize("framework", ONE_EACH)
async def test_an_agent_answers_without_memory_when_hindsight_is_down(
    framework: str,
    fault: str,
    make_memory: Callable[..., AgentCoreMemory],
    token_issuer: TokenIssuer,
    request: pytest.FixtureRequest,
) -> None:
    memory = make_memory(
        request.getfixturevalue(fault), HINDSIGHT_ADAPTER_RECALL_TIMEOUT="0.3", HINDSIGHT_ADAPTER_TIMEOUT="0.5"
    )
    turn = turn_for(token_issuer, f"user-down-{time.time_ns()}", session_id("d"))
    answer = await FRAMEWORKS[framework](memory)(turn, "My shoe size is 44.")
    assert answer.report["degraded"] is True
    assert answer.report["recalled"] == 0
    assert answer.text.startswith("You said: My shoe size is 44.")
    assert await adapter_of(memory).flush(30)
    assert adapter_of(memory).spooled_retains == 1  # kept for replay, not lost
    await memory.aclose()


async def test_a_langgraph_agent_forgets_with_the_memory_tools(
    make_memory: Callable[..., AgentCoreMemory], local_hindsight: Any, token_issuer: TokenIssuer
) -> None:
    memory = make_memory()
    ask = langgraph_graph(
        react_agent(langgraph_memory.HindsightMemoryHooks(memory), langgraph_memory.memory_tools(memory))
    )
    agent = Remembering(ask, memory, local_hindsight.url)
    user = f"user-forget-{time.time_ns()}"
    first = turn_for(token_issuer, user, session_id("f1"))
    await ask(first, "I prefer email over phone.")
    same_session = turn_for(token_issuer, user, first.session_id)  # its own request
    await agent.told(same_session, "My locker code is 4711.", "email over phone", "locker code")

    answer = await ask(turn_for(token_issuer, user, session_id("f2")), "forget that I prefer email")
    assert "email over phone" in answer.text  # the answer says what was forgotten
    assert await adapter_of(memory).flush(30)
    answer = await ask(turn_for(token_issuer, user, session_id("f3")), "How should you contact me? email?")
    assert "email over phone" not in answer.text
    answer = await ask(turn_for(token_issuer, user, session_id("f4")), "What is my locker code?")
    assert "4711" in answer.text
    await memory.aclose()
