"""Operator-side access to Hindsight for the benchmark: seed a bank, count its documents, wait for queued work.

Standard library HTTP with the operator key, outside every side being measured.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

__all__ = ["SEED_FACTS", "BankAdmin"]

_TERMINAL = frozenset({"completed", "failed", "cancelled", "canceled", "error"})

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
    """The operator's view of the local Hindsight (never a contender)."""

    def __init__(self, url: str, key: str | None) -> None:
        self.url = url.rstrip("/")
        self.key = key

    def _call(self, method: str, path: str, body: Any | None = None, timeout: float = 120.0) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.url}{path}", data=data, method=method)  # noqa: S310 - loopback
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if self.key:
            request.add_header("Authorization", f"Bearer {self.key}")
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - loopback http
            raw = response.read()
        return json.loads(raw) if raw else None

    @staticmethod
    def _bank(bank_id: str) -> str:
        return f"/v1/default/banks/{urllib.parse.quote(bank_id, safe='@:.-_~')}"

    def seed(self, bank_id: str, facts: Sequence[str] = SEED_FACTS) -> None:
        """Retain ``facts`` (one document each) and wait until Hindsight has extracted them."""
        items = [
            {"content": f"User: {fact}\nAssistant: Noted.", "document_id": f"seed-{n}", "context": "bench seed"}
            for n, fact in enumerate(facts)
        ]
        self._call("POST", f"{self._bank(bank_id)}/memories", {"items": items, "async": False}, timeout=600)
        self.wait_settled([bank_id])

    def recall_count(self, bank_id: str, query: str) -> int:
        """How many memories a recall finds (to check the seeded bank answers)."""
        body = {"query": query, "budget": "mid", "max_tokens": 1500}
        found = self._call("POST", f"{self._bank(bank_id)}/memories/recall", body)
        return len(found.get("results") or [])

    def _paged(self, bank_id: str, resource: str, items_key: str, limit: int) -> Iterator[dict[str, Any]]:
        """Every item of a paged bank listing (`{items_key: [...], "total": n}`); none when the bank is absent."""
        offset = 0
        while True:
            try:
                page = self._call("GET", f"{self._bank(bank_id)}/{resource}?limit={limit}&offset={offset}")
            except urllib.error.HTTPError as exc:
                if exc.code == 404:
                    return
                raise
            items = page.get(items_key) or []
            yield from items
            offset += len(items)
            if not items or offset >= int(page.get("total") or 0):
                return

    def documents(self, bank_id: str) -> list[dict[str, Any]]:
        """Every document of the bank (paged); empty when the bank does not exist."""
        return list(self._paged(bank_id, "documents", "items", limit=500))

    def prune(self, bank_id: str, keep_prefix: str = "seed-") -> int:
        """Delete every document whose id does not start with ``keep_prefix`` (with its memories); return how many."""
        removed = 0
        for doc in self.documents(bank_id):
            doc_id = str(doc.get("id"))
            if not doc_id.startswith(keep_prefix):
                self._call("DELETE", f"{self._bank(bank_id)}/documents/{urllib.parse.quote(doc_id, safe='')}")
                removed += 1
        return removed

    def unfinished_operations(self, bank_id: str) -> int:
        """Queued or running operations of the bank (retains, consolidation)."""
        operations = self._paged(bank_id, "operations", "operations", limit=100)
        return sum(1 for op in operations if str(op.get("status")) not in _TERMINAL)

    def wait_settled(self, banks: Iterable[str], timeout: float = 300.0) -> float:
        """Wait until no operation of ``banks`` is queued or running; return the seconds waited (capped)."""
        banks = list(banks)
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            if all(self.unfinished_operations(b) == 0 for b in banks):
                break
            time.sleep(0.1)
        return time.monotonic() - started
