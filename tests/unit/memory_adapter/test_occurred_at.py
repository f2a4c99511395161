"""A retained turn carries its own time (``occurred_at``): sent as Hindsight's timestamp, kept through the spool."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from memory_adapter import RetainOutcome, TurnContext
from memory_adapter.context import turn_time
from memory_adapter.testing import Fault

BANK = "user:alice:agent:support"


def ctx() -> TurnContext:
    return TurnContext(runtime_session_id="s1", user_id="alice", agent_name="support")


async def test_the_turn_is_sent_with_its_own_time_in_utc(make_adapter, fake):
    # GIVEN a turn that took place in May 2023 at UTC+2
    when = datetime(2023, 5, 8, 15, 56, tzinfo=timezone(timedelta(hours=2)))
    adapter = make_adapter()
    # WHEN it is retained now
    assert await adapter.retain_for_turn(ctx(), result="Noted.", query="I moved", occurred_at=when) is (
        RetainOutcome.DELIVERED
    )
    # THEN Hindsight gets that moment, not the time of the retain
    (call,) = fake.calls("/memories")
    assert call.body["items"][0]["timestamp"] == "2023-05-08T13:56:00+00:00"


async def test_without_occurred_at_the_turn_is_stamped_now(make_adapter, fake):
    before = datetime.now(UTC)
    await make_adapter().retain_for_turn(ctx(), result="Noted.", query="hello there")
    (call,) = fake.calls("/memories")
    stamped = datetime.fromisoformat(call.body["items"][0]["timestamp"])
    assert before <= stamped <= datetime.now(UTC)


async def test_a_spooled_turn_is_replayed_with_its_own_time(make_adapter, fake):
    when = datetime(2022, 1, 2, 3, 4, 5, tzinfo=UTC)
    fake.fault = Fault.DOWN
    adapter = make_adapter(max_retries=0, breaker_failure_threshold=100)
    assert await adapter.retain_for_turn(ctx(), result="A", query="Q", occurred_at=when) is RetainOutcome.SPOOLED
    fake.fault = Fault.NONE
    assert (await adapter.replay()).delivered == 1
    (doc,) = fake.documents(BANK).values()
    assert doc["timestamp"] == when.isoformat()


@pytest.mark.parametrize(
    ("occurred_at", "message"),
    [
        (datetime(2023, 5, 8, 13, 56), "has no timezone"),  # naive: the value under test
        (datetime.now(UTC) + timedelta(days=2), "in the future"),
        ("2023-05-08T13:56:00+00:00", "must be a datetime"),
    ],
)
async def test_an_unusable_time_is_refused_loudly_and_nothing_is_sent(make_adapter, fake, occurred_at, message):
    adapter = make_adapter()
    with pytest.raises(ValueError, match=message):
        adapter.retain_for_turn(ctx(), result="A", query="Q", occurred_at=occurred_at)
    assert fake.calls("/memories") == []


def test_clock_skew_of_an_hour_is_accepted():
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert turn_time(now + timedelta(hours=1), now=now) == now + timedelta(hours=1)
    assert turn_time(None, now=now) == now
