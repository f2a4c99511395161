"""Memory tools in the turn: the echo stand-in's deterministic tool calls, Bedrock's bounded tool loop (Stubber), and
what a turn that wrote memory does with its retain and with working memory."""

from __future__ import annotations

import asyncio
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber

from memory_adapter.agentcore.payload import TurnRequest
from memory_adapter.identity import Caller
from memory_adapter.tools import TOOL_SPECS, MemoryTools
from memory_adapter.tools.echo import echo_tool_call
from memory_adapter.tools.memory_tools import ToolResult
from runtime_handler.model import BedrockModel, ModelTurn
from runtime_handler.tools import TurnTools
from runtime_handler.turn import TurnDeps, run_turn
from runtime_handler.working_memory import Exchange, WorkingMemory
from tests.unit.memory_adapter.scripted_hindsight import EMAIL_ID, ScriptedHindsight
from tests.unit.runtime_handler.fakes import facts, turn_of, wiring

META = facts("s" * 40)
ALEX = Caller.of(user="user-alex", agent="support", credential="token-a")
TURN = turn_of(ALEX, META)


@pytest.mark.parametrize(
    ("prompt", "call"),
    [
        ("forget that I prefer email", ("forget", {"query": "that I prefer email"})),
        ("Forget: my old address", ("forget", {"query": "my old address"})),
        ("remember that my locker code is 4711", ("remember", {"text": "my locker code is 4711"})),
        ("remember as preference: I like tea", ("remember", {"text": "I like tea", "kind": "preference"})),
        ("recall my codename", ("recall", {"query": "my codename"})),
        ("what do you remember about my car?", ("recall", {"query": "my car?"})),
        ("reflect on how I like to travel", ("reflect", {"query": "how I like to travel"})),
        ("list my memories", ("list_recent", {})),
        ("How should you contact me?", None),
        ("I forgot my keys", None),
    ],
)
def test_the_echo_stand_in_calls_tools_deterministically(prompt: str, call: Any) -> None:
    assert echo_tool_call(prompt) == call


class RecordingMemory:
    """A Memory that records retains (the tool turns must schedule none)."""

    def __init__(self) -> None:
        self.retained: list[str] = []
        self.results: list[str] = []

    async def recall_for_turn(self, context: Caller, query: str) -> Any:
        from memory_adapter.adapter import Recollection

        return Recollection("", 0, False)

    def retain_for_turn(self, context: Caller, **kwargs: Any) -> Any:
        self.retained.append(kwargs["query"])
        self.results.append(kwargs["result"])
        from memory_adapter.retains import RetainHandle, RetainOutcome

        return RetainHandle.resolved(RetainOutcome.DELIVERED)

    async def aclose(self, timeout: float | None = None) -> None:  # noqa: ASYNC109 (the Memory protocol)
        return None


def _deps(memory: RecordingMemory, working: WorkingMemory, hindsight: ScriptedHindsight) -> TurnDeps:
    from runtime_handler.model import EchoModel

    tools = MemoryTools(hindsight, settle_s=0.0, sleep=lambda _: None)
    return TurnDeps(memory=wiring(memory), model=EchoModel(), working=working, tools=tools)


async def test_a_forget_turn_is_not_retained_and_drops_what_it_forgot_from_the_session() -> None:
    memory, working, hindsight = RecordingMemory(), WorkingMemory(), ScriptedHindsight()
    working.add(ALEX, META.session_id, Exchange("I prefer email over phone.", "ok"))
    working.add(ALEX, META.session_id, Exchange("My codename is Bluebird.", "ok"))
    result = await run_turn(TurnRequest("forget that I prefer email"), META, TURN, _deps(memory, working, hindsight))
    assert result.tools == ("forget",)
    assert result.body()["memory"]["tools"] == ["forget"]
    assert "Forgot 1 memory" in result.output
    assert (result.retain, memory.retained) == (None, [])
    assert [turn.user for turn in working.history(ALEX, META.session_id)] == ["My codename is Bluebird."]
    assert EMAIL_ID not in hindsight.facts


async def test_a_remember_turn_is_kept_in_the_session_but_not_retained_twice() -> None:
    memory, working, hindsight = RecordingMemory(), WorkingMemory(), ScriptedHindsight()
    deps = _deps(memory, working, hindsight)
    result = await run_turn(TurnRequest("remember that my codename is Bluebird"), META, TURN, deps)
    assert 'Remembered (fact): "my codename is Bluebird".' in result.output
    assert memory.retained == []
    assert working.history(ALEX, META.session_id)[0].user == "remember that my codename is Bluebird"
    plain = await run_turn(TurnRequest("hello there"), META, TURN, deps)
    assert (plain.tools, memory.retained) == ((), ["hello there"])


