"""Hindsight 1.1.0's HTTP API as this package speaks it: routes, request bodies, response parsing, status to error.

The one place that knows the wire. The adapter (recall, reflect, retain, health), the memory tools, the operator's
client, background delivery, the queue's replay and the isolation probe all call :class:`HindsightApi`, so a request
body, a route or the parsing of a memory unit (:func:`memory_from`) changes in this file only. Private: users reach
Hindsight through the adapter, the tools or ``OperatorClient``.

Statuses map onto two exceptions (as httpx's ``map_exceptions`` does): :class:`HindsightUnavailableError` for
anything worth retrying (408/425/429/5xx; the transport raises it too when no answer came; its
:class:`HindsightOverloadedError` for a recall the server shed) and :class:`HindsightRequestError` for definitive
refusals. Reads that may find nothing take ``missing_ok`` and return
``None`` (or nothing) for the statuses that mean "not there" instead of raising.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, NotRequired, TypedDict, Unpack

from memory_adapter import hindsight_routes as routes
from memory_adapter.exceptions import HindsightOverloadedError, HindsightRequestError, HindsightUnavailableError
from memory_adapter.formatting import RecalledMemory
from memory_adapter.hindsight_routes import bank_path, item_path
from memory_adapter.kinds import kind_of
from memory_adapter.recall_deadline import DEADLINE_HEADER, OVERLOADED, REASON_FIELD, RETRY_AFTER_FIELD
from memory_adapter.transport import HttpRequest, HttpResponse, Transport

if TYPE_CHECKING:
    from memory_adapter.spool import RetainRecord

__all__ = [
    "ABSENT_STATUSES",
    "EMPTY_RECALL_STATUSES",
    "HindsightApi",
    "SearchOptions",
    "checked",
    "is_transient_status",
    "memories_from",
    "memory_from",
    "post_retain",
]

_TRANSIENT_STATUSES: Final = frozenset({408, 425, 429, 500, 502, 503, 504})
#: Statuses after which a recall or reflect is simply empty: unknown bank (nothing retained yet), or a query
#: Hindsight cannot search (e.g. punctuation only).
EMPTY_RECALL_STATUSES: Final = frozenset({404, 422})
#: Statuses a read with ``missing_ok`` takes for "not there": an unknown bank or id, or an id Hindsight cannot parse.
ABSENT_STATUSES: Final = frozenset({400, 404, 422})
_PAGE: Final = 200


class SearchOptions(TypedDict):
    """What a recall and a reflect both take besides the bank and the query."""

    budget: str
    """Hindsight's search effort (``low``, ``mid``, ``high``)."""
    max_tokens: int
    bearer: NotRequired[str | None]
    """The credential shown for this call (default: the client's)."""
    timeout: NotRequired[float | None]
    """Seconds (default: the client's)."""


def is_transient_status(status: int) -> bool:
    """Whether an HTTP status is worth retrying (and counts against the circuit breaker)."""
    return status in _TRANSIENT_STATUSES or status >= 500


def _detail_text(detail: Any) -> str:
    """A refusal's ``detail`` in words; a validation refusal (FastAPI's 422, a list of errors) by each error's place and
    message only: its ``input`` echoes the refused value (a turn's text), never for a dead letter's reason or a log."""
    if not isinstance(detail, list):
        return str(detail)
    parts = [f"{'.'.join(map(str, e.get('loc') or ()))}: {e.get('msg')}" for e in detail if isinstance(e, dict)]
    return "; ".join(parts) if parts else "a validation refusal"


def checked(response: HttpResponse) -> HttpResponse:
    """``response`` if it is 2xx, else the mapped exception (``detail`` of the body, cut to 200 characters)."""
    if 200 <= response.status < 300:
        return response
    detail = response.body.get("detail") if isinstance(response.body, dict) else None
    message = _detail_text(detail)[:200] if detail is not None else "no detail"
    if response.status == 503 and _field(response.body, REASON_FIELD) == OVERLOADED:
        raise HindsightOverloadedError(
            f"Hindsight shed the request (overloaded): {message}", retry_after=_shed_retry_after(response)
        )
    if is_transient_status(response.status):
        raise HindsightUnavailableError(
            f"Hindsight answered HTTP {response.status}: {message}",
            retry_after=response.retry_after,
            status=response.status,
        )
    raise HindsightRequestError(response.status, message)


