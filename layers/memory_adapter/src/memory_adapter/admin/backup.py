"""Logical backups: every bank's Hindsight transfer archive, plus a manifest, written to the artifact store.

A transfer archive (Hindsight 1.1.0, ``POST .../transfer/export``) carries a bank's documents, facts, observations,
mental models, directives and config, and no embeddings: a restore re-embeds with whatever model the restoring
server runs, so the same backup also serves a change of embedding model. ``backups/<time>/manifest.json`` lists
each archive with its SHA-256 and the counts it held, which the restore checks
(:mod:`memory_adapter.admin.maintenance`).

Each bank is backed up on its own: one that cannot be exported (Hindsight 1.1.0 answers 500 to the download of a
bank whose id is not Latin-1) is tried again only for a transient failure (:func:`retryable`), then skipped and
listed under the manifest's ``failed`` (``outcome: partial``), so the other banks are still backed up. A run that
archived none of the banks it tried raises :class:`~memory_adapter.admin.errors.BatchFailedError`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
import urllib.parse
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, TypeVar

from memory_adapter.admin.audit import bank_failed
from memory_adapter.admin.errors import BatchFailedError
from memory_adapter.admin.inventory import bank_summary
from memory_adapter.exceptions import HindsightUnavailableError

if TYPE_CHECKING:
    from memory_adapter.admin.client import OperatorClient
    from memory_adapter.admin.store import ArtifactStore

__all__ = ["ATTEMPTS", "MANIFEST", "archive_key", "backup_banks", "per_bank", "retryable"]

T = TypeVar("T")

MANIFEST = "manifest.json"
#: Tries per bank before it is skipped (only a :func:`retryable` failure is tried again).
ATTEMPTS: Final = 3
#: Seconds before the second try of a bank; doubled before each further one.
FIRST_DELAY_S: Final = 2.0
#: Answers worth another try: the load balancer or a task briefly unable to answer. Not 500 (Hindsight's own fault,
#: e.g. its download of a non-Latin-1 bank id, fails the same way every time) and no other 4xx.
_RETRIED_STATUSES: Final = frozenset({408, 429, 502, 503, 504})


def archive_key(prefix: str, bank_id: str) -> str:
    """The key of ``bank_id``'s archive under ``prefix`` (the bank id percent-encoded: injective and S3-safe)."""
    return f"{prefix}/banks/{urllib.parse.quote(bank_id, safe='@._-')}.zip"


def retryable(exc: BaseException) -> bool:
    """Whether a bank's export may succeed if tried again: no answer came (connection refused or reset, timeout),
    or Hindsight's load balancer answered 408/429/502/503/504."""
    return isinstance(exc, HindsightUnavailableError) and (exc.status is None or exc.status in _RETRIED_STATUSES)


def _archive(client: OperatorClient, store: ArtifactStore, prefix: str, bank_id: str) -> dict[str, Any] | None:
    """Archive one bank: the manifest's entry, or ``None`` when it was deleted meanwhile."""
    summary = bank_summary(client, bank_id)
    archive = client.export_archive(bank_id)
    if archive is None:
        return None
    key = archive_key(prefix, bank_id)
    store.put(key, archive, content_type="application/zip")
    return {
        "bank_id": bank_id,
        "key": key,
        "sha256": hashlib.sha256(archive).hexdigest(),
        "bytes": len(archive),
        "counts": summary.as_dict() if summary else None,
    }


def per_bank(
    event: str, bank_id: str, work: Callable[[], T], sleep: Callable[[float], None]
) -> tuple[T | None, dict[str, Any] | None]:
    """``(work(), None)`` once ``work`` (one bank's part of a job over many) succeeds, ``(None, failure)`` once the
    bank is given up on: tried again only for a :func:`retryable` failure, at most :data:`ATTEMPTS` times, then
    logged as ``event`` (:func:`~memory_adapter.admin.audit.bank_failed`)."""
    delay = FIRST_DELAY_S
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return work(), None
        except Exception as exc:  # whatever one bank meets must not cost the others their turn
            if attempt == ATTEMPTS or not retryable(exc):
                return None, bank_failed(event, bank_id, exc, attempts=attempt)
        sleep(delay)
        delay *= 2
    raise AssertionError("unreachable")  # pragma: no cover


def backup_banks(
    client: OperatorClient,
    store: ArtifactStore,
    *,
    now: datetime,
    principal: str,
    bank_ids: list[str] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    progress: Callable[[str], None] = lambda _line: None,
) -> dict[str, Any]:
    """Archive ``bank_ids`` (default: every bank) under ``backups/<time>/``; return the manifest (written even when
    it raises :class:`BatchFailedError` because no bank could be archived). ``progress`` gets one line per bank
    (``[n/N] <bank>: <bytes> bytes``, or why it was skipped)."""
    prefix = f"backups/{now.strftime('%Y%m%dT%H%M%SZ')}"
    entries: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    ids = sorted(bank_ids if bank_ids is not None else client.bank_ids())
    for index, bank_id in enumerate(ids, start=1):
        entry, failure = per_bank(
            "backup.bank_failed", bank_id, functools.partial(_archive, client, store, prefix, bank_id), sleep
        )
        entries.extend([entry] if entry else [])
        failed.extend([failure] if failure else [])
        if entry:
            progress(f"[{index}/{len(ids)}] {bank_id}: {entry['bytes']} bytes")
        elif failure:
            progress(f"[{index}/{len(ids)}] {bank_id}: failed ({failure['error']}), skipped")
        else:
            progress(f"[{index}/{len(ids)}] {bank_id}: deleted meanwhile, skipped")
    outcome = "failed" if failed and not entries else ("partial" if failed else "complete")
    manifest = {
        "type": "backup",
        "version": 1,
        "created_at": now.isoformat(),
        "requested_by": principal,
        "prefix": prefix,
        "outcome": outcome,
        "banks": entries,
        "failed": failed,
    }
    manifest["location"] = store.put(
        f"{prefix}/{MANIFEST}", json.dumps(manifest, indent=2, sort_keys=True).encode(), content_type="application/json"
    )
    if outcome == "failed":
        raise BatchFailedError(
            f"no bank could be backed up ({len(failed)} failed, the first with {failed[0]['error']}): the manifest "
            f"lists each ({manifest['location']})",
            manifest,
        )
    return manifest
