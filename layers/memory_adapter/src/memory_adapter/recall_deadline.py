"""One deadline for a recall, and the two timeouts derived from it.

A turn's recall has one deadline, ``recall_timeout`` (``HINDSIGHT_ADAPTER_RECALL_TIMEOUT``, default 2.0 s; the stack
sets it from ``agent.recall_timeout_seconds``): the memory adapter stops waiting then (and counts the miss in
its circuit breaker). Two timeouts follow from it, never set on their own:

* the socket timeout of the recall request, :data:`RECALL_MARGIN_S` later, so the adapter is the one that gives up
  and a socket is never cut before the deadline it serves;
* the wiring's backstop (``AgentCoreMemory.recall``), as late again, for a memory implementation that does not keep
  its own deadline.

The deadline also travels with the request: the adapter sends what is left of it in :data:`DEADLINE_HEADER`, and the
memory service's admission control (``hindsight_isolation.admission``) answers at once with 503, a ``Retry-After``
and :data:`OVERLOADED` in the body's :data:`REASON_FIELD` when the recall would miss it (a *shed* recall), instead of
starting work the caller will not wait for. The adapter tells a shed from a server that is down by that body, and
waits out the body's :data:`RETRY_AFTER_FIELD` (the server's expected wait in seconds, a float: the header's whole
seconds are too coarse for recalls of tens of milliseconds).
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "DEADLINE_HEADER",
    "OVERLOADED",
    "REASON_FIELD",
    "RECALL_MARGIN_S",
    "RETRY_AFTER_FIELD",
    "recall_backstop_s",
    "recall_socket_timeout_s",
]

#: How much later than the recall deadline the socket timeout and the backstop fire.
RECALL_MARGIN_S: Final = 0.5
#: Request header carrying the milliseconds the caller will wait for this recall, counted from when it sent it (a
#: duration, not an instant: the caller's and the server's clocks need not agree).
DEADLINE_HEADER: Final = "x-memory-recall-deadline-ms"
#: Field of a refusal's JSON body saying why; :data:`OVERLOADED` there marks a shed recall (a proxy's or a stopped
#: server's 503 has no such body).
REASON_FIELD: Final = "reason"
OVERLOADED: Final = "overloaded"
#: Field of a shed's JSON body: seconds (a float) until the server expects a slot for this caller; the
#: ``Retry-After`` header carries the same rounded up to whole seconds, as HTTP requires.
RETRY_AFTER_FIELD: Final = "retry_after_s"


def recall_socket_timeout_s(recall_timeout: float) -> float:
    """The socket timeout of a recall request whose deadline is ``recall_timeout``."""
    return recall_timeout + RECALL_MARGIN_S


def recall_backstop_s(recall_timeout: float) -> float:
    """The wiring's backstop around a recall whose deadline is ``recall_timeout``."""
    return recall_timeout + RECALL_MARGIN_S
