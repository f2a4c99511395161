"""The memory-kind vocabulary and retention rules (memory_adapter.kinds)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from memory_adapter.kinds import (
    DEFAULT_TURN_RETENTION_DAYS,
    MemoryKind,
    RetentionRules,
    RetentionRulesError,
    kind_of,
    kind_tag,
)


def test_defaults_follow_the_memory_model():
    rules = RetentionRules()
    assert rules.days_for(MemoryKind.PLAN) == 30
    assert rules.days_for(MemoryKind.PROBLEM) == 90
    assert rules.days_for(MemoryKind.TURN) == DEFAULT_TURN_RETENTION_DAYS
    for kept in (MemoryKind.FACT, MemoryKind.PREFERENCE, MemoryKind.DECISION, MemoryKind.SOLUTION):
        assert rules.days_for(kept) is None


def test_kind_comes_from_the_tag_then_the_metadata_then_turn():
    assert kind_of(["user:a", "kind:plan"], {"kind": "fact"}) is MemoryKind.PLAN
    assert kind_of(["user:a"], {"kind": "problem"}) is MemoryKind.PROBLEM
    assert kind_of([], {}) is MemoryKind.TURN
    assert kind_of(None, None) is MemoryKind.TURN


def test_an_unknown_kind_reads_as_an_unlabelled_turn():
    # a typo must expire like a turn rather than live forever
    assert kind_of(["kind:plna"], {"kind": "fact"}) is MemoryKind.FACT
    assert kind_of(["kind:plna"], {}) is MemoryKind.TURN
    assert kind_of([], {"kind": 3}) is MemoryKind.TURN


def test_kind_tag_refuses_unknown_kinds():
    assert kind_tag("plan") == "kind:plan"
    with pytest.raises(ValueError, match="nope"):
        kind_tag("nope")


def test_overrides_keep_the_other_defaults_and_null_means_kept():
    rules = RetentionRules.from_mapping({"plan": 7, "turn": None})
    assert rules.days_for(MemoryKind.PLAN) == 7
    assert rules.days_for(MemoryKind.TURN) is None
    assert rules.days_for(MemoryKind.PROBLEM) == 90


def test_every_problem_is_reported_at_once():
    with pytest.raises(RetentionRulesError) as err:
        RetentionRules.from_mapping({"plans": 30, "problem": 0, "turn": "30", "fact": True, "plan": 2.5})
    message = str(err.value)
    for part in ("unknown kind 'plans'", "problem:", "turn:", "fact:", "plan:"):
        assert part in message


def test_json_round_trip_and_bad_json():
    rules = RetentionRules.from_mapping({"plan": 3})
    assert RetentionRules.from_json(rules.to_json()) == rules
    assert json.loads(rules.to_json())["fact"] is None
    assert RetentionRules.from_json("  ") == RetentionRules()
    with pytest.raises(RetentionRulesError, match="JSON object"):
        RetentionRules.from_json("[1]")
    with pytest.raises(RetentionRulesError, match="not valid JSON"):
        RetentionRules.from_json("{")


def test_cutoff_is_now_minus_the_kind_days():
    now = datetime(2026, 12, 1, tzinfo=UTC)
    rules = RetentionRules()
    assert rules.cutoff(MemoryKind.PLAN, now) == now - timedelta(days=30)
    assert rules.cutoff(MemoryKind.FACT, now) is None
