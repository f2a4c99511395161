"""Working memory: per session and caller, bounded by turns, size and sessions, handed to the model as messages."""

from __future__ import annotations

import asyncio
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from memory_adapter.agentcore.payload import TurnRequest
from memory_adapter.agentcore.settings import SettingsError
from memory_adapter.identity import Caller
from runtime_handler.model import BedrockModel, EchoModel, ModelTurn, converse_messages, system_prompt
from runtime_handler.settings import Settings
from runtime_handler.turn import TurnDeps, run_turn, stream_turn
from runtime_handler.working_memory import Exchange, WorkingMemory, WorkingMemoryLimits
from tests.unit.runtime_handler.fakes import facts, turn_of, wiring

ALEX = Caller.of(user="user-alex", agent="support", credential="token-a")
BOB = Caller.of(user="user-bob", agent="support", credential="token-b")
SESSION = "session-" + "0" * 40


def test_a_conversation_belongs_to_its_session_and_caller() -> None:
    # GIVEN alex's exchange in a session
    memory = WorkingMemory()
    memory.add(ALEX, SESSION, Exchange("My codename is Bluebird.", "Noted."))
    # THEN alex sees it in that session only, and bob, presenting the same session id, sees nothing
    assert memory.history(ALEX, SESSION) == (Exchange("My codename is Bluebird.", "Noted."),)
    assert memory.history(ALEX, "another-session") == ()
    assert memory.history(BOB, SESSION) == ()
    # AND the same user in another tenant is someone else
    assert memory.history(Caller.of(user="user-alex", agent="support", tenant="acme"), SESSION) == ()


def test_anonymous_turns_keep_no_conversation() -> None:
    memory = WorkingMemory()
    memory.add(None, SESSION, Exchange("hi", "hello"))
    assert memory.history(None, SESSION) == ()
    assert len(memory) == 0


def test_only_the_most_recent_turns_are_kept() -> None:
    memory = WorkingMemory(WorkingMemoryLimits(max_turns=3))
    for n in range(5):
        memory.add(ALEX, SESSION, Exchange(f"u{n}", f"a{n}"))
    assert [turn.user for turn in memory.history(ALEX, SESSION)] == ["u2", "u3", "u4"]


def test_older_turns_go_first_when_the_size_budget_is_exceeded() -> None:
    memory = WorkingMemory(WorkingMemoryLimits(max_turns=10, max_chars=1_000))
    for n in range(4):
        memory.add(ALEX, SESSION, Exchange(f"{n}" * 300, "ok"))  # 302 characters each
    history = memory.history(ALEX, SESSION)
    assert [turn.user[0] for turn in history] == ["1", "2", "3"]
    assert sum(turn.size for turn in history) <= 1_000


def test_an_exchange_larger_than_the_budget_is_kept_shortened() -> None:
    memory = WorkingMemory(WorkingMemoryLimits(max_chars=1_000))
    memory.add(ALEX, SESSION, Exchange("u" * 5_000, "a" * 5_000))
    (turn,) = memory.history(ALEX, SESSION)
    assert turn.size <= 1_000
    assert turn.user.startswith("uuu")
    assert turn.user.endswith("[...]")
    assert len(turn.user) >= 500  # the user's side keeps at least half


def test_least_recently_used_conversations_are_dropped_first() -> None:
    memory = WorkingMemory(WorkingMemoryLimits(max_sessions=2))
    memory.add(ALEX, "s1", Exchange("one", "a"))
    memory.add(ALEX, "s2", Exchange("two", "a"))
    memory.history(ALEX, "s1")  # s1 used again: s2 is now the oldest
    memory.add(ALEX, "s3", Exchange("three", "a"))
    assert memory.history(ALEX, "s2") == ()
    assert memory.history(ALEX, "s1")
    assert memory.history(ALEX, "s3")


def test_zero_turns_turns_working_memory_off() -> None:
    memory = WorkingMemory(WorkingMemoryLimits(max_turns=0))
    memory.add(ALEX, SESSION, Exchange("hi", "hello"))
    assert memory.history(ALEX, SESSION) == ()


def test_drop_removes_the_selected_exchanges() -> None:
    memory = WorkingMemory()
    memory.add(ALEX, SESSION, Exchange("I prefer email.", "ok"))
    memory.add(ALEX, SESSION, Exchange("I like tea.", "ok"))
    assert memory.drop(ALEX, SESSION, lambda turn: "email" in turn.user) == 1
    assert [turn.user for turn in memory.history(ALEX, SESSION)] == ["I like tea."]
    assert memory.drop(BOB, SESSION, lambda turn: True) == 0


