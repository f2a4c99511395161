"""Configuration of the isolation extension: parsed once from the dict Hindsight's loader hands to ``__init__``.

Hindsight's extension loader (``hindsight_api/extensions/loader.py``) collects every ``HINDSIGHT_API_TENANT_*``
variable except ``..._EXTENSION``, strips the prefix and lowercases the rest, and passes the result to the tenant
extension's constructor. The token checks are the identity contract's
(:class:`memory_adapter.identity.settings.JwtSettings`, read under ``jwt_`` keys, so the agent and this extension
accept the same tokens by construction); this module names the other keys (the ``KEY_*`` constants; the environment
variable is ``HINDSIGHT_API_TENANT_`` + the key upper-cased) and reports every problem in one error. Standard library
only, so the stack and the local server manager can import :func:`server_env` without pulling in Hindsight or PyJWT.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from hindsight_isolation.fading import DEFAULT_FLOOR, FadingRules, parse_instant
from memory_adapter.identity.settings import JwtSettings
from memory_adapter.missions import Missions
from memory_adapter.settings_reader import Naming, SettingsReader, env_dict

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
    "JWT_NAMING",
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
#: docs/operating.md), and no LLM request traces (forgetting a user must leave none of their text behind).
SERVER_REQUIRED_ENV: Mapping[str, str] = {
    ENV_TENANT_EXTENSION: TENANT_CLASS,
    ENV_OPERATION_VALIDATOR_EXTENSION: OPERATION_VALIDATOR_CLASS,
    ENV_HTTP_EXTENSION: HTTP_EXTENSION_CLASS,
    ENV_ENABLE_DOCUMENT_IMPORT_API: "false",
    ENV_LLM_TRACE_ENABLED: "false",
}

#: Every key below reaches us as ``ENV_TENANT_PREFIX + key.upper()``.
ENV_TENANT_PREFIX = "HINDSIGHT_API_TENANT_"
#: How this extension spells the identity contract's settings: ``jwt_leeway_s``, shown as the variable users set.
JWT_NAMING = Naming(prefix="jwt_", seconds="_s", shown_prefix=ENV_TENANT_PREFIX, shown_upper=True)

# Issuer (the same fields the agent verifies with; every JwtSettings field is accepted under JWT_NAMING).
KEY_DISCOVERY_URL = JWT_NAMING.key("discovery_url")
KEY_ISSUER = JWT_NAMING.key("issuer")
KEY_JWKS_URL = JWT_NAMING.key("jwks_url")
KEY_STATIC_JWKS = JWT_NAMING.key("static_jwks")
KEY_ALLOWED_CLIENTS = JWT_NAMING.key("allowed_clients")
KEY_ALLOWED_AUDIENCE = JWT_NAMING.key("allowed_audience")
KEY_TOKEN_USE = JWT_NAMING.key("token_use")
KEY_USER_CLAIM = JWT_NAMING.key("user_claim")
KEY_TENANT_CLAIM = JWT_NAMING.key("tenant_claim")
KEY_ALGORITHMS = JWT_NAMING.key("algorithms")
KEY_LEEWAY_S = JWT_NAMING.key("leeway_s")
KEY_JWKS_CACHE_TTL_S = JWT_NAMING.key("jwks_cache_ttl_s")
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
# Memory events (hindsight_isolation/events.py, docs/events.md): one sink at most; off when neither is set.
KEY_EVENTS_FILE = "events_file"
KEY_EVENTS_QUEUE_URL = "events_queue_url"
KEY_EVENTS_INCLUDE_TEXT = "events_include_text"
# Fading and reinforcement (hindsight_isolation/fading.py, docs/memory.md): off unless FADING is on.
KEY_FADING = "fading"
KEY_FADING_HALF_LIFE_DAYS = "fading_half_life_days"
KEY_FADING_FLOOR = "fading_floor"
#: Tests and local runs only (the stack never sets them): a fixed "now", or "now" per request from a header.
KEY_FADING_CLOCK = "fading_clock"
KEY_FADING_CLOCK_HEADER = "fading_clock_header"
#: What memory keeps, per agent (JSON agent name -> mission, as the agent's HINDSIGHT_ADAPTER_MISSIONS): the server
#: applies it to each bank of that agent before a caller's retain (hindsight_isolation/missions.py).
KEY_MISSIONS = "missions"
# Admission control of recalls (hindsight_isolation/admission.py): recalls served at once (0: no admission control)
# and the longest expected queueing of a recall that states a deadline.
KEY_RECALL_CONCURRENCY = "recall_concurrency"
KEY_RECALL_MAX_WAIT_MS = "recall_max_wait_ms"

_JWT_KEYS = JwtSettings.setting_keys(JWT_NAMING)
_KNOWN_KEYS = _JWT_KEYS | {v for name, v in dict(globals()).items() if name.startswith("KEY_") and isinstance(v, str)}
#: The stock single global key: refused (see :meth:`IsolationSettings.from_config`).
_GLOBAL_KEY = "api_key"

#: How long after ``exp`` a user token may still retain (and only retain) into its own banks, in seconds: the one
#: default, locally and deployed (``auth.retain_grace_seconds`` null in cdk.json means this).
DEFAULT_EXPIRY_GRACE_S = 3600.0
#: Hard upper bound on the grace window: a day-old stolen token must not write anywhere.
MAX_EXPIRY_GRACE_S = 24 * 3600.0
#: Seconds a verified token's result is reused, and how many results are kept.
DEFAULT_TOKEN_CACHE_TTL_S = 60.0
DEFAULT_TOKEN_CACHE_SIZE = 10_000
#: Recalls served at once per server process. Small on purpose: the slots' throughput is the CPU's (a recall is
#: ~10-20 ms of CPU), and each extra slot only lengthens every recall it shares the CPU with.
DEFAULT_RECALL_CONCURRENCY: Final = 4
#: The longest a recall with a deadline is expected to queue before it is shed, whatever its deadline allows.
DEFAULT_RECALL_MAX_WAIT_S: Final = 0.2
#: Upper bound of ``RECALL_MAX_WAIT_MS``.
MAX_RECALL_MAX_WAIT_MS = 60_000
#: Upper bound of ``RECALL_CONCURRENCY`` (Hindsight's own recall lane admits 16 per core: more is no gate at all).
MAX_RECALL_CONCURRENCY = 256
#: Minimum length of the operator and agent keys: they are bearer secrets compared verbatim.
MIN_KEY_LENGTH = 32


@dataclass(frozen=True, slots=True)
class AdmissionConfig:
    """How admission control of recalls runs (:mod:`hindsight_isolation.admission`): ``concurrency`` slots (0: no
    gate), ``max_wait_s`` of expected queueing at most for a recall that states a deadline."""

    concurrency: int = DEFAULT_RECALL_CONCURRENCY
    max_wait_s: float = DEFAULT_RECALL_MAX_WAIT_S


def _unless(value: float, default: float) -> float | None:
    """``value``, or ``None`` (not written) when it is the default."""
    return None if value == default else value


class ConfigError(ValueError):
    """The extension's configuration is unusable; ``problems`` lists every reason (so does the message)."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("hindsight_isolation: invalid configuration: " + "; ".join(problems))
        self.problems = problems


