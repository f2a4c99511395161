"""Durable agent memory for Amazon Bedrock AgentCore Runtime on self-hosted Hindsight.

A drop-in superset of ``hindsight-agentcore`` 0.1.3 (switch by changing the import: the prior art's twelve names,
:data:`memory_adapter.compat.__all__`, resolve here too), plus injective bank ids, one document per turn, retains
that never block and are never lost (async + idempotent + retried + spooled), a recall deadline and circuit breaker,
per-turn credentials, and prompt-safe formatting. Who a turn is for is the identity contract's
:class:`~memory_adapter.identity.Caller` (:mod:`memory_adapter.identity`, shared with the Hindsight extension).

``__all__`` is what an agent needs for a turn; everything else is reached by its module path
(``memory_adapter.spool``, ``memory_adapter.formatting``, ``memory_adapter.exceptions``, ...). Names are exported
lazily (module ``__getattr__``), so ``import memory_adapter`` costs almost nothing and the Hindsight server
extension can import ``memory_adapter.identity`` without the rest.

Example:
    >>> from memory_adapter import Caller, HindsightRuntimeAdapter
    >>> adapter = HindsightRuntimeAdapter(agent_name="support")   # URL from HINDSIGHT_API_URL
    >>> caller = Caller.of(user=verified.user, agent="support", credential=token)
    >>> memory = await adapter.recall_for_turn(caller, prompt)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from memory_adapter._lazy import lazy_getattr

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "HindsightRuntimeAdapter": "memory_adapter.adapter",
    "TurnContext": "memory_adapter.context",
    "Caller": "memory_adapter.identity.caller",
    "Recollection": "memory_adapter.adapter",
    "RetainHandle": "memory_adapter.retains",
    "RetainOutcome": "memory_adapter.retains",
    "HindsightAgentCoreError": "memory_adapter.exceptions",
}

__all__ = [
    "Caller",
    "HindsightAgentCoreError",
    "HindsightRuntimeAdapter",
    "Recollection",
    "RetainHandle",
    "RetainOutcome",
    "TurnContext",
    "__version__",
]

if TYPE_CHECKING:
    from memory_adapter.adapter import HindsightRuntimeAdapter, Recollection
    from memory_adapter.context import TurnContext
    from memory_adapter.exceptions import HindsightAgentCoreError
    from memory_adapter.identity.caller import Caller
    from memory_adapter.retains import RetainHandle, RetainOutcome

_exported = lazy_getattr(__name__, _EXPORTS, globals())


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return _exported(name)
    compat = importlib.import_module("memory_adapter.compat")  # the prior art's names, for a drop-in switch
    if name not in compat.__all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(compat, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
