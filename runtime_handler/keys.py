"""Signing keys mirrored into SSM Parameter Store, for runtimes in a VPC that cannot reach the token issuer.

The stack's ``-Identity`` mirror function (outside the VPC) copies the issuer's public JWKS into an SSM parameter and
refreshes it on a schedule. With ``JWT_JWKS_PARAMETER`` set, the agent reads the keys from there (through the SSM
VPC endpoint) instead of fetching the issuer's JWKS: the same checks, with :class:`JwtVerifierConfig.static_jwks`.
The parameter is re-read at most every ``refresh_s`` seconds (Powertools parameters cache), an unknown ``kid`` forces
at most one early re-read per ``refetch_interval_s``, and the last good keys stay in use if a re-read fails.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections.abc import Callable

from memory_adapter.tokens import JwtVerifier, JwtVerifierConfig, RejectReason, TokenRejected, VerifiedIdentity

__all__ = ["MirroredKeysVerifier"]


class MirroredKeysVerifier:
    """A :class:`JwtVerifier` whose keys come from an SSM parameter holding a JWKS document."""

    def __init__(
        self,
        config: JwtVerifierConfig,
        parameter_name: str,
        *,
        fetch: Callable[[str, bool], str] | None = None,
        refresh_s: float = 300.0,
    ) -> None:
        """``config`` gives the issuer and every check; its key source fields are replaced by the parameter's JWKS.

        ``fetch(name, force)`` returns the parameter's value (default: Powertools ``get_parameter`` with caching).
        """
        self._base = dataclasses.replace(config, discovery_url=None, jwks_url=None, static_jwks={"keys": []})
        self._name = parameter_name
        self._fetch = fetch
        self._refresh_s = refresh_s
        self._lock = threading.Lock()
        self._raw: str | None = None
        self._verifier: JwtVerifier | None = None
        self._last_forced = float("-inf")

    def verify(self, token: str, *, now: float | None = None, expiry_grace: float = 0.0) -> VerifiedIdentity:
        verifier = self._current(force=False)
        try:
            return verifier.verify(token, now=now, expiry_grace=expiry_grace)
        except TokenRejected as exc:
            if exc.reason is not RejectReason.UNKNOWN_KEY:
                raise
            with self._lock:
                if time.monotonic() - self._last_forced < self._base.jwks_refetch_interval_s:
                    raise
                self._last_forced = time.monotonic()
            return self._current(force=True).verify(token, now=now, expiry_grace=expiry_grace)

    def _current(self, *, force: bool) -> JwtVerifier:
        try:
            raw = self._read(force)
        except Exception as exc:
            if self._verifier is not None:
                return self._verifier  # keep the last good keys
            raise TokenRejected(
                RejectReason.KEYS_UNAVAILABLE, f"cannot read {self._name}: {type(exc).__name__}"
            ) from exc
        with self._lock:
            if raw != self._raw or self._verifier is None:
                try:
                    jwks = json.loads(raw)
                    verifier = JwtVerifier(dataclasses.replace(self._base, static_jwks=jwks))
                except (ValueError, TypeError) as exc:
                    if self._verifier is not None:
                        return self._verifier
                    raise TokenRejected(RejectReason.KEYS_UNAVAILABLE, f"{self._name} holds no usable JWKS") from exc
                self._raw, self._verifier = raw, verifier
            return self._verifier

    def _read(self, force: bool) -> str:
        if self._fetch is None:
            from aws_lambda_powertools.utilities import parameters  # lazy: pulls in boto3

            refresh = int(self._refresh_s)

            def fetch(name: str, force_fetch: bool) -> str:
                return str(parameters.get_parameter(name, max_age=refresh, force_fetch=force_fetch))

            self._fetch = fetch
        return self._fetch(self._name, force)
