"""The property the whole design rests on: the adapter names banks with its resolver (``default_bank_resolver``, built
on ``format_bank_id``), the server extension authorizes with ``parse_bank_id``, and for arbitrary identities the
server check accepts exactly the owner's banks."""

from __future__ import annotations

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from hindsight_isolation.policy import Action, authorize
from hindsight_isolation.principal import Kind, Principal
from memory_adapter.context import TurnContext, default_bank_resolver
from memory_adapter.identity.bank_ids import format_bank_id, parse_bank_id
from memory_adapter.identity.errors import BankResolutionError

# Any text the identity provider could put in a claim: separators, '~', '/', unicode, look-alikes of our own syntax.
_part = st.one_of(
    st.text(min_size=1, max_size=40),
    st.sampled_from(["alice", "bob", "user", "agent", "tenant", "a:b", "~", "~YWxpY2U", "x/y", "é", "ALICE", " a"]),
)
_tenant = st.one_of(st.none(), _part)


def _bank(user: str, agent: str, tenant: str | None) -> str | None:
    """The bank the adapter would use for this turn identity (None: the adapter refuses it, so no bank exists)."""
    try:
        bank = default_bank_resolver(
            TurnContext(runtime_session_id="s", user_id=user, agent_name=agent, tenant_id=tenant)
        )
    except BankResolutionError:
        return None
    assert bank == format_bank_id(user=user, agent=agent, tenant=tenant)
    return bank


def _norm(tenant: str | None) -> str | None:
    return tenant or None


@settings(max_examples=400, deadline=None)
@given(user=_part, tenant=_tenant, agent=_part, other_user=_part, other_tenant=_tenant, other_agent=_part)
def test_user_check_accepts_exactly_the_owners_banks(
    user: str, tenant: str | None, agent: str, other_user: str, other_tenant: str | None, other_agent: str
) -> None:
    caller = Principal(Kind.USER, tenant=_norm(tenant), user=user)
    bank = _bank(other_user, other_agent, other_tenant)
    assume(bank is not None)
    assert bank is not None
    same_owner = (_norm(other_tenant), other_user) == (_norm(tenant), user)
    for action in (Action.READ, Action.WRITE, Action.RETAIN, Action.CREATE_BANK):
        assert authorize(caller, bank, action).allowed is same_owner
    own = _bank(user, agent, tenant)
    if own is not None:
        assert authorize(caller, own, Action.READ).allowed


@settings(max_examples=300, deadline=None)
@given(tenant=_tenant, agent=_part, user=_part, other_tenant=_tenant, other_agent=_part)
def test_agent_check_accepts_exactly_its_deployments_banks(
    tenant: str | None, agent: str, user: str, other_tenant: str | None, other_agent: str
) -> None:
    caller = Principal(Kind.AGENT, tenant=_norm(tenant), agent=agent)
    bank = _bank(user, other_agent, other_tenant)
    assume(bank is not None)
    assert bank is not None
    same_deployment = (_norm(other_tenant), other_agent) == (_norm(tenant), agent)
    assert authorize(caller, bank, Action.READ).allowed is same_deployment


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=80), user=_part, tenant=_tenant)
def test_arbitrary_bank_ids_are_refused_unless_they_name_the_caller(text: str, user: str, tenant: str | None) -> None:
    caller = Principal(Kind.USER, tenant=_norm(tenant), user=user)
    if authorize(caller, text, Action.READ).allowed:
        # Then ``text`` is the canonical bank id of one of the caller's own banks, nothing else.
        owner = parse_bank_id(text)
        assert owner is not None
        assert (owner.tenant, owner.user) == (_norm(tenant), user)
        assert format_bank_id(user=owner.user, agent=owner.agent, tenant=owner.tenant) == text
