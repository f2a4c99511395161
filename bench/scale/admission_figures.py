"""A load level's figures of what admission control did: the recall as each turn saw it, the gate's own time to
answer a shed, and the turns served, shed and without memory."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.stats import summarize

__all__ = ["admission_figures", "gate_shed_ms", "recall_figures"]

_ANSWERED = re.compile(r"answered_in_ms=([0-9.]+)")


def recall_figures(events: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """What memory itself cost the turns (the adapter's recall latency as each turn saw it, not the whole turn):
    served recalls, sheds answered by Hindsight (one round trip), sheds skipped in a ``Retry-After`` window (no
    round trip), and the reasons recall degraded."""

    def ms(selected: Sequence[dict[str, Any]]) -> dict[str, Any]:
        return summarize([float(e["latency_ms"]) for e in selected if isinstance(e.get("latency_ms"), (int, float))])

    degraded = [e for e in events if e.get("reason") is not None]
    served = [e for e in events if e.get("reason") is None]
    shed = [e for e in degraded if e.get("reason") == "shed"]
    return {
        "degraded_reasons": dict(Counter(str(e.get("reason")) for e in degraded)),
        "recall_served_ms": ms(served),
        "recall_shed_ms": ms(shed),
        "recall_shed_round_trip_ms": ms([e for e in shed if not e.get("local")]),
        # the same round trips as the agent's recall thread saw them (request sent to answer read): the rest is the
        # agent process handing the recall to a thread and back
        "recall_shed_on_thread_ms": summarize(
            [float(e["on_thread_ms"]) for e in shed if isinstance(e.get("on_thread_ms"), (int, float))]
        ),
        "shed_local": sum(1 for e in shed if e.get("local")),
        "recall_without_memory_ms": ms(degraded),
    }


def gate_shed_ms(api_log: Path, offset: int) -> dict[str, Any]:
    """How long the API's gate took to answer each shed of this level (its log's ``answered_in_ms``: request read to
    503 sent), from ``offset`` of the log on: the server's share of a shed's round trip; the rest is the network and
    the agent process."""
    from hindsight_isolation.shed import SHED_LOG

    if not api_log.exists():
        return summarize([])
    with api_log.open("rb") as log:
        log.seek(offset)
        lines = log.read().decode(errors="replace").splitlines()
    return summarize([float(m[1]) for m in (_ANSWERED.search(line) for line in lines if SHED_LOG in line) if m])


def admission_figures(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """What admission control changes, from one level's turns: the latency of the turns that got memory (served),
    of those whose recall Hindsight shed (the memory's cost to a turn without it: the model stand-ins answer in
    microseconds), and the turns without memory by the reason the agent gave."""
    answered = [r for r in records if "error" not in r]
    return {
        "served_latency": summarize([r["ms"] for r in answered if not r.get("degraded")]),
        "shed": sum(1 for r in answered if r.get("reason") == "shed"),
        "shed_latency": summarize([r["ms"] for r in answered if r.get("reason") == "shed"]),
        "without_memory": sum(1 for r in answered if r.get("degraded")),
        "without_memory_reasons": dict(Counter(str(r.get("reason")) for r in answered if r.get("degraded"))),
    }
