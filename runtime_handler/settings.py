"""The agent's configuration: environment variables only (that is how AgentCore Runtime passes it), parsed once.

One reading, through the shared :class:`~memory_adapter.settings_reader.SettingsReader`: the agent's own variables
(named here, ``ENV_*``), the identity contract's ``JWT_*`` variables (:class:`~memory_adapter.identity.JwtSettings`
under :data:`JWT_ENV`, the same fields and rules the Hindsight extension applies) and the memory adapter's
(``HINDSIGHT_API_URL``, ``HINDSIGHT_API_KEY``, ``HINDSIGHT_ADAPTER_*``: :func:`memory_adapter.config.read_settings`).
:meth:`Settings.from_env` accepts any mapping (tests pass dicts) and reports every problem in a single
:class:`SettingsError`. Standard library (and ``memory_adapter``'s light modules) only, so the CDK stack can import
the ``ENV_*`` names and an infra test can check that the runtime's environment holds exactly what is read.

Example:
    >>> settings = Settings.from_env({"AGENT_NAME": "support", "HINDSIGHT_API_URL": "http://127.0.0.1:8888",
    ...                                "AUTH_MODE": "iam", "MODEL_PROVIDER": "echo"})
    >>> settings.auth_mode
    <IdentitySource.IAM: 'iam'>
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from memory_adapter.config import ENV_VARS as ADAPTER_ENV_VARS
from memory_adapter.config import HindsightAgentCoreConfig, read_settings
from memory_adapter.constants import (
    HINDSIGHT_API_KEY_ENV,
    HINDSIGHT_API_TOKEN_ENV,
    HINDSIGHT_API_URL_ENV,
    SPOOL_QUEUE_URL_ENV,
)
from memory_adapter.identity.settings import ENV_NAMING as JWT_ENV  # JWT_ + the field, seconds spelled out
from memory_adapter.identity.settings import JwtSettings
from memory_adapter.settings_reader import SettingsReader
from runtime_handler.working_memory import DEFAULT_LIMITS, WorkingMemoryLimits

__all__ = [
    "ALL_ENV_VARS",
    "CUSTOM_HEADER_PREFIX",
    "ENV_AGENT_NAME",
    "ENV_ALLOW_ANONYMOUS",
    "ENV_AUTH_MODE",
    "ENV_HINDSIGHT_API_KEY",
    "ENV_HINDSIGHT_API_KEY_SECRET_ARN",
    "ENV_HINDSIGHT_API_URL",
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
    "ENV_MEMORY_RECALL_TIMEOUT_SECONDS",
    "ENV_MEMORY_RETAIN_WAIT_SECONDS",
    "ENV_MEMORY_SPOOL_QUEUE_URL",
    "ENV_MEMORY_TOOLS",
    "ENV_MEMORY_TOOLS_GATEWAY_TARGET",
    "ENV_MEMORY_TOOLS_GATEWAY_URL",
    "ENV_MEMORY_TOOLS_GATEWAY_URL_PARAMETER",
    "ENV_MEMORY_TOOL_ROUNDS",
    "ENV_MODEL_ID",
    "ENV_MODEL_MAX_TOKENS",
    "ENV_MODEL_PROVIDER",
    "ENV_TENANT_HEADER",
    "ENV_TENANT_ID",
    "ENV_WORKING_MEMORY_MAX_CHARS",
    "ENV_WORKING_MEMORY_MAX_SESSIONS",
    "ENV_WORKING_MEMORY_MAX_TURNS",
    "JWT_ENV",
    "IdentitySource",
    "ModelProvider",
    "Settings",
    "SettingsError",
]

ENV_AGENT_NAME = "AGENT_NAME"
ENV_HINDSIGHT_API_URL = HINDSIGHT_API_URL_ENV  # read by the memory adapter's settings
ENV_HINDSIGHT_API_KEY = HINDSIGHT_API_KEY_ENV  # read by the memory adapter's settings
ENV_HINDSIGHT_API_KEY_SECRET_ARN = "HINDSIGHT_API_KEY_SECRET_ARN"  # noqa: S105 - a variable name, not a secret
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
ENV_MODEL_PROVIDER = "MODEL_PROVIDER"
ENV_MODEL_ID = "MODEL_ID"
ENV_MODEL_MAX_TOKENS = "MODEL_MAX_TOKENS"
ENV_MAX_PROMPT_CHARS = "MAX_PROMPT_CHARS"
ENV_MEMORY_RECALL_TIMEOUT_SECONDS = "MEMORY_RECALL_TIMEOUT_SECONDS"
ENV_MEMORY_RETAIN_WAIT_SECONDS = "MEMORY_RETAIN_WAIT_SECONDS"
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

_JWT_VARS = JwtSettings.setting_keys(JWT_ENV)
#: Every variable :meth:`Settings.from_env` reads: the ``ENV_*`` names, every ``JWT_*`` setting and the memory
#: adapter's. Powertools reads its own ``POWERTOOLS_*`` variables and boto3 reads ``AWS_REGION`` (set by AgentCore
#: Runtime), so neither is listed here.
ALL_ENV_VARS: tuple[str, ...] = tuple(
    dict.fromkeys(
        [
            *(value for name, value in dict(globals()).items() if name.startswith("ENV_") and isinstance(value, str)),
            *sorted(_JWT_VARS),
            HINDSIGHT_API_TOKEN_ENV,
            *ADAPTER_ENV_VARS.values(),
        ]
    )
)

#: AgentCore forwards custom headers only under this prefix, and only when allowlisted on the runtime.
CUSTOM_HEADER_PREFIX = "X-Amzn-Bedrock-AgentCore-Runtime-Custom-"

_AGENT_NAME = re.compile(r"[A-Za-z0-9._@-]{1,128}")
_TARGET_NAME = re.compile(r"([0-9A-Za-z]-?){1,100}")
_SSM_NAME = re.compile(r"/[A-Za-z0-9_./-]{1,1000}")
_LOOPBACK = ("http://127.0.0.1", "http://localhost", "http://[::1]")
_HEADER_NAME = re.compile(r"[A-Za-z0-9-]{1,200}")

DEFAULT_MAX_PROMPT_CHARS = 16_000
MAX_MAX_PROMPT_CHARS = 200_000


class IdentitySource(StrEnum):
    """Where the caller's identity comes from (``AUTH_MODE``): a verified bearer token, or the IAM caller's runtime
    user id header."""

    JWT = "jwt"
    IAM = "iam"


class ModelProvider(StrEnum):
    """Which model answers: Amazon Bedrock (Converse), or a deterministic local stand-in."""

    BEDROCK = "bedrock"
    ECHO = "echo"


class SettingsError(ValueError):
    """The environment does not describe a usable agent; ``problems`` lists every reason."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("invalid agent configuration:\n  - " + "\n  - ".join(problems))
        self.problems = problems


