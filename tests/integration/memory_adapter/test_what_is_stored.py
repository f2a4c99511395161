"""Issue 31 item 4: what is stored is what the person said, against the real local Hindsight (the LLM stand-in plays
its extractor), under the project's default mission (``cdk.json``, agent ``assistant``).

A self-introduction is a fact ("Hi, I'm Alex." is the user's name, though the mission drops greetings), so "What is my
name?" recalls it before the name of anyone else; a long pasted text, hard-wrapped as pasted mail and documents are,
is stored as whole sentences, never as fragments ("My server", "room 12 is in the").
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from memory_adapter import RetainOutcome
from memory_adapter.hindsight_routes import bank_path
from memory_adapter.identity import format_bank_id
from memory_adapter.missions import MISSIONS_ENV

pytestmark = pytest.mark.integration

_CDK_JSON = Path(__file__).resolve().parents[3] / "cdk.json"


def _default_mission() -> str:
    missions = json.loads(_CDK_JSON.read_text())["context"]["defaults"]["missions"]
    mission: str = missions["assistant"]["retain_mission"]
    return mission


def _memories(bank: Any, bank_id: str, count: int, timeout: float = 90.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while True:
        body = bank._get(bank_path(bank_id, "/memories/list?limit=1000"))
        texts = [str(item["text"]) for item in (body or {}).get("items", [])]
        if len(texts) >= count or time.monotonic() > deadline:
            return texts
        time.sleep(0.25)


@pytest.fixture
def mission(monkeypatch: pytest.MonkeyPatch) -> str:
    text = _default_mission()
    monkeypatch.setenv(MISSIONS_ENV, json.dumps({"support": {"retain_mission": text}}))
    return text


async def test_hi_im_alex_is_the_users_name_and_what_is_my_name_recalls_it_first(
    local_hindsight, make_adapter, user_ctx, run_id, bank, mission
):
    # GIVEN a user who introduces themself, then talks about their partner, under the default mission
    adapter = make_adapter(local_hindsight.url, timeout=30.0, recall_timeout=10.0)
    user = f"alex-{run_id}"
    turns = [
        ("Hi, I'm Alex.", "Nice to meet you, Alex! I'm your assistant."),
        ("My partner's name is Sam and she works as a nurse.", "Good to know."),
    ]
    for n, (query, answer) in enumerate(turns):
        ctx = user_ctx(user, "s1", request_id=f"{user}-t{n}")
        assert await adapter.retain_for_turn(ctx, result=answer, query=query) is RetainOutcome.DELIVERED
    bank_id = format_bank_id(user=user, agent="support")
    # THEN the introduction is stored as the user's name, and the partner's facts separately
    assert sorted(_memories(bank, bank_id, 3)) == sorted(
        ["My name is Alex.", "My partner's name is Sam.", "She works as a nurse."]
    )
    # AND "What is my name?" recalls the user's name first, not the partner's
    recollection = await adapter.recall_for_turn(user_ctx(user, "s2"), "What is my name?")
    assert [m.text for m in recollection.memories][:1] == ["My name is Alex."]


async def test_a_long_pasted_text_is_stored_as_whole_sentences(
    local_hindsight, make_adapter, user_ctx, run_id, bank, mission
):
    # GIVEN a pasted text of ~16,000 characters, hard-wrapped at 72 columns (lines stop mid-sentence)
    sentences = [f"My server room {n} is in the basement of building {n % 7} next to the fuse box." for n in range(220)]
    lines: list[str] = []
    for word in " ".join(sentences).split(" "):
        if lines and len(lines[-1]) + len(word) < 72:
            lines[-1] += " " + word
        else:
            lines.append(word)
    pasted = "Here are my notes:\n" + "\n".join(lines)
    assert len(pasted) > 16_000
    adapter = make_adapter(local_hindsight.url, timeout=60.0)
    user = f"paste-{run_id}"
    ctx = user_ctx(user, "s1", request_id=f"{user}-t1")
    # WHEN the turn is retained and extracted
    assert await adapter.retain_for_turn(ctx, result="Noted.", query=pasted) is RetainOutcome.DELIVERED
    bank_id = format_bank_id(user=user, agent="support")
    bank.wait_for_documents(bank_id, {f"{user}-t1"})
    texts = _memories(bank, bank_id, len(sentences))
    # THEN every memory is one whole sentence of the text (no fragment such as "My server" or "room 12 is in the")
    fragments = [t for t in texts if t not in sentences and t != "Here are my notes:"]
    assert fragments == []
    assert len(set(texts) & set(sentences)) == len(sentences)
