"""``OperatorClient``: the operator's calls to Hindsight 1.1.0 over HTTP, with the operator key.

Standard library only (:class:`memory_adapter.transport.HttpTransport`), so a Lambda function pays no import of
``hindsight_client``. Every listing is paged to its end; a 404 for a bank means "no such bank" and reads as empty
(or ``None``), any other failure raises :class:`~memory_adapter.exceptions.HindsightRequestError` /
:class:`~memory_adapter.exceptions.HindsightUnavailableError`.
"""

from __future__ import annotations

import copy
import time
import urllib.parse
from collections.abc import Iterator, Mapping
from typing import Any, Final

from memory_adapter.constants import MEMORY_ACTOR_HEADER
from memory_adapter.exceptions import HindsightRequestError, HindsightUnavailableError
from memory_adapter.transport import HttpResponse, HttpTransport, Transport, bank_path

__all__ = ["OperatorClient"]

_PAGE: Final = 200
_DOWNLOAD_PREFIX: Final = "/v1/default/files/download/"
_MAX_ACTOR: Final = 256


class OperatorClient:
    """Administers every bank with the operator key (never give this key to an agent).

    Args:
        url: Hindsight's base URL.
        operator_key: The operator credential (``HINDSIGHT_API_TENANT_OPERATOR_KEY`` of the server).
        timeout: Seconds per request.
        transport: A custom transport (tests).

    :meth:`acting_as` gives a client that names who acts (``x-memory-actor``), so the memory events the server
    emits for its changes say which operator principal or schedule caused them.
    """

    def __init__(
        self, url: str, operator_key: str, *, timeout: float = 30.0, transport: Transport | None = None
    ) -> None:
        self.url = url.rstrip("/")
        self._key = operator_key
        self._timeout = timeout
        self._transport = transport or HttpTransport(self.url)
        self._headers: dict[str, str] = {}

    def acting_as(self, actor: str) -> OperatorClient:
        """This client (same connections) sending ``actor`` (an operator's principal, ``schedule:<rule>``) with
        every request; printable ASCII, at most 256 characters (what a header and the server's events carry)."""
        shown = "".join(c if " " <= c <= "~" else "?" for c in actor)[:_MAX_ACTOR]
        acting = copy.copy(self)
        acting._headers = {MEMORY_ACTOR_HEADER: shown} if shown.strip() else {}
        return acting

    # ------------------------------------------------------------------ plumbing

    def _request(self, method: str, path: str, body: Any | None = None) -> HttpResponse:
        if not self._headers:  # custom transports (tests) need not take headers
            return self._transport.request(method, path, body=body, bearer=self._key, timeout=self._timeout)
        return self._transport.request(
            method, path, body=body, bearer=self._key, timeout=self._timeout, headers=self._headers
        )

    def _json(self, method: str, path: str, body: Any | None = None, *, missing_ok: bool = False) -> Any:
        response = self._request(method, path, body)
        if missing_ok and response.status == 404:
            return None
        response.raise_for_status()
        return response.body

    def _pages(self, path: str, params: Mapping[str, Any] | None = None, *, key: str = "items") -> Iterator[Any]:
        """Every item of a ``limit``/``offset`` listing; nothing when the bank does not exist."""
        offset = 0
        while True:
            query = urllib.parse.urlencode({**(params or {}), "limit": _PAGE, "offset": offset}, doseq=True)
            body = self._json("GET", f"{path}?{query}", missing_ok=True)
            items = body.get(key) if isinstance(body, dict) else None
            if not items:
                return
            yield from items
            offset += len(items)
            total = body.get("total")
            if isinstance(total, int) and offset >= total:
                return

    # ------------------------------------------------------------------ banks

    def bank_ids(self) -> list[str]:
        """Every bank id on the server (the operator's list is unfiltered)."""
        return [b["bank_id"] for b in self._pages("/v1/default/banks", key="banks") if isinstance(b, dict)]

    def bank_stats(self, bank_id: str) -> dict[str, Any] | None:
        """``GET .../stats`` (documents, facts by type, observations), or ``None`` when the bank does not exist."""
        body = self._json("GET", bank_path(bank_id, "/stats"), missing_ok=True)
        return body if isinstance(body, dict) else None

    def delete_bank(self, bank_id: str) -> dict[str, Any]:
        """Delete the bank and everything in it (documents, chunks, facts, observations, entities, mental models,
        directives, operations, files); deleting a missing bank is a no-op."""
        body = self._json("DELETE", bank_path(bank_id, ""))
        return body if isinstance(body, dict) else {}

    # ------------------------------------------------------------------ contents

    def documents(self, bank_id: str, **filters: Any) -> Iterator[dict[str, Any]]:
        """Document summaries (id, created_at, tags, document_metadata, memory_unit_count), newest first."""
        yield from self._pages(bank_path(bank_id, "/documents"), filters)

    def document(self, bank_id: str, document_id: str) -> dict[str, Any] | None:
        """One document with its ``original_text``, or ``None``."""
        path = bank_path(bank_id, "/documents/" + urllib.parse.quote(document_id, safe=""))
        body = self._json("GET", path, missing_ok=True)
        return body if isinstance(body, dict) else None

    def delete_document(self, bank_id: str, document_id: str) -> int | None:
        """Delete a document and the facts extracted from it (Hindsight sweeps the observations built on them);
        the number of facts deleted, or ``None`` when it was already gone."""
        path = bank_path(bank_id, "/documents/" + urllib.parse.quote(document_id, safe=""))
        body = self._json("DELETE", path, missing_ok=True)
        if body is None:
            return None
        count = body.get("memory_units_deleted") if isinstance(body, dict) else None
        return count if isinstance(count, int) else 0

    def memories(self, bank_id: str, **filters: Any) -> Iterator[dict[str, Any]]:
        """Memory units (facts and observations; ``type=`` narrows), every state unless ``state=`` says otherwise."""
        yield from self._pages(bank_path(bank_id, "/memories/list"), filters)

    def memory(self, bank_id: str, memory_id: str) -> dict[str, Any] | None:
        """One memory unit, or ``None``."""
        path = bank_path(bank_id, "/memories/" + urllib.parse.quote(memory_id, safe=""))
        body = self._json("GET", path, missing_ok=True)
        return body if isinstance(body, dict) else None

    def invalidate_memory(self, bank_id: str, memory_id: str, reason: str) -> None:
        """Invalidate a memory that has no document (kept in Hindsight's curation archive, out of recall)."""
        path = bank_path(bank_id, "/memories/" + urllib.parse.quote(memory_id, safe=""))
        self._json("PATCH", path, {"state": "invalidated", "reason": reason})

    def entities(self, bank_id: str) -> Iterator[dict[str, Any]]:
        """Entities the bank's facts mention."""
        yield from self._pages(bank_path(bank_id, "/entities"))

    def mental_models(self, bank_id: str) -> Iterator[dict[str, Any]]:
        """Mental models of the bank."""
        yield from self._pages(bank_path(bank_id, "/mental-models"))

    def recall(self, bank_id: str, query: str, *, max_tokens: int = 4096) -> list[dict[str, Any]]:
        """What a recall of ``query`` returns (empty when the bank does not exist)."""
        body = {"query": query, "budget": "mid", "max_tokens": max_tokens, "trace": False}
        answer = self._json("POST", bank_path(bank_id, "/memories/recall"), body, missing_ok=True)
        results = answer.get("results") if isinstance(answer, dict) else None
        return [r for r in results or [] if isinstance(r, dict)]

    # ------------------------------------------------------------------ transfer archives

    def export_archive(self, bank_id: str, *, wait_s: float = 300.0) -> bytes | None:
        """The bank's Hindsight transfer archive (ZIP: documents, facts, observations, mental models, directives;
        no embeddings), or ``None`` when the bank does not exist. The server-side copy is deleted afterwards."""
        submitted = self._json("POST", bank_path(bank_id, "/transfer/export"), missing_ok=True)
        if submitted is None:
            return None
        operation_id = str(submitted["operation_id"])
        op_path = bank_path(bank_id, "/operations/" + urllib.parse.quote(operation_id, safe=""))
        deadline = time.monotonic() + wait_s
        delay = 0.1
        while True:
            operation = self._json("GET", op_path)
            status = operation.get("status")
            if status == "completed":
                break
            if status in ("failed", "cancelled"):
                raise HindsightRequestError(500, f"export of {bank_id} {status}: {operation.get('error_message')}")
            if time.monotonic() > deadline:
                raise HindsightUnavailableError(f"export of {bank_id} did not finish within {wait_s:g} s")
            time.sleep(delay)
            delay = min(delay * 2, 2.0)
        key = str(operation["result_metadata"]["storage_key"])
        response = self._request_bytes(_DOWNLOAD_PREFIX + urllib.parse.quote(key, safe="/"))
        self._json("DELETE", op_path + "/delete", missing_ok=True)  # drops the archive Hindsight kept
        return response

    def _request_bytes(self, path: str) -> bytes:
        """GET raw bytes (the transport parses JSON, so this one call uses ``urllib``)."""
        import urllib.request

        headers = {**self._headers, "Authorization": f"Bearer {self._key}"}
        request = urllib.request.Request(self.url + path, headers=headers)  # noqa: S310 (our own URL)
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as answer:  # noqa: S310
                data: bytes = answer.read()
                return data
        except urllib.error.HTTPError as exc:
            raise HindsightRequestError(exc.code, f"download failed: {exc.reason}") from exc
        except OSError as exc:
            raise HindsightUnavailableError(f"cannot reach Hindsight: {exc}") from exc
