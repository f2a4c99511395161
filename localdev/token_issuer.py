"""A local OpenID Connect token issuer for development and tests (stands in for Amazon Cognito).

It owns an RSA signing key (``kid``), serves ``/.well-known/openid-configuration`` and its JWKS on
127.0.0.1, and mints RS256 tokens shaped like Cognito access tokens (``iss``, ``sub``, ``client_id``,
``token_use``, ``exp``, ``iat``, optionally ``aud`` and the tenant claim ``custom:tenant``).

From Python (the ``token_issuer`` pytest fixture is one of these)::

    with TokenIssuer() as issuer:
        token = issuer.mint("user-alex", tenant="acme")
        verifier_config = JwtVerifierConfig(discovery_url=issuer.discovery_url, allowed_clients=(LOCAL_CLIENT_ID,))

By hand, for calling the local agent with curl (the key and the issuer URL persist in the data dir,
``.local/token-issuer`` by default, so a separate ``mint`` process signs tokens the server accepts)::

    python -m localdev.token_issuer start          # serves on 127.0.0.1:8890 in the background
    python -m localdev.token_issuer mint --user user-alex [--tenant acme] [--ttl 3600]
    python -m localdev.token_issuer stop

Never use it outside local development: anyone with the data dir can mint any identity.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from localdev._serving import BackgroundHTTPServer, Lifecycle, serve_in_foreground
from localdev.supervisor import REPO_ROOT, StartError, StateFile, child_env, spawn, terminate, wait_until_ready
from localdev.supervisor import stop_when_gone as _stop_when_gone

__all__ = [
    "DEFAULT_PORT",
    "LOCAL_CLIENT_ID",
    "TENANT_CLAIM",
    "SigningKey",
    "TokenIssuer",
    "load_or_create_key",
    "mint_token",
    "running_issuer_url",
]

DEFAULT_DATA_DIR = REPO_ROOT / ".local" / "token-issuer"
DEFAULT_PORT = 8890
LOCAL_CLIENT_ID = "local-agent-client"
TENANT_CLAIM = "custom:tenant"
ENV_DATA_DIR = "LOCAL_ISSUER_DATA_DIR"
ENV_PORT = "LOCAL_ISSUER_PORT"
_KEY_FILE = "signing-key.pem"
_STATE_FILE = "issuer.json"


class SigningKey:
    """An RSA private key and the ``kid`` it is published under."""

    def __init__(self, private_key: rsa.RSAPrivateKey, kid: str) -> None:
        self.private_key = private_key
        self.kid = kid

    @classmethod
    def generate(cls) -> SigningKey:
        return cls(rsa.generate_private_key(public_exponent=65537, key_size=2048), f"local-{uuid.uuid4().hex[:12]}")

    def public_jwk(self) -> dict[str, Any]:
        jwk: dict[str, Any] = json.loads(RSAAlgorithm.to_jwk(self.private_key.public_key()))
        jwk.update({"kid": self.kid, "alg": "RS256", "use": "sig"})
        return jwk

    def to_pem(self) -> bytes:
        return self.private_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )


def load_or_create_key(data_dir: Path) -> SigningKey:
    """The key persisted in ``data_dir`` (created, mode 0600, on first use), so separate processes agree."""
    data_dir.mkdir(parents=True, exist_ok=True)
    key_path = data_dir / _KEY_FILE
    kid_path = data_dir / "kid"
    if key_path.exists() and kid_path.exists():
        private = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
        if not isinstance(private, rsa.RSAPrivateKey):
            raise ValueError(f"{key_path} does not hold an RSA key")
        return SigningKey(private, kid_path.read_text().strip())
    key = SigningKey.generate()
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(key.to_pem())
    kid_path.write_text(key.kid)
    return key


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
        state = _state(data_dir).read()
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
            _state(self.data_dir).write({"issuer": self.issuer, "port": self.port, "kid": self.kid, "pid": os.getpid()})

    def stop(self) -> None:
        if self._http is None:
            return
        was_serving = self._http.serving
        self._http.stop()
        if was_serving:
            self._forget_state()

    def _forget_state(self) -> None:
        if self.data_dir is not None:
            _state(self.data_dir).clear()

    def serve_forever(self) -> None:
        """Serve in the foreground until SIGTERM/SIGINT."""
        if self._http is None:
            raise RuntimeError("this TokenIssuer was made with serve=False")
        self._write_state()
        try:
            serve_in_foreground(self._http.server)
        finally:
            self._forget_state()


# --- minting without a server (the CLI) ------------------------------------------------------------


def _state(data_dir: Path) -> StateFile:
    """What the serving process records about itself (its pid, port and ``iss``)."""
    return StateFile(data_dir / _STATE_FILE)


def default_data_dir() -> Path:
    """``LOCAL_ISSUER_DATA_DIR`` or ``<repo>/.local/token-issuer``."""
    return Path(os.environ.get(ENV_DATA_DIR) or DEFAULT_DATA_DIR)


def default_port() -> int:
    """``LOCAL_ISSUER_PORT`` or 8890."""
    return int(os.environ.get(ENV_PORT) or DEFAULT_PORT)


def default_issuer_url() -> str:
    """The ``iss`` (and discovery base) of the background issuer: ``http://127.0.0.1:<default_port()>``."""
    return f"http://127.0.0.1:{default_port()}"


