"""The agent's configuration: environment variables only (that is how AgentCore Runtime passes it), parsed once.

Standard library only, so the CDK stack can import the ``ENV_*`` names and an infra test can check that the runtime's
environment holds exactly what :class:`Settings` reads. :meth:`Settings.from_env` accepts any mapping (tests pass
dicts) and reports every problem in a single :class:`SettingsError`.

Example:
    >>> settings = Settings.from_env({"AGENT_NAME": "support", "HINDSIGHT_API_URL": "http://127.0.0.1:8888",
    ...                                "AUTH_MODE": "iam", "MODEL_PROVIDER": "echo"})
    >>> settings.auth_mode
    <AuthMode.IAM: 'iam'>
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeVar

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
    "ENV_MODEL_ID",
    "ENV_MODEL_MAX_TOKENS",
    "ENV_MODEL_PROVIDER",
    "ENV_TENANT_HEADER",
    "ENV_TENANT_ID",
    "AuthMode",
    "ModelProvider",
    "Settings",
    "SettingsError",
]

ENV_AGENT_NAME = "AGENT_NAME"
ENV_HINDSIGHT_API_URL = "HINDSIGHT_API_URL"
ENV_HINDSIGHT_API_KEY = "HINDSIGHT_API_KEY"
ENV_HINDSIGHT_API_KEY_SECRET_ARN = "HINDSIGHT_API_KEY_SECRET_ARN"  # noqa: S105 - a variable name, not a secret
ENV_AUTH_MODE = "AUTH_MODE"
ENV_JWT_DISCOVERY_URL = "JWT_DISCOVERY_URL"
ENV_JWT_ISSUER = "JWT_ISSUER"
ENV_JWT_JWKS_PARAMETER = "JWT_JWKS_PARAMETER"
ENV_JWT_ALLOWED_CLIENTS = "JWT_ALLOWED_CLIENTS"
ENV_JWT_ALLOWED_AUDIENCE = "JWT_ALLOWED_AUDIENCE"
ENV_JWT_TOKEN_USE = "JWT_TOKEN_USE"  # noqa: S105 - a variable name, not a secret
ENV_JWT_USER_CLAIM = "JWT_USER_CLAIM"
ENV_JWT_TENANT_CLAIM = "JWT_TENANT_CLAIM"
ENV_JWT_ALGORITHMS = "JWT_ALGORITHMS"
ENV_JWT_LEEWAY_SECONDS = "JWT_LEEWAY_SECONDS"
ENV_JWT_MAX_TOKEN_BYTES = "JWT_MAX_TOKEN_BYTES"  # noqa: S105 - a variable name, not a secret
ENV_TENANT_ID = "TENANT_ID"
ENV_TENANT_HEADER = "TENANT_HEADER"
ENV_ALLOW_ANONYMOUS = "ALLOW_ANONYMOUS"
ENV_MODEL_PROVIDER = "MODEL_PROVIDER"
ENV_MODEL_ID = "MODEL_ID"
ENV_MODEL_MAX_TOKENS = "MODEL_MAX_TOKENS"
ENV_MAX_PROMPT_CHARS = "MAX_PROMPT_CHARS"
ENV_MEMORY_RECALL_TIMEOUT_SECONDS = "MEMORY_RECALL_TIMEOUT_SECONDS"
ENV_MEMORY_RETAIN_WAIT_SECONDS = "MEMORY_RETAIN_WAIT_SECONDS"

#: Every variable :meth:`Settings.from_env` reads. Powertools reads its own ``POWERTOOLS_*`` variables and boto3
#: reads ``AWS_REGION`` (set by AgentCore Runtime), so neither is listed here.
ALL_ENV_VARS: tuple[str, ...] = tuple(value for name, value in dict(globals()).items() if name.startswith("ENV_"))

#: AgentCore forwards custom headers only under this prefix, and only when allowlisted on the runtime.
CUSTOM_HEADER_PREFIX = "X-Amzn-Bedrock-AgentCore-Runtime-Custom-"

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off", ""})
_AGENT_NAME = re.compile(r"[A-Za-z0-9._@-]{1,128}")
_HEADER_NAME = re.compile(r"[A-Za-z0-9-]{1,200}")
_ASYMMETRIC = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"})

DEFAULT_MAX_PROMPT_CHARS = 16_000
_DISCOVERY_SUFFIX = "/.well-known/openid-configuration"
_E = TypeVar("_E", bound=StrEnum)
MAX_MAX_PROMPT_CHARS = 200_000


class AuthMode(StrEnum):
    """How the caller is identified: a verified bearer token, or the IAM caller's runtime user id header."""

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
    """Typed, validated configuration. Build it with :meth:`from_env`; pass it down explicitly."""

    agent_name: str
    hindsight_api_url: str
    auth_mode: AuthMode
    model_provider: ModelProvider
    hindsight_api_key: str | None = None
    hindsight_api_key_secret_arn: str | None = None
    jwt_discovery_url: str | None = None
    jwt_issuer: str | None = None
    jwt_jwks_parameter: str | None = None
    jwt_allowed_clients: tuple[str, ...] = ()
    jwt_allowed_audience: tuple[str, ...] = ()
    jwt_token_use: str | None = None
    jwt_user_claim: str = "sub"
    jwt_tenant_claim: str | None = None
    jwt_algorithms: tuple[str, ...] = ("RS256",)
    jwt_leeway_s: float = 30.0
    jwt_max_token_bytes: int = 8192
    tenant_id: str | None = None
    tenant_header: str | None = None
    allow_anonymous: bool = False
    model_id: str | None = None
    model_max_tokens: int = 1024
    max_prompt_chars: int = DEFAULT_MAX_PROMPT_CHARS
    recall_timeout_s: float = 2.0
    retain_wait_s: float = 30.0

    @property
    def max_body_bytes(self) -> int:
        """Largest request body read: room for a maximal prompt written entirely as JSON ``\\uXXXX`` escapes."""
        return 12 * self.max_prompt_chars + 4096

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        """Parse and validate ``env``; raise :class:`SettingsError` naming every problem at once."""
        problems: list[str] = []
        get = _Reader(env, problems)

        agent_name = get.text(ENV_AGENT_NAME)
        if agent_name is None:
            problems.append(f"{ENV_AGENT_NAME} is required (it names the agent in memory bank ids)")
        elif not _AGENT_NAME.fullmatch(agent_name):
            problems.append(f"{ENV_AGENT_NAME} must be 1-128 characters from A-Z a-z 0-9 . _ @ -")

        url = get.text(ENV_HINDSIGHT_API_URL)
        if url is None:
            problems.append(f"{ENV_HINDSIGHT_API_URL} is required (the Hindsight server's base URL)")
        elif not url.startswith(("http://", "https://")):
            problems.append(f"{ENV_HINDSIGHT_API_URL} must be an http(s) URL")

        mode = get.choice(ENV_AUTH_MODE, AuthMode, default=None)
        if mode is None and not any(p.startswith(ENV_AUTH_MODE) for p in problems):
            problems.append(f"{ENV_AUTH_MODE} is required: 'jwt' (verified bearer token) or 'iam' (runtime user id)")
        provider = get.choice(ENV_MODEL_PROVIDER, ModelProvider, default=ModelProvider.BEDROCK)

        api_key = get.text(ENV_HINDSIGHT_API_KEY)
        secret_arn = get.text(ENV_HINDSIGHT_API_KEY_SECRET_ARN)
        if api_key and secret_arn:
            problems.append(f"set {ENV_HINDSIGHT_API_KEY} or {ENV_HINDSIGHT_API_KEY_SECRET_ARN}, not both")
        if secret_arn and not secret_arn.startswith("arn:"):
            problems.append(f"{ENV_HINDSIGHT_API_KEY_SECRET_ARN} must be a Secrets Manager ARN")

        discovery = get.text(ENV_JWT_DISCOVERY_URL)
        issuer = get.text(ENV_JWT_ISSUER)
        jwks_parameter = get.text(ENV_JWT_JWKS_PARAMETER)
        clients = get.csv(ENV_JWT_ALLOWED_CLIENTS)
        audience = get.csv(ENV_JWT_ALLOWED_AUDIENCE)
        token_use = get.text(ENV_JWT_TOKEN_USE)
        user_claim = get.text(ENV_JWT_USER_CLAIM) or "sub"
        tenant_claim = get.text(ENV_JWT_TENANT_CLAIM)
        algorithms = get.csv(ENV_JWT_ALGORITHMS) or ("RS256",)
        leeway = get.number(ENV_JWT_LEEWAY_SECONDS, default=30.0, low=0.0, high=300.0)
        max_token = int(get.number(ENV_JWT_MAX_TOKEN_BYTES, default=8192, low=256, high=65536, integer=True))
        tenant_id = get.text(ENV_TENANT_ID)
        tenant_header = get.text(ENV_TENANT_HEADER)

        if mode is AuthMode.JWT:
            if discovery is None and not (jwks_parameter and issuer):
                problems.append(
                    f"{ENV_JWT_DISCOVERY_URL} is required when {ENV_AUTH_MODE}=jwt (or {ENV_JWT_ISSUER} with "
                    f"{ENV_JWT_JWKS_PARAMETER} for mirrored keys)"
                )
            elif discovery is not None and not discovery.rstrip("/").endswith(_DISCOVERY_SUFFIX):
                problems.append(f"{ENV_JWT_DISCOVERY_URL} must end with {_DISCOVERY_SUFFIX}")
            if issuer is not None and jwks_parameter is None:
                problems.append(f"{ENV_JWT_ISSUER} is used only with {ENV_JWT_JWKS_PARAMETER}")
            if issuer is None and jwks_parameter and discovery:
                issuer = discovery.rstrip("/")[: -len(_DISCOVERY_SUFFIX)]
            if not clients and not audience:
                problems.append(
                    f"set {ENV_JWT_ALLOWED_CLIENTS} and/or {ENV_JWT_ALLOWED_AUDIENCE} when {ENV_AUTH_MODE}=jwt"
                )
            if token_use is not None and token_use not in ("access", "id"):
                problems.append(f"{ENV_JWT_TOKEN_USE} must be 'access' or 'id'")
            unsafe = sorted(set(algorithms) - _ASYMMETRIC)
            if unsafe:
                problems.append(f"{ENV_JWT_ALGORITHMS} may list asymmetric algorithms only, not {', '.join(unsafe)}")
            if tenant_id or tenant_header:
                problems.append(
                    f"{ENV_TENANT_ID}/{ENV_TENANT_HEADER} apply to {ENV_AUTH_MODE}=iam only; with jwt the tenant comes "
                    f"from the verified token ({ENV_JWT_TENANT_CLAIM})"
                )
            if api_key or secret_arn:
                problems.append(
                    f"{ENV_AUTH_MODE}=jwt sends each caller's own token to Hindsight: do not give the agent a "
                    f"Hindsight key ({ENV_HINDSIGHT_API_KEY}/{ENV_HINDSIGHT_API_KEY_SECRET_ARN})"
                )
        elif mode is AuthMode.IAM:
            if discovery or clients or audience or tenant_claim or issuer or jwks_parameter:
                problems.append(f"JWT_* settings apply to {ENV_AUTH_MODE}=jwt only")
            if tenant_id and tenant_header:
                problems.append(f"set {ENV_TENANT_ID} or {ENV_TENANT_HEADER}, not both")
            if tenant_header is not None and not (
                tenant_header.lower().startswith(CUSTOM_HEADER_PREFIX.lower())
                and _HEADER_NAME.fullmatch(tenant_header)
                and len(tenant_header) > len(CUSTOM_HEADER_PREFIX)
            ):
                problems.append(f"{ENV_TENANT_HEADER} must be an allowlisted header named {CUSTOM_HEADER_PREFIX}<Name>")

        model_id = get.text(ENV_MODEL_ID)
        if provider is ModelProvider.BEDROCK and model_id is None:
            problems.append(f"{ENV_MODEL_ID} is required when {ENV_MODEL_PROVIDER}=bedrock")
        max_tokens = int(get.number(ENV_MODEL_MAX_TOKENS, default=1024, low=1, high=64000, integer=True))
        max_prompt = int(
            get.number(
                ENV_MAX_PROMPT_CHARS, default=DEFAULT_MAX_PROMPT_CHARS, low=1, high=MAX_MAX_PROMPT_CHARS, integer=True
            )
        )
        recall_timeout = get.number(ENV_MEMORY_RECALL_TIMEOUT_SECONDS, default=2.0, low=0.05, high=60.0)
        retain_wait = get.number(ENV_MEMORY_RETAIN_WAIT_SECONDS, default=30.0, low=0.1, high=900.0)
        allow_anonymous = get.flag(ENV_ALLOW_ANONYMOUS)

        if problems:
            raise SettingsError(problems)
        assert agent_name is not None
        assert url is not None
        assert mode is not None
        assert provider is not None
        return cls(
            agent_name=agent_name,
            hindsight_api_url=url.rstrip("/"),
            auth_mode=mode,
            model_provider=provider,
            hindsight_api_key=api_key,
            hindsight_api_key_secret_arn=secret_arn,
            jwt_discovery_url=discovery,
            jwt_issuer=issuer,
            jwt_jwks_parameter=jwks_parameter,
            jwt_allowed_clients=clients,
            jwt_allowed_audience=audience,
            jwt_token_use=token_use,
            jwt_user_claim=user_claim,
            jwt_tenant_claim=tenant_claim,
            jwt_algorithms=algorithms,
            jwt_leeway_s=leeway,
            jwt_max_token_bytes=max_token,
            tenant_id=tenant_id,
            tenant_header=tenant_header,
            allow_anonymous=allow_anonymous,
            model_id=model_id,
            model_max_tokens=max_tokens,
            max_prompt_chars=max_prompt,
            recall_timeout_s=recall_timeout,
            retain_wait_s=retain_wait,
        )


