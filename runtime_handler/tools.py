"""The memory tools as one turn's model sees them: :class:`memory_adapter.tools.turn.TurnTools` (shared with the
framework integrations: bound to the verified caller, calls capped, the retain rule), plus what working memory needs.

A ``forget`` also drops the matching exchanges from the session's working memory (:meth:`TurnTools.forgotten`).
"""

from __future__ import annotations

from memory_adapter.tools.matching import matches
from memory_adapter.tools.specs import FORGET
from memory_adapter.tools.turn import TurnTools as SharedTurnTools
from runtime_handler.working_memory import Exchange

__all__ = ["TurnTools"]


class TurnTools(SharedTurnTools):
    """The memory tools for one turn of one verified caller, and what its ``forget`` calls removed."""

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
