"""5. Retains delivered after a 30-second outage during 100 turns: every one, exactly once?

Both adapters talk to Hindsight through :class:`bench.proxy.OutageProxy`; 100 rounds (one turn per side each, with
its own request id, so the prior art's one-document-per-session weakness does not count against it here) run at a
steady pace while the proxy refuses connections for 30 s in the middle. Afterwards each side gets what it offers to
finish: ours ``flush()`` and, if anything is still spooled, ``replay()`` (its documented recovery call; an automatic
replay starts by itself once the breaker's background probe sees Hindsight again); the prior art has neither, so its
pending tasks are simply awaited. Then, once Hindsight has processed its queue, the documents in each side's bank
are counted: one per turn is "all, exactly once".
"""

from __future__ import annotations

import asyncio
import threading
import time
import urllib.parse
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

from bench.bank import BankAdmin
from bench.env import AGENT
from bench.proxy import OutageProxy
from bench.sides import contexts, make_ours, make_prior, prior_pending
from bench.stats import summarize

__all__ = ["measure"]

SIDES = ("ours", "prior")


async def measure(
    env: Any,
    *,
    turns: int = 100,
    round_s: float = 0.7,
    outage_start_s: float = 15.0,
    outage_s: float = 30.0,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Run the outage scenario and count what reached each bank."""
    from memory_adapter.identity import format_bank_id

    upstream = urllib.parse.urlsplit(env.url)
    proxy = OutageProxy(upstream.hostname or "127.0.0.1", upstream.port or 80)
    proxy.up()
    users = {side: f"bench-outage-{side}-{uuid.uuid4().hex[:8]}" for side in SIDES}
    banks = {side: format_bank_id(user=users[side], agent=AGENT) for side in SIDES}
    ours = make_ours(proxy.url, env.operator_key, env.workdir / "spool-outage")
    prior = make_prior(proxy.url, env.operator_key)
    adapters = {"ours": ours, "prior": prior}
    expected: dict[str, set[str]] = {side: set() for side in SIDES}
    latency: dict[str, dict[str, list[float]]] = {side: {"up": [], "down": []} for side in SIDES}
    session = f"bench-outage-{uuid.uuid4().hex[:8]}"
    outage_window: list[float] = []
    started = time.monotonic()

    def go_down() -> None:
        proxy.down()
        outage_window.append(time.monotonic() - started)

    def come_back() -> None:
        proxy.up()
        outage_window.append(time.monotonic() - started)

    # Timers on their own threads: the window does not depend on how long the turns take.
    timers = [threading.Timer(outage_start_s, go_down), threading.Timer(outage_start_s + outage_s, come_back)]
    for timer in timers:
        timer.daemon = True
        timer.start()
    try:
        for n in range(turns):
            state = "up" if proxy.is_up else "down"
            for k in range(len(SIDES)):
                side = SIDES[(n + k) % len(SIDES)]
                ctx_ours, ctx_prior = contexts(users[side], session=session)
                ctx = ctx_ours if side == "ours" else ctx_prior
                expected[side].add(ctx.request_id)
                turn_started = time.perf_counter()
                await adapters[side].before_turn(ctx, query=f"What do you remember about turn {n - 1}?")
                await adapters[side].after_turn(
                    ctx,
                    result=f"This is turn {n} of the outage run; the magic number is {1000 + n}.",
                    query=f"Turn {n}",
                )
                await asyncio.sleep(0)
                latency[side][state].append((time.perf_counter() - turn_started) * 1000)
            await asyncio.sleep(max(0.0, started + (n + 1) * round_s - time.monotonic()))
        for timer in timers:
            timer.join()
        log("  turns done; letting each side finish ...")
        flushed = await ours.flush(60)
        spooled_after_flush = ours.spooled_retains
        # Give the automatic replay (breaker probe -> closed -> replay) a moment before calling replay() ourselves.
        deadline = time.monotonic() + 10
        while ours.spooled_retains and time.monotonic() < deadline:  # noqa: ASYNC110 - polling a count
            await asyncio.sleep(0.5)
        spooled_before_replay = ours.spooled_retains
        replayed = await ours.replay() if spooled_before_replay else None
        await prior_pending(prior, 60)
        await ours.aclose()
    finally:
        proxy.down()
    admin = BankAdmin(env.url, env.operator_key)
    log("  waiting for Hindsight to process every accepted retain ...")
    settle_s = admin.wait_settled(banks.values(), timeout=300)
    counts: dict[str, Any] = {}
    for side in SIDES:
        ids = Counter(str(doc.get("id")) for doc in admin.documents(banks[side]))
        present = expected[side] & set(ids)
        counts[side] = {
            "turns": len(expected[side]),
            "documents_in_bank": sum(ids.values()),
            "turns_present": len(present),
            "turns_missing": len(expected[side] - set(ids)),
            "turns_present_more_than_once": sum(1 for i in present if ids[i] > 1),
            "unexpected_documents": len(set(ids) - expected[side]),
        }
    return {
        "turns_per_side": turns,
        "round_s": round_s,
        "outage_s": round(outage_window[1] - outage_window[0], 1) if len(outage_window) == 2 else None,
        "outage_window_s": [round(t, 1) for t in outage_window],
        "turns_during_outage": len(latency["ours"]["down"]),
        "counts": counts,
        "ours_recovery": {
            "flushed": flushed,
            "spooled_after_flush": spooled_after_flush,
            "spooled_before_explicit_replay": spooled_before_replay,
            "explicit_replay": None
            if replayed is None
            else {"delivered": replayed.delivered, "rejected": replayed.rejected, "remaining": replayed.remaining},
        },
        "turn_latency": {side: {s: summarize(v) for s, v in latency[side].items()} for side in SIDES},
        "server_settle_s": round(settle_s, 1),
    }
