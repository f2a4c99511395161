"""The prior art's public face (hindsight-agentcore 0.1.3), in one module, and what only compatibility needs.

A user of hindsight-agentcore switches by renaming the package in the imports: the package's top level re-exports
every name the prior art exported (``__all__`` here, plus the two compatibility extras), and the prior art's modules
exist under the same names
(``memory_adapter.adapter``, ``.bank``, ``.config``, ``.errors``). What behaves differently on purpose is listed in
the README ("Migrating from hindsight-agentcore 0.1.3"); :func:`format_memories_as_prior_art` gives back the one
output the defaults changed, for code that depends on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from memory_adapter._lazy import lazy_getattr
from memory_adapter.formatting import RecalledMemory, ReflectAnswer

__all__ = [
    "DEFAULT_HINDSIGHT_API_URL",
    "BankResolutionError",
    "BankResolver",
    "HindsightAgentCoreConfig",
    "HindsightAgentCoreError",
    "HindsightRuntimeAdapter",
    "RecallPolicy",
    "RetentionPolicy",
    "TurnContext",
    "configure",
    "default_bank_resolver",
    "format_memories_as_prior_art",
    "get_config",
    "reset_config",
]

#: The prior art's second variable of the key: :func:`~memory_adapter.config.configure` and an adapter read it when
#: no key is given otherwise (not even ``HINDSIGHT_API_KEY``), as 0.1.3's ``configure()`` did. The stack never writes
#: it, and an agent's settings (``AgentMemorySettings``) do not read it.
HINDSIGHT_API_TOKEN_ENV: Final = "HINDSIGHT_API_TOKEN"  # noqa: S105 (a variable name)

#: The prior art's names defined elsewhere, by module: imported on first use, so that :mod:`memory_adapter.config`
#: reads :data:`HINDSIGHT_API_TOKEN_ENV` here without loading the adapter.
_EXPORTS: Final = {
    "DEFAULT_HINDSIGHT_API_URL": "memory_adapter.config",
    "HindsightAgentCoreConfig": "memory_adapter.config",
    "configure": "memory_adapter.config",
    "get_config": "memory_adapter.config",
    "reset_config": "memory_adapter.config",
    "HindsightRuntimeAdapter": "memory_adapter.adapter",
    "BankResolver": "memory_adapter.context",
    "TurnContext": "memory_adapter.context",
    "default_bank_resolver": "memory_adapter.context",
    "HindsightAgentCoreError": "memory_adapter.exceptions",
    "BankResolutionError": "memory_adapter.identity.errors",
    "RecallPolicy": "memory_adapter.policies",
    "RetentionPolicy": "memory_adapter.policies",
}

if TYPE_CHECKING:
    from memory_adapter.adapter import HindsightRuntimeAdapter
    from memory_adapter.config import (
        DEFAULT_HINDSIGHT_API_URL,
        HindsightAgentCoreConfig,
        configure,
        get_config,
        reset_config,
    )
    from memory_adapter.context import BankResolver, TurnContext, default_bank_resolver
    from memory_adapter.exceptions import HindsightAgentCoreError
    from memory_adapter.identity.errors import BankResolutionError
    from memory_adapter.policies import RecallPolicy, RetentionPolicy

_exported = lazy_getattr(__name__, _EXPORTS, globals())


def __getattr__(name: str) -> Any:
    return _exported(name)


def format_memories_as_prior_art(memories: Sequence[RecalledMemory]) -> str:
    """Exactly what 0.1.3's ``before_turn`` returned: ``- {text} [{type}] ({mentioned_at})`` per memory, blank lines
    between, or a reflect answer's text as it is.

    Unsafe for prompts: nothing is sanitised or delimited (recalled text may carry planted instructions). Use it only
    where code depends on the old output, e.g. ``HindsightRuntimeAdapter(formatter=format_memories_as_prior_art)``.
    """
    if len(memories) == 1 and isinstance(memories[0], ReflectAnswer):
        return memories[0].text
    lines = []
    for memory in memories:
        kind = f" [{memory.type}]" if memory.type else ""
        when = f" ({memory.mentioned_at})" if memory.mentioned_at else ""
        lines.append(f"- {memory.text}{kind}{when}")
    return "\n\n".join(lines)
