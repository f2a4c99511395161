"""Configuration of the isolation extension: parsed once from the dict Hindsight's loader hands to ``__init__``.

Hindsight's extension loader (``hindsight_api/extensions/loader.py``) collects every ``HINDSIGHT_API_TENANT_*``
variable except ``..._EXTENSION``, strips the prefix and lowercases the rest, and passes the result to the tenant
extension's constructor. The token checks are the identity contract's
(:class:`memory_adapter.identity.settings.JwtSettings`, read under ``jwt_`` keys, so the agent and this extension
accept the same tokens by construction); every other setting is a field naming its key, default and bounds
(:func:`~memory_adapter.settings_fields.setting`; the environment variable is ``HINDSIGHT_API_TENANT_`` + the key
upper-cased), and every problem is reported in one error. Standard library
only, so the stack and the local server manager can import :func:`server_env` without pulling in Hindsight or PyJWT.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from hindsight_isolation.fading import DEFAULT_FLOOR, FadingRules, parse_instant
from memory_adapter.identity.settings import JwtSettings
from memory_adapter.missions import Missions
from memory_adapter.settings_fields import declared, env_names, env_of, read_declared, setting
from memory_adapter.settings_reader import Naming, SettingsReader

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
    "fading_settings",
    "server_env",
    "tenant_env",
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

_JWT_KEYS = frozenset(env_names(JwtSettings, JWT_NAMING))
#: The stock single global key: refused (see :meth:`IsolationSettings.from_config`).
_GLOBAL_KEY = "api_key"
#: ``AGENT_TENANT`` value meaning "the agent's banks in every tenant" (IAM runtimes taking the tenant from a header).
ANY_TENANT = "*"
#: How long after ``exp`` a user token may still retain (and only retain) into its own banks, in seconds: the one
#: default, locally and deployed (``auth.retain_grace_seconds`` null in cdk.json means this).
DEFAULT_EXPIRY_GRACE_S = 3600.0
#: Hard upper bound on the grace window: a day-old stolen token must not write anywhere.
MAX_EXPIRY_GRACE_S = 24 * 3600.0
#: Recalls served at once per server process at most (the adaptive limit's ceiling). Small on purpose: the slots'
#: throughput is the CPU's, and each extra slot only lengthens every recall it shares the CPU with.
DEFAULT_RECALL_CONCURRENCY: Final = 4
#: The longest a recall with a deadline is expected to queue before it is shed, whatever its deadline allows.
DEFAULT_RECALL_MAX_WAIT_S: Final = 0.05
#: How much slower than a recall served alone the recent recalls may run before the limit comes down (0: a fixed
#: limit of ``concurrency``).
DEFAULT_RECALL_LATENCY_TOLERANCE: Final = 1.5
#: How much longer than a recall served alone an admitted recall that states a deadline may expect to take, its wait
#: included (0: only its deadline and the queueing bound): issue 34's served turn within 2x the unloaded turn.
DEFAULT_RECALL_LATENCY_TARGET: Final = 2.0
#: Recalls a second one user may queue without a deadline while recalls contend (hindsight_isolation/rate.py; 0: no
#: limit): an agent turn recalls once, so five a second is a batch job's pace, not a person's.
DEFAULT_RECALL_USER_RATE: Final = 5.0
#: Minimum length of the operator and agent keys: they are bearer secrets compared verbatim.
MIN_KEY_LENGTH = 32


@dataclass(frozen=True, slots=True)
class AdmissionConfig:
    """How admission control of recalls runs (:mod:`hindsight_isolation.admission`): ``concurrency`` slots at most
    (0: no gate), fewer while recent recalls run over ``tolerance`` times a recall served alone (0: always
    ``concurrency``), ``max_wait_s`` of expected queueing at most for a recall that states a deadline, and expected
    to be answered within ``target`` times a recall served alone (0: within its deadline); one user's recalls that
    state no deadline queue at ``user_rate`` a second at most (0: no limit)."""

    concurrency: int = DEFAULT_RECALL_CONCURRENCY
    max_wait_s: float = DEFAULT_RECALL_MAX_WAIT_S
    tolerance: float = DEFAULT_RECALL_LATENCY_TOLERANCE
    target: float = DEFAULT_RECALL_LATENCY_TARGET
    user_rate: float = DEFAULT_RECALL_USER_RATE


class ConfigError(ValueError):
    """The extension's configuration is unusable; ``problems`` lists every reason (so does the message)."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("hindsight_isolation: invalid configuration: " + "; ".join(problems))
        self.problems = problems


