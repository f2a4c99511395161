"""Names of the environment variables the memory adapter reads, in one place (README "Settings" lists them all).

Every other setting ``name`` of :class:`~memory_adapter.config.HindsightAgentCoreConfig` is read from
``HINDSIGHT_ADAPTER_`` + ``name`` upper-cased (:data:`memory_adapter.config.ENV_VARS`). The agent imports these names
instead of spelling them again.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "ADAPTER_ENV_PREFIX",
    "HINDSIGHT_API_KEY_ENV",
    "HINDSIGHT_API_TOKEN_ENV",
    "HINDSIGHT_API_URL_ENV",
    "LOG_HASH_SALT_ENV",
]

#: Hindsight's base URL (the prior art's name).
HINDSIGHT_API_URL_ENV: Final = "HINDSIGHT_API_URL"
#: Bearer credential for turns without one of their own (the prior art's name) ...
HINDSIGHT_API_KEY_ENV: Final = "HINDSIGHT_API_KEY"
#: ... or this one, read when the former is unset (the prior art's fallback).
HINDSIGHT_API_TOKEN_ENV: Final = "HINDSIGHT_API_TOKEN"  # noqa: S105 (a variable name)
#: Prefix of the adapter's own settings.
ADAPTER_ENV_PREFIX: Final = "HINDSIGHT_ADAPTER_"
#: Salt of the short hashes that stand for bank ids in logs.
LOG_HASH_SALT_ENV: Final = ADAPTER_ENV_PREFIX + "LOG_HASH_SALT"
