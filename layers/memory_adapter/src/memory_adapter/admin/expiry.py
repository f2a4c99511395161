"""Expiry by kind: delete the retained items whose kind's retention has passed, in bounded batches.

The unit is the document (one retained turn or remembered item): its kind is its ``kind:`` tag or metadata
(:func:`memory_adapter.kinds.kind_of`), its age is the server's ``created_at`` (when Hindsight stored it, not a time
the caller claimed), and deleting it removes every fact extracted from it (Hindsight sweeps the observations built
on them). Each bank is listed once, only as far back as the shortest retention reaches. At most ``batch_size``
documents go per run; ``more_due`` tells the scheduler there is more. ``now`` is a parameter: tests move the clock.
A bank Hindsight fails to list or delete from is skipped and listed under ``failed`` (the next run tries it again),
so it holds up no other bank's expiry; a run that failed for every bank it scanned raises
:class:`~memory_adapter.admin.errors.BatchFailedError`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memory_adapter.admin.audit import bank_failed
from memory_adapter.admin.errors import BatchFailedError, InvalidRequestError
from memory_adapter.exceptions import HindsightAgentCoreError
from memory_adapter.identity.bank_ids import parse_bank_id
from memory_adapter.kinds import MemoryKind, RetentionRules, kind_of

if TYPE_CHECKING:
    from memory_adapter.admin.client import OperatorClient

__all__ = ["ExpiryReport", "expire"]


@dataclass(slots=True)
class ExpiryReport:
    """What one expiry run found due and (unless a dry run) deleted."""

    now: str
    dry_run: bool
    rules: dict[str, int | None]
    banks_scanned: int = 0
    due: Counter[str] = field(default_factory=Counter)
    expired: Counter[str] = field(default_factory=Counter)
    facts_deleted: int = 0
    more_due: bool = False
    documents: list[dict[str, str]] = field(default_factory=list)
    failed: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "now": self.now,
            "dry_run": self.dry_run,
            "rules": self.rules,
            "banks_scanned": self.banks_scanned,
            "due": dict(self.due),
            "expired": dict(self.expired),
            "facts_deleted": self.facts_deleted,
            "more_due": self.more_due,
            "documents": self.documents,
            "failed": self.failed,
        }


def _parse_time(raw: Any) -> datetime | None:
    if not isinstance(raw, str):
        return None
    try:
        value = datetime.fromisoformat(raw)
    except ValueError:
        return None
    return value if value.tzinfo is not None else None


def expire(
    client: OperatorClient,
    rules: RetentionRules,
    *,
    now: datetime,
    dry_run: bool = False,
    batch_size: int = 500,
    bank_ids: list[str] | None = None,
) -> ExpiryReport:
    """Delete (or, with ``dry_run``, only list) up to ``batch_size`` documents past their kind's retention, in
    every bank (or only ``bank_ids``)."""
    if now.tzinfo is None:
        raise InvalidRequestError("expiry needs an aware 'now' (with a time zone)")
    if batch_size < 1:
        raise InvalidRequestError("batch_size must be at least 1")
    report = ExpiryReport(now=now.isoformat(), dry_run=dry_run, rules={k.value: rules.days_for(k) for k in MemoryKind})
    cutoffs = {k: rules.cutoff(k, now) for k in MemoryKind}
    latest = max((c for c in cutoffs.values() if c is not None), default=None)
    if latest is None:
        return report  # every kind is kept
    for bank_id in bank_ids if bank_ids is not None else client.bank_ids():
        if parse_bank_id(bank_id) is None:
            continue  # not a user's bank: never expired by this job
        report.banks_scanned += 1
        try:
            _expire_bank(client, bank_id, report, cutoffs, latest, dry_run=dry_run, batch_size=batch_size)
        except HindsightAgentCoreError as exc:  # the next run tries it again; the other banks go on
            report.failed.append(bank_failed("expiry.bank_failed", bank_id, exc))
        if report.more_due:
            break
    if report.failed and len(report.failed) == report.banks_scanned:
        raise BatchFailedError(
            f"expiry failed for every bank it scanned ({len(report.failed)}, the first with "
            f"{report.failed[0]['error']})",
            report.as_dict(),
        )
    return report


def _expire_bank(
    client: OperatorClient,
    bank_id: str,
    report: ExpiryReport,
    cutoffs: dict[MemoryKind, datetime | None],
    latest: datetime,
    *,
    dry_run: bool,
    batch_size: int,
) -> None:
    """Count (and unless ``dry_run`` delete) ``bank_id``'s due documents into ``report``, up to the batch."""
    due: list[tuple[str, MemoryKind]] = []
    for doc in client.documents(bank_id, time_field="created_at", end_date=latest.isoformat()):
        kind = kind_of(doc.get("tags"), doc.get("document_metadata"))
        cutoff, created = cutoffs[kind], _parse_time(doc.get("created_at"))
        if cutoff is not None and created is not None and created < cutoff:
            due.append((str(doc["id"]), kind))
    for document_id, kind in due:
        report.due[kind.value] += 1
        if len(report.documents) >= batch_size:
            report.more_due = True
            continue
        report.documents.append({"bank_id": bank_id, "document_id": document_id, "kind": kind.value})
        if not dry_run:
            deleted = client.delete_document(bank_id, document_id)
            if deleted is not None:
                report.expired[kind.value] += 1
                report.facts_deleted += deleted
