"""What a shed recall gets (:mod:`hindsight_isolation.admission` decides which): ``503`` at once, a JSON body naming
the reason and when to retry, the ``Retry-After`` header, and one ``WARNING`` log line starting with :data:`SHED_LOG`.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass
from typing import Final

from starlette.types import Scope, Send

from memory_adapter.recall_deadline import OVERLOADED, REASON_FIELD, RETRY_AFTER_FIELD

__all__ = [
    "MAX_RETRY_AFTER_S",
    "MIN_RETRY_AFTER_S",
    "SHED_LOG",
    "UNMEASURED_RETRY_AFTER_S",
    "Shed",
    "answer_shed",
    "retry_after_s",
]

logger = logging.getLogger("hindsight_isolation")

#: How every shed's log line starts (search the service's log group for it).
SHED_LOG: Final = "hindsight_isolation shed a recall"
#: Bounds of a shed's retry window (:func:`retry_after_s`), and the window before any recall time is measured.
MIN_RETRY_AFTER_S: Final = 0.01
MAX_RETRY_AFTER_S: Final = 10.0
UNMEASURED_RETRY_AFTER_S: Final = 1.0


@dataclass(frozen=True, slots=True)
class Shed:
    """Why a recall was shed (for the answer and the log line)."""

    wait_s: float
    service_s: float
    deadline_s: float | None  # None: the recall stated none (shed over its user's or tenant's share)
    queued: int
    stage: str  # "arrival" (the decision: its deadline or the queueing bound), "target" (it would take longer than
    # the latency target, a multiple of a recall served alone), "rate" (its user, stating no deadline, has no token
    # left: hindsight_isolation/rate.py), "unmeasured" (slots busy, no recall time yet), "share" (its bank's owner
    # holds its share of the gate already), "tenant" (its tenant holds more than its fair share while others wait) or
    # "expired" (admitted, still queued when its caller gave up)


def retry_after_s(shed: Shed, slots: int) -> float:
    """When the shed caller can expect a slot, in seconds (the body's float; the header rounds it up): the expected
    wait it was shed on; for a user or tenant over its share, one recall time (a running recall's end); at least
    the time one slot takes to free up, within ``[MIN_RETRY_AFTER_S, MAX_RETRY_AFTER_S]``. Before any recall time is
    measured, :data:`UNMEASURED_RETRY_AFTER_S`. A whole second for a recall of tens of milliseconds kept a caller's
    recalls local long after the queue had drained."""
    if shed.stage == "unmeasured":
        return UNMEASURED_RETRY_AFTER_S
    expected = shed.service_s if shed.stage in ("share", "tenant") else shed.wait_s
    return min(MAX_RETRY_AFTER_S, max(MIN_RETRY_AFTER_S, expected, shed.service_s / max(1, slots)))


#: What the answer says for a shed that is about shares, not the deadline.
_WHY: Final = {
    "share": "its user already holds its share of the recall slots while others wait",
    "tenant": "its tenant already holds its fair share of the recall slots while others wait",
    "rate": "its user queues recalls without a deadline faster than the server allows one user",
    "target": "this recall would take longer than the server's latency target (a multiple of a recall served alone)",
}


async def answer_shed(scope: Scope, send: Send, shed: Shed, took_s: float, slots: int, baseline: float | None) -> None:
    """The 503; ``took_s``: from the request reaching the gate (body read) to this answer (where a shed's time goes);
    ``slots`` and ``baseline``: the gate's limit and recall time alone then (logged)."""
    retry_after = retry_after_s(shed, slots)
    logger.warning(
        "%s status=503 stage=%s path=%r deadline_ms=%s expected_wait_ms=%.0f service_ms=%.0f queued=%d "
        "slots=%d alone_ms=%.0f answered_in_ms=%.1f",
        SHED_LOG,
        shed.stage,
        str(scope.get("path", ""))[:200],
        "none" if shed.deadline_s is None else f"{shed.deadline_s * 1000:.0f}",
        shed.wait_s * 1000,
        shed.service_s * 1000,
        shed.queued,
        slots,
        (baseline or 0.0) * 1000,
        took_s * 1000,
    )
    why = _WHY.get(shed.stage) or (
        f"this recall would not be answered within its deadline of {(shed.deadline_s or 0.0) * 1000:.0f} ms"
    )
    payload = {
        "detail": (
            f"overloaded: {why} (expected wait {shed.wait_s * 1000:.0f} ms, recall ~{shed.service_s * 1000:.0f} ms); "
            f"no work was started: retry after {retry_after * 1000:.0f} ms or go without memory"
        ),
        REASON_FIELD: OVERLOADED,
        RETRY_AFTER_FIELD: round(retry_after, 3),
    }
    body = json.dumps(payload).encode("utf-8")
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode("ascii")),
        (b"retry-after", str(math.ceil(retry_after)).encode("ascii")),  # HTTP's: whole seconds
    ]
    await send({"type": "http.response.start", "status": 503, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})
