"""Configuration: the prior-art ``configure()`` API plus the adapter's own settings, each with an environment variable.

Precedence for every setting: adapter constructor argument > ``configure()`` > environment variable > default.
``configure()`` resolves the environment itself for the URL, the key and every setting it is not given (the new
settings default to ``None`` there), so the effective order is the same whether or not ``configure()`` is called.
The prior-art parameters of ``configure()`` keep their concrete defaults (``recall_budget="mid"``, ...) for
compatibility; once ``configure()`` is called, those values are explicit and their environment variables are not read.

There is no default URL: with none given anywhere, constructing an adapter raises :class:`ConfigurationError`
instead of posting conversations to a public SaaS endpoint.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from memory_adapter.exceptions import ConfigurationError

__all__ = [
    "ENV_VARS",
    "HINDSIGHT_API_KEY_ENV",
    "HINDSIGHT_API_TOKEN_ENV",
    "HINDSIGHT_API_URL_ENV",
    "HindsightAgentCoreConfig",
    "Settings",
    "configure",
    "default_spool_dir",
    "get_config",
    "reset_config",
    "resolve_settings",
]

HINDSIGHT_API_URL_ENV: Final = "HINDSIGHT_API_URL"
HINDSIGHT_API_KEY_ENV: Final = "HINDSIGHT_API_KEY"
HINDSIGHT_API_TOKEN_ENV: Final = "HINDSIGHT_API_TOKEN"  # noqa: S105 (a variable name)

#: Environment variable of every setting other than the URL and key (one place, documented in the README).
ENV_VARS: Final[Mapping[str, str]] = {
    "recall_budget": "HINDSIGHT_ADAPTER_RECALL_BUDGET",
    "recall_max_tokens": "HINDSIGHT_ADAPTER_RECALL_MAX_TOKENS",
    "retain_async": "HINDSIGHT_ADAPTER_RETAIN_ASYNC",
    "timeout": "HINDSIGHT_ADAPTER_TIMEOUT",
    "tags": "HINDSIGHT_ADAPTER_TAGS",
    "verbose": "HINDSIGHT_ADAPTER_VERBOSE",
    "recall_timeout": "HINDSIGHT_ADAPTER_RECALL_TIMEOUT",
    "breaker_failure_threshold": "HINDSIGHT_ADAPTER_BREAKER_FAILURE_THRESHOLD",
    "breaker_reset_timeout": "HINDSIGHT_ADAPTER_BREAKER_RESET_TIMEOUT",
    "max_retries": "HINDSIGHT_ADAPTER_MAX_RETRIES",
    "retry_base_delay": "HINDSIGHT_ADAPTER_RETRY_BASE_DELAY",
    "retry_max_delay": "HINDSIGHT_ADAPTER_RETRY_MAX_DELAY",
    "spool_dir": "HINDSIGHT_ADAPTER_SPOOL_DIR",
    "retain_workers": "HINDSIGHT_ADAPTER_RETAIN_WORKERS",
    "exit_flush_timeout": "HINDSIGHT_ADAPTER_EXIT_FLUSH_TIMEOUT",
    "auto_replay": "HINDSIGHT_ADAPTER_AUTO_REPLAY",
}

_BUDGETS: Final = ("low", "mid", "high")


def default_spool_dir() -> str:
    """The spool directory used when none is configured: private to the OS user, under the temp directory.

    The temp directory is the one place writable on read-only container file systems (AgentCore, Lambda).
    """
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    return os.path.join(tempfile.gettempdir(), f"memory-adapter-{uid}", "spool")


@dataclass
class HindsightAgentCoreConfig:
    """Global configuration set by :func:`configure` (prior-art fields first, then the adapter's own)."""

    hindsight_api_url: str = ""
    """Hindsight server URL. Empty means "not configured" (there is deliberately no SaaS default)."""
    api_key: str | None = field(default=None, repr=False)
    """Bearer credential used when a turn carries none of its own (kept out of ``repr``)."""
    recall_budget: str = "mid"
    """Recall search depth: 'low', 'mid', or 'high'."""
    recall_max_tokens: int = 1500
    """Maximum tokens in the recalled memory block."""
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
    max_retries: int = 3
    """Retries of a retain after its first attempt (transient errors only), before it is spooled."""
    retry_base_delay: float = 0.2
    """First retry delay in seconds; doubles each retry, with full jitter."""
    retry_max_delay: float = 5.0
    """Cap of a single retry delay in seconds (a server ``Retry-After`` is honoured up to this cap)."""
    spool_dir: str = field(default_factory=default_spool_dir)
    """Directory of the durable spool for retains that could not be delivered."""
    retain_workers: int = 4
    """Background threads delivering retains concurrently."""
    exit_flush_timeout: float = 5.0
    """Seconds the interpreter-exit hook waits for pending retains before spooling the rest."""
    auto_replay: bool = True
    """Replay the spool in the background once Hindsight answers again."""


@dataclass(frozen=True, slots=True)
class Settings:
    """Fully resolved adapter settings (what one adapter actually uses)."""

    hindsight_api_url: str
    api_key: str | None = field(repr=False)
    recall_budget: str
    recall_max_tokens: int
    retain_async: bool
    timeout: float
    tags: tuple[str, ...]
    verbose: bool
    recall_timeout: float
    breaker_failure_threshold: int
    breaker_reset_timeout: float
    max_retries: int
    retry_base_delay: float
    retry_max_delay: float
    spool_dir: str
    retain_workers: int
    exit_flush_timeout: float
    auto_replay: bool


_global_config: HindsightAgentCoreConfig | None = None


def _parse_bool(raw: str) -> bool:
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"expected true/false, got {raw!r}")


