"""The memory wiring's configuration: who may call the agent, which bank is theirs, how long ``/ping`` stays busy.

Environment variables only (that is how AgentCore Runtime passes configuration), read once: the wiring's own
settings, each a field naming its variable (:func:`~memory_adapter.settings_fields.setting`), the identity contract's
``JWT_*`` (:class:`~memory_adapter.identity.JwtSettings` under its ``ENV_NAMING``) and the memory adapter's
(``HINDSIGHT_API_URL``, ``HINDSIGHT_API_KEY``, ``HINDSIGHT_ADAPTER_*``). The reference agent
(``runtime_handler.settings.Settings``) extends these settings with its model's; an agent you bring reads them as
they are (:meth:`AgentMemorySettings.from_env`), so both are configured, deployed and checked the same way.
Standard library (and ``memory_adapter``'s light modules) only: the CDK app builds these settings to write the
agent's environment (:meth:`AgentMemorySettings.to_env`).

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
from typing import Any, Final

from memory_adapter.agentcore.payload import DEFAULT_MAX_PROMPT_CHARS, MAX_MAX_PROMPT_CHARS, max_body_bytes
from memory_adapter.config import HindsightAgentCoreConfig, read_settings
from memory_adapter.constants import (
    HINDSIGHT_API_KEY_ENV,
    HINDSIGHT_API_KEY_SECRET_ARN_ENV,
)
from memory_adapter.exceptions import ConfigurationError
from memory_adapter.identity.settings import ENV_NAMING, JwtSettings
from memory_adapter.settings_fields import (
    HindsightClientSettings,
    env_name,
    env_names,
    env_of,
    read_declared,
    same_setting,
    secret_arn,
    setting,
)
from memory_adapter.settings_reader import SettingsReader

__all__ = ["CUSTOM_HEADER_PREFIX", "AgentMemorySettings", "IdentitySource", "SettingsError"]

#: AgentCore forwards custom headers only under this prefix, and only when allowlisted on the runtime.
CUSTOM_HEADER_PREFIX: Final = "X-Amzn-Bedrock-AgentCore-Runtime-Custom-"

_AGENT_NAME = re.compile(r"[A-Za-z0-9._@-]{1,128}")
_HEADER_NAME = re.compile(r"[A-Za-z0-9-]{1,200}")
_JWT_VARS: Final = env_names(JwtSettings, ENV_NAMING)


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
    ``jwt`` the token checks (``AUTH_MODE=jwt`` only); every other field is one variable.
    """

    agent_name: str = setting("AGENT_NAME", required="it names the agent in memory bank ids")
    auth_mode: IdentitySource = setting(
        "AUTH_MODE", kind=IdentitySource, required="'jwt' (verified bearer token) or 'iam' (runtime user id)"
    )
    memory: HindsightAgentCoreConfig
    jwt: JwtSettings | None = None
    hindsight_api_key_secret_arn: str | None = setting(HINDSIGHT_API_KEY_SECRET_ARN_ENV, parse=secret_arn)
    ca_bundle: str | None = same_setting(HindsightClientSettings, "ca_bundle")
    """The private CA's certificates every HTTPS client of Hindsight trusts besides the default store (read by
    :mod:`memory_adapter.tls`)."""
    tenant_id: str | None = setting("TENANT_ID")
    tenant_header: str | None = setting("TENANT_HEADER")
    allow_anonymous: bool = setting("ALLOW_ANONYMOUS", False, always=True)
    retain_wait_s: float = setting("MEMORY_RETAIN_WAIT_SECONDS", 30.0, low=0.1, high=900.0)
    """Seconds ``/ping`` reports busy while retains are pending."""
    max_prompt_chars: int = setting("MAX_PROMPT_CHARS", DEFAULT_MAX_PROMPT_CHARS, low=1, high=MAX_MAX_PROMPT_CHARS)

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

    @classmethod
    def env_names(cls) -> tuple[str, ...]:
        """Every variable :meth:`from_env` reads: the declared fields', the memory adapter's and the token checks'."""
        return (*env_names(cls), *env_names(HindsightAgentCoreConfig), *_JWT_VARS)

    def to_env(self) -> dict[str, str]:
        """The environment :meth:`from_env` reads back as these settings (what the stack and ``make local`` give the
        agent): the declared fields (required and security-relevant ones always, the others where they differ from
        their default), the memory adapter's and the token checks'."""
        return {
            **env_of(self),
            **self.memory.to_env(),
            **(self.jwt.to_env(ENV_NAMING) if self.jwt is not None else {}),
        }

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> AgentMemorySettings:
        """Parse and validate ``env``; raise :class:`SettingsError` naming every problem at once."""
        get = SettingsReader(env, ENV_NAMING)
        fields = cls.read_fields(get)
        if get.problems:
            raise SettingsError(get.problems)
        return cls(**fields)

    @classmethod
    def read_fields(cls, get: SettingsReader) -> dict[str, Any]:
        """Read every field of ``cls`` from ``get``, whose ``problems`` collect what is wrong (subclasses add their
        own rules in the same pass: every problem is still reported at once). Valid only without problems."""
        values = read_declared(cls, get)
        agent, mode = env_name(cls, "agent_name"), env_name(cls, "auth_mode")
        tenant_id_env, tenant_header_env = env_name(cls, "tenant_id"), env_name(cls, "tenant_header")
        if values["agent_name"] is not None and not _AGENT_NAME.fullmatch(values["agent_name"]):
            get.problem(f"{agent} must be 1-128 characters from A-Z a-z 0-9 . _ @ -")
        memory = values["memory"] = read_settings(get, {})
        key_arn = values["hindsight_api_key_secret_arn"]
        if memory.api_key and key_arn:
            get.problem(f"set {HINDSIGHT_API_KEY_ENV} or {HINDSIGHT_API_KEY_SECRET_ARN_ENV}, not both")
        tenant_id, tenant_header = values["tenant_id"], values["tenant_header"]
        values["jwt"] = None
        if values["auth_mode"] is IdentitySource.JWT:
            values["jwt"] = JwtSettings.read(get)
            if tenant_id or tenant_header:
                get.problem(
                    f"{tenant_id_env}/{tenant_header_env} apply to {mode}=iam only; with jwt the tenant "
                    f"comes from the verified token ({ENV_NAMING.key('tenant_claim')})"
                )
            if memory.api_key or key_arn:
                get.problem(
                    f"{mode}=jwt sends each caller's own token to Hindsight: do not give the agent a "
                    f"Hindsight key ({HINDSIGHT_API_KEY_ENV}/{HINDSIGHT_API_KEY_SECRET_ARN_ENV})"
                )
        elif values["auth_mode"] is IdentitySource.IAM:
            if any(get.given(name) for name in _JWT_VARS):
                get.problem(f"JWT_* settings apply to {mode}=jwt only")
            if tenant_id and tenant_header:
                get.problem(f"set {tenant_id_env} or {tenant_header_env}, not both")
            if tenant_header is not None and not (
                tenant_header.lower().startswith(CUSTOM_HEADER_PREFIX.lower())
                and _HEADER_NAME.fullmatch(tenant_header)
                and len(tenant_header) > len(CUSTOM_HEADER_PREFIX)
            ):
                get.problem(f"{tenant_header_env} must be an allowlisted header named {CUSTOM_HEADER_PREFIX}<Name>")
        return values
