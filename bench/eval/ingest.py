"""Bulk ingest, for the eval only (``--ingest bulk``): every conversation's turns retained as the adapter retains them,
many per request and the banks in parallel, so a run over all dev conversations is routine.

Each turn becomes exactly the item the adapter's delivery sends for it (the adapter's own record builder: the same
``User: ... / Assistant: ...`` content, document id, time, tags, metadata and context), so the banks hold the same
memories as after a turn-by-turn ingest; only the delivery differs: :data:`BATCH` items per ``POST .../memories``
(server-side async), conversations on :data:`PARALLEL` threads, then one wait until Hindsight has processed every bank.
The turn-by-turn ingest (``--ingest turns``, the default) stays the measure of the per-turn pace.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Final

from bench.eval.data import Conversation, Turn

__all__ = ["BATCH", "PARALLEL", "bulk_ingest", "cpu_seconds"]

#: Turns per retain request.
BATCH: Final = 50
#: Conversations sent at once.
PARALLEL: Final = 4


def bulk_ingest(
    adapter: Any,
    api: Any,
    admin: Any,
    conversations: Sequence[tuple[Conversation, Any]],
    *,
    document_id: Callable[[Conversation, Turn], str],
    ack: str,
    log: Callable[[str], None],
) -> list[dict[str, Any]]:
    """Retain every turn of each ``(conversation, caller)`` pair into the caller's bank in bulk, wait until processed;
    one ingest record per conversation (the turn-by-turn ingest's fields, ``mode`` ``bulk``; ``wall_s`` and
    ``ms_per_turn`` are of the whole bulk ingest, every conversation at once)."""
    started = time.perf_counter()

    def send(pair: tuple[Conversation, Any]) -> float:
        conv, caller = pair
        began = time.perf_counter()
        record = adapter._record  # the adapter's own record builder (memory_adapter._turn_record)
        items = [
            record(caller, f"{conv.sample_id}-session-{t.session}", document_id(conv, t), ack, t.line, t.at).item
            for t in conv.turns
        ]
        for at in range(0, len(items), BATCH):
            api.retain(caller.bank_id, items[at : at + BATCH], wait=False, bearer=caller.credential, timeout=120)
        return time.perf_counter() - began

    with ThreadPoolExecutor(max_workers=PARALLEL) as pool:
        sent = list(pool.map(send, conversations))
    log(f"    bulk: {sum(len(c.turns) for c, _ in conversations)} turns sent in {time.perf_counter() - started:.0f} s")
    settled = admin.wait_settled([caller.bank_id for _, caller in conversations], timeout=3600.0)
    wall = time.perf_counter() - started
    turns = sum(len(c.turns) for c, _ in conversations)
    log(f"    bulk: {turns} turns of {len(conversations)} conversations ingested in {wall:.0f} s")
    return [
        {
            "conversation": conv.sample_id,
            "turns": len(conv.turns),
            "mode": "bulk",
            "send_s": round(send_s, 1),
            "wall_s": round(wall, 1),  # of the whole bulk ingest, every conversation at once
            "ms_per_turn": round(1000 * wall / max(turns, 1), 1),  # wall per turn over all conversations
            "server_cpu_ms_per_turn": None,
            "settle_wait_s": round(settled, 1),
            "turn_time_sent": True,
        }
        for (conv, _), send_s in zip(conversations, sent, strict=True)
    ]


def cpu_seconds(pids: dict[str, int]) -> float:
    """User + system CPU of these processes and their live descendants (Linux ``/proc``)."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = defaultdict(list)
    stats: dict[int, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        stats[int(entry.name)] = fields
        children[int(fields[1])].append(int(entry.name))
    total, todo, seen = 0.0, list(pids.values()), set()
    while todo:
        pid = todo.pop()
        if pid in seen or pid not in stats:
            continue
        seen.add(pid)
        fields = stats[pid]
        total += (int(fields[11]) + int(fields[12])) / tick
        todo.extend(children.get(pid, ()))
    return total
