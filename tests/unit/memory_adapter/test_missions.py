"""Missions: the setting's parsing, and how a bank's mission is applied when Hindsight fails or refuses."""

from __future__ import annotations

from typing import Any

import pytest

from memory_adapter._hindsight_api import HindsightApi
from memory_adapter.bank_missions import BankMissions
from memory_adapter.exceptions import HindsightUnavailableError
from memory_adapter.identity import format_bank_id
from memory_adapter.missions import Mission, Missions, MissionsError
from memory_adapter.observability import Observer
from memory_adapter.testing import MockTransport
from memory_adapter.transport import HttpRequest, HttpResponse

BANK = format_bank_id(user="u1", agent="support")


def scripted(get: list[int | None], patch: int = 200, overrides: dict[str, Any] | None = None) -> MockTransport:
    """Answers GET/PATCH of a bank's config from a script of statuses (``None``: unreachable)."""

    def handler(request: HttpRequest) -> HttpResponse:
        if request.method == "GET":
            status = get.pop(0) if get else 200
            if status is None:
                raise HindsightUnavailableError("cannot reach Hindsight")
            return HttpResponse(status, {"overrides": overrides or {}} if status == 200 else {"detail": "x"})
        return HttpResponse(patch, {} if patch == 200 else {"detail": "forbidden"})

    return MockTransport(handler)


def calls(transport: MockTransport) -> list[tuple[str, Any]]:
    return [(r.method, r.body) for r in transport.requests]


def _missions(**mission: str) -> Missions:
    return Missions({"support": Mission(**mission)})


AGENT_KEY = "agent-key-" + "k" * 32


def _applier(transport: MockTransport, missions: Missions) -> BankMissions:
    api = HindsightApi(transport, timeout=1.0)
    return BankMissions(api=api, missions=missions, observer=Observer(None, verbose=False))


def test_every_problem_of_the_setting_is_listed_at_once() -> None:
    raw = {
        "support": {"retain_mision": "typo", "retain_extraction_mode": "fast", "reflect_mission": 3},
        "sales": "keep leads",
        "ok": {"retain_mission": "Keep leads."},
    }
    missions, problems = Missions.checked(raw)
    assert problems == [
        "missions.support.retain_mision is not a mission setting "
        "(known: retain_mission, retain_extraction_mode, reflect_mission)",
        "missions.support.reflect_mission must be text or null, got 3",
        "missions.support.retain_extraction_mode must be one of concise, verbose, verbatim, chunks, got 'fast'",
        "missions.sales must be an object with any of retain_mission, retain_extraction_mode, reflect_mission",
    ]
    assert set(missions.by_agent) == {"ok"}


def test_the_environment_form_round_trips_and_bad_json_is_one_clear_error() -> None:
    missions = Missions.from_mapping({"support": {"retain_mission": "Keep decisions.", "reflect_mission": None}})
    assert Missions.from_json(missions.to_json()) == missions
    assert missions.for_agent("support") == Mission(retain_mission="Keep decisions.")
    with pytest.raises(MissionsError, match="HINDSIGHT_ADAPTER_MISSIONS is not valid JSON"):
        Missions.from_json("{support")


def test_an_empty_mission_is_managed_and_a_null_one_is_not() -> None:
    assert Mission(retain_mission="", reflect_mission=None).updates() == {"retain_mission": ""}


def test_an_unreachable_hindsight_defers_the_mission_to_the_banks_next_retain() -> None:
    transport = scripted(get=[None, 404])
    applier = _applier(transport, _missions(retain_mission="Keep decisions."))
    applier.prepare(BANK, AGENT_KEY)  # never raises: the retain that follows goes on
    assert calls(transport) == [("GET", None)]
    applier.prepare(BANK, AGENT_KEY)  # the next retain tries again: no bank yet, so it is created with its mission
    assert calls(transport)[1:] == [("GET", None), ("PATCH", {"updates": {"retain_mission": "Keep decisions."}})]
    applier.prepare(BANK, AGENT_KEY)  # settled for this process
    assert len(calls(transport)) == 3


def test_a_refused_mission_is_not_retried_for_every_turn() -> None:
    transport = scripted(get=[200], patch=403)
    applier = _applier(transport, _missions(retain_mission="Keep decisions."))
    applier.prepare(BANK, AGENT_KEY)
    applier.prepare(BANK, AGENT_KEY)
    assert [method for method, _ in calls(transport)] == ["GET", "PATCH"]


def test_only_what_differs_is_written() -> None:
    transport = scripted(
        get=[200], overrides={"retain_mission": "Keep decisions.", "retain_extraction_mode": "concise"}
    )
    applier = _applier(transport, _missions(retain_mission="Keep decisions.", retain_extraction_mode="verbose"))
    applier.prepare(BANK, AGENT_KEY)
    assert calls(transport)[1] == ("PATCH", {"updates": {"retain_extraction_mode": "verbose"}})


def test_banks_outside_the_per_user_scheme_are_left_alone() -> None:
    transport = scripted(get=[])
    _applier(transport, _missions(retain_mission="Keep decisions.")).prepare("default", AGENT_KEY)
    assert calls(transport) == []


@pytest.mark.parametrize("bearer", ["eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln", None])
def test_a_retain_sent_with_a_users_token_or_none_sets_no_mission(bearer: str | None) -> None:
    # GIVEN a retain carrying a user's token (a JWT), or no credential at all
    transport = scripted(get=[404])
    applier = _applier(transport, _missions(retain_mission="Keep decisions."))
    # WHEN it is prepared: THEN no bank setting is read or written (Hindsight applies the mission itself)
    applier.prepare(BANK, bearer)
    assert calls(transport) == []
