"""Configuration of the isolation extension: parsed once from the dict Hindsight's loader hands to ``__init__``.

Hindsight's extension loader (``hindsight_api/extensions/loader.py``) collects every ``HINDSIGHT_API_TENANT_*``
variable except ``..._EXTENSION``, strips the prefix and lowercases the rest, and passes the result to the tenant
extension's constructor. This module names those keys in one place (the ``KEY_*`` constants; the environment
variable is ``HINDSIGHT_API_TENANT_`` + the key upper-cased), parses them into a frozen dataclass, and reports every
problem in one error. Standard library only, so the stack and the local server manager can import
:func:`server_env` to build the environment without pulling in Hindsight or PyJWT.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ANY_TENANT",
    "DEFAULT_EXPIRY_GRACE_S",
    "ENV_ENABLE_DOCUMENT_IMPORT_API",
    "ENV_HTTP_EXTENSION",
    "ENV_LLM_TRACE_ENABLED",
    "ENV_OPERATION_VALIDATOR_EXTENSION",
    "ENV_TENANT_EXTENSION",
    "ENV_TENANT_PREFIX",
    "HTTP_EXTENSION_CLASS",
    "OPERATION_VALIDATOR_CLASS",
    "SERVER_REQUIRED_ENV",
    "TENANT_CLASS",
    "ConfigError",
    "IsolationSettings",
    "server_env",
]

#: Hindsight reads these three variables to load our classes.
ENV_TENANT_EXTENSION = "HINDSIGHT_API_TENANT_EXTENSION"
ENV_OPERATION_VALIDATOR_EXTENSION = "HINDSIGHT_API_OPERATION_VALIDATOR_EXTENSION"
ENV_HTTP_EXTENSION = "HINDSIGHT_API_HTTP_EXTENSION"
TENANT_CLASS = "hindsight_isolation.tenant:IsolationTenantExtension"
OPERATION_VALIDATOR_CLASS = "hindsight_isolation.validator:IsolationOperationValidator"
#: Puts the request guard (bad input, request kinds) in front of every route (hindsight_isolation/http_extension.py).
HTTP_EXTENSION_CLASS = "hindsight_isolation.http_extension:RequestGuardExtension"
#: Hindsight's switch for document import, bank restore and clone (``hindsight_api.config``).
ENV_ENABLE_DOCUMENT_IMPORT_API = "HINDSIGHT_API_ENABLE_DOCUMENT_IMPORT_API"
#: Hindsight's per-bank LLM request traces (on by default, kept a day): rows holding the prompts, with the user's
#: text, that a bank delete leaves behind (no foreign key to the bank), so a forgotten user would not be gone.
ENV_LLM_TRACE_ENABLED = "HINDSIGHT_API_LLM_TRACE_ENABLED"
#: What every server running the extension is started with, locally and deployed: the three slots, transfer
#: imports off while users are served (an operator restores with ``memory_adapter.admin.maintenance``; see
#: README.md), and no LLM request traces (forgetting a user must leave none of their text behind).
SERVER_REQUIRED_ENV: Mapping[str, str] = {
    ENV_TENANT_EXTENSION: TENANT_CLASS,
    ENV_OPERATION_VALIDATOR_EXTENSION: OPERATION_VALIDATOR_CLASS,
    ENV_HTTP_EXTENSION: HTTP_EXTENSION_CLASS,
    ENV_ENABLE_DOCUMENT_IMPORT_API: "false",
    ENV_LLM_TRACE_ENABLED: "false",
}

#: Every key below reaches us as ``ENV_TENANT_PREFIX + key.upper()``.
ENV_TENANT_PREFIX = "HINDSIGHT_API_TENANT_"

# Issuer (the same values the agent verifies with).
KEY_DISCOVERY_URL = "jwt_discovery_url"
KEY_ISSUER = "jwt_issuer"
KEY_JWKS_URL = "jwt_jwks_url"
KEY_STATIC_JWKS = "jwt_static_jwks"
KEY_ALLOWED_CLIENTS = "jwt_allowed_clients"
KEY_ALLOWED_AUDIENCE = "jwt_allowed_audience"
KEY_TOKEN_USE = "jwt_token_use"  # noqa: S105 - a setting name
KEY_USER_CLAIM = "jwt_user_claim"
KEY_TENANT_CLAIM = "jwt_tenant_claim"
KEY_ALGORITHMS = "jwt_algorithms"
KEY_LEEWAY_S = "jwt_leeway_s"
KEY_JWKS_CACHE_TTL_S = "jwt_jwks_cache_ttl_s"
# Re-delivery of spooled retains.
KEY_EXPIRY_GRACE_S = "expiry_grace_s"
# Credentials that are not user tokens.
KEY_OPERATOR_KEY = "operator_key"
KEY_AGENT_KEY = "agent_key"
KEY_AGENT_NAME = "agent_name"
KEY_AGENT_TENANT = "agent_tenant"
#: ``AGENT_TENANT`` value meaning "the agent's banks in every tenant" (IAM runtimes taking the tenant from a header).
ANY_TENANT = "*"
# Tuning.
KEY_TOKEN_CACHE_TTL_S = "token_cache_ttl_s"  # noqa: S105 - a setting name
KEY_TOKEN_CACHE_SIZE = "token_cache_size"  # noqa: S105 - a setting name
KEY_SCHEMA = "schema"

_KNOWN_KEYS = frozenset(value for name, value in dict(globals()).items() if name.startswith("KEY_"))

#: How long after ``exp`` a user token may still retain (and only retain) into its own banks, in seconds.
DEFAULT_EXPIRY_GRACE_S = 6 * 3600.0
#: Hard upper bound on the grace window: a day-old stolen token must not write anywhere.
MAX_EXPIRY_GRACE_S = 24 * 3600.0
#: Minimum length of the operator and agent keys: they are bearer secrets compared verbatim.
MIN_KEY_LENGTH = 32


class ConfigError(ValueError):
    """The extension's configuration is unusable; the message lists every problem."""


