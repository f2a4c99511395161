"""The fading model: strength per kind, re-ranking by score x strength, the floor, the request clock."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from hindsight_isolation.fading import (
    DEFAULT_HALF_LIFE_DAYS,
    FadingRules,
    FadingRulesError,
    clocked,
    parse_instant,
    request_clock,
    rerank,
)
from memory_adapter.kinds import MemoryKind

NOW = datetime(2026, 6, 1, tzinfo=UTC)


@dataclass
class Fact:
    id: str
    tags: list[str] | None = field(default_factory=list)
    metadata: dict[str, str] | None = None


def test_strength_halves_every_half_life_and_never_fading_kinds_stay_whole() -> None:
    rules = FadingRules.from_mapping({"turn": 10})
    assert rules.strength(MemoryKind.TURN, age_days=0) == 1.0
    assert rules.strength(MemoryKind.TURN, age_days=10) == pytest.approx(0.5)
    assert rules.strength(MemoryKind.TURN, age_days=30) == pytest.approx(0.125)
    assert rules.strength(MemoryKind.TURN, age_days=-5) == 1.0  # a clock behind the memory: fresh
    assert DEFAULT_HALF_LIFE_DAYS[MemoryKind.PREFERENCE] is None
    assert rules.strength(MemoryKind.PREFERENCE, age_days=10_000) == 1.0


def test_a_recently_seen_memory_overtakes_a_better_scored_stale_one() -> None:
    # GIVEN a stale turn ranked first and a turn seen yesterday ranked second
    rules = FadingRules.from_mapping({"turn": 10}, floor=0.01)
    stale, fresh = Fact("stale"), Fact("fresh")
    seen = {"stale": NOW - timedelta(days=30), "fresh": NOW - timedelta(days=1)}
    # WHEN re-ranked
    order = rerank([stale, fresh], [1.0, 0.5], seen, rules, NOW)
    # THEN the fresh one leads (0.5 x 0.93 > 1.0 x 0.125) and both are kept
    assert [o.index for o in order] == [1, 0]
    assert all(o.kept for o in order)
    assert order[1].score == pytest.approx(0.125)


def test_below_the_floor_is_left_out_per_kind() -> None:
    rules = FadingRules.from_mapping({"turn": 10}, floor=0.1)
    old = NOW - timedelta(days=100)
    turn, fact, unseen = Fact("t"), Fact("f", tags=["kind:fact"]), Fact("u")
    order = rerank([turn, fact, unseen], [0.9, 0.8, 0.7], {"t": old, "f": old}, rules, NOW)
    kept = {o.index: o.kept for o in order}
    assert kept == {0: False, 1: True, 2: True}  # an unknown id counts as fresh
    assert order[-1].index == 0  # what is left out comes last


def test_a_kind_in_metadata_counts_too() -> None:
    rules = FadingRules.from_mapping({"plan": 1}, floor=0.5)
    plan = Fact("p", tags=None, metadata={"kind": "plan"})
    assert not rerank([plan], [1.0], {"p": NOW - timedelta(days=2)}, rules, NOW)[0].kept


def test_bad_rules_list_every_problem() -> None:
    with pytest.raises(FadingRulesError, match=r"'memo' is not a memory kind.*half-life of plan.*floor"):
        FadingRules.from_mapping({"memo": 3, "plan": -1}, floor=1.5)
    with pytest.raises(FadingRulesError, match="JSON object"):
        FadingRules.from_json("[3]")
    assert FadingRules.from_json('{"turn": null}').half_life_days[MemoryKind.TURN] is None


def test_the_request_clock_wins_over_the_fixed_clock_and_the_time() -> None:
    fixed = datetime(2023, 8, 17, tzinfo=UTC)
    assert request_clock(fixed) == fixed
    with clocked(NOW):
        assert request_clock(fixed) == NOW
    assert abs(request_clock() - datetime.now(UTC)) < timedelta(seconds=5)


def test_instants_are_iso_and_naive_means_utc() -> None:
    assert parse_instant("2026-06-01T00:00:00") == NOW
    assert parse_instant("2026-06-01T02:00:00+02:00") == NOW
    with pytest.raises(ValueError, match="ISO 8601"):
        parse_instant("next week")
