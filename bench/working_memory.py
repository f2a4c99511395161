"""What working memory adds to a turn: reading the session's conversation, building the model's messages from it,
and recording the new exchange, against the same turn without working memory (issue 12: < 1 ms at p99).

In-process (no server): the cost is the agent's own Python work, so nothing else on this shared machine is in the
measured path but the scheduler. The conversation is full (``max_turns`` exchanges filling ``max_chars``) and the
process holds ``sessions`` conversations, so the figure is the worst steady state, not an empty dictionary.

    .venv/bin/python -m bench.working_memory [--turns 5000]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import time
from collections.abc import Callable
from typing import Any

from bench.stats import summarize
from memory_adapter.identity.caller import Caller
from runtime_handler.model import ModelTurn, converse_messages
from runtime_handler.working_memory import DEFAULT_LIMITS, Exchange, WorkingMemory

__all__ = ["measure"]

MEMORIES = "- I prefer email over phone. [world] (2026-11-29T15:09:44+00:00)"


#: One exchange of a full conversation: ``max_turns`` of them fill ``max_chars``.
_PER_TURN = DEFAULT_LIMITS.max_chars // DEFAULT_LIMITS.max_turns
EXCHANGE = Exchange("u" * (_PER_TURN // 4), "a" * (_PER_TURN - _PER_TURN // 4))


def _fill(memory: WorkingMemory, sessions: int) -> tuple[Caller, str]:
    """``sessions`` full conversations; returns the caller and session of the one the turns run in."""
    for n in range(sessions):
        who = Caller.of(user=f"user-{n}", agent="support")
        for _ in range(DEFAULT_LIMITS.max_turns):
            memory.add(who, f"session-{n}", EXCHANGE)
    return Caller.of(user="user-0", agent="support"), "session-0"


def _sample(step: Callable[[], None], turns: int) -> list[float]:
    samples = []
    for _ in range(turns):
        started = time.perf_counter_ns()
        step()
        samples.append((time.perf_counter_ns() - started) / 1e6)
    return samples


async def measure(*, turns: int = 5_000, sessions: int = 1_000, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Per-turn milliseconds with and without working memory, interleaved in rounds so drift hits both alike."""
    memory = WorkingMemory()
    caller, session = _fill(memory, sessions)

    def with_memory() -> None:
        converse_messages(ModelTurn(EXCHANGE.user, MEMORIES, memory.history(caller, session)))
        memory.add(caller, session, EXCHANGE)

    def without() -> None:
        converse_messages(ModelTurn(EXCHANGE.user, MEMORIES))

    ours: list[float] = []
    base: list[float] = []
    gc.collect()
    rounds = 10
    for _ in range(rounds):
        ours += _sample(with_memory, turns // rounds)
        base += _sample(without, turns // rounds)
    result = {
        "turns": len(ours),
        "sessions_held": len(memory),
        "history_turns": len(memory.history(caller, session)),
        "history_chars": sum(t.size for t in memory.history(caller, session)),
        "summary": {"with_working_memory": summarize(ours), "without": summarize(base)},
        "added_p50_ms": round(summarize(ours)["p50_ms"] - summarize(base)["p50_ms"], 4),
        "added_p99_ms": round(summarize(ours)["p99_ms"] - summarize(base)["p99_ms"], 4),
    }
    log(f"    working memory adds {result['added_p50_ms']} ms at p50, {result['added_p99_ms']} ms at p99")
    return result


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.working_memory", description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=5_000)
    parser.add_argument("--sessions", type=int, default=1_000)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(measure(turns=args.turns, sessions=args.sessions)), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
