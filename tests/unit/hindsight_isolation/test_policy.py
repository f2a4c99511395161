"""The authorization rule, table by table (pure: no server)."""

from __future__ import annotations

import pytest

from hindsight_isolation.policy import Action, authorize
from hindsight_isolation.principal import Kind, Principal
from hindsight_isolation.route import RequestKind
from memory_adapter.identity.bank_ids import format_bank_id

ALICE = Principal(Kind.USER, user="alice")
ALICE_ACME = Principal(Kind.USER, tenant="acme", user="alice")
ALICE_GRACE = Principal(Kind.USER_GRACE, user="alice")
OPERATOR = Principal(Kind.OPERATOR)
SUPPORT_AGENT = Principal(Kind.AGENT, tenant="acme", agent="support")
SUPPORT_ANY_TENANT = Principal(Kind.AGENT, agent="support", any_tenant=True)

ALICE_BANK = format_bank_id(user="alice", agent="support")
ALICE_OTHER_AGENT = format_bank_id(user="alice", agent="sales")
BOB_BANK = format_bank_id(user="bob", agent="support")
ALICE_ACME_BANK = format_bank_id(user="alice", agent="support", tenant="acme")
BOB_ACME_BANK = format_bank_id(user="bob", agent="support", tenant="acme")
ALICE_GLOBEX_BANK = format_bank_id(user="alice", agent="support", tenant="globex")
ALICE_ACME_SALES = format_bank_id(user="alice", agent="sales", tenant="acme")


@pytest.mark.parametrize("action", [Action.READ, Action.WRITE, Action.RETAIN, Action.CREATE_BANK, Action.LIST])
def test_user_reaches_own_banks_for_every_agent(action: Action) -> None:
    assert authorize(ALICE, ALICE_BANK, action)
    assert authorize(ALICE, ALICE_OTHER_AGENT, action)


@pytest.mark.parametrize("bank", [BOB_BANK, ALICE_ACME_BANK, "default", "user:alice", "", "user:alice:agent:x:y"])
@pytest.mark.parametrize("action", list(Action))
def test_user_never_reaches_other_banks(bank: str, action: Action) -> None:
    decision = authorize(ALICE, bank, action)
    assert not decision
    assert decision.reason


def test_tenant_is_part_of_the_owner() -> None:
    assert authorize(ALICE_ACME, ALICE_ACME_BANK, Action.READ)
    assert not authorize(ALICE_ACME, ALICE_GLOBEX_BANK, Action.READ)
    assert not authorize(ALICE_ACME, ALICE_BANK, Action.READ)
    assert not authorize(ALICE_ACME, BOB_ACME_BANK, Action.READ)


@pytest.mark.parametrize("action", [Action.RETAIN, Action.CREATE_BANK, Action.CONSOLIDATE])
def test_grace_token_may_retain_into_own_banks(action: Action) -> None:
    for request in (RequestKind.RETAIN, RequestKind.MCP):
        assert authorize(ALICE_GRACE, ALICE_BANK, action, request=request)
        assert not authorize(ALICE_GRACE, BOB_BANK, action, request=request)


@pytest.mark.parametrize("request_kind", [RequestKind.OTHER, RequestKind.TRANSFER, None])
@pytest.mark.parametrize("action", [Action.RETAIN, Action.CREATE_BANK, Action.CONSOLIDATE, Action.WHOLE_BANK])
def test_grace_token_acts_only_inside_a_retain_request(action: Action, request_kind: RequestKind | None) -> None:
    # A bank creation, a consolidation or a restore sent on their own are not retaining a turn.
    decision = authorize(ALICE_GRACE, ALICE_BANK, action, request=request_kind)
    assert not decision
    assert "grace" in decision.reason or request_kind is not RequestKind.OTHER


@pytest.mark.parametrize("principal", [ALICE, ALICE_GRACE, SUPPORT_AGENT, SUPPORT_ANY_TENANT])
@pytest.mark.parametrize("action", list(Action))
def test_transfer_requests_are_the_operators_whatever_hook_they_reach(principal: Principal, action: Action) -> None:
    # A restore, clone or document import reaches hooks that look like a plain bank creation or read of one's own
    # bank; the archive's rows are then written with whatever bank they name. Only the operator may send one.
    own_bank = ALICE_ACME_BANK if principal.kind is Kind.AGENT else ALICE_BANK
    decision = authorize(principal, own_bank, action, request=RequestKind.TRANSFER)
    assert not decision
    assert authorize(OPERATOR, own_bank, Action.CREATE_BANK, request=RequestKind.TRANSFER)


