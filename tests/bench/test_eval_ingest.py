"""The eval's bulk ingest leaves the banks exactly as the turn-by-turn ingest does (same memories of the same turns),
against the real local Hindsight."""

from __future__ import annotations

from typing import Any

import pytest

from bench.eval.data import synthetic
from bench.eval.run import Evaluation, Target, _turn_of

pytestmark = pytest.mark.integration


def _memories(run: Evaluation, bank_id: str) -> set[tuple[str | None, str]]:
    return {(_turn_of(item.get("document_id")), str(item.get("text"))) for item in run.admin.memories(bank_id)}


async def test_bulk_ingest_stores_what_the_turn_by_turn_ingest_stores(local_hindsight: Any) -> None:
    # GIVEN two generated conversations
    data = synthetic(conversations=2, small_talk=1)
    no_helper: Any = None  # the ingest needs no embedding helper
    run = Evaluation(
        Target(local_hindsight.url, local_hindsight.operator_key), no_helper, systems=["ours"], log=lambda _: None
    )
    try:
        # WHEN both are ingested in bulk, and the first again turn by turn into another bank
        bulk = run.ingest_in_bulk(data.conversations, "bulk")
        turns = await run.ingest_conversation(data.conversations[0], "turns-" + data.conversations[0].sample_id)
    finally:
        await run.close()
    # THEN the bulk bank holds the same memories of the same turns, and the other conversation its own
    stored = _memories(run, bulk[0].bank_id)
    assert stored == _memories(run, turns.bank_id)
    assert {e for q in data.conversations[0].questions for e in q.evidence} <= {turn for turn, _ in stored}
    assert {turn for turn, _ in _memories(run, bulk[1].bank_id)} <= {t.dia_id for t in data.conversations[1].turns}
    assert [r["mode"] for r in run.ingest[:2]] == ["bulk", "bulk"]
