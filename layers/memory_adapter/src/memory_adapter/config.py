"""Configuration: the prior-art ``configure()`` API plus the adapter's own settings, each with an environment variable.

:class:`HindsightAgentCoreConfig` is the one definition of the settings (field, default, meaning). Its field types
say how each ``HINDSIGHT_ADAPTER_<NAME>`` variable is parsed (:data:`ENV_VARS`, by the type of the default),
:data:`_BOUNDS` what values are accepted; :func:`read_settings` resolves all of them through the shared
:class:`~memory_adapter.settings_reader.SettingsReader`, so every problem is reported at once.

Precedence for every setting: adapter constructor argument > ``configure()`` > environment variable > default.
``configure()`` resolves the environment itself for the URL, the key and every setting it is not given (the new
settings default to ``None`` there), so the effective order is the same whether or not ``configure()`` is called.
The prior-art parameters of ``configure()`` keep their concrete defaults (``recall_budget``, ...) for
compatibility; once ``configure()`` is called, those values are explicit and their environment variables are not read.

There is no default URL: with none given anywhere, constructing an adapter raises :class:`ConfigurationError`
instead of posting conversations to a public SaaS endpoint.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from memory_adapter.constants import (
    ADAPTER_ENV_PREFIX,
    DEFAULT_RECALL_BUDGET,
    DEFAULT_RECALL_CANDIDATE_TOKENS,
    DEFAULT_RECALL_MAX_TOKENS,
    HINDSIGHT_API_KEY_ENV,
    HINDSIGHT_API_TOKEN_ENV,
    HINDSIGHT_API_URL_ENV,
    RECALL_BUDGETS,
)
from memory_adapter.exceptions import ConfigurationError
from memory_adapter.missions import Missions, MissionsError
from memory_adapter.settings_reader import SettingsReader, env_dict, out_of_range

__all__ = [
    "DEFAULT_HINDSIGHT_API_URL",
    "ENV_VARS",
    "HINDSIGHT_API_KEY_ENV",
    "HINDSIGHT_API_TOKEN_ENV",
    "HINDSIGHT_API_URL_ENV",
    "SETTING_NAMES",
    "HindsightAgentCoreConfig",
    "configure",
    "default_spool_dir",
    "get_config",
    "read_settings",
    "reset_config",
    "resolve_settings",
]

#: Compatibility name (the prior art's module constant). The prior art defaulted to a public SaaS endpoint; this
#: package has no default URL, which this empty value stands for: an adapter without a URL refuses to start.
DEFAULT_HINDSIGHT_API_URL: Final = ""


def default_spool_dir() -> str:
    """The spool directory used when none is configured: private to the OS user, under the temp directory.

    The temp directory is the one place writable on read-only container file systems (AgentCore, Lambda).
    """
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    return os.path.join(tempfile.gettempdir(), f"memory-adapter-{uid}", "spool")


@dataclass
class HindsightAgentCoreConfig:
    """Every setting of the adapter (prior-art fields first, then its own): what :func:`configure` sets globally, and
    what an adapter resolved (``adapter.settings``)."""

    hindsight_api_url: str = DEFAULT_HINDSIGHT_API_URL
    """Hindsight server URL. Empty means "not configured" (there is deliberately no SaaS default)."""
    api_key: str | None = field(default=None, repr=False)
    """Bearer credential used when a turn carries none of its own (kept out of ``repr``)."""
    recall_budget: str = DEFAULT_RECALL_BUDGET
    """Recall search depth: 'low', 'mid', or 'high'."""
    recall_max_tokens: int = DEFAULT_RECALL_MAX_TOKENS
    """Maximum tokens in the recalled memory block."""
    recall_candidate_tokens: int = DEFAULT_RECALL_CANDIDATE_TOKENS
    """Tokens of candidates the adapter asks Hindsight for and re-ranks itself before cutting to the block
    (:mod:`memory_adapter.rerank`); at most ``recall_max_tokens``: no re-ranking, Hindsight's order."""
    retain_async: bool = True
    """If True, ``after_turn`` returns at once; if False it waits until the retain is delivered or spooled."""
    timeout: float = 15.0
    """HTTP timeout in seconds for each retain attempt and other non-recall calls."""
    tags: list[str] = field(default_factory=list)
    """Default tags added to all retained memories."""
    verbose: bool = False
    """Log every memory operation at INFO (ids hashed)."""
    recall_timeout: float = 2.0
    """Deadline in seconds for one recall (or reflect); past it the turn continues without memory."""
    breaker_failure_threshold: int = 3
    """Consecutive failures that open the circuit breaker."""
    breaker_reset_timeout: float = 30.0
    """Seconds the breaker stays open before a background health probe may close it."""
    breaker_slow_threshold: int = 5
    """Recall deadline misses within ``breaker_slow_window`` that open the breaker (misses count apart from refused
    connections and 5xx: a busy Hindsight that still answers most calls degrades one turn at a time)."""
    breaker_slow_window: float = 30.0
    """Seconds over which deadline misses, and the calls that ended, are counted."""
    breaker_slow_ratio: float = 0.8
    """Share of the calls ended within ``breaker_slow_window`` that must have missed their deadline to open it."""
    breaker_slow_reset_timeout: float = 3.0
    """Seconds the breaker stays open after an opening caused only by deadline misses, before it is probed."""
    max_retries: int = 3
    """Retries of a retain after its first attempt (transient errors only), before it is spooled."""
    retry_base_delay: float = 0.2
    """First retry delay in seconds; doubles each retry, with full jitter."""
    retry_max_delay: float = 5.0
    """Cap of a single retry delay in seconds (a server ``Retry-After`` is honoured up to this cap)."""
    spool_dir: str = field(default_factory=default_spool_dir)
    """Directory of the durable spool for retains that could not be delivered (when no ``spool_queue_url``)."""
    spool_queue_url: str = ""
    """SQS queue URL of the durable spool (:class:`~memory_adapter.sqs_spool.SqsSpool`), which outlives the host: what
    the deployed stack sets. Empty: the local directory ``spool_dir``. The queue's consumer (the replay function)
    replays it, so ``auto_replay`` does not apply to it."""
    retain_workers: int = 4
    """Background threads delivering retains concurrently."""
    exit_flush_timeout: float = 5.0
    """Seconds the interpreter-exit hook waits for pending retains before spooling the rest."""
    auto_replay: bool = True
    """Replay the local spool in the background once Hindsight answers again (not a ``spool_queue_url``)."""
    missions: str = ""
    """JSON of agent name -> extraction mission (``cdk.json`` ``missions``), applied to each bank of that agent
    (:mod:`memory_adapter.missions`). Empty: banks keep their own settings."""
    log_hash_salt: str = field(default="", repr=False)
    """Salt of the short hashes that stand for bank ids in logs. Environment only (no argument): every process's logs
    read it there (:func:`memory_adapter.observability.short_hash`); a field so that it is listed, written and
    checked with the other settings."""

    def to_env(self) -> dict[str, str]:
        """The environment :func:`resolve_settings` reads back as these settings: the URL, the key when set, and
        each ``HINDSIGHT_ADAPTER_*`` setting that differs from its default (a default is stated once, here)."""
        defaults = HindsightAgentCoreConfig()
        return env_dict(
            {
                HINDSIGHT_API_URL_ENV: self.hindsight_api_url or None,
                HINDSIGHT_API_KEY_ENV: self.api_key,
                **{
                    variable: getattr(self, name)
                    for name, variable in ENV_VARS.items()
                    if getattr(self, name) != getattr(defaults, name)
                },
            }
        )


