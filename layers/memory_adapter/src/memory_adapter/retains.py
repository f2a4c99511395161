"""What the caller of a retain gets back: the :class:`RetainHandle` of one retain, how it ended
(:class:`RetainOutcome`), and what a replay of the spool did (:class:`ReplayResult`).

Apart from :mod:`memory_adapter.delivery` (the machinery that produces them) so that the types a user awaits and
compares stay small to read.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
from collections.abc import Callable, Generator
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memory_adapter.spool import RetainRecord

__all__ = ["ReplayResult", "RetainHandle", "RetainOutcome"]


class RetainOutcome(StrEnum):
    """How a retain ended."""

    DELIVERED = "delivered"
    """Hindsight accepted it (queued server-side; fact extraction follows asynchronously)."""
    SPOOLED = "spooled"
    """Not deliverable now; stored durably in the spool for :meth:`replay`."""
    REJECTED = "rejected"
    """Hindsight refused it for good (4xx); kept in the spool's dead letters."""
    DROPPED = "dropped"
    """Could be neither delivered nor spooled (no spool, or the spool failed): lost, logged as an error."""
    SKIPPED = "skipped"
    """Nothing to retain (blank result) or no bank could be resolved."""


class RetainHandle:
    """The fate of one retain: awaitable from any event loop, or waited on synchronously.

    Example:
        >>> handle = adapter.retain_for_turn(ctx, result=answer, query=prompt)
        >>> outcome = await handle            # RetainOutcome.DELIVERED or .SPOOLED, ...
    """

    def __init__(
        self,
        future: concurrent.futures.Future[RetainOutcome],
        *,
        operation_id: str | None = None,
        record: Callable[[], RetainRecord] | None = None,
    ) -> None:
        self._future = future
        self._operation_id = operation_id
        self._record = record

    @property
    def operation_id(self) -> str | None:
        """The retain's idempotency key (``None`` for a skipped one); builds the record here if no delivery thread
        has yet (it is built once either way)."""
        if self._operation_id is None and self._record is not None:
            with contextlib.suppress(Exception):  # a record that cannot be built was dropped (and logged)
                self._operation_id = self._record().operation_id
        return self._operation_id

    @classmethod
    def resolved(cls, outcome: RetainOutcome) -> RetainHandle:
        """A handle that is already done (e.g. ``SKIPPED``)."""
        future: concurrent.futures.Future[RetainOutcome] = concurrent.futures.Future()
        future.set_result(outcome)
        return cls(future)

    def done(self) -> bool:
        """Whether the retain is delivered, spooled, rejected, dropped or skipped."""
        return self._future.done()

    @property
    def outcome(self) -> RetainOutcome | None:
        """The outcome, or ``None`` while the retain is still in flight."""
        return self._future.result() if self._future.done() else None

    def result(self, timeout: float | None = None) -> RetainOutcome:
        """Block until done (raises ``TimeoutError`` after ``timeout`` seconds)."""
        return self._future.result(timeout)

    def __await__(self) -> Generator[Any, None, RetainOutcome]:
        return asyncio.wrap_future(self._future).__await__()


@dataclass(frozen=True, slots=True)
class ReplayResult:
    """What a replay did: records delivered, moved to dead letters, and still waiting in the spool."""

    delivered: int
    rejected: int
    remaining: int
