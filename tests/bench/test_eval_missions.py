"""The missions eval's scenario: generated in code, deterministic, every fact and chatter line said once."""

from __future__ import annotations

from typing import Any

from bench.eval.missions import FACTS, SMALL_TALK, markdown, scenario


def test_the_scenario_is_deterministic_and_says_every_fact_and_chatter_line_once() -> None:
    customers = scenario(customers=3, seed=5)
    assert [c.sessions for c in customers] == [c.sessions for c in scenario(customers=3, seed=5)]
    for c in customers:
        said = " ".join(m for session in c.sessions for m in session)
        assert len(c.sessions) == 3
        assert len(c.facts) == sum(len(t) for t in FACTS.values())
        assert len(c.chatter) == sum(len(t) for t in SMALL_TALK.values())
        for line in [f.text for f in c.facts] + c.chatter:
            assert said.count(line) == 1, line
        assert all(f.needle in f.text for f in c.facts)


def test_the_table_has_one_row_per_condition() -> None:
    cell = {"total": 4, "stored": 4, "recalled": 3}
    row: dict[str, Any] = {
        "memories": 9,
        "small_talk_stored": 2,
        "small_talk_total": 9,
        "block_chars_mean": 700,
        "recalled_per_question_mean": 1.5,
        "kinds": {"preference": cell, "decision": cell, "problem": cell},
    }
    text = markdown({"with_mission": row, "without_mission": row}, 1, 10)
    assert "| with mission | 9 | 2/9 | 4/4 / 3/4 |" in text
    assert text.count("mission |") == 2
