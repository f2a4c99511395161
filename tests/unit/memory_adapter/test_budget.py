"""The injected block stays within the token budget as the model sees it; a retained turn names its speaker on
every line, so no chunk of a long turn passes the agent's words off as the user's."""

from __future__ import annotations

import pytest

from memory_adapter import TurnContext
from memory_adapter.budget import MAX_LINE_CHARS, dialogue_text, estimate_tokens, fit_to_budget
from memory_adapter.formatting import MEMORY_BLOCK_CLOSE, RecalledMemory, format_memories_as_data
from memory_adapter.policies import RecallPolicy

BANK = "user:alice:agent:support"


def ctx() -> TurnContext:
    return TurnContext(runtime_session_id="s1", user_id="alice", agent_name="support")


def memories(n: int, words: int = 12) -> list[RecalledMemory]:
    return [
        RecalledMemory(" ".join(f"word{i}x{j}" for j in range(words)), "world", "2026-11-30T10:00:00.123456+00:00")
        for i in range(n)
    ]


@pytest.mark.parametrize("budget", [90, 150, 333, 1500])
def test_the_formatted_block_never_exceeds_the_budget(budget: int):
    # GIVEN far more memories than fit, WHEN fitted to the budget
    kept = fit_to_budget(memories(200), format_memories_as_data, budget)
    block = format_memories_as_data(kept)
    # THEN the whole block, delimiters, notice, tags and timestamps included, is within it, and one more would not be
    assert estimate_tokens(block) <= budget
    assert kept
    more = memories(200)[: len(kept) + 1]
    assert len(kept) == 200 or estimate_tokens(format_memories_as_data(more)) > budget


def test_a_single_memory_too_long_for_the_budget_is_cut_not_dropped():
    long = [RecalledMemory("alpha " * 400, "world")]
    (kept,) = fit_to_budget(long, format_memories_as_data, 80)
    assert kept.text.endswith("…")
    assert kept.text.startswith("alpha alpha")
    assert estimate_tokens(format_memories_as_data([kept])) <= 80


def test_a_budget_below_the_block_frame_gives_no_block():
    assert fit_to_budget(memories(3), format_memories_as_data, 5) == []
    assert fit_to_budget(memories(3), format_memories_as_data, 0) == []


def test_the_estimate_counts_letters_digits_and_symbols_apart():
    # letters one per four, digits one per three (as o200k groups them), every other character one, spaces nothing
    assert estimate_tokens("word") == 1
    assert estimate_tokens("conversation") == 3
    assert estimate_tokens("2026-12-01T21:46:21.786075+00:00") == 19  # o200k: 19
    assert estimate_tokens("é ü") == 2


async def test_recall_for_turn_injects_a_block_within_recall_max_tokens(make_adapter, fake):
    # GIVEN a bank of 60 matching memories and a small budget
    fake.banks[BANK] = {f"d{i}": {"content": f"alice likes the colour number {i} very much indeed"} for i in range(60)}
    adapter = make_adapter(recall_policy=RecallPolicy(max_tokens=120))
    # WHEN the turn recalls
    recollection = await adapter.recall_for_turn(ctx(), "which colour does alice like")
    # THEN the block the model receives is within the budget, and count says how many memories it holds
    assert recollection.text.endswith(MEMORY_BLOCK_CLOSE)
    assert estimate_tokens(recollection.text) <= 120
    assert 0 < recollection.count == len(recollection.memories) == recollection.text.count("\n- ")


def test_every_line_of_a_long_turn_names_its_speaker():
    answer = ("The echo model says many things. " * 300).strip()
    text = dialogue_text("first line\n\nsecond line " + "x " * 900, answer)
    lines = text.split("\n")
    assert all(line.startswith(("User: ", "Assistant: ")) for line in lines)
    assert all(len(line) <= MAX_LINE_CHARS + len("Assistant: ") for line in lines)
    assert sum(line.startswith("Assistant: ") for line in lines) > 5
    assert dialogue_text("Q", "A") == "User: Q\nAssistant: A"  # the prior art's layout for a short turn


def test_a_long_line_is_wrapped_between_sentences_when_one_ends_late_enough():
    # GIVEN a pasted text of ~16,000 characters on one line, of sentences ~60 characters long
    pasted = " ".join(f"My server room {n} is in the basement next to the boiler." for n in range(280))
    # WHEN it is laid out for retain
    lines = dialogue_text(pasted, "ok").split("\n")
    # THEN every wrapped line ends a sentence (none stops mid-sentence, as "My server" did)
    users = [line.removeprefix("User: ") for line in lines if line.startswith("User: ")]
    assert len(users) > 15
    assert all(line.endswith("boiler.") for line in users)
    assert " ".join(users) == pasted


def test_hard_wrapped_prose_is_joined_into_its_paragraphs_and_lists_stay_lines():
    wrapped = (
        "My server room is in the basement of the old\nbuilding next to the fuse box.\n\nShopping list\nmilk\n- eggs"
    )
    assert dialogue_text(wrapped, "ok").split("\n") == [
        "User: My server room is in the basement of the old building next to the fuse box.",
        "User: Shopping list",
        "User: milk",
        "User: - eggs",
        "Assistant: ok",
    ]
