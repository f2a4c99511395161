"""One structured JSON log line per administrative action, naming the caller's principal.

The principal comes from the transport, never from the request: the AWS principal AWS verified for the function URL
(IAM auth), the schedule that triggered a scheduled run, or ``local:<os user>`` for ``--local``. Lines go to the
``memory_adapter.admin`` logger (CloudWatch Logs in the functions) and carry no memory content.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

__all__ = ["audit"]

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
