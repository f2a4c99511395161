"""Over REST, a user's token reaches that user's banks and nothing else; bad credentials get a bare 401."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

import pytest

from memory_adapter.identity import format_bank_id
from tests.integration.isolation.support import FORBIDDEN, UNAUTHORIZED, Api, Server, forged_token
from tests.unit.issuers import non_numeric_time_claims

pytestmark = pytest.mark.integration

BOB_FACT = "Bob keeps the spare office key under the blue flowerpot."


@dataclass
class People:
    alice: Api
    bob: Api
    operator: Api
    alice_bank: str
    bob_bank: str
    alice_user: str
    bob_user: str


@pytest.fixture(scope="module")
def people(iso: Server) -> People:
    suffix = uuid.uuid4().hex[:8]
    alice_user, bob_user = f"alice-{suffix}", f"bob-{suffix}"
    alice = iso.api(iso.mint(alice_user, ttl=3600))
    bob = iso.api(iso.mint(bob_user, ttl=3600))
    alice_bank = format_bank_id(user=alice_user, agent="support")
    bob_bank = format_bank_id(user=bob_user, agent="support")
    assert alice.retain(alice_bank, "Alice drinks green tea every morning.", document_id="a1").status_code == 200
    assert bob.retain(bob_bank, BOB_FACT, document_id="b1").status_code == 200
    return People(alice, bob, iso.api(iso.operator_key), alice_bank, bob_bank, alice_user, bob_user)


def _attempts(bank: str) -> dict[str, tuple[str, str, dict[str, Any]]]:
    base = f"/v1/default/banks/{bank}"
    return {
        "recall": ("POST", f"{base}/memories/recall", {"json": {"query": "office key"}}),
        "reflect": ("POST", f"{base}/reflect", {"json": {"query": "Where is the key?"}}),
        "retain": ("POST", f"{base}/memories", {"json": {"items": [{"content": "Bob's key is now in the bin."}]}}),
        "list memories": ("GET", f"{base}/memories/list", {}),
        "list documents": ("GET", f"{base}/documents", {}),
        "get document": ("GET", f"{base}/documents/b1", {}),
        "export": ("POST", f"{base}/transfer/export", {}),
        "export template": ("GET", f"{base}/export", {}),
        "alias": ("POST", f"{base}/aliases", {"json": {"alias": f"alias-{uuid.uuid4().hex[:6]}"}}),
        "config": ("GET", f"{base}/config", {}),
        "stats": ("GET", f"{base}/stats", {}),
        "delete document": ("DELETE", f"{base}/documents/b1", {}),
        "clear memories": ("DELETE", f"{base}/memories", {}),
        "delete bank": ("DELETE", base, {}),
    }


@pytest.mark.parametrize("operation", list(_attempts("x")))
def test_user_cannot_touch_another_users_bank(people: People, operation: str) -> None:
    # WHEN alice's token names bob's bank
    method, path, kwargs = _attempts(people.bob_bank)[operation]
    response = people.alice.call(method, path, **kwargs)

    # THEN a bare 403, and bob's memory is untouched
    assert response.status_code == 403, response.text
    assert response.json() == FORBIDDEN
    assert people.operator.texts(people.bob_bank, "office key") == [BOB_FACT]


def test_user_cannot_touch_a_bank_of_the_same_user_in_a_tenant(people: People) -> None:
    # A single-tenant token names no tenant: a tenant's bank with the same user name is someone else's.
    other_tenant_bank = format_bank_id(user=people.alice_user, agent="support", tenant="globex")
    assert people.alice.retain(other_tenant_bank, "x").status_code == 403
    assert people.alice.recall(other_tenant_bank, "x").status_code == 403


def test_user_reaches_own_banks_for_any_agent(people: People) -> None:
    other_agent_bank = format_bank_id(user=people.alice_user, agent="sales")
    assert people.alice.retain(other_agent_bank, "Alice prefers the window seat.").status_code == 200
    assert people.alice.texts(other_agent_bank, "seat") == ["Alice prefers the window seat."]
    assert people.alice.texts(people.alice_bank, "tea") == ["Alice drinks green tea every morning."]


def test_bank_list_shows_only_own_banks(people: People) -> None:
    listed = people.alice.bank_ids()
    assert people.alice_bank in listed
    assert people.bob_bank not in listed
    assert all(bank.startswith(f"user:{people.alice_user}:") for bank in listed)


def test_non_user_banks_are_for_the_operator_only(people: People) -> None:
    shared = f"shared-{uuid.uuid4().hex[:6]}"
    assert people.alice.retain(shared, "x").status_code == 403
    assert people.operator.retain(shared, "Operators may use any bank id.").status_code == 200
    assert people.alice.recall(shared, "x").status_code == 403


def test_operator_administers_every_bank(people: People) -> None:
    listed = people.operator.bank_ids()
    assert {people.alice_bank, people.bob_bank} <= set(listed)
    assert people.operator.texts(people.bob_bank, "office key") == [BOB_FACT]
    doomed = format_bank_id(user=people.bob_user, agent="doomed")
    assert people.bob.retain(doomed, "temporary").status_code == 200
    assert people.operator.call("DELETE", f"/v1/default/banks/{doomed}").status_code == 200
    assert doomed not in people.operator.bank_ids()


def test_aliases_are_refused_even_to_the_owner_and_the_operator(people: People) -> None:
    # An alias would let alice's bank answer for an id bob will use later.
    hijack = {"alias": format_bank_id(user=people.bob_user, agent="future")}
    for api in (people.alice, people.operator):
        response = api.call("POST", f"/v1/default/banks/{people.alice_bank}/aliases", json=hijack)
        assert response.status_code == 403, response.text
    assert people.alice.call("GET", f"/v1/default/banks/{people.alice_bank}/aliases").status_code == 403
    assert people.operator.call("GET", f"/v1/default/banks/{people.alice_bank}/aliases").status_code == 200


def test_owner_cannot_use_operator_only_functions(people: People) -> None:
    base = f"/v1/default/banks/{people.alice_bank}"
    webhook = {"url": "https://hooks.example.com/hook", "event_types": ["memory_defense.triggered"]}
    assert people.alice.call("POST", f"{base}/webhooks", json=webhook).status_code == 403
    assert (
        people.alice.call("PATCH", f"{base}/config", json={"updates": {"audit_log_enabled": False}}).status_code == 403
    )
    assert people.alice.call("GET", f"{base}/webhooks").status_code == 403


def _bad_credentials(iso: Server, user: str) -> dict[str, str | None]:
    issuer = iso.extra["issuer"]
    return {
        "none": None,
        "garbage": "not-a-token",
        "forged signature": forged_token(issuer.issuer, issuer.kid, user, issuer.client_id),
        "expired beyond the grace window": iso.mint(user, ttl=-(7 * 3600)),
        "wrong client": iso.mint(user, client_id="some-other-app"),
        "wrong audience (ID token)": iso.mint(user, token_use="id", audience="some-other-app"),
        "wrong issuer": iso.mint(user, extra_claims={"iss": "https://evil.example"}),
        "unknown key id": iso.mint(user, kid="not-a-published-kid"),
        "no expiry": iso.mint(user, extra_claims={"exp": None}),
        "the old global key style": "hindsight-global-api-key-" + "k" * 24,
        **{case: iso.mint(user, extra_claims=claims) for case, claims in non_numeric_time_claims().items()},
    }


@pytest.mark.parametrize(
    "case",
    [
        "none",
        "garbage",
        "forged signature",
        "expired beyond the grace window",
        "wrong client",
        "wrong audience (ID token)",
        "wrong issuer",
        "unknown key id",
        "no expiry",
        "the old global key style",
        *non_numeric_time_claims(),
    ],
)
def test_bad_credentials_get_a_bare_401(iso: Server, people: People, case: str) -> None:
    credential = _bad_credentials(iso, people.alice_user)[case]
    api = iso.api(credential)
    for response in (api.recall(people.alice_bank, "tea"), api.call("GET", "/v1/default/banks")):
        assert response.status_code == 401, response.text
        assert response.json() == UNAUTHORIZED


def test_every_denial_is_logged_with_its_reason(iso: Server, people: People) -> None:
    if iso.server_log is None:
        pytest.skip("the server log is not reachable (external server)")
    people.alice.recall(people.bob_bank, "office key")
    iso.api("not-a-token").recall(people.alice_bank, "tea")
    deadline = time.monotonic() + 10
    while True:
        log = iso.log_text()
        denied_403 = f"bank_id='{people.bob_bank}' principal=user user='{people.alice_user}'"
        if denied_403 in log and "status=401" in log:
            break
        assert time.monotonic() < deadline, "denials not logged"
        time.sleep(0.2)
    line = next(line for line in log.splitlines() if denied_403 in line)
    assert "hindsight_isolation denied status=403 operation=" in line
    assert "reason='bank belongs to another identity'" in line
    assert "reason='token malformed'" in log


def test_a_refused_credential_is_logged_once_per_request(iso: Server, people: People) -> None:
    if iso.server_log is None:
        pytest.skip("the server log is not reachable (external server)")
    marker = "hindsight_isolation denied status=401"
    before = iso.log_text().count(marker)
    # WHEN one request on a bank route (alias resolution, then the endpoint: two authentications) is refused
    response = iso.api("an-unknown-credential").recall(people.alice_bank, "tea")
    assert response.status_code == 401
    deadline = time.monotonic() + 10
    while iso.log_text().count(marker) == before:
        assert time.monotonic() < deadline, "denial not logged"
        time.sleep(0.2)
    # THEN the denial is one log line (written before the response, so a second one would be there already)
    assert iso.log_text().count(marker) == before + 1
