"""The memory tools as any framework sees them: specs without identity, one call with the verified turn.

The tool implementation itself (``recall_memory``, ``remember``, ``forget``) is the memory adapter's, shared with the
reference agent; the framework integrations only adapt it: each spec becomes a framework tool whose arguments are
what the model supplies, and each call gets the :class:`~memory_adapter.agentcore.MemoryTurn` found in the run's
server-side state (:mod:`memory_adapter.integrations.run_state`). A spec that names an identity field (user, tenant,
agent, bank) is refused: identity never comes from the model's arguments.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from memory_adapter.agentcore.memory import MemoryTurn

__all__ = [
    "IDENTITY_FIELDS",
    "NO_VERIFIED_CALLER",
    "MemoryToolset",
    "ToolSpec",
    "checked_specs",
]

#: Argument names a memory tool's schema must never have (identity comes from the verified caller).
IDENTITY_FIELDS = frozenset({"user", "user_id", "tenant", "tenant_id", "agent", "agent_name", "bank", "bank_id"})
#: What a memory tool answers without a verified caller (fail closed: nothing is read or written).
NO_VERIFIED_CALLER = "Memory is not available for this conversation (no verified caller)."


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One memory tool: its name, what it does (for the model) and the JSON Schema of its arguments."""

    name: str
    description: str
    input_schema: Mapping[str, Any]


class MemoryToolset(Protocol):
    """The shared memory tool implementation, as the integrations call it."""

    @property
    def specs(self) -> Sequence[ToolSpec]:
        """The tools, in the order they are offered to the model."""
        ...

    async def call(self, name: str, arguments: Mapping[str, Any], turn: MemoryTurn) -> str:
        """Run tool ``name`` for ``turn`` (never raises for memory failures: the answer says what happened)."""
        ...


def checked_specs(toolset: MemoryToolset) -> tuple[ToolSpec, ...]:
    """``toolset.specs``, refusing any whose arguments name an identity field (raises ``ValueError``)."""
    specs = tuple(toolset.specs)
    for spec in specs:
        properties = spec.input_schema.get("properties", {})
        leaked = sorted(IDENTITY_FIELDS & {str(name).lower() for name in properties})
        if leaked:
            raise ValueError(f"memory tool {spec.name!r} takes identity arguments {leaked}: identity is server-side")
    return specs
