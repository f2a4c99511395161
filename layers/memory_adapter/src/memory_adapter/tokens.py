"""Compatibility path: token verification lives in :mod:`memory_adapter.identity` (the identity contract).

``JwtVerifierConfig`` is the old name of :class:`~memory_adapter.identity.settings.JwtSettings` (same fields). Kept
for code written against the earlier path (the project itself no longer imports it). New code imports
``memory_adapter.identity``.
"""

from memory_adapter.identity.errors import RejectReason, TokenRejected
from memory_adapter.identity.settings import ASYMMETRIC_ALGORITHMS
from memory_adapter.identity.settings import JwtSettings as JwtVerifierConfig
from memory_adapter.identity.verifier import JwtVerifier, VerifiedIdentity, bearer_token

__all__ = [
    "ASYMMETRIC_ALGORITHMS",
    "JwtVerifier",
    "JwtVerifierConfig",
    "RejectReason",
    "TokenRejected",
    "VerifiedIdentity",
    "bearer_token",
]
