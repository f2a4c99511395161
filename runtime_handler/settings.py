"""The agent's configuration: environment variables only (that is how AgentCore Runtime passes it), parsed once.

One reading, through the shared :class:`~memory_adapter.settings_reader.SettingsReader`: the memory wiring's
settings (:class:`~memory_adapter.agentcore.settings.AgentMemorySettings`: ``AGENT_NAME``, ``AUTH_MODE``, the
identity contract's ``JWT_*``, the memory adapter's ``HINDSIGHT_*``; the same an agent you bring reads) plus this
agent's model, working memory and memory tools (named here, ``ENV_MODEL_*``, ...; the payload limit
``MAX_PROMPT_CHARS`` is the wiring's, shared with any agent). :meth:`Settings.from_env`
accepts any mapping (tests pass dicts) and reports every problem in a single :class:`SettingsError`. Standard library
(and ``memory_adapter``'s light modules) only, so the CDK stack can import the ``ENV_*`` names (re-exported here) and
an infra test can check that the runtime's environment holds exactly what is read.

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

from memory_adapter.agentcore.settings import (
    ENV_AUTH_MODE,
    JWT_ENV,
    WIRING_ENV_VARS,
    AgentMemorySettings,
    IdentitySource,
    SettingsError,
)
from memory_adapter.constants import SPOOL_QUEUE_URL_ENV
from memory_adapter.settings_reader import SettingsReader, env_dict
from runtime_handler.working_memory import DEFAULT_LIMITS, WorkingMemoryLimits

__all__ = [
    "ALL_ENV_VARS",
    "ENV_MEMORY_SPOOL_QUEUE_URL",
    "ENV_MEMORY_TOOLS",
    "ENV_MEMORY_TOOLS_GATEWAY_TARGET",
    "ENV_MEMORY_TOOLS_GATEWAY_URL",
    "ENV_MEMORY_TOOLS_GATEWAY_URL_PARAMETER",
    "ENV_MEMORY_TOOL_ROUNDS",
    "ENV_MODEL_ID",
    "ENV_MODEL_MAX_TOKENS",
    "ENV_MODEL_PROVIDER",
    "ENV_WORKING_MEMORY_MAX_CHARS",
    "ENV_WORKING_MEMORY_MAX_SESSIONS",
    "ENV_WORKING_MEMORY_MAX_TURNS",
    "JWT_ENV",
    "IdentitySource",
    "ModelProvider",
    "Settings",
    "SettingsError",
]

ENV_MODEL_PROVIDER = "MODEL_PROVIDER"
ENV_MODEL_ID = "MODEL_ID"
ENV_MODEL_MAX_TOKENS = "MODEL_MAX_TOKENS"
#: The durable retain queue the stack creates (read by the memory adapter's settings: ``spool_queue_url``).
ENV_MEMORY_SPOOL_QUEUE_URL = SPOOL_QUEUE_URL_ENV
ENV_MEMORY_TOOLS = "MEMORY_TOOLS"
ENV_MEMORY_TOOL_ROUNDS = "MEMORY_TOOL_ROUNDS"
ENV_MEMORY_TOOLS_GATEWAY_URL = "MEMORY_TOOLS_GATEWAY_URL"
ENV_MEMORY_TOOLS_GATEWAY_URL_PARAMETER = "MEMORY_TOOLS_GATEWAY_URL_PARAMETER"
ENV_MEMORY_TOOLS_GATEWAY_TARGET = "MEMORY_TOOLS_GATEWAY_TARGET"
ENV_WORKING_MEMORY_MAX_TURNS = "WORKING_MEMORY_MAX_TURNS"
ENV_WORKING_MEMORY_MAX_CHARS = "WORKING_MEMORY_MAX_CHARS"
ENV_WORKING_MEMORY_MAX_SESSIONS = "WORKING_MEMORY_MAX_SESSIONS"

#: Every variable :meth:`Settings.from_env` reads: the memory wiring's (``ENV_*`` of
#: :mod:`memory_adapter.agentcore.settings`, every ``JWT_*`` setting and the memory adapter's) and the model's.
#: Powertools reads its own ``POWERTOOLS_*`` variables and boto3 reads ``AWS_REGION`` (set by AgentCore Runtime), so
#: neither is listed here.
ALL_ENV_VARS: tuple[str, ...] = (
    *WIRING_ENV_VARS,
    ENV_MODEL_PROVIDER,
    ENV_MODEL_ID,
    ENV_MODEL_MAX_TOKENS,
    ENV_MEMORY_TOOLS,
    ENV_MEMORY_TOOL_ROUNDS,
    ENV_MEMORY_TOOLS_GATEWAY_URL,
    ENV_MEMORY_TOOLS_GATEWAY_URL_PARAMETER,
    ENV_MEMORY_TOOLS_GATEWAY_TARGET,
    ENV_WORKING_MEMORY_MAX_TURNS,
    ENV_WORKING_MEMORY_MAX_CHARS,
    ENV_WORKING_MEMORY_MAX_SESSIONS,
)

_TARGET_NAME = re.compile(r"([0-9A-Za-z]-?){1,100}")
_SSM_NAME = re.compile(r"/[A-Za-z0-9_./-]{1,1000}")
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})

DEFAULT_MODEL_MAX_TOKENS = 1024
DEFAULT_TOOL_ROUNDS = 4


def _secure_url(url: str) -> bool:
    """https, or http to this machine (local runs): the caller's token travels to this URL."""
    parts = urllib.parse.urlsplit(url)
    return parts.scheme == "https" or (parts.scheme == "http" and parts.hostname in _LOOPBACK)


