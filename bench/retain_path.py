"""2. The turn-path cost of ``after_turn``: how long the turn waits for "retain this", p50/p99.

Both adapters are called exactly as an agent calls them after its model answered (default settings: both return
before the network, ours onto its delivery threads, the prior art as a fire-and-forget ``asyncio`` task). Calls are
interleaved and spaced a little (as real turns are, by the model call), and every retain really goes to the local
Hindsight. ``call`` is the time until ``after_turn`` returns; ``call_plus_tick`` adds one event-loop tick
(``await asyncio.sleep(0)``), which is where the prior art's task does its first synchronous work (building the
client request) on the turn's own loop. What happens to each retain afterwards is measured by ``outage``.
The CPU time the calling thread itself spent in ``after_turn`` (``time.thread_time``) is recorded too: where the
wall time of a call is far above it, the call was waiting (for a CPU on a busy machine, or for the GIL), not working.
"""

from __future__ import annotations

import asyncio
import resource
import time
import uuid
from collections.abc import Callable
from typing import Any

from bench.bank import SEED_FACTS
from bench.sides import contexts, make_ours, make_prior, prior_pending
from bench.stats import ratio, summarize

__all__ = ["measure"]

SIDES = ("ours", "prior")


async def measure(
    env: Any, *, calls: int = 500, warmup: int = 5, gap_s: float = 0.05, log: Callable[[str], None] = print
) -> dict[str, Any]:
    """Time ``after_turn`` on both sides; returns summaries, samples and delivery counts."""
    users = {side: f"bench-retain-{side}-{uuid.uuid4().hex[:8]}" for side in SIDES}
    ours = make_ours(env.url, env.operator_key, env.workdir / "spool-retain")
    prior = make_prior(env.url, env.operator_key)
    adapters = {"ours": ours, "prior": prior}
    samples: dict[str, list[float]] = {side: [] for side in SIDES}
    ticked: dict[str, list[float]] = {side: [] for side in SIDES}
    cpu: dict[str, list[float]] = {side: [] for side in SIDES}
    # Context switches of the calling thread during each call: voluntary ones are waits (the GIL, a lock),
    # involuntary ones are the OS giving the CPU to another process.
    switches: dict[str, list[tuple[int, int]]] = {side: [] for side in SIDES}

    async def one(side: str, n: int) -> tuple[float, float, float, tuple[int, int]]:
        ctx_ours, ctx_prior = contexts(users[side])
        ctx = ctx_ours if side == "ours" else ctx_prior
        fact = SEED_FACTS[n % len(SEED_FACTS)]
        query = f"Remember this, please (turn {n}): {fact}"
        result = f"Got it. I will remember that: {fact} Anything else I can help you with today?"
        before = resource.getrusage(resource.RUSAGE_THREAD)
        started, cpu_started = time.perf_counter(), time.thread_time()
        await adapters[side].after_turn(ctx, result=result, query=query)
        returned, cpu_used = time.perf_counter(), time.thread_time() - cpu_started
        after = resource.getrusage(resource.RUSAGE_THREAD)
        await asyncio.sleep(0)
        ticked_at = time.perf_counter()
        switched = (after.ru_nvcsw - before.ru_nvcsw, after.ru_nivcsw - before.ru_nivcsw)
        return (returned - started) * 1000, (ticked_at - started) * 1000, cpu_used * 1000, switched

    for n in range(warmup):
        for side in SIDES:
            await one(side, n)
    for n in range(calls):
        for k in range(len(SIDES)):
            side = SIDES[(n + k) % len(SIDES)]
            call_ms, tick_ms, cpu_ms, switched = await one(side, n)
            samples[side].append(call_ms)
            switches[side].append(switched)
            cpu[side].append(cpu_ms)
            ticked[side].append(tick_ms)
            await asyncio.sleep(gap_s)
    log("  waiting for both sides' deliveries ...")
    ours_flushed = await ours.flush(120)
    await prior_pending(prior, 120)
    pending_prior = len(getattr(prior, "_pending", ()))
    await ours.aclose()
    summary = {side: summarize(samples[side]) for side in SIDES}
    summary_tick = {side: summarize(ticked[side]) for side in SIDES}
    return {
        "calls_per_side": calls,
        "gap_between_calls_ms": gap_s * 1000,
        "summary": summary,
        "ours_over_prior_p50": ratio(summary["ours"]["p50_ms"], summary["prior"]["p50_ms"]),
        "ours_over_prior_p99": ratio(summary["ours"]["p99_ms"], summary["prior"]["p99_ms"]),
        "summary_call_plus_tick": summary_tick,
        "summary_thread_cpu": {side: summarize(cpu[side]) for side in SIDES},
        "retains_per_side": calls + warmup,
        "ours_all_delivered_within_120s": ours_flushed,
        "prior_tasks_unfinished_after_120s": pending_prior,
        "slow_calls": {side: _slow_calls(samples[side], switches[side]) for side in SIDES},
        "samples_ms": samples,
    }


SLOW_CALL_MS = 1.0


def _slow_calls(samples: list[float], switches: list[tuple[int, int]]) -> dict[str, int]:
    """How many calls took over ``SLOW_CALL_MS``, and why the calling thread was off the CPU during them."""
    slow = [(ms, sw) for ms, sw in zip(samples, switches, strict=True) if ms > SLOW_CALL_MS]
    return {
        "over_1ms": len(slow),
        "waited": sum(1 for _, (voluntary, _inv) in slow if voluntary),
        "preempted": sum(1 for _, (_vol, involuntary) in slow if involuntary),
        "neither": sum(1 for _, (voluntary, involuntary) in slow if not voluntary and not involuntary),
    }
