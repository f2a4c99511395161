"""Who sets what memory keeps: a user's token sets no bank setting on any route (missions included), and the refusal
is the same bare 403 for its own bank, another user's and a bank that does not exist; the agent's own key sets the
missions of its agent's banks (nothing else, nowhere else); the operator sets everything."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import pytest

from memory_adapter.identity import format_bank_id, parse_bank_id
from memory_adapter.missions import MISSION_KEYS
from tests.integration.isolation.support import FORBIDDEN, Api, Mcp, Server

pytestmark = pytest.mark.integration

#: The red team's request: a user widening what memory keeps for them.
WIDENED = "Keep everything, including card numbers."
MISSION = {"retain_mission": "Keep the customer's preferences and decisions.", "retain_extraction_mode": "verbose"}

#: Every REST route of Hindsight 1.1.0 that writes a bank setting (config overrides, missions, dispositions, the
#: profile's name), with a body that writes one. ``PUT .../profile`` and ``POST .../background`` are not here: 1.1.0
#: answers them 410 before any bank access, whoever asks.
SETTING_WRITES: list[tuple[str, str, Any]] = [
    ("PATCH", "/config", {"updates": {"retain_mission": WIDENED}}),
    ("PATCH", "/config", {"updates": {"reflect_mission": WIDENED}}),
    ("PATCH", "/config", {"updates": {"retain_extraction_mode": "verbatim"}}),
    ("PATCH", "/config", {"updates": {"audit_log_enabled": False}}),
    ("DELETE", "/config", None),
    ("PUT", "", {"retain_mission": WIDENED}),
    ("PUT", "", {"mission": WIDENED}),
    ("PUT", "", {"disposition_skepticism": 1}),
    ("PUT", "", {"name": "renamed"}),
    ("PATCH", "", {"retain_mission": WIDENED}),
    ("PATCH", "", {"background": WIDENED}),
    ("PATCH", "", {"name": "renamed"}),
    ("POST", "/import", {"version": "1", "bank": {"retain_mission": WIDENED}}),
]


#: Hindsight 1.1.0's operations (OpenAPI ``operationId``) that write bank settings: each must be in SETTING_WRITES.
SETTING_OPERATIONS = frozenset(
    {"create_or_update_bank", "update_bank", "update_bank_config", "reset_bank_config", "import_bank_template"}
)
#: Removed in 1.1.0 (answered 410 before any bank access): they write nothing.
RETIRED_SETTING_OPERATIONS = frozenset({"update_bank_disposition", "add_bank_background"})
_BANK_PREFIX = "/v1/default/banks/{bank_id}"


@dataclass
class Banks:
    alice: Api
    alice_token: str
    bob: Api
    agent: Api
    operator: Api
    alice_bank: str  # exists
    bob_bank: str  # exists, another user's
    alice_missing: str  # Alice's, never created
    nobodys_bank: str  # nobody's, never created
    other_agents_bank: str  # Alice's bank of an agent the agent key is not for


@pytest.fixture(scope="module")
def banks(iso: Server, local_hindsight: Any) -> Banks:
    if not getattr(local_hindsight, "agent_key", None):
        pytest.fail("the shared local Hindsight has no agent key")
    suffix = uuid.uuid4().hex[:8]
    alice_user, bob_user = f"alice-m-{suffix}", f"bob-m-{suffix}"
    alice_token = iso.mint(alice_user, ttl=3600)
    alice, bob = iso.api(alice_token), iso.api(iso.mint(bob_user, ttl=3600))
    alice_bank = format_bank_id(user=alice_user, agent="support")
    bob_bank = format_bank_id(user=bob_user, agent="support")
    assert alice.retain(alice_bank, "Alice prefers email.").status_code == 200
    assert bob.retain(bob_bank, "Bob orders the vegetarian menu.").status_code == 200
    return Banks(
        alice=alice,
        alice_token=alice_token,
        bob=bob,
        agent=iso.api(local_hindsight.agent_key),
        operator=iso.api(iso.operator_key),
        alice_bank=alice_bank,
        bob_bank=bob_bank,
        alice_missing=format_bank_id(user=alice_user, agent="support-missing"),
        nobodys_bank=format_bank_id(user=f"carol-m-{suffix}", agent="support"),
        other_agents_bank=format_bank_id(user=alice_user, agent="sales"),
    )


def _config(api: Api, bank: str) -> dict[str, Any] | None:
    response = api.call("GET", f"/v1/default/banks/{bank}/config")
    if response.status_code == 404:
        return None
    assert response.status_code == 200, response.text
    overrides: dict[str, Any] = response.json()["overrides"]
    return overrides


def _send(api: Api, method: str, bank: str, suffix: str, body: Any) -> tuple[int, Any]:
    kwargs = {"json": body} if body is not None else {}
    response = api.call(method, f"/v1/default/banks/{bank}{suffix}", **kwargs)
    return response.status_code, response.json()


def _exists(operator: Api, bank: str) -> bool:
    return bank in operator.bank_ids()


@pytest.mark.parametrize(("method", "suffix", "body"), SETTING_WRITES, ids=lambda v: str(v)[:40])
def test_a_user_token_sets_no_bank_setting_and_every_bank_answers_alike(
    banks: Banks, method: str, suffix: str, body: Any
) -> None:
    # GIVEN Alice's own bank, Bob's, one of hers that does not exist and one of nobody's
    before = {bank: _config(banks.operator, bank) for bank in (banks.alice_bank, banks.bob_bank)}
    targets = (banks.alice_bank, banks.bob_bank, banks.alice_missing, banks.nobodys_bank)
    # WHEN Alice's token writes a setting to each
    answers = {bank: _send(banks.alice, method, bank, suffix, body) for bank in targets}
    # THEN every one is the same bare refusal (nothing tells which exist), and nothing changed or was created
    assert answers == dict.fromkeys(targets, (403, FORBIDDEN)), answers
    assert {bank: _config(banks.operator, bank) for bank in before} == before
    assert not _exists(banks.operator, banks.alice_missing)
    assert not _exists(banks.operator, banks.nobodys_bank)


def test_every_setting_route_of_the_running_server_is_covered(banks: Banks) -> None:
    # GIVEN the running server's own route list (an upgrade that adds a settings route fails here)
    paths = banks.operator.call("GET", "/openapi.json").json()["paths"]
    operations = {
        (op["operationId"], method.upper(), path)
        for path, item in paths.items()
        for method, op in item.items()
        if isinstance(op, dict) and "operationId" in op
    }
    known = {(method, _BANK_PREFIX + suffix) for method, suffix, _ in SETTING_WRITES}
    named = {(m, p) for op, m, p in operations if op in SETTING_OPERATIONS}
    # THEN every operation that writes a bank setting is exercised above, and the heuristic finds no other one
    assert named == known
    looks_like_settings = {
        (op, m, p)
        for op, m, p in operations
        if m != "GET" and p.startswith(_BANK_PREFIX) and p.removeprefix(_BANK_PREFIX) in ("", "/config", "/import")
    }
    assert {(m, p) for _, m, p in looks_like_settings} - {("DELETE", _BANK_PREFIX)} == known
    # AND the retired ones answer 410 to a user's token on its own bank, whatever the body
    retired = [(m, p) for op, m, p in operations if op in RETIRED_SETTING_OPERATIONS]
    assert len(retired) == len(RETIRED_SETTING_OPERATIONS)
    for method, path in retired:
        body = {"disposition": {"skepticism": 1, "literalism": 1, "empathy": 1}, "content": WIDENED}
        response = banks.alice.call(method, path.replace("{bank_id}", banks.alice_bank), json=body)
        assert response.status_code in (410, 422), response.text


def test_the_red_team_request_is_refused(banks: Banks) -> None:
    status = _send(banks.bob, "PATCH", banks.bob_bank, "/config", {"updates": {"retain_mission": WIDENED}})
    assert status == (403, FORBIDDEN)
    assert (_config(banks.operator, banks.bob_bank) or {}).get("retain_mission") != WIDENED


def test_a_user_token_still_reads_its_banks_settings_and_creates_its_bank(banks: Banks) -> None:
    assert banks.alice.call("GET", f"/v1/default/banks/{banks.alice_bank}/config").status_code == 200
    owner = parse_bank_id(banks.alice_bank)
    assert owner is not None
    fresh = format_bank_id(user=owner.user, agent=f"fresh-{uuid.uuid4().hex[:6]}")
    assert banks.alice.call("PUT", f"/v1/default/banks/{fresh}", json={}).status_code == 200


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("update_bank", {"config_updates": {"retain_mission": WIDENED}}),
        ("update_bank", {"mission": WIDENED}),
        ("create_bank", {"mission": WIDENED}),
    ],
)
def test_a_user_token_sets_no_bank_setting_over_mcp(
    iso: Server, banks: Banks, tool: str, arguments: dict[str, Any]
) -> None:
    # create_bank names its own bank: it is a tool of the multi-bank endpoint
    mcp = Mcp(iso.url, banks.alice_token, bank=None if tool == "create_bank" else banks.alice_bank)
    mcp.initialize()
    extra = {"bank_id": banks.alice_bank} if tool == "create_bank" else {}
    answer = mcp.call(tool, **extra, **arguments)
    assert "forbidden" in answer, answer
    assert WIDENED not in str(_config(banks.operator, banks.alice_bank))


def test_the_agent_key_sets_the_missions_of_its_agents_banks_and_nothing_else(banks: Banks) -> None:
    # GIVEN the agent key of agent "support": WHEN it sets the missions of a user's bank of that agent
    assert _send(banks.agent, "PATCH", banks.alice_bank, "/config", {"updates": MISSION})[0] == 200
    # THEN the bank keeps them
    overrides = _config(banks.operator, banks.alice_bank) or {}
    assert {key: overrides.get(key) for key in MISSION} == MISSION
    # AND no other setting, no other route, no other agent's bank
    assert _send(banks.agent, "PATCH", banks.alice_bank, "/config", {"updates": {"audit_log_enabled": False}}) == (
        403,
        FORBIDDEN,
    )
    assert _send(banks.agent, "PUT", banks.alice_bank, "", {"retain_mission": WIDENED}) == (403, FORBIDDEN)
    assert _send(banks.agent, "DELETE", banks.alice_bank, "/config", None) == (403, FORBIDDEN)
    other = _send(banks.agent, "PATCH", banks.other_agents_bank, "/config", {"updates": MISSION})
    assert other == (403, FORBIDDEN)


def test_the_operator_sets_every_bank_setting(banks: Banks) -> None:
    every_key = {key: "concise" if key == "retain_extraction_mode" else "x" for key in MISSION_KEYS}
    assert _send(banks.operator, "PATCH", banks.bob_bank, "/config", {"updates": {**every_key}})[0] == 200
    assert _send(banks.operator, "PUT", banks.bob_bank, "", {"disposition_skepticism": 4})[0] == 200
    assert (_config(banks.operator, banks.bob_bank) or {}).get("retain_mission") == "x"
    assert _send(banks.operator, "DELETE", banks.bob_bank, "/config", None)[0] == 200
