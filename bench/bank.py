"""Operator-side access to Hindsight for the benchmark: seed a bank, count its documents, wait for queued work.

The package's own wire (``HindsightApi`` over ``HttpTransport``) with the operator key, outside every side being
measured.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from memory_adapter._hindsight_api import HindsightApi
from memory_adapter.constants import DEFAULT_RECALL_BUDGET, DEFAULT_RECALL_MAX_TOKENS
from memory_adapter.transport import HttpTransport

__all__ = ["SEED_FACTS", "BankAdmin"]

#: The statuses of an operation still to run.
_UNFINISHED = ("pending", "processing")

#: What the benchmark user "said" in earlier sessions: recall has real memories to find and rank.
SEED_FACTS: tuple[str, ...] = (
    "I prefer email over phone calls.",
    "My favourite programming language is Python.",
    "I live in Lisbon and work remotely for a Berlin company.",
    "I am allergic to peanuts.",
    "My daughter Ana plays the violin.",
    "I drive an electric car, a 2023 hatchback.",
    "I usually take my holidays in August.",
    "My manager is called Priya.",
    "I run 10 kilometres every Sunday morning.",
    "I am learning Japanese for a trip next spring.",
    "I prefer window seats on flights.",
    "My invoice number for the last order was 4471.",
)

#: Queries for recall: paraphrases of the seeds (matched by meaning, not words) and a few misses.
RECALL_QUERIES: tuple[str, ...] = (
    "How should I contact you?",
    "Which coding language do you like?",
    "Where are you based?",
    "Any food allergies I should know about?",
    "What instrument does your child play?",
    "What kind of car do you have?",
    "When do you go on vacation?",
    "Who is your boss?",
    "What sport do you do on weekends?",
    "Which language are you studying?",
    "Aisle or window?",
    "What was my last invoice?",
)


class BankAdmin:
    """The operator's view of the local Hindsight (never a contender), through the package's wire."""

    def __init__(self, url: str, key: str | None) -> None:
        self.url = url.rstrip("/")
        self.key = key
        self._api = HindsightApi(HttpTransport(self.url), timeout=120.0, bearer=key)

    def seed(self, bank_id: str, facts: Sequence[str] = SEED_FACTS) -> None:
        """Retain ``facts`` (one document each) and wait until Hindsight has extracted them."""
        items = [
            {"content": f"User: {fact}\nAssistant: Noted.", "document_id": f"seed-{n}", "context": "bench seed"}
            for n, fact in enumerate(facts)
        ]
        self._api.retain(bank_id, items, wait=True, timeout=600.0)
        self.wait_settled([bank_id])

    def recall_count(self, bank_id: str, query: str) -> int:
        """How many memories a recall finds (to check the seeded bank answers)."""
        return len(self._api.recall(bank_id, query, budget=DEFAULT_RECALL_BUDGET, max_tokens=DEFAULT_RECALL_MAX_TOKENS))

    def documents(self, bank_id: str) -> list[dict[str, Any]]:
        """Every document of the bank (paged); empty when the bank does not exist."""
        return list(self._api.documents(bank_id))

    def memories(self, bank_id: str) -> Iterator[dict[str, Any]]:
        """Every memory unit of the bank (paged); none when the bank does not exist."""
        yield from self._api.memories(bank_id)

    def configure(self, bank_id: str, updates: dict[str, Any]) -> None:
        """Set ``updates`` on the bank's own settings."""
        self._api.update_bank_config(bank_id, updates)

    def reset_config(self, bank_id: str) -> None:
        """Drop the bank's own settings."""
        self._api.reset_bank_config(bank_id)

    def prune(self, bank_id: str, keep_prefix: str = "seed-") -> int:
        """Delete every document whose id does not start with ``keep_prefix`` (with its memories); return how many."""
        removed = 0
        for doc in self.documents(bank_id):
            doc_id = str(doc.get("id"))
            if not doc_id.startswith(keep_prefix):
                self._api.delete_document(bank_id, doc_id)
                removed += 1
        return removed

    def unfinished_operations(self, bank_id: str) -> int:
        """Queued or running operations of the bank (retains, consolidation)."""
        return sum(self._api.operation_count(bank_id, status) for status in _UNFINISHED)

    def wait_settled(self, banks: Iterable[str], timeout: float = 300.0) -> float:
        """Wait until no operation of ``banks`` is queued or running; return the seconds waited (capped)."""
        banks = list(banks)
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            if all(self.unfinished_operations(b) == 0 for b in banks):
                break
            time.sleep(0.1)
        return time.monotonic() - started