def _parse_tags(raw: str) -> list[str]:
    return [tag.strip() for tag in raw.split(",") if tag.strip()]


_PARSERS: Final[Mapping[str, Callable[[str], Any]]] = {
    "recall_budget": str.strip,
    "recall_max_tokens": int,
    "retain_async": _parse_bool,
    "timeout": float,
    "tags": _parse_tags,
    "verbose": _parse_bool,
    "recall_timeout": float,
    "breaker_failure_threshold": int,
    "breaker_reset_timeout": float,
    "max_retries": int,
    "retry_base_delay": float,
    "retry_max_delay": float,
    "spool_dir": str.strip,
    "retain_workers": int,
    "exit_flush_timeout": float,
    "auto_replay": _parse_bool,
}


def _from_env(name: str, environ: Mapping[str, str], errors: list[str]) -> Any:
    """The value of setting ``name`` from its environment variable, or the dataclass default."""
    var = ENV_VARS[name]
    raw = environ.get(var)
    if raw is None or raw.strip() == "":
        return _DEFAULTS[name]
    try:
        return _PARSERS[name](raw)
    except ValueError as exc:
        errors.append(f"{var}={raw!r} is invalid: {exc}")
        return _DEFAULTS[name]


_DEFAULTS: Final[Mapping[str, Any]] = {
    name: (f.default_factory() if callable(f.default_factory) else f.default)
    for name, f in HindsightAgentCoreConfig.__dataclass_fields__.items()
    if name in ENV_VARS
}


def _env_url(environ: Mapping[str, str]) -> str:
    return environ.get(HINDSIGHT_API_URL_ENV, "").strip()


def _env_key(environ: Mapping[str, str]) -> str | None:
    return environ.get(HINDSIGHT_API_KEY_ENV) or environ.get(HINDSIGHT_API_TOKEN_ENV) or None


def configure(
    hindsight_api_url: str | None = None,
    api_key: str | None = None,
    recall_budget: str = "mid",
    recall_max_tokens: int = 1500,
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
    retain_workers: int | None = None,
    exit_flush_timeout: float | None = None,
    auto_replay: bool | None = None,
) -> HindsightAgentCoreConfig:
    """Set the global configuration that adapters created afterwards fall back to.

    The first eight parameters are the prior art's, with the same defaults; the keyword-only ones are new and read
    their environment variable (:data:`ENV_VARS`) when left ``None``. The URL falls back to ``HINDSIGHT_API_URL``,
    the key to ``HINDSIGHT_API_KEY`` then ``HINDSIGHT_API_TOKEN``. Invalid environment values raise
    :class:`ConfigurationError` listing every problem.

    Example:
        >>> configure(hindsight_api_url="http://hindsight.internal:8888", recall_timeout=1.0)
    """
    global _global_config
    environ = os.environ
    errors: list[str] = []
    new: dict[str, Any] = {
        "recall_timeout": recall_timeout,
        "breaker_failure_threshold": breaker_failure_threshold,
        "breaker_reset_timeout": breaker_reset_timeout,
        "max_retries": max_retries,
        "retry_base_delay": retry_base_delay,
        "retry_max_delay": retry_max_delay,
        "spool_dir": spool_dir,
        "retain_workers": retain_workers,
        "exit_flush_timeout": exit_flush_timeout,
        "auto_replay": auto_replay,
    }
    resolved = {name: value if value is not None else _from_env(name, environ, errors) for name, value in new.items()}
    if errors:
        raise ConfigurationError("; ".join(errors))
    _global_config = HindsightAgentCoreConfig(
        hindsight_api_url=(hindsight_api_url or _env_url(environ)),
        api_key=api_key or _env_key(environ),
        recall_budget=recall_budget,
        recall_max_tokens=recall_max_tokens,
        retain_async=retain_async,
        timeout=timeout,
        tags=list(tags or []),
        verbose=verbose,
        **resolved,
    )
    return _global_config


