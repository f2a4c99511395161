"""The verifier of a runtime whose signing keys are mirrored into SSM Parameter Store (``JWT_JWKS_PARAMETER``).

The stack's ``-Identity`` mirror function (outside the VPC) copies the issuer's public JWKS into an SSM parameter and
refreshes it on a schedule; a runtime in a VPC that cannot reach the issuer reads the keys from there (through the
SSM VPC endpoint). Key source and caching are the identity contract's
(:class:`memory_adapter.identity.keys.SsmParameterJwks` behind :class:`~memory_adapter.identity.keys.SigningKeys`):
this class only names that configuration, so a deployment check can tell the agent never fetches from the issuer.
"""

from __future__ import annotations

from memory_adapter.identity.errors import IdentityConfigError
from memory_adapter.identity.keys import SigningKeys
from memory_adapter.identity.settings import JwtSettings
from memory_adapter.identity.verifier import JwtVerifier

__all__ = ["MirroredKeysVerifier"]


class MirroredKeysVerifier(JwtVerifier):
    """A :class:`JwtVerifier` whose keys come from the SSM parameter ``settings.jwks_parameter``."""

    def __init__(self, settings: JwtSettings, *, keys: SigningKeys | None = None) -> None:
        if settings.jwks_parameter is None:
            raise IdentityConfigError("MirroredKeysVerifier reads the keys from jwks_parameter, which is not set")
        super().__init__(settings, keys=keys)
