"""An open loop through the agent (:func:`bench.scale.concurrency.run_level` with a ``rate``): turns arrive at a
fixed rate whatever the answers, so "times past saturation" is the offered rate over what the server serves, without
a closed loop's instant retries (there a shed turn comes straight back as the user's next turn)."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx

from bench.scale.concurrency import SESSIONS_PER_AGENT, one_turn, run_level
from bench.scale.database import Database
from bench.scale.server import ScaleServer

__all__ = ["USER_GAP_S", "measure_open", "open_loop_users", "paced"]

#: In an open loop, the least time between two turns of one user: longer than a turn can take (the 2 s recall
#: deadline, the model stand-in's microseconds), so a user's turns never overlap.
USER_GAP_S = 2.5


async def paced(
    client: httpx.AsyncClient,
    urls: Sequence[str],
    users: Sequence[str],
    tokens: dict[str, str],
    turns: int,
    tag: str,
    rate: float,
) -> list[dict[str, Any]]:
    """An open loop: ``len(users) * turns`` turns arriving at ``rate`` per second whatever the answers, the users in
    turn (a user's turns :data:`USER_GAP_S` apart or more, so they never overlap)."""
    began = time.perf_counter()

    async def arrival(k: int) -> dict[str, Any]:
        await asyncio.sleep(max(0.0, began + k / rate - time.perf_counter()))
        n, turn = k % len(users), k // len(users)
        user = users[n]
        return await one_turn(client, urls[n // SESSIONS_PER_AGENT], user, tokens[user], turn, tag, n * turns)

    return list(await asyncio.gather(*(arrival(k) for k in range(len(users) * turns))))


def open_loop_users(rate: float) -> int:
    """Users an open loop at ``rate`` turns/s needs so that each user's turns are :data:`USER_GAP_S` apart."""
    return max(1, math.ceil(rate * USER_GAP_S))


def measure_open(
    server: ScaleServer,
    db: Database,
    *,
    rates: Sequence[float],
    duration_s: float,
    model: str = "brief",
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """An open loop at every rate (turns/s) for about ``duration_s`` each: arrivals do not wait for answers, so "times
    past saturation" is the offered rate over the served one, without a closed loop's instant retries."""
    out: dict[str, Any] = {"shape": server.shape.describe(), "levels": []}
    for rate in rates:
        users = open_loop_users(rate)
        turns = max(1, math.ceil(rate * duration_s / users))
        out["levels"].append(run_level(server, db, sessions=users, turns=turns, model=model, log=log, rate=rate))
    return out
