"""The principal's trip through ``RequestContext.tenant_id``."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hindsight_isolation.principal import Kind, Principal

_text = st.one_of(st.none(), st.text(min_size=1, max_size=30))


@given(tenant=_text, user=st.text(min_size=1, max_size=30))
def test_user_principal_round_trips(tenant: str | None, user: str) -> None:
    principal = Principal(Kind.USER, tenant=tenant, user=user)
    assert Principal.decode(principal.encode()) == principal


@pytest.mark.parametrize(
    "principal",
    [
        Principal(Kind.OPERATOR),
        Principal(Kind.USER_GRACE, tenant="t", user="u"),
        Principal(Kind.AGENT, tenant="t", agent="a"),
        Principal(Kind.AGENT, agent="a", any_tenant=True),
    ],
)
def test_every_kind_round_trips(principal: Principal) -> None:
    assert Principal.decode(principal.encode()) == principal


@pytest.mark.parametrize(
    "value",
    [
        None,
        "",
        "acme",
        "hsi1:",
        "hsi1:[]",
        'hsi1:["root",null,null,null,false]',
        'hsi1:["user",null,null,null,false]',
        'hsi1:["user",null,7,null,false]',
        'hsi1:["agent",null,null,"a","yes"]',
        "hsi1:{",
    ],
)
def test_foreign_or_broken_values_decode_to_none(value: str | None) -> None:
    assert Principal.decode(value) is None


def test_principal_invariants() -> None:
    with pytest.raises(ValueError, match="user"):
        Principal(Kind.USER)
    with pytest.raises(ValueError, match="agent"):
        Principal(Kind.AGENT)
    with pytest.raises(ValueError, match="any tenant"):
        Principal(Kind.USER, user="u", any_tenant=True)


def test_describe_names_identities_only() -> None:
    assert Principal(Kind.USER, tenant="acme", user="alice").describe() == "user tenant='acme' user='alice'"