class ModelProvider(StrEnum):
    """Which model answers: Amazon Bedrock (Converse), or a deterministic local stand-in."""

    BEDROCK = "bedrock"
    ECHO = "echo"


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings(AgentMemorySettings):
    """Typed, validated configuration: the memory wiring's (:class:`AgentMemorySettings`, shared with any agent you
    bring, the payload limit included) plus the reference agent's model, working memory and memory tools. Build it with
    :meth:`from_env`; pass it down."""

    model_provider: ModelProvider
    model_id: str | None = None
    model_max_tokens: int = DEFAULT_MODEL_MAX_TOKENS
    working_memory: WorkingMemoryLimits = DEFAULT_LIMITS
    memory_tools: bool = True
    tool_rounds: int = DEFAULT_TOOL_ROUNDS
    gateway_url: str | None = None
    gateway_url_parameter: str | None = None
    gateway_target: str | None = None

    @property
    def tools_via_gateway(self) -> bool:
        """Whether the memory tools run through the memory gateway (``MEMORY_TOOLS_GATEWAY_URL[_PARAMETER]``)."""
        return self.gateway_url is not None or self.gateway_url_parameter is not None

    def to_env(self) -> dict[str, str]:
        """The environment :meth:`from_env` reads back as these settings: the memory wiring's
        (:meth:`AgentMemorySettings.to_env`), the model provider always, every other setting where it differs from
        its default."""

        def changed(value: object, default: object) -> object:
            return None if value == default else value

        limits = self.working_memory
        return {
            **AgentMemorySettings.to_env(self),  # not super(): slots=True dataclasses break its zero-argument form
            **env_dict(
                {
                    ENV_MODEL_PROVIDER: self.model_provider,
                    ENV_MODEL_ID: self.model_id,
                    ENV_MODEL_MAX_TOKENS: changed(self.model_max_tokens, DEFAULT_MODEL_MAX_TOKENS),
                    ENV_MEMORY_TOOLS: changed(self.memory_tools, True),
                    ENV_MEMORY_TOOL_ROUNDS: changed(self.tool_rounds, DEFAULT_TOOL_ROUNDS),
                    ENV_MEMORY_TOOLS_GATEWAY_URL: self.gateway_url,
                    ENV_MEMORY_TOOLS_GATEWAY_URL_PARAMETER: self.gateway_url_parameter,
                    ENV_MEMORY_TOOLS_GATEWAY_TARGET: self.gateway_target,
                    ENV_WORKING_MEMORY_MAX_TURNS: changed(limits.max_turns, DEFAULT_LIMITS.max_turns),
                    ENV_WORKING_MEMORY_MAX_CHARS: changed(limits.max_chars, DEFAULT_LIMITS.max_chars),
                    ENV_WORKING_MEMORY_MAX_SESSIONS: changed(limits.max_sessions, DEFAULT_LIMITS.max_sessions),
                }
            ),
        }

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        """Parse and validate ``env``; raise :class:`SettingsError` naming every problem at once."""
        get = SettingsReader(env, JWT_ENV)
        fields = AgentMemorySettings.read_fields(get)
        provider = get.choice(ENV_MODEL_PROVIDER, ModelProvider, default=ModelProvider.BEDROCK)
        model_id = get.text(ENV_MODEL_ID)
        if provider is ModelProvider.BEDROCK and model_id is None:
            get.problem(f"{ENV_MODEL_ID} is required when {ENV_MODEL_PROVIDER}=bedrock")
        max_tokens = get.integer(ENV_MODEL_MAX_TOKENS, DEFAULT_MODEL_MAX_TOKENS, low=1, high=64000)
        memory_tools = get.flag(ENV_MEMORY_TOOLS, default=True)
        tool_rounds = get.integer(ENV_MEMORY_TOOL_ROUNDS, DEFAULT_TOOL_ROUNDS, low=1, high=10)
        gateway_url = get.text(ENV_MEMORY_TOOLS_GATEWAY_URL)
        gateway_parameter = get.text(ENV_MEMORY_TOOLS_GATEWAY_URL_PARAMETER)
        gateway_target = get.text(ENV_MEMORY_TOOLS_GATEWAY_TARGET)
        if gateway_url and gateway_parameter:
            get.problem(f"set {ENV_MEMORY_TOOLS_GATEWAY_URL} or {ENV_MEMORY_TOOLS_GATEWAY_URL_PARAMETER}, not both")
        if gateway_url and not _secure_url(gateway_url):
            get.problem(f"{ENV_MEMORY_TOOLS_GATEWAY_URL} must be an https URL (http only on 127.0.0.1 or localhost)")
        if gateway_parameter and not _SSM_NAME.fullmatch(gateway_parameter):
            get.problem(f"{ENV_MEMORY_TOOLS_GATEWAY_URL_PARAMETER} must be an SSM parameter name like /a/b")
        if gateway_target and not _TARGET_NAME.fullmatch(gateway_target):
            get.problem(f"{ENV_MEMORY_TOOLS_GATEWAY_TARGET} must be a gateway target name (letters, digits, '-')")
        if gateway_url or gateway_parameter:
            if fields["auth_mode"] is not IdentitySource.JWT:
                get.problem(
                    f"the memory gateway acts for the caller's own token: {ENV_MEMORY_TOOLS_GATEWAY_URL}/"
                    f"{ENV_MEMORY_TOOLS_GATEWAY_URL_PARAMETER} need {ENV_AUTH_MODE}=jwt"
                )
            if not memory_tools:
                get.problem(
                    f"{ENV_MEMORY_TOOLS}=false offers no tools: {ENV_MEMORY_TOOLS_GATEWAY_URL}/"
                    f"{ENV_MEMORY_TOOLS_GATEWAY_URL_PARAMETER} would never be used"
                )
        elif gateway_target:
            get.problem(f"{ENV_MEMORY_TOOLS_GATEWAY_TARGET} applies only with a gateway URL or its parameter")
        working_memory = WorkingMemoryLimits(
            max_turns=get.integer(ENV_WORKING_MEMORY_MAX_TURNS, DEFAULT_LIMITS.max_turns, low=0, high=200),
            max_chars=get.integer(ENV_WORKING_MEMORY_MAX_CHARS, DEFAULT_LIMITS.max_chars, low=1_000, high=1_000_000),
            max_sessions=get.integer(ENV_WORKING_MEMORY_MAX_SESSIONS, DEFAULT_LIMITS.max_sessions, low=1, high=100_000),
        )

        if get.problems:
            raise SettingsError(get.problems)
        assert provider is not None
        return cls(
            **fields,
            model_provider=provider,
            model_id=model_id,
            model_max_tokens=max_tokens,
            working_memory=working_memory,
            memory_tools=memory_tools,
            tool_rounds=tool_rounds,
            gateway_url=gateway_url,
            gateway_url_parameter=gateway_parameter,
            gateway_target=gateway_target,
        )
