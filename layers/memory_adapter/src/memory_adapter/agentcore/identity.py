"""Who is calling: the verified :class:`~memory_adapter.identity.Caller` of a request (bank id included), or nothing.

Shared by the reference agent (``runtime_handler``) and any agent you bring
(:class:`~memory_adapter.agentcore.AgentCoreMemory`), so both accept exactly the same callers. Trust model (see
docs/agent.md):

* ``AUTH_MODE=jwt``: the bearer token in ``Authorization`` (allowlisted on the runtime) is verified again here, with
  the identity contract's :class:`~memory_adapter.identity.JwtVerifier`, even though AgentCore's JWT authorizer
  checked it. User and tenant come only from its claims; a ``X-Amzn-Bedrock-AgentCore-Runtime-User-Id`` header is
  ignored. The token itself is the credential the turn presents to Hindsight, whose isolation extension verifies it
  with the same code.
* ``AUTH_MODE=iam``: the user is the ``X-Amzn-Bedrock-AgentCore-Runtime-User-Id`` header, read from the raw request
  (the SDK filters it out of ``request_headers``) as UTF-8, so it names the bank the same id in a token names; a value
  that is not UTF-8 is refused (:meth:`~memory_adapter.agentcore.request.Headers.of_raw`). AWS does not verify that
  value: it is exactly as trustworthy as the principals allowed ``bedrock-agentcore:InvokeAgentRuntimeForUser``. The
  tenant is ``TENANT_ID`` or an allowlisted custom header; the credential (the deployment's agent key,
  :mod:`~memory_adapter.agentcore.credentials`) is added by the agent.

The caller's bank id is computed here, once: an identity that cannot name a bank is refused before any turn runs.
Anything missing, ambiguous or invalid raises :class:`~memory_adapter.agentcore.errors.AuthError`, unless
``ALLOW_ANONYMOUS=true`` and no credential at all was presented: then there is no caller and the turn gets no memory.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from memory_adapter.agentcore.errors import AuthError
from memory_adapter.agentcore.request import DuplicateHeaderError, Headers, UndecodableHeaderError
from memory_adapter.agentcore.settings import AgentMemorySettings, IdentitySource
from memory_adapter.identity.caller import Caller
from memory_adapter.identity.errors import BankResolutionError, RejectReason, TokenRejectedError
from memory_adapter.identity.verifier import VerifiedIdentity, bearer_token

__all__ = ["USER_ID_HEADER", "RequestAuthenticator", "TokenVerifier", "default_verifier"]

USER_ID_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-User-Id"
_AUTHORIZATION = "authorization"


class TokenVerifier(Protocol):
    """What authentication needs from :class:`memory_adapter.identity.JwtVerifier` (a seam for tests)."""

    def verify(self, token: str) -> VerifiedIdentity: ...


class RequestAuthenticator:
    """Turns the raw request headers into a :class:`Caller`. Thread-safe; verification may fetch keys (blocking)."""

    def __init__(self, settings: AgentMemorySettings, verifier: TokenVerifier | None = None) -> None:
        if settings.auth_mode is IdentitySource.JWT and verifier is None:
            raise ValueError("AUTH_MODE=jwt needs a token verifier")
        self._settings = settings
        self._verifier = verifier

    def authenticate(self, headers: Headers | Iterable[tuple[str, str]]) -> Caller | None:
        """The caller behind ``headers`` (every raw header, repeated ones included, or :class:`Headers` parsed
        already), ``None`` when anonymous and allowed; raise :class:`AuthError` otherwise (a repeated identity header
        included: the one rule of :mod:`~memory_adapter.agentcore.request`)."""
        parsed = Headers.of(headers)
        if self._settings.auth_mode is IdentitySource.JWT:
            return self._from_token(parsed)
        return self._from_iam(parsed)

    def _from_token(self, headers: Headers) -> Caller | None:
        authorization = _single(headers, _AUTHORIZATION)
        if authorization is None and self._settings.allow_anonymous:
            return None
        assert self._verifier is not None
        try:
            token = bearer_token(authorization)
            verified = self._verifier.verify(token)
        except TokenRejectedError as exc:
            raise AuthError(exc.reason.value, exc.detail) from exc
        return self._caller(verified.user, verified.tenant, credential=token)

    def _from_iam(self, headers: Headers) -> Caller | None:
        user = _single(headers, USER_ID_HEADER.lower())
        if user is None or not user.strip():
            if self._settings.allow_anonymous:
                return None
            raise AuthError(RejectReason.MISSING.value, f"no {USER_ID_HEADER} header on an IAM runtime")
        tenant = self._settings.tenant_id
        if self._settings.tenant_header is not None:
            tenant = _single(headers, self._settings.tenant_header.lower())
            if tenant is None or not tenant.strip():
                raise AuthError("tenant_header", "the configured tenant header is missing or blank")
        return self._caller(user, tenant, credential=None)

    def _caller(self, user: str, tenant: str | None, *, credential: str | None) -> Caller:
        """The caller and its bank; identities that cannot name a bank are refused before any turn runs."""
        try:
            return Caller.of(user=user, agent=self._settings.agent_name, tenant=tenant, credential=credential)
        except BankResolutionError as exc:
            raise AuthError("unusable_identity", str(exc)) from exc


def _single(headers: Headers, name: str) -> str | None:
    try:
        return headers.single(name)
    except DuplicateHeaderError as exc:
        raise AuthError("duplicate_header", str(exc)) from None
    except UndecodableHeaderError as exc:
        raise AuthError("header_encoding", str(exc)) from None


def default_verifier(settings: AgentMemorySettings) -> TokenVerifier | None:
    """The verifier ``settings`` describe: keys from the SSM mirror (``JWT_JWKS_PARAMETER``, what the deployed stack
    sets) or from the issuer; ``None`` in IAM mode."""
    if settings.jwt is None:
        return None
    if settings.jwt.jwks_parameter is not None:
        from memory_adapter.agentcore.keys import MirroredKeysVerifier

        return MirroredKeysVerifier(settings.jwt)
    from memory_adapter.identity.verifier import JwtVerifier

    return JwtVerifier(settings.jwt)
