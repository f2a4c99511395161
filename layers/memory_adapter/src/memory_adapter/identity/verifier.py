"""Bearer-token (JWT) verification, shared by the agent, the Hindsight isolation extension and any gateway in front.

Every side must accept exactly the same tokens, so every side uses this :class:`JwtVerifier`. PyJWT's
``jwt.decode`` does what it does: the signature, ``iss``, ``aud``, ``exp``/``nbf``/``iat`` with the leeway, and the
required claims. This module adds only what PyJWT does not do:

* the time claims ``exp``, ``nbf`` and ``iat`` are JSON numbers (RFC 7519's NumericDate, finite), checked by
  :func:`require_numeric_dates` after PyJWT's checks: PyJWT converts a string (``"1796157000"``) with ``int()`` and
  accepts it, and a boolean is an ``int`` to Python;
* before any parsing: a length limit and the compact-JWS shape; the header's ``alg`` in the asymmetric allowlist
  (so ``none`` and HMAC, and the "HS256 signed with the public key" confusion, can never verify) and equal to the
  algorithm of the key its ``kid`` names (keys come from :mod:`memory_adapter.identity.keys`);
* the client: ``client_id`` for access tokens (Cognito), ``aud`` for ID tokens (``token_use == "id"``);
* ``token_use``, when present, ``access`` or ``id``, and the configured one when configured;
* the user claim (``sub`` by default) and, when configured, the tenant claim: non-blank strings of bounded length;
* the expiry grace window: on request, a token that expired less than ``expiry_grace`` seconds ago verifies,
  flagged ``within_grace`` (the extension allows that for retains into the token's own banks only).

Anything else raises :class:`~memory_adapter.identity.errors.TokenRejectedError` with a
:class:`~memory_adapter.identity.errors.RejectReason`.

Example:
    >>> verifier = JwtVerifier(JwtSettings(discovery_url=url, allowed_clients=("my-app-client",)))
    >>> identity = verifier.verify(token)          # raises TokenRejectedError
    >>> identity.user, identity.tenant
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import jwt

from memory_adapter.identity.errors import IdentityConfigError, RejectReason, TokenRejectedError
from memory_adapter.identity.keys import KeySource, SigningKeys
from memory_adapter.identity.settings import JwtSettings

__all__ = ["JwtVerifier", "VerifiedIdentity", "bearer_token", "require_numeric_dates"]

_COMPACT_JWS = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+")
_MAX_IDENTITY_BYTES = 256
_MAX_KID_CHARS = 256
#: The registered claims whose value is a NumericDate (RFC 7519 section 4.1.4-4.1.6).
_TIME_CLAIMS = ("exp", "nbf", "iat")
#: What PyJWT's errors mean, most specific first (``InvalidSignatureError`` is a ``DecodeError``).
_REASONS: tuple[tuple[type[jwt.PyJWTError], RejectReason], ...] = (
    (jwt.InvalidSignatureError, RejectReason.SIGNATURE),
    (jwt.InvalidAlgorithmError, RejectReason.ALGORITHM),
    (jwt.ExpiredSignatureError, RejectReason.EXPIRED),
    (jwt.ImmatureSignatureError, RejectReason.NOT_YET_VALID),
    (jwt.InvalidIssuerError, RejectReason.ISSUER),
    (jwt.InvalidAudienceError, RejectReason.AUDIENCE),
)


@dataclass(frozen=True, slots=True)
class VerifiedIdentity:
    """Who a verified token speaks for.

    ``within_grace`` is true when the token had already expired but was accepted because the caller passed an
    ``expiry_grace`` (the server allows that for retains only).
    """

    user: str
    tenant: str | None
    claims: Mapping[str, Any]
    expires_at: float
    token_use: str | None = None
    client_id: str | None = None
    within_grace: bool = False

    @property
    def is_machine(self) -> bool:
        """Whether the token is a machine-to-machine (client credentials) token: it names a client, not a user.

        Cognito's client-credentials access tokens carry the client id as ``sub``; Okta's ``sub`` is the client id
        too; Entra ID marks app tokens ``idtyp: app``; Auth0 ``gty: client-credentials``. Whatever acts for a user
        (the memory tools, the gateway) refuses these: :meth:`JwtVerifier.verify` never returns one.
        """
        if self.claims.get("idtyp") == "app" or self.claims.get("gty") == "client-credentials":
            return True
        return self.client_id is not None and self.user == self.client_id


def bearer_token(authorization: str | None) -> str:
    """The token of an ``Authorization: Bearer <token>`` header value; raise :class:`TokenRejectedError` otherwise."""
    if authorization is None or not authorization.strip():
        raise TokenRejectedError(RejectReason.MISSING, "no Authorization header")
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise TokenRejectedError(RejectReason.MALFORMED, "Authorization is not a Bearer token")
    return token.strip()


class JwtVerifier:
    """Verifies bearer tokens against one issuer. Thread-safe; create one per process and reuse it.

    Nothing is fetched at construction: the key source is read on first use (and cached), so an unreachable
    identity provider makes verification fail closed (``KEYS_UNAVAILABLE``) instead of making start-up fail.

    Args:
        settings: What a token must satisfy and where the keys come from.
        keys: The key cache to use (tests, or a custom :class:`~memory_adapter.identity.keys.KeySource` through
            :meth:`SigningKeys.for_settings`); default: the source ``settings`` name.

    Raises:
        IdentityConfigError: ``settings`` are unusable (every problem listed).
    """

    def __init__(self, settings: JwtSettings, *, keys: SigningKeys | None = None) -> None:
        problems = settings.problems()
        if problems:
            raise IdentityConfigError(problems)
        self.settings = settings
        self.keys = keys if keys is not None else SigningKeys.for_settings(settings)
        self._algorithms = frozenset(settings.algorithms)
        self._required = [
            "exp",
            "iss",
            settings.user_claim,
            *([settings.tenant_claim] if settings.tenant_claim else []),
        ]

    @property
    def key_source(self) -> KeySource:
        """Where the keys come from."""
        return self.keys.source

    @property
    def issuer(self) -> str | None:
        """The expected ``iss`` (``None`` until the discovery document has been read)."""
        return self.settings.expected_issuer or self.keys.source.issuer

    def prefetch(self) -> None:
        """Fetch the keys now (e.g. at start-up to warm the cache); raise :class:`TokenRejectedError`."""
        self.keys.refresh()

    def verify(self, token: str, *, expiry_grace: float = 0.0) -> VerifiedIdentity:
        """Verify ``token`` and return its identity; raise :class:`TokenRejectedError` on any failure.

        Args:
            token: The compact JWT (without ``Bearer``).
            expiry_grace: Extra seconds after ``exp`` (and the leeway) during which the token is still accepted,
                flagged ``within_grace``. Only for re-delivering a spooled retain into the token's own banks.
        """
        kid, alg = self._check_shape(token)
        key = self.keys.get(kid)
        if key.algorithm_name != alg:
            raise TokenRejectedError(RejectReason.ALGORITHM, "alg does not match the key's algorithm")
        issuer = self.issuer
        if issuer is None:  # cannot happen once a key came from the source; never decode without an issuer
            raise TokenRejectedError(RejectReason.KEYS_UNAVAILABLE, "issuer not known yet")
        try:
            claims = self._decode(token, key, issuer, check_exp=True)
            within_grace = False
        except jwt.ExpiredSignatureError:
            if expiry_grace <= 0:
                raise TokenRejectedError(RejectReason.EXPIRED, "token expired") from None
            claims = self._decode(token, key, issuer, check_exp=False)
            if time.time() >= float(claims["exp"]) + self.settings.leeway_s + expiry_grace:
                raise TokenRejectedError(RejectReason.EXPIRED, "token expired, beyond the grace window") from None
            within_grace = True
        return self._identity(claims, within_grace)

    # -- steps -----------------------------------------------------------------------------------------------------

    def _check_shape(self, token: str) -> tuple[str, str]:
        """Refuse what is not worth parsing; return the header's ``kid`` and ``alg``."""
        if not token or not isinstance(cast(object, token), str):
            raise TokenRejectedError(RejectReason.MISSING, "empty token")
        if len(token) > self.settings.max_token_bytes:
            raise TokenRejectedError(RejectReason.OVERSIZED, f"token longer than {self.settings.max_token_bytes} bytes")
        if not _COMPACT_JWS.fullmatch(token):
            raise TokenRejectedError(RejectReason.MALFORMED, "not a compact JWS")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise TokenRejectedError(RejectReason.MALFORMED, "undecodable header") from exc
        alg, kid = header.get("alg"), header.get("kid")
        if not isinstance(alg, str) or alg not in self._algorithms:
            raise TokenRejectedError(RejectReason.ALGORITHM, f"alg {str(alg)[:20]!r} not allowed")
        if not isinstance(kid, str) or not kid or len(kid) > _MAX_KID_CHARS:
            raise TokenRejectedError(RejectReason.MALFORMED, "missing or invalid kid")
        return kid, alg

    def _decode(self, token: str, key: jwt.PyJWK, issuer: str, *, check_exp: bool) -> dict[str, Any]:
        """PyJWT's checks: signature, ``iss``, ``aud``, time claims with the leeway, required claims."""
        audience = list(self.settings.allowed_audience) or None
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key=key,
                algorithms=[key.algorithm_name],
                issuer=issuer,
                audience=audience,
                leeway=self.settings.leeway_s,
                options={
                    "require": self._required,
                    "verify_aud": audience is not None,
                    "verify_exp": check_exp,
                    "verify_sub": False,  # the user claim (sub or another) is checked below, with its own reason
                    "verify_jti": False,
                },
            )
        except jwt.MissingRequiredClaimError as exc:
            raise TokenRejectedError(_missing(exc.claim, self.settings), f"{exc.claim} claim missing") from exc
        except jwt.ExpiredSignatureError:
            raise
        except jwt.PyJWTError as exc:
            reason = next((r for kind, r in _REASONS if isinstance(exc, kind)), RejectReason.MALFORMED)
            raise TokenRejectedError(reason, f"{type(exc).__name__}: {exc}"[:200]) from exc
        except (ValueError, TypeError) as exc:
            raise TokenRejectedError(RejectReason.MALFORMED, f"undecodable token: {type(exc).__name__}") from exc
        require_numeric_dates(claims)
        return claims

    def _identity(self, claims: dict[str, Any], within_grace: bool) -> VerifiedIdentity:
        """What PyJWT does not check: token use, client, user and tenant claims."""
        cfg = self.settings
        token_use = claims.get("token_use")
        if token_use is not None and (not isinstance(token_use, str) or token_use not in ("access", "id")):
            raise TokenRejectedError(RejectReason.TOKEN_USE, "token_use is neither access nor id")
        if cfg.token_use is not None and token_use != cfg.token_use:
            raise TokenRejectedError(RejectReason.TOKEN_USE, f"token_use must be {cfg.token_use}")

        client_id: str | None
        if token_use == "id":  # noqa: S105 - a claim value, not a secret
            audiences = _strings(claims.get("aud"))
            client_id = next(iter(sorted(audiences & set(cfg.allowed_clients))), None) if cfg.allowed_clients else None
            if client_id is None and len(audiences) == 1:
                client_id = next(iter(audiences))
        else:
            raw_client = claims.get("client_id")
            client_id = raw_client if isinstance(raw_client, str) else None
        if cfg.allowed_clients and (client_id is None or client_id not in cfg.allowed_clients):
            raise TokenRejectedError(RejectReason.CLIENT, "client not allowed")

        user = _identity_part(claims.get(cfg.user_claim))
        if user is None:
            raise TokenRejectedError(RejectReason.USER_CLAIM, f"claim {cfg.user_claim!r} missing or unusable")
        tenant: str | None = None
        if cfg.tenant_claim is not None:
            tenant = _identity_part(claims.get(cfg.tenant_claim))
            if tenant is None:
                raise TokenRejectedError(RejectReason.TENANT_CLAIM, f"claim {cfg.tenant_claim!r} missing or unusable")
        identity = VerifiedIdentity(
            user=user,
            tenant=tenant,
            claims=claims,
            expires_at=float(claims["exp"]),
            token_use=token_use,
            client_id=client_id,
            within_grace=within_grace,
        )
        if identity.is_machine:  # memory is a user's: a client's own token opens no bank anywhere
            raise TokenRejectedError(RejectReason.MACHINE, "a client-credentials token names no user")
        return identity