@dataclass(frozen=True, slots=True)
class IsolationSettings:
    """Everything the tenant extension needs, parsed and checked.

    ``verifier`` holds keyword arguments for ``memory_adapter.tokens.JwtVerifierConfig`` (that class is built by the
    authenticator, so this module stays free of PyJWT); empty when no issuer is configured (an IAM-only deployment:
    the agent key and the operator key authenticate, every user token is refused).
    """

    verifier: Mapping[str, Any]
    expiry_grace_s: float = DEFAULT_EXPIRY_GRACE_S
    operator_key: str | None = field(default=None, repr=False)
    agent_key: str | None = field(default=None, repr=False)
    agent_name: str | None = None
    agent_tenant: str | None = None
    token_cache_ttl_s: float = 60.0
    token_cache_size: int = 10_000
    schema: str | None = None

    @classmethod
    def from_config(cls, config: Mapping[str, str]) -> IsolationSettings:
        """Parse the loader's dict (keys lowercased, prefix stripped); raise :class:`ConfigError` with all problems."""
        errors: list[str] = []
        if "api_key" in config:
            errors.append(
                f"{ENV_TENANT_PREFIX}API_KEY is the stock single global key and is not accepted: a key that opens "
                f"every user's bank is what this extension removes; set {ENV_TENANT_PREFIX}OPERATOR_KEY for "
                f"administration (never give it to the agent)"
            )
        unknown = sorted(set(config) - _KNOWN_KEYS - {"api_key"})
        if unknown:
            errors.append("unknown settings: " + ", ".join(ENV_TENANT_PREFIX + k.upper() for k in unknown))

        def text(key: str) -> str | None:
            value = config.get(key, "").strip()
            return value or None

        def number(key: str, default: float) -> float:
            raw = text(key)
            if raw is None:
                return default
            try:
                value = float(raw)
            except ValueError:
                errors.append(f"{ENV_TENANT_PREFIX}{key.upper()} must be a number, got {raw!r}")
                return default
            if not math.isfinite(value) or value < 0:
                errors.append(f"{ENV_TENANT_PREFIX}{key.upper()} must be a finite number >= 0")
                return default
            return value

        def names(key: str) -> tuple[str, ...]:
            raw = text(key)
            return tuple(part.strip() for part in raw.split(",") if part.strip()) if raw else ()

        verifier: dict[str, Any] = {}
        for key, arg in (
            (KEY_DISCOVERY_URL, "discovery_url"),
            (KEY_ISSUER, "issuer"),
            (KEY_JWKS_URL, "jwks_url"),
            (KEY_TOKEN_USE, "token_use"),
            (KEY_USER_CLAIM, "user_claim"),
            (KEY_TENANT_CLAIM, "tenant_claim"),
        ):
            value = text(key)
            if value is not None:
                verifier[arg] = value
        static_jwks = text(KEY_STATIC_JWKS)
        if static_jwks is not None:
            try:
                document = json.loads(static_jwks)
            except json.JSONDecodeError:
                document = None
            if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
                errors.append(f"{ENV_TENANT_PREFIX}{KEY_STATIC_JWKS.upper()} must be a JWKS JSON object with 'keys'")
            else:
                verifier["static_jwks"] = document
        for key, arg in ((KEY_ALLOWED_CLIENTS, "allowed_clients"), (KEY_ALLOWED_AUDIENCE, "allowed_audience")):
            if names(key):
                verifier[arg] = names(key)
        if names(KEY_ALGORITHMS):
            verifier["algorithms"] = names(KEY_ALGORITHMS)
        if text(KEY_LEEWAY_S) is not None:
            verifier["leeway_s"] = number(KEY_LEEWAY_S, 30.0)
        if text(KEY_JWKS_CACHE_TTL_S) is not None:
            verifier["jwks_cache_ttl_s"] = number(KEY_JWKS_CACHE_TTL_S, 300.0)

        grace = number(KEY_EXPIRY_GRACE_S, DEFAULT_EXPIRY_GRACE_S)
        if grace > MAX_EXPIRY_GRACE_S:
            errors.append(f"{ENV_TENANT_PREFIX}{KEY_EXPIRY_GRACE_S.upper()} must be at most {MAX_EXPIRY_GRACE_S:.0f}")

        operator_key, agent_key = text(KEY_OPERATOR_KEY), text(KEY_AGENT_KEY)
        agent_name, agent_tenant = text(KEY_AGENT_NAME), text(KEY_AGENT_TENANT)
        for key, value in ((KEY_OPERATOR_KEY, operator_key), (KEY_AGENT_KEY, agent_key)):
            if value is not None and len(value) < MIN_KEY_LENGTH:
                errors.append(f"{ENV_TENANT_PREFIX}{key.upper()} must be at least {MIN_KEY_LENGTH} characters")
        if agent_key is not None and agent_name is None:
            errors.append(
                f"{ENV_TENANT_PREFIX}{KEY_AGENT_KEY.upper()} needs {ENV_TENANT_PREFIX}{KEY_AGENT_NAME.upper()}: "
                "the agent credential is limited to one agent's banks"
            )
        if agent_key is None and (agent_name is not None or agent_tenant is not None):
            errors.append(
                f"{KEY_AGENT_NAME.upper()}/{KEY_AGENT_TENANT.upper()} are set but {KEY_AGENT_KEY.upper()} is not"
            )
        if operator_key is not None and operator_key == agent_key:
            errors.append("the operator key and the agent key must differ")

        has_issuer = any(k in verifier for k in ("discovery_url", "issuer", "jwks_url", "static_jwks"))
        if not has_issuer and verifier:
            errors.append(
                f"token settings without an issuer: set {ENV_TENANT_PREFIX}{KEY_DISCOVERY_URL.upper()} (or "
                f"{KEY_ISSUER.upper()} with {KEY_JWKS_URL.upper()} or {KEY_STATIC_JWKS.upper()})"
            )
        if not has_issuer and operator_key is None and agent_key is None:
            errors.append(
                "nothing could ever authenticate: configure a token issuer "
                f"({ENV_TENANT_PREFIX}{KEY_DISCOVERY_URL.upper()} or {KEY_ISSUER.upper()}), "
                "an agent key or an operator key"
            )
        cache_size = number(KEY_TOKEN_CACHE_SIZE, 10_000)
        if errors:
            raise ConfigError("hindsight_isolation: invalid configuration: " + "; ".join(errors))
        return cls(
            verifier=verifier,
            expiry_grace_s=grace,
            operator_key=operator_key,
            agent_key=agent_key,
            agent_name=agent_name,
            agent_tenant=agent_tenant,
            token_cache_ttl_s=number(KEY_TOKEN_CACHE_TTL_S, 60.0),
            token_cache_size=int(cache_size),
            schema=text(KEY_SCHEMA),
        )


