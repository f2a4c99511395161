"""What the turn needs from long-term memory, as a small Protocol, and its binding to ``memory_adapter``.

The turn depends on :class:`Memory` only, so it is unit-tested against a fake and the adapter can evolve behind
:class:`HindsightMemory`. The binding imports ``memory_adapter``'s client lazily: ``hindsight_client`` costs about a
second of import, paid on the first turn that uses memory rather than at start-up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["Memory", "MemoryScope", "Recollection", "RetainReceipt"]


@dataclass(frozen=True, slots=True)
class MemoryScope:
    """Whose memory a turn touches, and with which credential (never printed)."""

    session_id: str
    user: str
    agent: str
    tenant: str | None
    request_id: str | None
    credential: str | None

    def __repr__(self) -> str:
        return f"MemoryScope(session_id={self.session_id!r}, agent={self.agent!r}, tenant={self.tenant is not None})"


@dataclass(frozen=True, slots=True)
class Recollection:
    """What recall found: the formatted memories, how many, and whether memory was unavailable (degraded)."""

    text: str
    count: int
    degraded: bool


NOTHING_RECALLED = Recollection(text="", count=0, degraded=False)
MEMORY_UNAVAILABLE = Recollection(text="", count=0, degraded=True)


class RetainReceipt(Protocol):
    """A scheduled retain. ``wait`` returns once it is delivered to Hindsight or durably spooled."""

    async def wait(self) -> None: ...


class Memory(Protocol):
    """Long-term memory as the turn sees it. Implementations never raise for Hindsight failures: they degrade."""

    async def recall(self, scope: MemoryScope, query: str) -> Recollection: ...

    async def retain(self, scope: MemoryScope, query: str, output: str) -> RetainReceipt | None:
        """Schedule retaining the turn and return at once (``None`` when there is nothing to retain)."""
        ...

    async def aclose(self) -> None:
        """Deliver or spool what is pending (bounded), then release connections."""
        ...
