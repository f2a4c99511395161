"""Memory kinds: what a retained item is, and how long each kind is kept. Defined once, here.

The vocabulary is the memory model's (``preference``, ``decision``, ``fact``, ``plan``, ``problem``, ``solution``)
plus ``turn``, an unlabelled conversation turn (what the adapter retains after every turn). A retained item
carries its kind twice, both of which Hindsight 1.1.0 keeps on the document *and* on every fact extracted from it:
the tag ``kind:<kind>`` (filterable in recall and listings) and the metadata key ``kind``. Anything retained
without a kind (older data, other clients) reads as ``turn``.

Retention is days per kind, ``None`` meaning "kept"; the defaults follow the memory model (facts, preferences,
decisions and solutions kept, plans 30 days, problems 90 days) and unlabelled turns take a configurable default.
Standard library only: the CDK configuration, the Lambda functions and the agent import this module alike.

Example:
    >>> tags = [kind_tag(MemoryKind.PLAN)]                      # ["kind:plan"]
    >>> rules = RetentionRules.from_mapping({"plan": 7})        # the other kinds keep their defaults
    >>> rules.days_for(MemoryKind.PLAN), rules.days_for(MemoryKind.FACT)
    (7, None)
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Final

from memory_adapter.exceptions import HindsightAgentCoreError

__all__ = [
    "DEFAULT_RETENTION_DAYS",
    "DEFAULT_TURN_RETENTION_DAYS",
    "KIND_METADATA_KEY",
    "KIND_TAG_PREFIX",
    "MAX_RETENTION_DAYS",
    "MemoryKind",
    "RetentionRules",
    "RetentionRulesError",
    "kind_of",
    "kind_tag",
]

KIND_TAG_PREFIX: Final = "kind:"
KIND_METADATA_KEY: Final = "kind"
#: Unlabelled turns are kept this long unless configured otherwise (AgentCore Memory keeps events 7-365 days).
DEFAULT_TURN_RETENTION_DAYS: Final = 365
#: A longer retention is a typo (or "kept", which is ``None``).
MAX_RETENTION_DAYS: Final = 36_500


class MemoryKind(StrEnum):
    """What a retained item is."""

    PREFERENCE = "preference"
    DECISION = "decision"
    FACT = "fact"
    PLAN = "plan"
    PROBLEM = "problem"
    SOLUTION = "solution"
    TURN = "turn"
    """An unlabelled conversation turn (the default of automatic retains)."""


#: Days each kind is kept (``None``: kept until someone forgets it).
DEFAULT_RETENTION_DAYS: Final[Mapping[MemoryKind, int | None]] = {
    MemoryKind.PREFERENCE: None,
    MemoryKind.DECISION: None,
    MemoryKind.FACT: None,
    MemoryKind.PLAN: 30,
    MemoryKind.PROBLEM: 90,
    MemoryKind.SOLUTION: None,
    MemoryKind.TURN: DEFAULT_TURN_RETENTION_DAYS,
}


def kind_tag(kind: MemoryKind | str) -> str:
    """The tag that marks an item of ``kind`` (``kind:plan``); raises ``ValueError`` for an unknown kind."""
    return KIND_TAG_PREFIX + MemoryKind(kind).value


def kind_of(tags: Iterable[str] | None = None, metadata: Mapping[str, Any] | None = None) -> MemoryKind:
    """The kind an item carries: its ``kind:`` tag, else its ``kind`` metadata, else ``turn`` (unlabelled).

    An unknown value counts as unlabelled, so a typo expires as a turn would rather than living forever.
    """
    for tag in tags or ():
        if isinstance(tag, str) and tag.startswith(KIND_TAG_PREFIX):
            try:
                return MemoryKind(tag[len(KIND_TAG_PREFIX) :])
            except ValueError:
                break
    raw = (metadata or {}).get(KIND_METADATA_KEY)
    if isinstance(raw, str):
        try:
            return MemoryKind(raw)
        except ValueError:
            pass
    return MemoryKind.TURN


class RetentionRulesError(HindsightAgentCoreError, ValueError):
    """A retention mapping is unusable; the message lists every problem (a ``ValueError`` too, as it was)."""


@dataclass(frozen=True, slots=True)
class RetentionRules:
    """Days each kind is kept. Build with :meth:`from_mapping` (``cdk.json``) or :meth:`from_json` (environment)."""

    days: Mapping[MemoryKind, int | None] = field(default_factory=lambda: dict(DEFAULT_RETENTION_DAYS))

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any] | None) -> RetentionRules:
        """Defaults overlaid with ``raw`` (kind name -> whole days >= 1, or ``None`` to keep); every error at once."""
        rules, errors = cls.checked(raw)
        if errors:
            raise RetentionRulesError("invalid retention: " + "; ".join(errors))
        return rules

    @classmethod
    def checked(cls, raw: Mapping[str, Any] | None, *, shown_prefix: str = "") -> tuple[RetentionRules, list[str]]:
        """:meth:`from_mapping` without raising: the rules (a default wherever ``raw`` is unusable) and every
        problem, one message each. With ``shown_prefix`` (``"retention."``) each message names the setting as the
        CDK configuration check lists it, with the value it got."""
        days: dict[MemoryKind, int | None] = dict(DEFAULT_RETENTION_DAYS)
        errors: list[str] = []
        known = ", ".join(k.value for k in MemoryKind)
        for name, value in (raw or {}).items():
            try:
                kind = MemoryKind(name)
            except ValueError:
                if shown_prefix:
                    errors.append(f"{shown_prefix}{name} is not a memory kind (known: {known})")
                else:
                    errors.append(f"unknown kind {name!r} (known: {known})")
                continue
            if value is None:
                days[kind] = None
            elif isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_RETENTION_DAYS:
                rule = f"whole days from 1 to {MAX_RETENTION_DAYS}, or null to keep"
                if shown_prefix:
                    errors.append(f"{shown_prefix}{name} must be {rule}, got {value!r}")
                else:
                    errors.append(f"{name}: retention must be {rule}")
            else:
                days[kind] = value
        return cls(days), errors

    @classmethod
    def from_json(cls, text: str | None) -> RetentionRules:
        """:meth:`from_mapping` of a JSON object (``None`` or blank: the defaults)."""
        if text is None or not text.strip():
            return cls()
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise RetentionRulesError(f"retention is not valid JSON: {exc}") from exc
        if not isinstance(raw, dict):
            raise RetentionRulesError("retention must be a JSON object of kind -> days")
        return cls.from_mapping(raw)

    def days_for(self, kind: MemoryKind) -> int | None:
        """Days ``kind`` is kept (``None``: kept)."""
        return self.days.get(kind, DEFAULT_RETENTION_DAYS[kind])

    def cutoff(self, kind: MemoryKind, now: datetime) -> datetime | None:
        """Items of ``kind`` retained before this instant are due (``None``: never due)."""
        days = self.days_for(kind)
        return None if days is None else now - timedelta(days=days)

    def to_json(self) -> str:
        """The rules as the JSON object :meth:`from_json` reads (every kind, sorted)."""
        return json.dumps({k.value: self.days_for(k) for k in MemoryKind}, sort_keys=True)