def require_numeric_dates(claims: Mapping[str, Any]) -> None:
    """Raise :class:`TokenRejectedError` (``MALFORMED``) unless every present ``exp``, ``nbf`` and ``iat`` is a number.

    RFC 7519 defines NumericDate as a JSON number. PyJWT checks these claims with ``int(value)``, so a correctly
    signed token with ``"exp": "1796157000"`` (or ``true``) would pass; an integer too large for a float would pass
    PyJWT and break every later use. Refusing them here keeps every verifier path (agent, extension, gateway, MCP
    server) on the same rule.
    """
    for name in _TIME_CLAIMS:
        if name in claims and not _is_numeric_date(claims[name]):
            raise TokenRejectedError(RejectReason.MALFORMED, f"{name} is not a NumericDate (a JSON number)")


def _is_numeric_date(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _missing(claim: str, settings: JwtSettings) -> RejectReason:
    if claim == "exp":
        return RejectReason.EXPIRED
    if claim == "iss":
        return RejectReason.ISSUER
    if claim == "aud":
        return RejectReason.AUDIENCE
    if claim == settings.user_claim:
        return RejectReason.USER_CLAIM
    return RejectReason.TENANT_CLAIM


def _strings(value: Any) -> set[str]:
    if isinstance(value, str):
        return {value}
    if isinstance(value, list):
        return {item for item in value if isinstance(item, str)}
    return set()


def _identity_part(value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip() or len(value.encode("utf-8", "replace")) > _MAX_IDENTITY_BYTES:
        return None
    return value