def running_issuer_url(data_dir: Path | None = None) -> str:
    """The ``iss`` of the background issuer of ``data_dir`` if one runs (whatever port it was started on), else
    :func:`default_issuer_url`: what a server that trusts the local issuer must be configured with."""
    return _running_issuer(default_data_dir() if data_dir is None else data_dir) or default_issuer_url()


def _running_issuer(data_dir: Path) -> str | None:
    state = _state(data_dir)
    issuer = state.read().get("issuer")
    return str(issuer) if issuer and state.live_pid() else None


def ensure_running(data_dir: Path | None = None, *, port: int | None = None, client_id: str = LOCAL_CLIENT_ID) -> str:
    """Start ``serve`` as a background process for ``data_dir`` unless one runs already; return the issuer URL."""
    data_dir = default_data_dir() if data_dir is None else data_dir
    port = default_port() if port is None else port
    running = _running_issuer(data_dir)
    if running:
        return running
    state = _state(data_dir)
    state.clear()  # stale: its process is gone
    log_file = data_dir / "issuer.log"
    cmd = [sys.executable, "-m", "localdev.token_issuer", "serve", "--data-dir", str(data_dir)]
    pid = spawn(
        [*cmd, "--port", str(port), "--client-id", client_id], log_file=log_file, env=child_env(), cwd=REPO_ROOT
    )
    try:  # the serving process records its URL once it listens
        wait_until_ready(
            lambda: bool(state.read().get("issuer")),
            name="the token issuer",
            pid=pid,
            log_file=log_file,
            timeout_s=10.0,
            poll_s=0.05,
        )
    except StartError:
        terminate(pid, grace_s=5.0)
        raise
    return str(state.read()["issuer"])


def stop_background(data_dir: Path | None = None) -> bool:
    """Stop the background issuer of ``data_dir`` (SIGTERM, then SIGKILL); False when none was running."""
    return terminate(_state(default_data_dir() if data_dir is None else data_dir).live_pid(), grace_s=5.0)


def stop_when_gone(data_dir: Path | None = None, *, owner_pid: int | None = None) -> None:
    """Stop the background issuer of ``data_dir`` once ``owner_pid`` (default: this process) has died."""
    data_dir = default_data_dir() if data_dir is None else data_dir
    _stop_when_gone(
        [sys.executable, "-m", "localdev.token_issuer", "stop", "--data-dir", str(data_dir)],
        while_exists=data_dir / _STATE_FILE,
        log_file=data_dir / "watchdog.log",
        owner_pid=owner_pid,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m localdev.token_issuer", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["serve", "start", "stop", "status", "mint"])
    parser.add_argument("--data-dir", type=Path, default=default_data_dir())
    parser.add_argument("--port", type=int, default=default_port())
    parser.add_argument("--user", help="mint: the sub claim, e.g. user-alex")
    parser.add_argument("--tenant", help="mint: the custom:tenant claim")
    parser.add_argument("--ttl", type=float, default=3600, help="mint: seconds until exp (default 3600)")
    parser.add_argument("--client-id", default=LOCAL_CLIENT_ID)
    parser.add_argument("--token-use", default="access", choices=["access", "id"])
    args = parser.parse_args(argv)
    data_dir: Path = args.data_dir
    state = _state(data_dir).read()
    running = _state(data_dir).live_pid() is not None

    if args.command == "serve":
        issuer = TokenIssuer(data_dir, port=args.port, client_id=args.client_id)
        print(f"token issuer: {issuer.discovery_url}", flush=True)
        issuer.serve_forever()
        return 0
    if args.command == "start":
        if running:
            print(f"token issuer already running: {state['issuer']}/.well-known/openid-configuration")
            return 0
        try:
            issuer_url = ensure_running(data_dir, port=args.port, client_id=args.client_id)
        except RuntimeError as err:
            print(err, file=sys.stderr)
            return 1
        print(f"token issuer: {issuer_url}/.well-known/openid-configuration")
        return 0
    if args.command == "stop":
        print("token issuer stopped" if stop_background(data_dir) else "token issuer is not running")
        return 0
    if args.command == "status":
        print(json.dumps({"running": running, **state}, indent=2))
        return 0 if running else 3
    if not args.user:
        parser.error("mint needs --user")
    issuer_url = state.get("issuer") or f"http://127.0.0.1:{args.port}"
    key = load_or_create_key(data_dir)
    token = mint_token(
        key,
        issuer=issuer_url,
        user=args.user,
        tenant=args.tenant,
        ttl=args.ttl,
        client_id=args.client_id,
        token_use=args.token_use,
    )
    print(token)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
