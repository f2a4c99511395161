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
from memory_adapter.formatting import RecalledMemory, ReflectAnswer
from memory_adapter.identity.errors import BankResolutionError
from memory_adapter.policies import RecallPolicy, RetentionPolicy

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
