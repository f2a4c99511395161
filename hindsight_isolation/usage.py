"""The recall record fading needs, kept in Hindsight's own database, and the hooks that apply it.

Hindsight 1.1.0 keeps no usage signal (its ``access_count`` column was never written and was dropped). This module
keeps one row per memory a caller's recall returned, ``(memory_id, bank_id, last_recalled_at, recall_count)``, in
the table :data:`TABLE` next to ``memory_units`` (created on first use; its foreign key deletes a memory's row with
the memory, so forgetting, bank deletion and invalidation leave nothing behind). Every server process and task
shares it, so the record survives any one of them and a microVM that recalled once.

The validator calls :func:`after_recall` from ``on_recall_complete`` (Hindsight returns the same result object
after the hook, so re-ranking it in place is what the caller receives) and :func:`after_curation` from
``on_memory_update_complete``. Only a caller's own recall counts (REST or the MCP recall tool; never the internal
recalls of reflect or consolidation, which must see every memory). A failure here is logged and the recall is
answered as Hindsight made it: fading ranks, it guards nothing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from hindsight_isolation import fading, route
from hindsight_isolation.bad_input import BadInputError
from hindsight_isolation.fading import FadingRules

__all__ = ["TABLE", "FadingConfig", "after_curation", "after_recall", "clock_from_header", "configure"]

logger = logging.getLogger("hindsight_isolation.fading")

#: The recall record (in the schema of ``memory_units``).
TABLE: Final = "hindsight_isolation_recalls"
#: Curations that bring a memory back to full strength (an edit or a revert is a person saying "this matters").
REINFORCING_CURATIONS: Final = frozenset({"edit", "revert"})
_RECALL_KINDS: Final = frozenset({route.RequestKind.RECALL, route.RequestKind.MCP})

Pool = Callable[[], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class FadingConfig:
    """Fading as the server runs it: the rules (``None``: off) and the test clocks (never set when deployed)."""

    rules: FadingRules | None = None
    fixed_clock: datetime | None = None
    clock_header: bool = False


@dataclass(slots=True)
class _State:
    config: FadingConfig
    ready: bool = False
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


_state = _State(FadingConfig())


def configure(config: FadingConfig) -> None:
    """Set how fading runs (called once by the tenant extension at start-up)."""
    _state.config = config
    _state.ready = False


def clock_from_header(raw: bytes | None) -> datetime | None:
    """The request's clock from :data:`fading.CLOCK_HEADER`; ``None`` unless the server honours the header.

    Raises :class:`BadInputError` for a value that is not an instant (the guard answers 400).
    """
    if raw is None or not _state.config.clock_header:
        return None
    try:
        return fading.parse_instant(raw.decode("latin-1"))
    except ValueError as exc:
        raise BadInputError(f"{fading.CLOCK_HEADER}: {exc}") from None


def _applies(request_context: Any) -> bool:
    return _state.config.rules is not None and not request_context.internal and route.current() in _RECALL_KINDS


async def after_recall(pool: Pool, bank_id: str, request_context: Any, recalled: Any) -> None:
    """Re-rank ``recalled`` (Hindsight's ``RecallResult``) in place by strength, drop what is below the floor,
    and reinforce what is left. Never raises."""
    rules = _state.config.rules
    if rules is None or recalled is None or not recalled.results or not _applies(request_context):
        return
    try:
        results = list(recalled.results)
        now = fading.request_clock(_state.config.fixed_clock)
        async with (await pool()).acquire() as conn:
            await _ensure_table(conn)
            last_seen = await _last_seen(conn, bank_id, [str(r.id) for r in results])
            scores = [_final(r, n) for n, r in enumerate(results)]
            order = fading.rerank(results, scores, last_seen, rules, now)
            kept = [results[r.index] for r in order if r.kept]
            for r in order:
                if r.kept and results[r.index].scores is not None:
                    results[r.index].scores.final = r.score
            recalled.results[:] = kept
            await _reinforce(conn, bank_id, [str(r.id) for r in kept], now)
    except Exception:
        logger.exception("hindsight_isolation: fading skipped for a recall of bank %s", bank_id)


async def after_curation(pool: Pool, bank_id: str, memory_id: str, action: str, request_context: Any) -> None:
    """An edit or revert restores the memory to full strength (how a faded memory is brought back). Never raises."""
    if _state.config.rules is None or action not in REINFORCING_CURATIONS or request_context.internal:
        return
    try:
        async with (await pool()).acquire() as conn:
            await _ensure_table(conn)
            await _reinforce(conn, bank_id, [memory_id], fading.request_clock(_state.config.fixed_clock))
    except Exception:
        logger.exception("hindsight_isolation: could not reinforce curated memory %s", memory_id)


def _final(result: Any, position: int) -> float:
    """The result's final score; without one, its rank mapped to (0, 1] (Hindsight's own rrf mapping)."""
    scores = getattr(result, "scores", None)
    if scores is not None and scores.final is not None:
        return float(scores.final)
    return 1.0 / (1 + position)


def _tables() -> tuple[str, str]:
    from hindsight_api.engine.schema import fq_store_table  # the request's schema

    return fq_store_table("memory_units"), fq_store_table(TABLE)


async def _ensure_table(conn: Any) -> None:
    """Create the record once per process (another process may race us: either creation is fine)."""
    if _state.ready:
        return
    async with _state.lock:
        if not _state.ready:
            await _create_table(conn)
            _state.ready = True


async def _create_table(conn: Any) -> None:
    units, table = _tables()
    ddl = (
        f"CREATE TABLE IF NOT EXISTS {table} ("
        f"memory_id uuid PRIMARY KEY REFERENCES {units}(id) ON DELETE CASCADE, "
        "bank_id text NOT NULL, last_recalled_at timestamptz NOT NULL, recall_count integer NOT NULL DEFAULT 0)"
    )
    try:
        await conn.execute(ddl)
    except Exception as exc:  # a concurrent CREATE in another process: the table is there now
        if "already exists" not in str(exc) and "duplicate key" not in str(exc):
            raise


async def _last_seen(conn: Any, bank_id: str, ids: list[str]) -> dict[str, datetime]:
    """Memory id -> last recalled, or when told if never recalled: ``mentioned_at`` (imported history keeps its
    age), but never later than when the server stored it (a client cannot date a memory into the future to keep it
    fresh)."""
    units, table = _tables()
    rows = await conn.fetch(
        f"SELECT m.id::text AS id, GREATEST(u.last_recalled_at, LEAST(m.mentioned_at, m.created_at)) AS seen "  # noqa: S608
        f"FROM {units} m LEFT JOIN {table} u ON u.memory_id = m.id WHERE m.bank_id = $1 AND m.id = ANY($2::uuid[])",
        bank_id,
        ids,
    )
    return {row["id"]: row["seen"] for row in rows if row["seen"] is not None}


async def _reinforce(conn: Any, bank_id: str, ids: list[str], now: datetime) -> None:
    if not ids:
        return
    units, table = _tables()
    await conn.execute(
        f"INSERT INTO {table} AS r (memory_id, bank_id, last_recalled_at, recall_count) "  # noqa: S608
        f"SELECT m.id, m.bank_id, $3, 1 FROM {units} m WHERE m.bank_id = $1 AND m.id = ANY($2::uuid[]) "
        "ON CONFLICT (memory_id) DO UPDATE SET "
        "last_recalled_at = GREATEST(r.last_recalled_at, EXCLUDED.last_recalled_at), recall_count = r.recall_count + 1",
        bank_id,
        ids,
        now,
    )