_CONNECTION: Final = ("hindsight_api_url", "api_key")
#: Every setting an adapter argument or ``configure()`` may give, in field order.
SETTING_NAMES: Final = tuple(f.name for f in dataclasses.fields(HindsightAgentCoreConfig))
#: The environment variable of every setting other than the URL and the key.
ENV_VARS: Final[Mapping[str, str]] = {
    name: ADAPTER_ENV_PREFIX + name.upper() for name in SETTING_NAMES if name not in _CONNECTION
}
#: Accepted values (see :func:`~memory_adapter.settings_reader.out_of_range`); durations are seconds.
_BOUNDS: Final[Mapping[str, Mapping[str, float]]] = {
    "recall_max_tokens": {"low": 1},
    "recall_candidate_tokens": {"low": 0},
    "timeout": {"above": 0},
    "recall_timeout": {"above": 0},
    "breaker_failure_threshold": {"low": 1},
    "breaker_reset_timeout": {"above": 0},
    "breaker_slow_threshold": {"low": 1},
    "breaker_slow_window": {"above": 0},
    "breaker_slow_ratio": {"low": 0, "high": 1},
    "breaker_slow_reset_timeout": {"above": 0},
    "max_retries": {"low": 0},
    "retry_base_delay": {"low": 0},
    "retry_max_delay": {"low": 0},
    "retain_workers": {"low": 1},
    "exit_flush_timeout": {"low": 0},
}
_DEFAULTS: Final = HindsightAgentCoreConfig()

_global_config: HindsightAgentCoreConfig | None = None


