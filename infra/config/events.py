"""The ``events`` section: memory events on an EventBridge bus of the account (issue 24)."""

from __future__ import annotations

from dataclasses import dataclass

from infra.config.checks import bounded, log_retention, require


@dataclass(frozen=True)
class EventsConfig:
    """Memory events (issue 24): one event per change to what a bank holds, on an EventBridge bus of the account.

    ``enabled``: the extension in the Hindsight tasks sends each event to an SQS FIFO queue (grouped by bank), from
    which an EventBridge pipe puts it on the bus (docs/events.md). ``include_text``: events carry the memory's text
    (off: ids, kinds and who caused it only); then the bus and its archive are encrypted with the events key too.
    ``archive_retention_days``: how long the bus's archive keeps events for replay (0: for ever).
    ``audit_log_retention_days``: the example rule's log group (every event, searchable with Logs Insights).
    """

    enabled: bool
    include_text: bool
    archive_retention_days: int
    audit_log_retention_days: int


def events_problems(e: EventsConfig) -> list[str]:
    """The memory events: text only with events on, the archive's and the audit log's retention."""
    errors: list[str] = []
    require(
        errors,
        e.enabled or not e.include_text,
        "events.include_text needs events.enabled=true (there are no events to carry text): enable both or neither",
    )
    if e.archive_retention_days != 0:
        bounded(errors, "events.archive_retention_days", e.archive_retention_days, low=1, high=36_500)
    log_retention(errors, "events.audit_log_retention_days", e.audit_log_retention_days)
    return errors
