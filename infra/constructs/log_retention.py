"""Map configured retention days onto CDK's RetentionDays enum (its values are names, not numbers)."""

from __future__ import annotations

from aws_cdk import aws_logs as logs

from infra.config import LOG_RETENTION_DAYS

_BY_DAYS = dict(zip(sorted(LOG_RETENTION_DAYS), [m for m in logs.RetentionDays if m.name != "INFINITE"], strict=True))


def retention(days: int) -> logs.RetentionDays:
    """The RetentionDays member for a number of days that config validation has accepted."""
    return _BY_DAYS[days]