def tenant_env(key: str) -> str:
    """The server's environment variable of the extension's setting ``key`` (a field of :class:`IsolationSettings`,
    or a ``jwt_`` key); a key the extension does not read raises ``KeyError``."""
    if key not in IsolationSettings.known_keys():
        raise KeyError(f"the isolation extension reads no setting {key!r}")
    return ENV_TENANT_PREFIX + key.upper()


def _missions(get: SettingsReader, key: str) -> Missions:
    missions, problems = Missions.checked(
        get.json_object(key, what="a JSON object of agent name -> mission"), shown_prefix=get.name(key) + "."
    )
    for problem in problems:
        get.problem(problem)
    return missions


def _half_lives(get: SettingsReader, key: str) -> Mapping[str, float | None] | None:
    """The half-lives given (kind -> days, ``None``: never fades), with the defaults of the kinds not given."""
    given = get.json_object(key, what="a JSON object of memory kind -> half-life days")
    if given is None:
        return None
    rules, problems = FadingRules.checked(given, shown=get.name(key))
    for problem in problems:
        get.problem(problem)
    return _half_life_map(rules)


def _half_life_map(rules: FadingRules) -> dict[str, float | None]:
    return {kind.value: days for kind, days in rules.half_life_days.items()}


def _instant(get: SettingsReader, key: str) -> datetime | None:
    text = get.text(key)
    if text is None:
        return None
    try:
        return parse_instant(text)
    except ValueError as exc:
        get.problem(f"{get.name(key)}: {exc}")
        return None


def fading_settings(rules: FadingRules | None) -> dict[str, Any]:
    """The fading fields of :class:`IsolationSettings` that apply ``rules`` (``None``: fading off)."""
    if rules is None:
        return {}
    return {"fading_on": True, "fading_half_life_days": _half_life_map(rules), "fading_floor": rules.floor}


def _events_queue(get: SettingsReader, key: str) -> str | None:
    queue = get.text(key)
    if queue is not None and not (queue.startswith("https://") and queue.endswith(".fifo")):
        get.problem(
            f"{get.name(key)} must be an https:// SQS FIFO queue URL ending in .fifo (events of one bank stay in "
            "order only on a FIFO queue)"
        )
    return queue


