"""The ``operations`` section: memory administration, its schedules and the administration bucket's lifecycle."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from infra.config.checks import CRON, bounded, log_retention, require


@dataclass(frozen=True)
class OperationsConfig:
    """Memory administration: the admin functions, their schedules and the administration bucket's lifecycle."""

    admin_function_path: Path
    expiry_schedule: str
    expiry_dry_run: bool
    expiry_batch_size: int
    backup_schedule: str
    logical_backup_retention_days: int
    export_retention_days: int
    audit_log_retention_days: int


#: EventBridge rate schedule expressions: ``rate(<n> <unit>)``.
_RATE = re.compile(r"^rate\((1 (minute|hour|day)|([2-9]|[1-9]\d+) (minutes|hours|days))\)$")


def operations_problems(o: OperationsConfig) -> list[str]:
    """The admin functions' schedules and the administration bucket's lifecycle."""
    errors: list[str] = []
    for name, expression in (("expiry_schedule", o.expiry_schedule), ("backup_schedule", o.backup_schedule)):
        require(
            errors,
            bool(_RATE.match(expression) or CRON.match(expression)),
            f"operations.{name} must be an EventBridge schedule: rate(1 hour), rate(6 hours) or cron(0 3 * * ? *)",
        )
    bounded(errors, "operations.expiry_batch_size", o.expiry_batch_size, low=1, high=10_000)
    bounded(errors, "operations.logical_backup_retention_days", o.logical_backup_retention_days, low=1, high=3650)
    bounded(errors, "operations.export_retention_days", o.export_retention_days, low=1, high=3650)
    log_retention(errors, "operations.audit_log_retention_days", o.audit_log_retention_days)
    return errors
