"""Authentication without HTTP (``memory_adapter.agentcore.identity``): which header counts in which mode, the
caller's bank, and what must fail closed."""

from __future__ import annotations

import pytest

from memory_adapter.agentcore.errors import AuthError
from memory_adapter.agentcore.identity import USER_ID_HEADER, RequestAuthenticator
from memory_adapter.agentcore.settings import AgentMemorySettings
from memory_adapter.identity import RejectReason, TokenRejectedError, VerifiedIdentity, format_bank_id

BASE = {"AGENT_NAME": "support", "HINDSIGHT_API_URL": "http://h"}
JWT = BASE | {"AUTH_MODE": "jwt", "JWT_DISCOVERY_URL": "http://i/.well-known/openid-configuration"}
JWT |= {"JWT_ALLOWED_CLIENTS": "c"}


class StubVerifier:
    def __init__(self, user: str = "user-alex", tenant: str | None = None) -> None:
        self.user, self.tenant, self.tokens = user, tenant, list[str]()

    def verify(self, token: str) -> VerifiedIdentity:
        self.tokens.append(token)
        if token == "bad":
            raise TokenRejectedError(RejectReason.SIGNATURE)
        return VerifiedIdentity(user=self.user, tenant=self.tenant, claims={}, expires_at=0)


def test_jwt_caller_comes_from_the_token_only() -> None:
    verifier = StubVerifier()
    caller = RequestAuthenticator(AgentMemorySettings.from_env(JWT), verifier).authenticate(
        [("authorization", "Bearer good"), (USER_ID_HEADER, "user-bob")]
    )
    assert caller is not None
    assert (caller.user, caller.credential, caller.agent) == ("user-alex", "good", "support")
    assert caller.bank_id == format_bank_id(user="user-alex", agent="support")  # computed once, here
    assert "good" not in repr(caller)
    assert "user-alex" not in repr(caller)


@pytest.mark.parametrize(
    "headers",
    [
        [],
        [("Authorization", "Bearer bad")],
        [("Authorization", "Token good")],
        [("Authorization", "Bearer good"), ("authorization", "Bearer good")],
    ],
)
def test_jwt_failures(headers: list[tuple[str, str]]) -> None:
    with pytest.raises(AuthError):
        RequestAuthenticator(AgentMemorySettings.from_env(JWT), StubVerifier()).authenticate(headers)


def test_jwt_anonymous_only_without_any_credential() -> None:
    authenticator = RequestAuthenticator(
        AgentMemorySettings.from_env(JWT | {"ALLOW_ANONYMOUS": "true"}), StubVerifier()
    )
    assert authenticator.authenticate([]) is None
    with pytest.raises(AuthError):
        authenticator.authenticate([("Authorization", "Bearer bad")])


def test_unusable_identities_are_refused_before_any_turn() -> None:
    authenticator = RequestAuthenticator(AgentMemorySettings.from_env(JWT), StubVerifier(user="x" * 300))
    with pytest.raises(AuthError) as info:
        authenticator.authenticate([("Authorization", "Bearer ok")])
    assert info.value.reason == "unusable_identity"


def test_iam_user_header_and_tenant() -> None:
    authenticator = RequestAuthenticator(AgentMemorySettings.from_env(BASE | {"AUTH_MODE": "iam", "TENANT_ID": "acme"}))
    caller = authenticator.authenticate([(USER_ID_HEADER.lower(), "user-alex"), ("Authorization", "Bearer ignored")])
    assert caller is not None
    assert (caller.user, caller.tenant, caller.credential) == ("user-alex", "acme", None)
    assert caller.bank_id == format_bank_id(user="user-alex", agent="support", tenant="acme")
    for headers in ([], [(USER_ID_HEADER, "  ")], [(USER_ID_HEADER, "a"), (USER_ID_HEADER, "b")]):
        with pytest.raises(AuthError):
            authenticator.authenticate(headers)


def test_jwt_mode_needs_a_verifier() -> None:
    with pytest.raises(ValueError, match="verifier"):
        RequestAuthenticator(AgentMemorySettings.from_env(JWT))