@dataclass(frozen=True, slots=True)
class Settings:
    """Typed, validated configuration. Build it with :meth:`from_env`; pass it down explicitly.

    ``memory`` are the memory adapter's settings (URL, key, ``HINDSIGHT_ADAPTER_*``), handed to it as they are;
    ``jwt`` the token checks (``AUTH_MODE=jwt`` only).
    """

    agent_name: str
    auth_mode: IdentitySource
    model_provider: ModelProvider
    memory: HindsightAgentCoreConfig
    jwt: JwtSettings | None = None
    hindsight_api_key_secret_arn: str | None = None
    tenant_id: str | None = None
    tenant_header: str | None = None
    allow_anonymous: bool = False
    model_id: str | None = None
    model_max_tokens: int = 1024
    max_prompt_chars: int = DEFAULT_MAX_PROMPT_CHARS
    retain_wait_s: float = 30.0
    working_memory: WorkingMemoryLimits = DEFAULT_LIMITS
    memory_tools: bool = True
    tool_rounds: int = 4
    gateway_url: str | None = None
    gateway_url_parameter: str | None = None
    gateway_target: str | None = None

    @property
    def tools_via_gateway(self) -> bool:
        """Whether the memory tools run through the memory gateway (``MEMORY_TOOLS_GATEWAY_URL[_PARAMETER]``)."""
        return self.gateway_url is not None or self.gateway_url_parameter is not None

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
        """The recall deadline (``MEMORY_RECALL_TIMEOUT_SECONDS``, else the adapter's ``recall_timeout``)."""
        return self.memory.recall_timeout

    @property
    def jwt_discovery_url(self) -> str | None:
        """``jwt.discovery_url`` (a name the infrastructure tests use)."""
        return self.jwt.discovery_url if self.jwt is not None else None

    @property
    def max_body_bytes(self) -> int:
        """Largest request body read: room for a maximal prompt written entirely as JSON ``\\uXXXX`` escapes."""
        return 12 * self.max_prompt_chars + 4096

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        """Parse and validate ``env``; raise :class:`SettingsError` naming every problem at once."""
        get = SettingsReader(env, JWT_ENV)

        agent_name = get.text(ENV_AGENT_NAME)
        if agent_name is None:
            get.problem(f"{ENV_AGENT_NAME} is required (it names the agent in memory bank ids)")
        elif not _AGENT_NAME.fullmatch(agent_name):
            get.problem(f"{ENV_AGENT_NAME} must be 1-128 characters from A-Z a-z 0-9 . _ @ -")

        mode = get.choice(ENV_AUTH_MODE, IdentitySource, default=None)
        if mode is None and not get.given(ENV_AUTH_MODE):
            get.problem(f"{ENV_AUTH_MODE} is required: 'jwt' (verified bearer token) or 'iam' (runtime user id)")
        provider = get.choice(ENV_MODEL_PROVIDER, ModelProvider, default=ModelProvider.BEDROCK)

        recall_timeout = (
            get.number(ENV_MEMORY_RECALL_TIMEOUT_SECONDS, 2.0, low=0.05, high=60.0)
            if get.given(ENV_MEMORY_RECALL_TIMEOUT_SECONDS)
            else None
        )
        memory = read_settings(get, {"recall_timeout": recall_timeout})
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

        model_id = get.text(ENV_MODEL_ID)
        if provider is ModelProvider.BEDROCK and model_id is None:
            get.problem(f"{ENV_MODEL_ID} is required when {ENV_MODEL_PROVIDER}=bedrock")
        max_tokens = get.integer(ENV_MODEL_MAX_TOKENS, 1024, low=1, high=64000)
        max_prompt = get.integer(ENV_MAX_PROMPT_CHARS, DEFAULT_MAX_PROMPT_CHARS, low=1, high=MAX_MAX_PROMPT_CHARS)
        retain_wait = get.number(ENV_MEMORY_RETAIN_WAIT_SECONDS, 30.0, low=0.1, high=900.0)
        allow_anonymous = get.flag(ENV_ALLOW_ANONYMOUS)
        memory_tools = get.flag(ENV_MEMORY_TOOLS, default=True)
        tool_rounds = get.integer(ENV_MEMORY_TOOL_ROUNDS, 4, low=1, high=10)
        gateway_url = get.text(ENV_MEMORY_TOOLS_GATEWAY_URL)
        gateway_parameter = get.text(ENV_MEMORY_TOOLS_GATEWAY_URL_PARAMETER)
        gateway_target = get.text(ENV_MEMORY_TOOLS_GATEWAY_TARGET)
        if gateway_url and gateway_parameter:
            get.problem(f"set {ENV_MEMORY_TOOLS_GATEWAY_URL} or {ENV_MEMORY_TOOLS_GATEWAY_URL_PARAMETER}, not both")
        if gateway_url and not (gateway_url.startswith("https://") or gateway_url.startswith(_LOOPBACK)):
            get.problem(f"{ENV_MEMORY_TOOLS_GATEWAY_URL} must be an https URL (http only on 127.0.0.1 or localhost)")
        if gateway_parameter and not _SSM_NAME.fullmatch(gateway_parameter):
            get.problem(f"{ENV_MEMORY_TOOLS_GATEWAY_URL_PARAMETER} must be an SSM parameter name like /a/b")
        if gateway_target and not _TARGET_NAME.fullmatch(gateway_target):
            get.problem(f"{ENV_MEMORY_TOOLS_GATEWAY_TARGET} must be a gateway target name (letters, digits, '-')")
        if gateway_url or gateway_parameter:
            if mode is not IdentitySource.JWT:
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
        assert agent_name is not None
        assert mode is not None
        assert provider is not None
        return cls(
            agent_name=agent_name,
            auth_mode=mode,
            model_provider=provider,
            memory=memory,
            jwt=jwt,
            hindsight_api_key_secret_arn=secret_arn,
            tenant_id=tenant_id,
            tenant_header=tenant_header,
            allow_anonymous=allow_anonymous,
            model_id=model_id,
            model_max_tokens=max_tokens,
            max_prompt_chars=max_prompt,
            retain_wait_s=retain_wait,
            working_memory=working_memory,
            memory_tools=memory_tools,
            tool_rounds=tool_rounds,
            gateway_url=gateway_url,
            gateway_url_parameter=gateway_parameter,
            gateway_target=gateway_target,
        )
