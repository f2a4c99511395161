"""Denial logging: every refusal is logged once, with its reason, under the ``hindsight_isolation`` logger.

Callers only ever see a bare 401/403; the reason lives here, for operators (and log-based alarms).
"""

from __future__ import annotations

import logging

from hindsight_isolation.principal import Principal

__all__ = ["log_denied", "log_unauthenticated", "logger"]

logger = logging.getLogger("hindsight_isolation")


def log_unauthenticated(reason: str, *, transport: str) -> None:
    """Log a refused credential (401)."""
    logger.warning("hindsight_isolation denied status=401 transport=%s reason=%r", transport, reason)


def log_denied(
    principal: Principal | None, *, operation: str, bank_id: str, reason: str, internal: bool, status: int = 403
) -> None:
    """Log a refused operation (403, or 404 where a refusal must read as "not found")."""
    logger.warning(
        "hindsight_isolation denied status=%d operation=%s bank_id=%r principal=%s internal=%s reason=%r",
        status,
        operation,
        bank_id,
        principal.describe() if principal else "none",
        internal,
        reason,
    )
