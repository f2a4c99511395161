"""Durable agent memory for Amazon Bedrock AgentCore Runtime on self-hosted Hindsight.

A drop-in superset of ``hindsight-agentcore`` 0.1.3: the same public names (switch by changing the import; the
prior art's surface is :mod:`memory_adapter.compat`), plus injective bank ids, one document per turn, retains that
never block and are never lost (async + idempotent + retried + spooled), a recall deadline and circuit breaker,
per-turn credentials, and prompt-safe formatting. Who a turn is for is the identity contract's
:class:`~memory_adapter.identity.Caller` (:mod:`memory_adapter.identity`, shared with the Hindsight extension).

Names are exported lazily (module ``__getattr__``), so ``import memory_adapter`` costs almost nothing and the
Hindsight server extension can import ``memory_adapter.identity`` without the rest.

Example:
    >>> from memory_adapter import Caller, HindsightRuntimeAdapter
    >>> adapter = HindsightRuntimeAdapter(agent_name="support")   # URL from HINDSIGHT_API_URL
    >>> caller = Caller.of(user=verified.user, agent="support", credential=token)
    >>> memory = await adapter.recall_for_turn(caller, prompt)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memory_adapter._lazy import lazy_getattr

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    # the prior art's names (hindsight-agentcore 0.1.3; see memory_adapter.compat)
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
    "BankResolutionError": "memory_adapter.identity.errors",
    # this package's additions
    "Caller": "memory_adapter.identity.caller",
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
    "SqsSpool": "memory_adapter.sqs_spool",
    "RetainRecord": "memory_adapter.spool",
    "Metric": "memory_adapter.observability",
    "MetricsSink": "memory_adapter.observability",
    "BreakerState": "memory_adapter.breaker",
    "ConfigurationError": "memory_adapter.exceptions",
    "HindsightUnavailableError": "memory_adapter.exceptions",
    "HindsightRequestError": "memory_adapter.exceptions",
    "SpoolError": "memory_adapter.exceptions",
    "RecordTooLargeError": "memory_adapter.exceptions",
    "BankOwner": "memory_adapter.identity.bank_ids",
    "format_bank_id": "memory_adapter.identity.bank_ids",
    "parse_bank_id": "memory_adapter.identity.bank_ids",
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
    "Caller",
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
    "RecordTooLargeError",
    "ReplayResult",
    "RetainHandle",
    "RetainOutcome",
    "RetainRecord",
    "RetentionPolicy",
    "RetentionRules",
    "Spool",
    "SpoolError",
    "SqsSpool",
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
    from memory_adapter.breaker import BreakerState
    from memory_adapter.config import HindsightAgentCoreConfig, configure, get_config, reset_config
    from memory_adapter.context import BankResolver, TurnContext, default_bank_resolver
    from memory_adapter.delivery import ReplayResult, RetainHandle, RetainOutcome
    from memory_adapter.exceptions import (
        ConfigurationError,
        HindsightAgentCoreError,
        HindsightRequestError,
        HindsightUnavailableError,
        RecordTooLargeError,
        SpoolError,
    )
    from memory_adapter.formatting import (
        MemoryFormatter,
        RecalledMemory,
        format_memories_as_bullets,
        format_memories_as_data,
    )
    from memory_adapter.identity.bank_ids import BankOwner, format_bank_id, parse_bank_id
    from memory_adapter.identity.caller import Caller
    from memory_adapter.identity.errors import BankResolutionError
    from memory_adapter.kinds import MemoryKind, RetentionRules, kind_of, kind_tag
    from memory_adapter.observability import Metric, MetricsSink
    from memory_adapter.policies import RecallPolicy, RetentionPolicy
    from memory_adapter.spool import DirectorySpool, RetainRecord, Spool
    from memory_adapter.sqs_spool import SqsSpool


__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())


def __dir__() -> list[str]:
    return __all__
