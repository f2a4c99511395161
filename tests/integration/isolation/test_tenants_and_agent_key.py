"""With a tenant claim, tenants are separate; the per-deployment agent key reaches its (tenant, agent) banks only.

Runs against a dedicated server (tenant claim ``custom:tenant``, agent key for ``(acme, support)``).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import pytest

from memory_adapter.identity import format_bank_id
from tests.integration.isolation.support import FORBIDDEN, UNAUTHORIZED, Api, Mcp, Server

pytestmark = pytest.mark.integration


@dataclass
class World:
    alice_acme: Api
    alice_globex: Api
    agent: Api
    operator: Api
    user: str
    acme_support: str
    acme_sales: str
    globex_support: str


@pytest.fixture(scope="module")
def world(tenant_iso: Server) -> World:
    user = f"alice-{uuid.uuid4().hex[:8]}"
    alice_acme = tenant_iso.api(tenant_iso.mint(user, tenant="acme", ttl=3600))
    alice_globex = tenant_iso.api(tenant_iso.mint(user, tenant="globex", ttl=3600))
    acme_support = format_bank_id(user=user, agent="support", tenant="acme")
    acme_sales = format_bank_id(user=user, agent="sales", tenant="acme")
    globex_support = format_bank_id(user=user, agent="support", tenant="globex")
    assert alice_acme.retain(acme_support, "At Acme, Alice leads the billing team.").status_code == 200
    assert alice_acme.retain(acme_sales, "Alice's Acme sales quota is 40 deals.").status_code == 200
    assert alice_globex.retain(globex_support, "At Globex, Alice is a contractor.").status_code == 200
    assert tenant_iso.agent_key is not None
    return World(
        alice_acme=alice_acme,
        alice_globex=alice_globex,
        agent=tenant_iso.api(tenant_iso.agent_key),
        operator=tenant_iso.api(tenant_iso.operator_key),
        user=user,
        acme_support=acme_support,
        acme_sales=acme_sales,
        globex_support=globex_support,
    )


def test_same_user_name_in_another_tenant_is_another_identity(world: World) -> None:
    assert world.alice_acme.recall(world.globex_support, "job").status_code == 403
    assert world.alice_globex.recall(world.acme_support, "job").status_code == 403
    assert world.alice_globex.retain(world.acme_support, "Alice quit.").json() == FORBIDDEN
    assert world.alice_acme.listed(world.acme_support) == ["At Acme, Alice leads the billing team."]
    assert sorted(world.alice_acme.bank_ids()) == sorted([world.acme_support, world.acme_sales])
    assert world.alice_globex.bank_ids() == [world.globex_support]


def test_token_without_the_tenant_claim_is_refused(tenant_iso: Server, world: World) -> None:
    response = tenant_iso.api(tenant_iso.mint(world.user)).recall(world.acme_support, "job")
    assert response.status_code == 401
    assert response.json() == UNAUTHORIZED


def test_agent_key_reaches_its_deployments_banks_for_any_user(world: World) -> None:
    other_user_bank = format_bank_id(user=f"bob-{uuid.uuid4().hex[:6]}", agent="support", tenant="acme")
    assert world.agent.retain(other_user_bank, "Bob prefers chat support.").status_code == 200
    assert world.agent.listed(world.acme_support) == ["At Acme, Alice leads the billing team."]
    assert set(world.agent.bank_ids()) >= {world.acme_support, other_user_bank}


def test_agent_key_does_not_reach_other_agents_or_tenants(world: World) -> None:
    for bank in (world.acme_sales, world.globex_support, format_bank_id(user=world.user, agent="support")):
        response = world.agent.recall(bank, "anything")
        assert response.status_code == 403, bank
        assert world.agent.retain(bank, "poison").status_code == 403
    listed = world.agent.bank_ids()
    assert world.acme_sales not in listed
    assert world.globex_support not in listed


def test_agent_key_is_not_an_operator_key(world: World) -> None:
    base = f"/v1/default/banks/{world.acme_support}"
    assert world.agent.call("GET", f"{base}/aliases").status_code == 403
    governance = {"updates": {"audit_log_enabled": False}}
    assert world.agent.call("PATCH", f"{base}/config", json=governance).status_code == 403
    # what its banks keep is the agent's to say (missions, on its own banks only)
    assert world.agent.call("PATCH", f"{base}/config", json={"updates": {"retain_mission": "x"}}).status_code == 200
    sales = f"/v1/default/banks/{world.acme_sales}/config"
    assert world.agent.call("PATCH", sales, json={"updates": {"retain_mission": "x"}}).status_code == 403
    assert world.agent.retain("default", "x").status_code == 403


def test_agent_key_over_mcp(tenant_iso: Server, world: World) -> None:
    assert tenant_iso.agent_key is not None
    own = Mcp(tenant_iso.url, tenant_iso.agent_key, bank=world.acme_support)
    own.initialize()
    assert "billing" in own.call("recall", query="What does Alice do at Acme?")
    foreign = Mcp(tenant_iso.url, tenant_iso.agent_key, bank=world.globex_support)
    foreign.initialize()
    assert foreign.tools() == set()


def test_operator_reaches_every_tenant(world: World) -> None:
    assert world.operator.listed(world.globex_support) == ["At Globex, Alice is a contractor."]
    assert {world.acme_support, world.acme_sales, world.globex_support} <= set(world.operator.bank_ids())
