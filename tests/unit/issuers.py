"""Test identity providers: an RSA key, a discovery document and a JWKS on a local server, and a token minter.

``unit_issuer`` (pytest-httpserver, per test) and ``loopback_issuer`` (a stdlib server for the whole session) are the
fixtures of ``tests/unit/conftest.py``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from pytest_httpserver import HTTPServer

from memory_adapter.identity import JwtSettings, JwtVerifier

CLIENT_ID = "client-app"


def non_numeric_time_claims() -> dict[str, dict[str, Any]]:
    """Time claims a correctly signed token must not carry: RFC 7519's NumericDate is a JSON number.

    Every value would pass PyJWT alone (it checks ``int(value)``, and ``True`` is ``1``); each verifier path must
    answer them as it answers any bad token.
    """
    now = int(time.time())
    return {
        "string exp": {"exp": str(now + 300)},
        "string nbf": {"nbf": str(now - 10)},
        "string iat": {"iat": str(now - 10)},
        "boolean iat": {"iat": True},
    }


def jwk_of(key: rsa.RSAPrivateKey, kid: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    data.update(kid=kid, use="sig", alg="RS256")
    return data


@dataclass
class UnitIssuer:
    """A test identity provider: discovery document + JWKS on a local HTTP server, and a token minter."""

    server: HTTPServer
    key: rsa.RSAPrivateKey
    kid: str = "key-1"
    jwks_hits: list[float] = field(default_factory=list)

    @property
    def issuer(self) -> str:
        return self.server.url_for("/pool").rstrip("/")

    @property
    def discovery_url(self) -> str:
        return self.issuer + "/.well-known/openid-configuration"

    def claims(self, user: str = "user-alex", **overrides: Any) -> dict[str, Any]:
        now = time.time()
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "sub": user,
            "exp": now + 300,
            "iat": now,
            "client_id": CLIENT_ID,
            "token_use": "access",
        }
        claims.update(overrides)
        return {k: v for k, v in claims.items() if v is not None}

    def mint(
        self,
        user: str = "user-alex",
        *,
        key: Any = None,
        alg: str = "RS256",
        kid: str | None = None,
        headers: dict[str, Any] | None = None,
        extra: dict[str, Any] | None = None,
        **claims: Any,
    ) -> str:
        claims.update(extra or {})
        all_headers = {"kid": kid or self.kid, **(headers or {})}
        return jwt.encode(self.claims(user, **claims), key or self.key, algorithm=alg, headers=all_headers)

    def settings(self, **overrides: Any) -> JwtSettings:
        values: dict[str, Any] = {"discovery_url": self.discovery_url, "allowed_clients": (CLIENT_ID,)}
        values.update(overrides)
        return JwtSettings(**values)

    def verifier(self, **overrides: Any) -> JwtVerifier:
        return JwtVerifier(self.settings(**overrides))


#: One key for all tests (RSA key generation is slow).
KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)


class IssuerHandler(BaseHTTPRequestHandler):
    issuer: LoopbackIssuer

    def do_GET(self) -> None:
        issuer = self.issuer
        if self.path == "/pool/.well-known/openid-configuration":
            body: dict[str, Any] = {"issuer": issuer.issuer, "jwks_uri": issuer.issuer + "/jwks.json"}
        elif self.path == "/pool/jwks.json":
            issuer.jwks_hits.append(time.monotonic())
            body = {"keys": [jwk_of(issuer.key, issuer.kid)]}
        else:
            self.send_response(404)
            self.end_headers()
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        return


@dataclass
class LoopbackIssuer(UnitIssuer):
    """The same minter, served by a stdlib HTTP server that lives for the whole session (for module-scoped apps)."""

    base: str = ""

    @property
    def issuer(self) -> str:
        return self.base + "/pool"
