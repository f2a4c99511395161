"""Issue 31 item 3 against the real local Hindsight: after "I moved from Berlin to Lisbon" the injected block puts
Lisbon first and marks the earlier Berlin statement superseded, with the day; a correction does the same."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory_adapter import RetainOutcome
from memory_adapter.identity import format_bank_id

pytestmark = pytest.mark.integration


async def test_a_later_statement_comes_first_and_the_stale_one_is_marked(
    local_hindsight, make_adapter, user_ctx, run_id, bank
):
    # GIVEN a user who said where they live and their number in March, then moved and corrected the number in May
    adapter = make_adapter(local_hindsight.url, timeout=30.0, recall_timeout=10.0)
    user = f"mover-{run_id}"
    turns = [
        ("I live in Berlin. My phone number is 0151 2222.", datetime(2026, 3, 2, 9, tzinfo=UTC)),
        ("I work as a data engineer.", datetime(2026, 3, 9, 9, tzinfo=UTC)),
        ("I moved from Berlin to Lisbon. Actually, my phone number is 0160 3333.", datetime(2026, 5, 4, 9, tzinfo=UTC)),
    ]
    for n, (query, at) in enumerate(turns):
        ctx = user_ctx(user, f"s{n}", request_id=f"{user}-t{n}")
        handle = adapter.retain_for_turn(ctx, result="Noted.", query=query, occurred_at=at)
        assert await handle is RetainOutcome.DELIVERED
    bank.wait_for_documents(format_bank_id(user=user, agent="support"), {f"{user}-t{n}" for n in range(len(turns))})
    # WHEN the agent recalls for "Where do I live?" and for the number
    for question, current, stale in (
        ("Where do I live? Is it Berlin?", "I moved from Berlin to Lisbon.", "I live in Berlin."),
        ("What is my phone number?", "Actually, my phone number is 0160 3333.", "My phone number is 0151 2222."),
    ):
        recollection = await adapter.recall_for_turn(user_ctx(user, "s9"), question)
        texts = [m.text for m in recollection.memories]
        # THEN the current statement comes before the stale one, which is marked superseded with the day
        assert current in texts, texts
        assert stale in texts, texts
        assert texts.index(current) < texts.index(stale), texts
        assert f"{stale} [world] (2026-03-02 09:00) (superseded on 2026-05-04)" in recollection.text