@dataclass(frozen=True, slots=True, kw_only=True)
class IsolationSettings:
    """Everything the tenant extension needs, parsed and checked; each setting a field naming its key.

    ``jwt`` is ``None`` when no token setting is configured (an IAM-only deployment: the agent key and the operator
    key authenticate, every user token is refused).
    """

    jwt: JwtSettings | None = None
    expiry_grace_s: float = setting(
        "expiry_grace_s", DEFAULT_EXPIRY_GRACE_S, low=0, high=MAX_EXPIRY_GRACE_S, always=True
    )
    """Always stated: the retain queue's retry window is its length."""
    operator_key: str | None = setting("operator_key", repr=False)
    agent_key: str | None = setting("agent_key", repr=False)
    agent_name: str | None = setting("agent_name")
    agent_tenant: str | None = setting("agent_tenant")
    token_cache_ttl_s: float = setting("token_cache_ttl_s", 60.0, low=0)
    """Seconds a verified token's result is reused ..."""
    token_cache_size: int = setting("token_cache_size", 10_000, low=0)
    """... and how many results are kept."""
    schema: str | None = setting("schema")
    events_file: str | None = setting("events_file")
    """Memory events (hindsight_isolation/events.py, docs/events.md): one sink at most; off when neither is set."""
    events_queue_url: str | None = setting("events_queue_url", parse=_events_queue)
    events_include_text: bool = setting("events_include_text", False)
    max_body_mib: int = setting("max_body_mib", 16, low=1, high=1024)
    """Largest request body in MiB anyone but the operator may send (hindsight_isolation/guard.py): 413 past it,
    before it is read. 16: twice the largest record the agent retains (a queued record inflates to 8 MiB at most)."""
    missions: Missions = setting("missions", Missions(), parse=_missions, write=Missions.to_json)
    """What memory keeps, per agent (JSON agent name -> mission, as the agent's HINDSIGHT_ADAPTER_MISSIONS): the
    server applies it to each bank of that agent before a caller's retain (hindsight_isolation/missions.py)."""
    recall_concurrency: int = setting("recall_concurrency", DEFAULT_RECALL_CONCURRENCY, low=0, high=256)
    """Admission control of recalls (hindsight_isolation/admission.py): recalls served at once at most (0: no
    admission control; more than Hindsight's own recall lane, 16 per core, is no gate at all) ..."""
    recall_max_wait_ms: float = setting("recall_max_wait_ms", DEFAULT_RECALL_MAX_WAIT_S * 1000, low=0, high=60_000)
    """... the longest expected queueing of a recall that states a deadline ..."""
    recall_latency_tolerance: float = setting(
        "recall_latency_tolerance", DEFAULT_RECALL_LATENCY_TOLERANCE, low=0, high=100
    )
    """... how much slower than a recall served alone recent recalls may run before fewer are let in at once
    (0: always ``recall_concurrency``) ..."""
    recall_latency_target: float = setting("recall_latency_target", DEFAULT_RECALL_LATENCY_TARGET, low=0, high=100)
    """... and within how many times a recall served alone a recall that states a deadline must expect its answer,
    wait included, to be admitted (0: within its deadline) ..."""
    recall_user_rate: float = setting("recall_user_rate", DEFAULT_RECALL_USER_RATE, low=0, high=10_000)
    """... and how many recalls a second one user may queue without a deadline while recalls contend (0: no
    limit)."""
    fading_on: bool = setting("fading", False)
    """Fading and reinforcement (hindsight_isolation/fading.py, docs/memory.md): off unless on (:attr:`fading`) ..."""
    fading_half_life_days: Mapping[str, float | None] | None = setting("fading_half_life_days", parse=_half_lives)
    """... the half-life in days of each memory kind (``None``: the defaults) ..."""
    fading_floor: float = setting("fading_floor", DEFAULT_FLOOR, low=0, high=0.99)
    """... and the strength below which a memory is left out."""
    fading_clock: datetime | None = setting("fading_clock", kind=datetime, parse=_instant, write=datetime.isoformat)
    """A fixed "now" for fading, and whether a request's clock header is honoured: tests and local runs only (the
    stack never sets them)."""
    fading_clock_header: bool = setting("fading_clock_header", False)

    @property
    def fading(self) -> FadingRules | None:
        """The fading rules; ``None`` when fading is off."""
        if not self.fading_on:
            return None
        return FadingRules.from_mapping(self.fading_half_life_days, floor=self.fading_floor)

    @property
    def admission(self) -> AdmissionConfig:
        """How admission control of recalls runs."""
        return AdmissionConfig(
            concurrency=self.recall_concurrency,
            max_wait_s=self.recall_max_wait_ms / 1000,
            tolerance=self.recall_latency_tolerance,
            target=self.recall_latency_target,
            user_rate=self.recall_user_rate,
        )

    @property
    def verifier(self) -> Mapping[str, Any]:
        """The configured token settings as ``JwtSettings`` keyword arguments (``{}`` without an issuer)."""
        return self.jwt.given() if self.jwt is not None else {}

    def to_env(self) -> dict[str, str]:
        """The server environment that loads the extension's three slots with these settings, read back by
        :meth:`from_env` (what the stack and the local server start Hindsight with).

        Secrets are included when set (in the stack they come from Secrets Manager as ECS secrets, so it leaves them
        ``None``).
        """
        jwt = self.jwt.to_env(JWT_NAMING) if self.jwt is not None else {}
        return {
            **SERVER_REQUIRED_ENV,
            **{ENV_TENANT_PREFIX + key.upper(): value for key, value in {**env_of(self), **jwt}.items()},
        }

    @classmethod
    def known_keys(cls) -> frozenset[str]:
        """Every key of the loader's dict these settings are read from."""
        return _JWT_KEYS | frozenset(env_names(cls))

    @classmethod
    def env_names(cls) -> tuple[str, ...]:
        """Every variable of the server's environment the extension's slots and settings are read from."""
        return (*SERVER_REQUIRED_ENV, *sorted(ENV_TENANT_PREFIX + key.upper() for key in cls.known_keys()))

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
                f"every user's bank is what this extension removes; set {get.name('operator_key')} for "
                f"administration (never give it to the agent)"
            )
        unknown = get.unknown(cls.known_keys() | {_GLOBAL_KEY})
        if unknown:
            get.problem("unknown settings: " + ", ".join(unknown))
        values = read_declared(cls, get)
        values["jwt"] = JwtSettings.read(get) if any(get.given(key) for key in _JWT_KEYS) else None
        _check(values, get)
        if get.problems:
            raise ConfigError(get.problems)
        return cls(**values)