@pytest.mark.parametrize("principal", [ALICE, ALICE_GRACE, SUPPORT_AGENT, OPERATOR])
def test_a_request_the_guard_did_not_label_is_refused(principal: Principal) -> None:
    decision = authorize(principal, ALICE_ACME_BANK, Action.READ, request=None)
    assert not decision
    assert "guard" in decision.reason


def test_background_work_needs_no_request_label() -> None:
    # The worker runs queued work outside any HTTP request; it was authorized (labelled) when it was queued.
    assert authorize(ALICE_GRACE, ALICE_BANK, Action.CONSOLIDATE, internal=True, request=None)
    assert authorize(SUPPORT_AGENT, ALICE_ACME_BANK, Action.WRITE, internal=True, request=None)
    assert not authorize(ALICE, BOB_BANK, Action.READ, internal=True, request=None)


@pytest.mark.parametrize("action", [Action.READ, Action.WRITE, Action.LIST, Action.OPERATOR_ONLY, Action.NEVER])
def test_grace_token_may_do_nothing_else(action: Action) -> None:
    assert not authorize(ALICE_GRACE, ALICE_BANK, action)


def test_agent_credential_reaches_its_tenant_and_agent_only() -> None:
    assert authorize(SUPPORT_AGENT, ALICE_ACME_BANK, Action.READ)
    assert authorize(SUPPORT_AGENT, BOB_ACME_BANK, Action.WRITE)
    assert not authorize(SUPPORT_AGENT, ALICE_ACME_SALES, Action.READ)
    assert not authorize(SUPPORT_AGENT, ALICE_GLOBEX_BANK, Action.READ)
    assert not authorize(SUPPORT_AGENT, ALICE_BANK, Action.READ)
    assert not authorize(SUPPORT_AGENT, ALICE_ACME_BANK, Action.OPERATOR_ONLY)


def test_agent_credential_for_any_tenant_still_bound_to_its_agent() -> None:
    assert authorize(SUPPORT_ANY_TENANT, ALICE_ACME_BANK, Action.READ)
    assert authorize(SUPPORT_ANY_TENANT, ALICE_GLOBEX_BANK, Action.READ)
    assert authorize(SUPPORT_ANY_TENANT, ALICE_BANK, Action.READ)
    assert not authorize(SUPPORT_ANY_TENANT, ALICE_ACME_SALES, Action.READ)


@pytest.mark.parametrize("bank", [ALICE_BANK, BOB_ACME_BANK, "default", "anything at all"])
@pytest.mark.parametrize("action", [a for a in Action if a is not Action.NEVER])
def test_operator_reaches_everything_but_alias_creation(bank: str, action: Action) -> None:
    assert authorize(OPERATOR, bank, action)
    assert not authorize(OPERATOR, bank, Action.NEVER)


@pytest.mark.parametrize("principal", [ALICE, SUPPORT_AGENT])
def test_operator_only_actions_refused_to_everyone_else(principal: Principal) -> None:
    assert not authorize(principal, ALICE_ACME_BANK if principal is SUPPORT_AGENT else ALICE_BANK, Action.OPERATOR_ONLY)


def test_request_without_principal_is_refused() -> None:
    assert not authorize(None, ALICE_BANK, Action.READ)


def test_internal_work_without_principal_is_housekeeping() -> None:
    assert authorize(None, ALICE_BANK, Action.WRITE, internal=True)


def test_internal_work_keeps_ownership_but_not_grace_limits() -> None:
    # GIVEN an async retain queued inside the grace window
    # WHEN the worker runs it and the follow-up work it triggers
    # THEN ownership still binds, the grace restriction no longer does (it was checked at submission)
    assert authorize(ALICE_GRACE, ALICE_BANK, Action.WRITE, internal=True)
    assert authorize(ALICE_GRACE, ALICE_BANK, Action.OPERATOR_ONLY, internal=True)
    assert not authorize(ALICE_GRACE, BOB_BANK, Action.RETAIN, internal=True)
    assert not authorize(ALICE, "default", Action.READ, internal=True)
