"""Test transports for **unit** tests (yours and ours): :class:`MockTransport` answers with a function of each
request (as httpx's ``MockTransport``), and :class:`FakeHindsight` is one with an in-process Hindsight behind it.

``MockTransport(handler)`` records every request (a :class:`~memory_adapter.transport.HttpRequest`) and returns what
``handler(request)`` returns; a handler that raises :class:`~memory_adapter.exceptions.HindsightUnavailableError` is a
server that did not answer. A handler may hand a request on with ``transport.send(request)`` (to a
:class:`FakeHindsight`, which records it too, or to a real transport), so a test changes one behaviour of a fake, or
counts what reaches a real server, without writing a transport.


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
    >>> def slow_retains(request):         # one behaviour changed, the rest served by the fake
    ...     if request.path.endswith("/memories"):
    ...         time.sleep(0.1)
    ...     return fake.send(request)
    >>> transport = MockTransport(slow_retains)
"""

from __future__ import annotations

import math
import re
import threading
import urllib.parse
from collections.abc import Callable
from enum import StrEnum
from typing import Any

from memory_adapter import hindsight_routes as routes
from memory_adapter.exceptions import HindsightUnavailableError
from memory_adapter.recall_deadline import OVERLOADED, REASON_FIELD, RETRY_AFTER_FIELD
from memory_adapter.transport import HttpRequest, HttpResponse

__all__ = ["FakeHindsight", "Fault", "Handler", "MockTransport"]

_WORD = re.compile(r"\w+")


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


#: What a :class:`MockTransport` asks for each request's answer.
Handler = Callable[[HttpRequest], HttpResponse]


class MockTransport:
    """A :class:`~memory_adapter.transport.Transport` answering with ``handler(request)``; thread-safe, every request
    recorded (bearer included) in :attr:`requests`."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.requests: list[HttpRequest] = []
        self._lock = threading.Lock()

    def send(self, request: HttpRequest) -> HttpResponse:
        """Record the request, then answer what the handler returns (or raise what it raises)."""
        with self._lock:
            self.requests.append(request)
        return self.handler(request)

    def calls(self, suffix: str, method: str | None = None) -> list[HttpRequest]:
        """Recorded requests whose path ends with ``suffix`` (and of ``method``, when given)."""
        with self._lock:
            return [r for r in self.requests if r.path.endswith(suffix) and method in (None, r.method)]

    def close(self) -> None:
        """Nothing to close."""


class FakeHindsight(MockTransport):
    """The fake server: a :class:`MockTransport` whose handler is :meth:`serve`. Thread-safe; its state is public for
    assertions."""

    def __init__(self) -> None:
        super().__init__(self.serve)
        self.fault = Fault.NONE
        self.fault_status = 503
        self.shed_retry_after_s = 1.0
        """The wait a shed answer names (body, to the millisecond; ``Retry-After``, rounded up)."""
        self.banks: dict[str, dict[str, dict[str, Any]]] = {}
        self.operations: dict[str, str] = {}
        self.reflect_answer = "reflected answer"
        self.deny: set[tuple[str | None, str]] = set()
        """(bearer, bank_id) pairs answered with 403."""
        self._released = threading.Event()

    # -- assertions helpers

    def documents(self, bank_id: str) -> dict[str, dict[str, Any]]:
        """Stored items of ``bank_id`` by document id."""
        with self._lock:
            return dict(self.banks.get(bank_id, {}))

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
            self.shed_retry_after_s = 1.0

    # -- the server

    def serve(self, request: HttpRequest) -> HttpResponse:
        """The handler: answer one request as Hindsight would (``headers``, such as the operator's actor, are not
        interpreted)."""
        method, path, body, bearer, timeout = (
            request.method,
            request.path,
            request.body,
            request.bearer,
            request.timeout,
        )
        with self._lock:
            fault = self.fault
        if fault is Fault.DOWN:
            raise HindsightUnavailableError("cannot reach Hindsight: ConnectionRefusedError")
        if fault is Fault.HANG:
            self._released.wait(timeout)
            # chained as the real transport chains it: a deadline miss, not a refusal (the breaker tells them apart)
            raise HindsightUnavailableError(f"Hindsight did not answer within {timeout:g} s") from TimeoutError()
        if fault is Fault.STATUS:
            return HttpResponse(self.fault_status, {"detail": "fault"})
        if fault is Fault.SHED and path.endswith(routes.RECALL):
            wait = self.shed_retry_after_s
            body = {"detail": "overloaded", REASON_FIELD: OVERLOADED, RETRY_AFTER_FIELD: wait}
            return HttpResponse(503, body, retry_after=float(math.ceil(wait)))
        if path == routes.HEALTH:
            return HttpResponse(200, {"status": "healthy"})
        match = routes.BANK_REQUEST.match(path)
        if match is None:
            return HttpResponse(404, {"detail": "Not Found"})
        bank_id = urllib.parse.unquote(match["bank"])
        if (bearer, bank_id) in self.deny:
            return HttpResponse(403, {"detail": "forbidden"})
        rest = match["rest"]
        if method == "POST" and rest == routes.MEMORIES:
            return self._retain(bank_id, body)
        if method == "POST" and rest == routes.RECALL:
            return self._recall(bank_id, body)
        if method == "POST" and rest == routes.REFLECT:
            return HttpResponse(200, {"text": self.reflect_answer})
        return HttpResponse(404, {"detail": "Not Found"})

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
