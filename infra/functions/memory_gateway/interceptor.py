"""The AgentCore Gateway's REQUEST interceptor: only a verified *user* token gets through, and the target gets it.

Runs for every MCP method (``initialize``, ``tools/list``, ``tools/call``), outside the VPC (it fetches the issuer's
keys). It verifies the bearer token with the identity contract (:class:`memory_adapter.identity.JwtVerifier`, the
checks the agent and Hindsight apply, configured by the same ``JWT_*`` variables), refuses machine-to-machine tokens
(they name a client, not a user), and forwards the request with the caller's token in
:data:`memory_adapter.gateway.CALLER_TOKEN_HEADER`, always overwritten (a client-sent value never survives). Every
other outcome, an exception included, is a 401 answered by the interceptor itself: fail closed, never a 500.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from memory_adapter.gateway import CALLER_TOKEN_HEADER
from memory_adapter.identity.errors import IdentityError, RejectReason, TokenRejectedError
from memory_adapter.identity.settings import ENV_NAMING, JwtSettings
from memory_adapter.identity.verifier import JwtVerifier, bearer_token
from memory_adapter.settings_fields import env_names

__all__ = ["InterceptorSettings", "handler", "intercept"]

logger = logging.getLogger("memory_gateway.interceptor")
logger.setLevel(logging.INFO)

VERSION: Final = "1.0"
_UNAUTHORIZED: Final = -32001
_verifier: JwtVerifier | None = None


@dataclass(frozen=True, slots=True)
class InterceptorSettings:
    """The interceptor's settings: only the token checks (``JWT_*``, the identity contract's names)."""

    jwt: JwtSettings

    def to_env(self) -> dict[str, str]:
        """The environment :meth:`from_env` reads back as these settings (what the stack gives the function)."""
        return self.jwt.to_env(ENV_NAMING)

    @classmethod
    def env_names(cls) -> tuple[str, ...]:
        """Every variable :meth:`from_env` reads."""
        return env_names(JwtSettings, ENV_NAMING)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> InterceptorSettings:
        """Read and check the ``JWT_*`` variables; raise ``IdentityConfigError`` listing every problem."""
        return cls(jwt=JwtSettings.from_mapping(env, ENV_NAMING))


def _default_verifier() -> JwtVerifier:
    global _verifier
    if _verifier is None:
        _verifier = JwtVerifier(InterceptorSettings.from_env(os.environ).jwt)
    return _verifier


def _deny(body: Any, reason: str) -> dict[str, Any]:
    if reason == RejectReason.KEYS_UNAVAILABLE.value:  # every caller is refused until the keys are readable again
        logger.error("gateway request refused: the issuer's signing keys are unavailable", extra={"reason": reason})
    else:
        logger.warning("gateway request refused", extra={"reason": reason})
    request_id = body.get("id") if isinstance(body, Mapping) else None
    return {
        "interceptorOutputVersion": VERSION,
        "mcp": {
            "transformedGatewayResponse": {
                "statusCode": 401,
                "headers": {"Content-Type": "application/json", "WWW-Authenticate": "Bearer"},
                "body": {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "error": {"code": _UNAUTHORIZED, "message": "unauthorized: a valid user token is required"},
                },
            }
        },
    }


def _authorization(headers: Mapping[str, Any]) -> str | None:
    values = [v for k, v in headers.items() if isinstance(k, str) and k.lower() == "authorization"]
    if len(values) != 1 or not isinstance(values[0], str):
        return None
    return values[0]


def _gateway_request(event: Any) -> Mapping[str, Any] | None:
    """``event["mcp"]["gatewayRequest"]`` if the event has that shape, else ``None``."""
    mcp = event.get("mcp") if isinstance(event, Mapping) else None
    request = mcp.get("gatewayRequest") if isinstance(mcp, Mapping) else None
    return request if isinstance(request, Mapping) else None


def intercept(event: Any, verifier: JwtVerifier) -> dict[str, Any]:
    """The interceptor's answer to ``event`` (a pure function of the event and the verifier; never raises)."""
    request = _gateway_request(event)
    if request is None:
        return _deny(None, "no gatewayRequest in the event")
    body = request.get("body")
    headers = request.get("headers")
    if not isinstance(headers, Mapping):
        return _deny(body, "no headers (is passRequestHeaders on?)")
    try:
        token = bearer_token(_authorization(headers))
        verifier.verify(token)  # a user's token only: machine tokens are refused there
    except TokenRejectedError as exc:
        return _deny(body, exc.reason.value)
    except IdentityError as exc:
        return _deny(body, type(exc).__name__)
    forwarded = {
        k: v for k, v in headers.items() if not (isinstance(k, str) and k.lower() == CALLER_TOKEN_HEADER.lower())
    }
    forwarded[CALLER_TOKEN_HEADER] = token
    return {
        "interceptorOutputVersion": VERSION,
        "mcp": {"transformedGatewayRequest": {"headers": forwarded, "body": body}},
    }


def handler(event: Any, context: Any) -> dict[str, Any]:
    """Lambda entry point: :func:`intercept` with this container's verifier; any failure is a 401."""
    try:
        return intercept(event, _default_verifier())
    except Exception:  # misconfiguration or a bug: refuse, never pass a request through unverified
        logger.exception("interceptor failed; refusing the request")
        request = _gateway_request(event)
        return _deny(request.get("body") if request is not None else None, RejectReason.KEYS_UNAVAILABLE.value)
