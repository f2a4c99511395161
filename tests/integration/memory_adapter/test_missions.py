"""Per-agent missions against the real local Hindsight, applied with the agent's own key (an IAM-mode agent): applied
to a bank before its first retain, honoured by the extraction (the stand-in reads the mission from the prompt Hindsight
sends it), re-applied when the setting changes. A retain sent with a user's token sets no mission (a user token may
set no bank setting)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from memory_adapter import RetainOutcome, TurnContext
from memory_adapter.hindsight_routes import bank_path
from memory_adapter.identity import format_bank_id
from memory_adapter.missions import MISSIONS_ENV
from memory_adapter.testing import MockTransport
from memory_adapter.transport import HttpTransport
from tests.conftest import TEST_SERVER_MISSIONS

pytestmark = pytest.mark.integration

MISSION = (
    "Keep the customer's preferences, decisions and the problems they report. "
    "Do not keep small talk: greetings, the weather, the weekend."
)
TURN = (
    "Hi there, hope you are doing well. It has been raining all week here in Leeds. "
    "I prefer email over phone calls for updates. We decided to move the team to the annual plan."
)


def recorded(url: str) -> MockTransport:
    """The real HTTP transport to ``url``, behind one that records every request."""
    real = HttpTransport(url)
    return MockTransport(lambda request: real.send(request))


def sent(transport: MockTransport) -> list[tuple[str, str]]:
    return [(r.method, r.path) for r in transport.requests]


def _agent_ctx(user: str, session: str, **kwargs: Any) -> TurnContext:
    """A turn of an IAM-mode agent: no user token, so the adapter sends its own key (``api_key``)."""
    return TurnContext(runtime_session_id=session, user_id=user, agent_name="support", **kwargs)


def _agent_adapter(make_adapter: Any, local_hindsight: Any, **kwargs: Any) -> Any:
    assert local_hindsight.agent_key, "the shared local Hindsight has no agent key"
    return make_adapter(local_hindsight.url, api_key=local_hindsight.agent_key, **kwargs)


def _missions(text: str, mode: str = "concise") -> str:
    return json.dumps({"support": {"retain_mission": text, "retain_extraction_mode": mode}})


def _overrides(bank: Any, bank_id: str) -> dict[str, Any]:
    body = bank._get(bank_path(bank_id, "/config"))
    assert body is not None
    overrides: dict[str, Any] = body["overrides"]
    return overrides


def _memories(bank: Any, bank_id: str, needle: str, timeout: float = 90.0) -> list[str]:
    """Every stored memory's text once one contains ``needle`` (extraction is asynchronous), else what is there."""
    deadline = time.monotonic() + timeout
    while True:
        body = bank._get(bank_path(bank_id, "/memories/list?limit=1000"))
        texts = [item["text"] for item in (body or {}).get("items", [])]
        if any(needle in t for t in texts) or time.monotonic() > deadline:
            return texts
        time.sleep(0.25)


async def test_a_mission_is_in_place_before_the_first_retain_and_steers_what_is_kept(
    local_hindsight, make_adapter, run_id, bank, monkeypatch
):
    # GIVEN one agent process without a mission and one with it (the setting is read when the adapter is made)
    plain = _agent_adapter(make_adapter, local_hindsight)
    monkeypatch.setenv(MISSIONS_ENV, _missions(MISSION))
    steered = _agent_adapter(make_adapter, local_hindsight)
    without, with_ = f"plain-{run_id}", f"steered-{run_id}"
    # WHEN each retains the same support turn into a new bank
    for adapter, user in ((plain, without), (steered, with_)):
        ctx = _agent_ctx(user, "s1", request_id=f"{user}-t1")
        assert await adapter.retain_for_turn(ctx, result="Noted.", query=TURN) is RetainOutcome.DELIVERED
    # THEN the steered bank carries the mission, and the plain one none
    steered_bank, plain_bank = (format_bank_id(user=u, agent="support") for u in (with_, without))
    assert _overrides(bank, steered_bank).get("retain_mission") == MISSION
    assert "retain_mission" not in _overrides(bank, plain_bank)
    # AND the first retain was already extracted under it: preferences and decisions kept, small talk not
    steered_texts = _memories(bank, steered_bank, "annual plan")
    plain_texts = _memories(bank, plain_bank, "annual plan")
    for texts in (steered_texts, plain_texts):
        assert any("email over phone" in t for t in texts), texts
        assert any("annual plan" in t for t in texts), texts
    assert not any("raining" in t for t in steered_texts), steered_texts
    assert any("raining" in t for t in plain_texts), plain_texts  # the same turn, without a mission