def read_settings(
    reader: SettingsReader,
    overrides: Mapping[str, Any],
    *,
    config: HindsightAgentCoreConfig | None = None,
    require_url: bool = True,
) -> HindsightAgentCoreConfig:
    """Resolve every setting (argument > ``configure()`` > environment > default); problems go to ``reader``.

    Args:
        reader: Reads the environment (its mapping) and collects problems, with those of the caller's own settings.
        overrides: Arguments by setting name; ``None`` means "not given".
        config: The global config, when :func:`configure` was called.
        require_url: A missing URL is a problem (not for :func:`configure`, which may leave it unset).
    """
    values: dict[str, Any] = {}
    for name in SETTING_NAMES:
        if name in _CONNECTION:
            continue
        given = overrides.get(name)
        source = name
        if given is not None:
            value = given
        elif config is not None:
            value = getattr(config, name)
        else:
            variable = ENV_VARS[name]
            value, source = (
                reader.typed(variable, getattr(_DEFAULTS, name)),
                variable if reader.given(variable) else name,
            )
        values[name] = list(value) if name == "tags" else value
        limits = _BOUNDS.get(name)
        if limits is None:
            continue
        try:
            problem = out_of_range(source, float(value), **limits)
        except (TypeError, ValueError):
            problem = f"{source} must be a number, got {value!r}"
        if problem is not None:
            reader.problem(problem)
    if values["recall_budget"] not in RECALL_BUDGETS:
        reader.problem(f"recall_budget must be one of {', '.join(RECALL_BUDGETS)}, got {values['recall_budget']!r}")
    if values["retry_max_delay"] < values["retry_base_delay"]:
        reader.problem("retry_max_delay must be at least retry_base_delay")
    if not values["spool_dir"]:
        reader.problem("spool_dir must not be empty")
    try:
        Missions.from_json(values["missions"])
    except MissionsError as exc:
        reader.problem(str(exc))
    if values["spool_queue_url"] and not values["spool_queue_url"].startswith(("https://", "http://")):
        reader.problem(f"spool_queue_url must be an SQS queue URL (https://sqs...), got {values['spool_queue_url']!r}")
    url = (
        overrides.get("hindsight_api_url")
        or (config.hindsight_api_url if config is not None else "")
        or reader.text(HINDSIGHT_API_URL_ENV)
        or ""
    )
    key = (
        overrides.get("api_key")
        or (config.api_key if config is not None else None)
        or reader.text(HINDSIGHT_API_KEY_ENV)
        or reader.text(HINDSIGHT_API_TOKEN_ENV)
    )
    if not url and require_url:
        reader.problem(
            f"no Hindsight URL configured: {HINDSIGHT_API_URL_ENV} is required (or pass hindsight_api_url=, or call "
            "configure(hindsight_api_url=...)); there is deliberately no default public endpoint"
        )
    elif url and not url.startswith(("http://", "https://")):
        reader.problem(f"hindsight_api_url must start with http:// or https://, got {url!r}")
    return HindsightAgentCoreConfig(hindsight_api_url=url.rstrip("/"), api_key=key, **values)


def resolve_settings(
    overrides: Mapping[str, Any], *, environ: Mapping[str, str] | None = None, config: HindsightAgentCoreConfig | None
) -> HindsightAgentCoreConfig:
    """Resolve every setting (argument > ``configure()`` > environment > default) and validate them all at once.

    Args:
        overrides: Constructor arguments; ``None`` values mean "not given".
        environ: Environment to read (defaults to ``os.environ``).
        config: The global config, when :func:`configure` was called.

    Raises:
        ConfigurationError: No URL anywhere, or invalid values (every problem listed in one message).
    """
    reader = SettingsReader(os.environ if environ is None else environ)
    settings = read_settings(reader, overrides, config=config)
    if reader.problems:
        raise ConfigurationError(reader.problems)
    return settings


def configure(
    hindsight_api_url: str | None = None,
    api_key: str | None = None,
    recall_budget: str = DEFAULT_RECALL_BUDGET,
    recall_max_tokens: int = DEFAULT_RECALL_MAX_TOKENS,
    retain_async: bool = True,
    timeout: float = 15.0,
    tags: list[str] | None = None,
    verbose: bool = False,
    *,
    recall_timeout: float | None = None,
    breaker_failure_threshold: int | None = None,
    breaker_reset_timeout: float | None = None,
    max_retries: int | None = None,
    retry_base_delay: float | None = None,
    retry_max_delay: float | None = None,
    spool_dir: str | None = None,
    spool_queue_url: str | None = None,
    retain_workers: int | None = None,
    exit_flush_timeout: float | None = None,
    auto_replay: bool | None = None,
) -> HindsightAgentCoreConfig:
    """Set the global configuration that adapters created afterwards fall back to.

    The first eight parameters are the prior art's, with the same defaults; the keyword-only ones are new and read
    their environment variable (:data:`ENV_VARS`) when left ``None``. The URL falls back to ``HINDSIGHT_API_URL``,
    the key to ``HINDSIGHT_API_KEY`` then ``HINDSIGHT_API_TOKEN``. Invalid values raise :class:`ConfigurationError`
    listing every problem.

    Example:
        >>> configure(hindsight_api_url="http://hindsight.internal:8888", recall_timeout=1.0)
    """
    global _global_config
    given = {name: value for name, value in locals().items() if name in SETTING_NAMES}
    given["tags"] = list(tags or [])
    reader = SettingsReader(os.environ)
    config = read_settings(reader, given, require_url=False)
    if reader.problems:
        raise ConfigurationError(reader.problems)
    _global_config = config
    return config


def get_config() -> HindsightAgentCoreConfig | None:
    """Return the current global config, or None if :func:`configure` was not called."""
    return _global_config


def reset_config() -> None:
    """Forget the global config (useful in tests)."""
    global _global_config
    _global_config = None
