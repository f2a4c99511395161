"""The adapter's re-ranking of Hindsight's candidates (memory_adapter.rerank) and where recall applies it: the
agent's recall and the memory tools' ``recall``."""

from __future__ import annotations

import pytest

from memory_adapter import TurnContext
from memory_adapter._recall import within_text_tokens
from memory_adapter.budget import estimate_tokens
from memory_adapter.formatting import RecalledMemory
from memory_adapter.identity.caller import Caller
from memory_adapter.policies import RecallPolicy
from memory_adapter.rerank import about_time, content_words, rerank
from memory_adapter.tools import MemoryTools


def memory(text: str, similarity: float | None = None) -> RecalledMemory:
    return RecalledMemory(text=text, type="world", id=text, similarity=similarity)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("When did Ana move to Lisbon?", True),
        ("what year did you start running?", True),
        ("How long ago was the wedding?", True),
        ("Since when has Ana played the violin?", True),
        ("What does Ana do when it rains?", False),
        ("Where does Ana live?", False),
        ("Which instrument does my daughter play?", False),
        ("Where was Ana living in 2022?", True),
        ("What did Ana paint in August?", True),
        ("How many concerts did Ana go to?", False),
        ("May I ask where Ana lives?", False),
        ("Did Ana march in the parade?", False),
    ],
)
def test_a_question_about_time_is_told_from_the_query_alone(query, expected):
    assert about_time(query) is expected


def test_content_words_leave_out_function_words():
    assert content_words("What is the name of my dog?") == ["name", "dog"]


def test_a_low_ranked_memory_close_in_meaning_and_words_comes_first():
    # GIVEN Hindsight's order with the answer last, though it is the closest in meaning and names the question's words
    filler = [memory(f"Talked about the weather on day {n}.", similarity=0.40 + n / 100) for n in range(9)]
    answer = memory("Ana's dog is called Pixel.", similarity=0.80)
    # WHEN re-ranked for a question that does not ask when
    ranked = rerank("What is the name of Ana's dog?", [*filler, answer])
    # THEN it comes first, and the rest keep an order by meaning (the more similar first)
    assert ranked[0] is answer
    assert ranked[1:] == sorted(filler, key=lambda m: -(m.similarity or 0))


def test_a_when_question_is_not_reordered_by_meaning_alone():
    # GIVEN Hindsight's order whose first memory names the event and its date, the last one only close in meaning
    dated = memory("Ana moved to Lisbon in May 2023.", similarity=0.50)
    others = [memory(f"Likes tea number {n}.", similarity=0.55) for n in range(5)]
    close = memory("Relocation is stressful for everyone.", similarity=0.90)
    ranked = rerank("When did Ana move to Lisbon?", [dated, *others, close])
    # THEN the memory that names it stays first and similarity alone does not lift the last one
    assert ranked[0] is dated
    assert ranked[-1] is close
    # while for a question that does not ask when, the closest one moves up
    assert rerank("Where did Ana move?", [dated, *others, close]).index(close) < len(others) + 1
    # and a question naming a year is read as one about time too
    assert rerank("Where did Ana move in 2023?", [dated, *others, close])[-1] is close


def test_without_scores_or_shared_words_hindsights_order_stays():
    memories = [memory(f"fact {n}") for n in range(5)]
    assert rerank("anything else?", memories) == memories
    assert rerank("anything", []) == []


def test_the_cut_keeps_the_longest_prefix_within_the_text_budget():
    memories = [memory("word " * 40) for _ in range(5)]  # 40 tokens of text each (estimated)
    each = estimate_tokens(memories[0].text)
    assert within_text_tokens(memories, 3 * each) == memories[:3]
    assert within_text_tokens(memories, 3 * each - 1) == memories[:2]
    assert within_text_tokens(memories, 1) == memories[:1]  # the first one even over the budget, as Hindsight does


def ctx() -> TurnContext:
    return TurnContext(runtime_session_id="s1", user_id="alice", agent_name="support")


async def test_recall_asks_for_the_candidates_and_injects_the_re_ranked_block(make_adapter, fake):
    # GIVEN a bank of many memories
    fake.banks["user:alice:agent:support"] = {f"d{i}": {"content": f"alice note {i} about things"} for i in range(40)}
    adapter = make_adapter(recall_policy=RecallPolicy(max_tokens=200), recall_candidate_tokens=5000)
    # WHEN the agent recalls
    recollection = await adapter.recall_for_turn(ctx(), "alice note")
    # THEN Hindsight was asked for the candidates' tokens, and the block stays within the block's budget
    (call,) = fake.calls("/memories/recall")
    assert call.body["max_tokens"] == 5000
    assert 0 < recollection.count < 40
    assert estimate_tokens(recollection.text) <= 200


async def test_candidate_tokens_at_most_the_budget_keep_the_prior_art_request(make_adapter, fake):
    adapter = make_adapter(recall_policy=RecallPolicy(max_tokens=300), recall_candidate_tokens=0)
    await adapter.recall_for_turn(ctx(), "hello")
    (call,) = fake.calls("/memories/recall")
    assert call.body["max_tokens"] == 300


async def test_the_recall_tool_ranks_as_the_agents_recall_does(make_adapter, fake):
    # GIVEN a bank where Hindsight's order puts the memory about the dog fourth, among many that share a word
    caller = Caller.of(user="alice", agent="support", credential="token-a")
    notes = [(f"d{i}", {"content": f"alice note {i} about the weather"}) for i in range(30)]
    fake.banks[caller.bank_id] = dict([*notes[:3], ("dog", {"content": "alice has a dog called Pixel"}), *notes[3:]])
    query = "alice dog"
    # WHEN the recall tool is asked, with the agent's candidate tokens, and the agent recalls with the same settings
    tools = MemoryTools(fake, recall_max_tokens=200, recall_candidate_tokens=5000)
    answer = tools.call(caller, "recall", {"query": query, "max_results": 3})
    (call,) = fake.calls("/memories/recall")
    agent = make_adapter(recall_policy=RecallPolicy(max_tokens=200), recall_candidate_tokens=5000)
    block = await agent.recall_for_turn(
        TurnContext(runtime_session_id="s1", user_id="alice", agent_name="support"), query
    )
    # THEN the tool asked for the candidates, and its answer is the head of the agent's block, the dog moved up
    assert call.body["max_tokens"] == 5000
    ids = [m["id"] for m in answer.data["memories"]]
    assert ids == [m.id for m in block.memories][:3]
    assert "dog" in ids
    # AND without candidate tokens the tool answers in Hindsight's order (the dog not among the first three)
    plain = MemoryTools(fake, recall_max_tokens=200, recall_candidate_tokens=0)
    assert "dog" not in [
        m["id"] for m in plain.call(caller, "recall", {"query": query, "max_results": 3}).data["memories"]
    ]
