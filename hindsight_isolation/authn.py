"""Authentication: turn the bearer credential of a request into a :class:`Principal`, or refuse it.

Three kinds of credential, tried in this order:

1. the operator key (exact match, constant time);
2. the per-deployment agent key (exact match, constant time), limited to one (tenant, agent);
3. a user JWT, verified by :class:`memory_adapter.identity.JwtVerifier` (the identity contract's verifier, the
   very one the agent uses), with the configured expiry grace: a token that verifies but expired within the grace
   window becomes a :attr:`Kind.USER_GRACE` principal, which the policy lets retain into its own banks and nothing
   else.

Verified tokens are cached briefly (never past their ``exp``), so a request that Hindsight authenticates several
times (MCP does) or a busy agent pays for one signature check, and key fetches never run on the event loop.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

from hindsight_isolation.principal import Kind, Principal
from hindsight_isolation.settings import ANY_TENANT, IsolationSettings
from memory_adapter.identity.errors import RejectReason, TokenRejectedError
from memory_adapter.identity.verifier import JwtVerifier, VerifiedIdentity

__all__ = ["Authenticator", "UnauthenticatedError"]


class UnauthenticatedError(Exception):
    """The credential does not authenticate. ``reason`` is for the log only."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("utf-8")).digest()


class Authenticator:
    """Maps credentials to principals. Thread-safe; one per process.

    Args:
        settings: Parsed extension settings.
        verifier: A ready verifier (tests); built from ``settings.jwt`` when omitted.
        clock: Unix-time source of the token cache (tests); token expiry itself is checked by the verifier.
    """

    def __init__(
        self,
        settings: IsolationSettings,
        *,
        verifier: JwtVerifier | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._settings = settings
        if verifier is None and settings.jwt is not None:
            verifier = JwtVerifier(settings.jwt)
        self._verifier = verifier
        self._clock = clock
        self._operator = _digest(settings.operator_key) if settings.operator_key else None
        self._agent = _digest(settings.agent_key) if settings.agent_key else None
        self._agent_principal = (
            Principal(
                Kind.AGENT,
                tenant=None if settings.agent_tenant == ANY_TENANT else settings.agent_tenant,
                agent=settings.agent_name,
                any_tenant=settings.agent_tenant == ANY_TENANT,
            )
            if settings.agent_key and settings.agent_name
            else None
        )
        self._cache: OrderedDict[str, tuple[float, Principal]] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def verifier(self) -> JwtVerifier | None:
        """The JWT verifier (exposed so start-up can prefetch the issuer's keys); None without an issuer."""
        return self._verifier

    def cached(self, credential: str | None) -> Principal | None:
        """The principal for ``credential`` if it is known without any crypto or I/O (keys, cached tokens)."""
        if not credential:
            return None
        digest = _digest(credential)
        if self._operator is not None and hmac.compare_digest(digest, self._operator):
            return Principal(Kind.OPERATOR)
        if self._agent is not None and hmac.compare_digest(digest, self._agent):
            return self._agent_principal
        now = self._clock()
        with self._lock:
            entry = self._cache.get(credential)
            if entry is None:
                return None
            if now >= entry[0]:
                del self._cache[credential]
                return None
            self._cache.move_to_end(credential)
            return entry[1]

    def authenticate(self, credential: str | None) -> Principal:
        """The principal for ``credential``; raise :class:`UnauthenticatedError`. May block briefly to fetch keys."""
        if not credential:
            raise UnauthenticatedError(RejectReason.MISSING.value)
        known = self.cached(credential)
        if known is not None:
            return known
        if self._verifier is None:
            raise UnauthenticatedError("not a known key, and no token issuer is configured")
        now = self._clock()
        try:
            identity = self._verifier.verify(credential, expiry_grace=self._settings.expiry_grace_s)
        except TokenRejectedError as exc:
            raise UnauthenticatedError(f"token {exc.reason.value}") from exc
        principal = Principal(
            Kind.USER_GRACE if identity.within_grace else Kind.USER, tenant=identity.tenant, user=identity.user
        )
        if not identity.within_grace:
            self._remember(credential, identity, principal, now)
        return principal

    def _remember(self, credential: str, identity: VerifiedIdentity, principal: Principal, now: float) -> None:
        # Never cache past exp (the leeway is the verifier's business: a re-check there gives the right answer).
        until = min(identity.expires_at, now + self._settings.token_cache_ttl_s)
        if until <= now or self._settings.token_cache_size <= 0:
            return
        with self._lock:
            self._cache[credential] = (until, principal)
            self._cache.move_to_end(credential)
            while len(self._cache) > self._settings.token_cache_size:
                self._cache.popitem(last=False)
