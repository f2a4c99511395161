"""1. Recall path: ``before_turn`` p50/p99, ours and the prior art, against the raw client on the same bank.

All sides query one seeded bank with the same queries and the same credential, interleaved call by call (the order
rotates every round), after a warm-up. Besides p50 against p50, the overhead is also given as the median of the
paired per-round differences (side minus raw, same query, back to back) over the raw p50: on a shared 2-core machine
that estimator is far less sensitive to load drifting during the run.

``ours_user_token`` is our adapter with the caller's JWT as its per-turn credential, the way the agent runs in
production (the server then verifies a JWT on every request): it is reported, not part of the overhead target,
because the prior art cannot send per-user credentials.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from bench.bank import RECALL_QUERIES, BankAdmin
from bench.env import AGENT
from bench.sides import contexts, make_ours, make_prior, make_raw
from bench.stats import Timer, percentile, ratio, summarize
from memory_adapter.constants import DEFAULT_RECALL_BUDGET, DEFAULT_RECALL_MAX_TOKENS

__all__ = ["measure"]

SIDES = ("ours", "prior", "raw", "ours_user_token")


async def measure(
    env: Any, *, calls: int = 200, warmup: int = 10, log: Callable[[str], None] = print
) -> dict[str, Any]:
    """Run the recall comparison; returns summaries, raw samples and the overhead ratios."""
    from memory_adapter import TurnContext
    from memory_adapter.identity import format_bank_id

    user = f"bench-recall-{uuid.uuid4().hex[:8]}"
    bank = format_bank_id(user=user, agent=AGENT)
    admin = BankAdmin(env.url, env.operator_key)
    log(f"  seeding {bank} ...")
    admin.seed(bank)
    ours = make_ours(env.url, env.operator_key, env.workdir / "spool-recall")
    prior = make_prior(env.url, env.operator_key)
    raw = make_raw(env.url, env.operator_key)
    ctx_ours, ctx_prior = contexts(user)
    ctx_token = TurnContext(
        runtime_session_id=ctx_ours.runtime_session_id, user_id=user, agent_name=AGENT, credential=env.mint(user)
    )

    async def raw_recall(query: str) -> int:
        response = await raw.arecall(
            bank_id=bank, query=query, budget=DEFAULT_RECALL_BUDGET, max_tokens=DEFAULT_RECALL_MAX_TOKENS
        )
        return len(response.results or [])

    async def text_hits(call: Awaitable[str]) -> int:
        return int(bool(await call))

    calls_by_side: dict[str, Callable[[str], Awaitable[int]]] = {
        "ours": lambda q: text_hits(ours.before_turn(ctx_ours, query=q)),
        "prior": lambda q: text_hits(prior.before_turn(ctx_prior, query=q)),
        "raw": raw_recall,
        "ours_user_token": lambda q: text_hits(ours.before_turn(ctx_token, query=q)),
    }
    samples: dict[str, list[float]] = {side: [] for side in SIDES}
    answered: dict[str, int] = dict.fromkeys(SIDES, 0)
    try:
        for n in range(warmup):
            for side in SIDES:
                await calls_by_side[side](RECALL_QUERIES[n % len(RECALL_QUERIES)])
        for n in range(calls):
            query = RECALL_QUERIES[n % len(RECALL_QUERIES)]
            for k in range(len(SIDES)):
                side = SIDES[(n + k) % len(SIDES)]
                with Timer() as timer:
                    hits = await calls_by_side[side](query)
                samples[side].append(timer.ms)
                answered[side] += int(hits > 0)
    finally:
        await ours.aclose()
        with contextlib.suppress(Exception):
            await raw.aclose()
        client = getattr(prior, "_client", None)
        if client is not None:
            with contextlib.suppress(Exception):
                await client.aclose()
    summary = {side: summarize(samples[side]) for side in SIDES}
    paired = {
        side: ratio(
            percentile([a - b for a, b in zip(samples[side], samples["raw"], strict=True)], 50),
            summary["raw"]["p50_ms"],
        )
        for side in ("ours", "prior")
    }
    p50 = {side: summary[side]["p50_ms"] for side in SIDES}
    p99 = {side: summary[side]["p99_ms"] for side in SIDES}
    return {
        "calls_per_side": calls,
        "warmup_per_side": warmup,
        "bank_memories_seeded": len(RECALL_QUERIES),
        "calls_with_memories": answered,
        "summary": summary,
        "overhead_vs_raw_p50": {
            "ours": ratio(p50["ours"] - p50["raw"], p50["raw"]),
            "prior": ratio(p50["prior"] - p50["raw"], p50["raw"]),
        },
        "overhead_vs_raw_p99": {
            "ours": ratio(p99["ours"] - p99["raw"], p99["raw"]),
            "prior": ratio(p99["prior"] - p99["raw"], p99["raw"]),
        },
        "overhead_vs_raw_paired_median": paired,
        "ours_over_prior_p50": ratio(p50["ours"], p50["prior"]),
        "samples_ms": samples,
    }
