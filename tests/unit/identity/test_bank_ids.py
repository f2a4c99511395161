"""Bank ids: injective, reversible, readable for safe ids, never containing '/', ':' inside a part or controls."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_adapter import TurnContext
from memory_adapter.context import default_bank_resolver
from memory_adapter.identity.bank_ids import (
    MAX_PART_BYTES,
    BankOwner,
    decode_part,
    encode_part,
    format_bank_id,
    parse_bank_id,
)
from memory_adapter.identity.errors import BankResolutionError

# Any text a caller might put in an identity part: unicode, '/', ':', '~', control characters, white space.
_tricky = st.sampled_from(["/", ":", "~", "\x00", "\n", "\t", " ", "%2F", "agent", "user", "tenant", "é", "😀"])
_part = st.one_of(
    st.text(min_size=1, max_size=40),
    st.lists(st.one_of(_tricky, st.text(max_size=3)), min_size=1, max_size=8).map("".join),
).filter(lambda s: bool(s.strip()) and len(s.encode("utf-8", "surrogatepass")) <= MAX_PART_BYTES)
_usable = _part.filter(lambda s: not any(0xD800 <= ord(c) <= 0xDFFF for c in s))
_owner = st.tuples(st.one_of(st.none(), _usable), _usable, _usable)


@settings(max_examples=400, deadline=None)
@given(a=_owner, b=_owner)
def test_distinct_identities_never_share_a_bank(a, b):
    # GIVEN two (tenant, user, agent) identities
    bank_a = format_bank_id(tenant=a[0], user=a[1], agent=a[2])
    bank_b = format_bank_id(tenant=b[0], user=b[1], agent=b[2])
    # THEN they share a bank exactly when they are the same identity
    assert (bank_a == bank_b) == (a == b)


@settings(max_examples=400, deadline=None)
@given(owner=_owner)
def test_bank_ids_round_trip_and_are_url_safe(owner):
    tenant, user, agent = owner
    bank_id = format_bank_id(tenant=tenant, user=user, agent=agent)
    assert parse_bank_id(bank_id) == BankOwner(tenant=tenant, user=user, agent=agent)
    assert "/" not in bank_id
    assert all(ch.isprintable() and not ch.isspace() for ch in bank_id)
    assert bank_id.count(":") == (5 if tenant else 3)


@settings(max_examples=200, deadline=None)
@given(part=_usable)
def test_encode_part_is_reversible(part):
    assert decode_part(encode_part(part, label="x")) == part


def test_safe_ids_keep_the_readable_prior_art_form():
    assert format_bank_id(user="alice", agent="support") == "user:alice:agent:support"
    assert format_bank_id(user="alice", agent="support", tenant="acme") == "tenant:acme:user:alice:agent:support"
    assert format_bank_id(user="a.b@c-d_e", agent="x") == "user:a.b@c-d_e:agent:x"


def test_the_prior_art_collision_is_gone():
    # the prior art mapped both of these to "user:a:agent:b:agent:x"
    first = format_bank_id(user="a:agent:b", agent="x")
    second = format_bank_id(user="a", agent="b:agent:x")
    assert first != second


@pytest.mark.parametrize("bad", ["", " ", "\t\n"])
def test_blank_parts_fail_closed(bad):
    with pytest.raises(BankResolutionError):
        format_bank_id(user=bad, agent="x")
    with pytest.raises(BankResolutionError):
        format_bank_id(user="u", agent=bad)


def test_blank_tenant_fails_closed_but_empty_tenant_means_none():
    assert format_bank_id(user="u", agent="a", tenant="") == "user:u:agent:a"
    with pytest.raises(BankResolutionError):
        format_bank_id(user="u", agent="a", tenant="  ")


def test_over_long_parts_are_refused_not_truncated():
    with pytest.raises(BankResolutionError, match="longer than"):
        format_bank_id(user="x" * (MAX_PART_BYTES + 1), agent="a")
    assert parse_bank_id(format_bank_id(user="x" * MAX_PART_BYTES, agent="a")) == BankOwner(None, "x" * 256, "a")


@pytest.mark.parametrize(
    "bank_id", ["user:a", "user:a:agent:", "tenant::user:a:agent:b", "user:~!!:agent:b", "user:~YQ:agent:b", "x:a:y:b"]
)
def test_foreign_or_non_canonical_ids_do_not_parse(bank_id):
    # "~YQ" is the encoding of "a", which has a canonical plain form: refused so one identity has one bank
    assert parse_bank_id(bank_id) is None


def test_default_bank_resolver_uses_the_scheme_and_ignores_the_session():
    ctx = TurnContext(runtime_session_id="s/1:x", user_id="u/1", agent_name="bot", tenant_id="t")
    bank_id = default_bank_resolver(ctx)
    assert parse_bank_id(bank_id) == BankOwner("t", "u/1", "bot")
    assert "s/1" not in bank_id


@pytest.mark.parametrize(("user", "agent"), [("", "bot"), ("  ", "bot"), ("u", ""), ("u", " ")])
def test_default_bank_resolver_fails_closed(user, agent):
    with pytest.raises(BankResolutionError):
        default_bank_resolver(TurnContext(runtime_session_id="s", user_id=user, agent_name=agent))