def test_settings_read_the_limits_and_refuse_bad_ones() -> None:
    base = {"AGENT_NAME": "support", "HINDSIGHT_API_URL": "http://127.0.0.1:1", "AUTH_MODE": "iam"}
    base["MODEL_PROVIDER"] = "echo"
    assert Settings.from_env(base).working_memory == WorkingMemoryLimits()
    custom = {"WORKING_MEMORY_MAX_TURNS": "4", "WORKING_MEMORY_MAX_CHARS": "2000", "WORKING_MEMORY_MAX_SESSIONS": "9"}
    assert Settings.from_env(base | custom).working_memory == WorkingMemoryLimits(4, 2000, 9)
    with pytest.raises(SettingsError) as error:
        Settings.from_env(base | {"WORKING_MEMORY_MAX_TURNS": "-1", "WORKING_MEMORY_MAX_CHARS": "10"})
    assert len(error.value.problems) == 2
    assert any("WORKING_MEMORY_MAX_TURNS" in problem for problem in error.value.problems)


def _deps(working: WorkingMemory) -> TurnDeps:
    return TurnDeps(memory=wiring(), model=EchoModel(), working=working)


async def test_the_second_turn_sees_the_first_without_long_term_memory() -> None:
    # GIVEN no long-term memory at all, only the session's conversation
    working = WorkingMemory()
    meta = facts(SESSION)
    await run_turn(TurnRequest("My project codename is Bluebird."), meta, turn_of(ALEX, meta), _deps(working))
    # WHEN alex asks in the same session
    answer = await run_turn(TurnRequest("What is my project codename?"), meta, turn_of(ALEX, meta), _deps(working))
    # THEN the model was given the earlier exchange
    assert "Earlier in this session you said:\n- My project codename is Bluebird." in answer.output
    # AND bob, with the same session id, was not
    other = await run_turn(TurnRequest("What is my project codename?"), meta, turn_of(BOB, meta), _deps(working))
    assert "Bluebird" not in other.output


async def test_a_streamed_turn_is_remembered_too() -> None:
    working = WorkingMemory()
    meta = facts(SESSION)
    events = [e async for e in stream_turn(TurnRequest("I like tea."), meta, turn_of(ALEX, meta), _deps(working))]
    assert events[-1]["type"] == "done"
    assert working.history(ALEX, SESSION)[0].user == "I like tea."


def test_converse_messages_alternate_and_end_with_the_prompt() -> None:
    turn = ModelTurn("and now?", history=(Exchange("first", "one"), Exchange("second", "two")))
    assert converse_messages(turn) == [
        {"role": "user", "content": [{"text": "first"}]},
        {"role": "assistant", "content": [{"text": "one"}]},
        {"role": "user", "content": [{"text": "second"}]},
        {"role": "assistant", "content": [{"text": "two"}]},
        {"role": "user", "content": [{"text": "and now?"}]},
    ]


def test_bedrock_gets_the_conversation_as_messages_and_memories_in_the_system_block() -> None:
    client = boto3.client("bedrock-runtime", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y")
    stub = Stubber(client)
    turn = ModelTurn("What is my codename?", "- likes tea", (Exchange("My codename is Bluebird.", "Noted."),))
    expected: dict[str, Any] = {
        "modelId": "m",
        "system": [{"text": system_prompt("- likes tea")}],
        "messages": converse_messages(turn),
        "inferenceConfig": {"maxTokens": 64},
    }
    response = {
        "output": {"message": {"role": "assistant", "content": [{"text": "Bluebird."}]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
        "metrics": {"latencyMs": 1},
    }
    stub.add_response("converse", response, expected)
    with stub:
        assert asyncio.run(BedrockModel("m", max_tokens=64, client=client).reply(turn)) == "Bluebird."
    stub.assert_no_pending_responses()


class _RecordingMemory:
    """Long-term memory that records the recall queries it is sent and recalls nothing."""

    def __init__(self) -> None:
        self.queries: list[str] = []

    async def recall_for_turn(self, caller: Caller, query: str) -> Any:
        from memory_adapter import Recollection

        self.queries.append(query)
        return Recollection("", 0, False)

    def retain_for_turn(self, caller: Caller, **kwargs: Any) -> Any:
        from memory_adapter.retains import RetainHandle, RetainOutcome

        return RetainHandle.resolved(RetainOutcome.SKIPPED)


async def test_a_follow_up_is_recalled_with_the_users_message_before_it() -> None:
    # GIVEN a session where alex talked about the billing database
    memory, working = _RecordingMemory(), WorkingMemory()
    deps = TurnDeps(memory=wiring(memory), model=EchoModel(), working=working)
    meta = facts(SESSION)
    await run_turn(TurnRequest("Let's move the billing database to PostgreSQL."), meta, turn_of(ALEX, meta), deps)
    # WHEN the next message only refers back, and then one stands alone
    await run_turn(TurnRequest("What did I decide about it?"), meta, turn_of(ALEX, meta), deps)
    await run_turn(TurnRequest("Which editor does Priya use?"), meta, turn_of(ALEX, meta), deps)
    # THEN the follow-up's recall carries the earlier message, the standalone one is sent as it is
    assert memory.queries[1:] == [
        "Let's move the billing database to PostgreSQL.\nWhat did I decide about it?",
        "Which editor does Priya use?",
    ]
