"""An in-process fake Hindsight for **unit** tests (yours and ours): a :class:`~memory_adapter.transport.Transport`.

It keeps the server behaviours the adapter relies on: async retain deduplicated by ``operation_id`` (a replay of a
known id is a no-op), documents replaced by ``document_id``, 404 for a recall on an unknown bank, 422 for a query
without a word character. Recall returns the stored items sharing a word with the query. Faults can be switched on
(``down``, ``hang``, ``status``, ``shed``) and every request is recorded (including the bearer, for credential tests).
Integration tests use the real local Hindsight instead.

Example:
    >>> fake = FakeHindsight()
    >>> adapter = HindsightRuntimeAdapter(hindsight_api_url="http://fake", transport=fake, spool_dir=tmp)
    >>> fake.fault = Fault.DOWN            # the next calls fail as if nothing listened
    >>> [r.path for r in fake.requests]    # what reached "Hindsight", bearer included
"""

from __future__ import annotations

import re
import threading
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from memory_adapter.exceptions import HindsightUnavailableError
from memory_adapter.recall_deadline import OVERLOADED, REASON_FIELD
from memory_adapter.transport import HttpResponse

__all__ = ["FakeHindsight", "Fault", "RecordedRequest"]

_WORD = re.compile(r"\w+")
_BANK_ROUTE = re.compile(r"^/v1/default/banks/(?P<bank>[^/]+)(?P<rest>/.*)$")


class Fault(StrEnum):
    """Failure modes of the fake."""

    NONE = "none"
    DOWN = "down"
    """Connection refused: raises at once."""
    HANG = "hang"
    """Accepts and never answers: blocks for the request timeout (or until :meth:`FakeHindsight.release`)."""
    STATUS = "status"
    """Answers ``fault_status`` (503 by default) to everything."""
    SHED = "shed"
    """Answers every recall as an overloaded server does (``memory_adapter.recall_deadline``): 503 at once, with
    ``Retry-After`` and the ``overloaded`` reason; everything else is served."""


@dataclass(frozen=True)
class RecordedRequest:
    """One request the fake received."""

    method: str
    path: str
    body: Any
    bearer: str | None = field(repr=False)
    timeout: float
    headers: Mapping[str, str] = field(default_factory=dict)


class FakeHindsight:
    """The fake server. Thread-safe; its state is public for assertions."""

    def __init__(self) -> None:
        self.fault = Fault.NONE
        self.fault_status = 503
        self.banks: dict[str, dict[str, dict[str, Any]]] = {}
        self.operations: dict[str, str] = {}
        self.requests: list[RecordedRequest] = []
        self.reflect_answer = "reflected answer"
        self.deny: set[tuple[str | None, str]] = set()
        """(bearer, bank_id) pairs answered with 403."""
        self._lock = threading.Lock()
        self._released = threading.Event()

    # -- assertions helpers

    def documents(self, bank_id: str) -> dict[str, dict[str, Any]]:
        """Stored items of ``bank_id`` by document id."""
        with self._lock:
            return dict(self.banks.get(bank_id, {}))

    def calls(self, suffix: str) -> list[RecordedRequest]:
        """Recorded requests whose path ends with ``suffix``."""
        with self._lock:
            return [r for r in self.requests if r.path.endswith(suffix)]

    def release(self) -> None:
        """Let hung requests fail now."""
        self._released.set()

    def reset(self) -> None:
        """Forget every bank, operation, recorded request, fault and denial (reuse one fake across tests)."""
        with self._lock:
            self.banks.clear()
            self.operations.clear()
            self.requests.clear()
            self.deny.clear()
            self.fault = Fault.NONE

    # -- Transport

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any | None = None,
        bearer: str | None = None,
        timeout: float,
        headers: Mapping[str, str] | None = None,
    ) -> HttpResponse:
        """Serve one request (``headers``, such as the operator's actor, are accepted and not interpreted)."""
        with self._lock:
            self.requests.append(RecordedRequest(method, path, body, bearer, timeout, dict(headers or {})))
            fault = self.fault
        if fault is Fault.DOWN:
            raise HindsightUnavailableError("cannot reach Hindsight: ConnectionRefusedError")
        if fault is Fault.HANG:
            self._released.wait(timeout)
            # chained as the real transport chains it: a deadline miss, not a refusal (the breaker tells them apart)
            raise HindsightUnavailableError(f"Hindsight did not answer within {timeout:g} s") from TimeoutError()
        if fault is Fault.STATUS:
            return HttpResponse(self.fault_status, {"detail": "fault"})
        if fault is Fault.SHED and path.endswith("/memories/recall"):
            return HttpResponse(503, {"detail": "overloaded", REASON_FIELD: OVERLOADED}, retry_after=1.0)
        if path == "/health":
            return HttpResponse(200, {"status": "healthy"})
        match = _BANK_ROUTE.match(path)
        if match is None:
            return HttpResponse(404, {"detail": "Not Found"})
        bank_id = urllib.parse.unquote(match["bank"])
        if (bearer, bank_id) in self.deny:
            return HttpResponse(403, {"detail": "forbidden"})
        rest = match["rest"]
        if method == "POST" and rest == "/memories":
            return self._retain(bank_id, body)
        if method == "POST" and rest == "/memories/recall":
            return self._recall(bank_id, body)
        if method == "POST" and rest == "/reflect":
            return HttpResponse(200, {"text": self.reflect_answer})
        return HttpResponse(404, {"detail": "Not Found"})

    def close(self) -> None:
        """Nothing to close."""

    # -- routes

    def _retain(self, bank_id: str, body: Any) -> HttpResponse:
        op = body.get("operation_id")
        with self._lock:
            if op is not None and op in self.operations:
                if self.operations[op] != bank_id:
                    return HttpResponse(409, {"detail": f"operation_id {op} is already in use"})
                return HttpResponse(200, {"success": True, "operation_id": op, "deduplicated": True})
            bank = self.banks.setdefault(bank_id, {})
            for item in body["items"]:
                bank[item.get("document_id") or f"doc-{len(bank)}"] = item
            if op is not None:
                self.operations[op] = bank_id
        return HttpResponse(200, {"success": True, "operation_id": op, "async": body.get("async", False)})

    def _recall(self, bank_id: str, body: Any) -> HttpResponse:
        query_words = set(_WORD.findall(str(body.get("query", "")).lower()))
        if not query_words:
            return HttpResponse(422, {"detail": "query must contain at least one word character"})
        with self._lock:
            bank = self.banks.get(bank_id)
            if bank is None:
                return HttpResponse(404, {"detail": f"Bank '{bank_id}' not found"})
            items = list(bank.items())
        results = [
            {"id": doc_id, "text": item["content"], "type": "world", "document_id": doc_id}
            for doc_id, item in items
            if query_words & set(_WORD.findall(str(item["content"]).lower()))
        ]
        return HttpResponse(200, {"results": results})
