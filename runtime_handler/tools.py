"""The memory tools as one turn's model sees them: ``memory_adapter.tools``, bound to the turn's verified caller.

The model chooses a tool and its arguments; :class:`TurnTools` supplies who it acts for (the caller ``main.py``
verified, with the credential Hindsight checks), so no argument can name another user. It also remembers what ran,
because the turn acts on it: a turn that wrote memory itself (``remember``, ``forget``) is not retained again (that
would store a remembered fact twice, or bring a forgotten one back through the transcript), and a ``forget`` also
drops the matching exchanges from the session's working memory.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from memory_adapter.identity.caller import Caller
from memory_adapter.tools.matching import matches
from memory_adapter.tools.memory_tools import ToolResult, ToolRunner
from memory_adapter.tools.specs import FORGET, REMEMBER, TOOL_SPECS, ToolSpec
from runtime_handler.working_memory import Exchange

__all__ = ["MAX_CALLS_PER_TURN", "ToolCall", "TurnTools"]

#: Tool calls one turn may make, whatever the model asks for (a runaway loop costs no more than this).
MAX_CALLS_PER_TURN: Final = 10
_WRITES: Final = frozenset({REMEMBER, FORGET})


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

    @property
    def wrote_memory(self) -> bool:
        """Whether ``remember`` or ``forget`` ran successfully in this turn."""
        return any(call.name in _WRITES and not call.result.is_error for call in self.calls)

    def forgotten(self, exchange: Exchange) -> bool:
        """Whether ``exchange`` said what a successful ``forget`` of this turn removed."""
        for call in self.calls:
            if call.name != FORGET or call.result.is_error:
                continue
            query = call.arguments.get("query")
            if isinstance(query, str) and matches(query, exchange.user):
                return True
            texts = [item.get("text", "") for item in call.result.data.get("forgotten", ())]
            if any(isinstance(text, str) and text and matches(text, exchange.user) for text in texts):
                return True
        return False
