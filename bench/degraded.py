"""3. Hindsight hung (accepts, never answers) and refusing connections: what each turn pays, over 50 turns.

A turn's memory cost here is ``before_turn`` + ``after_turn`` + one loop tick, both sides interleaved turn by turn.
Ours runs with its defaults (recall deadline 2 s, breaker opens after 3 consecutive failures, probes every 30 s in
the background). The prior art has no deadline of its own, only the client ``timeout`` (default 15 s): 50 turns at
15 s would take 12.5 minutes, so it runs with ``timeout=2.0`` (the same budget as our recall deadline) for the 50
turns, plus a few turns at its default 15 s to show what an unconfigured deployment pays. The turn thread's own
CPU time (``time.thread_time``) is recorded next to the wall time, to tell work from waiting on a busy machine.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from typing import Any

from bench.sides import PRIOR_ART_DEFAULT_TIMEOUT_S, contexts, make_ours, make_prior
from bench.stats import summarize

__all__ = ["measure"]

SIDES = ("ours", "prior")


async def _turn(adapter: Any, ctx: Any, n: int, cpu: list[float] | None = None) -> float:
    started, cpu_started = time.perf_counter(), time.thread_time()
    await adapter.before_turn(ctx, query=f"What did I tell you last time? ({n})")
    await adapter.after_turn(ctx, result=f"Here is my answer number {n}.", query=f"Question {n}")
    await asyncio.sleep(0)
    if cpu is not None:
        cpu.append((time.thread_time() - cpu_started) * 1000)
    return (time.perf_counter() - started) * 1000


async def _cancel_prior_tasks(prior: Any) -> None:
    tasks = list(getattr(prior, "_pending", ()))
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.gather(*tasks, return_exceptions=True)


async def _one_fault(
    env: Any, fault: str, url: str, *, turns: int, prior_timeout_s: float, default_turns: int
) -> dict[str, Any]:
    from memory_adapter.breaker import BreakerState

    user = f"bench-{fault}-{uuid.uuid4().hex[:8]}"
    ours = make_ours(url, env.operator_key, env.workdir / f"spool-{fault}")
    prior = make_prior(url, env.operator_key, timeout=prior_timeout_s)
    samples: dict[str, list[float]] = {side: [] for side in SIDES}
    cpu: dict[str, list[float]] = {side: [] for side in SIDES}
    breaker_open_after: int | None = None
    started = time.perf_counter()
    for n in range(turns):
        for k in range(len(SIDES)):
            side = SIDES[(n + k) % len(SIDES)]
            ctx_ours, ctx_prior = contexts(user)
            if side == "ours":
                samples[side].append(await _turn(ours, ctx_ours, n, cpu[side]))
                if breaker_open_after is None and ours.breaker_state is not BreakerState.CLOSED:
                    breaker_open_after = n + 1
            else:
                samples[side].append(await _turn(prior, ctx_prior, n, cpu[side]))
    wall_s = time.perf_counter() - started
    await _cancel_prior_tasks(prior)
    default: list[float] = []
    if default_turns:
        prior_default = make_prior(url, env.operator_key, timeout=PRIOR_ART_DEFAULT_TIMEOUT_S)
        for n in range(default_turns):
            default.append(await _turn(prior_default, contexts(user)[1], n))
        await _cancel_prior_tasks(prior_default)
    spooled = ours.spooled_retains
    await ours.aclose(timeout=0.5)
    skip = breaker_open_after or 0
    return {
        "turns_per_side": turns,
        "prior_timeout_s": prior_timeout_s,
        "ours_breaker_open_after_turns": breaker_open_after,
        "summary": {side: summarize(samples[side]) for side in SIDES},
        "summary_after_breaker_open": {side: summarize(samples[side][skip:]) for side in SIDES},
        "summary_thread_cpu_after_breaker_open": {side: summarize(cpu[side][skip:]) for side in SIDES},
        "total_ms": {side: round(sum(samples[side]), 1) for side in SIDES},
        "mean_per_turn_ms": {side: round(sum(samples[side]) / len(samples[side]), 3) for side in SIDES},
        "prior_default_timeout_turns": {"timeout_s": PRIOR_ART_DEFAULT_TIMEOUT_S, **summarize(default)}
        if default
        else None,
        "ours_spooled_retains": spooled,
        "wall_s": round(wall_s, 1),
        "samples_ms": samples,
    }


async def measure(
    env: Any,
    *,
    turns: int = 50,
    prior_timeout_s: float = 2.0,
    default_turns: int = 2,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Both faults, both sides."""
    out: dict[str, Any] = {}
    for fault, url in (("refused", env.refused_url), ("hung", env.hung_url)):
        log(f"  {fault}: {turns} turns per side ...")
        out[fault] = await _one_fault(
            env,
            fault,
            url,
            turns=turns,
            prior_timeout_s=prior_timeout_s,
            default_turns=default_turns if fault == "hung" else 0,
        )
    return out
