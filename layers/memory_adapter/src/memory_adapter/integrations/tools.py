"""The memory tools (:mod:`memory_adapter.tools`, the one implementation the reference agent, the MCP server and the
Gateway target use) as the framework integrations call them: for the verified turn of the run, tracked per run.

The framework tool's arguments are what the model supplies (the schemas, :data:`~memory_adapter.tools.TOOL_SPECS`,
have no identity parameter); who a tool acts for is the :class:`~memory_adapter.agentcore.MemoryTurn` in the run's
server-side state (:mod:`memory_adapter.integrations.run_state`). Each run's calls go through one
:class:`~memory_adapter.tools.turn.TurnTools` (kept in the run state when it is mutable), so the calls are capped and
the run's retain follows the reference agent's rule (:func:`~memory_adapter.tools.turn.answer_to_retain`).
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import TYPE_CHECKING

from memory_adapter.integrations.run_state import find_turn
from memory_adapter.tools.turn import TurnTools

if TYPE_CHECKING:
    from memory_adapter.agentcore.memory import AgentCoreMemory

__all__ = ["NO_VERIFIED_CALLER", "TURN_TOOLS_KEY", "start_turn_tools", "turn_tools"]

#: What a memory tool answers without a verified caller (fail closed: nothing is read or written).
NO_VERIFIED_CALLER = "Memory is not available for this conversation (no verified caller)."
#: Where a mutable run state keeps the run's :class:`TurnTools`.
TURN_TOOLS_KEY = "memory_adapter.turn_tools"


def start_turn_tools(state: object, memory: AgentCoreMemory) -> TurnTools | None:
    """A fresh :class:`TurnTools` for the run's verified turn (stored in ``state`` when it is mutable); ``None``
    without a turn."""
    turn = find_turn(state)
    if turn is None:
        return None
    tools = TurnTools(memory.tools, turn.caller)
    if isinstance(state, MutableMapping):
        state[TURN_TOOLS_KEY] = tools
    return tools


def turn_tools(state: object, memory: AgentCoreMemory) -> TurnTools | None:
    """The run's :class:`TurnTools` (started on first use); ``None`` without a verified turn (fail closed)."""
    turn = find_turn(state)
    if turn is None:
        return None
    existing = state.get(TURN_TOOLS_KEY) if isinstance(state, MutableMapping) else None
    if isinstance(existing, TurnTools) and existing.caller == turn.caller:
        return existing
    return start_turn_tools(state, memory)
