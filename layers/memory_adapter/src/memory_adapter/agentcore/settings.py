"""The memory wiring's configuration: who may call the agent, which bank is theirs, how long ``/ping`` stays busy.

Environment variables only (that is how AgentCore Runtime passes configuration), read once through the shared
:class:`~memory_adapter.settings_reader.SettingsReader`: the wiring's own variables (named here, ``ENV_*``), the
identity contract's ``JWT_*`` (:class:`~memory_adapter.identity.JwtSettings` under :data:`JWT_ENV`) and the memory
adapter's (``HINDSIGHT_API_URL``, ``HINDSIGHT_API_KEY``, ``HINDSIGHT_ADAPTER_*``). The reference agent
(``runtime_handler.settings.Settings``) extends these settings with its model's; an agent you bring reads them as
they are (:meth:`AgentMemorySettings.from_env`), so both are configured, deployed and checked the same way.
Standard library (and ``memory_adapter``'s light modules) only: the CDK app imports the ``ENV_*`` names.

Example:
    >>> settings = AgentMemorySettings.from_env({"AGENT_NAME": "support", "HINDSIGHT_API_URL": "http://127.0.0.1:8888",
    ...                                          "AUTH_MODE": "iam", "TENANT_ID": "acme"})
    >>> settings.auth_mode
    <IdentitySource.IAM: 'iam'>
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from memory_adapter.agentcore.payload import DEFAULT_MAX_PROMPT_CHARS, MAX_MAX_PROMPT_CHARS, max_body_bytes
from memory_adapter.config import ENV_VARS as ADAPTER_ENV_VARS
from memory_adapter.config import HindsightAgentCoreConfig, read_settings
from memory_adapter.constants import (
    CA_BUNDLE_ENV,
    HINDSIGHT_API_KEY_ENV,
    HINDSIGHT_API_KEY_SECRET_ARN_ENV,
    HINDSIGHT_API_TOKEN_ENV,
    HINDSIGHT_API_URL_ENV,
)
from memory_adapter.exceptions import ConfigurationError
from memory_adapter.identity.settings import ENV_NAMING as JWT_ENV  # JWT_ + the field, seconds spelled out
from memory_adapter.identity.settings import JwtSettings
from memory_adapter.settings_reader import SettingsReader, env_dict

__all__ = [
    "CUSTOM_HEADER_PREFIX",
    "ENV_AGENT_NAME",
    "ENV_ALLOW_ANONYMOUS",
    "ENV_AUTH_MODE",
    "ENV_HINDSIGHT_API_KEY",
    "ENV_HINDSIGHT_API_KEY_SECRET_ARN",
    "ENV_HINDSIGHT_API_URL",
    "ENV_HINDSIGHT_CA_BUNDLE",
    "ENV_JWT_ALGORITHMS",
    "ENV_JWT_ALLOWED_AUDIENCE",
    "ENV_JWT_ALLOWED_CLIENTS",
    "ENV_JWT_DISCOVERY_URL",
    "ENV_JWT_ISSUER",
    "ENV_JWT_JWKS_PARAMETER",
    "ENV_JWT_LEEWAY_SECONDS",
    "ENV_JWT_MAX_TOKEN_BYTES",
    "ENV_JWT_TENANT_CLAIM",
    "ENV_JWT_TOKEN_USE",
    "ENV_JWT_USER_CLAIM",
    "ENV_MAX_PROMPT_CHARS",
    "ENV_MEMORY_RETAIN_WAIT_SECONDS",
    "ENV_TENANT_HEADER",
    "ENV_TENANT_ID",
    "JWT_ENV",
    "WIRING_ENV_VARS",
    "AgentMemorySettings",
    "IdentitySource",
    "SettingsError",
]

ENV_AGENT_NAME = "AGENT_NAME"
ENV_HINDSIGHT_API_URL = HINDSIGHT_API_URL_ENV  # read by the memory adapter's settings
ENV_HINDSIGHT_API_KEY = HINDSIGHT_API_KEY_ENV  # read by the memory adapter's settings
ENV_HINDSIGHT_API_KEY_SECRET_ARN = HINDSIGHT_API_KEY_SECRET_ARN_ENV  # the replay function reads it too
ENV_HINDSIGHT_CA_BUNDLE = CA_BUNDLE_ENV  # read by memory_adapter.tls (every HTTPS client of Hindsight)
ENV_AUTH_MODE = "AUTH_MODE"
ENV_JWT_DISCOVERY_URL = JWT_ENV.key("discovery_url")
ENV_JWT_ISSUER = JWT_ENV.key("issuer")
ENV_JWT_JWKS_PARAMETER = JWT_ENV.key("jwks_parameter")
ENV_JWT_ALLOWED_CLIENTS = JWT_ENV.key("allowed_clients")
ENV_JWT_ALLOWED_AUDIENCE = JWT_ENV.key("allowed_audience")
ENV_JWT_TOKEN_USE = JWT_ENV.key("token_use")
ENV_JWT_USER_CLAIM = JWT_ENV.key("user_claim")
ENV_JWT_TENANT_CLAIM = JWT_ENV.key("tenant_claim")
ENV_JWT_ALGORITHMS = JWT_ENV.key("algorithms")
ENV_JWT_LEEWAY_SECONDS = JWT_ENV.key("leeway_s")
ENV_JWT_MAX_TOKEN_BYTES = JWT_ENV.key("max_token_bytes")
ENV_TENANT_ID = "TENANT_ID"
ENV_TENANT_HEADER = "TENANT_HEADER"
ENV_ALLOW_ANONYMOUS = "ALLOW_ANONYMOUS"
ENV_MEMORY_RETAIN_WAIT_SECONDS = "MEMORY_RETAIN_WAIT_SECONDS"
ENV_MAX_PROMPT_CHARS = "MAX_PROMPT_CHARS"

_JWT_VARS = JwtSettings.setting_keys(JWT_ENV)
#: Every variable :meth:`AgentMemorySettings.from_env` reads: the ``ENV_*`` names, every ``JWT_*`` setting and the
#: memory adapter's.
WIRING_ENV_VARS: tuple[str, ...] = tuple(
    dict.fromkeys(
        [
            *(value for name, value in dict(globals()).items() if name.startswith("ENV_") and isinstance(value, str)),
            *sorted(_JWT_VARS),
            HINDSIGHT_API_TOKEN_ENV,
            *ADAPTER_ENV_VARS.values(),
        ]
    )
)

#: Seconds ``/ping`` reports busy while retains are pending (``MEMORY_RETAIN_WAIT_SECONDS``).
DEFAULT_RETAIN_WAIT_S = 30.0

#: AgentCore forwards custom headers only under this prefix, and only when allowlisted on the runtime.
CUSTOM_HEADER_PREFIX = "X-Amzn-Bedrock-AgentCore-Runtime-Custom-"

_AGENT_NAME = re.compile(r"[A-Za-z0-9._@-]{1,128}")
_HEADER_NAME = re.compile(r"[A-Za-z0-9-]{1,200}")


class IdentitySource(StrEnum):
    """Where the caller's identity comes from (``AUTH_MODE``): a verified bearer token, or the IAM caller's runtime
    user id header."""

    JWT = "jwt"
    IAM = "iam"


class SettingsError(ConfigurationError, ValueError):
    """The environment does not describe a usable agent; ``problems`` lists every reason."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(problems, subject="agent")


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentMemorySettings:
    """Typed, validated configuration of an agent's memory wiring. Build it with :meth:`from_env`.

    ``memory`` are the memory adapter's settings (URL, key, ``HINDSIGHT_ADAPTER_*``), handed to it as they are;
    ``jwt`` the token checks (``AUTH_MODE=jwt`` only).
    """

    agent_name: str
    auth_mode: IdentitySource
    memory: HindsightAgentCoreConfig
    jwt: JwtSettings | None = None
    hindsight_api_key_secret_arn: str | None = None
    tenant_id: str | None = None
    tenant_header: str | None = None
    allow_anonymous: bool = False
    retain_wait_s: float = DEFAULT_RETAIN_WAIT_S
    max_prompt_chars: int = DEFAULT_MAX_PROMPT_CHARS

    @property
    def hindsight_api_url(self) -> str:
        """Hindsight's base URL (``HINDSIGHT_API_URL``, without a trailing slash)."""
        return self.memory.hindsight_api_url

    @property
    def hindsight_api_key(self) -> str | None:
        """The per-deployment key given as plain text (``HINDSIGHT_API_KEY``; IAM mode and local runs only)."""
        return self.memory.api_key

    @property
    def recall_timeout_s(self) -> float:
        """The recall deadline: the adapter's ``recall_timeout`` (``HINDSIGHT_ADAPTER_RECALL_TIMEOUT``)."""
        return self.memory.recall_timeout

    @property
    def max_body_bytes(self) -> int:
        """Largest ``/invocations`` body read (follows from ``max_prompt_chars``: ``payload.max_body_bytes``)."""
        return max_body_bytes(self.max_prompt_chars)

    def to_env(self) -> dict[str, str]:
        """The environment :meth:`from_env` reads back as these settings (what the stack and ``make dev`` give the
        agent): required and security-relevant settings always, the others only where they differ from their
        default (each default is stated once, in its declaration)."""
        retain_wait = None if self.retain_wait_s == DEFAULT_RETAIN_WAIT_S else self.retain_wait_s
        max_prompt = None if self.max_prompt_chars == DEFAULT_MAX_PROMPT_CHARS else self.max_prompt_chars
        return {
            **env_dict({ENV_AGENT_NAME: self.agent_name}),
            **self.memory.to_env(),
            **env_dict(
                {
                    ENV_ALLOW_ANONYMOUS: self.allow_anonymous,
                    ENV_AUTH_MODE: self.auth_mode,
                    ENV_HINDSIGHT_API_KEY_SECRET_ARN: self.hindsight_api_key_secret_arn,
                    ENV_TENANT_ID: self.tenant_id,
                    ENV_TENANT_HEADER: self.tenant_header,
                    ENV_MEMORY_RETAIN_WAIT_SECONDS: retain_wait,
                    ENV_MAX_PROMPT_CHARS: max_prompt,
                }
            ),
            **(self.jwt.to_env(JWT_ENV) if self.jwt is not None else {}),
        }

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> AgentMemorySettings:
        """Parse and validate ``env``; raise :class:`SettingsError` naming every problem at once."""
        get = SettingsReader(env, JWT_ENV)
        fields = cls.read_fields(get)
        if get.problems:
            raise SettingsError(get.problems)
        return cls(**fields)

    @staticmethod
    def read_fields(get: SettingsReader) -> dict[str, Any]:
        """Read this class's fields from ``get``, whose ``problems`` collect what is wrong (for subclasses that read
        their own settings in the same pass: every problem is still reported at once). Valid only without problems."""
        agent_name = get.text(ENV_AGENT_NAME)
        if agent_name is None:
            get.problem(f"{ENV_AGENT_NAME} is required (it names the agent in memory bank ids)")
        elif not _AGENT_NAME.fullmatch(agent_name):
            get.problem(f"{ENV_AGENT_NAME} must be 1-128 characters from A-Z a-z 0-9 . _ @ -")

        mode = get.choice(ENV_AUTH_MODE, IdentitySource, default=None)
        if mode is None and not get.given(ENV_AUTH_MODE):
            get.problem(f"{ENV_AUTH_MODE} is required: 'jwt' (verified bearer token) or 'iam' (runtime user id)")

        memory = read_settings(get, {})
        secret_arn = get.text(ENV_HINDSIGHT_API_KEY_SECRET_ARN)
        if memory.api_key and secret_arn:
            get.problem(f"set {ENV_HINDSIGHT_API_KEY} or {ENV_HINDSIGHT_API_KEY_SECRET_ARN}, not both")
        if secret_arn and not secret_arn.startswith("arn:"):
            get.problem(f"{ENV_HINDSIGHT_API_KEY_SECRET_ARN} must be a Secrets Manager ARN")

        tenant_id = get.text(ENV_TENANT_ID)
        tenant_header = get.text(ENV_TENANT_HEADER)
        jwt: JwtSettings | None = None
        if mode is IdentitySource.JWT:
            jwt = JwtSettings.read(get)
            if tenant_id or tenant_header:
                get.problem(
                    f"{ENV_TENANT_ID}/{ENV_TENANT_HEADER} apply to {ENV_AUTH_MODE}=iam only; with jwt the tenant "
                    f"comes from the verified token ({ENV_JWT_TENANT_CLAIM})"
                )
            if memory.api_key or secret_arn:
                get.problem(
                    f"{ENV_AUTH_MODE}=jwt sends each caller's own token to Hindsight: do not give the agent a "
                    f"Hindsight key ({ENV_HINDSIGHT_API_KEY}/{ENV_HINDSIGHT_API_KEY_SECRET_ARN})"
                )
        elif mode is IdentitySource.IAM:
            if any(get.given(name) for name in _JWT_VARS):
                get.problem(f"JWT_* settings apply to {ENV_AUTH_MODE}=jwt only")
            if tenant_id and tenant_header:
                get.problem(f"set {ENV_TENANT_ID} or {ENV_TENANT_HEADER}, not both")
            if tenant_header is not None and not (
                tenant_header.lower().startswith(CUSTOM_HEADER_PREFIX.lower())
                and _HEADER_NAME.fullmatch(tenant_header)
                and len(tenant_header) > len(CUSTOM_HEADER_PREFIX)
            ):
                get.problem(f"{ENV_TENANT_HEADER} must be an allowlisted header named {CUSTOM_HEADER_PREFIX}<Name>")

        retain_wait = get.number(ENV_MEMORY_RETAIN_WAIT_SECONDS, DEFAULT_RETAIN_WAIT_S, low=0.1, high=900.0)
        allow_anonymous = get.flag(ENV_ALLOW_ANONYMOUS)
        max_prompt = get.integer(ENV_MAX_PROMPT_CHARS, DEFAULT_MAX_PROMPT_CHARS, low=1, high=MAX_MAX_PROMPT_CHARS)
        return {
            "agent_name": agent_name,
            "auth_mode": mode,
            "memory": memory,
            "jwt": jwt,
            "hindsight_api_key_secret_arn": secret_arn,
            "tenant_id": tenant_id,
            "tenant_header": tenant_header,
            "allow_anonymous": allow_anonymous,
            "retain_wait_s": retain_wait,
            "max_prompt_chars": max_prompt,
        }
