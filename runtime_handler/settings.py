"""The agent's configuration: environment variables only (that is how AgentCore Runtime passes it), parsed once.

The memory wiring's settings (:class:`~memory_adapter.agentcore.settings.AgentMemorySettings`: ``AGENT_NAME``,
``AUTH_MODE``, the identity contract's ``JWT_*``, the memory adapter's ``HINDSIGHT_*``; the same an agent you bring
reads) plus this agent's model, working memory and memory tools, each a field naming its variable, default and bounds
(:func:`~memory_adapter.settings_fields.setting`): reading (:meth:`Settings.from_env`), writing (``to_env``) and the
variable list (``env_names``) follow from the fields. :meth:`Settings.from_env` accepts any mapping (tests pass
dicts) and reports every problem in a single :class:`SettingsError`. Standard library (and ``memory_adapter``'s
light modules) only, so the CDK stack builds these settings to write the runtime's environment.

Example:
    >>> settings = Settings.from_env({"AGENT_NAME": "support", "HINDSIGHT_API_URL": "http://127.0.0.1:8888",
    ...                                "AUTH_MODE": "iam", "MODEL_PROVIDER": "echo"})
    >>> settings.auth_mode
    <IdentitySource.IAM: 'iam'>
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from memory_adapter.agentcore.settings import AgentMemorySettings, IdentitySource, SettingsError
from memory_adapter.identity.settings import ENV_NAMING
from memory_adapter.settings_fields import env_name, setting
from memory_adapter.settings_reader import SettingsReader
from runtime_handler.working_memory import DEFAULT_LIMITS, WorkingMemoryLimits

__all__ = ["ModelProvider", "Settings"]

_TARGET_NAME = re.compile(r"([0-9A-Za-z]-?){1,100}")
_SSM_NAME = re.compile(r"/[A-Za-z0-9_./-]{1,1000}")
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def _secure_url(url: str) -> bool:
    """https, or http to this machine (local runs): the caller's token travels to this URL."""
    parts = urllib.parse.urlsplit(url)
    return parts.scheme == "https" or (parts.scheme == "http" and parts.hostname in _LOOPBACK)


#: How many tool-use rounds the model may take in one turn (``MEMORY_TOOL_ROUNDS``).
DEFAULT_TOOL_ROUNDS: Final = 4


class ModelProvider(StrEnum):
    """Which model answers: Amazon Bedrock (Converse), or a deterministic local stand-in."""

    BEDROCK = "bedrock"
    ECHO = "echo"


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings(AgentMemorySettings):
    """Typed, validated configuration: the memory wiring's (:class:`AgentMemorySettings`, shared with any agent you
    bring, the payload limit included) plus the reference agent's model, working memory and memory tools. Build it with
    :meth:`from_env`; pass it down."""

    model_provider: ModelProvider = setting("MODEL_PROVIDER", ModelProvider.BEDROCK, always=True)
    model_id: str | None = setting("MODEL_ID")
    model_max_tokens: int = setting("MODEL_MAX_TOKENS", 1024, low=1, high=64000)
    working_memory_max_turns: int = setting("WORKING_MEMORY_MAX_TURNS", DEFAULT_LIMITS.max_turns, low=0, high=200)
    working_memory_max_chars: int = setting(
        "WORKING_MEMORY_MAX_CHARS", DEFAULT_LIMITS.max_chars, low=1_000, high=1_000_000
    )
    working_memory_max_sessions: int = setting(
        "WORKING_MEMORY_MAX_SESSIONS", DEFAULT_LIMITS.max_sessions, low=1, high=100_000
    )
    memory_tools: bool = setting("MEMORY_TOOLS", True)
    tool_rounds: int = setting("MEMORY_TOOL_ROUNDS", DEFAULT_TOOL_ROUNDS, low=1, high=10)
    gateway_url: str | None = setting("MEMORY_TOOLS_GATEWAY_URL")
    gateway_url_parameter: str | None = setting("MEMORY_TOOLS_GATEWAY_URL_PARAMETER")
    gateway_target: str | None = setting("MEMORY_TOOLS_GATEWAY_TARGET")

    @property
    def working_memory(self) -> WorkingMemoryLimits:
        """The bounds of the conversation kept between turns."""
        return WorkingMemoryLimits(
            max_turns=self.working_memory_max_turns,
            max_chars=self.working_memory_max_chars,
            max_sessions=self.working_memory_max_sessions,
        )

    @property
    def tools_via_gateway(self) -> bool:
        """Whether the memory tools run through the memory gateway (``MEMORY_TOOLS_GATEWAY_URL[_PARAMETER]``)."""
        return self.gateway_url is not None or self.gateway_url_parameter is not None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        """Parse and validate ``env``; raise :class:`SettingsError` naming every problem at once."""
        get = SettingsReader(env, ENV_NAMING)
        fields = cls.read_fields(get)
        n = {name: env_name(cls, name) for name in ("model_provider", "model_id", "memory_tools", "auth_mode")}
        url_env, parameter_env = env_name(cls, "gateway_url"), env_name(cls, "gateway_url_parameter")
        target_env = env_name(cls, "gateway_target")
        if fields["model_provider"] is ModelProvider.BEDROCK and fields["model_id"] is None:
            get.problem(f"{n['model_id']} is required when {n['model_provider']}=bedrock")
        gateway_url, gateway_parameter = fields["gateway_url"], fields["gateway_url_parameter"]
        gateway_target = fields["gateway_target"]
        if gateway_url and gateway_parameter:
            get.problem(f"set {url_env} or {parameter_env}, not both")
        if gateway_url and not _secure_url(gateway_url):
            get.problem(f"{url_env} must be an https URL (http only on 127.0.0.1 or localhost)")
        if gateway_parameter and not _SSM_NAME.fullmatch(gateway_parameter):
            get.problem(f"{parameter_env} must be an SSM parameter name like /a/b")
        if gateway_target and not _TARGET_NAME.fullmatch(gateway_target):
            get.problem(f"{target_env} must be a gateway target name (letters, digits, '-')")
        if gateway_url or gateway_parameter:
            if fields["auth_mode"] is not IdentitySource.JWT:
                get.problem(
                    f"the memory gateway acts for the caller's own token: {url_env}/{parameter_env} need "
                    f"{n['auth_mode']}=jwt"
                )
            if not fields["memory_tools"]:
                get.problem(f"{n['memory_tools']}=false offers no tools: {url_env}/{parameter_env} would never be used")
        elif gateway_target:
            get.problem(f"{target_env} applies only with a gateway URL or its parameter")
        if get.problems:
            raise SettingsError(get.problems)
        return cls(**fields)