def server_env(
    *,
    discovery_url: str | None = None,
    issuer: str | None = None,
    jwks_url: str | None = None,
    allowed_clients: tuple[str, ...] = (),
    allowed_audience: tuple[str, ...] = (),
    tenant_claim: str | None = None,
    operator_key: str | None = None,
    agent_key: str | None = None,
    agent_name: str | None = None,
    agent_tenant: str | None = None,
    expiry_grace_s: float | None = None,
) -> dict[str, str]:
    """The environment that loads the extension's three slots with these settings (for local runs and tests).

    Secrets (``operator_key``, ``agent_key``) are included as given: in the stack they come from Secrets Manager
    through ECS secrets instead.
    """
    env = dict(SERVER_REQUIRED_ENV)
    values: dict[str, str | None] = {
        KEY_DISCOVERY_URL: discovery_url,
        KEY_ISSUER: issuer,
        KEY_JWKS_URL: jwks_url,
        KEY_ALLOWED_CLIENTS: ",".join(allowed_clients) or None,
        KEY_ALLOWED_AUDIENCE: ",".join(allowed_audience) or None,
        KEY_TENANT_CLAIM: tenant_claim,
        KEY_OPERATOR_KEY: operator_key,
        KEY_AGENT_KEY: agent_key,
        KEY_AGENT_NAME: agent_name,
        KEY_AGENT_TENANT: agent_tenant,
        KEY_EXPIRY_GRACE_S: None if expiry_grace_s is None else repr(float(expiry_grace_s)),
    }
    env.update({ENV_TENANT_PREFIX + key.upper(): value for key, value in values.items() if value is not None})
    return env