def _shed_retry_after(response: HttpResponse) -> float | None:
    """A shed's wait in seconds: the body's float (the server's expected wait, to the millisecond) where it is a
    number from 0 to an hour, else the ``Retry-After`` header's whole seconds."""
    value = _field(response.body, RETRY_AFTER_FIELD)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 3600:
        return float(value)
    return response.retry_after


def _field(body: Any, key: str) -> Any:
    return body.get(key) if isinstance(body, dict) else None


def memory_from(raw: Any) -> RecalledMemory | None:
    """The one parser of a memory unit (a recall result, a listing item, a lookup): ``None`` without text."""
    if not isinstance(raw, Mapping) or not isinstance(raw.get("text"), str):
        return None

    def text(key: str) -> str | None:
        value = raw.get(key)
        return value if isinstance(value, str) and value else None

    tags, metadata, scores = raw.get("tags"), raw.get("metadata"), raw.get("scores")
    sources = raw.get("source_fact_ids") or raw.get("source_memory_ids")
    similarity = scores.get("semantic") if isinstance(scores, Mapping) else None
    return RecalledMemory(
        text=raw["text"],
        type=text("type") or text("fact_type"),
        mentioned_at=text("mentioned_at"),
        id=text("id"),
        document_id=text("document_id"),
        kind=kind_of(
            tags if isinstance(tags, list) else None, metadata if isinstance(metadata, Mapping) else None
        ).value,
        sources=tuple(s for s in sources if isinstance(s, str)) if isinstance(sources, list) else (),
        similarity=float(similarity) if isinstance(similarity, int | float) else None,
    )


def memories_from(raw: Any) -> list[RecalledMemory]:
    """Every memory unit of a list (an answer's ``results`` or ``items``) that parses."""
    return [m for m in map(memory_from, raw if isinstance(raw, list) else ()) if m is not None]


