"""Who is calling: a verified identity, or nothing. Fails closed.

Trust model (see README "The agent"):

* ``AUTH_MODE=jwt``: the bearer token in ``Authorization`` (allowlisted on the runtime) is verified again here,
  with :mod:`memory_adapter.tokens`, even though AgentCore's JWT authorizer checked it. User and tenant come only from
  its claims; a ``X-Amzn-Bedrock-AgentCore-Runtime-User-Id`` header is ignored. The token itself is the credential
  the turn presents to Hindsight, whose isolation extension verifies it the same way.
* ``AUTH_MODE=iam``: the user is the ``X-Amzn-Bedrock-AgentCore-Runtime-User-Id`` header, read from the raw request
  (the SDK filters it out of ``request_headers``). AWS does not verify that value: it is exactly as trustworthy as
  the principals allowed ``bedrock-agentcore:InvokeAgentRuntimeForUser``. The tenant is ``TENANT_ID`` or an
  allowlisted custom header.

Anything missing, ambiguous or invalid raises :class:`~runtime_handler.errors.AuthError`, unless
``ALLOW_ANONYMOUS=true`` and no credential at all was presented: then the caller is anonymous and gets no memory.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, Protocol

from memory_adapter.bank_ids import format_bank_id
from memory_adapter.exceptions import BankResolutionError
from memory_adapter.tokens import RejectReason, TokenRejected, VerifiedIdentity, bearer_token
from runtime_handler.errors import AuthError
from runtime_handler.settings import AuthMode, Settings

__all__ = ["USER_ID_HEADER", "Caller", "Identity", "TokenVerifier"]

USER_ID_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-User-Id"
_AUTHORIZATION = "authorization"


class TokenVerifier(Protocol):
    """What identity needs from :class:`memory_adapter.tokens.JwtVerifier` (a seam for tests)."""

    def verify(self, token: str) -> VerifiedIdentity: ...


@dataclass(frozen=True, slots=True)
class Caller:
    """The verified caller of one turn. ``user`` is ``None`` only for anonymous callers (no memory)."""

    user: str | None
    tenant: str | None
    source: Literal["jwt", "iam", "anonymous"]
    credential: str | None = None  # the caller's bearer token, forwarded to Hindsight (jwt mode only)

    @property
    def anonymous(self) -> bool:
        return self.user is None

    def __repr__(self) -> str:  # never print the token or the raw user id
        return f"Caller(source={self.source!r}, anonymous={self.anonymous}, tenant={self.tenant is not None})"


ANONYMOUS = Caller(user=None, tenant=None, source="anonymous")


class Identity:
    """Turns the raw request headers into a :class:`Caller`. Thread-safe; verification may fetch keys (blocking)."""

    def __init__(self, settings: Settings, verifier: TokenVerifier | None = None) -> None:
        if settings.auth_mode is AuthMode.JWT and verifier is None:
            raise ValueError("AUTH_MODE=jwt needs a token verifier")
        self._settings = settings
        self._verifier = verifier

    def authenticate(self, headers: Iterable[tuple[str, str]]) -> Caller:
        """The caller behind ``headers`` (every raw header, repeated ones included); raise AuthError otherwise."""
        by_name: dict[str, list[str]] = {}
        for name, value in headers:
            by_name.setdefault(name.lower(), []).append(value)
        if self._settings.auth_mode is AuthMode.JWT:
            return self._from_token(by_name)
        return self._from_iam(by_name)

    def _from_token(self, headers: dict[str, list[str]]) -> Caller:
        authorization = _single(headers, _AUTHORIZATION)
        if authorization is None and self._settings.allow_anonymous:
            return ANONYMOUS
        assert self._verifier is not None
        try:
            verified = self._verifier.verify(bearer_token(authorization))
        except TokenRejected as exc:
            raise AuthError(exc.reason.value, exc.detail) from exc
        self._check_usable(verified.user, verified.tenant)
        return Caller(user=verified.user, tenant=verified.tenant, source="jwt", credential=bearer_token(authorization))

    def _from_iam(self, headers: dict[str, list[str]]) -> Caller:
        user = _single(headers, USER_ID_HEADER.lower())
        if user is None or not user.strip():
            if self._settings.allow_anonymous:
                return ANONYMOUS
            raise AuthError(RejectReason.MISSING.value, f"no {USER_ID_HEADER} header on an IAM runtime")
        tenant = self._settings.tenant_id
        if self._settings.tenant_header is not None:
            tenant = _single(headers, self._settings.tenant_header.lower())
            if tenant is None or not tenant.strip():
                raise AuthError("tenant_header", "the configured tenant header is missing or blank")
        self._check_usable(user, tenant)
        return Caller(user=user, tenant=tenant, source="iam")

    def _check_usable(self, user: str, tenant: str | None) -> None:
        """Refuse identities that cannot name a memory bank, before any turn runs under them."""
        try:
            format_bank_id(user=user, agent=self._settings.agent_name, tenant=tenant)
        except BankResolutionError as exc:
            raise AuthError("unusable_identity", str(exc)) from exc


def _single(headers: dict[str, list[str]], name: str) -> str | None:
    values = headers.get(name)
    if not values:
        return None
    if len(values) > 1:
        raise AuthError("duplicate_header", f"{name} sent {len(values)} times")
    return values[0]
