"""A bank's owner may set its missions (what its memory keeps) and no other setting, on its own bank only."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass

import pytest

from memory_adapter.identity import format_bank_id
from memory_adapter.missions import MISSION_KEYS
from tests.integration.isolation.support import FORBIDDEN, Api, Server

pytestmark = pytest.mark.integration

MISSION = {"retain_mission": "Keep the customer's preferences and decisions.", "retain_extraction_mode": "verbose"}


@dataclass
class Owners:
    alice: Api
    bob: Api
    operator: Api
    alice_bank: str
    bob_bank: str
    nobodys_bank: str


@pytest.fixture(scope="module")
def owners(iso: Server) -> Owners:
    suffix = uuid.uuid4().hex[:8]
    alice_user, bob_user = f"alice-m-{suffix}", f"bob-m-{suffix}"
    alice, bob = iso.api(iso.mint(alice_user, ttl=3600)), iso.api(iso.mint(bob_user, ttl=3600))
    alice_bank = format_bank_id(user=alice_user, agent="support")
    bob_bank = format_bank_id(user=bob_user, agent="support")
    assert bob.retain(bob_bank, "Bob orders the vegetarian menu.").status_code == 200
    nobody = format_bank_id(user=f"carol-m-{suffix}", agent="support")
    return Owners(alice, bob, iso.api(iso.operator_key), alice_bank, bob_bank, nobody)


def _config(api: Api, bank: str) -> dict[str, object]:
    response = api.call("GET", f"/v1/default/banks/{bank}/config")
    assert response.status_code == 200, response.text
    overrides: dict[str, object] = response.json()["overrides"]
    return overrides


def _patch(api: Api, bank: str, updates: Mapping[str, object]) -> int:
    return api.call("PATCH", f"/v1/default/banks/{bank}/config", json={"updates": updates}).status_code


def test_an_owner_sets_its_banks_missions_even_before_the_bank_exists(owners: Owners) -> None:
    # GIVEN Alice's bank does not exist yet; WHEN she sets its missions
    assert _patch(owners.alice, owners.alice_bank, MISSION) == 200
    # THEN the bank exists with exactly those overrides
    overrides = _config(owners.operator, owners.alice_bank)
    assert {key: overrides.get(key) for key in MISSION} == MISSION
    # AND she can change one of them later (each key alone is a mission update)
    assert _patch(owners.alice, owners.alice_bank, {"reflect_mission": "Answer as a support agent."}) == 200
    assert _config(owners.alice, owners.alice_bank)["reflect_mission"] == "Answer as a support agent."


@pytest.mark.parametrize(
    "updates",
    [
        {"retain_mission": "x", "audit_log_enabled": False},  # a mission key does not carry another one through
        {"audit_log_enabled": False},
        {"HINDSIGHT_API_RETAIN_MISSION": "x"},  # Hindsight's env-var spelling: not the exact field names
        {"RETAIN_MISSION": "x"},
        {},
    ],
)
def test_an_owner_sets_no_other_bank_setting(owners: Owners, updates: dict[str, object]) -> None:
    before = _config(owners.operator, owners.bob_bank)
    assert _patch(owners.bob, owners.bob_bank, updates) == 403
    assert _config(owners.operator, owners.bob_bank) == before


def test_a_mission_update_with_more_than_updates_in_its_body_is_the_operators(owners: Owners) -> None:
    body = {"updates": {"retain_mission": "x"}, "other": 1}
    response = owners.bob.call("PATCH", f"/v1/default/banks/{owners.bob_bank}/config", json=body)
    assert response.status_code in (403, 422), response.text
    assert "retain_mission" not in _config(owners.operator, owners.bob_bank)


def test_nobody_sets_another_users_missions_and_learns_nothing_from_trying(owners: Owners) -> None:
    existing = owners.alice.call("PATCH", f"/v1/default/banks/{owners.bob_bank}/config", json={"updates": MISSION})
    missing = owners.alice.call("PATCH", f"/v1/default/banks/{owners.nobodys_bank}/config", json={"updates": MISSION})
    assert (existing.status_code, existing.json()) == (missing.status_code, missing.json()) == (403, FORBIDDEN)
    assert "retain_mission" not in _config(owners.operator, owners.bob_bank)


def test_resetting_and_other_settings_stay_the_operators(owners: Owners) -> None:
    assert owners.bob.call("DELETE", f"/v1/default/banks/{owners.bob_bank}/config").status_code == 403
    every_key = {key: "concise" if key == "retain_extraction_mode" else "x" for key in MISSION_KEYS}
    assert _patch(owners.operator, owners.bob_bank, {**every_key, "audit_log_enabled": True}) == 200
