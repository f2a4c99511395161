"""A real Strands ``Agent`` (deterministic model, no network) with the memory hooks, against the real local Hindsight.

It remembers across sessions, keeps two users apart, and answers without memory when Hindsight hangs or refuses
(the turn is spooled, not lost).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from strands import Agent

from localdev.token_issuer import TokenIssuer
from memory_adapter.agentcore import AgentCoreMemory
from memory_adapter.identity import format_bank_id
from memory_adapter.integrations.strands import EchoModel, HindsightMemoryHooks, memory_report
from memory_adapter.tools.echo import NOTHING_RECALLED
from tests.integration.runtime_handler.test_agent_loop import wait_for_memory

from .conftest import AGENT, adapter_of, session_id, turn_for

pytestmark = pytest.mark.integration

SYSTEM = "You are a helpful assistant."


async def ask(memory: AgentCoreMemory, turn: Any, prompt: str) -> tuple[str, dict[str, Any], Agent]:
    """One invocation of a fresh Strands agent (a new session: nothing carried over but memory)."""
    agent = Agent(model=EchoModel(), system_prompt=SYSTEM, hooks=[HindsightMemoryHooks(memory)], callback_handler=None)
    state = turn.state() if turn is not None else {}
    result = await agent.invoke_async(prompt, invocation_state=state)
    return str(result), memory_report(state).body(), agent


async def test_a_strands_agent_remembers_across_sessions(
    make_memory: Callable[..., AgentCoreMemory], local_hindsight: Any, token_issuer: TokenIssuer
) -> None:
    memory = make_memory()
    user = f"user-alex-{time.time_ns()}"
    first = turn_for(token_issuer, user, session_id("s1"))
    output, report, agent = await ask(memory, first, "I prefer email over phone.")
    assert report == {"recalled": 0, "degraded": False}
    assert NOTHING_RECALLED in output
    assert agent.system_prompt == SYSTEM  # the memory block lives only for the invocation
    assert await adapter_of(memory).flush(30)
    wait_for_memory(local_hindsight.url, format_bank_id(user=user, agent=AGENT), first.caller.credential, "email")

    second = turn_for(token_issuer, user, session_id("s2"))
    output, report, agent = await ask(memory, second, "How should you contact me?")
    assert report["degraded"] is False
    assert report["recalled"] >= 1
    assert "From earlier conversations I remember:" in output
    assert "email over phone" in output
    assert agent.system_prompt == SYSTEM
    assert all("recalled_memories" not in str(message) for message in agent.messages)  # never in the history
    await memory.aclose()


async def test_a_strands_agent_keeps_users_apart(
    make_memory: Callable[..., AgentCoreMemory], local_hindsight: Any, token_issuer: TokenIssuer
) -> None:
    memory = make_memory()
    alex = f"user-alex-{time.time_ns()}"
    alex_turn = turn_for(token_issuer, alex, session_id("a"))
    await ask(memory, alex_turn, "My locker code is 4711.")
    assert await adapter_of(memory).flush(30)
    wait_for_memory(local_hindsight.url, format_bank_id(user=alex, agent=AGENT), alex_turn.caller.credential, "locker")

    bob_turn = turn_for(token_issuer, f"user-bob-{time.time_ns()}", session_id("b"))
    output, report, _ = await ask(memory, bob_turn, "What is my locker code?")
    assert report == {"recalled": 0, "degraded": False}
    assert "4711" not in output
    output, _, _ = await ask(memory, turn_for(token_issuer, alex, session_id("a2")), "What is my locker code?")
    assert "4711" in output
    await memory.aclose()


async def test_without_a_verified_caller_nothing_is_recalled_or_retained(
    make_memory: Callable[..., AgentCoreMemory],
) -> None:
    memory = make_memory()
    output, report, _ = await ask(memory, None, "I prefer email over phone.")
    assert report == {"recalled": 0, "degraded": False}
    assert NOTHING_RECALLED in output
    assert adapter_of(memory).pending_retains == 0
    await memory.aclose()


@pytest.mark.parametrize("fault", ["hung_url", "refused_url"])
async def test_a_strands_agent_answers_without_memory_when_hindsight_is_down(
    fault: str, make_memory: Callable[..., AgentCoreMemory], token_issuer: TokenIssuer, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue(fault)
    memory = make_memory(url, HINDSIGHT_ADAPTER_RECALL_TIMEOUT="0.3", HINDSIGHT_ADAPTER_TIMEOUT="0.5")
    turn = turn_for(token_issuer, f"user-down-{time.time_ns()}", session_id("d"))
    output, report, _ = await ask(memory, turn, "Remember my shoe size is 44.")
    assert report["degraded"] is True
    assert report["recalled"] == 0
    assert output.startswith("You said: Remember my shoe size is 44.")
    assert await adapter_of(memory).flush(30)
    assert adapter_of(memory).spooled_retains == 1  # kept for replay, not lost
    await memory.aclose()
