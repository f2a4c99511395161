"""4. The first turn in a fresh process (every AgentCore session is one): imports plus the first recall.

At least 10 fresh processes per side, alternating sides, each running :mod:`bench.first_turn_child` against the same
seeded bank. The "first-turn memory cost" is import + construction + first ``before_turn`` as measured inside the
child; the process wall time (interpreter start-up included) is reported too, as is a warm second recall, which
shows how much of the first recall is one-off cost.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

from bench.bank import BankAdmin
from bench.env import AGENT
from bench.stats import ratio, summarize

__all__ = ["measure"]

SIDES = ("ours", "prior")
_FIELDS = ("import_ms", "construct_ms", "first_recall_ms", "total_ms", "second_recall_ms")


def _run_child(side: str, url: str, key: str, user: str) -> dict[str, Any]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "bench.first_turn_child", side, url, key, user],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    wall_ms = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise RuntimeError(f"first-turn child ({side}) failed:\n{done.stderr[-2000:]}")
    line = [ln for ln in done.stdout.splitlines() if ln.startswith("{")][-1]
    result: dict[str, Any] = json.loads(line)
    result["process_wall_ms"] = wall_ms
    return result


async def measure(env: Any, *, processes: int = 10, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Fresh processes, alternating sides; medians are the headline figures."""
    from memory_adapter.identity import format_bank_id

    user = f"bench-first-{uuid.uuid4().hex[:8]}"
    BankAdmin(env.url, env.operator_key).seed(format_bank_id(user=user, agent=AGENT))
    runs: dict[str, list[dict[str, Any]]] = {side: [] for side in SIDES}
    for n in range(processes):
        for k in range(len(SIDES)):
            side = SIDES[(n + k) % len(SIDES)]
            runs[side].append(_run_child(side, env.url, env.operator_key, user))
    medians = {
        side: {f: round(statistics.median(r[f] for r in runs[side]), 2) for f in (*_FIELDS, "process_wall_ms")}
        for side in SIDES
    }
    return {
        "processes_per_side": processes,
        "median": medians,
        "summary_total_ms": {side: summarize([r["total_ms"] for r in runs[side]]) for side in SIDES},
        "ours_over_prior_total": ratio(medians["ours"]["total_ms"], medians["prior"]["total_ms"]),
        "ours_over_prior_import": ratio(medians["ours"]["import_ms"], medians["prior"]["import_ms"]),
        "found_memories": {side: sum(r["first_recall_found_memories"] for r in runs[side]) for side in SIDES},
        "modules_loaded": {side: runs[side][0]["modules_loaded"] for side in SIDES},
        "runs": runs,
    }
