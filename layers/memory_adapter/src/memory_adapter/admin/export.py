"""Export what the memory holds about a user (or a whole tenant) as JSON Lines, for access requests and audits.

One line per record, in this order: ``export`` (who, when, by whom), then per bank ``bank``, its ``document``s (the
retained text, tags, metadata, kind), ``fact``s, ``observation``s, ``mental_model``s and ``entity``s, and a
closing ``summary`` with the counts. Only banks of the subject (:mod:`memory_adapter.admin.inventory`) are read.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memory_adapter.admin.inventory import Subject, subject_banks
from memory_adapter.identity.bank_ids import parse_bank_id
from memory_adapter.kinds import kind_of

if TYPE_CHECKING:
    from memory_adapter.admin.client import OperatorClient
    from memory_adapter.admin.store import ArtifactStore

__all__ = ["ExportResult", "export_records", "export_subject"]

_MEMORY_FIELDS = (
    "id",
    "text",
    "context",
    "fact_type",
    "document_id",
    "mentioned_at",
    "occurred_start",
    "occurred_end",
    "updated_at",
    "state",
    "tags",
    "metadata",
    "entities",
    "source_memory_ids",
)


@dataclass(frozen=True, slots=True)
class ExportResult:
    """Where the export went and how many records of each type it holds."""

    location: str
    key: str
    banks: list[str]
    counts: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"location": self.location, "key": self.key, "banks": self.banks, "counts": self.counts}


def export_records(client: OperatorClient, bank_ids: list[str]) -> list[dict[str, Any]]:
    """Every record of ``bank_ids`` (without the ``export`` header and ``summary``)."""
    records: list[dict[str, Any]] = []
    for bank_id in bank_ids:
        owner = parse_bank_id(bank_id)
        assert owner is not None  # subject_banks only returns parsed ids
        records.append(
            {"type": "bank", "bank_id": bank_id, "tenant": owner.tenant, "user": owner.user, "agent": owner.agent}
        )
        for summary in client.documents(bank_id):
            doc = client.document(bank_id, str(summary["id"])) or summary
            records.append(
                {
                    "type": "document",
                    "bank_id": bank_id,
                    "id": doc.get("id"),
                    "text": doc.get("original_text"),
                    "created_at": doc.get("created_at"),
                    "updated_at": doc.get("updated_at"),
                    "tags": doc.get("tags") or [],
                    "metadata": doc.get("document_metadata") or {},
                    "kind": kind_of(doc.get("tags"), doc.get("document_metadata")).value,
                }
            )
        for memory in client.memories(bank_id):
            kind = "observation" if memory.get("fact_type") == "observation" else "fact"
            records.append({"type": kind, "bank_id": bank_id, **{k: memory.get(k) for k in _MEMORY_FIELDS}})
        for model in client.mental_models(bank_id):
            records.append({"type": "mental_model", "bank_id": bank_id, **model})
        for entity in client.entities(bank_id):
            records.append({"type": "entity", "bank_id": bank_id, **entity})
    return records


def export_subject(
    client: OperatorClient,
    subject: Subject,
    store: ArtifactStore,
    *,
    principal: str,
    now: datetime,
) -> ExportResult:
    """Write ``exports/<tenant>/<user>/<time>.jsonl`` with everything the subject's banks hold."""
    banks = subject_banks(client, subject)
    records = export_records(client, banks)
    counts = dict(Counter(r["type"] for r in records))
    header = {
        "type": "export",
        "version": 1,
        "subject": subject.describe(),
        "exported_at": now.isoformat(),
        "requested_by": principal,
        "banks": banks,
    }
    lines = [header, *records, {"type": "summary", "counts": counts}]
    body = "".join(json.dumps(line, ensure_ascii=False, sort_keys=True, default=str) + "\n" for line in lines)
    key = f"exports/{subject.key}/{now.strftime('%Y%m%dT%H%M%S.%fZ')}.jsonl"
    location = store.put(key, body.encode("utf-8"), content_type="application/x-ndjson")
    return ExportResult(location=location, key=key, banks=banks, counts=counts)
