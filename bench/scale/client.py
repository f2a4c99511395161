"""Operator-side access to the local Hindsight for the scale benchmarks, through the package's own wire.

Recall goes out as the adapter sends it (``HindsightApi.recall``: budget ``mid``, 1,500 tokens here, no trace, no
entities/chunks/source facts), so a latency here is the server's share of a turn's recall; one keep-alive connection
per calling thread (``HttpTransport``).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

from memory_adapter._hindsight_api import HindsightApi
from memory_adapter.constants import DEFAULT_RECALL_BUDGET, DEFAULT_RECALL_MAX_TOKENS
from memory_adapter.formatting import RecalledMemory
from memory_adapter.transport import HttpTransport

__all__ = ["HindsightClient"]

#: Operations still to run.
_UNFINISHED = ("pending", "processing")


class HindsightClient:
    """The operator's requests to one Hindsight with the operator key."""

    def __init__(self, url: str, key: str | None, *, timeout: float = 120.0) -> None:
        self._transport = HttpTransport(url)
        self._api = HindsightApi(self._transport, timeout=timeout, bearer=key)

    def close(self) -> None:
        self._transport.close()

    def create_bank(self, bank: str) -> None:
        """Create the bank (and, at Hindsight's default, its three partial HNSW indexes)."""
        self._api.create_bank(bank, {"name": bank})

    def recall(self, bank: str, query: str) -> list[RecalledMemory]:
        """The memories recall returns for ``query``, as our adapter asks for them."""
        return self._api.recall(bank, query, budget=DEFAULT_RECALL_BUDGET, max_tokens=DEFAULT_RECALL_MAX_TOKENS)

    def retain(self, bank: str, items: Sequence[dict[str, Any]]) -> None:
        """Queue ``items`` (documents) for extraction, as our adapter does (``async: true``)."""
        self._api.retain(bank, items)

    def pending(self, bank: str) -> int:
        """Queued or running operations of the bank."""
        return sum(self._api.operation_count(bank, status) for status in _UNFINISHED)

    def wait_settled(self, banks: Iterable[str], *, timeout: float = 1800.0, poll: float = 0.25) -> float:
        """Wait until no operation of ``banks`` is queued or running; return the seconds waited."""
        banks = list(banks)
        began = time.monotonic()
        while time.monotonic() - began < timeout:
            if all(self.pending(b) == 0 for b in banks):
                break
            time.sleep(poll)
        return time.monotonic() - began

    def documents(self, bank: str) -> list[dict[str, Any]]:
        """Every document of the bank (empty when the bank does not exist)."""
        return list(self._api.documents(bank))
