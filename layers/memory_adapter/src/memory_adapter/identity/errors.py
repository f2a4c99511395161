"""One exception tree for identity: what a token, an identity setting or a bank id can get wrong.

::

    HindsightAgentCoreError              (memory_adapter.exceptions: everything the package raises)
    └── IdentityError
        ├── TokenRejectedError           the token does not verify; .reason: RejectReason (log it, never send it)
        ├── IdentityConfigError          JWT settings are unusable; .problems lists every one (a ConfigurationError)
        └── BankResolutionError          the identity cannot name a memory bank: fail closed (prior-art name)

Standard library only, like the rest of :mod:`memory_adapter.identity` at import time.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from memory_adapter.exceptions import ConfigurationError, HindsightAgentCoreError

__all__ = [
    "BankResolutionError",
    "IdentityConfigError",
    "IdentityError",
    "RejectReason",
    "TokenRejectedError",
]


class IdentityError(HindsightAgentCoreError):
    """Base class of every identity failure."""


class RejectReason(StrEnum):
    """Why a token was refused. Log it; never send it to the caller (it would help an attacker)."""

    MISSING = "missing"  # no bearer token at all
    OVERSIZED = "oversized"  # longer than max_token_bytes: refused before parsing
    MALFORMED = "malformed"  # not a compact JWS, bad base64/JSON, missing kid, non-numeric time claims
    ALGORITHM = "algorithm"  # alg not in the asymmetric allowlist (none, HS256, ...) or not the key's algorithm
    UNKNOWN_KEY = "unknown_key"  # kid not in the issuer's JWKS (after at most one refetch per interval)
    SIGNATURE = "signature"  # signature does not verify
    ISSUER = "issuer"  # iss missing or not the issuer
    EXPIRED = "expired"  # exp missing or in the past (beyond the leeway, and the grace window when one is given)
    NOT_YET_VALID = "not_yet_valid"  # nbf or iat in the future
    AUDIENCE = "audience"  # aud not allowed
    CLIENT = "client"  # client_id (access) / aud (id token) not allowed
    TOKEN_USE = "token_use"  # noqa: S105 - not a secret; token_use not access/id, or not the configured one
    USER_CLAIM = "user_claim"  # user claim missing, blank, not a string or too long
    TENANT_CLAIM = "tenant_claim"  # tenant claim configured but missing, blank, not a string or too long
    MACHINE = "machine"  # a machine-to-machine (client credentials) token: it names a client, not a user
    KEYS_UNAVAILABLE = "keys_unavailable"  # discovery document or JWKS could not be fetched: fail closed


class TokenRejectedError(IdentityError):
    """The token does not verify. ``reason`` says why, for logs and metrics only."""

    def __init__(self, reason: RejectReason, detail: str = "") -> None:
        super().__init__(f"{reason.value}: {detail}" if detail else reason.value)
        self.reason = reason
        self.detail = detail


class IdentityConfigError(IdentityError, ConfigurationError):
    """JWT settings that cannot verify anything safely; ``problems`` lists every reason at once."""

    def __init__(self, problems: str | Sequence[str]) -> None:
        ConfigurationError.__init__(self, problems, subject="JWT")


class BankResolutionError(IdentityError):
    """The turn's identity cannot be turned into a bank id (missing, blank or invalid part): fail closed."""
