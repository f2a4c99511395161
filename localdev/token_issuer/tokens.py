"""Tokens shaped like Amazon Cognito's: the claims the project's verifier checks, signed RS256."""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import jwt

from localdev.token_issuer.keys import SigningKey

__all__ = ["LOCAL_CLIENT_ID", "TENANT_CLAIM", "mint_token"]

LOCAL_CLIENT_ID = "local-agent-client"
TENANT_CLAIM = "custom:tenant"


def mint_token(
    key: SigningKey,
    *,
    issuer: str,
    user: str,
    tenant: str | None = None,
    ttl: float = 300,
    client_id: str = LOCAL_CLIENT_ID,
    audience: str | Sequence[str] | None = None,
    token_use: str = "access",  # noqa: S107 - a claim value, not a secret
    extra_claims: Mapping[str, Any] | None = None,
    kid: str | None = None,
) -> str:
    """A signed RS256 token shaped like a Cognito access (or ID) token.

    Args:
        key: The signing key.
        issuer: The ``iss`` claim.
        user: The ``sub`` (and ``username``) claim.
        tenant: Put in the ``custom:tenant`` claim when given.
        ttl: Seconds until ``exp``; negative mints an already-expired token.
        client_id: ``client_id`` claim of an access token; for an ID token (``token_use="id"``) it
            becomes ``aud`` unless ``audience`` is given.
        audience: ``aud`` claim.
        token_use: ``"access"`` (Cognito access token) or ``"id"``; any other string is minted as is.
        extra_claims: Added last, overriding anything above (``None`` values remove a claim).
        kid: Header ``kid`` to claim (default: the key's); an unknown one exercises key lookup.
    """
    now = int(time.time())
    claims: dict[str, Any] = {
        "iss": issuer,
        "sub": user,
        "username": user,
        "token_use": token_use,
        "iat": now,
        "auth_time": now,
        "exp": now + int(ttl),
        "jti": uuid.uuid4().hex,
    }
    if token_use == "id":  # noqa: S105 - a claim value, not a secret
        claims["aud"] = list(audience) if isinstance(audience, list | tuple) else (audience or client_id)
    else:
        claims["client_id"] = client_id
        claims["scope"] = "openid"
        if audience is not None:
            claims["aud"] = audience if isinstance(audience, str) else list(audience)
    if tenant is not None:
        claims[TENANT_CLAIM] = tenant
    for name, value in (extra_claims or {}).items():
        if value is None:
            claims.pop(name, None)
        else:
            claims[name] = value
    return jwt.encode(claims, key.private_key, algorithm="RS256", headers={"kid": kid or key.kid})