@dataclass(frozen=True, slots=True)
class IsolationSettings:
    """Everything the tenant extension needs, parsed and checked.

    ``jwt`` is ``None`` when no token setting is configured (an IAM-only deployment: the agent key and the operator
    key authenticate, every user token is refused).
    """

    jwt: JwtSettings | None = None
    expiry_grace_s: float = DEFAULT_EXPIRY_GRACE_S
    operator_key: str | None = field(default=None, repr=False)
    agent_key: str | None = field(default=None, repr=False)
    agent_name: str | None = None
    agent_tenant: str | None = None
    token_cache_ttl_s: float = DEFAULT_TOKEN_CACHE_TTL_S
    token_cache_size: int = DEFAULT_TOKEN_CACHE_SIZE
    schema: str | None = None
    events_file: str | None = None
    events_queue_url: str | None = None
    events_include_text: bool = False
    fading: FadingRules | None = None
    fading_clock: datetime | None = None
    fading_clock_header: bool = False
    missions: Missions = field(default_factory=Missions)
    admission: AdmissionConfig = field(default_factory=AdmissionConfig)

    @property
    def verifier(self) -> Mapping[str, Any]:
        """The configured token settings as ``JwtSettings`` keyword arguments (``{}`` without an issuer)."""
        return self.jwt.given() if self.jwt is not None else {}

    def to_env(self) -> dict[str, str]:
        """The server environment that loads the extension's three slots with these settings, read back by
        :meth:`from_env` (what the stack and the local server start Hindsight with).

        The grace window is always stated (the retain queue's retry window is its length); secrets are included
        when set (in the stack they come from Secrets Manager as ECS secrets, so it leaves them ``None``).
        """
        values: dict[str, object] = {
            KEY_EXPIRY_GRACE_S: self.expiry_grace_s,
            KEY_AGENT_NAME: self.agent_name,
            KEY_AGENT_TENANT: self.agent_tenant,
            KEY_OPERATOR_KEY: self.operator_key,
            KEY_AGENT_KEY: self.agent_key,
            KEY_TOKEN_CACHE_TTL_S: _unless(self.token_cache_ttl_s, DEFAULT_TOKEN_CACHE_TTL_S),
            KEY_TOKEN_CACHE_SIZE: _unless(self.token_cache_size, DEFAULT_TOKEN_CACHE_SIZE),
            KEY_SCHEMA: self.schema,
            KEY_EVENTS_FILE: self.events_file,
            KEY_EVENTS_QUEUE_URL: self.events_queue_url,
            KEY_EVENTS_INCLUDE_TEXT: self.events_include_text or None,
            **_fading_values(self.fading, self.fading_clock, self.fading_clock_header),
            KEY_MISSIONS: self.missions.to_json() if self.missions.by_agent else None,
            KEY_RECALL_CONCURRENCY: _unless(self.admission.concurrency, DEFAULT_RECALL_CONCURRENCY),
            KEY_RECALL_MAX_WAIT_MS: _unless(self.admission.max_wait_s * 1000, DEFAULT_RECALL_MAX_WAIT_S * 1000),
        }
        tenant = {ENV_TENANT_PREFIX + key.upper(): value for key, value in env_dict(values).items()}
        jwt = self.jwt.to_env(JWT_NAMING) if self.jwt is not None else {}
        return {
            **SERVER_REQUIRED_ENV,
            **tenant,
            **{ENV_TENANT_PREFIX + key.upper(): value for key, value in jwt.items()},
        }

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> IsolationSettings:
        """What the extension reads from the server's environment: the loader's dict of every
        ``HINDSIGHT_API_TENANT_*`` variable but the slot itself, prefix stripped and lowercased
        (:meth:`from_config`)."""
        config = {
            key.removeprefix(ENV_TENANT_PREFIX).lower(): value
            for key, value in env.items()
            if key.startswith(ENV_TENANT_PREFIX) and key != ENV_TENANT_EXTENSION
        }
        return cls.from_config(config)

    @classmethod
    def from_config(cls, config: Mapping[str, str]) -> IsolationSettings:
        """Parse the loader's dict (keys lowercased, prefix stripped); raise :class:`ConfigError` with all problems."""
        get = SettingsReader(config, JWT_NAMING)
        if _GLOBAL_KEY in config:
            get.problem(
                f"{get.name(_GLOBAL_KEY)} is the stock single global key and is not accepted: a key that opens "
                f"every user's bank is what this extension removes; set {get.name(KEY_OPERATOR_KEY)} for "
                f"administration (never give it to the agent)"
            )
        unknown = get.unknown(_KNOWN_KEYS | {_GLOBAL_KEY})
        if unknown:
            get.problem("unknown settings: " + ", ".join(unknown))

        jwt = JwtSettings.read(get) if any(get.given(key) for key in _JWT_KEYS) else None
        grace = get.number(KEY_EXPIRY_GRACE_S, DEFAULT_EXPIRY_GRACE_S, low=0, high=MAX_EXPIRY_GRACE_S)
        operator_key, agent_key = get.text(KEY_OPERATOR_KEY), get.text(KEY_AGENT_KEY)
        agent_name, agent_tenant = get.text(KEY_AGENT_NAME), get.text(KEY_AGENT_TENANT)
        for key, value in ((KEY_OPERATOR_KEY, operator_key), (KEY_AGENT_KEY, agent_key)):
            if value is not None and len(value) < MIN_KEY_LENGTH:
                get.problem(f"{get.name(key)} must be at least {MIN_KEY_LENGTH} characters")
        if agent_key is not None and agent_name is None:
            get.problem(
                f"{get.name(KEY_AGENT_KEY)} needs {get.name(KEY_AGENT_NAME)}: the agent credential is limited to one "
                "agent's banks"
            )
        if agent_key is None and (agent_name is not None or agent_tenant is not None):
            get.problem(
                f"{get.name(KEY_AGENT_NAME)}/{get.name(KEY_AGENT_TENANT)} are set but {get.name(KEY_AGENT_KEY)} is not"
            )
        if operator_key is not None and operator_key == agent_key:
            get.problem("the operator key and the agent key must differ")
        if jwt is None and operator_key is None and agent_key is None:
            get.problem(
                f"nothing could ever authenticate: configure a token issuer ({get.name(KEY_DISCOVERY_URL)} or "
                f"{get.name(KEY_ISSUER)}), an agent key or an operator key"
            )
        events_file, events_queue = get.text(KEY_EVENTS_FILE), get.text(KEY_EVENTS_QUEUE_URL)
        if events_file is not None and events_queue is not None:
            get.problem(f"set {get.name(KEY_EVENTS_FILE)} or {get.name(KEY_EVENTS_QUEUE_URL)}, not both")
        if events_queue is not None and not (events_queue.startswith("https://") and events_queue.endswith(".fifo")):
            get.problem(
                f"{get.name(KEY_EVENTS_QUEUE_URL)} must be an https:// SQS FIFO queue URL ending in .fifo (events "
                "of one bank stay in order only on a FIFO queue)"
            )
        events_text = get.flag(KEY_EVENTS_INCLUDE_TEXT)
        if events_text and events_file is None and events_queue is None:
            get.problem(f"{get.name(KEY_EVENTS_INCLUDE_TEXT)} is set but no events sink is")
        fading, fading_clock, fading_clock_header = _fading(get)
        missions, mission_problems = Missions.checked(
            get.json_object(KEY_MISSIONS, what="a JSON object of agent name -> mission"),
            shown_prefix=get.name(KEY_MISSIONS) + ".",
        )
        for problem in mission_problems:
            get.problem(problem)
        cache_ttl = get.number(KEY_TOKEN_CACHE_TTL_S, DEFAULT_TOKEN_CACHE_TTL_S, low=0)
        cache_size = get.integer(KEY_TOKEN_CACHE_SIZE, DEFAULT_TOKEN_CACHE_SIZE, low=0)
        admission = AdmissionConfig(
            concurrency=get.integer(
                KEY_RECALL_CONCURRENCY, DEFAULT_RECALL_CONCURRENCY, low=0, high=MAX_RECALL_CONCURRENCY
            ),
            max_wait_s=get.number(
                KEY_RECALL_MAX_WAIT_MS, DEFAULT_RECALL_MAX_WAIT_S * 1000, low=0, high=MAX_RECALL_MAX_WAIT_MS
            )
            / 1000,
        )
        if get.problems:
            raise ConfigError(get.problems)
        return cls(
            jwt=jwt,
            expiry_grace_s=grace,
            operator_key=operator_key,
            agent_key=agent_key,
            agent_name=agent_name,
            agent_tenant=agent_tenant,
            token_cache_ttl_s=cache_ttl,
            token_cache_size=cache_size,
            schema=get.text(KEY_SCHEMA),
            events_file=events_file,
            events_queue_url=events_queue,
            events_include_text=events_text,
            fading=fading,
            fading_clock=fading_clock,
            fading_clock_header=fading_clock_header,
            missions=missions,
            admission=admission,
        )


