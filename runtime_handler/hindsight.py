"""The :class:`~runtime_handler.memory.Memory` port bound to ``memory_adapter.HindsightRuntimeAdapter``.

The adapter does the hard parts (recall deadline and circuit breaker, background delivery with retries, durable
spool, per-turn bearer credential); this module only translates between the turn's types and the adapter's.
Memories come back as the adapter's sanitised bullets; :mod:`runtime_handler.model` wraps them as inert data.
"""

from __future__ import annotations

from typing import Any

from memory_adapter.adapter import HindsightRuntimeAdapter
from memory_adapter.context import TurnContext
from memory_adapter.delivery import RetainHandle
from memory_adapter.formatting import format_memories_as_bullets
from runtime_handler.memory import MemoryScope, Recollection
from runtime_handler.settings import Settings

__all__ = ["HindsightMemory"]


class _Receipt:
    def __init__(self, handle: RetainHandle) -> None:
        self._handle = handle

    async def wait(self) -> None:
        await self._handle


class HindsightMemory:
    """Long-term memory on Hindsight through the memory adapter. One per process."""

    def __init__(
        self, settings: Settings, *, metrics: Any = None, adapter: HindsightRuntimeAdapter | None = None
    ) -> None:
        self.adapter = adapter or HindsightRuntimeAdapter(
            agent_name=settings.agent_name,
            hindsight_api_url=settings.hindsight_api_url,
            recall_timeout=settings.recall_timeout_s,
            formatter=format_memories_as_bullets,
            metrics=metrics,
        )

    @staticmethod
    def _context(scope: MemoryScope) -> TurnContext:
        return TurnContext(
            runtime_session_id=scope.session_id,
            user_id=scope.user,
            agent_name=scope.agent,
            tenant_id=scope.tenant,
            request_id=scope.request_id,
            credential=scope.credential,
        )

    async def recall(self, scope: MemoryScope, query: str) -> Recollection:
        found = await self.adapter.recall_for_turn(self._context(scope), query)
        return Recollection(text=found.text, count=found.count, degraded=found.degraded)

    async def retain(self, scope: MemoryScope, query: str, output: str) -> _Receipt:
        return _Receipt(self.adapter.retain_for_turn(self._context(scope), result=output, query=query))

    async def aclose(self) -> None:
        await self.adapter.aclose()
