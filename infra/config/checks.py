"""The checks every section's rules share: each appends a problem, named after its setting, to a list."""

from __future__ import annotations

import re

from memory_adapter.settings_reader import out_of_range

#: The retention periods CloudWatch Logs accepts, in days.
LOG_RETENTION_DAYS = frozenset(
    {1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653}
)
#: A six-field ``cron(...)`` schedule expression (EventBridge and AWS Backup).
CRON = re.compile(r"^cron\(\S+( \S+){5}\)$")


def require(errors: list[str], ok: bool, message: str) -> None:
    """Add ``message`` unless ``ok``."""
    if not ok:
        errors.append(message)


def bounded(errors: list[str], name: str, value: float, *, low: float, high: float) -> None:
    """Add the problem of ``value`` outside ``low``..``high`` (the settings reader's wording)."""
    problem = out_of_range(name, value, low=low, high=high)
    if problem is not None:
        errors.append(problem)


def log_retention(errors: list[str], name: str, days: int) -> None:
    """Add the problem of ``days`` that CloudWatch Logs does not accept as a retention period."""
    allowed = ", ".join(map(str, sorted(LOG_RETENTION_DAYS)))
    require(errors, days in LOG_RETENTION_DAYS, f"{name} must be one of CloudWatch's retention periods ({allowed})")
