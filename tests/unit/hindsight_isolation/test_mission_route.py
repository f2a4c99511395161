"""A bank-config update is its owner's only when it sets nothing but mission keys (told apart by the guard)."""

from __future__ import annotations

import pytest

from hindsight_isolation.policy import Action, authorize
from hindsight_isolation.principal import Kind, Principal
from hindsight_isolation.route import RequestKind, classify, refine
from memory_adapter.identity import format_bank_id
from memory_adapter.missions import MAX_MISSION_CHARS

PATH = "/v1/default/banks/user:alice:agent:support/config"


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
        ("PATCH", PATH, {"updates": {"retain_mission": "x", "audit_log_enabled": False}}, RequestKind.OTHER),
        ("PATCH", PATH, {"updates": {"HINDSIGHT_API_RETAIN_MISSION": "x"}}, RequestKind.OTHER),
        ("PATCH", PATH, {"updates": {}}, RequestKind.OTHER),
        ("PATCH", PATH, {"updates": {"retain_mission": "x"}, "more": 1}, RequestKind.OTHER),
        ("PATCH", PATH, [{"updates": {"retain_mission": "x"}}], RequestKind.OTHER),
        ("POST", PATH, {"updates": {"retain_mission": "x"}}, RequestKind.OTHER),
        ("PATCH", PATH, {"updates": {"retain_mission": None}}, RequestKind.MISSION),
        ("PATCH", PATH, {"updates": {"retain_mission": "x" * (MAX_MISSION_CHARS + 1)}}, RequestKind.OTHER),
        ("PATCH", PATH, {"updates": {"retain_mission": ["x"]}}, RequestKind.OTHER),
        ("PATCH", PATH, {"updates": {"retain_extraction_mode": "custom"}}, RequestKind.OTHER),
        ("PATCH", PATH.replace("/config", "/memories/1"), {"updates": {"retain_mission": "x"}}, RequestKind.OTHER),
    ],
)
def test_only_a_mission_only_config_update_is_a_mission(
    method: str, path: str, body: object, kind: RequestKind
) -> None:
    assert refine(classify(method, path), method, path, body) is kind


def test_a_config_update_is_the_owners_only_in_a_mission_request() -> None:
    alice = Principal(Kind.USER, user="alice", tenant=None)
    own, other = format_bank_id(user="alice", agent="support"), format_bank_id(user="bob", agent="support")
    assert authorize(alice, own, Action.CONFIG, request=RequestKind.MISSION)
    assert not authorize(alice, own, Action.CONFIG, request=RequestKind.OTHER)
    assert not authorize(alice, other, Action.CONFIG, request=RequestKind.MISSION)
    grace = Principal(Kind.USER_GRACE, user="alice", tenant=None)
    assert not authorize(grace, own, Action.CONFIG, request=RequestKind.MISSION)
