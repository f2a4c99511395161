"""Bank settings are the operator's on every route; a config update that sets nothing but mission keys (told apart by
the guard) is the agent key's too, never a user token's."""

from __future__ import annotations

import pytest

from hindsight_isolation import route
from hindsight_isolation.policy import Action, authorize
from hindsight_isolation.principal import Kind, Principal
from hindsight_isolation.route import RequestKind, classify, refine
from memory_adapter.identity import format_bank_id
from memory_adapter.missions import MAX_MISSION_CHARS

BANK = "/v1/default/banks/user:alice:agent:support"
PATH = BANK + "/config"


@pytest.mark.parametrize(
    ("method", "path", "body", "kind"),
    [
        ("PATCH", PATH, {"updates": {"retain_mission": "x"}}, RequestKind.MISSION),
        (
            "PATCH",
            PATH + "/",
            {"updates": {"reflect_mission": "x", "retain_extraction_mode": "verbose"}},
            RequestKind.MISSION,
        ),
        ("PATCH", PATH, {"updates": {"retain_mission": "x", "audit_log_enabled": False}}, RequestKind.SETTINGS),
        ("PATCH", PATH, {"updates": {"HINDSIGHT_API_RETAIN_MISSION": "x"}}, RequestKind.SETTINGS),
        ("PATCH", PATH, {"updates": {}}, RequestKind.SETTINGS),
        ("PATCH", PATH, {"updates": {"retain_mission": "x"}, "more": 1}, RequestKind.SETTINGS),
        ("PATCH", PATH, [{"updates": {"retain_mission": "x"}}], RequestKind.SETTINGS),
        ("POST", PATH, {"updates": {"retain_mission": "x"}}, RequestKind.OTHER),
        ("PATCH", PATH, {"updates": {"retain_mission": None}}, RequestKind.MISSION),
        ("PATCH", PATH, {"updates": {"retain_mission": "x" * (MAX_MISSION_CHARS + 1)}}, RequestKind.SETTINGS),
        ("PATCH", PATH, {"updates": {"retain_mission": ["x"]}}, RequestKind.SETTINGS),
        ("PATCH", PATH, {"updates": {"retain_extraction_mode": "custom"}}, RequestKind.SETTINGS),
        ("PATCH", PATH.replace("/config", "/memories/1"), {"updates": {"retain_mission": "x"}}, RequestKind.OTHER),
        ("DELETE", PATH, None, RequestKind.SETTINGS),
        ("PUT", BANK, {"retain_mission": "x"}, RequestKind.SETTINGS),
        ("PUT", BANK, {"name": "x"}, RequestKind.SETTINGS),
        ("PATCH", BANK + "/", {"disposition_skepticism": 1}, RequestKind.SETTINGS),
        ("PUT", BANK, {}, RequestKind.OTHER),  # creates the bank, sets nothing
        ("PUT", BANK, {"name": None, "mission": None}, RequestKind.OTHER),
        ("PUT", BANK, None, RequestKind.SETTINGS),  # no body: refused rather than guessed
        ("DELETE", BANK, None, RequestKind.OTHER),
        ("GET", BANK, None, RequestKind.OTHER),
        ("POST", BANK + "/import", {"version": "1", "bank": {"retain_mission": "x"}}, RequestKind.SETTINGS),
        ("POST", BANK + "/import", {"version": "1", "directives": []}, RequestKind.SETTINGS),
        ("PUT", BANK + "/profile", {"disposition": {}}, RequestKind.OTHER),  # 410 in 1.1.0, whoever asks
    ],
)
def test_setting_writes_are_settings_and_a_mission_only_config_update_is_a_mission(
    method: str, path: str, body: object, kind: RequestKind
) -> None:
    classified = classify(method, path)
    # the guard refines only a request with a JSON body
    assert (refine(classified, method, path, body) if body is not None else classified) is kind


def test_a_user_token_sets_no_bank_setting_in_any_request() -> None:
    alice = Principal(Kind.USER, user="alice", tenant=None)
    own, other = format_bank_id(user="alice", agent="support"), format_bank_id(user="bob", agent="support")
    grace = Principal(Kind.USER_GRACE, user="alice", tenant=None)
    for principal in (alice, grace):
        for request in RequestKind:
            assert not authorize(principal, own, Action.CONFIG, request=request), request
            assert not authorize(principal, other, Action.CONFIG, request=request), request
        for request in (RequestKind.MISSION, RequestKind.SETTINGS):
            for action in Action:  # every hook of such a request refuses it, so the first one Hindsight runs does
                assert not authorize(principal, own, action, request=request), (request, action)


def test_the_agent_key_sets_missions_of_its_agents_banks_only() -> None:
    agent = Principal(Kind.AGENT, agent="support", tenant=None)
    own, other = format_bank_id(user="alice", agent="support"), format_bank_id(user="alice", agent="sales")
    assert authorize(agent, own, Action.CONFIG, request=RequestKind.MISSION)
    assert authorize(agent, own, Action.CREATE_BANK, request=RequestKind.MISSION)
    assert not authorize(agent, other, Action.CONFIG, request=RequestKind.MISSION)
    for request in set(RequestKind) - {RequestKind.MISSION}:
        assert not authorize(agent, own, Action.CONFIG, request=request), request
    assert not authorize(agent, own, Action.CREATE_BANK, request=RequestKind.SETTINGS)


def test_the_operator_sets_every_setting() -> None:
    operator = Principal(Kind.OPERATOR)
    bank = format_bank_id(user="alice", agent="support")
    for request in (RequestKind.SETTINGS, RequestKind.MISSION, RequestKind.OTHER, RequestKind.MCP):
        assert authorize(operator, bank, Action.CONFIG, request=request)


@pytest.mark.parametrize(
    ("kind", "method", "path", "body", "named"),
    [
        (RequestKind.OTHER, "POST", "/v1/default/banks/b/directives", {"name": "tone"}, ("tone", None)),
        (RequestKind.OTHER, "PATCH", "/v1/default/banks/b/directives/d-1", {"name": "tone"}, ("tone", "d-1")),
        (RequestKind.OTHER, "PATCH", "/v1/default/banks/b/directives/d-1", {"priority": 2}, None),
        (RequestKind.OTHER, "POST", "/v1/default/banks/b/directives/d-1", {"name": "tone"}, None),
        (RequestKind.OTHER, "PATCH", "/v1/default/banks/b/directives", {"name": "tone"}, None),
        (RequestKind.OTHER, "POST", "/v1/default/banks/b/mental-models", {"name": "tone"}, None),
        (RequestKind.OTHER, "POST", "/v1/default/banks/b/directives", {"name": 7}, None),
        (
            RequestKind.MCP,
            "POST",
            "/mcp/",
            {"method": "tools/call", "params": {"name": "create_directive", "arguments": {"name": "tone"}}},
            ("tone", None),
        ),
        (RequestKind.MCP, "POST", "/mcp/", {"method": "tools/call", "params": {"name": "recall"}}, None),
        (RequestKind.MCP, "POST", "/mcp/", [1], None),
    ],
)
def test_the_directive_name_a_request_sets_is_read_from_its_body(
    kind: RequestKind, method: str, path: str, body: object, named: tuple[str, str | None] | None
) -> None:
    assert route.naming_directive(kind, method, path, body) == named
