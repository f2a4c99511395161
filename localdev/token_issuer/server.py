"""The issuer itself (:class:`TokenIssuer`): OIDC discovery and JWKS over HTTP on 127.0.0.1, and minting."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

from localdev._serving import BackgroundHTTPServer, Lifecycle, serve_in_foreground
from localdev.token_issuer.background import default_data_dir, default_port, state_file
from localdev.token_issuer.keys import SigningKey, load_or_create_key
from localdev.token_issuer.tokens import LOCAL_CLIENT_ID, mint_token

__all__ = ["TokenIssuer"]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _IssuerHTTPServer

    def log_message(self, format: str, *args: object) -> None:
        """Silent: tests count fetches through ``TokenIssuer.jwks_fetches``."""

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        issuer = self.server.owner
        if path == "/.well-known/openid-configuration":
            payload: Any = issuer.discovery_document()
        elif path == "/.well-known/jwks.json":
            issuer.jwks_fetches += 1
            payload = issuer.jwks()
        else:
            self.send_error(404)
            return
        body = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _IssuerHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], owner: TokenIssuer) -> None:
        super().__init__(address, _Handler)
        self.owner = owner


class TokenIssuer(Lifecycle):
    """A local OIDC issuer: an RSA key, discovery + JWKS over HTTP, and :meth:`mint`.

    Args:
        data_dir: Where the key (and the URL it is served at) persist; None keeps the key in memory.
        host: Interface to serve on (loopback).
        port: Port to serve on; 0 picks a free one.
        client_id: Default ``client_id`` claim of minted access tokens.
        serve: False mints for an issuer already serving this ``data_dir``'s key on ``port`` (see :meth:`attach`).
    """

    def __init__(
        self,
        data_dir: Path | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        client_id: str = LOCAL_CLIENT_ID,
        serve: bool = True,
    ) -> None:
        self.data_dir = data_dir
        self.client_id = client_id
        self.key = load_or_create_key(data_dir) if data_dir is not None else SigningKey.generate()
        self._published: list[SigningKey] = [self.key]
        self._http = BackgroundHTTPServer(_IssuerHTTPServer((host, port), self), name="token-issuer") if serve else None
        self.host = host
        self.port = int(self._http.server.server_address[1]) if self._http is not None else port
        self.jwks_fetches = 0

    @classmethod
    def attach(cls, data_dir: Path | None = None, *, port: int | None = None) -> TokenIssuer:
        """Mint for the background issuer (``ensure_running``) without serving: same key, same ``iss``."""
        data_dir = default_data_dir() if data_dir is None else data_dir
        state = state_file(data_dir).read()
        port = int(state.get("port") or (default_port() if port is None else port))
        return cls(data_dir, port=port, serve=False)

    @property
    def issuer(self) -> str:
        """The ``iss`` claim; also the base of the discovery URL."""
        return f"http://{self.host}:{self.port}"

    @property
    def discovery_url(self) -> str:
        return f"{self.issuer}/.well-known/openid-configuration"

    @property
    def jwks_url(self) -> str:
        return f"{self.issuer}/.well-known/jwks.json"

    @property
    def kid(self) -> str:
        return self.key.kid

    def discovery_document(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "jwks_uri": self.jwks_url,
            "authorization_endpoint": f"{self.issuer}/oauth2/authorize",
            "token_endpoint": f"{self.issuer}/oauth2/token",
            "response_types_supported": ["code", "token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
        }

    def jwks(self) -> dict[str, Any]:
        return {"keys": [k.public_jwk() for k in self._published]}

    def rotate_key(self, *, keep_old: bool = True) -> str:
        """Sign with a fresh key from now on; the old one stays in the JWKS unless ``keep_old=False``."""
        self.key = SigningKey.generate()
        self._published = [*self._published, self.key] if keep_old else [self.key]
        return self.key.kid

    def mint(
        self,
        user: str,
        *,
        tenant: str | None = None,
        ttl: float = 300,
        client_id: str | None = None,
        audience: str | Sequence[str] | None = None,
        token_use: str = "access",  # noqa: S107 - a claim value, not a secret
        extra_claims: Mapping[str, Any] | None = None,
        kid: str | None = None,
    ) -> str:
        """A signed RS256 token for ``user`` from this issuer (see :func:`mint_token` for the arguments)."""
        return mint_token(
            self.key,
            issuer=self.issuer,
            user=user,
            tenant=tenant,
            ttl=ttl,
            client_id=client_id if client_id is not None else self.client_id,
            audience=audience,
            token_use=token_use,
            extra_claims=extra_claims,
            kid=kid,
        )

    # --- serving ------------------------------------------------------------------------------

    def start(self) -> Self:
        """Serve discovery and JWKS from a background thread (and record the URL in the data dir)."""
        if self._http is not None and not self._http.serving:
            self._http.start()
            self._write_state()
        return self

    def _write_state(self) -> None:
        if self.data_dir is not None:
            state_file(self.data_dir).write(
                {"issuer": self.issuer, "port": self.port, "kid": self.kid, "pid": os.getpid()}
            )

    def stop(self) -> None:
        if self._http is None:
            return
        was_serving = self._http.serving
        self._http.stop()
        if was_serving:
            self._forget_state()

    def _forget_state(self) -> None:
        if self.data_dir is not None:
            state_file(self.data_dir).clear()

    def serve_forever(self) -> None:
        """Serve in the foreground until SIGTERM/SIGINT."""
        if self._http is None:
            raise RuntimeError("this TokenIssuer was made with serve=False")
        self._write_state()
        try:
            serve_in_foreground(self._http.server)
        finally:
            self._forget_state()