class HindsightApi:
    """Hindsight's routes over one :class:`~memory_adapter.transport.Transport` (blocking; call from threads).

    Args:
        transport: How to reach Hindsight.
        timeout: Default seconds per request (each call may give its own).
        bearer: Default credential (each call may give its own; ``None``: no ``Authorization`` header).
        headers: Extra headers sent with every request (the admin tools' ``x-memory-actor``).
    """

    def __init__(
        self,
        transport: Transport,
        *,
        timeout: float,
        bearer: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.transport = transport
        self._timeout = timeout
        self._bearer = bearer
        self.headers: Mapping[str, str] = dict(headers or {})

    # ------------------------------------------------------------------ plumbing

    def call(
        self,
        method: str,
        path: str,
        body: Any | None = None,
        *,
        bearer: str | None = None,
        timeout: float | None = None,
        missing_ok: bool = False,
        absent: frozenset[int] = ABSENT_STATUSES,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """One request; the JSON body of a 2xx answer, ``None`` for an ``absent`` status when ``missing_ok``."""
        response = self.transport.send(
            HttpRequest(
                method,
                path,
                body=body,
                bearer=bearer or self._bearer,
                timeout=self._timeout if timeout is None else timeout,
                headers={**self.headers, **(headers or {})},
            )
        )
        if missing_ok and response.status in absent:
            return None
        return checked(response).body

    def pages(
        self, path: str, params: Mapping[str, Any] | None = None, *, key: str = "items", bearer: str | None = None
    ) -> Iterator[Any]:
        """Every item of a ``limit``/``offset`` listing, paged to its end; nothing when the bank does not exist."""
        offset = 0
        while True:
            query = urllib.parse.urlencode({**(params or {}), "limit": _PAGE, "offset": offset}, doseq=True)
            body = self.call("GET", f"{path}?{query}", bearer=bearer, missing_ok=True, absent=frozenset({404}))
            items = _field(body, key)
            if not items:
                return
            yield from items
            offset += len(items)
            total = body.get("total")
            if isinstance(total, int) and offset >= total:
                return

    # ------------------------------------------------------------------ health

    def healthy(self, *, timeout: float) -> bool:
        """``GET /health``: any answer below 500 means Hindsight is up; raises when no answer came in time."""
        return self.transport.send(HttpRequest("GET", routes.HEALTH, timeout=timeout)).status < 500

    # ------------------------------------------------------------------ recall, reflect, retain

    def _search(
        self,
        bank_id: str,
        suffix: str,
        body: dict[str, Any],
        search: SearchOptions,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """A recall or reflect: nothing (``None``) for an unknown bank or a query Hindsight cannot search."""
        path = bank_path(bank_id, suffix)
        return self.call(
            "POST",
            path,
            body,
            bearer=search.get("bearer"),
            timeout=search.get("timeout"),
            missing_ok=True,
            absent=EMPTY_RECALL_STATUSES,
            headers=headers,
        )

    def recall(
        self, bank_id: str, query: str, *, deadline_ms: float | None = None, **search: Unpack[SearchOptions]
    ) -> list[RecalledMemory]:
        """``POST .../memories/recall``: the memories found (nothing for an unknown bank or unsearchable query).
        Entities, chunks and source facts are not asked for: only the memories are used.

        ``deadline_ms``: how long the caller will wait for the answer, told to the server (which may shed the recall:
        :class:`HindsightOverloadedError`); ``None`` states no deadline."""
        body = {
            "query": query,
            "budget": search["budget"],
            "max_tokens": search["max_tokens"],
            "trace": False,
            "include": {"entities": None, "chunks": None, "source_facts": None},
            "tags_match": "any",
        }
        headers = {DEADLINE_HEADER: str(max(0, round(deadline_ms)))} if deadline_ms is not None else None
        return memories_from(_field(self._search(bank_id, routes.RECALL, body, search, headers), "results"))

    def reflect(self, bank_id: str, query: str, **search: Unpack[SearchOptions]) -> str | None:
        """``POST .../reflect``: the answer's text; ``None`` when blank, the bank unknown or the query unsearchable."""
        body = {"query": query, "budget": search["budget"], "max_tokens": search["max_tokens"]}
        text = _field(self._search(bank_id, routes.REFLECT, body, search), "text")
        return text if isinstance(text, str) and text.strip() else None

    def retain(
        self,
        bank_id: str,
        items: Sequence[Mapping[str, Any]],
        *,
        operation_id: str | None = None,
        wait: bool = False,
        bearer: str | None = None,
        timeout: float | None = None,
    ) -> None:
        """``POST .../memories``: a server-side async retain carrying ``operation_id`` (a re-delivery is a no-op),
        or with ``wait`` one that returns when Hindsight has extracted the facts."""
        body: dict[str, Any] = {"items": list(items), "async": not wait}
        if operation_id is not None:
            body["operation_id"] = operation_id
        self.call("POST", bank_path(bank_id, routes.MEMORIES), body, bearer=bearer, timeout=timeout)

    # ------------------------------------------------------------------ list, get, invalidate, delete

    def list_memories(self, bank_id: str, params: Mapping[str, Any], *, bearer: str | None = None) -> list[Any]:
        """One page of ``GET .../memories/list`` (``params``: limit, offset, tags, document_id, state, type ...)."""
        query = urllib.parse.urlencode(params, doseq=True)
        body = self.call("GET", bank_path(bank_id, f"{routes.MEMORY_LIST}?{query}"), bearer=bearer, missing_ok=True)
        return list(_field(body, "items") or ())

    def memory(self, bank_id: str, memory_id: str, *, bearer: str | None = None) -> dict[str, Any] | None:
        """``GET .../memories/{id}``, or ``None`` when there is no such memory."""
        body = self.call("GET", item_path(bank_id, routes.MEMORIES, memory_id), bearer=bearer, missing_ok=True)
        return body if isinstance(body, dict) else None

    def invalidate_memory(
        self, bank_id: str, memory_id: str, reason: str, *, bearer: str | None = None, missing_ok: bool = False
    ) -> bool:
        """``PATCH .../memories/{id}`` to ``state=invalidated`` (out of recall, kept in the curation archive);
        ``False`` when it was not there (``missing_ok``)."""
        body = {"state": "invalidated", "reason": reason}
        path = item_path(bank_id, routes.MEMORIES, memory_id)
        return self.call("PATCH", path, body, bearer=bearer, missing_ok=missing_ok) is not None

    def document(self, bank_id: str, document_id: str, *, bearer: str | None = None) -> dict[str, Any] | None:
        """``GET .../documents/{id}`` with its ``original_text``, or ``None``."""
        path = item_path(bank_id, routes.DOCUMENTS, document_id)
        body = self.call("GET", path, bearer=bearer, missing_ok=True, absent=frozenset({404}))
        return body if isinstance(body, dict) else None

    def delete_document(self, bank_id: str, document_id: str, *, bearer: str | None = None) -> int | None:
        """``DELETE .../documents/{id}`` (its chunks, facts and the observations built on them go too): the number
        of facts deleted, or ``None`` when it was already gone."""
        path = item_path(bank_id, routes.DOCUMENTS, document_id)
        body = self.call("DELETE", path, bearer=bearer, missing_ok=True)
        if body is None:
            return None
        count = _field(body, "memory_units_deleted")
        return count if isinstance(count, int) else 0

    def create_bank(self, bank_id: str, settings: Mapping[str, Any], *, bearer: str | None = None) -> None:
        """``PUT .../banks/{id}``: create the bank with ``settings`` (e.g. ``retain_mission``), or update them."""
        self.call("PUT", bank_path(bank_id), dict(settings), bearer=bearer)

    def delete_bank(self, bank_id: str, *, bearer: str | None = None) -> dict[str, Any]:
        """``DELETE .../banks/{id}``: the bank and everything in it; deleting a missing bank is a no-op."""
        body = self.call("DELETE", bank_path(bank_id), bearer=bearer)
        return body if isinstance(body, dict) else {}

    # ------------------------------------------------------------------ operations and transfer archives

    def bank_config_overrides(self, bank_id: str, *, bearer: str | None = None) -> Mapping[str, Any] | None:
        """The bank's own settings (``overrides`` of ``GET .../config``); ``None`` when there is no such bank yet."""
        body = self.call(
            "GET", bank_path(bank_id, routes.CONFIG), bearer=bearer, missing_ok=True, absent=frozenset({404})
        )
        if body is None:
            return None
        found = body.get("overrides") if isinstance(body, Mapping) else None
        return found if isinstance(found, Mapping) else {}

    def update_bank_config(self, bank_id: str, updates: Mapping[str, Any], *, bearer: str | None = None) -> None:
        """Set ``updates`` on the bank's settings (creates the bank when it does not exist)."""
        self.call("PATCH", bank_path(bank_id, routes.CONFIG), {"updates": dict(updates)}, bearer=bearer)

    def reset_bank_config(self, bank_id: str, *, bearer: str | None = None) -> None:
        """``DELETE .../config``: drop the bank's own settings (back to the server's defaults)."""
        self.call("DELETE", bank_path(bank_id, routes.CONFIG), bearer=bearer)

    def operations(self, bank_id: str, *, limit: int, bearer: str | None = None) -> list[dict[str, Any]]:
        """The bank's latest operations (``status``: pending, processing, completed, ...); none for an unknown bank."""
        path = bank_path(bank_id, routes.OPERATIONS + "?" + urllib.parse.urlencode({"limit": limit}))
        operations = _field(self.call("GET", path, bearer=bearer, missing_ok=True), "operations")
        return [op for op in operations or () if isinstance(op, dict)]

    def operation_count(self, bank_id: str, status: str, *, bearer: str | None = None) -> int:
        """How many of the bank's operations have ``status`` (0 for an unknown bank)."""
        path = bank_path(bank_id, routes.OPERATIONS + "?" + urllib.parse.urlencode({"status": status, "limit": 1}))
        total = _field(self.call("GET", path, bearer=bearer, missing_ok=True), "total")
        return total if isinstance(total, int) else 0

    def operation(self, bank_id: str, operation_id: str, *, bearer: str | None = None) -> dict[str, Any]:
        """``GET .../operations/{id}``: its ``status`` (pending, processing, completed, failed, cancelled) and
        ``result_metadata``."""
        body = self.call("GET", _operation_path(bank_id, operation_id), bearer=bearer)
        return body if isinstance(body, dict) else {}

    def delete_operation(self, bank_id: str, operation_id: str, *, bearer: str | None = None) -> None:
        """``DELETE .../operations/{id}/delete``: drop a finished operation and what it kept (an export's archive);
        a no-op when it is already gone."""
        path = _operation_path(bank_id, operation_id) + routes.DELETE
        self.call("DELETE", path, bearer=bearer, missing_ok=True, absent=frozenset({404}))

    def submit_export(self, bank_id: str, *, bearer: str | None = None) -> str | None:
        """``POST .../transfer/export``: the id of the operation building the bank's transfer archive (ZIP), or
        ``None`` when the bank does not exist."""
        path = bank_path(bank_id, routes.EXPORT)
        body = self.call("POST", path, bearer=bearer, missing_ok=True, absent=frozenset({404}))
        return None if body is None else str(body["operation_id"])

    def download(self, storage_key: str, *, bearer: str | None = None, timeout: float | None = None) -> bytes:
        """``GET /v1/default/files/download/{key}``: a file Hindsight stored (a transfer archive), as its bytes."""
        path = routes.DOWNLOAD + urllib.parse.quote(storage_key, safe="/")
        response = self.transport.send(
            HttpRequest(
                "GET",
                path,
                bearer=bearer or self._bearer,
                timeout=self._timeout if timeout is None else timeout,
                headers=self.headers,
            )
        )
        return checked(response).content

    # ------------------------------------------------------------------ the operator's reads

    def bank_ids(self, *, bearer: str | None = None) -> list[str]:
        """Every bank id the caller may see (the operator's list is every bank)."""
        return [b["bank_id"] for b in self.pages(routes.BANKS, key="banks", bearer=bearer) if isinstance(b, dict)]

    def bank_stats(self, bank_id: str, *, bearer: str | None = None) -> dict[str, Any] | None:
        """``GET .../stats`` (documents, facts by type, observations), or ``None`` when the bank does not exist."""
        body = self.call(
            "GET", bank_path(bank_id, routes.STATS), bearer=bearer, missing_ok=True, absent=frozenset({404})
        )
        return body if isinstance(body, dict) else None

    def documents(
        self, bank_id: str, filters: Mapping[str, Any] | None = None, *, bearer: str | None = None
    ) -> Iterator[dict[str, Any]]:
        """Every document summary of ``GET .../documents`` (``filters``: its query parameters), paged to its end."""
        yield from self.pages(bank_path(bank_id, routes.DOCUMENTS), filters, bearer=bearer)

    def memories(
        self, bank_id: str, filters: Mapping[str, Any] | None = None, *, bearer: str | None = None
    ) -> Iterator[dict[str, Any]]:
        """Every memory unit of ``GET .../memories/list`` (``filters``: type, state, tags ...), paged to its end."""
        yield from self.pages(bank_path(bank_id, routes.MEMORY_LIST), filters, bearer=bearer)

    def entities(self, bank_id: str, *, bearer: str | None = None) -> Iterator[dict[str, Any]]:
        """Every entity of ``GET .../entities``."""
        yield from self.pages(bank_path(bank_id, routes.ENTITIES), bearer=bearer)

    def mental_models(self, bank_id: str, *, bearer: str | None = None) -> Iterator[dict[str, Any]]:
        """Every mental model of ``GET .../mental-models``."""
        yield from self.pages(bank_path(bank_id, routes.MENTAL_MODELS), bearer=bearer)


def _operation_path(bank_id: str, operation_id: str) -> str:
    return item_path(bank_id, routes.OPERATIONS, operation_id)


def post_retain(transport: Transport, record: RetainRecord, *, bearer: str | None, timeout: float) -> None:
    """Send a spooled or queued ``record`` once, as a server-side async retain carrying its ``operation_id``.

    Shared by the adapter's delivery threads, the queue's replay function and the operator's redrive command.
    Raises :class:`HindsightUnavailableError` (retry later) or :class:`HindsightRequestError` (refused for good).
    """
    api = HindsightApi(transport, timeout=timeout)
    api.retain(record.bank_id, [record.item], operation_id=record.operation_id, bearer=bearer)
