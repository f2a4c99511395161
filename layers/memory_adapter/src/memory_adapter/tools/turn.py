"""The memory tools for one turn of one verified caller, and what that turn's retain becomes after them.

Shared by the reference agent (``runtime_handler.tools``) and the framework integrations
(:mod:`memory_adapter.integrations`), so every agent applies the same rules: the model chooses a tool and its
arguments, :class:`TurnTools` supplies who it acts for (the verified caller, with the credential Hindsight checks)
and caps the calls; a turn that wrote memory itself (``remember``, ``forget``) is not retained again (that would
store a remembered fact twice, or bring a forgotten one back through the transcript), and a turn that only read
memory is retained as :data:`ANSWERED_FROM_MEMORY` (the memories it quotes are stored already).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from memory_adapter.identity.caller import Caller
from memory_adapter.tools.memory_tools import ToolResult, ToolRunner
from memory_adapter.tools.specs import FORGET, REMEMBER, TOOL_SPECS, ToolSpec

__all__ = ["ANSWERED_FROM_MEMORY", "MAX_CALLS_PER_TURN", "WRITES", "ToolCall", "TurnTools", "answer_to_retain"]

#: Tool calls one turn may make, whatever the model asks for (a runaway loop costs no more than this).
MAX_CALLS_PER_TURN: Final = 10
#: What a retained turn says the agent answered when the answer was made of memories (recall, reflect, list_recent).
ANSWERED_FROM_MEMORY: Final = "(answered from memory)"
#: The tools that write memory themselves.
WRITES: Final = frozenset({REMEMBER, FORGET})


def answer_to_retain(calls: Iterable[tuple[str, bool]], output: str) -> str | None:
    """The answer to retain for a turn whose model made ``calls`` (tool name, succeeded) and answered ``output``:
    ``None`` (retain nothing) when a write succeeded, :data:`ANSWERED_FROM_MEMORY` when any tool ran, else
    ``output``."""
    made = list(calls)
    if any(name in WRITES and ok for name, ok in made):
        return None
    return ANSWERED_FROM_MEMORY if made else output


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call of the turn: what the model asked for and what came back."""

    name: str
    arguments: Mapping[str, Any]
    result: ToolResult


class TurnTools:
    """The memory tools for one turn of one verified caller."""

    def __init__(self, tools: ToolRunner, caller: Caller, *, max_calls: int = MAX_CALLS_PER_TURN) -> None:
        self._tools = tools
        self._caller = caller
        self._max_calls = max_calls
        self.calls: list[ToolCall] = []

    @property
    def caller(self) -> Caller:
        """Who every call of this turn acts for."""
        return self._caller

    @property
    def specs(self) -> Sequence[ToolSpec]:
        """What the model may call (no schema names a user: the caller is bound here)."""
        return TOOL_SPECS

    async def call(self, name: str, arguments: Any) -> ToolResult:
        """Run ``name`` for this turn's caller (in a thread: the tools block on HTTP); never raises."""
        if len(self.calls) >= self._max_calls:
            message = f"no more memory tool calls in this turn (at most {self._max_calls}); answer with what you have"
            result = ToolResult(
                str(name)[:64], {"error": "too_many_calls", "message": message}, message, "too_many_calls"
            )
        else:
            result = await asyncio.to_thread(self._tools.call, self._caller, name, arguments)
        self.calls.append(ToolCall(str(name)[:64], arguments if isinstance(arguments, Mapping) else {}, result))
        return result

    @property
    def forgot(self) -> bool:
        """Whether ``forget`` ran successfully in this turn."""
        return any(call.name == FORGET and not call.result.is_error for call in self.calls)

    def retained_answer(self, output: str) -> str | None:
        """:func:`answer_to_retain` for this turn's calls."""
        return answer_to_retain(((call.name, not call.result.is_error) for call in self.calls), output)
