"""``OperatorClient``: the operator's calls to Hindsight 1.1.0 over HTTP, with the operator key.

Standard library only (:class:`memory_adapter.transport.HttpTransport`), so a Lambda function pays no import of
``hindsight_client``; every route, body and download is :mod:`memory_adapter._hindsight_api`'s, over the one transport
(so ``HINDSIGHT_CA_BUNDLE`` applies to exports as to everything else). Every listing is paged to its end; a 404 for a
bank means "no such bank" and reads as empty (or ``None``), any other failure raises
:class:`~memory_adapter.exceptions.HindsightRequestError` or
:class:`~memory_adapter.exceptions.HindsightUnavailableError`.
"""

from __future__ import annotations

import contextlib
import copy
import time
from collections.abc import Iterator
from typing import Any, Final

from memory_adapter._hindsight_api import HindsightApi
from memory_adapter.admin.errors import ExportTimeoutError
from memory_adapter.constants import DEFAULT_RECALL_BUDGET, MEMORY_ACTOR_HEADER
from memory_adapter.exceptions import HindsightAgentCoreError, HindsightRequestError
from memory_adapter.formatting import RecalledMemory
from memory_adapter.transport import HttpTransport, Transport

__all__ = ["OperatorClient"]

_MAX_ACTOR: Final = 256


class OperatorClient:
    """Administers every bank with the operator key (never give this key to an agent).

    Args:
        url: Hindsight's base URL.
        operator_key: The operator credential (``HINDSIGHT_API_TENANT_OPERATOR_KEY`` of the server).
        timeout: Seconds per request.
        transport: A custom transport (tests).
        recall_budget: Hindsight's search depth for :meth:`recall` (the deployment's configured budget).

    :meth:`acting_as` gives a client that names who acts (``x-memory-actor``), so the memory events the server
    emits for its changes say which operator principal or schedule caused them.
    """

    def __init__(
        self,
        url: str,
        operator_key: str,
        *,
        timeout: float = 30.0,
        transport: Transport | None = None,
        recall_budget: str = DEFAULT_RECALL_BUDGET,
    ) -> None:
        self.url = url.rstrip("/")
        self._recall_budget = recall_budget
        self._api = HindsightApi(transport or HttpTransport(self.url), timeout=timeout, bearer=operator_key)

    def acting_as(self, actor: str) -> OperatorClient:
        """This client (same connections) sending ``actor`` (an operator's principal, ``schedule:<rule>``) with
        every request; printable ASCII, at most 256 characters (what a header and the server's events carry)."""
        shown = "".join(c if " " <= c <= "~" else "?" for c in actor)[:_MAX_ACTOR]
        acting = copy.copy(self)
        acting._api = copy.copy(self._api)
        acting._api.headers = {MEMORY_ACTOR_HEADER: shown} if shown.strip() else {}
        return acting

    # ------------------------------------------------------------------ banks

    def bank_ids(self) -> list[str]:
        """Every bank id on the server (the operator's list is unfiltered)."""
        return self._api.bank_ids()

    def bank_stats(self, bank_id: str) -> dict[str, Any] | None:
        """``GET .../stats`` (documents, facts by type, observations), or ``None`` when the bank does not exist."""
        return self._api.bank_stats(bank_id)

    def delete_bank(self, bank_id: str) -> dict[str, Any]:
        """Delete the bank and everything in it (documents, chunks, facts, observations, entities, mental models,
        directives, operations, files); deleting a missing bank is a no-op."""
        return self._api.delete_bank(bank_id)

    # ------------------------------------------------------------------ contents

    def documents(self, bank_id: str, **filters: Any) -> Iterator[dict[str, Any]]:
        """Document summaries (id, created_at, tags, document_metadata, memory_unit_count), newest first."""
        yield from self._api.documents(bank_id, filters)

    def document(self, bank_id: str, document_id: str) -> dict[str, Any] | None:
        """One document with its ``original_text``, or ``None``."""
        return self._api.document(bank_id, document_id)

    def delete_document(self, bank_id: str, document_id: str) -> int | None:
        """Delete a document and the facts extracted from it (Hindsight sweeps the observations built on them);
        the number of facts deleted, or ``None`` when it was already gone."""
        return self._api.delete_document(bank_id, document_id)

    def memories(self, bank_id: str, **filters: Any) -> Iterator[dict[str, Any]]:
        """Memory units (facts and observations; ``type=`` narrows), every state unless ``state=`` says otherwise."""
        yield from self._api.memories(bank_id, filters)

    def memory(self, bank_id: str, memory_id: str) -> dict[str, Any] | None:
        """One memory unit, or ``None``."""
        return self._api.memory(bank_id, memory_id)

    def invalidate_memory(self, bank_id: str, memory_id: str, reason: str) -> None:
        """Invalidate a memory that has no document (kept in Hindsight's curation archive, out of recall)."""
        self._api.invalidate_memory(bank_id, memory_id, reason)

    def entities(self, bank_id: str) -> Iterator[dict[str, Any]]:
        """Entities the bank's facts mention."""
        yield from self._api.entities(bank_id)

    def mental_models(self, bank_id: str) -> Iterator[dict[str, Any]]:
        """Mental models of the bank."""
        yield from self._api.mental_models(bank_id)

    def recall(self, bank_id: str, query: str, *, max_tokens: int = 4096) -> list[RecalledMemory]:
        """What a recall of ``query`` returns (empty when the bank does not exist)."""
        return self._api.recall(bank_id, query, budget=self._recall_budget, max_tokens=max_tokens)

    # ------------------------------------------------------------------ transfer archives

    def export_archive(self, bank_id: str, *, wait_s: float = 300.0) -> bytes | None:
        """The bank's Hindsight transfer archive (ZIP: documents, facts, observations, mental models, directives;
        no embeddings), or ``None`` when the bank does not exist. The server-side copy is deleted afterwards (also
        when the download fails). Raises :class:`ExportTimeoutError` when the export runs longer than ``wait_s``."""
        operation_id = self._api.submit_export(bank_id)
        if operation_id is None:
            return None
        deadline = time.monotonic() + wait_s
        delay = 0.1
        while True:
            operation = self._api.operation(bank_id, operation_id)
            status = operation.get("status")
            if status == "completed":
                break
            if status in ("failed", "cancelled"):
                raise HindsightRequestError(500, f"the bank's export {status}: {operation.get('error_message')}")
            if time.monotonic() > deadline:
                raise ExportTimeoutError(f"the bank's export did not finish within {wait_s:g} s")
            time.sleep(delay)
            delay = min(delay * 2, 2.0)
        try:
            archive = self._api.download(str(operation["result_metadata"]["storage_key"]))
        except HindsightAgentCoreError:
            # drop the archive Hindsight kept anyway: a download that always fails must not leave one per run
            with contextlib.suppress(HindsightAgentCoreError):
                self._api.delete_operation(bank_id, operation_id)
            raise
        self._api.delete_operation(bank_id, operation_id)  # drops the archive Hindsight kept
        return archive
