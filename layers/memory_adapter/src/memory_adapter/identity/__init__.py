"""The identity contract: who a caller is, which bank is theirs, and which tokens prove it. One definition for all.

The agent, the Hindsight isolation extension, the infrastructure's configuration check and any gateway in front of
the agent import this package, so they accept exactly the same tokens and name exactly the same banks.

==================  ========================================================================================
Module              Job
==================  ========================================================================================
``bank_ids``        (tenant, user, agent) <-> bank id: injective, reversible (standard library)
``caller``          :class:`Caller`: a verified identity, its bank id and its credential, built once per turn
``settings``        :class:`JwtSettings`: what a token must satisfy, read and validated the same way everywhere
``keys``            key sources (discovery, JWKS URL, static JWKS, SSM parameter) behind one cache
``verifier``        :class:`JwtVerifier`: PyJWT's checks plus client id, ``token_use`` and the grace window
``errors``          :class:`IdentityError` and its subclasses, :class:`RejectReason`
==================  ========================================================================================

Importing this package loads nothing; ``bank_ids``, ``caller``, ``settings`` and ``errors`` need only the standard
library, ``keys`` and ``verifier`` PyJWT (boto3 only once an SSM parameter is read).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memory_adapter._lazy import lazy_getattr

_EXPORTS: dict[str, str] = {
    "BankOwner": "memory_adapter.identity.bank_ids",
    "format_bank_id": "memory_adapter.identity.bank_ids",
    "parse_bank_id": "memory_adapter.identity.bank_ids",
    "Caller": "memory_adapter.identity.caller",
    "JwtSettings": "memory_adapter.identity.settings",
    "jwt_settings_problems": "memory_adapter.identity.settings",
    "SigningKeys": "memory_adapter.identity.keys",
    "JwtVerifier": "memory_adapter.identity.verifier",
    "VerifiedIdentity": "memory_adapter.identity.verifier",
    "bearer_token": "memory_adapter.identity.verifier",
    "IdentityError": "memory_adapter.identity.errors",
    "TokenRejectedError": "memory_adapter.identity.errors",
    "RejectReason": "memory_adapter.identity.errors",
    "IdentityConfigError": "memory_adapter.identity.errors",
    "BankResolutionError": "memory_adapter.identity.errors",
}

__all__ = [
    "BankOwner",
    "BankResolutionError",
    "Caller",
    "IdentityConfigError",
    "IdentityError",
    "JwtSettings",
    "JwtVerifier",
    "RejectReason",
    "SigningKeys",
    "TokenRejectedError",
    "VerifiedIdentity",
    "bearer_token",
    "format_bank_id",
    "jwt_settings_problems",
    "parse_bank_id",
]

if TYPE_CHECKING:
    from memory_adapter.identity.bank_ids import BankOwner, format_bank_id, parse_bank_id
    from memory_adapter.identity.caller import Caller
    from memory_adapter.identity.errors import (
        BankResolutionError,
        IdentityConfigError,
        IdentityError,
        RejectReason,
        TokenRejectedError,
    )
    from memory_adapter.identity.keys import SigningKeys
    from memory_adapter.identity.settings import JwtSettings, jwt_settings_problems
    from memory_adapter.identity.verifier import JwtVerifier, VerifiedIdentity, bearer_token

__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())


def __dir__() -> list[str]:
    return __all__