def get_config() -> HindsightAgentCoreConfig | None:
    """Return the current global config, or None if :func:`configure` was not called."""
    return _global_config


def reset_config() -> None:
    """Forget the global config (useful in tests)."""
    global _global_config
    _global_config = None


def resolve_settings(
    overrides: Mapping[str, Any], *, environ: Mapping[str, str] | None = None, config: HindsightAgentCoreConfig | None
) -> Settings:
    """Resolve every setting (argument > ``configure()`` > environment > default) and validate them all at once.

    Args:
        overrides: Constructor arguments; ``None`` values mean "not given".
        environ: Environment to read (defaults to ``os.environ``).
        config: The global config, when :func:`configure` was called.

    Raises:
        ConfigurationError: No URL anywhere, or invalid values (every problem listed in one message).
    """
    env = os.environ if environ is None else environ
    errors: list[str] = []
    values: dict[str, Any] = {}
    for name in ENV_VARS:
        given = overrides.get(name)
        if given is not None:
            values[name] = given
        elif config is not None:
            values[name] = getattr(config, name)
        else:
            values[name] = _from_env(name, env, errors)
    url = overrides.get("hindsight_api_url") or (config.hindsight_api_url if config else "") or _env_url(env)
    key = overrides.get("api_key") or (config.api_key if config else None) or _env_key(env)
    if not url:
        errors.append(
            f"no Hindsight URL configured: pass hindsight_api_url=, call configure(hindsight_api_url=...) or set "
            f"{HINDSIGHT_API_URL_ENV} (there is deliberately no default public endpoint)"
        )
    elif not url.startswith(("http://", "https://")):
        errors.append(f"hindsight_api_url must start with http:// or https://, got {url!r}")
    errors.extend(_validate(values))
    if errors:
        raise ConfigurationError("invalid memory adapter configuration: " + "; ".join(errors))
    values["tags"] = tuple(values["tags"])
    return Settings(hindsight_api_url=url.rstrip("/"), api_key=key, **values)


def _validate(v: Mapping[str, Any]) -> list[str]:
    checks = [
        (v["recall_budget"] in _BUDGETS, f"recall_budget must be one of {_BUDGETS}, got {v['recall_budget']!r}"),
        (v["recall_max_tokens"] > 0, "recall_max_tokens must be > 0"),
        (v["timeout"] > 0, "timeout must be > 0 seconds"),
        (v["recall_timeout"] > 0, "recall_timeout must be > 0 seconds"),
        (v["breaker_failure_threshold"] >= 1, "breaker_failure_threshold must be >= 1"),
        (v["breaker_reset_timeout"] > 0, "breaker_reset_timeout must be > 0 seconds"),
        (v["max_retries"] >= 0, "max_retries must be >= 0"),
        (v["retry_base_delay"] >= 0, "retry_base_delay must be >= 0 seconds"),
        (v["retry_max_delay"] >= v["retry_base_delay"], "retry_max_delay must be >= retry_base_delay"),
        (bool(v["spool_dir"]), "spool_dir must not be empty"),
        (v["retain_workers"] >= 1, "retain_workers must be >= 1"),
        (v["exit_flush_timeout"] >= 0, "exit_flush_timeout must be >= 0 seconds"),
    ]
    return [message for ok, message in checks if not ok]
