"""Retains the agents left in their spools, for the concurrency check: durable, not lost.

An agent whose retains Hindsight did not take in time (the breaker open past saturation, the exit flush's wait over)
keeps them in its spool directory, to be replayed later (``HindsightRuntimeAdapter.replay``). The check used to count
such a retain as a missing document, as if lost. Now, once the agents have stopped, :func:`deliver_spooled` replays
every spool as an operator would (each record with its own credential; a replay is idempotent on the server), and
:func:`document_tally` counts a document still not in Hindsight but in a spool apart (``documents_spooled``) from
one that is nowhere (``documents_missing``: lost).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from memory_adapter.spool import DirectorySpool
from memory_adapter.transport import Transport

__all__ = ["deliver_spooled", "document_tally", "spooled_documents"]


def spooled_documents(spools: Iterable[Path]) -> set[str]:
    """Document ids (the turns' request ids) of the retains waiting in ``spools``."""
    return {
        str(record.item.get("document_id"))
        for spool in spools
        if (spool / "pending").is_dir()
        for record in DirectorySpool(spool).items()
    }


def deliver_spooled(url: str, spools: Sequence[Path], *, transport: Transport | None = None) -> dict[str, int]:
    """Replay every non-empty spool in ``spools`` to the Hindsight at ``url`` (``transport``: a test's); what was
    delivered, refused (moved to the spool's dead letters) and is still waiting."""
    from memory_adapter import HindsightRuntimeAdapter

    total = {"delivered": 0, "rejected": 0, "remaining": 0}
    for spool in spools:
        if not any((spool / "pending").glob("*.json")):
            continue
        adapter = HindsightRuntimeAdapter(
            hindsight_api_url=url, spool_dir=str(spool), auto_replay=False, transport=transport
        )

        async def replay(adapter: HindsightRuntimeAdapter = adapter) -> Any:
            try:
                return await adapter.replay()
            finally:
                await adapter.aclose(timeout=5.0)

        result = asyncio.run(replay())
        total["delivered"] += result.delivered
        total["rejected"] += result.rejected
        total["remaining"] += result.remaining
    return total


def document_tally(
    expected: Mapping[str, set[str]], found: Mapping[str, Sequence[str]], spooled: set[str]
) -> dict[str, int]:
    """Per user, the documents each turn should have made (``expected``) against those in its bank (``found``):
    missing (in neither Hindsight nor a spool: lost), spooled (not in Hindsight, durable in an agent's spool) and
    unexpected (another's, or one turn's twice)."""
    missing = waiting = unexpected = 0
    for user, wanted in expected.items():
        documents = list(found.get(user, ()))
        absent = wanted - set(documents)
        waiting += len(absent & spooled)
        missing += len(absent - spooled)
        unexpected += len(set(documents) - wanted) + (len(documents) - len(set(documents)))
    return {"documents_missing": missing, "documents_spooled": waiting, "documents_unexpected": unexpected}