def _check(values: Mapping[str, Any], get: SettingsReader) -> None:
    """The rules between settings."""
    operator_key, agent_key = values["operator_key"], values["agent_key"]
    for key in ("operator_key", "agent_key"):
        if values[key] is not None and len(values[key]) < MIN_KEY_LENGTH:
            get.problem(f"{get.name(key)} must be at least {MIN_KEY_LENGTH} characters")
    if agent_key is not None and values["agent_name"] is None:
        get.problem(
            f"{get.name('agent_key')} needs {get.name('agent_name')}: the agent credential is limited to one agent's "
            "banks"
        )
    if agent_key is None and (values["agent_name"] is not None or values["agent_tenant"] is not None):
        get.problem(f"{get.name('agent_name')}/{get.name('agent_tenant')} are set but {get.name('agent_key')} is not")
    if operator_key is not None and operator_key == agent_key:
        get.problem("the operator key and the agent key must differ")
    if values["jwt"] is None and operator_key is None and agent_key is None:
        get.problem(
            f"nothing could ever authenticate: configure a token issuer ({get.name(JWT_NAMING.key('discovery_url'))} "
            f"or {get.name(JWT_NAMING.key('issuer'))}), an agent key or an operator key"
        )
    if values["events_file"] is not None and values["events_queue_url"] is not None:
        get.problem(f"set {get.name('events_file')} or {get.name('events_queue_url')}, not both")
    if values["events_include_text"] and values["events_file"] is None and values["events_queue_url"] is None:
        get.problem(f"{get.name('events_include_text')} is set but no events sink is")
    # Every fading setting but the switch, given (a flag only when on): it would do nothing while fading is off.
    fading = [f.name for f, _ in declared(IsolationSettings) if f.name.startswith("fading_") and f.name != "fading_on"]
    tuned = [key for key in fading if get.given(key) and values[key] is not False]
    if not values["fading_on"] and tuned:
        get.problem(
            f"{', '.join(get.name(key) for key in tuned)} set but {get.name('fading')} is off: set "
            f"{get.name('fading')}=true to use fading"
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