async def test_a_turn_that_only_read_memory_is_retained_without_the_memories_it_quoted() -> None:
    memory, working, hindsight = RecordingMemory(), WorkingMemory(), ScriptedHindsight()
    result = await run_turn(TurnRequest("recall email"), META, TURN, _deps(memory, working, hindsight))
    assert result.tools == ("recall",)
    assert "I prefer email over phone." in result.output
    assert memory.results == ["(answered from memory)"]


async def test_anonymous_turns_get_no_tools() -> None:
    memory, working, hindsight = RecordingMemory(), WorkingMemory(), ScriptedHindsight()
    result = await run_turn(TurnRequest("forget everything"), META, None, _deps(memory, working, hindsight))
    assert result.tools == ()
    assert hindsight.requests == []


async def test_a_turn_makes_a_bounded_number_of_tool_calls() -> None:
    tools = TurnTools(MemoryTools(ScriptedHindsight(), settle_s=0.0), ALEX, max_calls=2)
    results = [await tools.call("recall", {"query": "email"}) for _ in range(3)]
    assert [r.error for r in results] == [None, None, "too_many_calls"]


class FakeToolbox:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    @property
    def specs(self) -> Any:
        return TOOL_SPECS

    async def call(self, name: str, arguments: Any) -> ToolResult:
        self.calls.append((name, arguments))
        return ToolResult(name, {"memories": [{"id": EMAIL_ID, "text": "I prefer email."}]}, "1 memory")


def _converse(content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop,
        "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
        "metrics": {"latencyMs": 1},
    }


def _tool_use(n: int) -> dict[str, Any]:
    return {"toolUse": {"toolUseId": f"t{n}", "name": "recall", "input": {"query": "contact"}}}


def _bedrock() -> tuple[Any, Stubber]:
    client = boto3.client("bedrock-runtime", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y")
    return client, Stubber(client)


def test_bedrock_runs_the_tools_the_model_asks_for_and_sends_their_results_back() -> None:
    client, stub = _bedrock()
    toolbox = FakeToolbox()
    turn = ModelTurn("How should you contact me?", tools=toolbox)
    first = {"modelId": "m", "system": ANY, "messages": ANY, "inferenceConfig": ANY, "toolConfig": ANY}
    stub.add_response("converse", _converse([{"text": "Let me check. "}, _tool_use(1)], "tool_use"), first)
    second = {
        "modelId": "m",
        "system": ANY,
        "inferenceConfig": ANY,
        "toolConfig": {"tools": [spec.converse() for spec in TOOL_SPECS]},
        "messages": [
            {"role": "user", "content": [{"text": "How should you contact me?"}]},
            {"role": "assistant", "content": [{"text": "Let me check. "}, _tool_use(1)]},
            {
                "role": "user",
                "content": [
                    {
                        "toolResult": {
                            "toolUseId": "t1",
                            "content": [{"json": {"memories": [{"id": EMAIL_ID, "text": "I prefer email."}]}}],
                            "status": "success",
                        }
                    }
                ],
            },
        ],
    }
    stub.add_response("converse", _converse([{"text": "By email."}], "end_turn"), second)
    with stub:
        answer = asyncio.run(BedrockModel("m", client=client).reply(turn))
    stub.assert_no_pending_responses()
    assert answer == "Let me check. By email."
    assert toolbox.calls == [("recall", {"query": "contact"})]


def test_bedrock_tool_rounds_are_bounded() -> None:
    client, stub = _bedrock()
    toolbox = FakeToolbox()
    for n in range(3):
        stub.add_response("converse", _converse([{"text": f"r{n} "}, _tool_use(n)], "tool_use"))
    with stub:
        answer = asyncio.run(BedrockModel("m", client=client, max_tool_rounds=2).reply(ModelTurn("hi", tools=toolbox)))
    stub.assert_no_pending_responses()
    assert answer == "r0 r1 r2 "
    assert len(toolbox.calls) == 2  # the third round's request is not run


def test_bedrock_without_tools_sends_no_tool_config() -> None:
    client, stub = _bedrock()
    expected = {"modelId": "m", "system": ANY, "messages": ANY, "inferenceConfig": ANY}
    stub.add_response("converse", _converse([{"text": "hi"}], "end_turn"), expected)
    with stub:
        assert asyncio.run(BedrockModel("m", client=client).reply(ModelTurn("hi"))) == "hi"
