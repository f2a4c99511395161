"""Configuration: the prior-art ``configure()`` API plus the adapter's own settings, each with an environment variable.

:class:`HindsightAgentCoreConfig` is the one definition of the settings: each field declares its variable, default
and bounds (:func:`~memory_adapter.settings_fields.setting`); the variables (:data:`ENV_VARS`), the reader and the
checks of given values follow from the fields. :func:`read_settings` resolves all of them through the shared
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

import inspect
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from memory_adapter.compat import HINDSIGHT_API_TOKEN_ENV
from memory_adapter.constants import (
    ADAPTER_ENV_PREFIX,
    DEFAULT_RECALL_BUDGET,
    DEFAULT_RECALL_MAX_TOKENS,
    HINDSIGHT_API_KEY_ENV,
    HINDSIGHT_API_URL_ENV,
    LOG_HASH_SALT_ENV,
    SPOOL_QUEUE_URL_ENV,
)
from memory_adapter.exceptions import ConfigurationError
from memory_adapter.missions import Missions, MissionsError
from memory_adapter.settings_fields import RecallClientSettings, declared, env_of, read_declared, same_setting, setting
from memory_adapter.settings_reader import SettingsReader

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


_A: Final = ADAPTER_ENV_PREFIX


@dataclass
class HindsightAgentCoreConfig:
    """Every setting of the adapter (prior-art fields first, then its own): what :func:`configure` sets globally, and
    what an adapter resolved (``adapter.settings``). Each field names its variable, default and bounds (durations in
    seconds); a new setting is one field here."""

    hindsight_api_url: str = setting(HINDSIGHT_API_URL_ENV, DEFAULT_HINDSIGHT_API_URL)
    """Hindsight server URL. Empty means "not configured" (there is deliberately no SaaS default)."""
    api_key: str | None = setting(HINDSIGHT_API_KEY_ENV, repr=False)
    """Bearer credential used when a turn carries none of its own (kept out of ``repr``; :func:`configure` and an
    adapter also read the prior art's ``HINDSIGHT_API_TOKEN`` when no key is given otherwise)."""
    recall_budget: str = same_setting(RecallClientSettings, "recall_budget")
    """Recall search depth: 'low', 'mid', or 'high'."""
    recall_max_tokens: int = same_setting(RecallClientSettings, "recall_max_tokens")
    """Maximum tokens in the recalled memory block."""
    recall_candidate_tokens: int = same_setting(RecallClientSettings, "recall_candidate_tokens")
    """Tokens of candidates the adapter asks Hindsight for and re-ranks itself before cutting to the block
    (:mod:`memory_adapter.rerank`); at most ``recall_max_tokens``: no re-ranking, Hindsight's order."""
    retain_async: bool = setting(_A + "RETAIN_ASYNC", True)
    """If True, ``after_turn`` returns at once; if False it waits until the retain is delivered or spooled."""
    timeout: float = setting(_A + "TIMEOUT", 15.0, above=0)
    """HTTP timeout in seconds for each retain attempt and other non-recall calls."""
    tags: list[str] = setting(_A + "TAGS", factory=list, kind=list)
    """Default tags added to all retained memories."""
    verbose: bool = setting(_A + "VERBOSE", False)
    """Log every memory operation at INFO (ids hashed)."""
    recall_timeout: float = setting(_A + "RECALL_TIMEOUT", 2.0, above=0)
    """Deadline in seconds for one recall (or reflect); past it the turn continues without memory."""
    breaker_failure_threshold: int = setting(_A + "BREAKER_FAILURE_THRESHOLD", 3, low=1)
    """Consecutive failures that open the circuit breaker."""
    breaker_reset_timeout: float = setting(_A + "BREAKER_RESET_TIMEOUT", 30.0, above=0)
    """Seconds the breaker stays open before a background health probe may close it."""
    breaker_slow_threshold: int = setting(_A + "BREAKER_SLOW_THRESHOLD", 5, low=1)
    """Recall deadline misses within ``breaker_slow_window`` that open the breaker (misses count apart from refused
    connections and 5xx: a busy Hindsight that still answers most calls degrades one turn at a time)."""
    breaker_slow_window: float = setting(_A + "BREAKER_SLOW_WINDOW", 30.0, above=0)
    """Seconds over which deadline misses, and the calls that ended, are counted."""
    breaker_slow_ratio: float = setting(_A + "BREAKER_SLOW_RATIO", 0.8, low=0, high=1)
    """Share of the calls ended within ``breaker_slow_window`` that must have missed their deadline to open it."""
    breaker_slow_reset_timeout: float = setting(_A + "BREAKER_SLOW_RESET_TIMEOUT", 3.0, above=0)
    """Seconds the breaker stays open after an opening caused only by deadline misses, before it is probed."""
    max_retries: int = setting(_A + "MAX_RETRIES", 3, low=0)
    """Retries of a retain after its first attempt (transient errors only), before it is spooled."""
    retry_base_delay: float = setting(_A + "RETRY_BASE_DELAY", 0.2, low=0)
    """First retry delay in seconds; doubles each retry, with full jitter."""
    retry_max_delay: float = setting(_A + "RETRY_MAX_DELAY", 5.0, low=0)
    """Cap of a single retry delay in seconds (a server ``Retry-After`` is honoured up to this cap)."""
    spool_dir: str = setting(_A + "SPOOL_DIR", factory=default_spool_dir)
    """Directory of the durable spool for retains that could not be delivered (when no ``spool_queue_url``)."""
    spool_queue_url: str = setting(SPOOL_QUEUE_URL_ENV, "")
    """SQS queue URL of the durable spool (:class:`~memory_adapter.sqs_spool.SqsSpool`), which outlives the host: what
    the deployed stack sets. Empty: the local directory ``spool_dir``. The queue's consumer (the replay function)
    replays it, so ``auto_replay`` does not apply to it."""
    retain_workers: int = setting(_A + "RETAIN_WORKERS", 4, low=1)
    """Background threads delivering retains concurrently."""
    exit_flush_timeout: float = setting(_A + "EXIT_FLUSH_TIMEOUT", 5.0, low=0)
    """Seconds the interpreter-exit hook waits for pending retains before spooling the rest."""
    auto_replay: bool = setting(_A + "AUTO_REPLAY", True)
    """Replay the local spool in the background once Hindsight answers again (not a ``spool_queue_url``)."""
    missions: str = setting(_A + "MISSIONS", "")
    """JSON of agent name -> extraction mission (``cdk.json`` ``missions``), applied to each bank of that agent
    (:mod:`memory_adapter.missions`). Empty: banks keep their own settings."""
    log_hash_salt: str = setting(LOG_HASH_SALT_ENV, "", repr=False)
    """Salt of the short hashes that stand for bank ids in logs. Environment only (no argument): every process's logs
    read it there (:func:`memory_adapter.observability.short_hash`); a field so that it is listed, written and
    checked with the other settings."""

    def to_env(self) -> dict[str, str]:
        """The environment :func:`resolve_settings` reads back as these settings: the URL, the key when set, and
        each ``HINDSIGHT_ADAPTER_*`` setting that differs from its default (a default is stated once, here)."""
        return env_of(self)


#: The connection: read with rules of their own (the prior art's fallback variable, a required URL).
_CONNECTION: Final = ("hindsight_api_url", "api_key")
_DECLARED: Final = {f.name: s for f, s in declared(HindsightAgentCoreConfig)}
#: Every setting an adapter argument or ``configure()`` may give, in field order.
SETTING_NAMES: Final = tuple(_DECLARED)
#: The environment variable of every setting other than the URL and the key.
ENV_VARS: Final[Mapping[str, str]] = {
    name: s.env for name, s in _DECLARED.items() if name not in _CONNECTION and s.env is not None
}

_global_config: HindsightAgentCoreConfig | None = None


def read_settings(
    reader: SettingsReader,
    overrides: Mapping[str, Any],
    *,
    config: HindsightAgentCoreConfig | None = None,
    require_url: bool = True,
    prior_art: bool = False,
) -> HindsightAgentCoreConfig:
    """Resolve every setting (argument > ``configure()`` > environment > default); problems go to ``reader``.

    Args:
        reader: Reads the environment (its mapping) and collects problems, with those of the caller's own settings.
        overrides: Arguments by setting name; ``None`` means "not given".
        config: The global config, when :func:`configure` was called.
        require_url: A missing URL is a problem (not for :func:`configure`, which may leave it unset).
        prior_art: Read the key from ``HINDSIGHT_API_TOKEN`` (:mod:`memory_adapter.compat`) when no key is given
            otherwise, as the prior art did: :func:`configure` and an adapter, not an agent's settings.
    """
    values: dict[str, Any] = {}
    unset = [name for name in ENV_VARS if config is None and overrides.get(name) is None]
    from_env = read_declared(HindsightAgentCoreConfig, reader, only=unset)
    for name in ENV_VARS:
        given = overrides.get(name)
        value = given if given is not None else getattr(config, name) if config is not None else from_env[name]
        values[name] = list(value) if name == "tags" else value
        if name not in from_env:  # read_declared checked what it read; arguments are checked here
            problem = _DECLARED[name].out_of_range(name, value)
            if problem is not None:
                reader.problem(problem)
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
        or (reader.text(HINDSIGHT_API_TOKEN_ENV) if prior_art else None)
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
    settings = read_settings(reader, overrides, config=config, prior_art=True)
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
    **settings: Any,
) -> HindsightAgentCoreConfig:
    """Set the global configuration that adapters created afterwards fall back to.

    The eight parameters are the prior art's, with the same defaults; any other setting of
    :class:`HindsightAgentCoreConfig` (``recall_timeout=``, ``max_retries=``, ...; not ``log_hash_salt``, read from
    the environment only) is a keyword argument, and reads its environment variable (:data:`ENV_VARS`) when not
    given or ``None``. The URL falls back to ``HINDSIGHT_API_URL``, the key to ``HINDSIGHT_API_KEY`` then
    ``HINDSIGHT_API_TOKEN``. Invalid values raise :class:`ConfigurationError` listing every problem.

    Example:
        >>> configure(hindsight_api_url="http://hindsight.internal:8888", recall_timeout=1.0)
    """
    global _global_config
    unknown = sorted(set(settings) - set(_KEYWORD_SETTINGS))
    if unknown:
        raise TypeError(f"configure() got an unexpected keyword argument {unknown[0]!r}")
    given = {name: value for name, value in locals().items() if name in SETTING_NAMES}
    given.update(settings, tags=list(tags or []))
    reader = SettingsReader(os.environ)
    config = read_settings(reader, given, require_url=False, prior_art=True)
    if reader.problems:
        raise ConfigurationError(reader.problems)
    _global_config = config
    return config


#: The settings :func:`configure` takes as keyword arguments: all but the prior art's parameters and the log salt.
_KEYWORD_SETTINGS: Final = tuple(
    name for name in SETTING_NAMES if name not in inspect.signature(configure).parameters and name != "log_hash_salt"
)


def get_config() -> HindsightAgentCoreConfig | None:
    """Return the current global config, or None if :func:`configure` was not called."""
    return _global_config


def reset_config() -> None:
    """Forget the global config (useful in tests)."""
    global _global_config
    _global_config = None
