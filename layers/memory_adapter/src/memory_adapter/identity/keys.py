"""The issuer's signing keys: where they come from (the key sources) and how they are kept (one cache for all).

Key sources (:func:`key_source` picks the one :class:`~memory_adapter.identity.settings.JwtSettings` names):

* :class:`DiscoveredJwks`: the OIDC discovery document (fetched once, without following redirects, its issuer
  checked against the URL), then its ``jwks_uri``;
* :class:`JwksUrl`: a JWKS endpoint, fetched with PyJWT's :class:`jwt.PyJWKClient`;
* :class:`StaticJwks`: a JWKS document delivered out of band (nothing is fetched);
* :class:`SsmParameterJwks`: an SSM parameter holding a JWKS document (e.g. the stack's mirror of the issuer's keys,
  for a VPC that cannot reach the issuer); boto3 is imported on the first read only.

:class:`SigningKeys` sits in front of every source: keys are reused for ``jwks_cache_ttl_s``; a ``kid`` that is not
in them triggers at most one early refetch per ``jwks_refetch_interval_s`` (a flood of made-up key ids cannot turn
into a flood of requests to the identity provider); while the source fails, it is not asked again within that
interval and the last keys fetched stay in use for up to ``jwks_max_stale_s``; with no usable keys verification fails
closed (``KEYS_UNAVAILABLE``).
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import jwt
from jwt import PyJWK, PyJWKClient, PyJWKSet

from memory_adapter.identity.errors import IdentityConfigError, RejectReason, TokenRejectedError
from memory_adapter.identity.settings import DISCOVERY_SUFFIX, JwtSettings

__all__ = ["DiscoveredJwks", "JwksUrl", "KeySource", "SigningKeys", "SsmParameterJwks", "StaticJwks", "key_source"]

_MAX_DOCUMENT_BYTES = 256 * 1024


class KeySource(Protocol):
    """Where signing keys come from. ``fetch`` blocks; it raises :class:`TokenRejectedError` (``KEYS_UNAVAILABLE``)."""

    @property
    def issuer(self) -> str | None:
        """The issuer the source has learned (the discovery document's), else ``None``."""
        ...

    def fetch(self) -> Sequence[PyJWK]:
        """The current keys."""
        ...


def _unavailable(detail: str) -> TokenRejectedError:
    return TokenRejectedError(RejectReason.KEYS_UNAVAILABLE, detail)


def _parse(document: Mapping[str, Any], origin: str) -> list[PyJWK]:
    try:
        return list(PyJWKSet.from_dict(dict(document)).keys)
    except (jwt.PyJWTError, TypeError, ValueError) as exc:
        raise _unavailable(f"{origin} holds no usable JWKS: {exc}") from exc


class JwksUrl:
    """A JWKS endpoint (no redirects followed; caching is :class:`SigningKeys`' job)."""

    issuer: str | None = None

    def __init__(self, url: str, *, timeout_s: float) -> None:
        self._client = PyJWKClient(url, cache_jwk_set=False, timeout=timeout_s)

    def fetch(self) -> Sequence[PyJWK]:
        try:
            return list(self._client.get_jwk_set().keys)
        except jwt.PyJWTError as exc:
            raise _unavailable(f"JWKS fetch failed: {exc}") from exc


class StaticJwks:
    """A JWKS document given in the settings; unusable documents are refused at construction."""

    issuer: str | None = None

    def __init__(self, document: Mapping[str, Any]) -> None:
        try:
            self._keys = _parse(document, "static_jwks")
        except TokenRejectedError as exc:
            raise IdentityConfigError(exc.detail) from exc

    def fetch(self) -> Sequence[PyJWK]:
        return self._keys


class SsmParameterJwks:
    """An SSM parameter holding a JWKS document (read with boto3 unless ``read`` is given, e.g. in tests).

    Args:
        name: Parameter name.
        timeout_s: Connect and read timeout of the SSM call.
        read: Returns the parameter's value for a name (replaces boto3).
    """

    issuer: str | None = None

    def __init__(self, name: str, *, timeout_s: float = 5.0, read: Callable[[str], str] | None = None) -> None:
        self.name = name
        self._timeout_s = timeout_s
        self._read = read

    def fetch(self) -> Sequence[PyJWK]:
        try:
            raw = self._reader()(self.name)
            document = json.loads(raw)
        except Exception as exc:  # botocore raises many unrelated types; all mean "no keys now"
            raise _unavailable(f"cannot read {self.name}: {type(exc).__name__}") from exc
        if not isinstance(document, dict):
            raise _unavailable(f"{self.name} holds no JWKS document")
        return _parse(document, self.name)

    def _reader(self) -> Callable[[str], str]:
        if self._read is None:
            import boto3  # lazy: only deployments reading mirrored keys pay for it
            from botocore.config import Config

            timeout = self._timeout_s
            client = boto3.client(
                "ssm", config=Config(connect_timeout=timeout, read_timeout=timeout, retries={"max_attempts": 2})
            )

            def read(name: str) -> str:
                return str(client.get_parameter(Name=name)["Parameter"]["Value"])

            self._read = read
        return self._read


class DiscoveredJwks:
    """The JWKS named by an OIDC discovery document; the document is fetched on first use and then kept."""

    def __init__(self, discovery_url: str, *, timeout_s: float) -> None:
        self._url = discovery_url
        self._timeout_s = timeout_s
        self._jwks: JwksUrl | None = None
        self.issuer: str | None = None

    def fetch(self) -> Sequence[PyJWK]:
        if self._jwks is None:
            try:
                document = _fetch_json(self._url, self._timeout_s)
            except (OSError, ValueError, urllib.error.URLError) as exc:
                raise _unavailable(f"discovery failed: {exc}") from exc
            issuer, jwks_uri = document.get("issuer"), document.get("jwks_uri")
            if not isinstance(issuer, str) or not isinstance(jwks_uri, str):
                raise _unavailable("discovery document lacks issuer or jwks_uri")
            if issuer.rstrip("/") + DISCOVERY_SUFFIX != self._url.rstrip("/"):
                raise _unavailable("discovery document issuer does not match the discovery URL")
            if not jwks_uri.startswith(("https://", "http://")):
                raise _unavailable("jwks_uri is not an http(s) URL")
            self._jwks, self.issuer = JwksUrl(jwks_uri, timeout_s=self._timeout_s), issuer
        return self._jwks.fetch()


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


def key_source(settings: JwtSettings) -> KeySource:
    """The source ``settings`` name (they must be valid: see :meth:`JwtSettings.problems`)."""
    if settings.static_jwks is not None:
        return StaticJwks(settings.static_jwks)
    if settings.jwks_parameter is not None:
        return SsmParameterJwks(settings.jwks_parameter, timeout_s=settings.http_timeout_s)
    if settings.jwks_url is not None:
        return JwksUrl(settings.jwks_url, timeout_s=settings.http_timeout_s)
    assert settings.discovery_url is not None
    return DiscoveredJwks(settings.discovery_url, timeout_s=settings.http_timeout_s)


class SigningKeys:
    """The cache in front of a :class:`KeySource` (see the module docstring). Thread-safe.

    Args:
        source: Where the keys come from.
        ttl_s: How long fetched keys are reused.
        refetch_interval_s: Minimum time between refetches for an unknown ``kid``, and between attempts after a
            failure.
        max_stale_s: How long the last keys stay in use while the source fails.
        clock: Monotonic seconds (tests).
    """

    def __init__(
        self,
        source: KeySource,
        *,
        ttl_s: float,
        refetch_interval_s: float,
        max_stale_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.source = source
        self._ttl_s = ttl_s
        self._interval_s = refetch_interval_s
        self._max_stale_s = max_stale_s
        self._clock = clock
        self._lock = threading.Lock()
        self._keys: Sequence[PyJWK] | None = None
        self._fetched_at = 0.0
        self._failed_at: float | None = None
        self._forced_at: float | None = None

    @classmethod
    def for_settings(cls, settings: JwtSettings, *, source: KeySource | None = None) -> SigningKeys:
        """The cache ``settings`` describe, in front of ``source`` (default: :func:`key_source`)."""
        return cls(
            source if source is not None else key_source(settings),
            ttl_s=settings.jwks_cache_ttl_s,
            refetch_interval_s=settings.jwks_refetch_interval_s,
            max_stale_s=settings.jwks_max_stale_s,
        )

    def get(self, kid: str) -> PyJWK:
        """The signing key named ``kid``; raise :class:`TokenRejectedError` (``UNKNOWN_KEY``, ``KEYS_UNAVAILABLE``)."""
        with self._lock:
            now = self._clock()
            key = _match(self._current(now, refresh=False), kid)
            if key is not None:
                return key
            if self._forced_at is not None and now - self._forced_at < self._interval_s:
                raise TokenRejectedError(RejectReason.UNKNOWN_KEY, "kid not in the issuer's JWKS")
            self._forced_at = now
            key = _match(self._current(now, refresh=True), kid)
            if key is None:
                raise TokenRejectedError(RejectReason.UNKNOWN_KEY, "kid not in the issuer's JWKS")
            return key

    def refresh(self) -> None:
        """Fetch now unless the keys are fresh (at start-up); raise :class:`TokenRejectedError` if none is usable."""
        with self._lock:
            self._current(self._clock(), refresh=False)

    def _current(self, now: float, *, refresh: bool) -> Sequence[PyJWK]:
        if self._keys is not None and not refresh and now - self._fetched_at < self._ttl_s:
            return self._keys
        if self._failed_at is not None and now - self._failed_at < self._interval_s:
            return self._stale_or_raise(now, "key source failed recently; not retrying yet")
        try:
            keys = self.source.fetch()
        except TokenRejectedError as exc:
            self._failed_at = now
            return self._stale_or_raise(now, exc.detail)
        self._failed_at = None
        self._keys, self._fetched_at = keys, now
        return keys

    def _stale_or_raise(self, now: float, detail: str) -> Sequence[PyJWK]:
        if self._keys is not None and now - self._fetched_at <= self._max_stale_s:
            return self._keys
        raise _unavailable(detail)


def _match(keys: Sequence[PyJWK], kid: str) -> PyJWK | None:
    return next((k for k in keys if k.key_id == kid and k.public_key_use in ("sig", None)), None)
