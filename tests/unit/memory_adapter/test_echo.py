"""The echo stand-in's answer says what is true about recall: what it was given, or that nothing was recalled for this
message, never that the user has no memories (issue 33 item 5: the demo said so to a user with ten)."""

from __future__ import annotations

from memory_adapter.tools.echo import NOTHING_RECALLED, echo_answer


def test_an_answer_without_recalled_memories_says_nothing_was_recalled_for_this_message() -> None:
    answer = echo_answer("How should you contact me about my delivery?", memories="")
    assert answer.splitlines() == ["You said: How should you contact me about my delivery?", NOTHING_RECALLED]
    assert "nothing relevant" in NOTHING_RECALLED.lower()
    assert "no memories of you" not in answer  # the user may have many: recall found none for this message


def test_an_answer_with_recalled_memories_shows_them() -> None:
    answer = echo_answer("What is my codename?", memories="- My project codename is Bluebird.")
    assert answer.splitlines()[1:] == ["From earlier conversations I remember:", "- My project codename is Bluebird."]
    assert NOTHING_RECALLED not in answer


def test_the_sessions_own_conversation_is_not_called_nothing() -> None:
    answer = echo_answer("And my codename?", memories="", earlier=["My project codename is Bluebird."])
    assert NOTHING_RECALLED not in answer
    assert "- My project codename is Bluebird." in answer