async def test_a_changed_mission_is_reapplied_and_an_unchanged_one_costs_one_read(
    local_hindsight, make_adapter, run_id, bank, monkeypatch
):
    user = f"changing-{run_id}"
    bank_id = format_bank_id(user=user, agent="support")

    async def turn(adapter: Any, n: int) -> None:
        ctx = _agent_ctx(user, f"s{n}", request_id=f"{user}-t{n}")
        handle = adapter.retain_for_turn(ctx, result="Noted.", query=f"I prefer invoices on day {n} of the month.")
        assert await handle is RetainOutcome.DELIVERED

    # GIVEN a bank first used under mission A
    monkeypatch.setenv(MISSIONS_ENV, _missions("Keep preferences."))
    await turn(_agent_adapter(make_adapter, local_hindsight), 1)
    assert _overrides(bank, bank_id)["retain_mission"] == "Keep preferences."
    # WHEN a later process (same setting) retains twice: one read, no write
    same = recorded(local_hindsight.url)
    adapter = _agent_adapter(make_adapter, local_hindsight, transport=same)
    await turn(adapter, 2)
    await turn(adapter, 3)
    assert (len(same.calls("/config", "GET")), len(same.calls("/config", "PATCH"))) == (1, 0)
    # WHEN the setting changes (a redeploy with a new mission and mode)
    monkeypatch.setenv(MISSIONS_ENV, _missions("Keep preferences and decisions.", mode="verbose"))
    changed = recorded(local_hindsight.url)
    adapter = _agent_adapter(make_adapter, local_hindsight, transport=changed)
    await turn(adapter, 4)
    await turn(adapter, 5)
    # THEN it is written once, before that process's first retain there
    assert (len(changed.calls("/config", "GET")), len(changed.calls("/config", "PATCH"))) == (1, 1)
    first_patch = sent(changed).index(("PATCH", bank_path(bank_id, "/config")))
    assert first_patch < sent(changed).index(("POST", bank_path(bank_id, "/memories")))
    overrides = _overrides(bank, bank_id)
    assert (overrides["retain_mission"], overrides["retain_extraction_mode"]) == (
        "Keep preferences and decisions.",
        "verbose",
    )


async def test_an_agent_without_a_mission_leaves_its_banks_alone(local_hindsight, make_adapter, run_id, monkeypatch):
    monkeypatch.setenv(MISSIONS_ENV, json.dumps({"sales": {"retain_mission": "Keep leads."}}))
    counting = recorded(local_hindsight.url)
    adapter = _agent_adapter(make_adapter, local_hindsight, transport=counting)  # "support": no mission of its own
    ctx = _agent_ctx(f"nomission-{run_id}", "s")
    assert await adapter.retain_for_turn(ctx, result="Noted.", query="I like tea.") is RetainOutcome.DELIVERED
    assert len(counting.calls("/config", "GET")) + len(counting.calls("/config", "PATCH")) == 0


async def test_with_a_users_token_the_server_applies_the_configured_mission_itself(
    local_hindsight, make_adapter, token_issuer, run_id, bank, monkeypatch
):
    # GIVEN an agent that sends its users' tokens (JWT mode: no agent key), whose mission the server is configured
    # with (the session server applies TEST_SERVER_MISSIONS to agent "steered"'s banks)
    mission = TEST_SERVER_MISSIONS.for_agent("steered")
    assert mission is not None
    assert mission.retain_mission is not None
    monkeypatch.setenv(MISSIONS_ENV, TEST_SERVER_MISSIONS.to_json())
    counting = recorded(local_hindsight.url)
    adapter = make_adapter(local_hindsight.url, transport=counting, agent_name="steered")
    user = f"jwt-{run_id}"
    ctx = TurnContext(
        runtime_session_id="s1",
        user_id=user,
        agent_name="steered",
        credential=token_issuer.mint(user, ttl=900),
        request_id=f"{user}-t1",
    )
    # WHEN it retains a support turn into the user's new bank
    assert await adapter.retain_for_turn(ctx, result="Noted.", query=TURN) is RetainOutcome.DELIVERED
    # THEN the agent asked for no bank setting (a user's token may set none) ...
    assert len(counting.calls("/config", "GET")) + len(counting.calls("/config", "PATCH")) == 0
    # ... and the server had put the mission in place before that first retain was extracted
    bank_id = format_bank_id(user=user, agent="steered")
    assert _overrides(bank, bank_id).get("retain_mission") == mission.retain_mission
    texts = _memories(bank, bank_id, "annual plan")
    assert any("annual plan" in t for t in texts), texts
    assert not any("raining" in t for t in texts), texts
