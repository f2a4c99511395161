"""Operator-side HTTP to the local Hindsight for the scale benchmarks: one keep-alive connection per client.

Recall goes out with the body our adapter sends (``memory_adapter.adapter.HindsightRuntimeAdapter._recall_blocking``:
budget ``mid``, 1,500 tokens, no trace, no entities/chunks/source facts), so a latency here is the server's share of
a turn's recall. Standard library only; not thread-safe (one client per thread).
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.parse
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["RECALL_BODY", "HindsightClient"]

#: What our adapter sends with every recall (besides the query).
RECALL_BODY: dict[str, Any] = {
    "budget": "mid",
    "max_tokens": 1500,
    "trace": False,
    "include": {"entities": None, "chunks": None, "source_facts": None},
    "tags_match": "any",
}


class HindsightError(RuntimeError):
    """Hindsight answered with an error status."""


class HindsightClient:
    """A keep-alive connection to one Hindsight with the operator key."""

    def __init__(self, url: str, key: str | None, *, timeout: float = 120.0) -> None:
        parsed = urllib.parse.urlsplit(url)
        self._host = parsed.hostname or "127.0.0.1"
        self._port = parsed.port or 80
        self._key = key
        self._timeout = timeout
        self._conn: http.client.HTTPConnection | None = None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def call(self, method: str, path: str, body: Any | None = None, *, timeout: float | None = None) -> Any:
        """One request; JSON in and out. Reconnects once if the kept-alive connection was closed."""
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        for attempt in (1, 2):
            if self._conn is None:
                self._conn = http.client.HTTPConnection(self._host, self._port, timeout=timeout or self._timeout)
            try:
                self._conn.request(method, path, body=data, headers=headers)
                response = self._conn.getresponse()
                raw = response.read()
            except (ConnectionError, http.client.HTTPException):
                self.close()
                if attempt == 2:
                    raise
                continue
            if response.status >= 400:
                raise HindsightError(f"{method} {path} answered {response.status}: {raw[:300]!r}")
            return json.loads(raw) if raw else None
        raise AssertionError("unreachable")

    @staticmethod
    def bank_path(bank: str, suffix: str = "") -> str:
        return f"/v1/default/banks/{urllib.parse.quote(bank, safe='@:.-_~')}{suffix}"

    def create_bank(self, bank: str) -> None:
        """Create the bank (and, at Hindsight's default, its three partial HNSW indexes)."""
        self.call("PUT", self.bank_path(bank), {"name": bank})

    def recall(self, bank: str, query: str) -> list[dict[str, Any]]:
        """The memories recall returns for ``query``, as our adapter asks for them."""
        found = self.call("POST", self.bank_path(bank, "/memories/recall"), {"query": query, **RECALL_BODY})
        return list(found.get("results") or [])

    def retain(self, bank: str, items: Sequence[dict[str, Any]]) -> None:
        """Queue ``items`` (documents) for extraction, as our adapter does (``async: true``)."""
        self.call("POST", self.bank_path(bank, "/memories"), {"items": list(items), "async": True})

    def pending(self, bank: str) -> int:
        """Queued or running operations of the bank."""
        total = 0
        for status in ("pending", "processing"):
            page = self.call("GET", self.bank_path(bank, f"/operations?status={status}&limit=1"))
            total += int(page.get("total") or 0)
        return total

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
        out: list[dict[str, Any]] = []
        offset = 0
        while True:
            try:
                page = self.call("GET", self.bank_path(bank, f"/documents?limit=500&offset={offset}"))
            except HindsightError as exc:
                if " 404" in str(exc):
                    return out
                raise
            items = page.get("items") or []
            out.extend(items)
            offset += len(items)
            if not items or offset >= int(page.get("total") or 0):
                return out
