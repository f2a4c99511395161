"""One fresh process, one first turn: import the adapter, build it, recall once (then once more, warm).

Run by :mod:`bench.first_turn`: ``python -m bench.first_turn_child <ours|prior> <url> <key> <user>``; prints one JSON
line. ``asyncio`` and ``json`` are imported before the clock starts: an agent process has them loaded anyway.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any


def main(argv: list[str]) -> int:
    side, url, key, user = argv
    modules_before = len(sys.modules)
    started = time.perf_counter()
    adapter: Any
    if side == "ours":
        from memory_adapter import HindsightRuntimeAdapter, TurnContext

        imported = time.perf_counter()
        adapter = HindsightRuntimeAdapter(agent_name="bench", hindsight_api_url=url, api_key=key)
        ctx: Any = TurnContext(runtime_session_id="first-turn", user_id=user, agent_name="bench")
    else:
        import importlib

        prior = importlib.import_module("hindsight_agentcore")
        imported = time.perf_counter()
        adapter = prior.HindsightRuntimeAdapter(agent_name="bench", hindsight_api_url=url, api_key=key)
        ctx = prior.TurnContext(runtime_session_id="first-turn", user_id=user, agent_name="bench")
    built = time.perf_counter()

    async def turn() -> tuple[str, float, str, float]:
        first_started = time.perf_counter()
        first = await adapter.before_turn(ctx, query="How should I contact you?")
        first_ms = (time.perf_counter() - first_started) * 1000
        second_started = time.perf_counter()
        second = await adapter.before_turn(ctx, query="Where are you based?")
        return first, first_ms, second, (time.perf_counter() - second_started) * 1000

    first, first_ms, second, second_ms = asyncio.run(turn())
    result = {
        "import_ms": (imported - started) * 1000,
        "construct_ms": (built - imported) * 1000,
        "first_recall_ms": first_ms,
        "total_ms": (built - started) * 1000 + first_ms,
        "second_recall_ms": second_ms,
        "first_recall_found_memories": bool(first),
        "second_recall_found_memories": bool(second),
        "modules_loaded": len(sys.modules) - modules_before,
    }
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
