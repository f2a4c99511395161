"""Digests that make a record tamper-evident and a preview confirmable: SHA-256 over canonical JSON."""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["canonical_digest", "seal"]


def canonical_digest(value: Any) -> str:
    """``sha256:<hex>`` of ``value`` as sorted, compact JSON (the same value always gives the same digest)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def seal(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` plus ``digest``: the digest of everything else in it (recompute without ``digest`` to check)."""
    body = {k: v for k, v in record.items() if k != "digest"}
    return {**body, "digest": canonical_digest(body)}
