"""The LLM stand-in honours the retain_mission Hindsight 1.1.0 puts in its extraction prompt."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from localdev.stub_answers import chat_completion
from localdev.stub_missions import keeps, mission_of
from localdev.supervisor import REPO_ROOT

MISSION = "Keep the customer's preferences and decisions. Do not keep small talk (greetings, the weather)."


CONTENT = "User: Good morning! The weather is awful today. I prefer email over phone. We decided on the pro plan."


@pytest.fixture(scope="module")
def requests() -> dict[str | None, dict[str, Any]]:
    """The extraction request Hindsight 1.1.0 itself builds for ``CONTENT``, per mission (its own prompt builder,
    run once in its virtualenv: importing it takes a while)."""
    script = (
        "import json, sys, types\n"
        "from hindsight_api.engine.retain.fact_extraction import _build_user_message, _retain_mission_preamble\n"
        "content, missions = json.loads(sys.stdin.read())\n"
        "def user(m):\n"
        "    preamble = _retain_mission_preamble(types.SimpleNamespace(retain_mission=m))\n"
        "    return _build_user_message(content, 0, 1, None, '', mission_preamble=preamble)\n"
        "print(json.dumps([user(m) for m in missions]))\n"
    )
    python = next((REPO_ROOT / ".venv-hindsight").glob("bin/python3"))
    missions = [None, MISSION]
    rendered = json.loads(
        subprocess.run(
            [str(python), "-c", script],
            input=json.dumps([CONTENT, missions]),
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    return {
        mission: {"messages": [{"role": "system", "content": "Extract facts."}, {"role": "user", "content": user}]}
        for mission, user in zip(missions, rendered, strict=True)
    }


def test_the_mission_is_read_from_hindsights_own_prompt(requests: dict[str | None, dict[str, Any]]) -> None:
    assert mission_of(requests[MISSION]["messages"][1]["content"]) == MISSION
    assert mission_of(requests[None]["messages"][1]["content"]) is None


def test_what_the_mission_says_not_to_keep_is_not_extracted(requests: dict[str | None, dict[str, Any]]) -> None:
    facts = {
        mission: [f["what"] for f in json.loads(chat_completion(body)["choices"][0]["message"]["content"])["facts"]]
        for mission, body in requests.items()
    }
    assert "The weather is awful today." in facts[None]
    assert facts[MISSION] == ["I prefer email over phone.", "We decided on the pro plan."]


def test_a_kept_kind_wins_over_a_small_talk_topic_and_only_narrows() -> None:
    assert keeps(MISSION, "I prefer to get the weather report by email.")
    assert keeps(MISSION, "My account number is 4417.")  # neither: kept, as the default extraction would
    assert not keeps("Keep only decisions.", "My account number is 4417.")
    assert keeps("Ignore nothing in particular.", "The weather is awful today.")  # names no topic: no effect
