"""The recall query uses the session's previous user message for follow-ups, and only for them."""

from __future__ import annotations

import pytest

from memory_adapter.recall_query import recall_query

BEFORE = ["We talked about moving the billing database to PostgreSQL."]


@pytest.mark.parametrize("message", ["What did I decide about it?", "When was that?", "Which one?", "And then?"])
def test_a_follow_up_is_sent_with_the_message_before_it(message: str):
    assert recall_query(message, BEFORE) == f"{BEFORE[0]}\n{message}"


@pytest.mark.parametrize(
    "message",
    [
        "When did Maria donate her car?",  # refers back, but to someone it names
        "What is my favourite programming language?",
        "Which database did we pick for the billing service last spring?",
    ],
)
def test_a_standalone_message_is_sent_as_it_is(message: str):
    assert recall_query(message, BEFORE) == message


def test_without_history_the_message_is_the_query():
    assert recall_query("What did I decide about it?", []) == "What did I decide about it?"
    assert recall_query("What did I decide about it?", ["  "]) == "What did I decide about it?"


def test_a_long_previous_message_is_cut():
    assert len(recall_query("Why?", ["x" * 5000])) == 400 + len("\nWhy?")
