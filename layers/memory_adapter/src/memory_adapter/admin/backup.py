"""Logical backups: every bank's Hindsight transfer archive, plus a manifest, written to the artifact store.

A transfer archive (Hindsight 1.1.0, ``POST .../transfer/export``) carries a bank's documents, facts, observations,
mental models, directives and config, and no embeddings: a restore re-embeds with whatever model the restoring
server runs, so the same backup also serves a change of embedding model. ``backups/<time>/manifest.json`` lists
each archive with its SHA-256 and the counts it held, which the restore checks
(:mod:`memory_adapter.admin.maintenance`).
"""

from __future__ import annotations

import hashlib
import json
import urllib.parse
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memory_adapter.admin.inventory import bank_summary

if TYPE_CHECKING:
    from memory_adapter.admin.client import OperatorClient
    from memory_adapter.admin.store import ArtifactStore

__all__ = ["MANIFEST", "archive_key", "backup_banks"]

MANIFEST = "manifest.json"


def archive_key(prefix: str, bank_id: str) -> str:
    """The key of ``bank_id``'s archive under ``prefix`` (the bank id percent-encoded: injective and S3-safe)."""
    return f"{prefix}/banks/{urllib.parse.quote(bank_id, safe='@._-')}.zip"


def backup_banks(
    client: OperatorClient,
    store: ArtifactStore,
    *,
    now: datetime,
    principal: str,
    bank_ids: list[str] | None = None,
    progress: Callable[[str], None] = lambda _line: None,
) -> dict[str, Any]:
    """Archive ``bank_ids`` (default: every bank) under ``backups/<time>/``; return the manifest. ``progress`` gets
    one line per bank (``[n/N] <bank>: <bytes> bytes``)."""
    prefix = f"backups/{now.strftime('%Y%m%dT%H%M%SZ')}"
    entries: list[dict[str, Any]] = []
    ids = sorted(bank_ids if bank_ids is not None else client.bank_ids())
    for index, bank_id in enumerate(ids, start=1):
        summary = bank_summary(client, bank_id)
        archive = client.export_archive(bank_id)
        if archive is None:
            progress(f"[{index}/{len(ids)}] {bank_id}: deleted meanwhile, skipped")
            continue
        progress(f"[{index}/{len(ids)}] {bank_id}: {len(archive)} bytes")
        key = archive_key(prefix, bank_id)
        store.put(key, archive, content_type="application/zip")
        entries.append(
            {
                "bank_id": bank_id,
                "key": key,
                "sha256": hashlib.sha256(archive).hexdigest(),
                "bytes": len(archive),
                "counts": summary.as_dict() if summary else None,
            }
        )
    manifest = {
        "type": "backup",
        "version": 1,
        "created_at": now.isoformat(),
        "requested_by": principal,
        "prefix": prefix,
        "banks": entries,
    }
    manifest["location"] = store.put(
        f"{prefix}/{MANIFEST}", json.dumps(manifest, indent=2, sort_keys=True).encode(), content_type="application/json"
    )
    return manifest
