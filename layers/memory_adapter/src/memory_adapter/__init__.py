"""Durable agent memory for Amazon Bedrock AgentCore Runtime on self-hosted Hindsight.

A drop-in superset of ``hindsight-agentcore`` 0.1.3: the same public names (switch by changing the import), plus
injective bank ids, one document per turn, retains that never block and are never lost (async + idempotent +
retried + spooled), a recall deadline and circuit breaker, per-turn credentials, and prompt-safe formatting.

Names are exported lazily (module ``__getattr__``), so ``import memory_adapter`` costs almost nothing and the
Hindsight server extension can import ``memory_adapter.bank_ids`` / ``memory_adapter.tokens`` without the rest.

Example:
    >>> from memory_adapter import HindsightRuntimeAdapter, TurnContext
    >>> adapter = HindsightRuntimeAdapter(agent_name="support")   # URL from HINDSIGHT_API_URL
    >>> ctx = TurnContext(runtime_session_id=sid, user_id=user, agent_name="support")
    >>> result = await adapter.run_turn(ctx, {"prompt": text}, agent_callable=my_agent)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    # prior-art names
    "HindsightRuntimeAdapter": "memory_adapter.adapter",
    "RecallPolicy": "memory_adapter.policies",
    "RetentionPolicy": "memory_adapter.policies",
    "TurnContext": "memory_adapter.context",
    "BankResolver": "memory_adapter.context",
    "default_bank_resolver": "memory_adapter.context",
    "configure": "memory_adapter.config",
    "get_config": "memory_adapter.config",
    "reset_config": "memory_adapter.config",
    "HindsightAgentCoreConfig": "memory_adapter.config",
    "HindsightAgentCoreError": "memory_adapter.exceptions",
    "BankResolutionError": "memory_adapter.exceptions",
    # additions
    "Recollection": "memory_adapter.adapter",
    "RetainHandle": "memory_adapter.delivery",
    "RetainOutcome": "memory_adapter.delivery",
    "ReplayResult": "memory_adapter.delivery",
    "RecalledMemory": "memory_adapter.formatting",
    "MemoryFormatter": "memory_adapter.formatting",
    "format_memories_as_data": "memory_adapter.formatting",
    "format_memories_as_bullets": "memory_adapter.formatting",
    "Spool": "memory_adapter.spool",
    "DirectorySpool": "memory_adapter.spool",
    "RetainRecord": "memory_adapter.spool",
    "Metric": "memory_adapter.observability",
    "MetricsSink": "memory_adapter.observability",
    "BreakerState": "memory_adapter.breaker",
    "ConfigurationError": "memory_adapter.exceptions",
    "HindsightUnavailableError": "memory_adapter.exceptions",
    "HindsightRequestError": "memory_adapter.exceptions",
    "SpoolError": "memory_adapter.exceptions",
    "BankOwner": "memory_adapter.bank_ids",
    "format_bank_id": "memory_adapter.bank_ids",
    "parse_bank_id": "memory_adapter.bank_ids",
    "MemoryKind": "memory_adapter.kinds",
    "RetentionRules": "memory_adapter.kinds",
    "kind_of": "memory_adapter.kinds",
    "kind_tag": "memory_adapter.kinds",
}

__all__ = [
    "BankOwner",
    "BankResolutionError",
    "BankResolver",
    "BreakerState",
    "ConfigurationError",
    "DirectorySpool",
    "HindsightAgentCoreConfig",
    "HindsightAgentCoreError",
    "HindsightRequestError",
    "HindsightRuntimeAdapter",
    "HindsightUnavailableError",
    "MemoryFormatter",
    "MemoryKind",
    "Metric",
    "MetricsSink",
    "RecallPolicy",
    "RecalledMemory",
    "Recollection",
    "ReplayResult",
    "RetainHandle",
    "RetainOutcome",
    "RetainRecord",
    "RetentionPolicy",
    "RetentionRules",
    "Spool",
    "SpoolError",
    "TurnContext",
    "__version__",
    "configure",
    "default_bank_resolver",
    "format_bank_id",
    "format_memories_as_bullets",
    "format_memories_as_data",
    "get_config",
    "kind_of",
    "kind_tag",
    "parse_bank_id",
    "reset_config",
]

if TYPE_CHECKING:
    from memory_adapter.adapter import HindsightRuntimeAdapter, Recollection
    from memory_adapter.bank_ids import BankOwner, format_bank_id, parse_bank_id
    from memory_adapter.breaker import BreakerState
    from memory_adapter.config import HindsightAgentCoreConfig, configure, get_config, reset_config
    from memory_adapter.context import BankResolver, TurnContext, default_bank_resolver
    from memory_adapter.delivery import ReplayResult, RetainHandle, RetainOutcome
    from memory_adapter.exceptions import (
        BankResolutionError,
        ConfigurationError,
        HindsightAgentCoreError,
        HindsightRequestError,
        HindsightUnavailableError,
        SpoolError,
    )
    from memory_adapter.formatting import (
        MemoryFormatter,
        RecalledMemory,
        format_memories_as_bullets,
        format_memories_as_data,
    )
    from memory_adapter.kinds import MemoryKind, RetentionRules, kind_of, kind_tag
    from memory_adapter.observability import Metric, MetricsSink
    from memory_adapter.policies import RecallPolicy, RetentionPolicy
    from memory_adapter.spool import DirectorySpool, RetainRecord, Spool


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'memory_adapter' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
