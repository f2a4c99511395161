"""Bearer-token (JWT) verification shared by the agent and the Hindsight server extension.

Both sides must accept exactly the same tokens, so both import this module: the agent to learn who is calling, the
server extension (``hindsight_isolation``) to decide whose banks a request may touch. It depends only on the standard
library and PyJWT (``pyjwt[crypto]``), both present in the agent bundle and in the stock Hindsight image.

What a token must satisfy to verify (anything else raises :class:`TokenRejected` with a :class:`RejectReason`):

* at most ``max_token_bytes`` long and shaped like a compact JWS (checked before any parsing);
* header ``alg`` in the configured allowlist, which may only hold asymmetric algorithms (``none`` and HMAC, and so
  the "HS256 signed with the public key" confusion, can never verify); a ``kid`` naming a key of the issuer's JWKS;
* a valid signature by that key (the key's own algorithm must equal the header's);
* ``iss`` equal to the issuer (taken from the OIDC discovery document when ``discovery_url`` is used);
* ``exp`` present and in the future (``leeway_s`` of clock skew allowed; ``expiry_grace`` more on request);
  ``nbf`` and ``iat``, when present, not in the future beyond the leeway;
* audience and client: when ``allowed_audience`` is set, ``aud`` must name one of them; when ``allowed_clients`` is
  set, the token's client must be one of them: ``client_id`` for access tokens (Cognito), ``aud`` for ID tokens
  (``token_use == "id"``). Both are checked when both are set;
* ``token_use``, when present, is ``access`` or ``id``; when ``token_use`` is configured it must be present and equal;
* the user claim (``sub`` by default) and, when configured, the tenant claim are non-blank strings.

Keys come from the JWKS through :class:`jwt.PyJWKClient` (cached for ``jwks_cache_ttl_s``). A ``kid`` that is not in
the cached set triggers at most one refetch per ``jwks_refetch_interval_s``, so a flood of tokens with made-up key
ids cannot turn into a flood of requests to the identity provider.

Example:
    >>> verifier = JwtVerifier(JwtVerifierConfig(discovery_url=url, allowed_clients=("my-app-client",)))
    >>> identity = verifier.verify(token)          # raises TokenRejected
    >>> identity.user, identity.tenant
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, cast

import jwt
from jwt import PyJWK, PyJWKClient, PyJWKSet

__all__ = [
    "ASYMMETRIC_ALGORITHMS",
    "JwtVerifier",
    "JwtVerifierConfig",
    "RejectReason",
    "TokenRejected",
    "VerifiedIdentity",
    "bearer_token",
]

#: The only algorithms a verifier may be configured with: public-key signatures. HMAC (``HS*``) and ``none`` are
#: excluded so a token can never be "verified" with the issuer's public key used as a shared secret.
ASYMMETRIC_ALGORITHMS = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)

_COMPACT_JWS = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+")
_DISCOVERY_SUFFIX = "/.well-known/openid-configuration"
_MAX_DOCUMENT_BYTES = 256 * 1024
_TOKEN_USES = frozenset({"access", "id"})
_MAX_IDENTITY_BYTES = 256


class RejectReason(StrEnum):
    """Why a token was refused. Log it; never send it to the caller (it would help an attacker)."""

    MISSING = "missing"  # no bearer token at all
    OVERSIZED = "oversized"  # longer than max_token_bytes: refused before parsing
    MALFORMED = "malformed"  # not a compact JWS, bad base64/JSON, missing kid, non-numeric time claims
    ALGORITHM = "algorithm"  # alg not in the asymmetric allowlist (none, HS256, ...) or not the key's algorithm
    UNKNOWN_KEY = "unknown_key"  # kid not in the issuer's JWKS (after at most one refetch per interval)
    SIGNATURE = "signature"  # signature does not verify
    ISSUER = "issuer"  # iss missing or not the issuer
    EXPIRED = "expired"  # exp missing or in the past
    NOT_YET_VALID = "not_yet_valid"  # nbf or iat in the future
    AUDIENCE = "audience"  # aud not allowed
    CLIENT = "client"  # client_id (access) / aud (id token) not allowed
    TOKEN_USE = "token_use"  # noqa: S105 - not a secret; token_use not access/id, or not the configured one
    USER_CLAIM = "user_claim"  # user claim missing, blank, not a string or too long
    TENANT_CLAIM = "tenant_claim"  # tenant claim configured but missing, blank, not a string or too long
    KEYS_UNAVAILABLE = "keys_unavailable"  # discovery document or JWKS could not be fetched: fail closed


class TokenRejected(Exception):
    """The token does not verify. ``reason`` says why, for logs and metrics only."""

    def __init__(self, reason: RejectReason, detail: str = "") -> None:
        super().__init__(f"{reason.value}: {detail}" if detail else reason.value)
        self.reason = reason
        self.detail = detail


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


@dataclass(frozen=True, slots=True)
class JwtVerifierConfig:
    """What a token must satisfy. Give ``discovery_url``, or ``issuer`` with ``jwks_url`` or ``static_jwks``.

    Args:
        discovery_url: OIDC discovery document (``.../.well-known/openid-configuration``); ``issuer`` and ``jwks_uri``
            are read from it on first use. The document's issuer must match the URL (OIDC Discovery 1.0 section 4.3).
        issuer: Expected ``iss`` when not using discovery.
        jwks_url: JWKS endpoint when not using discovery.
        static_jwks: A JWKS document (``{"keys": [...]}``) delivered out of band (e.g. at deploy time into a VPC
            without egress); no key fetching at all.
        allowed_clients: Client ids; checked against ``client_id`` (access tokens) or ``aud`` (ID tokens).
        allowed_audience: Audiences; checked against ``aud``.
        token_use: ``"access"`` or ``"id"`` to require that ``token_use`` claim; ``None`` accepts either when present.
        user_claim: Claim holding the user id.
        tenant_claim: Claim holding the tenant id; ``None`` for single-tenant deployments.
        algorithms: Accepted ``alg`` values, a subset of :data:`ASYMMETRIC_ALGORITHMS`.
        leeway_s: Clock skew tolerated on ``exp``, ``nbf`` and ``iat``, in seconds.
        jwks_cache_ttl_s: How long a fetched JWKS (and discovery document) is reused, in seconds.
        jwks_refetch_interval_s: Minimum seconds between refetches caused by an unknown ``kid``, and between fetch
            attempts while the JWKS endpoint fails.
        jwks_max_stale_s: While the JWKS endpoint fails, how long the last fetched keys stay in use, in seconds.
        http_timeout_s: Timeout of each discovery/JWKS request, in seconds.
        max_token_bytes: Longer tokens are refused before any parsing.
    """

    discovery_url: str | None = None
    issuer: str | None = None
    jwks_url: str | None = None
    static_jwks: Mapping[str, Any] | None = None
    allowed_clients: tuple[str, ...] = ()
    allowed_audience: tuple[str, ...] = ()
    token_use: str | None = None
    user_claim: str = "sub"
    tenant_claim: str | None = None
    algorithms: tuple[str, ...] = ("RS256",)
    leeway_s: float = 30.0
    jwks_cache_ttl_s: float = 300.0
    jwks_refetch_interval_s: float = 60.0
    jwks_max_stale_s: float = 86400.0
    http_timeout_s: float = 5.0
    max_token_bytes: int = 8192

    def problems(self) -> list[str]:
        """Every configuration error at once (empty when usable)."""
        errors: list[str] = []
        if self.discovery_url:
            if self.issuer or self.jwks_url or self.static_jwks is not None:
                errors.append("give either discovery_url or issuer with jwks_url/static_jwks, not both")
            if not self.discovery_url.rstrip("/").endswith(_DISCOVERY_SUFFIX):
                errors.append(f"discovery_url must end with {_DISCOVERY_SUFFIX}")
            if not self.discovery_url.startswith(("https://", "http://")):
                errors.append("discovery_url must be an http(s) URL")
        else:
            if not self.issuer:
                errors.append("issuer is required without discovery_url")
            if bool(self.jwks_url) == (self.static_jwks is not None):
                errors.append("give exactly one of jwks_url or static_jwks without discovery_url")
            if self.jwks_url and not self.jwks_url.startswith(("https://", "http://")):
                errors.append("jwks_url must be an http(s) URL")
        if not self.allowed_clients and not self.allowed_audience:
            errors.append("set allowed_clients and/or allowed_audience: a token for any client must not pass")
        if any(not isinstance(v, str) or not v.strip() for v in (*self.allowed_clients, *self.allowed_audience)):
            errors.append("allowed_clients and allowed_audience must hold non-blank strings")
        if self.token_use is not None and self.token_use not in _TOKEN_USES:
            errors.append("token_use must be 'access', 'id' or None")
        if not self.user_claim.strip():
            errors.append("user_claim must not be blank")
        if self.tenant_claim is not None and not self.tenant_claim.strip():
            errors.append("tenant_claim must be None or a non-blank claim name")
        if not self.algorithms:
            errors.append("algorithms must not be empty")
        unsafe = sorted(set(self.algorithms) - ASYMMETRIC_ALGORITHMS)
        if unsafe:
            errors.append(f"algorithms must be asymmetric; not allowed: {', '.join(unsafe)}")
        for name in ("leeway_s", "jwks_cache_ttl_s", "jwks_refetch_interval_s", "jwks_max_stale_s", "http_timeout_s"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0 or (name != "leeway_s" and value == 0):
                errors.append(f"{name} must be a finite number{' >= 0' if name == 'leeway_s' else ' > 0'}")
        if self.leeway_s > 300:
            errors.append("leeway_s above 300 s defeats expiry checks")
        if self.max_token_bytes < 256:
            errors.append("max_token_bytes must be at least 256")
        return errors


def bearer_token(authorization: str | None) -> str:
    """The token of an ``Authorization: Bearer <token>`` header value; raise :class:`TokenRejected` otherwise."""
    if authorization is None or not authorization.strip():
        raise TokenRejected(RejectReason.MISSING, "no Authorization header")
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise TokenRejected(RejectReason.MALFORMED, "Authorization is not a Bearer token")
    return token.strip()


class _Keys:
    """The issuer's signing keys: cached JWKS, at most one forced refetch per interval for unknown key ids.

    While the JWKS endpoint fails, fetches are not retried more than once per interval (no request waits on a dead
    endpoint again and again), and the last keys fetched successfully stay in use for up to ``jwks_max_stale_s``.
    """

    def __init__(self, config: JwtVerifierConfig, jwks_url: str | None) -> None:
        self._lock = threading.Lock()
        self._interval = config.jwks_refetch_interval_s
        self._max_stale = config.jwks_max_stale_s
        self._last_forced: float | None = None
        self._failed_at: float | None = None
        self._last_good: list[PyJWK] | None = None
        self._last_good_at = 0.0
        self._static: list[PyJWK] | None = None
        self._client: PyJWKClient | None = None
        if config.static_jwks is not None:
            try:
                self._static = list(PyJWKSet.from_dict(dict(config.static_jwks)).keys)
            except jwt.PyJWTError as exc:
                raise ValueError(f"static_jwks is not a usable JWKS: {exc}") from exc
        else:
            assert jwks_url is not None
            self._client = PyJWKClient(
                jwks_url, cache_jwk_set=True, lifespan=config.jwks_cache_ttl_s, timeout=config.http_timeout_s
            )

    def get(self, kid: str, now_monotonic: float) -> PyJWK:
        if self._static is not None:
            return _match(self._static, kid)
        with self._lock:
            try:
                return _match(self._signing_keys(refresh=False, now=now_monotonic), kid)
            except TokenRejected as exc:
                if exc.reason is not RejectReason.UNKNOWN_KEY:
                    raise
                if self._last_forced is not None and now_monotonic - self._last_forced < self._interval:
                    raise
                self._last_forced = now_monotonic
            return _match(self._signing_keys(refresh=True, now=now_monotonic), kid)

    def _signing_keys(self, *, refresh: bool, now: float) -> list[PyJWK]:
        assert self._client is not None
        if self._failed_at is not None and now - self._failed_at < self._interval:
            return self._stale_or_raise(now, "JWKS endpoint failed recently; not retrying yet")
        try:
            keys = self._client.get_signing_keys(refresh=refresh)
        except jwt.PyJWTError as exc:
            self._failed_at = now
            return self._stale_or_raise(now, f"JWKS fetch failed: {exc}")
        self._failed_at = None
        self._last_good, self._last_good_at = keys, now
        return keys

    def _stale_or_raise(self, now: float, detail: str) -> list[PyJWK]:
        if self._last_good is not None and now - self._last_good_at <= self._max_stale:
            return self._last_good
        raise TokenRejected(RejectReason.KEYS_UNAVAILABLE, detail)


def _match(keys: Sequence[PyJWK], kid: str) -> PyJWK:
    for key in keys:
        if key.key_id == kid and key.public_key_use in ("sig", None):
            return key
    raise TokenRejected(RejectReason.UNKNOWN_KEY, "kid not in the issuer's JWKS")


def _fetch_json(url: str, timeout: float) -> dict[str, Any]:
    """GET a small JSON object; no redirects (a redirect could point the verifier at someone else's keys)."""

    class _NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    opener = urllib.request.build_opener(_NoRedirect())
    request = urllib.request.Request(url, headers={"Accept": "application/json"})  # noqa: S310 - scheme checked
    with opener.open(request, timeout=timeout) as response:
        body = response.read(_MAX_DOCUMENT_BYTES + 1)
    if len(body) > _MAX_DOCUMENT_BYTES:
        raise ValueError("document too large")
    document = json.loads(body)
    if not isinstance(document, dict):
        raise ValueError("document is not a JSON object")
    return document


class JwtVerifier:
    """Verifies bearer tokens against one issuer. Thread-safe; create one per process and reuse it.

    Nothing is fetched at construction: the discovery document and JWKS are fetched on first use (and cached), so a
    temporarily unreachable identity provider makes verification fail closed (``KEYS_UNAVAILABLE``) instead of
    making start-up fail.
    """

    def __init__(self, config: JwtVerifierConfig) -> None:
        problems = config.problems()
        if problems:
            raise ValueError("invalid JWT verifier configuration: " + "; ".join(problems))
        self.config = config
        self._algorithms = frozenset(config.algorithms)
        self._lock = threading.Lock()
        self._issuer: str | None = config.issuer
        self._keys: _Keys | None = None
        self._discovery_failed_at: float | None = None
        if not config.discovery_url:
            self._keys = _Keys(config, config.jwks_url)

    @property
    def issuer(self) -> str | None:
        """The expected ``iss`` (``None`` until the discovery document has been read)."""
        return self._issuer

    def prefetch(self) -> None:
        """Fetch the discovery document and JWKS now (e.g. at start-up to warm the cache); raise TokenRejected."""
        keys = self._resolve()
        if keys._client is not None:
            with keys._lock:
                keys._signing_keys(refresh=False, now=time.monotonic())

    def verify(self, token: str, *, now: float | None = None, expiry_grace: float = 0.0) -> VerifiedIdentity:
        """Verify ``token`` and return its identity; raise :class:`TokenRejected` on any failure.

        Args:
            token: The compact JWT (without ``Bearer``).
            now: Unix time to check against (tests); defaults to the current time.
            expiry_grace: Extra seconds after ``exp`` during which the token is still accepted, flagged
                ``within_grace``. Only for re-delivering a spooled retain into the token's own banks.
        """
        current = time.time() if now is None else now
        header = self._check_shape(token)
        alg, kid = header["alg"], header["kid"]
        keys = self._resolve()
        key = keys.get(kid, time.monotonic())
        if key.algorithm_name != alg:
            raise TokenRejected(RejectReason.ALGORITHM, "alg does not match the key's algorithm")
        try:
            decoded = jwt.decode_complete(
                token,
                key=key,
                algorithms=[alg],
                options={
                    "verify_signature": True,
                    "verify_exp": False,
                    "verify_nbf": False,
                    "verify_iat": False,
                    "verify_aud": False,
                    "verify_iss": False,
                    "verify_sub": False,
                    "verify_jti": False,
                    "require": [],
                },
            )
        except jwt.InvalidAlgorithmError as exc:
            raise TokenRejected(RejectReason.ALGORITHM, str(exc)) from exc
        except jwt.InvalidSignatureError as exc:
            raise TokenRejected(RejectReason.SIGNATURE, "signature does not verify") from exc
        except (jwt.PyJWTError, ValueError, TypeError) as exc:
            raise TokenRejected(RejectReason.MALFORMED, f"undecodable token: {type(exc).__name__}") from exc
        claims = decoded["payload"]
        if not isinstance(claims, dict):
            raise TokenRejected(RejectReason.MALFORMED, "payload is not a JSON object")
        return self._check_claims(claims, current, max(0.0, float(expiry_grace)))

    # -- steps -----------------------------------------------------------------------------------------------------

    def _check_shape(self, token: str) -> dict[str, Any]:
        if not token or not isinstance(cast(object, token), str):
            raise TokenRejected(RejectReason.MISSING, "empty token")
        if len(token) > self.config.max_token_bytes:
            raise TokenRejected(RejectReason.OVERSIZED, f"token longer than {self.config.max_token_bytes} bytes")
        if not _COMPACT_JWS.fullmatch(token):
            raise TokenRejected(RejectReason.MALFORMED, "not a compact JWS")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise TokenRejected(RejectReason.MALFORMED, "undecodable header") from exc
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self._algorithms:
            raise TokenRejected(RejectReason.ALGORITHM, f"alg {str(alg)[:20]!r} not allowed")
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid or len(kid) > 256:
            raise TokenRejected(RejectReason.MALFORMED, "missing or invalid kid")
        return header

    def _resolve(self) -> _Keys:
        if self._keys is not None:
            return self._keys
        with self._lock:
            if self._keys is not None:  # another thread finished discovery while this one waited
                return self._keys  # type: ignore[unreachable]
            url = self.config.discovery_url
            assert url is not None
            started = time.monotonic()
            if (
                self._discovery_failed_at is not None
                and started - self._discovery_failed_at < self.config.jwks_refetch_interval_s
            ):
                raise TokenRejected(RejectReason.KEYS_UNAVAILABLE, "discovery failed recently; not retrying yet")
            try:
                document = _fetch_json(url, self.config.http_timeout_s)
                issuer, jwks_uri = document.get("issuer"), document.get("jwks_uri")
                if not isinstance(issuer, str) or not isinstance(jwks_uri, str):
                    raise ValueError("discovery document lacks issuer or jwks_uri")
                if issuer.rstrip("/") + _DISCOVERY_SUFFIX != url.rstrip("/"):
                    raise ValueError("discovery document issuer does not match the discovery URL")
                if not jwks_uri.startswith(("https://", "http://")):
                    raise ValueError("jwks_uri is not an http(s) URL")
                keys = _Keys(self.config, jwks_uri)
            except (OSError, ValueError, urllib.error.URLError, jwt.PyJWTError) as exc:
                self._discovery_failed_at = started
                raise TokenRejected(RejectReason.KEYS_UNAVAILABLE, f"discovery failed: {exc}") from exc
            self._issuer = issuer
            self._keys = keys
            return keys

    def _check_claims(self, claims: dict[str, Any], now: float, grace: float) -> VerifiedIdentity:
        cfg = self.config
        iss = claims.get("iss")
        if not isinstance(iss, str) or iss != self._issuer:
            raise TokenRejected(RejectReason.ISSUER, "iss is not the issuer")

        exp = _number(claims, "exp")
        if exp is None:
            raise TokenRejected(RejectReason.EXPIRED, "exp claim missing")
        within_grace = False
        if now >= exp + cfg.leeway_s:
            if now >= exp + cfg.leeway_s + grace:
                raise TokenRejected(RejectReason.EXPIRED, "token expired")
            within_grace = True
        for name in ("nbf", "iat"):
            value = _number(claims, name)
            if value is not None and value > now + cfg.leeway_s:
                raise TokenRejected(RejectReason.NOT_YET_VALID, f"{name} is in the future")

        token_use = claims.get("token_use")
        if token_use is not None and (not isinstance(token_use, str) or token_use not in _TOKEN_USES):
            raise TokenRejected(RejectReason.TOKEN_USE, "token_use is neither access nor id")
        if cfg.token_use is not None and token_use != cfg.token_use:
            raise TokenRejected(RejectReason.TOKEN_USE, f"token_use must be {cfg.token_use}")

        audiences = _strings(claims.get("aud"))
        if cfg.allowed_audience and not audiences & set(cfg.allowed_audience):
            raise TokenRejected(RejectReason.AUDIENCE, "aud not allowed")
        client_id: str | None
        if token_use == "id":  # noqa: S105 - a claim value, not a secret
            client_id = next(iter(sorted(audiences & set(cfg.allowed_clients))), None) if cfg.allowed_clients else None
            if client_id is None and len(audiences) == 1:
                client_id = next(iter(audiences))
        else:
            raw_client = claims.get("client_id")
            client_id = raw_client if isinstance(raw_client, str) else None
        if cfg.allowed_clients and (client_id is None or client_id not in cfg.allowed_clients):
            raise TokenRejected(RejectReason.CLIENT, "client not allowed")

        user = _identity_part(claims.get(cfg.user_claim))
        if user is None:
            raise TokenRejected(RejectReason.USER_CLAIM, f"claim {cfg.user_claim!r} missing or unusable")
        tenant: str | None = None
        if cfg.tenant_claim is not None:
            tenant = _identity_part(claims.get(cfg.tenant_claim))
            if tenant is None:
                raise TokenRejected(RejectReason.TENANT_CLAIM, f"claim {cfg.tenant_claim!r} missing or unusable")
        return VerifiedIdentity(
            user=user,
            tenant=tenant,
            claims=claims,
            expires_at=exp,
            token_use=token_use,
            client_id=client_id,
            within_grace=within_grace,
        )


def _number(claims: Mapping[str, Any], name: str) -> float | None:
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise TokenRejected(RejectReason.MALFORMED, f"{name} is not a number")
    return float(value)


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
