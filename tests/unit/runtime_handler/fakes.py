"""A fake long-term memory implementing runtime_handler.memory.Memory, with failure modes and held retains."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field

from memory_adapter.bank_ids import format_bank_id
from runtime_handler.memory import MemoryScope, Recollection


class HeldReceipt:
    """Resolves when ``release`` is set (a threading.Event, so tests on another thread can release it)."""

    def __init__(self, release: threading.Event) -> None:
        self._release = release

    async def wait(self) -> None:
        await asyncio.to_thread(self._release.wait)


@dataclass
class FakeMemory:
    banks: dict[str, list[str]] = field(default_factory=dict)
    scopes: list[MemoryScope] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    fail: bool = False
    hang: bool = False
    closed: bool = False

    def __post_init__(self) -> None:
        self.release.set()

    @staticmethod
    def bank(scope: MemoryScope) -> str:
        return format_bank_id(user=scope.user, agent=scope.agent, tenant=scope.tenant)

    async def recall(self, scope: MemoryScope, query: str) -> Recollection:
        self.scopes.append(scope)
        if self.hang:
            await asyncio.sleep(3600)
        if self.fail:
            raise ConnectionError("hindsight is down")
        memories = self.banks.get(self.bank(scope), [])
        return Recollection(text="\n".join(f"- {m}" for m in memories), count=len(memories), degraded=False)

    async def retain(self, scope: MemoryScope, query: str, output: str) -> HeldReceipt:
        self.scopes.append(scope)
        if self.fail:
            raise ConnectionError("hindsight is down")
        self.banks.setdefault(self.bank(scope), []).append(query)
        return HeldReceipt(self.release)

    async def aclose(self) -> None:
        self.closed = True