class _Reader:
    """Reads typed values from the mapping, recording each problem instead of stopping at the first."""

    def __init__(self, env: Mapping[str, str], problems: list[str]) -> None:
        self._env = env
        self._problems = problems

    def text(self, name: str) -> str | None:
        value = self._env.get(name)
        if value is None or not value.strip():
            return None
        return value.strip()

    def csv(self, name: str) -> tuple[str, ...]:
        value = self.text(name)
        if value is None:
            return ()
        return tuple(item.strip() for item in value.split(",") if item.strip())

    def flag(self, name: str) -> bool:
        value = (self._env.get(name) or "").strip().lower()
        if value in _TRUE:
            return True
        if value not in _FALSE:
            self._problems.append(f"{name} must be true or false, got {value!r}")
        return False

    def choice(self, name: str, enum: type[_E], *, default: _E | None) -> _E | None:
        value = self.text(name)
        if value is None:
            return default
        try:
            return enum(value.lower())
        except ValueError:
            allowed = ", ".join(member.value for member in enum)
            self._problems.append(f"{name} must be one of: {allowed}; got {value!r}")
            return default

    def number(self, name: str, *, default: float, low: float, high: float, integer: bool = False) -> float:
        value = self.text(name)
        if value is None:
            return default
        try:
            number = int(value) if integer else float(value)
        except ValueError:
            self._problems.append(f"{name} must be {'an integer' if integer else 'a number'}, got {value!r}")
            return default
        if not math.isfinite(number) or not low <= number <= high:
            self._problems.append(f"{name} must be between {low:g} and {high:g}, got {value!r}")
            return default
        return number