def _fading_values(rules: FadingRules | None, clock: datetime | None, clock_header: bool) -> dict[str, object]:
    """The fading settings as :meth:`IsolationSettings.to_env` writes them (the inverse of :func:`_fading`)."""
    if rules is None:
        return {}
    return {
        KEY_FADING: True,
        KEY_FADING_HALF_LIFE_DAYS: {kind.value: days for kind, days in rules.half_life_days.items()},
        KEY_FADING_FLOOR: _unless(rules.floor, DEFAULT_FLOOR),
        KEY_FADING_CLOCK: clock.isoformat() if clock is not None else None,
        KEY_FADING_CLOCK_HEADER: clock_header or None,
    }


def _fading(get: SettingsReader) -> tuple[FadingRules | None, datetime | None, bool]:
    """The fading settings: the rules (``None``: off), the fixed clock and whether the clock header is honoured."""
    on = get.flag(KEY_FADING)
    floor = get.number(KEY_FADING_FLOOR, DEFAULT_FLOOR, low=0, high=0.99)
    half_lives = get.json_object(KEY_FADING_HALF_LIFE_DAYS, what="a JSON object of memory kind -> half-life days")
    rules, problems = FadingRules.checked(half_lives, floor=floor, shown=get.name(KEY_FADING_HALF_LIFE_DAYS))
    for problem in problems:
        get.problem(problem)
    clock: datetime | None = None
    raw_clock = get.text(KEY_FADING_CLOCK)
    if raw_clock is not None:
        try:
            clock = parse_instant(raw_clock)
        except ValueError as exc:
            get.problem(f"{get.name(KEY_FADING_CLOCK)}: {exc}")
    header = get.flag(KEY_FADING_CLOCK_HEADER)
    tuned = [key for key in (KEY_FADING_HALF_LIFE_DAYS, KEY_FADING_FLOOR, KEY_FADING_CLOCK) if get.given(key)]
    if not on and (tuned or header):
        get.problem(
            f"{', '.join(get.name(k) for k in tuned + ([KEY_FADING_CLOCK_HEADER] if header else []))} set but "
            f"{get.name(KEY_FADING)} is off: set {get.name(KEY_FADING)}=true to use fading"
        )
    return (rules if on else None), clock, header


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
    missions: Missions | None = None,
) -> dict[str, str]:
    """The environment that loads the extension's three slots with these settings (for local runs and tests):
    :meth:`IsolationSettings.to_env` of the settings these arguments name.

    Secrets (``operator_key``, ``agent_key``) are included as given: in the stack they come from Secrets Manager
    through ECS secrets instead.
    """
    token_checks = {
        "discovery_url": discovery_url,
        "issuer": issuer,
        "jwks_url": jwks_url,
        "allowed_clients": allowed_clients,
        "allowed_audience": allowed_audience,
        "tenant_claim": tenant_claim,
    }
    given = {name: value for name, value in token_checks.items() if value not in (None, ())}
    return IsolationSettings(
        jwt=JwtSettings(**given) if given else None,  # type: ignore[arg-type]
        expiry_grace_s=DEFAULT_EXPIRY_GRACE_S if expiry_grace_s is None else float(expiry_grace_s),
        operator_key=operator_key,
        agent_key=agent_key,
        agent_name=agent_name,
        agent_tenant=agent_tenant,
        missions=missions if missions is not None else Missions(),
    ).to_env()
