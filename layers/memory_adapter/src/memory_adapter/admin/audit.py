"""One structured JSON log line per administrative action, naming the caller's principal.

The principal comes from the transport, never from the request: the AWS principal AWS verified for the function URL
(IAM auth), the schedule that triggered a scheduled run, or ``local:<os user>`` for ``--local``. Lines go to the
``memory_adapter.admin`` logger (CloudWatch Logs in the functions) and carry no memory content; so does the line of
each bank a job over many banks skipped (:func:`bank_failed`).
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from memory_adapter.exceptions import HindsightRequestError, HindsightUnavailableError
from memory_adapter.observability import short_hash

__all__ = ["audit", "bank_failed"]

logger = logging.getLogger("memory_adapter.admin")


def audit(action: str, *, principal: str, outcome: str, **fields: Any) -> dict[str, Any]:
    """Log (at INFO, or WARNING for a refusal or failure) and return the audit record of one action."""
    record = {
        "audit": "memory-admin",
        "action": action,
        "principal": principal,
        "outcome": outcome,
        "at": datetime.now(UTC).isoformat(),
        **fields,
    }
    level = logging.INFO if outcome in ("ok", "preview", "dry_run") else logging.WARNING
    logger.log(level, json.dumps(record, sort_keys=True, default=str))
    return record


def bank_failed(event: str, bank_id: str, exc: Exception, *, attempts: int = 1) -> dict[str, Any]:
    """Log (WARNING) that a job over many banks skipped ``bank_id``, and return the entry its result lists under
    ``failed``. The line names the bank by its short hash and the error by class and status (no raw id, no memory
    text); the entry, which goes to the operator, has the id and the error's message."""
    status = exc.status if isinstance(exc, HindsightRequestError | HindsightUnavailableError) else None
    line = {"event": event, "bank": short_hash(bank_id), "error": type(exc).__name__, "status": status}
    logger.warning(json.dumps(line | {"attempts": attempts}, sort_keys=True))
    return {"bank_id": bank_id, "error": f"{type(exc).__name__}: {exc}", "status": status, "attempts": attempts}
