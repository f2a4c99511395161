"""Where an integration finds the verified turn in a run's server-side state, and where it reports what memory did.

Strands passes ``invocation_state`` (a dict) to hooks and tools; LangGraph passes a run's ``context`` to nodes and
tools. Both hold the :class:`~memory_adapter.agentcore.MemoryTurn` the entrypoint verified (``turn.state()``), and a
mutable mapping also receives the :class:`MemoryReport` of the run. Nothing here comes from the model.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from memory_adapter.agentcore.memory import MEMORY_TURN_KEY, MemoryTurn

__all__ = ["MEMORY_REPORT_KEY", "RETAIN_FAILED", "MemoryReport", "find_turn", "memory_report", "start_report"]

#: Where the hooks leave the run's :class:`MemoryReport` in a mutable run state.
MEMORY_REPORT_KEY = "memory_report"
#: The reason of a turn that recalled fine but whose retain could be neither scheduled nor spooled.
RETAIN_FAILED = "retain_failed"


@dataclass(slots=True)
class MemoryReport:
    """What memory did for one run (the reference agent's ``{"recalled", "degraded"[, "tools"]}``)."""

    recalled: int = 0
    degraded: bool = False
    #: The memory tools the model called in this run, in order (failed calls included).
    tools: list[str] = field(default_factory=list)
    reason: str | None = None

    def body(self) -> dict[str, Any]:
        """The reference agent's ``memory`` field: ``{"recalled": n, "degraded": bool}``, with ``"tools"`` (the memory
        tools the model called) when it called any, and ``"reason"`` (the recall's, e.g. ``shed`` or ``timeout``, or
        :data:`RETAIN_FAILED`) when it degraded."""
        body: dict[str, Any] = {"recalled": self.recalled, "degraded": self.degraded}
        if self.tools:
            body["tools"] = list(self.tools)
        if self.degraded and self.reason:
            body["reason"] = self.reason
        return body

    def recall_done(self, count: int, degraded: bool, reason: str | None) -> None:
        """Record the run's recall."""
        self.recalled, self.degraded, self.reason = count, degraded, reason if degraded else None

    def retain_failed(self) -> None:
        """Record that the run's retain failed (the recall's reason, if it degraded too, is kept)."""
        self.degraded = True
        self.reason = self.reason or RETAIN_FAILED


def find_turn(state: object) -> MemoryTurn | None:
    """The verified turn in a run's server-side state: a :class:`MemoryTurn` itself, a mapping holding one under
    :data:`~memory_adapter.agentcore.memory.MEMORY_TURN_KEY`, or an object with that attribute; else ``None``.

    Anything that is not a real :class:`MemoryTurn` counts as no turn (fail closed).
    """
    if isinstance(state, MemoryTurn):
        return state
    found = state.get(MEMORY_TURN_KEY) if isinstance(state, Mapping) else getattr(state, MEMORY_TURN_KEY, None)
    return found if isinstance(found, MemoryTurn) else None


def start_report(state: object) -> MemoryReport:
    """A fresh report for this run, stored in ``state`` when it is a mutable mapping (else only returned)."""
    report = MemoryReport()
    if isinstance(state, MutableMapping):
        state[MEMORY_REPORT_KEY] = report
    return report


def memory_report(state: object) -> MemoryReport:
    """The :class:`MemoryReport` the hooks left in ``state`` (an empty one if they did not run)."""
    report = state.get(MEMORY_REPORT_KEY) if isinstance(state, Mapping) else None
    return report if isinstance(report, MemoryReport) else MemoryReport()
